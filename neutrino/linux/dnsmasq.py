"""dnsmasq serving one network's DHCP in the network's namespace.

What dnsmasq is told is computed from the network as the server describes it
(its subnets and ports): pure functions, so they are tested without root. The
hosts, options and additional-hosts files hold everything that changes with
ports; dnsmasq re-reads them on SIGHUP, so a port coming or going costs a
signal, not a restart. The command line holds what changes only with subnets
(the ranges, the interface, router advertisements) and router interfaces; a
different one means a restart. The process is found again by its pid file and
its command line, so an agent restarting leaves a dnsmasq serving an unchanged
network alone.

IPv6, by a subnet's ``ipv6_address_mode`` (how instances get addresses) and
``ipv6_ra_mode`` (who sends router advertisements), as in Neutron:

- ``dhcpv6-stateful``: a static DHCPv6 range; each port's address is a hosts
  line ``MAC,name,[address]``, with the subnet's options.
- ``dhcpv6-stateless``: the subnet's options only (clients make their
  addresses from the RAs); no hosts lines.
- ``slaac``: nothing from DHCP. Neither mode set: a static range, as Neutron
  keeps for subnets made before the modes existed.

Router advertisements: Neutron's DHCP agent never sends them; radvd of the L3
agent does, on a router interface of a subnet whose ``ipv6_ra_mode`` is set,
and a subnet with only ``ipv6_address_mode`` expects a router outside
OpenStack to send them (admin guide, "IPv6": "an external router will be
used"). That leaves instances on a network without a router, and a subnet
with ``ipv6_ra_mode`` set, with no RAs and no SLAAC address. neutrino fills
that gap and only that: for a DHCP-enabled subnet with ``ipv6_ra_mode`` set
and no router interface (no port of a router owner with an address on it),
dnsmasq sends the RAs (``--enable-ra``), with the flags of the RA mode:
``slaac`` an ``ra-only`` range (A), ``dhcpv6-stateless`` ``ra-stateless``
(A and O), ``dhcpv6-stateful`` the static range (M and O). Those RAs carry a
router lifetime of 0: the DHCP namespace routes nothing, so instances must
not take it as their default router. Once a router interface is added its
radvd takes over and dnsmasq (restarted: a new command line) stops. A subnet
with only ``ipv6_address_mode`` never gets RAs from dnsmasq: an external
router sends them and two sources would disagree.

Metadata on isolated networks (the agent's ``enable_isolated_metadata``): an
IPv4 subnet whose gateway no router interface holds is isolated, as in
Neutron; its instances get a classless static route to 169.254.169.254/32
through the DHCP port's address (``metadata_routes``), where the DHCP
namespace's metadata proxy listens. Classless routes make clients ignore the
router option, so the default route goes with them, as for host routes.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neutrino.linux.errors import HostError
from neutrino.linux.process import cmdline as _cmdline
from neutrino.linux.process import terminate

#: a network as the DHCP agent has it (with its subnets and ports), only read here
Network = Mapping[str, Any]

#: how much of each subnet dnsmasq may lease: its own limit (1000) is too small
MAX_LEASES = 2 ** 24
#: IPv6 address modes where dnsmasq hands out addresses or options
DHCPV6_MODES = ("dhcpv6-stateful", "dhcpv6-stateless")
#: the owners of router interface ports: a subnet with one is a router's to advertise
ROUTER_INTERFACE_OWNERS = ("network:router_interface", "network:router_interface_distributed",
                           "network:ha_router_replicated_interface")
#: dnsmasq's range mode per ``ipv6_ra_mode``, when dnsmasq sends the RAs
RA_RANGE_MODES = {"slaac": "ra-only", "dhcpv6-stateless": "ra-stateless",
                  "dhcpv6-stateful": "static"}
#: seconds between unsolicited RAs (instances solicit one when their link comes up)
RA_INTERVAL = 30
#: options whose value may be empty: an empty router option stops dnsmasq from
#: offering its own address as the gateway of a subnet without one
EMPTY_ALLOWED = ("router", "classless-static-route")
#: where instances of isolated networks find metadata (the route dnsmasq gives them)
METADATA_CIDR = "169.254.169.254/32"

HOSTS = "host"
OPTS = "opts"
ADDN_HOSTS = "addn_hosts"
PID = "pid"


@dataclass(frozen=True)
class Settings:
    """The agent's options that shape what dnsmasq is told."""

    domain: str = "openstacklocal"
    #: seconds; -1: infinite
    lease_duration: int = 86400
    #: upstream resolvers dnsmasq forwards to (it offers itself as DNS server)
    dns_servers: tuple[str, ...] = ()


# --- what dnsmasq serves ------------------------------------------------------------------


