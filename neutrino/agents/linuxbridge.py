"""The Linux bridge L2 agent: instance taps into one bridge per network.

A network is a bridge ``brq<network id[:11]>`` holding its segment's device
(a VXLAN device ``vxlan-<vni>``, the physical interface of a flat network, a
VLAN sub-interface ``<interface>.<vlan>``; nothing for a local network) and
the taps of its ports on this host (``tap<port id[:11]>``, made by the
hypervisor or ``neutrino-instance``). The agent finds taps as they come and go
(a scan every ``polling_interval``), asks the server what they are, wires them,
and reports them up or down; it filters them by their security groups, and
with l2population it learns where the other hosts' ports are.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from operator import methodcaller
from typing import TYPE_CHECKING, Any, TypeVar

from neutrino.agents.base import Agent, named
from neutrino.agents.cmd import main
from neutrino.agents.extensions import log as log_extension
from neutrino.agents.extensions.api import AgentHandles, L2AgentExtension
from neutrino.agents.extensions.manager import EXTENSION_OPTIONS, Extensions
from neutrino.agents.l2 import NOOP_FIREWALL_ALIASES, parse_mappings
from neutrino.agents.lb_trunk import TrunkNotifications, TrunksRefused
from neutrino.agents.notifications import (
    Fdb,
    L2Notifications,
    L2PopulationNotifications,
    fetch_fdb,
    merge_fdb,
)
from neutrino.agents.sg_info import SecurityGroupInfo
from neutrino.config import Config, Opt, OptGroup, choice, int_range, parse_bool
from neutrino.linux import host_check
from neutrino.linux.ip import FLOOD_MAC, IpNetns, NoSuchDevice, watch_links
from neutrino.linux.names import BRIDGE, TAP, bridge_name, tap_name
from neutrino.rpc import topics
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts.l2 import L2PluginApi, MissingDevice, PortDetails
from neutrino.rpc.contracts.trunk import TrunkPluginApi

if TYPE_CHECKING:
    from neutrino.linux.iptables_firewall import Runner

LOG = logging.getLogger(__name__)
T = TypeVar("T")

VXLAN = "vxlan-"


#: Neutron's class paths for the firewall drivers, as its configuration files give them
FIREWALL_ALIASES = {"neutron.agent.linux.iptables_firewall.IptablesFirewallDriver": "iptables",
                    "neutron.agent.linux.iptables_firewall:IptablesFirewallDriver": "iptables",
                    **NOOP_FIREWALL_ALIASES}


class LinuxBridgeAgent(Agent):
    agent_type = "Linux bridge agent"
    binary = "neutrino-linuxbridge-agent"
    notification_topics = (*topics.L2_NOTIFICATIONS, topics.L2POPULATION, topics.TRUNK_UPDATE)
    option_groups = (
        OptGroup("linux_bridge", [
            Opt("physical_interface_mappings", parse_mappings, {},
                "Physical networks and the host interfaces that carry them."),
            Opt("bridge_mappings", parse_mappings, {},
                "Physical networks and existing bridges that carry them."),
        ]),
        OptGroup("vxlan", [
            Opt("enable_vxlan", parse_bool, True, "Carry VXLAN networks."),
            Opt("local_ip", str, "", "This host's address for VXLAN."),
            Opt("l2_population", parse_bool, False,
                "Learn where other hosts' ports are from the server (no multicast)."),
            Opt("vxlan_group", str, "224.0.0.1",
                "Multicast group of VXLAN devices without l2_population."),
            Opt("ttl", int_range(1, 255), None, "TTL of VXLAN packets."),
            Opt("tos", int_range(0, 255), None, "TOS of VXLAN packets."),
        ]),
        OptGroup("securitygroup", [
            Opt("enable_security_group", parse_bool, True,
                "Filter ports by their security groups."),
            Opt("firewall_driver", choice("iptables", "noop", aliases=FIREWALL_ALIASES),
                "iptables", "iptables, or noop for none."),
        ]),
        EXTENSION_OPTIONS,
        log_extension.OPTIONS,
    )
    extension_kind = "l2"
    extensions: Extensions[L2AgentExtension]

    def __init__(self, conf: Config, bus: Bus, ip: IpNetns | None = None,
                 firewall_runner: Runner | None = None):
        """``ip``, ``firewall_runner``: the host's links and how its firewall
        tools run (None: this host's; the agent unit tests give fakes)."""
        super().__init__(conf, bus)
        self._plugin = L2PluginApi.on(bus)
        self._agent_id = f"lb-{self.host}"
        #: tap -> the details the server gave for it, as wired
        self.ports: dict[str, PortDetails] = {}
        #: network id -> {remote IP: {(mac, ip), ...}} from l2population
        self.fdb: Fdb = {}
        self._fdb_changes = 0  # l2population messages heard (see fetch_fdb)
        self._ip: IpNetns | None = ip
        self._firewall_runner = firewall_runner
        # netlink calls block, and pyroute2's must not run on a running event
        # loop: all host work runs in this one thread, one step at a time
        self._host = ThreadPoolExecutor(max_workers=1, thread_name_prefix="host")
        self._taps_seen: set[str] = set()
        self._fresh: set[str] = set()  # networks whose VXLAN device was just made
        self._bridges: dict[str, str] = {}  # network id -> its bridge, once set up
        self._underlay: str | None = None  # the device that holds local_ip
        self._firewall: Any = None
        self._sg = SecurityGroupInfo()
        # trunks cannot be wired here: their parents' trunks go to ERROR (lb_trunk)
        self.trunks = TrunksRefused(TrunkPluginApi.on(bus), self.context,
                                    lambda: [port["port_id"] for port in self.ports.values()])

    # --- what it says and serves ------------------------------------------------------

    def configurations(self) -> dict[str, Any]:
        vxlan = self.conf.vxlan
        return {"interface_mappings": self.conf.linux_bridge.physical_interface_mappings,
                "bridge_mappings": self.conf.linux_bridge.bridge_mappings,
                "tunnel_types": ["vxlan"] if vxlan.enable_vxlan else [],
                "tunneling_ip": vxlan.local_ip or None,
                "l2_population": vxlan.l2_population, "devices": len(self.ports)}

    def endpoints(self) -> list[Any]:
        return [L2Notifications(self), L2PopulationNotifications(self),
                TrunkNotifications(self.trunks)]

    def extension_handles(self) -> AgentHandles:
        return dataclasses.replace(super().extension_handles(), state=self.ports,
                                   run=self.on_host)

    def host_needs(self) -> host_check.Needs:
        conf, needs = self.conf, host_check.Needs()
        sg = conf.securitygroup
        if sg.enable_security_group and sg.firewall_driver == "iptables":
            why = conf.setting("securitygroup", "firewall_driver")
            needs.tool(why, *host_check.IPTABLES, *host_check.IP6TABLES, host_check.IPSET,
                       host_check.CONNTRACK)
            # without it bridged packets never meet the rules: ports go unfiltered
            needs.sysctls += [(f"net.bridge.bridge-nf-call-{tool}", "1", "br_netfilter", why)
                              for tool in ("iptables", "ip6tables")]
        for option in ("physical_interface_mappings", "bridge_mappings"):
            where = conf.source("linux_bridge", option)
            needs.devices += [(device, f"{where} for {physnet}") for physnet, device
                              in getattr(conf.linux_bridge, option).items()]
        if conf.vxlan.enable_vxlan and conf.vxlan.local_ip:
            needs.addresses.append((conf.vxlan.local_ip, conf.source("vxlan", "local_ip")))
        return needs

    def background(self) -> list[Callable[[], Coroutine[Any, Any, None]]]:
        return [self._scan, self._watch]

    async def on_host(self, work: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._host, work, *args)

    @property
    def ip(self) -> IpNetns:
        if self._ip is None:
            self._ip = IpNetns()
        return self._ip

    # --- finding taps ------------------------------------------------------------------------

    def _taps(self) -> set[str]:
        return {name for name in self.ip.names() if name.startswith(TAP)}

    async def _watch(self) -> None:
        """Taps that come or go, as the kernel tells them (at once)."""
        loop = asyncio.get_running_loop()
        watch_links(TAP, lambda tap: loop.call_soon_threadsafe(
            self.mark_dirty, ("device", tap)))

    async def _scan(self) -> None:
        """Mark the taps that came or went since the last scan (the watch's
        safety net: a missed event costs one polling_interval)."""
        while True:
            try:
                taps = await self.on_host(self._taps)
            except Exception:
                LOG.exception("scanning for taps failed")
            else:
                changed = taps ^ self._taps_seen
                self._taps_seen = taps
                if changed:
                    self.mark_dirty(*(("device", tap) for tap in changed))
            await asyncio.sleep(self.conf.agent.polling_interval)

    # --- the reconciling ---------------------------------------------------------------------

    def _wanted(self, full: bool, dirty: set[Any], taps: set[str]) -> set[str]:
        if full:
            return taps | set(self.ports)
        networks = named(dirty, "network")
        return (named(dirty, "device") | {tap_name(port) for port in named(dirty, "port")}
                | {tap for tap, port in self.ports.items() if port["network_id"] in networks})

    async def sync(self, full: bool, dirty: set[Any]) -> None:
        if full:
            self._bridges.clear()  # look at every network's bridge again
            self._firewall = None  # and read the host's tables again, not our memory
        taps = await self.on_host(self._taps)
        if full:
            self._taps_seen = taps  # what the scan would report next is done here
        wanted = self._wanted(full, dirty, taps)
        present = sorted(wanted & taps)
        details = await self._plugin.get_devices_details_list(
            self.context, devices=present,
            agent_id=self._agent_id, host=self.host) if present else []
        gone = wanted - taps
        groups = named(dirty, "security_group")
        if full or details or gone or groups:
            # filters first: a port is not wired before its filters are in place
            ours = {port["device"] for port in details if "port_id" in port}
            await self._filter((set(self.ports) - wanted) | ours,
                               ours if not full else None, groups)
        before = {tap: self.ports[tap] for tap in wanted if tap in self.ports}
        up, down = await self.on_host(self._apply, details, gone)
        await self._tell_extensions(details, before)
        if up or down:
            await self._plugin.update_device_list(self.context, devices_up=up,
                                    devices_down=down, agent_id=self._agent_id,
                                    host=self.host)
        self.trunks.check(self.ports[tap]["port_id"] for tap in up if tap in self.ports)
        await self.on_host(self._remove_unused_bridges)
        fresh, self._fresh = self._fresh, set()
        if self.conf.vxlan.l2_population and (full or fresh):
            await self._fetch_fdb(None if full else fresh)

    async def _tell_extensions(self, details: list[PortDetails | MissingDevice],
                               before: dict[str, PortDetails]) -> None:
        """``handle_port`` for the ports wired now, ``delete_port`` for those
        that left (with the details they had)."""
        for port in details:
            if "port_id" in port and self.ports.get(port["device"]) is port:
                await self.extensions.each("handle_port", methodcaller("handle_port", port))
        for tap, port in before.items():
            if tap not in self.ports:
                await self.extensions.each("delete_port", methodcaller("delete_port", port))

    def _apply(self, details: list[PortDetails | MissingDevice], gone: set[str]
               ) -> tuple[list[str], list[str]]:
        """Wire the ports of ``details``; forget the taps ``gone``. The taps now
        up and down."""
        up: list[str] = []
        down: list[str] = []
        gone = set(gone)
        for port in details:
            tap = port["device"]
            if "port_id" not in port:  # no port (any more): not ours to connect
                self.ports.pop(tap, None)
                self._unplug(tap)
                continue
            try:
                self._wire(port)
            except Exception as error:
                if isinstance(error, NoSuchDevice) and not self.ip.exists(tap):
                    # unplugged meanwhile (the watch tells): as good as forgotten
                    LOG.info("%s went while it was being wired", tap)
                    gone.add(tap)
                    continue
                LOG.exception("wiring %s for port %s failed", tap, port["port_id"])
                continue
            self.ports[tap] = port
            (up if port["admin_state_up"] else down).append(tap)
        for tap in gone:
            if self.ports.pop(tap, None) is not None:
                down.append(tap)
        return up, down

    # --- wiring -----------------------------------------------------------------------------

    def _wire(self, port: PortDetails) -> None:
        """The network's bridge and segment device, the tap in it, MTU, state."""
        network_id = port["network_id"]
        bridge = self._bridges.get(network_id)
        if bridge is None or not self.ip.exists(bridge):
            bridge = self._bridges[network_id] = self._network_bridge(port)
        self.ip.set(port["device"], mtu=port.get("mtu") or None, master=bridge,
                    up=bool(port["admin_state_up"]))

    def _network_bridge(self, port: PortDetails) -> str:
        network_type = port["network_type"]
        physnet = port.get("physical_network")
        mapped = self.conf.linux_bridge.bridge_mappings.get(physnet) if physnet else None
        if network_type == "flat" and mapped:
            return mapped  # an existing bridge carries the flat network
        bridge = bridge_name(port["network_id"])
        self.ip.add_bridge(bridge)
        segment_device = self._segment_device(port)
        mtu = port.get("mtu") or None
        if segment_device:
            self.ip.set(segment_device, mtu=mtu, master=bridge, up=True)
        self.ip.set(bridge, mtu=mtu, up=True)
        return bridge

    def _segment_device(self, port: PortDetails) -> str | None:
        network_type, segmentation_id = port["network_type"], port.get("segmentation_id")
        if network_type == "vxlan":
            vxlan = self.conf.vxlan
            if not vxlan.enable_vxlan or not vxlan.local_ip:
                raise RuntimeError("VXLAN networks need [vxlan] enable_vxlan and local_ip")
            if segmentation_id is None:
                raise RuntimeError(f"VXLAN network {port['network_id']} has no VNI")
            name = f"{VXLAN}{segmentation_id}"
            if not self.ip.exists(name):
                self.ip.add_vxlan(
                    name, segmentation_id, vxlan.local_ip,
                    group=None if vxlan.l2_population else vxlan.vxlan_group,
                    device=self._underlay_device(), ttl=vxlan.ttl, tos=vxlan.tos)
                self._fresh.add(port["network_id"])
            return name
        interface = self.conf.linux_bridge.physical_interface_mappings.get(
            port.get("physical_network") or "")
        if network_type == "flat":
            if not interface:
                raise RuntimeError(f"no interface for physical network "
                                   f"{port.get('physical_network')}")
            return interface
        if network_type == "vlan":
            if not interface:
                raise RuntimeError(f"no interface for physical network "
                                   f"{port.get('physical_network')}")
            if segmentation_id is None:
                raise RuntimeError(f"VLAN network {port['network_id']} has no VLAN id")
            name = f"{interface[:10]}.{segmentation_id}"
            self.ip.add_vlan(name, interface, segmentation_id)
            return name
        return None  # local: the bridge alone

    def _underlay_device(self) -> str | None:
        """The device with ``local_ip``, which VXLAN devices send through."""
        if self._underlay is None:
            local_ip = self.conf.vxlan.local_ip
            self._underlay = next((name for name in self.ip.names() if any(
                cidr.split("/")[0] == local_ip for cidr in self.ip.addresses(name))), None)
        return self._underlay

    def _unplug(self, tap: str) -> None:
        """Out of the network's bridge (whether this run or an earlier one put it
        there); left alone in any bridge not ours."""
        master = self.ip.master_of(tap)
        if master is not None and master.startswith(BRIDGE):
            self.ip.unplug(tap)
            LOG.info("unplugged %s: no port of the server's", tap)

    def _remove_unused_bridges(self) -> None:
        """Bridges (and their VXLAN devices) of networks without taps here."""
        for name in self.ip.names():
            if not name.startswith(BRIDGE):
                continue
            members = self.ip.bridge_ports(name)
            if any(member.startswith(TAP) for member in members):
                continue
            for member in members:
                if member.startswith(VXLAN):
                    self.ip.delete(member)
                else:
                    self.ip.unplug(member)
            self.ip.delete(name)
            LOG.info("removed bridge %s: no port of its network here", name)

    # --- security groups ------------------------------------------------------------------------

    async def _filter(self, devices: set[str], changed: set[str] | None,
                      groups: set[str]) -> None:
        """Filter exactly ``devices`` (every port wired here), as their groups say,
        asking the server about the ``changed`` ones and those that the ``groups``
        changing concern (about all when ``changed`` is None)."""
        sg = self.conf.securitygroup
        if not sg.enable_security_group or sg.firewall_driver == "noop":
            return
        if self._firewall is None:
            if not devices:
                return  # nothing to filter: leave the host's tables alone
            from neutrino.linux.iptables_firewall import IptablesFirewall
            self._firewall = IptablesFirewall(runner=self._firewall_runner)
        ask = devices if changed is None else (
            changed | self._sg.concerned(groups, changed)) & devices
        answer = await self._plugin.security_group_info_for_devices(
            self.context, devices=sorted(ask)) if ask else None
        self._sg.update(answer, devices)
        logging = next((found for found in self.extensions.gather(
            "firewall_logging", methodcaller("firewall_logging")) if found), None)
        if logging is None:
            await self.on_host(self._firewall.apply, self._sg.info())
        else:
            await self.on_host(self._firewall.apply, self._sg.info(), logging.ports,
                               logging.limits)

    # --- l2population ---------------------------------------------------------------------------

    def _networks_here(self) -> dict[str, str]:
        """network id -> its VXLAN device, for the VXLAN networks with taps here."""
        return {port["network_id"]: f"{VXLAN}{port['segmentation_id']}"
                for port in self.ports.values() if port["network_type"] == "vxlan"}

    async def _fetch_fdb(self, only: set[str] | None) -> None:
        """All the entries of the VXLAN networks here (of ``only``)."""
        networks = self._networks_here()
        wanted = sorted(set(networks) & only if only is not None else set(networks))
        if not wanted:
            return
        self.fdb.update(await fetch_fdb(self._plugin, self.context, self.host, wanted,
                                        lambda: self._fdb_changes))
        for network_id in wanted:
            await self.on_host(self._program_fdb, network_id, networks[network_id])

    def _program_fdb(self, network_id: str, device: str) -> None:
        """Make the device's forwarding entries what l2population says."""
        if not self.conf.vxlan.l2_population or not self.ip.exists(device):
            return
        wanted = {(mac, remote) for remote, entries in self.fdb.get(network_id, {}).items()
                  if remote != self.conf.vxlan.local_ip
                  for mac, _ in entries | {(FLOOD_MAC, "")}}
        try:
            have = self.ip.fdb(device)
            for mac, remote in have - wanted:
                self.ip.fdb_delete(device, mac, remote)
            for mac, remote in wanted - have:
                self.ip.fdb_add(device, mac, remote)
        except NoSuchDevice:
            # its network's last tap went: nothing to program; a network wired
            # here again gets a new device, programmed then
            LOG.info("%s went while its forwarding entries were written", device)

    async def fdb_changed(self, entries: dict[str, Any], add: bool) -> None:
        """add_fdb_entries / remove_fdb_entries from the server."""
        self._fdb_changes += 1
        networks = self._networks_here()
        for network_id in merge_fdb(self.fdb, entries, add, FLOOD_MAC):
            if network_id in networks:
                await self.on_host(self._program_fdb, network_id, networks[network_id])


def linuxbridge() -> None:
    main(LinuxBridgeAgent)
