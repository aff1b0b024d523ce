"""conntrackd in a highly available router's namespace: the connection
tracking entries (NAT included) of the master copied to its backups, so that
a connection through the router survives a failover.

Each host of the router runs one in the router's namespace, synchronising in
FTFW mode (acknowledged, resent when lost) over the router's HA link:
multicast to ``Settings.address`` from the host's address on the ``ha-``
device, on UDP port ``Settings.group`` + the router's VR id, as Neutron
does, so the routers of one HA network keep apart. The master sends the
entries of its kernel table; a backup keeps what it hears in its external
cache. keepalived tells conntrackd of each change of role (``notify_master``
and the others run ``script_path``'s script, ``notify_script``): the new
master commits its external cache to the kernel, then sends its table to the
others; a backup shortens the timers of what its kernel holds and asks the
master for everything.

``converge`` writes the configuration and starts conntrackd (again, if the
configuration changed: it reads it only at start) in the namespace, its
files in the router's directory; its control socket goes under
``SHORT_SOCKETS`` when that path is too long. conntrackd writes no pid file:
the pid of the process whose command line names the configuration is
written here.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shlex
import subprocess
import time
from dataclasses import dataclass

from neutrino.linux import process
from neutrino.linux.errors import HostError

CONF, PID, LOCK, LOG, SOCKET = ("conntrackd.conf", "conntrackd.pid", "conntrackd.lock",
                                "conntrackd.log", "conntrackd.ctl")
#: keepalived runs it with master, backup or fault
SCRIPT = "conntrackd-notify.sh"
#: sun_path is 108 bytes (conntrackd takes 107): a longer path goes here, by a hash
SHORT_SOCKETS = "/run/neutrino-conntrackd"
#: what is synchronised (Neutron's list)
PROTOCOLS = ("TCP", "SCTP", "DCCP", "UDP", "ICMP", "IPv6-ICMP")
#: socket buffers of the sync link, and the kernel's event socket: Neutron's
#: defaults, not options here
SYNC_BUFFER = 24985600
EVENT_BUFFER, EVENT_BUFFER_MAX = 262142, 655355


class ConntrackdError(HostError):
    """conntrackd did not start; the message says why."""


@dataclass(frozen=True)
class Settings:
    """The agent's settings of its HA routers' conntrackd (Neutron's
    ``ha_conntrackd_*`` options)."""

    hash_size: int = 32768
    hash_limit: int = 131072
    address: str = "225.0.0.50"  # the multicast group
    group: int = 3780  # UDP port, plus the VR id


@dataclass(frozen=True)
class Sync:
    """One router's conntrackd on this host."""

    interface: str  # the ha- device
    address: str  # this host's IPv4 address on it
    vr_id: int
    settings: Settings = Settings()


def _path(state_dir: str, name: str) -> str:
    return os.path.join(os.path.abspath(state_dir), name)


def socket_path(state_dir: str) -> str:
    return process.socket_path(state_dir, SOCKET, SHORT_SOCKETS)


def script_path(state_dir: str) -> str:
    return _path(state_dir, SCRIPT)


def render(sync: Sync, state_dir: str) -> str:
    """conntrackd.conf of one router, its files in ``state_dir``."""
    settings = sync.settings
    ignored = [("IPv4", "127.0.0.1"), ("IPv6", "::1"), ("IPv4", sync.address)]
    lines = ["General {",
             f"    HashSize {settings.hash_size}",
             f"    HashLimit {settings.hash_limit}",
             "    Syslog off",
             f"    LogFile {_path(state_dir, LOG)}",
             f"    LockFile {_path(state_dir, LOCK)}",
             "    UNIX {", f"        Path {socket_path(state_dir)}", "    }",
             f"    NetlinkBufferSize {EVENT_BUFFER}",
             f"    NetlinkBufferSizeMaxGrowth {EVENT_BUFFER_MAX}",
             "    Filter From Kernelspace {",
             "        Protocol Accept {",
             *(f"            {protocol}" for protocol in PROTOCOLS),
             "        }",
             "        Address Ignore {",
             *(f"            {version}_address {address}" for version, address in ignored),
             "        }",
             "    }",
             "}",
             "Sync {",
             "    Mode FTFW {",
             "    }",
             "    Multicast Default {",
             f"        IPv4_address {settings.address}",
             f"        IPv4_interface {sync.address}",
             f"        Group {settings.group + sync.vr_id}",
             f"        Interface {sync.interface}",
             f"        SndSocketBuffer {SYNC_BUFFER}",
             f"        RcvSocketBuffer {SYNC_BUFFER}",
             "        Checksum on",
             "    }",
             "}"]
    return "\n".join(lines) + "\n"