def dhcp_subnets(network: Network) -> list[dict[str, Any]]:
    """The network's subnets with DHCP enabled, by id (the server's order)."""
    return [s for s in network.get("subnets", ()) if s.get("enable_dhcp")]


def _dhcp_served(subnet: dict[str, Any]) -> bool:
    if subnet["ip_version"] == 4:
        return True
    address_mode = subnet.get("ipv6_address_mode")
    legacy = address_mode is None and subnet.get("ipv6_ra_mode") is None
    return address_mode in DHCPV6_MODES or legacy


def served_subnets(network: Network) -> list[dict[str, Any]]:
    """The DHCP subnets dnsmasq answers DHCP on: IPv4, and IPv6 in a DHCPv6 mode
    or in none (SLAAC subnets are the router advertisements', not DHCP's)."""
    return [s for s in dhcp_subnets(network) if _dhcp_served(s)]


def routed_subnets(network: Network) -> set[str]:
    """The subnets a router interface has an address on: its radvd advertises them."""
    return {fixed["subnet_id"] for port in network.get("ports", ())
            if port.get("device_owner") in ROUTER_INTERFACE_OWNERS
            for fixed in port.get("fixed_ips") or ()}


def isolated_subnets(network: Network) -> list[dict[str, Any]]:
    """The IPv4 DHCP subnets whose gateway no router interface holds: their
    instances reach no router's metadata proxy (Neutron's notion of isolated)."""
    routed = {(fixed["subnet_id"], fixed["ip_address"]) for port in network.get("ports", ())
              if port.get("device_owner") in ROUTER_INTERFACE_OWNERS
              for fixed in port.get("fixed_ips") or ()}
    return [s for s in dhcp_subnets(network) if s["ip_version"] == 4
            and (s["id"], s.get("gateway_ip")) not in routed]


def metadata_routes(network: Network, dhcp_port: dict[str, Any]) -> dict[str, str]:
    """Subnet id -> the DHCP port's address on it, for each isolated subnet:
    its instances are told to reach 169.254.169.254 through that address
    (where the DHCP namespace's metadata proxy listens)."""
    held = {fixed["subnet_id"]: fixed["ip_address"] for fixed in dhcp_port["fixed_ips"]}
    return {s["id"]: held[s["id"]] for s in isolated_subnets(network) if s["id"] in held}


def advertised_subnets(network: Network) -> list[dict[str, Any]]:
    """The IPv6 DHCP subnets dnsmasq sends RAs for: an RA mode, and no router
    interface whose radvd would send them."""
    routed = routed_subnets(network)
    return [s for s in dhcp_subnets(network) if s["ip_version"] == 6
            and s.get("ipv6_ra_mode") in RA_RANGE_MODES and s["id"] not in routed]


def subnet_tag(subnet_id: str) -> str:
    return f"subnet-{subnet_id}"


def port_tag(port_id: str) -> str:
    return f"port-{port_id}"


def _hostname(address: str) -> str:
    return "host-" + address.replace(".", "-").replace(":", "-")


def _names(port: dict[str, Any], address: str, domain: str) -> tuple[str, str]:
    """(host name, FQDN) of a port's address: the DNS extension's, else Neutron's
    ``host-10-0-0-5``."""
    for assigned in port.get("dns_assignment") or ():
        if assigned.get("ip_address") == address and assigned.get("hostname"):
            fqdn = (assigned.get("fqdn") or "").rstrip(".")
            return assigned["hostname"], fqdn or assigned["hostname"]
    name = _hostname(address)
    return name, f"{name}.{domain}" if domain else name


def _addresses(network: Network) -> list[tuple[dict[str, Any], dict[str, Any], str]]:
    """(port, subnet, address) of each port address dnsmasq hands out: on a
    served subnet, and not on a stateless IPv6 subnet (clients pick those)."""
    subnets = {s["id"]: s for s in served_subnets(network)}
    found = []
    for port in sorted(network.get("ports", ()), key=lambda p: p["id"]):
        for fixed in port.get("fixed_ips") or ():
            subnet = subnets.get(fixed["subnet_id"])
            if subnet is None or subnet.get("ipv6_address_mode") == "dhcpv6-stateless":
                continue
            found.append((port, subnet, fixed["ip_address"]))
    return found


def served_ports(network: Network) -> list[str]:
    """The ids of the ports dnsmasq gives an address to."""
    return sorted({port["id"] for port, _, _ in _addresses(network)})


def hosts_file(network: Network, settings: Settings) -> str:
    """``--dhcp-hostsfile``: one ``MAC,[set:port-<id>,]name,address`` per address."""
    lines = []
    for port, subnet, address in _addresses(network):
        _, fqdn = _names(port, address, settings.domain)
        shown = f"[{address}]" if subnet["ip_version"] == 6 else address
        tag = f"set:{port_tag(port['id'])}," if port.get("extra_dhcp_opts") else ""
        lines.append(f"{port['mac_address']},{tag}{fqdn},{shown}")
    return "".join(line + "\n" for line in lines)


