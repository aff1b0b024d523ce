"""strongSwan for a router's VPN services: one charon per router namespace.

A router's tunnels (``Tunnel``: one per IPsec site connection that is to
be up, made by the vpnaas extension from the server's data, in Neutron's
words: policy values, DPD actions, initiator) become a ``swanctl.conf``
(``swanctl_conf``, pure): a connection per tunnel, named by its id, with one
child of the same name (traffic selectors from the local and peer CIDRs),
proposals mapped from Neutron's policy values, the PSK in a secret keyed by
both ends' ids (base64, so no PSK can break the syntax), DPD, and
``start_action`` from the initiator. What is not given is not loaded, so
its SAs go.

``Charon`` runs charon (``charon-systemd``, which stays in the foreground)
in the router's namespace with a ``strongswan.conf`` of its own
(``STRONGSWAN_CONF``: the host's /etc files are never read), its files and
VICI socket in the router's ``ipsec`` directory. ``converge`` writes the
files, starts charon if it is not running, and, when the connections
changed (or the last load failed, or charon is new), runs
``swanctl --load-all``: swanctl replaces what changed, keeps what did not
(its SAs stay up) and unloads what is gone (its SAs are closed). A
connection charon refuses is named with charon's reason. ``established``
reads ``swanctl --list-sas --pretty`` (``parse_sas``, pure).

Two ways to do IPsec (``Mode``): ``kernel`` (XFRM, the kernel encrypts;
needs ESP in the kernel) and ``libipsec`` (charon's ``kernel-libipsec``
plugin encrypts in userspace and routes the tunnel's traffic through a TUN
device, ``ipsec0``; it only speaks ESP in UDP, so ``encap`` is forced).
``detect_kernel_esp`` tries an ESP SA in a scratch namespace.
"""

from __future__ import annotations

import base64
import ipaddress
import logging
import os
import re
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from neutrino.linux import process
from neutrino.linux.errors import HostError

LOG = logging.getLogger(__name__)

Mode = Literal["kernel", "libipsec"]
CHARON = "charon-systemd"
SWANCTL = "swanctl"
#: Debian's kernel-libipsec plugin (libcharon-extra-plugins)
LIBIPSEC_PLUGIN = "/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so"
STRONGSWAN_CONF, SWANCTL_CONF = "strongswan.conf", "swanctl.conf"
PID, LOG_FILE, OUT_FILE, SOCKET = "charon.pid", "charon.log", "charon.out", "charon.vici"
#: sun_path is 108 bytes: a longer socket path goes under here, by a hash
SHORT_SOCKETS = "/run/neutrino-ipsec"

#: the plugins charon loads (those Debian ships that site-to-site PSK needs)
#: (openssl brings 3DES, CTR, CCM, CMAC and curve25519)
PLUGINS = ("random nonce openssl pem pkcs1 pkcs8 x509 revocation constraints pubkey "
           "aes sha1 sha2 md5 hmac xcbc gcm gmp kdf socket-default kernel-netlink vici")
SWANCTL_PLUGINS = "random nonce openssl pem pkcs1 pkcs8 x509 pubkey aes sha1 sha2 hmac gmp"

ENCRYPTION = {"3des": "3des", "aes-128": "aes128", "aes-192": "aes192", "aes-256": "aes256",
              **{f"aes-{bits}-ctr": f"aes{bits}ctr" for bits in (128, 192, 256)},
              **{f"aes-{bits}-{aead}-{icv}": f"aes{bits}{aead}{icv}" for bits in (128, 192, 256)
                 for aead in ("ccm", "gcm") for icv in (8, 12, 16)}}
INTEGRITY = {"sha1": "sha1", "sha256": "sha256", "sha384": "sha384", "sha512": "sha512",
             "aes-xcbc": "aesxcbc", "aes-cmac": "aescmac"}
#: AEAD ciphers carry their integrity; IKE then still needs a PRF
PRF = {"sha1": "prfsha1", "sha256": "prfsha256", "sha384": "prfsha384",
       "sha512": "prfsha512", "aes-xcbc": "prfaesxcbc", "aes-cmac": "prfaescmac"}
DH_GROUP = {"group2": "modp1024", "group5": "modp1536", "group14": "modp2048",
            "group15": "modp3072", "group16": "modp4096", "group19": "ecp256",
            "group20": "ecp384", "group21": "ecp521", "group31": "curve25519"}