def notify_script(state_dir: str) -> str:
    """The script keepalived runs on a change of role (its argument: master,
    backup or fault), as conntrack-tools' primary-backup.sh does it."""
    conf = shlex.quote(_path(state_dir, CONF))
    return "\n".join([
        "#!/bin/sh",
        "# keepalived's new role for the router: conntrackd follows it",
        f"ctl() {{ conntrackd -C {conf} \"$@\" >/dev/null 2>&1; }}",
        'case "$1" in',
        # the entries heard from the old master into the kernel, then a fresh
        # internal cache from the kernel, sent whole to the backups
        "master) ctl -c; ctl -f; ctl -R; ctl -B ;;",
        # what the kernel holds times out soon; the master's entries asked for
        "backup) ctl -t; ctl -n ;;",
        "fault) ctl -t ;;",
        "esac",
        "exit 0",
        ""])


def command(state_dir: str) -> list[str]:
    return ["conntrackd", "-d", "-C", _path(state_dir, CONF)]


def conntrackd_pid(state_dir: str) -> int | None:
    """The pid of the conntrackd of ``state_dir``, or None."""
    return process.pid_of(_path(state_dir, PID), _path(state_dir, CONF))


def _find(argv: list[str]) -> int | None:
    """The process running exactly ``argv`` (conntrackd, once detached)."""
    for name in os.listdir("/proc"):
        if name.isdigit() and process.cmdline(int(name)) == argv:
            return int(name)
    return None


def _write(path: str, text: str, mode: int = 0o644) -> None:
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path + ".tmp", mode)
    os.replace(path + ".tmp", path)


def _forget(state_dir: str, names: tuple[str, ...]) -> None:
    for path in (*(_path(state_dir, name) for name in names), socket_path(state_dir)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def converge(namespace: str, state_dir: str, sync: Sync, wait: float = 5.0) -> int:
    """conntrackd synchronising ``sync`` in ``namespace``, and keepalived's
    script: started, restarted for a changed configuration, or left alone;
    its pid."""
    ipaddress.IPv4Address(sync.address)  # a wrong one is not conntrackd's to find
    text = render(sync, state_dir)
    conf = _path(state_dir, CONF)
    os.makedirs(state_dir, exist_ok=True)
    script = script_path(state_dir)
    wanted = notify_script(state_dir)
    try:
        with open(script, encoding="utf-8") as handle:
            script_same = handle.read() == wanted
    except FileNotFoundError:
        script_same = False
    if not script_same:
        _write(script, wanted, 0o755)
    try:
        with open(conf, encoding="utf-8") as handle:
            same = handle.read() == text
    except FileNotFoundError:
        same = False
    pid = conntrackd_pid(state_dir)
    if pid is not None and same:
        return pid
    if pid is not None:
        process.terminate(pid, wait)
    # what a conntrackd that died leaves: its lock file stops the next one
    _forget(state_dir, (PID, LOCK))
    os.makedirs(os.path.dirname(socket_path(state_dir)), mode=0o700, exist_ok=True)
    _write(conf, text)
    argv = command(state_dir)
    done = subprocess.run(["ip", "netns", "exec", namespace, *argv], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=30)
    deadline = time.monotonic() + wait  # it detaches once set up: no wait, as a rule
    while (pid := _find(argv)) is None and done.returncode == 0 \
            and time.monotonic() < deadline:
        time.sleep(0.02)
    if pid is None:
        why = done.stderr.strip() or _last(state_dir)
        raise ConntrackdError(f"conntrackd in {namespace} did not start "
                              f"(exit {done.returncode}): {why}")
    _write(_path(state_dir, PID), f"{pid}\n")
    # a conntrackd started anew on a backup asks the master for its entries
    subprocess.run(["ip", "netns", "exec", namespace, "conntrackd", "-C", conf, "-n"],
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    return pid


def _last(state_dir: str) -> str:
    """The last words of conntrackd's log."""
    try:
        with open(_path(state_dir, LOG), encoding="utf-8", errors="replace") as handle:
            return " ".join(handle.read().splitlines()[-3:])
    except FileNotFoundError:
        return ""


def stop(state_dir: str, wait: float = 5.0) -> None:
    """Stop the conntrackd of ``state_dir`` if one runs; forget its files."""
    pid = conntrackd_pid(state_dir)
    if pid is not None:
        process.terminate(pid, wait)
    _forget(state_dir, (PID, LOCK, CONF, SCRIPT))