def addn_hosts_file(network: Network, settings: Settings) -> str:
    """``--addn-hosts``: the ports' names for dnsmasq's DNS answers."""
    lines = []
    for port, _, address in _addresses(network):
        name, fqdn = _names(port, address, settings.domain)
        lines.append(f"{address}\t{fqdn} {name}" if fqdn != name else f"{address}\t{name}")
    return "".join(line + "\n" for line in lines)


def _option(tag: str, name: str, value: str, ip_version: int = 4) -> str:
    """One ``--dhcp-optsfile`` line; numeric option names go as they are."""
    if name.isdigit():
        key = name
    else:
        key = f"option6:{name}" if ip_version == 6 else f"option:{name}"
    return f"tag:{tag},{key},{value}" if value else f"tag:{tag},{key}"


def _subnet_options(subnet: dict[str, Any], metadata_via: str | None) -> list[str]:
    """``metadata_via``: the address instances reach 169.254.169.254 through, if
    the DHCP namespace serves them metadata."""
    tag = subnet_tag(subnet["id"])
    version = subnet["ip_version"]
    gateway = subnet.get("gateway_ip")
    lines = []
    servers = subnet.get("dns_nameservers") or []
    if servers:
        shown = [f"[{s}]" if version == 6 else s for s in servers]
        lines.append(_option(tag, "dns-server", ",".join(shown), version))
    if version == 6:
        return lines
    routes = [(r["destination"], r["nexthop"]) for r in subnet.get("host_routes") or ()]
    if metadata_via:
        routes.append((METADATA_CIDR, metadata_via))
    if routes:
        # a client given classless routes ignores the router option (RFC 3442):
        # the default route goes with them
        if gateway and all(dst != "0.0.0.0/0" for dst, _ in routes):
            routes.append(("0.0.0.0/0", gateway))
        value = ",".join(f"{dst},{hop}" for dst, hop in routes)
        lines.append(_option(tag, "classless-static-route", value))
        lines.append(_option(tag, "249", value))  # the same, for Windows clients
    lines.append(_option(tag, "router", gateway or ""))
    return lines


def _port_options(port: dict[str, Any]) -> list[str]:
    tag = port_tag(port["id"])
    lines = []
    for opt in port.get("extra_dhcp_opts") or ():
        value = opt.get("opt_value")
        if value is None or (not value and opt["opt_name"] not in EMPTY_ALLOWED):
            continue
        lines.append(_option(tag, opt["opt_name"], value, int(opt.get("ip_version") or 4)))
    return lines


def opts_file(network: Network, metadata: dict[str, str] | None = None) -> str:
    """``--dhcp-optsfile``: each subnet's gateway, DNS servers and routes (with
    ``metadata``, ``metadata_routes``' routes), then each served port's extra
    options."""
    lines: list[str] = []
    for subnet in served_subnets(network):
        lines += _subnet_options(subnet, (metadata or {}).get(subnet["id"]))
    ports = {port["id"]: port for port, _, _ in _addresses(network)}
    for port_id in sorted(ports):
        lines += _port_options(ports[port_id])
    return "".join(line + "\n" for line in lines)


def files(network: Network, settings: Settings, metadata: dict[str, str] | None = None
          ) -> dict[str, str]:
    """Every file dnsmasq reads on SIGHUP, by name in the network's directory
    (``metadata``: see ``opts_file``)."""
    return {HOSTS: hosts_file(network, settings), ADDN_HOSTS: addn_hosts_file(network, settings),
            OPTS: opts_file(network, metadata)}


def _lease(settings: Settings) -> str:
    return "infinite" if settings.lease_duration == -1 else f"{settings.lease_duration}s"


def range_modes(network: Network) -> list[tuple[dict[str, Any], str]]:
    """(subnet, dnsmasq range mode) of each subnet that gets a ``--dhcp-range``:
    the DHCP-served ones (``static``) and those dnsmasq advertises (by RA mode)."""
    advertised = {s["id"]: RA_RANGE_MODES[s["ipv6_ra_mode"]] for s in advertised_subnets(network)}
    served = {s["id"] for s in served_subnets(network)}
    return [(s, advertised.get(s["id"], "static")) for s in dhcp_subnets(network)
            if s["id"] in served or s["id"] in advertised]


def _range(subnet: dict[str, Any], mode: str, settings: Settings) -> str:
    net = ipaddress.ip_network(subnet["cidr"], strict=False)
    tag = f"set:{subnet_tag(subnet['id'])}"
    if net.version == 4:
        return f"{tag},{net.network_address},{mode},{net.netmask},{_lease(settings)}"
    return f"{tag},{net.network_address},{mode},{net.prefixlen},{_lease(settings)}"