#: Neutron's DPD actions -> swanctl's (hold: keep the policy, renegotiate on traffic)
DPD_ACTION = {"hold": "trap", "clear": "clear", "restart": "restart",
              "restart-by-peer": "clear"}


class StrongSwanError(HostError):
    """charon or swanctl refused; the message says why, in one line."""


@dataclass(frozen=True)
class Policy:
    """An IKE or IPsec policy, in Neutron's words (``aes-128``, ``sha256``,
    ``group14``, ...)."""

    encryption: str
    auth: str
    pfs: str
    lifetime: int  # seconds
    transform_protocol: str = "esp"  # IPsec: esp, ah, ah-esp
    encapsulation_mode: str = "tunnel"


@dataclass(frozen=True)
class Tunnel:
    """One IPsec site connection to load, in Neutron's words."""

    id: str
    local_address: str  # the router's gateway address
    peer_address: str
    local_id: str
    peer_id: str
    psk: str
    local_cidrs: tuple[str, ...]
    peer_cidrs: tuple[str, ...]
    ike: Policy
    ipsec: Policy
    ike_version: str = "v2"
    aggressive: bool = False
    initiator: str = "bi-directional"  # or response-only
    dpd_action: str = "hold"  # hold, clear, restart, restart-by-peer, disabled
    dpd_interval: int = 30
    dpd_timeout: int = 120


def _aead(encryption: str) -> bool:
    return "gcm" in encryption or "ccm" in encryption


def _proposal(encryption: str, auth: str, pfs: str | None, ike: bool) -> str:
    parts = [ENCRYPTION.get(encryption, encryption)]
    if _aead(encryption):
        if ike:
            parts.append(PRF.get(auth, f"prf{auth}"))
    else:
        parts.append(INTEGRITY.get(auth, auth))
    if pfs:
        parts.append(DH_GROUP.get(pfs, pfs))
    return "-".join(parts)


def ike_proposal(policy: Policy) -> str:
    return _proposal(policy.encryption, policy.auth, policy.pfs, ike=True)


def child_proposals(policy: Policy) -> dict[str, str]:
    """``esp_proposals`` and/or ``ah_proposals`` of a child."""
    found = {}
    if policy.transform_protocol in ("esp", "ah-esp"):
        found["esp_proposals"] = _proposal(policy.encryption, policy.auth, policy.pfs,
                                           ike=False)
    if policy.transform_protocol in ("ah", "ah-esp"):
        found["ah_proposals"] = "-".join(
            [INTEGRITY.get(policy.auth, policy.auth),
             *([DH_GROUP.get(policy.pfs, policy.pfs)] if policy.pfs else [])])
    return found


def _quoted(value: str) -> str:
    """A swanctl.conf string value (ids, addresses: no quotes or newlines in them)."""
    if re.search(r'["\n\\]', value):
        raise ValueError(f"{value!r} cannot be written in swanctl.conf")
    return f'"{value}"'


def _cidrs(cidrs: Iterable[str]) -> str:
    return ",".join(str(ipaddress.ip_network(cidr, strict=False)) for cidr in cidrs)


def _connection(tunnel: Tunnel, mode: Mode) -> list[str]:
    ike, ipsec = tunnel.ike, tunnel.ipsec
    local_id = tunnel.local_id or tunnel.local_address
    dpd_on = tunnel.dpd_action != "disabled" and tunnel.dpd_interval > 0
    start = "start" if tunnel.initiator == "bi-directional" else "none"
    lines = [f"  {tunnel.id} {{",
             f"    version = {2 if tunnel.ike_version == 'v2' else 1}",
             f"    local_addrs = {_quoted(tunnel.local_address)}",
             f"    remote_addrs = {_quoted(tunnel.peer_address)}",
             f"    proposals = {ike_proposal(ike)}",
             f"    rekey_time = {ike.lifetime}s",
             "    mobike = no",
             f"    encap = {'yes' if mode == 'libipsec' else 'no'}"]
    if tunnel.ike_version == "v1" and tunnel.aggressive:
        lines.append("    aggressive = yes")
    if dpd_on:
        lines.append(f"    dpd_delay = {tunnel.dpd_interval}s")
        if tunnel.ike_version == "v1":
            lines.append(f"    dpd_timeout = {tunnel.dpd_timeout}s")
    lines += ["    local {", "      auth = psk", f"      id = {_quoted(local_id)}", "    }",
              "    remote {", "      auth = psk", f"      id = {_quoted(tunnel.peer_id)}",
              "    }",
              "    children {", f"      {tunnel.id} {{",
              f"        local_ts = {_cidrs(tunnel.local_cidrs)}",
              f"        remote_ts = {_cidrs(tunnel.peer_cidrs)}",
              *(f"        {key} = {value}" for key, value in child_proposals(ipsec).items()),
              f"        mode = {ipsec.encapsulation_mode}",
              f"        rekey_time = {ipsec.lifetime}s",
              f"        start_action = {start}"]
    if dpd_on:
        lines.append(f"        dpd_action = {DPD_ACTION.get(tunnel.dpd_action, 'clear')}")
    lines += ["      }", "    }", "  }"]
    return lines


