"""IPv6 router advertisements from a router's namespace (radvd), as Neutron's L3 agent sends them.

A router interface advertises its IPv6 subnets whose ``ipv6_ra_mode`` is set:

- ``slaac``: the prefix with AdvAutonomous on (instances make their address);
- ``dhcpv6-stateless``: the same, and AdvOtherConfigFlag on (other
  configuration, DNS, by DHCPv6);
- ``dhcpv6-stateful``: AdvManagedFlag on (addresses by DHCPv6) and the prefix
  with AdvAutonomous off.

Each interface also says ``AdvSendAdvert on``, its MTU (``AdvLinkMTU``, when
at least IPv6's 1280), the ``MinRtrAdvInterval``/``MaxRtrAdvInterval`` of the
agent's ``min_rtr_adv_interval``/``max_rtr_adv_interval`` and, from the
subnets' IPv6 ``dns_nameservers`` (three at most), an RDNSS option.

One radvd per router, its configuration, pid and log files in the router's
directory (``$state_path/l3/<router id>/``). ``converge`` is what the router's
dataplane calls on every serve: nothing when the configuration is unchanged
and radvd runs; a new configuration is written and radvd told by SIGHUP
(it re-reads it); a radvd that is not running is started; nothing to
advertise stops it. ``render`` is pure.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass

from neutrino.linux import process
from neutrino.linux.errors import HostError

SLAAC, STATELESS, STATEFUL = "slaac", "dhcpv6-stateless", "dhcpv6-stateful"
RA_MODES = (SLAAC, STATELESS, STATEFUL)
CONF, PID, LOG_FILE = "radvd.conf", "radvd.pid", "radvd.log"
IPV6_MIN_MTU = 1280
MAX_DNS = 3
#: Neutron's defaults
MIN_INTERVAL, MAX_INTERVAL = 30, 100


@dataclass(frozen=True)
class Interface:
    """What one router interface advertises."""

    device: str
    mtu: int
    #: (cidr, ipv6_ra_mode)
    prefixes: tuple[tuple[str, str], ...]
    dns: tuple[str, ...] = ()


def interface(device: str, mtu: int, subnets: Iterable[dict]) -> Interface | None:
    """The advertisement of a router interface with the ``subnets`` (the
    server's subnet dicts: cidr, ipv6_ra_mode, dns_nameservers); None when none
    of them is an IPv6 subnet with an RA mode."""
    prefixes, dns = [], []
    for subnet in subnets:
        mode = subnet.get("ipv6_ra_mode")
        if mode not in RA_MODES or ipaddress.ip_network(subnet["cidr"], False).version != 6:
            continue
        prefixes.append((str(ipaddress.ip_network(subnet["cidr"], False)), mode))
        for server in subnet.get("dns_nameservers") or ():
            if ipaddress.ip_address(server).version == 6 and server not in dns:
                dns.append(server)
    if not prefixes:
        return None
    return Interface(device, mtu, tuple(sorted(prefixes)), tuple(dns[:MAX_DNS]))


def render(interfaces: Iterable[Interface], min_interval: int = MIN_INTERVAL,
           max_interval: int = MAX_INTERVAL) -> str:
    """radvd.conf for ``interfaces``."""
    lines: list[str] = []
    for iface in sorted(interfaces, key=lambda i: i.device):
        modes = {mode for _, mode in iface.prefixes}
        lines += [f"interface {iface.device}", "{", "    AdvSendAdvert on;",
                  f"    MinRtrAdvInterval {min_interval};",
                  f"    MaxRtrAdvInterval {max_interval};"]
        if iface.mtu >= IPV6_MIN_MTU:
            lines.append(f"    AdvLinkMTU {iface.mtu};")
        if STATELESS in modes:
            lines.append("    AdvOtherConfigFlag on;")
        if STATEFUL in modes:
            lines.append("    AdvManagedFlag on;")
        if iface.dns:
            lines.append(f"    RDNSS {' '.join(iface.dns)} {{}};")
        for cidr, mode in iface.prefixes:
            autonomous = "off" if mode == STATEFUL else "on"
            lines += [f"    prefix {cidr}", "    {", "        AdvOnLink on;",
                      f"        AdvAutonomous {autonomous};", "    };"]
        lines.append("};")
    return "\n".join(lines) + "\n" if lines else ""


def _path(state_dir: str, name: str) -> str:
    return os.path.join(os.path.abspath(state_dir), name)


def command(state_dir: str) -> list[str]:
    return ["radvd", "-C", _path(state_dir, CONF), "-p", _path(state_dir, PID),
            "-m", "logfile", "-l", _path(state_dir, LOG_FILE)]


def radvd_pid(state_dir: str) -> int | None:
    """The pid of the radvd of ``state_dir``, or None if none runs."""
    pid_file = _path(state_dir, PID)
    return process.pid_of(pid_file, pid_file)


class RadvdError(HostError):
    """radvd did not start; the message says why."""


def converge(namespace: str, state_dir: str, interfaces: Iterable[Interface],
             min_interval: int = MIN_INTERVAL, max_interval: int = MAX_INTERVAL,
             wait: float = 5.0) -> int | None:
    """radvd advertising ``interfaces`` in ``namespace`` (none: stopped); its pid."""
    text = render(interfaces, min_interval, max_interval)
    if not text:
        stop(state_dir)
        return None
    return process.run_configured(
        namespace, _path(state_dir, CONF), text, command(state_dir),
        lambda: radvd_pid(state_dir), f"radvd in {namespace}",
        lambda: _tail(_path(state_dir, LOG_FILE)), wait, RadvdError)


def stop(state_dir: str, wait: float = 5.0) -> None:
    """Stop the radvd of ``state_dir`` if one runs; forget its files."""
    pid = radvd_pid(state_dir)
    if pid is not None:
        process.terminate(pid, wait)
    for name in (PID, CONF):
        try:
            os.unlink(_path(state_dir, name))
        except FileNotFoundError:
            pass


def _tail(path: str, lines: int = 5) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return " | ".join(handle.read().splitlines()[-lines:])
    except OSError:
        return ""
