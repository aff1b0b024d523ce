"""The L3 agent: Neutron's legacy routers, one namespace ``qrouter-<id>`` each.

It fetches the routers scheduled to it (``get_router_ids``, then
``sync_routers`` in chunks) and converges each one on the host
(``neutrino.linux.router``): its interfaces, its gateway with the floating
IPs, its routes, SNAT and DNAT. Notifications mark routers dirty; a sync
fetches them again. A router that is not to be here any more (deleted,
disabled, moved to another agent, while the agent ran or not) is taken down:
the routers set up here are known by their directories under
``$state_path/l3``. It then tells the server what became of the routers'
floating IPs (``update_floatingip_statuses``).

Metadata (``enable_metadata_proxy``, Neutron's option): each router with at
least one interface runs a metadata proxy in its namespace (port 9697,
``X-Neutron-Router-ID``, towards the host's metadata agent at
``metadata_proxy_socket``) and its NAT chains redirect the instances'
169.254.169.254:80 there; the proxy goes with the router or its last
interface.

A router's daemons (its metadata proxy, radvd) that die are started again at
once: ``neutrino.agents.process_monitor`` hears of their end and marks the
router dirty. Every ``[agent] check_child_processes_interval`` seconds the
agent also looks for daemons that died, as a safety net.

``router_spec`` is the pure part: Neutron's sync data to a ``Router``.

IPv6: a router interface on subnets with an ``ipv6_ra_mode`` sends router
advertisements (radvd in the router's namespace, ``neutrino.linux.radvd``),
every ``min_rtr_adv_interval`` to ``max_rtr_adv_interval`` seconds.

Address scopes: the devices of a router with one in an address scope carry
marks that keep each scope's traffic in it, for IPv4 (iptables) and IPv6
(ip6tables) alike; IPv4 subnets in the external network's scope are routed,
not NATed, the others translated out; IPv6, which is not translated, leaves
by the gateway only from the external network's IPv6 scope
(``neutrino.linux.nat``).

HA routers (``ha`` in the sync data, with this host's ``_ha_interface`` and
the ``ha_vr_id``): keepalived in the router's namespace carries the
addresses and routes where VRRP elects (``neutrino.linux.router``); every
second the agent reads its role in each and tells the server the changes
(``update_ha_routers_states``). ``ha_vrrp_advert_int``, ``ha_vrrp_auth_type``
and ``ha_vrrp_auth_password`` are Neutron's. With ``ha_conntrackd_enabled``
(and Neutron's ``ha_conntrackd_hashsize``, ``_hashlimit``,
``_ipv4_mcast_addr``, ``_group``) conntrackd copies the master's connection
tracking to the other hosts (``neutrino.linux.conntrackd``); Neutron's buffer
and backlog options are not read (their defaults are used).

Not done yet: IPv6 on a gateway whose subnet has no gateway IP (accepting the
upstream's router advertisements), DVR routers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import os
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

from neutrino.agents.base import Agent, converge_each, named
from neutrino.agents.cmd import main as run_agent
from neutrino.agents.extensions.api import AgentHandles, L3AgentExtension
from neutrino.agents.extensions.log import OPTIONS as NETWORK_LOG_OPTIONS
from neutrino.agents.extensions.manager import EXTENSION_OPTIONS, Extensions
from neutrino.agents.extensions.metering import OPTIONS as METERING_OPTIONS
from neutrino.agents.extensions.vpn import OPTIONS as VPN_OPTIONS
from neutrino.agents.process_monitor import ProcessMonitor
from neutrino.config import Config, Opt, OptGroup, int_range, parse_bool
from neutrino.linux import conntrackd, host_check, interface, metadata_proxy, nat, radvd, router
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts import l3 as contract
from neutrino.rpc.contracts.l3 import FloatingIpStatus, L3PluginApi, RouterSyncData

LOG = logging.getLogger(__name__)

#: routers asked for per sync_routers call: thousands must not make one huge answer
ROUTERS_PER_CALL = 64
#: routers set up at the same time
ROUTERS_AT_ONCE = 4
DEFAULT_ROUTES = {4: "0.0.0.0/0", 6: "::/0"}


def parse_agent_mode(text: str) -> str:
    value = text.strip()
    if value in ("dvr", "dvr_snat", "dvr_no_external"):
        raise ValueError(f"{value}: distributed routers are not supported; use legacy")
    if value != "legacy":
        raise ValueError("must be legacy")
    return value


def parse_auth_type(text: str) -> str:
    value = text.strip().upper()
    if value not in ("PASS", "AH"):
        raise ValueError("must be PASS or AH")
    return value


def parse_external_network_bridge(text: str) -> str:
    if text.strip():
        raise ValueError("gateway ports are plugged by the L2 agent, as any port: "
                         "leave it empty")
    return ""


def parse_multicast(text: str) -> str:
    address = ipaddress.IPv4Address(text.strip())
    if not address.is_multicast:
        raise ValueError("must be an IPv4 multicast address")
    return str(address)


OPTIONS = (OptGroup("DEFAULT", [
    Opt("interface_driver", interface.parse_driver, "",
        "How the routers' devices are made: linuxbridge or openvswitch. Unset, the "
        "agent registers but sets up no router."),
    Opt("agent_mode", parse_agent_mode, "legacy", "legacy (the only mode)."),
    Opt("handle_internal_only_routers", parse_bool, True,
        "Also serve routers without an external gateway."),
    Opt("external_network_bridge", parse_external_network_bridge, "",
        "Deprecated in Neutron; must be empty."),
    Opt("gateway_external_network_id", str, "",
        "Serve only routers whose gateway is on this network (empty: any)."),
    Opt("send_arp_for_ha", int_range(0), 3,
        "Gratuitous ARPs sent for a new gateway address or floating IP (0: none)."),
    Opt("enable_metadata_proxy", parse_bool, True,
        "Serve metadata to the routers' instances: a metadata proxy in each router "
        "with an interface."),
    metadata_proxy.SOCKET_OPTION,
    Opt("min_rtr_adv_interval", int_range(3, 1350), radvd.MIN_INTERVAL,
        "MinRtrAdvInterval of the routers' radvd (seconds)."),
    Opt("max_rtr_adv_interval", int_range(4, 1800), radvd.MAX_INTERVAL,
        "MaxRtrAdvInterval of the routers' radvd (seconds; at least "
        "min_rtr_adv_interval / 0.75)."),
    Opt("ha_vrrp_auth_type", parse_auth_type, "PASS",
        "How HA routers' VRRP adverts are authenticated: PASS or AH."),
    Opt("ha_vrrp_auth_password", str, "",
        "The password of HA routers' VRRP adverts (empty: not authenticated)."),
    Opt("ha_vrrp_advert_int", int_range(1, 255), 1,
        "Seconds between the VRRP adverts of HA routers' masters: a failover takes "
        "about three of them (Neutron's default is 2)."),
    Opt("ha_conntrackd_enabled", parse_bool, False,
        "Run conntrackd in HA routers, which copies the master's connection tracking "
        "(NAT included) to the other hosts: a connection survives a failover."),
    Opt("ha_conntrackd_hashsize", int_range(1), conntrackd.Settings.hash_size,
        "Buckets of conntrackd's cache hash table."),
    Opt("ha_conntrackd_hashlimit", int_range(1), conntrackd.Settings.hash_limit,
        "Most connections conntrackd keeps."),
    Opt("ha_conntrackd_ipv4_mcast_addr", parse_multicast, conntrackd.Settings.address,
        "The multicast address conntrackd synchronises to, on the HA network."),
    Opt("ha_conntrackd_group", int_range(0, 65535 - 255), conntrackd.Settings.group,
        "conntrackd's base UDP port: each router synchronises on this plus its "
        "VRRP id."),
]), OptGroup("agent", [
    Opt("check_child_processes_interval", int_range(0), 60,
        "Seconds between checks that each router's daemons (metadata proxy, radvd) "
        "still run, besides watching them die (one that died is started again); "
        "0: no checks."),
]), EXTENSION_OPTIONS, METERING_OPTIONS, NETWORK_LOG_OPTIONS, *VPN_OPTIONS,
    interface.OVS_OPTIONS)


# --- the server's data to a router on the host ----------------------------------------------

def _version(address: str) -> int:
    return ipaddress.ip_address(address).version


def _port(port: Mapping[str, Any], more: Iterable[str] = ()) -> router.Port:
    prefixes = {s["id"]: s["cidr"].split("/")[1] for s in port.get("subnets", ())}
    cidrs = []
    for fixed in port["fixed_ips"]:
        prefix = fixed.get("prefixlen") or prefixes.get(fixed["subnet_id"])
        if prefix is not None:
            cidrs.append(f"{fixed['ip_address']}/{prefix}")
    return router.Port(id=port["id"], mac=port["mac_address"], mtu=port.get("mtu") or 1500,
                       cidrs=tuple(sorted([*cidrs, *more])))


NO_EXTENSIONS: Extensions[L3AgentExtension] = Extensions()


def floating_ips(data: Mapping[str, Any],
                 extensions: Extensions[L3AgentExtension] = NO_EXTENSIONS
                 ) -> list[Mapping[str, Any]]:
    """The router's IPv4 floating IPs that it carries: those associated with a
    port, and those that its extensions have it carry (port forwardings')."""
    carried: dict[str, Mapping[str, Any]] = {
        fip["id"]: fip for fip in data.get("_floatingips", ())
        if _version(fip["floating_ip_address"]) == 4 and fip.get("fixed_ip_address")}
    for more in extensions.gather("floating_ips", lambda e: e.floating_ips(data)):
        carried.update((fip["id"], fip) for fip in more)
    order = {fip["id"]: n for n, fip in enumerate(data.get("_floatingips", ()))}
    return sorted(carried.values(), key=lambda fip: order.get(fip["id"], len(order)))


@dataclasses.dataclass(frozen=True)
class Vrrp:
    """The agent's settings of its HA routers' VRRP instances."""

    advert_int: int = 1
    auth: tuple[str, str] | None = None
    #: conntrackd's settings, when it runs in HA routers
    conntrackd: conntrackd.Settings | None = None


def router_spec(data: Mapping[str, Any], metadata: bool = False,
                extensions: Extensions[L3AgentExtension] = NO_EXTENSIONS,
                carried: Sequence[Mapping[str, Any]] | None = None,
                vrrp: Vrrp = Vrrp()) -> router.Router:
    """What the router of ``sync_routers`` data is to be on the host, with
    what its ``extensions`` add. ``metadata``: routers with an interface serve
    metadata; ``carried``: ``floating_ips(data, extensions)``, if known;
    ``vrrp``: how an HA router speaks VRRP."""
    if carried is None:
        carried = floating_ips(data, extensions)
    spec = _core_spec(data, metadata, carried)
    if data.get("ha") and data.get("_ha_interface"):
        spec = dataclasses.replace(spec, ha=router.HaSettings(
            port=_port(data["_ha_interface"]), vr_id=data["ha_vr_id"],
            advert_int=vrrp.advert_int, auth=vrrp.auth, conntrackd=vrrp.conntrackd))
    return extensions.fold("router_spec", lambda e, s: e.router_spec(data, s), spec)


def _core_spec(data: Mapping[str, Any], metadata: bool,
               fips: Sequence[Mapping[str, Any]]) -> router.Router:
    interfaces = tuple(_port(p) for p in data.get("_interfaces", ()))
    metadata = metadata and bool(interfaces)
    advertise = tuple(ra for ra in (_advertisement(p) for p in data.get("_interfaces", ()))
                      if ra is not None)
    routes = {r["destination"]: r["nexthop"] for r in data.get("routes") or ()}
    scopes, marks = _scope_marks(_device_scopes(data, 4),
                                 (fip.get("fixed_ip_address_scope") for fip in fips))
    scopes6, _ = _scope_marks(_device_scopes(data, 6))
    gw_port = data.get("gw_port")
    if not gw_port:
        return router.Router(id=data["id"], interfaces=interfaces,
                             routes=tuple(sorted(routes.items())),
                             nat=nat.RouterNat(metadata=metadata, scopes=scopes,
                                               scopes6=scopes6),
                             advertise=advertise)
    carried = sorted({fip["floating_ip_address"] for fip in fips})
    gateway = _port(gw_port, (f"{address}/32" for address in carried))
    for subnet in gw_port.get("subnets", ()):
        if subnet.get("gateway_ip"):
            routes.setdefault(DEFAULT_ROUTES[_version(subnet["gateway_ip"])],
                              subnet["gateway_ip"])
    v4 = [f["ip_address"] for f in gw_port["fixed_ips"] if _version(f["ip_address"]) == 4]
    return router.Router(
        id=data["id"], interfaces=interfaces, gateway=gateway,
        routes=tuple(sorted(routes.items())),
        nat=nat.RouterNat(
            gateway=interface.device_name(gw_port["id"], router.EXTERNAL),
            snat_address=v4[0] if v4 and data.get("enable_snat", True) else None,
            floating_ips=tuple(nat.FloatingIp(f["floating_ip_address"], f["fixed_ip_address"],
                                              marks.get(f.get("fixed_ip_address_scope")))
                               for f in fips if f.get("fixed_ip_address")),
            metadata=metadata, scopes=scopes, scopes6=scopes6),
        advertise=advertise)


def _device_scopes(data: Mapping[str, Any], version: int) -> dict[str, str | None]:
    """Each device of the router with an address of IP ``version`` (the
    gateway's too) -> its network's address scope of that version."""
    ports = [(port, router.INTERNAL) for port in data.get("_interfaces", ())]
    if data.get("gw_port"):
        ports.append((data["gw_port"], router.EXTERNAL))
    return {interface.device_name(port["id"], kind):
            (port.get("address_scopes") or {}).get(str(version))
            for port, kind in ports
            if any(_version(fixed["ip_address"]) == version for fixed in port["fixed_ips"])}


def _scope_marks(scope_of: Mapping[str, str | None], more: Iterable[str | None] = ()
                 ) -> tuple[tuple[tuple[str, int], ...], dict[str | None, int]]:
    """The address scope marks of devices (``_device_scopes``; the
    ``nat.RouterNat.scopes`` or ``scopes6``), and of each scope id (``more``'s
    too: the floating IPs' fixed IPs'); none if no device is in a scope. Each
    IP version's marks are its own: its rules are in tables of their own."""
    if not any(scope_of.values()):
        return (), {}
    marks = nat.scope_marks([*scope_of.values(), *more])
    return tuple(sorted((device, marks[scope]) for device, scope in scope_of.items())), marks


def _advertisement(port: Mapping[str, Any]) -> radvd.Interface | None:
    """The router advertisements of an interface port: for its IPv6 subnets
    with an RA mode that it has an address on."""
    on = {fixed["subnet_id"] for fixed in port["fixed_ips"]}
    return radvd.interface(interface.device_name(port["id"], router.INTERNAL),
                           port.get("mtu") or 1500,
                           [s for s in port.get("subnets", ()) if s["id"] in on])


# --- the agent ---------------------------------------------------------------------------------

class L3Notifications:
    """What the server tells L3 agents (on ``l3_agent`` and ``l3_agent.host``)."""

    rpc_version = contract.NOTIFICATION_VERSION

    def __init__(self, agent: Agent):
        self._agent = agent

    async def routers_updated(self, context: dict, routers: list[str]) -> None:
        self._agent.mark_dirty(*(("router", r) for r in routers))

    async def router_deleted(self, context: dict, router_id: str) -> None:
        self._agent.mark_dirty(("router", router_id))

    async def router_added_to_agent(self, context: dict, payload: list[str]) -> None:
        self._agent.mark_dirty(*(("router", r) for r in payload))

    async def router_removed_from_agent(self, context: dict, payload: dict) -> None:
        self._agent.mark_dirty(("router", payload["router_id"]))


class L3Agent(Agent):
    agent_type = "L3 agent"
    binary = "neutrino-l3-agent"
    topic = contract.AGENT_TOPIC
    option_groups = OPTIONS
    extension_kind = "l3"
    #: on before agent extensions existed: a configuration without
    #: ``[agent] extensions`` keeps it
    default_extensions = ("port_forwarding",)
    extensions: Extensions[L3AgentExtension]

    def __init__(self, conf: Config, bus: Bus,
                 dataplane: router.RouterDataplane | None = None):
        """``dataplane``: how routers are set up on the host (None: this host's,
        from ``interface_driver``; the agent unit tests give a fake)."""
        super().__init__(conf, bus)
        self._plugin = L3PluginApi.on(bus)
        #: the routers this agent serves, as sync_routers gave them
        self.routers: dict[str, RouterSyncData] = {}
        #: router id -> the statuses last reported for its floating IPs
        self._reported: dict[str, dict[str, FloatingIpStatus]] = {}
        self._limit = asyncio.Semaphore(ROUTERS_AT_ONCE)
        self._monitor = ProcessMonitor(self._daemon_ended)
        default = conf.DEFAULT
        self.vrrp = Vrrp(default.ha_vrrp_advert_int,
                         (default.ha_vrrp_auth_type, default.ha_vrrp_auth_password)
                         if default.ha_vrrp_auth_password else None,
                         conntrackd.Settings(default.ha_conntrackd_hashsize,
                                             default.ha_conntrackd_hashlimit,
                                             default.ha_conntrackd_ipv4_mcast_addr,
                                             default.ha_conntrackd_group)
                         if default.ha_conntrackd_enabled else None)
        #: HA router id -> its spec as served here, and the role last reported
        self._ha: dict[str, router.Router] = {}
        self._roles: dict[str, str] = {}
        self.dataplane: router.RouterDataplane | None = dataplane
        if dataplane is None and conf.DEFAULT.interface_driver:
            state = os.path.abspath(os.path.join(conf.DEFAULT.state_path, "l3"))
            socket = (metadata_proxy.socket_path(conf) if conf.DEFAULT.enable_metadata_proxy
                      else None)
            self.dataplane = router.RouterDataplane(
                state, interface.make_driver(conf),
                conf.DEFAULT.send_arp_for_ha, socket,
                (conf.DEFAULT.min_rtr_adv_interval, conf.DEFAULT.max_rtr_adv_interval))
        elif dataplane is None:
            LOG.error("no interface_driver configured: this agent sets up no router")

    def configurations(self) -> dict[str, Any]:
        routers = self.routers.values()
        default = self.conf.DEFAULT
        return {"agent_mode": default.agent_mode, "routers": len(routers),
                "ex_gw_ports": sum(1 for r in routers if r.get("gw_port")),
                "interfaces": sum(len(r.get("_interfaces", ())) for r in routers),
                "floating_ips": sum(len(r.get("_floatingips", ())) for r in routers),
                "interface_driver": default.interface_driver,
                "handle_internal_only_routers": default.handle_internal_only_routers,
                "gateway_external_network_id": default.gateway_external_network_id,
                "enable_metadata_proxy": default.enable_metadata_proxy}

    def endpoints(self) -> list[Any]:
        return [L3Notifications(self)]

    def extension_handles(self) -> AgentHandles:
        return dataclasses.replace(super().extension_handles(), dataplane=self.dataplane,
                                   state=self.routers)

    def host_needs(self) -> host_check.Needs:
        needs = host_check.Needs()
        if self.dataplane is None:
            return needs  # sets up no router: runs nothing
        conf = self.conf
        needs.tool(conf.setting("DEFAULT", "interface_driver"), host_check.IP,
                   host_check.SYSCTL, *host_check.IPTABLES, *host_check.IP6TABLES,
                   host_check.CONNTRACK)
        if conf.DEFAULT.send_arp_for_ha:
            needs.tool(conf.setting("DEFAULT", "send_arp_for_ha"), host_check.ARPING)
        if conf.DEFAULT.ha_conntrackd_enabled:
            needs.tool(conf.setting("DEFAULT", "ha_conntrackd_enabled"), host_check.CONNTRACKD)
        needs.directories.append((self.dataplane.state_dir,
                                  conf.source("DEFAULT", "state_path")))
        return needs

    def check_host(self) -> None:
        super().check_host()
        # only routers with IPv6 SLAAC subnets run radvd: a host without it can
        # serve every other router, so it is only told
        if self.dataplane is not None and host_check.missing([host_check.RADVD]):
            LOG.warning("radvd not found on PATH (Debian package radvd): routers will "
                        "send no IPv6 router advertisements")

    def background(self) -> list[Callable[[], Coroutine[Any, Any, None]]]:
        if self.dataplane is None:
            return []
        found: list[Callable[[], Coroutine[Any, Any, None]]] = [self._watch_roles]
        if self.conf.agent.check_child_processes_interval:
            found.append(self._check_daemons)
        return found

    async def _watch_roles(self) -> None:
        """Every second, the role of this host in each HA router here (what
        keepalived made of it); the changes told to the server."""
        while True:
            await asyncio.sleep(1)
            try:
                await self._report_roles()
            except Exception as error:  # the server is away: told at the next try
                LOG.warning("cannot report the HA routers' roles: %s", error)

    async def _report_roles(self) -> None:
        dataplane = self.dataplane
        assert dataplane is not None
        specs = list(self._ha.values())
        roles = await asyncio.to_thread(
            lambda: {spec.id: dataplane.ha_state(spec) for spec in specs})
        changed = {rid: role for rid, role in roles.items() if self._roles.get(rid) != role}
        if changed:
            LOG.info("HA routers' roles here: %s", ", ".join(
                f"{rid} {role}" for rid, role in sorted(changed.items())))
            await self._plugin.update_ha_routers_states(self.context, host=self.host,
                                                        states=changed)
            self._roles.update(changed)

    def _daemon_ended(self, router_id: str, name: str) -> None:
        LOG.warning("router %s: its %s ended; starting it again", router_id, name)
        self.mark_dirty(("router", router_id))

    async def _check_daemons(self) -> None:
        """Mark dirty the routers with a daemon that died unheard of (the
        monitor's safety net): their next sync starts it again."""
        assert self.dataplane is not None
        while True:
            await asyncio.sleep(self.conf.agent.check_child_processes_interval)
            dead = await asyncio.to_thread(self.dataplane.dead, sorted(self.routers))
            if dead:
                LOG.warning("router(s) %s: a daemon died; starting it again",
                            ", ".join(dead))
                self.mark_dirty(*(("router", r) for r in dead))

    def _wanted(self, data: RouterSyncData) -> bool:
        default = self.conf.DEFAULT
        gw_port = data.get("gw_port")
        if gw_port is None:
            return default.handle_internal_only_routers
        wanted_network = default.gateway_external_network_id
        return not wanted_network or gw_port["network_id"] == wanted_network

    async def _sync_routers(self, router_ids: list[str]) -> dict[str, RouterSyncData]:
        found: dict[str, RouterSyncData] = {}
        for start in range(0, len(router_ids), ROUTERS_PER_CALL):
            chunk = router_ids[start:start + ROUTERS_PER_CALL]
            for data in await self._plugin.sync_routers(self.context,
                                                host=self.host, router_ids=chunk):
                if self._wanted(data):
                    found[data["id"]] = data
        return found

    async def sync(self, full: bool, dirty: set[Any]) -> None:
        """All the routers scheduled here, in chunks, or the dirty ones again
        (dropping those that went, or went to another agent); then the host
        made to match them."""
        if full:
            ids = await self._plugin.get_router_ids(self.context, host=self.host)
            found = await self._sync_routers(sorted(ids))
            self.routers.clear()  # in place: the extensions hold it as their state
            self.routers.update(found)
            changed = set(self.routers) | set(self._reported)
            if self.dataplane is not None:
                changed |= await asyncio.to_thread(self.dataplane.present)
        else:
            changed = named(dirty, "router")
            if not changed:
                return
            found = await self._sync_routers(sorted(changed))
            for router_id in changed:
                if router_id in found:
                    self.routers[router_id] = found[router_id]
                else:
                    self.routers.pop(router_id, None)
        if self.dataplane is not None:
            await self._converge(sorted(changed))

    async def _converge(self, router_ids: list[str]) -> None:
        """Each router served or retired, ``ROUTERS_AT_ONCE`` at a time."""
        async def one(router_id: str) -> None:
            data = self.routers.get(router_id)
            if data is not None:
                await self._serve(data)
            else:
                await self._retire(router_id)

        await converge_each(router_ids, self._limit, one, "router")

    async def _serve(self, data: RouterSyncData) -> None:
        assert self.dataplane is not None
        if data.get("ha") and not data.get("_ha_interface"):
            LOG.info("router %s: HA, its port here is not made yet", data["id"])
            asyncio.get_running_loop().call_later(2, self.mark_dirty, ("router", data["id"]))
            return
        fips = floating_ips(data, self.extensions)
        fip_ids = [fip["id"] for fip in fips]
        self._monitor.forget(data["id"])  # what serving stops or restarts is no death
        spec = router_spec(data, self.dataplane.metadata_socket is not None,
                           self.extensions, fips, self.vrrp)
        try:
            await asyncio.to_thread(self.dataplane.serve, spec)
        except Exception:
            await self._report(data["id"], dict.fromkeys(fip_ids, "ERROR"))
            raise  # a full sync follows
        if spec.ha is not None:
            self._ha[spec.id] = spec
        else:
            self._ha.pop(spec.id, None)
            self._roles.pop(spec.id, None)
        self._monitor.watch(data["id"], await asyncio.to_thread(
            self.dataplane.daemons, data["id"]))
        await self._report(data["id"], dict.fromkeys(fip_ids, "ACTIVE"))
        await self.extensions.each("handle_router", lambda e: e.handle_router(data))

    async def _retire(self, router_id: str) -> None:
        assert self.dataplane is not None
        self._monitor.forget(router_id)
        self._ha.pop(router_id, None)
        self._roles.pop(router_id, None)
        if router_id in await asyncio.to_thread(self.dataplane.present):
            await asyncio.to_thread(self.dataplane.retire, router_id)
        await self._report(router_id, {})
        await self.extensions.each("delete_router", lambda e: e.delete_router(router_id))

    async def _report(self, router_id: str, statuses: dict[str, FloatingIpStatus]) -> None:
        """Tell the server the statuses of the router's floating IPs that changed
        since last told; those it no longer carries are DOWN."""
        before = self._reported.get(router_id, {})
        changed: dict[str, FloatingIpStatus] = {
            fip_id: status for fip_id, status in statuses.items() if before.get(fip_id) != status}
        changed.update({fip_id: "DOWN" for fip_id in before if fip_id not in statuses})
        if changed:
            await self._plugin.update_floatingip_statuses(self.context,
                                    router_id=router_id, fip_statuses=changed)
        if statuses:
            self._reported[router_id] = statuses
        else:
            self._reported.pop(router_id, None)


def main() -> None:
    run_agent(L3Agent)