def swanctl_conf(tunnels: Iterable[Tunnel], mode: Mode) -> str:
    """Pure: the ``swanctl.conf`` of a router's tunnels."""
    loaded = sorted(tunnels, key=lambda tunnel: tunnel.id)
    lines = ["# written by the neutrino L3 agent's vpnaas extension", "connections {"]
    for tunnel in loaded:
        lines += _connection(tunnel, mode)
    lines += ["}", "secrets {"]
    for tunnel in loaded:
        secret = base64.b64encode(tunnel.psk.encode()).decode()
        lines += [f"  ike-{tunnel.id} {{",
                  f"    id-local = {_quoted(tunnel.local_id or tunnel.local_address)}",
                  f"    id-remote = {_quoted(tunnel.peer_id)}",
                  f"    secret = 0s{secret}", "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def strongswan_conf(directory: str, socket: str, mode: Mode) -> str:
    """Pure: charon's and swanctl's settings, nothing of the host's."""
    plugins = PLUGINS
    if mode == "libipsec":  # before kernel-netlink: its IPsec backend wins
        plugins = "kernel-libipsec " + plugins
    return "\n".join([
        "# written by the neutrino L3 agent's vpnaas extension",
        "charon-systemd {",
        f"  load = {plugins}",
        "  install_virtual_ip = no",
        "  filelog {",
        "    log {",
        f"      path = {os.path.join(directory, LOG_FILE)}",
        "      time_format = %F %T",
        "      default = 1",
        "      ike = 1",
        "    }",
        "  }",
        "  journal {",
        "    default = -1",
        "  }",
        f"  plugins {{ vici {{ socket = unix://{socket} }} }}",
        "}",
        "swanctl {",
        f"  load = {SWANCTL_PLUGINS}",
        f"  socket = unix://{socket}",
        "}",
    ]) + "\n"


def socket_path(directory: str) -> str:
    """The VICI socket of ``directory``: in it, or by a hash of it under
    ``SHORT_SOCKETS`` when that is too long for a UNIX socket."""
    return process.socket_path(directory, SOCKET, SHORT_SOCKETS)


# --- what charon says ---------------------------------------------------------------------

def parse_sections(text: str) -> dict[str, object]:
    """Pure: swanctl's ``--pretty`` output (``name {``, ``key = value``,
    ``key [`` ... ``]``, ``}``) as nested dicts (lists for ``[ ]``)."""
    root: dict[str, object] = {}
    stack: list[dict[str, object] | list[str]] = [root]
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        top = stack[-1]
        if line in ("}", "]"):
            if len(stack) > 1:
                stack.pop()
        elif isinstance(top, list):
            top.append(line)
        elif line.endswith("{"):
            section: dict[str, object] = {}
            top[line[:-1].strip()] = section
            stack.append(section)
        elif line.endswith("["):
            items: list[str] = []
            top[line[:-1].strip()] = items
            stack.append(items)
        elif " = " in line:
            key, _, value = line.partition(" = ")
            top[key.strip()] = value.strip()
        elif line.endswith(" ="):
            top[line[:-2].strip()] = ""
    return root


def parse_sas(text: str) -> dict[str, bool]:
    """Pure: connection name -> established (its IKE SA ESTABLISHED with its
    child INSTALLED), from ``swanctl --list-sas --pretty``."""
    found: dict[str, bool] = {}
    for name, section in parse_sections(text).items():
        if not name.startswith("list-sa event") or not isinstance(section, dict):
            continue
        for conn, sa in section.items():
            if not isinstance(sa, dict):
                continue
            children = sa.get("child-sas")
            installed = isinstance(children, dict) and any(
                isinstance(child, dict) and child.get("state") == "INSTALLED"
                and child.get("name", conn) == conn for child in children.values())
            found[conn] = found.get(conn, False) or (
                sa.get("state") == "ESTABLISHED" and installed)
    return found


_LOAD_FAILED = re.compile(r"^loading connection '(?P<name>[^']+)' failed: (?P<why>.*)$")


def parse_load_failures(output: str) -> dict[str, str]:
    """Pure: connection name -> charon's reason, from ``swanctl --load-*``."""
    return {m["name"]: m["why"].strip() for m in map(_LOAD_FAILED.match, output.splitlines())
            if m}


# --- the host ---------------------------------------------------------------------------------

@dataclass
class LoadResult:
    """What a converge did: ``failed``: connection id -> why charon refused it."""

    started: bool = False
    loaded: bool = False
    failed: dict[str, str] = field(default_factory=dict)


class Charon:
    """The charon of one router namespace, its files in ``directory``."""

    def __init__(self, namespace: str, directory: str, mode: Mode, wait: float = 10.0):
        self.namespace = namespace
        self.directory = os.path.abspath(directory)
        self.mode = mode
        self.wait = wait
        self.socket = socket_path(self.directory)
        self._child: subprocess.Popen[bytes] | None = None
        self._loaded: str | None = None  # the swanctl.conf charon has, all of it

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def _env(self) -> dict[str, str]:
        return {**os.environ, "STRONGSWAN_CONF": self._path(STRONGSWAN_CONF)}

    def pid(self) -> int | None:
        """charon's pid, or None if it does not run (a pid reused by another
        process does not count: charon's environment names our file)."""
        if self._child is not None and self._child.poll() is not None:
            self._child = None  # reaped
        try:
            with open(self._path(PID), encoding="ascii") as handle:
                pid = int(handle.read().strip())
        except (OSError, ValueError):
            return None
        argv = process.cmdline(pid)
        if not argv or os.path.basename(argv[0]) != CHARON:
            return None
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
        except OSError:
            return None
        wanted = f"STRONGSWAN_CONF={self._path(STRONGSWAN_CONF)}".encode()
        return pid if wanted in environ else None

    def _write(self, name: str, text: str) -> bool:
        """Write ``name`` if it differs (0600: it holds PSKs); whether it did."""
        path = self._path(name)
        try:
            with open(path, encoding="utf-8") as handle:
                if handle.read() == text:
                    return False
        except FileNotFoundError:
            pass
        temporary = f"{path}.tmp"
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
                  encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
        return True

    def converge(self, tunnels: Iterable[Tunnel]) -> LoadResult:
        """charon running with exactly ``tunnels``."""
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        os.makedirs(os.path.dirname(self.socket), mode=0o700, exist_ok=True)
        result = LoadResult()
        settings_changed = self._write(STRONGSWAN_CONF, strongswan_conf(
            self.directory, self.socket, self.mode))
        text = swanctl_conf(tunnels, self.mode)
        self._write(SWANCTL_CONF, text)
        if settings_changed and self.pid() is not None:
            LOG.info("charon in %s: its settings changed, restarting", self.namespace)
            self.stop(remove=False)
        if self.pid() is None:
            self._start()
            result.started = True
            self._loaded = None
        if text != self._loaded:
            result.failed = self.load()
            result.loaded = True
            self._loaded = None if result.failed else text
        return result

    def _start(self) -> None:
        try:
            os.unlink(self.socket)
        except FileNotFoundError:
            pass
        with open(self._path(OUT_FILE), "ab") as out:
            self._child = subprocess.Popen(
                ["ip", "netns", "exec", self.namespace, CHARON], env=self._env(),
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                cwd=self.directory)
        with open(self._path(PID), "w", encoding="ascii") as handle:
            handle.write(f"{self._child.pid}\n")
        deadline = time.monotonic() + self.wait
        while time.monotonic() < deadline:
            if self._child.poll() is not None:
                break
            if os.path.exists(self.socket) and self.pid() is not None:
                LOG.info("charon in %s, pid %d (%s IPsec)", self.namespace, self._child.pid,
                         self.mode)
                return
            time.sleep(0.05)
        code = self._child.poll()
        self.stop(remove=False)
        raise StrongSwanError(f"charon in {self.namespace} did not start "
                              f"({'exit ' + str(code) if code is not None else 'no VICI socket'}): "
                              f"{_tail(self._path(OUT_FILE)) or _tail(self._path(LOG_FILE))}")

    def swanctl(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """``swanctl`` talking to this charon (from the host: a UNIX socket
        needs no namespace)."""
        return subprocess.run([SWANCTL, *argv, "--uri", f"unix://{self.socket}"],
                              env=self._env(), capture_output=True, text=True,
                              timeout=timeout, cwd=self.directory)

    def load(self) -> dict[str, str]:
        """``swanctl --load-all`` of our file: the connections charon refused,
        with why (all of them, with swanctl's words, if it failed outright)."""
        done = self.swanctl("--load-all", "--noprompt", "--file", self._path(SWANCTL_CONF))
        failed = parse_load_failures(done.stdout + "\n" + done.stderr)
        if done.returncode != 0 and not failed:
            raise StrongSwanError(f"swanctl --load-all in {self.namespace}: "
                                  f"{_last_line(done.stderr) or done.returncode}")
        return failed

    def established(self) -> dict[str, bool]:
        """Connection name -> established, as charon sees it."""
        done = self.swanctl("--list-sas", "--pretty", timeout=15)
        if done.returncode != 0:
            raise StrongSwanError(f"swanctl --list-sas in {self.namespace}: "
                                  f"{_last_line(done.stderr) or done.returncode}")
        return parse_sas(done.stdout)

    def stop(self, remove: bool = True, wait: float = 5.0) -> None:
        """Stop charon if it runs (its SAs go with it); ``remove``: its files too."""
        pid = self.pid()
        if pid is not None:
            process.terminate(pid, wait)
        if self._child is not None:
            try:
                self._child.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                pass
            self._child = None
        self._loaded = None
        names = [PID, STRONGSWAN_CONF, SWANCTL_CONF, LOG_FILE, OUT_FILE] if remove else [PID]
        for path in [*(self._path(name) for name in names), self.socket]:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        if remove:
            try:
                os.rmdir(self.directory)
            except OSError:
                pass


# --- what the host can do -----------------------------------------------------------------------

def detect_kernel_esp() -> bool:
    """Whether the kernel can do ESP: an ESP SA added in a scratch namespace."""
    namespace = f"neutrino-esp-probe-{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", namespace], capture_output=True,
                      timeout=10).returncode != 0:
        return False
    try:
        done = subprocess.run(
            ["ip", "netns", "exec", namespace, "ip", "xfrm", "state", "add",
             "src", "192.0.2.1", "dst", "192.0.2.2", "proto", "esp", "spi", "0x100",
             "mode", "tunnel", "enc", "cbc(aes)", "0x" + "00" * 16,
             "auth-trunc", "hmac(sha256)", "0x" + "00" * 32, "128"],
            capture_output=True, timeout=10)
        return done.returncode == 0
    finally:
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=10)


