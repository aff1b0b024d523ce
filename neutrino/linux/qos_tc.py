"""Rate limits on a port's device with tc (the Linux bridge agent's QoS).

What leaves a device (towards the instance behind a tap) is shaped by a token
bucket filter at its root. What enters it (what the instance sends) cannot be
policed here, the kernel having no ``police`` action, so it is redirected to an
IFB device of the port's own (``ifb`` and the tap's suffix) and shaped as it
leaves that. Both are read back before they are written: a limit already in
place is left alone, so that a full resync rewrites nothing that is right.
"""

from __future__ import annotations

import enum
import ipaddress
import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any

from neutrino.linux.errors import HostError

#: a bucket holds at least two full frames, or TCP stalls whatever the rate
MIN_BURST_BYTES = 3200
#: how long a packet may wait in a bucket before it is dropped (Neutron's)
LATENCY = "50ms"
INGRESS = "ffff:"
IFB_PREFIX = "ifb"


class Unknown(enum.Enum):
    """What a device has, when it is to be read from the host."""

    UNKNOWN = "unknown"


UNKNOWN = Unknown.UNKNOWN


class TcError(HostError):
    """``tc`` refused a change; the message is its own."""


@dataclass(frozen=True)
class Limit:
    """A rate in kbit/s and a burst in kbit (0: 80% of a second's worth, as
    Neutron's drivers default it)."""

    kbps: int
    burst_kbit: int = 0

    @property
    def rate_bytes(self) -> int:
        return self.kbps * 1000 // 8

    @property
    def burst_bytes(self) -> int:
        kbit = self.burst_kbit or self.kbps * 8 // 10
        return max(kbit * 1000 // 8, MIN_BURST_BYTES)


def ifb_name(device: str) -> str:
    """The IFB device that shapes what enters ``device`` (``tap…`` -> ``ifb…``)."""
    return IFB_PREFIX + device[3:]


class Tc:
    """tc and the IFB devices of one network namespace (None: this one)."""

    def __init__(self, namespace: str | None = None, timeout: float = 10):
        self._prefix = ["ip", "netns", "exec", namespace] if namespace else []
        self._timeout = timeout

    def _run(self, *argv: str, check: bool = True) -> str:
        done = subprocess.run([*self._prefix, *argv], capture_output=True, text=True,
                              timeout=self._timeout)
        if check and done.returncode:
            raise TcError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
        return done.stdout

    def _json(self, *argv: str) -> list[dict[str, Any]]:
        """What a tool's ``-j`` output lists ([] when it says nothing useful)."""
        out = self._run(*argv, check=False)
        try:
            found = json.loads(out) if out.strip() else []
        except ValueError:
            return []
        return found if isinstance(found, list) else []

    # --- what leaves a device ------------------------------------------------------------

    def _bucket(self, device: str) -> tuple[int, int] | None:
        for qdisc in self._json("tc", "-j", "qdisc", "show", "dev", device):
            if qdisc.get("root") and qdisc.get("kind") == "tbf":
                options = qdisc.get("options", {})
                return options.get("rate", 0), options.get("burst", 0)
        return None

    def shape(self, device: str, limit: Limit | None,
              had: Limit | None | Unknown = UNKNOWN) -> bool:
        """Shape what leaves ``device`` to ``limit`` (None: not at all); ``had``:
        what it is known to have (read from the device when unknown). Whether
        anything was changed."""
        if had is UNKNOWN:
            wanted = None if limit is None else (limit.rate_bytes, limit.burst_bytes)
            if self._bucket(device) == wanted:
                return False
        elif had == limit:
            return False
        if limit is None:
            self._run("tc", "qdisc", "del", "dev", device, "root", check=False)
        else:
            self._run("tc", "qdisc", "replace", "dev", device, "root", "tbf",
                      "rate", f"{limit.kbps}kbit", "burst", str(limit.burst_bytes),
                      "latency", LATENCY)
        return True

    # --- what enters a device ------------------------------------------------------------

    def _redirected_to(self, device: str) -> str | None:
        """The device ``device``'s ingress is redirected to, if it is."""
        for found in self._json("tc", "-j", "filter", "show", "dev", device, "parent", INGRESS):
            for action in found.get("options", {}).get("actions", []):
                if action.get("kind") == "mirred":
                    return str(action.get("to_dev"))
        return None

    def _link_exists(self, name: str) -> bool:
        return bool(self._run("ip", "link", "show", "dev", name, check=False))

    def limit_ingress(self, device: str, limit: Limit | None,
                      had: Limit | None | Unknown = UNKNOWN) -> bool:
        """Shape what enters ``device`` (through its IFB) to ``limit`` (None: not
        at all, and its IFB removed); ``had``: what it is known to have (read
        from the host when unknown). Whether anything was changed."""
        ifb = ifb_name(device)
        if had is not UNKNOWN and (had is None) == (limit is None):
            return self.shape(ifb, limit, had) if limit is not None else False
        if limit is None:
            changed = False
            if had is not None and (had is not UNKNOWN or self._redirected_to(device)):
                self._run("tc", "qdisc", "del", "dev", device, "ingress", check=False)
                changed = True
            if had is not UNKNOWN or self._link_exists(ifb):
                self._run("ip", "link", "del", "dev", ifb, check=False)
                changed = True
            return changed
        changed = False
        if had is None or not self._link_exists(ifb):
            self._run("ip", "link", "add", ifb, "type", "ifb", check=had is not None)
            changed = True
        self._run("ip", "link", "set", ifb, "up")
        if had is None or self._redirected_to(device) != ifb:
            self._run("tc", "qdisc", "replace", "dev", device, "ingress")
            self._run("tc", "filter", "replace", "dev", device, "parent", INGRESS,
                      "protocol", "all", "pref", "1", "u32", "match", "u32", "0", "0",
                      "action", "mirred", "egress", "redirect", "dev", ifb)
            changed = True
        return self.shape(ifb, limit, None if had is None else UNKNOWN) or changed

    def ifbs(self) -> set[str]:
        """The IFB devices of this namespace that these limits made."""
        links = self._json("ip", "-j", "-d", "link", "show", "type", "ifb")
        return {link["ifname"] for link in links
                if link.get("ifname", "").startswith(IFB_PREFIX)
                and link.get("linkinfo", {}).get("info_kind") == "ifb"}

    def remove_ifb(self, name: str) -> None:
        self._run("ip", "link", "del", "dev", name, check=False)

    def _filtered(self, device: str, parent: str) -> dict[int, tuple[str, str]]:
        """priority -> (the matched value in hex, the class) of ``device``'s u32 filters."""
        found = {}
        for entry in self._json("tc", "-j", "filter", "show", "dev", device, "parent", parent):
            options = entry.get("options", {})
            if "flowid" in options:
                found[entry.get("pref", 0)] = (options.get("match", {}).get("value", ""),
                                               options["flowid"])
        return found

    def shape_addresses(self, device: str, limits: tuple[AddressLimit, ...],
                        record: str) -> bool:
        """Limit what ``device`` carries per address as ``limits`` say, with
        what was written kept in the file ``record`` (tc reads rates back
        rounded): a device found as recorded is left alone. Whether anything
        was changed."""
        try:
            with open(record, encoding="ascii") as file:
                written: str | None = file.read()
        except FileNotFoundError:
            written = None
        if written is None and not limits:
            return False  # never limited here
        egress = [(a.address, a.egress) for a in limits if a.egress]
        ingress = [(a.address, a.ingress) for a in limits if a.ingress]
        ifb = ifb_name(device)
        if written == _record(limits) and self._as_written(device, egress, ingress):
            return False
        batch = [f"qdisc del dev {device} root", f"qdisc del dev {device} ingress"]
        if egress:
            batch += _htb(device, egress, "src")
        if ingress:
            if not self._link_exists(ifb):
                self._run("ip", "link", "add", ifb, "type", "ifb")
            self._run("ip", "link", "set", ifb, "up")
            batch += [f"qdisc add dev {device} ingress",
                      f"filter add dev {device} parent {INGRESS} protocol all pref 1 u32 "
                      f"match u32 0 0 action mirred egress redirect dev {ifb}",
                      f"qdisc del dev {ifb} root", *_htb(ifb, ingress, "dst")]
        elif self._link_exists(ifb):
            self._run("ip", "link", "del", "dev", ifb)
        self._batch(batch)
        if limits:
            with open(record, "w", encoding="ascii") as file:
                file.write(_record(limits))
        else:
            os.unlink(record)
        return True

    def _as_written(self, device: str, egress: list[tuple[str, Limit]],
                    ingress: list[tuple[str, Limit]]) -> bool:
        """Whether the filters of ``device`` (and its IFB) are those of the limits."""
        def expected(pairs: list[tuple[str, Limit]]) -> dict[int, tuple[str, str]]:
            return {address_class(a): (f"{int(ipaddress.IPv4Address(a)):x}",
                                       f"1:{address_class(a):x}") for a, _ in pairs}
        if self._filtered(device, "1:") != expected(egress):
            return False
        if not ingress:
            return self._redirected_to(device) is None
        return (self._redirected_to(device) == ifb_name(device)
                and self._filtered(ifb_name(device), "1:") == expected(ingress))

    def _batch(self, lines: list[str]) -> None:
        """``lines`` through one ``tc -force -batch``: a delete of what is not
        there is no failure; anything else is."""
        done = subprocess.run([*self._prefix, "tc", "-force", "-batch", "-"],
                              input="\n".join(lines) + "\n", capture_output=True, text=True,
                              timeout=self._timeout)
        failed = [int(line.rsplit(":", 1)[1]) for line in done.stderr.splitlines()
                  if line.startswith("Command failed -:")]
        wrong = [lines[n - 1] for n in failed if 0 < n <= len(lines)
                 and " del " not in f" {lines[n - 1]} "]
        if wrong or (done.returncode and not failed):
            raise TcError(f"tc refused {'; '.join(wrong) or lines[0]}: {done.stderr.strip()}")


# --- limits per address on a router's gateway -----------------------------------------

@dataclass(frozen=True)
class AddressLimit:
    """What a router's gateway device carries for one IPv4 address (a floating
    IP, the gateway's own): ``egress`` leaving it from the address, ``ingress``
    arriving for it."""

    address: str
    egress: Limit | None = None
    ingress: Limit | None = None


def address_class(address: str) -> int:
    """The HTB class minor (and filter priority) of an address: its last 16
    bits, which tell apart the addresses of one router's external subnets."""
    return int(ipaddress.IPv4Address(address)) & 0xFFFF or 0xFFFF


def _htb(device: str, limits: list[tuple[str, Limit]], match: str) -> list[str]:
    """tc batch lines: ``device``'s root an HTB whose classes limit, each, what
    ``match`` (src or dst) names; what no filter takes passes unlimited."""
    lines = [f"qdisc add dev {device} root handle 1: htb"]
    for address, limit in limits:
        minor = f"{address_class(address):x}"
        rate = f"{limit.kbps}kbit"
        lines += [f"class add dev {device} parent 1: classid 1:{minor} htb rate {rate} "
                  f"ceil {rate} burst {limit.burst_bytes} cburst {limit.burst_bytes}",
                  f"filter add dev {device} parent 1: protocol ip prio "
                  f"{address_class(address)} u32 match ip {match} {address}/32 "
                  f"flowid 1:{minor}"]
    return lines


def _record(limits: tuple[AddressLimit, ...]) -> str:
    return json.dumps([[a.address, *(None if x is None else [x.kbps, x.burst_kbit]
                                     for x in (a.egress, a.ingress))]
                       for a in sorted(limits, key=lambda a: a.address)])