def _ra_arguments(network: Network, interface: str) -> list[str]:
    """RAs on ``interface`` when dnsmasq advertises a subnet: the network's MTU,
    and a router lifetime of 0 (prefixes, but no default route through it)."""
    if not advertised_subnets(network):
        return []
    mtu = f"mtu:{network['mtu']}," if network.get("mtu") else ""
    return ["--enable-ra", f"--ra-param={interface},{mtu}{RA_INTERVAL},0"]


def command(network: Network, interface: str, conf_dir: str, settings: Settings
            ) -> list[str]:
    """dnsmasq's command line for the network, served on ``interface``."""
    ranges = range_modes(network)
    path = os.path.join
    argv = ["dnsmasq", "--no-hosts", "--no-resolv", "--conf-file=/dev/null",
            f"--pid-file={path(conf_dir, PID)}",
            f"--dhcp-hostsfile={path(conf_dir, HOSTS)}",
            f"--addn-hosts={path(conf_dir, ADDN_HOSTS)}",
            f"--dhcp-optsfile={path(conf_dir, OPTS)}",
            "--leasefile-ro", "--dhcp-authoritative",
            f"--interface={interface}", "--except-interface=lo", "--bind-interfaces"]
    argv += [f"--dhcp-range={_range(s, mode, settings)}" for s, mode in ranges]
    argv += _ra_arguments(network, interface)
    size = sum(ipaddress.ip_network(s["cidr"], strict=False).num_addresses
               for s, mode in ranges if mode == "static")
    argv.append(f"--dhcp-lease-max={min(size, MAX_LEASES)}")
    argv += [f"--server={server}" for server in settings.dns_servers]
    if settings.domain:
        argv.append(f"--domain={settings.domain}")
    return argv


# --- files and the process -------------------------------------------------------------------


def make_conf_dir(conf_dir: str) -> None:
    """The network's directory, readable by all: dnsmasq reads its files after
    dropping root (so the directories above must be searchable by all too)."""
    os.makedirs(conf_dir, exist_ok=True)
    os.chmod(conf_dir, 0o755)


def write_files(conf_dir: str, contents: dict[str, str]) -> bool:
    """Write the files that differ (atomically: dnsmasq may be reading them),
    readable by all; whether any did."""
    make_conf_dir(conf_dir)
    changed = False
    for name, text in contents.items():
        target = os.path.join(conf_dir, name)
        try:
            with open(target, encoding="utf-8") as handle:
                if handle.read() == text:
                    continue
        except FileNotFoundError:
            pass
        staging = target + ".new"
        with open(staging, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(staging, 0o644)
        os.replace(staging, target)
        changed = True
    return changed


class DnsmasqError(HostError):
    """dnsmasq refused to start; the message carries what it said."""


class Dnsmasq:
    """The dnsmasq of one network: its pid file in ``conf_dir``, run in ``namespace``."""

    def __init__(self, conf_dir: str, namespace: str):
        self.conf_dir = conf_dir
        self.namespace = namespace
        self.pid_file = os.path.join(conf_dir, PID)

    def pid(self) -> int | None:
        """The running dnsmasq's pid: the pid file's, if that process is a dnsmasq
        with this pid file (not a pid reused by something else)."""
        try:
            with open(self.pid_file, encoding="ascii") as handle:
                pid = int(handle.read().strip())
        except (OSError, ValueError):
            return None
        argv = _cmdline(pid)
        return pid if argv and f"--pid-file={self.pid_file}" in argv else None

    def argv(self) -> list[str] | None:
        """The running dnsmasq's command line, or None when none runs."""
        pid = self.pid()
        return _cmdline(pid) if pid is not None else None

    def start(self, argv: list[str]) -> int:
        """Start it in the namespace; it detaches (so it outlives the agent) and
        its first process exits once it serves, or with the reason it cannot."""
        done = subprocess.run(["ip", "netns", "exec", self.namespace, *argv],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=30)
        pid = self.pid()
        if done.returncode != 0 or pid is None:
            raise DnsmasqError(f"dnsmasq in {self.namespace} did not start "
                               f"(exit {done.returncode}): {done.stderr.strip()}")
        return pid

    def reload(self) -> None:
        """Re-read the hosts and options files."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGHUP)

    def stop(self, wait: float = 5.0) -> None:
        pid = self.pid()
        if pid is not None:
            terminate(pid, wait)
        try:
            os.unlink(self.pid_file)
        except FileNotFoundError:
            pass

    def restart(self, argv: list[str]) -> int:
        self.stop()
        return self.start(argv)
