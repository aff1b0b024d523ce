"""A legacy router on this host: a namespace ``qrouter-<router id>`` that forwards.

Each interface port is a ``qr-<port id[:11]>`` device there and the gateway
port a ``qg-<port id[:11]>`` (the interface driver's veth pairs: their ``tap``
ends stay with the host, where the L2 agent plugs them into the networks'
bridges), with the ports' MACs, MTUs and addresses; the gateway also carries
the floating IPs (/32). Routes through a gateway (the default routes, the
router's extra routes) and the NAT chains (``neutrino.linux.nat``) complete
it, and the gateway's rate limits per address (``neutrino.linux.qos_tc``).
A router with ``nat.metadata`` also runs a metadata proxy
(``neutrino.linux.metadata_proxy``) on port 9697 of its namespace, with
``X-Neutron-Router-ID``, its pid and log in the router's directory; the NAT
chains redirect the instances' 169.254.169.254:80 there. Interfaces on IPv6
subnets with an ``ipv6_ra_mode`` get router advertisements from the router's
radvd (``neutrino.linux.radvd``), its files in the router's directory too.

A highly available router (``Router.ha``) also has a port on its project's
HA network (``ha-<port id[:11]>``, with its own address there) and runs
keepalived (``neutrino.linux.keepalived``): the interfaces' and gateway's
addresses (floating IPs too) and the routes are then keepalived's to add,
on the host VRRP elects, and to take away elsewhere; serve leaves them alone.
Made legacy again, keepalived is stopped first and the addresses set as for
any router. With ``HaSettings.conntrackd``, conntrackd
(``neutrino.linux.conntrackd``) runs there too, started before keepalived,
whose changes of role it follows.

``RouterDataplane.serve`` converges one router to a ``Router`` (idempotent:
it changes only what differs, and a full resync may call it blindly);
``retire`` takes everything of a router away. The routers set up here, even
partly, are known by their directories under the state directory (made
first, removed last), so that routers deleted while the agent was down are
found, and the ``qrouter-`` namespaces of another agent on the machine are
never taken for ours.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import shutil
import signal
import subprocess
import time
from contextlib import ExitStack
from dataclasses import dataclass, field

from pyroute2 import NetlinkError

from neutrino.linux import arping, conntrackd, ip, keepalived, metadata_proxy, qos_tc, radvd
from neutrino.linux.interface import InterfaceDriver, device_name
from neutrino.linux.nat import NatTable, RouterNat

LOG = logging.getLogger(__name__)

NAMESPACE = "qrouter-"
INTERNAL = "qr-"
EXTERNAL = "qg-"
HA = "ha-"  # an HA router's port on its project's HA network
#: a router forwards; it sends no ICMP redirects (a floating IP's "hairpin"
#: traffic leaves by the interface it came in by, and must still pass the router)
SYSCTLS = ("net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
           "net.ipv4.conf.all.send_redirects=0", "net.ipv4.conf.default.send_redirects=0")
#: in a router's directory once its namespace is set up
READY = "namespace-ready"
#: in a router's directory while its gateway has rate limits: what was written
LIMITS = "qos-limits.json"


def namespace_name(router_id: str) -> str:
    return NAMESPACE + router_id


@dataclass(frozen=True)
class Port:
    id: str
    mac: str
    mtu: int
    cidrs: tuple[str, ...]  # address/prefixlen


@dataclass(frozen=True)
class HaSettings:
    """What makes a router highly available on this host: its port on the HA
    network (its own address there) and its VRRP instance's settings."""

    port: Port
    vr_id: int
    priority: int = 50
    advert_int: int = 2
    auth: tuple[str, str] | None = None  # (AH or PASS, password)
    #: set when conntrackd copies the master's connection tracking to the others
    conntrackd: conntrackd.Settings | None = None


@dataclass(frozen=True)
class Router:
    """What one router is to be on this host."""

    id: str
    interfaces: tuple[Port, ...] = ()
    gateway: Port | None = None
    #: (destination, nexthop): the default routes and the extra routes
    routes: tuple[tuple[str, str], ...] = ()
    nat: RouterNat = field(default_factory=RouterNat)
    #: the interfaces that send router advertisements (radvd)
    advertise: tuple[radvd.Interface, ...] = ()
    #: rate limits of addresses on the gateway (floating IPs', the gateway's own)
    limits: tuple[qos_tc.AddressLimit, ...] = ()
    #: set for a highly available router: keepalived holds its addresses and
    #: routes, on the host VRRP elects
    ha: HaSettings | None = None

    @property
    def metadata(self) -> bool:
        """Whether the router serves its instances' metadata (runs a proxy)."""
        return self.nat.metadata