def libipsec_missing() -> str | None:
    """Why userspace IPsec cannot run here, or None."""
    if not os.path.exists(LIBIPSEC_PLUGIN):
        return (f"strongSwan's kernel-libipsec plugin ({LIBIPSEC_PLUGIN}, Debian package "
                "libcharon-extra-plugins) is not installed")
    if not os.path.exists("/dev/net/tun"):
        return "there is no /dev/net/tun (the kernel-libipsec plugin's TUN device)"
    return None


def resolve_mode(wanted: str, why: str) -> Mode:
    """``auto``, ``kernel`` or ``libipsec`` as this host can do it; a mode it
    cannot do raises ``StrongSwanError`` naming ``why`` (the setting, as
    ``Config.setting`` says it)."""
    kernel = detect_kernel_esp() if wanted in ("auto", "kernel") else False
    if wanted == "kernel" and not kernel:
        raise StrongSwanError(f"the kernel cannot do ESP (no esp4: CONFIG_INET_ESP), "
                              f"asked by {why}; use libipsec")
    if kernel:
        return "kernel"
    missing = libipsec_missing()
    if missing:
        raise StrongSwanError(f"{missing}, needed by {why}"
                              + (" (the kernel cannot do ESP)" if wanted == "auto" else ""))
    return "libipsec"


def _tail(path: str, lines: int = 3) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return " | ".join(line for line in handle.read().splitlines()[-lines:])
    except OSError:
        return ""


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines()
             if "failed to load" not in line and "opening directory" not in line]
    return lines[-1] if lines else ""
