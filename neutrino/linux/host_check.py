"""What an agent needs of its host, checked before it starts.

An agent whose host lacks a tool it runs (dnsmasq, ipset...), or whose
mapping names a device that is not there, would start, report itself alive,
and then fail every sync, once a second. Checked first, the mistake is one
line that names what is missing and the setting that wants it, and the
agent does not start (Neutron's agents refuse a mapping to a missing device,
and a tunnel address that is not the host's, the same way).

``Needs`` is data an agent builds from its configuration (no host access);
``check`` looks at the host. Tools are looked for on ``PATH``: the agents run
them by name, through ``ip netns exec``, which searches the same ``PATH``.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from neutrino.linux.errors import HostError


@dataclass(frozen=True)
class Tool:
    name: str
    #: the Debian package that provides it, for the message that it is missing
    package: str


IP = Tool("ip", "iproute2")
TC = Tool("tc", "iproute2")
SYSCTL = Tool("sysctl", "procps")
IPTABLES = (Tool("iptables-save", "iptables"), Tool("iptables-restore", "iptables"))
IP6TABLES = (Tool("ip6tables-save", "iptables"), Tool("ip6tables-restore", "iptables"))
IPSET = Tool("ipset", "ipset")
CONNTRACK = Tool("conntrack", "conntrack")
DNSMASQ = Tool("dnsmasq", "dnsmasq-base")
RADVD = Tool("radvd", "radvd")
ARPING = Tool("arping", "iputils-arping")
OVS_OFCTL = Tool("ovs-ofctl", "openvswitch-common")
CHARON = Tool("charon-systemd", "charon-systemd")
SWANCTL = Tool("swanctl", "strongswan-swanctl")
HAPROXY = Tool("haproxy", "haproxy")
CONNTRACKD = Tool("conntrackd", "conntrackd")


class HostCheckError(HostError):
    """The host cannot run the agent as configured; the message is one line."""


@dataclass
class OvsNeeds:
    """An OVS database to reach, and the bridges that must be in it."""

    remote: str
    timeout: int
    why: str  # the setting that names the database
    bridges: list[tuple[str, str]] = field(default_factory=list)  # (bridge, why)


@dataclass
class Needs:
    """What an agent, as configured, needs of the host; each item with ``why``:
    the setting that wants it (``Config.setting``/``source``), for the message."""

    tools: list[tuple[Tool, str]] = field(default_factory=list)
    #: network devices that must exist in the agent's namespace
    devices: list[tuple[str, str]] = field(default_factory=list)
    #: addresses that must be the host's own (a tunnel's local end)
    addresses: list[tuple[str, str]] = field(default_factory=list)
    #: kernel settings that must have a value: (sysctl name, value, the module
    #: that provides it, why)
    sysctls: list[tuple[str, str, str, str]] = field(default_factory=list)
    ovs: OvsNeeds | None = None
    #: directories the agent writes in, made now if they are not there
    directories: list[tuple[str, str]] = field(default_factory=list)
    #: what no field above says (can the kernel do ESP?): each raises
    #: ``HostError`` with its one line, run last
    checks: list[Callable[[], object]] = field(default_factory=list)

    def tool(self, why: str, *tools: Tool) -> None:
        self.tools.extend((tool, why) for tool in tools)

    def check(self) -> None:
        """Raise ``HostCheckError`` for the first need the host does not meet."""
        for tool, why in self.tools:
            if missing([tool]):
                raise HostCheckError(f"{tool.name} not found on PATH (Debian package "
                                     f"{tool.package}), needed by {why}")
        for device, why in self.devices:
            if not device_exists(device):
                raise HostCheckError(f"no network device {device} on this host, named by "
                                     f"{why}")
        for address, why in self.addresses:
            if not is_local_address(address):
                raise HostCheckError(f"{address} is not an address of this host, set by "
                                     f"{why}")
        for name, wanted, module, why in self.sysctls:
            path = os.path.join("/proc/sys", *name.split("."))
            try:
                with open(path, encoding="ascii") as handle:
                    value = handle.read().strip()
            except OSError:
                raise HostCheckError(f"no kernel setting {name} (is {module} loaded? "
                                     f"modprobe {module}), needed by {why}") from None
            if value != wanted:
                raise HostCheckError(f"kernel setting {name} is {value}, not {wanted} "
                                     f"(sysctl -w {name}={wanted}), needed by {why}")
        if self.ovs is not None:
            check_ovs(self.ovs)
        for path, why in self.directories:
            try:
                os.makedirs(path, exist_ok=True)
            except OSError as error:
                raise HostCheckError(f"cannot create directory {path}: {error.strerror}, "
                                     f"set by {why}") from None
        for check in self.checks:
            try:
                check()
            except HostError as error:
                raise HostCheckError(str(error)) from None


def missing(tools: Iterable[Tool]) -> list[Tool]:
    """Those of ``tools`` not on PATH (for what is only worth a warning)."""
    return [tool for tool in tools if shutil.which(tool.name) is None]


def device_exists(name: str) -> bool:
    """Whether a network device of that name is in this network namespace."""
    try:
        socket.if_nametoindex(name)
    except OSError:
        return False
    return True


def is_local_address(address: str) -> bool:
    """Whether ``address`` is on one of this namespace's devices: whether a
    socket can be bound to it."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind((address, 0))
        except OSError as error:
            if isinstance(error, socket.gaierror) or error.errno in (
                    errno.EADDRNOTAVAIL, errno.EINVAL, errno.EAFNOSUPPORT):
                return False
            raise HostCheckError(f"cannot tell whether {address} is this host's: "
                                 f"{error.strerror}") from None
    return True


def check_ovs(needs: OvsNeeds) -> None:
    """The database answers, and has every bridge of ``needs``."""
    path = _unix_path(needs.remote)
    if path is not None and not os.path.exists(path):
        raise HostCheckError(f"no OVS database at {needs.remote} (is ovsdb-server running?), "
                             f"set by {needs.why}")
    from neutrino.linux.ovs import Ovsdb, OvsError  # ovsdbapp: only for OVS agents

    try:
        db = Ovsdb(needs.remote, needs.timeout)
    except OvsError as error:
        raise HostCheckError(f"{error}, set by {needs.why}") from None
    try:
        present = set(db.bridges())
    finally:
        db.close()
    for bridge, why in needs.bridges:
        if bridge not in present:
            raise HostCheckError(f"no OVS bridge {bridge} in the database at {needs.remote}, "
                                 f"named by {why}")


def _unix_path(remote: str) -> str | None:
    """The socket's path of a ``unix:PATH`` OVSDB remote; None for others."""
    parts = urlsplit(remote)
    return remote[len("unix:"):] if parts.scheme == "unix" else None