class RouterDataplane:
    """The host side of routers: blocking calls (netlink, iptables, files),
    which the agent runs in threads, one router at a time per router."""

    def __init__(self, state_dir: str, driver: InterfaceDriver,
                 arp_count: int = 3, metadata_socket: str | None = None,
                 ra_intervals: tuple[int, int] = (radvd.MIN_INTERVAL, radvd.MAX_INTERVAL)):
        """``metadata_socket``: the metadata agent's socket, where the routers'
        proxies send requests (None: no router runs one); ``ra_intervals``:
        radvd's (MinRtrAdvInterval, MaxRtrAdvInterval)."""
        self.state_dir = state_dir
        self.driver = driver
        self.arp_count = arp_count
        self.metadata_socket = metadata_socket
        self.ra_intervals = ra_intervals
        self._nat: dict[str, NatTable] = {}

    def router_dir(self, router_id: str) -> str:
        return os.path.join(self.state_dir, router_id)

    def present(self) -> set[str]:
        """The routers set up here (even partly): those with a directory."""
        try:
            return {name for name in os.listdir(self.state_dir)
                    if os.path.isdir(self.router_dir(name))}
        except FileNotFoundError:
            return set()

    def serve(self, router: Router) -> list[str]:
        """Make the router's namespace match ``router``; the gateway addresses
        it announced (new ones)."""
        directory = self.router_dir(router.id)
        os.makedirs(directory, exist_ok=True)  # first: it is how a router is known here
        namespace = namespace_name(router.id)
        fresh = namespace not in ip.namespaces()
        ip.add_namespace(namespace)
        ready = os.path.join(directory, READY)
        if fresh or not os.path.exists(ready):
            _sysctl(namespace, SYSCTLS)
            with open(ready, "w", encoding="ascii"):
                pass
        if router.ha is None and os.path.exists(os.path.join(directory, keepalived.CONF)):
            # made legacy: keepalived first (it takes its addresses away as it
            # goes), then IPv6 again on the devices
            keepalived.stop(directory)
            conntrackd.stop(directory)
            with ip.IpNetns(namespace) as inside:
                for device in inside.names():
                    if device.startswith((INTERNAL, EXTERNAL)):
                        ip.set_ipv6_conf(namespace, device, disable_ipv6=0)
        nat = self._nat.get(router.id)
        if nat is None or fresh:
            nat = self._nat[router.id] = NatTable(namespace, fresh=fresh)
        announce: list[str] = []
        with ExitStack() as stack:
            inside = stack.enter_context(ip.IpNetns(namespace))
            host: ip.IpNetns | None = None  # opened only to plug: it may be a namespace
            if fresh:
                inside.set("lo", up=True)
            links = inside.links()
            addresses = inside.all_addresses(links)
            ports = [(port, INTERNAL) for port in router.interfaces]
            if router.gateway is not None:
                ports.append((router.gateway, EXTERNAL))
            if router.ha is not None:
                ports.append((router.ha.port, HA))
            wanted = set()
            for port, prefix in ports:
                device = device_name(port.id, prefix)
                link = links.get(device)
                if link is None or (link.mac, link.mtu, link.up) != (port.mac, port.mtu, True):
                    if host is None:
                        host = stack.enter_context(ip.IpNetns(self.driver.agent_namespace))
                    self.driver.plug_with(host, inside, port.id, port.mac, port.mtu, prefix)
                    have = None  # read again: a device made anew has none
                    if router.ha is not None and prefix != HA:
                        # a standby must not speak with the port's MAC, which the
                        # master's is (IPv6 would: its link-local address, the
                        # all-routers group's reports): HA routers are IPv4 only
                        ip.set_ipv6_conf(namespace, device, disable_ipv6=1)
                else:
                    have = addresses.get(device, [])
                wanted.add(device)
                if router.ha is not None and prefix != HA:
                    continue  # keepalived adds and removes them on this host
                if prefix == EXTERNAL:
                    had = set(have if have is not None else inside.addresses(device))
                    announce = [cidr.split("/")[0] for cidr in port.cidrs if cidr not in had
                                and ipaddress.ip_interface(cidr).version == 4]
                inside.set_addresses(device, list(port.cidrs), have)
            for device in links:
                if device.startswith((INTERNAL, EXTERNAL, HA)) and device not in wanted:
                    LOG.info("router %s: %s is not its port any more", router.id, device)
                    self.driver.unplug_with(inside, device)
            if router.ha is None:
                _routes(inside, router)
        gateway = device_name(router.gateway.id, EXTERNAL) if router.gateway else None
        if router.ha is not None:
            sync = conntrackd_sync(router)
            if sync is not None:  # first: keepalived's first role is told to it
                conntrackd.converge(namespace, directory, sync)
            else:
                conntrackd.stop(directory)
            instance = vrrp_instance(
                router, conntrackd.script_path(directory) if sync is not None else None)
            if keepalived.keepalived_pid(directory) is None:
                _give_up(namespace, instance)
            keepalived.converge(namespace, directory, instance)
        self._metadata(router, directory)
        radvd.converge(namespace, directory, router.advertise, *self.ra_intervals)
        nat.apply(router.nat)
        limits = os.path.join(directory, LIMITS)
        if gateway:
            qos_tc.Tc(namespace).shape_addresses(gateway, router.limits, limits)
        elif os.path.exists(limits):  # the gateway went, and its limits with its device
            os.unlink(limits)
        if gateway:
            for address in announce:
                arping.announce(namespace, gateway, address, self.arp_count)
        return announce

    def ha_state(self, router: Router) -> str:
        """active or standby on this host (unknown: not an HA router here)."""
        if router.ha is None:
            return keepalived.UNKNOWN
        try:
            with ip.IpNetns(namespace_name(router.id)) as inside:
                addresses = inside.addresses(device_name(router.ha.port.id, HA))
        except (OSError, NetlinkError, ip.NoSuchDevice):  # gone meanwhile
            return keepalived.UNKNOWN
        return keepalived.state(addresses, vrrp_instance(router))

    def _metadata(self, router: Router, directory: str) -> None:
        """The router's metadata proxy running (started again if it died; left
        alone if it runs as wanted) or not."""
        if router.metadata and self.metadata_socket is None:
            raise ValueError(f"router {router.id}: metadata wanted, but no metadata socket")
        if not router.metadata:
            if metadata_proxy.proxy_pid(directory) is not None:
                LOG.info("router %s: stopping its metadata proxy", router.id)
            metadata_proxy.stop_proxy(directory)
            return
        assert self.metadata_socket is not None
        metadata_proxy.start_proxy(namespace_name(router.id), metadata_proxy.ROUTER_PROXY_PORT,
                                   metadata_proxy.ROUTER_HEADER, router.id,
                                   self.metadata_socket, directory)

    def daemons(self, router_id: str) -> dict[str, int | None]:
        """The router's daemons that were started (and not stopped since), by
        name: their pid, or None for one that died."""
        directory = self.router_dir(router_id)
        found: dict[str, int | None] = {}
        for name, pid_file, pid_of in (
                ("keepalived", keepalived.PID, keepalived.keepalived_pid),
                ("conntrackd", conntrackd.PID, conntrackd.conntrackd_pid),
                ("radvd", radvd.PID, radvd.radvd_pid),
                ("metadata proxy", metadata_proxy.PID, metadata_proxy.proxy_pid)):
            if os.path.exists(os.path.join(directory, pid_file)):
                found[name] = pid_of(directory)
        return found

    def dead(self, router_ids: list[str]) -> list[str]:
        """Those of ``router_ids`` with a daemon (radvd, the metadata proxy) that
        was started and died."""
        return [router_id for router_id in router_ids
                if None in self.daemons(router_id).values()]

    def retire(self, router_id: str) -> None:
        """Take everything of the router away, whatever is left of it."""
        namespace = namespace_name(router_id)
        self._nat.pop(router_id, None)
        keepalived.stop(self.router_dir(router_id))  # first: it gives the addresses up
        conntrackd.stop(self.router_dir(router_id))
        metadata_proxy.stop_proxy(self.router_dir(router_id))
        radvd.stop(self.router_dir(router_id))
        if namespace in ip.namespaces():
            with ip.IpNetns(namespace) as inside:
                for device in inside.links():
                    if device.startswith((INTERNAL, EXTERNAL, HA)):
                        self.driver.unplug_with(inside, device)  # and its tap
            _terminate(ip.namespace_pids(namespace))  # what else ran there (arping, ...)
            ip.delete_namespace(namespace)
        shutil.rmtree(self.router_dir(router_id), ignore_errors=True)
        LOG.info("router %s taken down", router_id)


def _give_up(namespace: str, instance: keepalived.Instance) -> None:
    """Before keepalived starts: the addresses it manages taken away, as a
    backup has none (a keepalived killed leaves them; kept, a host coming back
    would answer for the master's addresses)."""
    managed: dict[str, list[str]] = {instance.interface: [instance.vip]}
    for cidr, device in instance.addresses:
        managed.setdefault(device, []).append(cidr)
    with ip.IpNetns(namespace) as inside:
        present = inside.names()
        for device, cidrs in managed.items():
            if device in present:
                inside.remove_addresses(device, cidrs)


def conntrackd_sync(router: Router) -> conntrackd.Sync | None:
    """The conntrackd of an HA router, over its HA port's IPv4 address (None:
    none wanted, or the port has no such address)."""
    assert router.ha is not None
    ha = router.ha
    address = next((cidr.split("/")[0] for cidr in ha.port.cidrs
                    if ipaddress.ip_interface(cidr).version == 4), None)
    if ha.conntrackd is None or address is None:
        return None
    return conntrackd.Sync(interface=device_name(ha.port.id, HA), address=address,
                           vr_id=ha.vr_id, settings=ha.conntrackd)


def vrrp_instance(router: Router, notify: str | None = None) -> keepalived.Instance:
    """The VRRP instance of an HA router: the addresses of its interfaces and
    gateway (floating IPs included) and its routes, each by the device whose
    subnet holds its nexthop; ``notify``: the script told of its changes of
    role."""
    assert router.ha is not None
    ports = [(port, INTERNAL) for port in router.interfaces]
    if router.gateway is not None:
        ports.append((router.gateway, EXTERNAL))
    addresses = tuple((cidr, device_name(port.id, prefix)) for port, prefix in ports
                      for cidr in port.cidrs if ipaddress.ip_interface(cidr).version == 4)
    routes = []
    for destination, nexthop in router.routes:
        device = next((name for cidr, name in addresses if ipaddress.ip_address(nexthop)
                       in ipaddress.ip_interface(cidr).network), None)
        if device is not None:
            routes.append((destination, nexthop, device))
    ha = router.ha
    return keepalived.Instance(
        router_id=router.id, interface=device_name(ha.port.id, HA), vr_id=ha.vr_id,
        priority=ha.priority, advert_int=ha.advert_int, auth=ha.auth,
        addresses=addresses, routes=tuple(routes), notify=notify)


def _routes(inside: ip.IpNetns, router: Router) -> None:
    """The routes through a gateway made exactly ``router.routes``. One that
    cannot be made (its nexthop on none of the router's subnets) is skipped,
    as Neutron does, and not the router's other work."""
    wanted = dict(router.routes)
    have = inside.gateway_routes()
    for destination in sorted(set(have) - set(wanted)):
        inside.delete_route(destination)
    for destination, nexthop in sorted(wanted.items()):
        if have.get(destination) == nexthop:
            continue
        try:
            inside.replace_route(destination, nexthop)
        except NetlinkError as error:
            LOG.warning("router %s: no route to %s via %s: %s", router.id, destination,
                        nexthop, error)


def _sysctl(namespace: str, settings: tuple[str, ...]) -> None:
    """/proc/sys/net shows the namespace of the process reading it: run inside."""
    done = subprocess.run(["ip", "netns", "exec", namespace, "sysctl", "-q", "-w",
                           *settings], capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise OSError(f"sysctl in {namespace}: {done.stderr.strip() or done.returncode}")


def _terminate(pids: list[int], grace: float = 2.0) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        pids = [pid for pid in pids if os.path.exists(f"/proc/{pid}")]
        time.sleep(0.05)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
