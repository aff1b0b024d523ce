"""The Open vSwitch L2 agent: instance ports on an integration bridge, one
local VLAN per network, tunnels and physical networks behind patch ports.

The hypervisor (or ``neutrino-instance``) adds an instance's port to the
integration bridge (``br-int``) with ``external_ids:iface-id`` = the port's
id; the agent hears of it from OVSDB at once, asks the server what the port
is, and gives it its network's local VLAN (the Port's ``tag``, remembered
in ``other_config:net_uuid`` so that a restarted agent keeps the same VLANs).
``br-int`` switches with the NORMAL action inside each local VLAN.

- Tunnel networks (VXLAN, Geneve, GRE) leave ``br-int`` through a patch to the
  tunnel bridge (``br-tun``), where the local VLAN becomes the network's
  tunnel key: unicast to the host that has the MAC, broadcast to every host
  with a port of the network, as l2population tells (a tunnel port per
  remote host and type, ``vxlan-<remote IP in hex>``).
- Flat and VLAN networks leave through a patch to the physical network's
  bridge (``bridge_mappings``), where the local VLAN is stripped or becomes
  the network's VLAN, and back.

Flows are computed from what the agent knows and written per bridge in one
bundle. A full sync uses ``replace-flows``: only the difference reaches the
switch, so a restarted agent that comes to the same flows changes nothing
and traffic never stops; stale flows go with the same write. Other syncs
send the flow mods between the table last written and the new one. Actions
are written as OpenFlow 1.3 states them (``pop_vlan``, ``push_vlan`` +
``set_field``), the form the switch gives back, or every write would seem a
change.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from operator import methodcaller
from typing import Any, TypeVar

from neutrino import metrics
from neutrino.agents.base import Agent, named
from neutrino.agents.cmd import main
from neutrino.agents.extensions.api import AgentHandles, L2AgentExtension, OvsBridge
from neutrino.agents.extensions.manager import Extensions
from neutrino.agents.notifications import (
    Fdb,
    L2Notifications,
    L2PopulationNotifications,
    fetch_fdb,
    merge_fdb,
)
from neutrino.agents.openvswitch_options import BINARY, OPTIONS, TUNNEL_TYPES
from neutrino.agents.ovs_trunk import OvsTrunks, TrunkNotifications
from neutrino.agents.sg_info import SecurityGroupInfo
from neutrino.config import Config
from neutrino.linux import host_check, ovs_firewall
from neutrino.linux.ovs import DEAD_VLAN, OpenFlow, Ovsdb, cookie_of
from neutrino.rpc import topics
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts.l2 import L2PluginApi, MissingDevice, PortDetails
from neutrino.rpc.contracts.trunk import TrunkPluginApi

LOG = logging.getLogger(__name__)
T = TypeVar("T")

FLOOD_MAC = "00:00:00:00:00:00"
#: br-tun's tables: where packets from br-int go, and those from tunnels
FROM_INT, FROM_TUNNEL = 1, 4
#: a flow in a table nothing uses, on br-int: gone, ovs-vswitchd lost every
#: flow (it restarted) and they must all be written again
CANARY = "table=23,priority=0,actions=drop"


def tunnel_port_name(network_type: str, remote_ip: str) -> str:
    """``vxlan-c0000202``: the type and the remote address in hex (15 at most)."""
    return f"{network_type}-{int(ipaddress.IPv4Address(remote_ip)):08x}"[:15]


def set_vlan(vlan: int) -> str:
    """Actions that give a packet VLAN ``vlan``, in OpenFlow 1.3's own terms
    (``mod_vlan_vid`` would be read back as these, and every replace-flows
    would then find a difference to write)."""
    return f"set_field:{4096 + vlan}->vlan_vid"


def push_vlan(vlan: int) -> str:
    return f"push_vlan:0x8100,{set_vlan(vlan)}"


def _ipv4(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).version == 4
    except ValueError:
        return False


def arp_reply(vlan: int, mac: str, ip: str) -> str:
    """A br-tun flow that answers "who has ``ip``?" on local VLAN ``vlan`` with
    ``mac`` itself, back where the question came from: no broadcast crosses
    the tunnels for a port the server told us of."""
    return (f"table={FROM_INT},priority=3,arp,arp_op=1,dl_vlan={vlan},arp_tpa={ip},"
            "actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],"
            f"set_field:{mac}->eth_src,set_field:2->arp_op,"
            "move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],"
            f"set_field:{mac}->arp_sha,set_field:{ip}->arp_spa,IN_PORT")


#: seconds past which a sync says where its time went
SLOW_SYNC = 2.0


class Steps:
    """How long each step of a sync took, to tell when one is slow."""

    def __init__(self) -> None:
        self._started = self._last = time.monotonic()
        self._took: list[str] = []

    def done(self, step: str) -> None:
        now = time.monotonic()
        self._took.append(f"{step} {now - self._last:.2f} s")
        self._last = now

    def total(self) -> float:
        return self._last - self._started

    def __str__(self) -> str:
        return ", ".join(self._took)


def _patch_names(bridge: str) -> tuple[str, str]:
    """The patch ports between br-int and a physical bridge: (on br-int, on it)."""
    return f"int-{bridge}"[:15], f"phy-{bridge}"[:15]


class OpenvswitchAgent(Agent):
    agent_type = "Open vSwitch agent"
    binary = BINARY
    notification_topics = (*topics.L2_NOTIFICATIONS, topics.L2POPULATION, topics.TRUNK_UPDATE)
    option_groups = OPTIONS
    extension_kind = "l2"
    extensions: Extensions[L2AgentExtension]

    def __init__(self, conf: Config, bus: Bus, db: Ovsdb | None = None,
                 openflow: Callable[[str], OpenFlow] = OpenFlow):
        """``db``, ``openflow``: the switch's database and a bridge's flow table
        (None, ``OpenFlow``: this host's; the agent unit tests give fakes)."""
        super().__init__(conf, bus)
        tunnels = conf.setting("agent", "tunnel_types") if conf.agent.tunnel_types else None
        if tunnels and not conf.agent.l2_population:
            raise ValueError("tunnels need [agent] l2_population = true (it tells where "
                             f"the other hosts are), set by {tunnels}")
        if tunnels and not conf.ovs.local_ip:
            raise ValueError(f"tunnels need [ovs] local_ip, this host's tunnel address, set by "
                             f"{tunnels}")
        self._plugin = L2PluginApi.on(bus)
        self._agent_id = f"ovs-{self.host}"
        #: port id -> the details the server gave for it, as wired
        self.ports: dict[str, dict[str, Any]] = {}
        #: network id -> its local VLAN on br-int
        self.vlans: dict[str, int] = {}
        self.fdb: Fdb = {}
        self._fdb_changes = 0  # l2population messages heard (see fetch_fdb)
        self._db: Ovsdb | None = db
        self._openflow = openflow
        # OVSDB and ovs-ofctl calls block: all host work runs in this one thread
        self._host = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ovs")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._applied: dict[str, list[str]] = {}  # bridge -> the flows last written
        self._sg = SecurityGroupInfo()
        sg = conf.securitygroup
        self.firewall = sg.enable_security_group and sg.firewall_driver == "openvswitch"
        self._tunnels: set[str] = set()  # tunnel ports made on br-tun
        self._unwanted_tunnels: set[str] = set()  # to go once no flow names them
        # trunk bridges patched to br-int (ovs_trunk): before the ports are read, and
        # their status once the ports are wired
        self.trunks = OvsTrunks(TrunkPluginApi.on(bus), lambda: self.db,
                                conf.ovs.integration_bridge, self.on_host, self.context,
                                self.host)

    # --- what it says and serves ------------------------------------------------------

    def configurations(self) -> dict[str, Any]:
        ovs, agent = self.conf.ovs, self.conf.agent
        return {"bridge_mappings": ovs.bridge_mappings,
                "integration_bridge": ovs.integration_bridge,
                "tunnel_types": agent.tunnel_types, "tunneling_ip": ovs.local_ip or None,
                "l2_population": agent.l2_population, "datapath_type": ovs.datapath_type,
                "devices": len(self.ports)}

    def endpoints(self) -> list[Any]:
        return [L2Notifications(self), L2PopulationNotifications(self),
                TrunkNotifications(self.mark_dirty)]

    def extension_handles(self) -> AgentHandles:
        bridge = OvsBridge(lambda: self.db, self._openflow(self.conf.ovs.integration_bridge))
        return dataclasses.replace(super().extension_handles(), state=self.ports,
                                   run=self.on_host, dataplane=bridge)

    def host_needs(self) -> host_check.Needs:
        conf, ovs = self.conf, self.conf.ovs
        needs = host_check.Needs()
        needs.tool(conf.setting("ovs", "of_interface"), host_check.OVS_OFCTL)
        where = conf.source("ovs", "bridge_mappings")
        needs.ovs = host_check.OvsNeeds(
            ovs.ovsdb_connection, ovs.ovsdb_timeout, conf.source("ovs", "ovsdb_connection"),
            [(bridge, f"{where} for {physnet}") for physnet, bridge
             in ovs.bridge_mappings.items()])
        if conf.agent.tunnel_types:
            needs.addresses.append((ovs.local_ip, conf.source("ovs", "local_ip")))
        return needs

    def background(self) -> list[Callable[[], Coroutine[Any, Any, None]]]:
        return [self._watch_canary]

    async def _watch_canary(self) -> None:
        """A full sync when ovs-vswitchd has lost the flows written."""
        bridge = self.conf.ovs.integration_bridge
        while True:
            await asyncio.sleep(self.conf.agent.polling_interval)
            if bridge not in self._applied:
                continue  # nothing written yet, or a full sync is coming
            try:
                present = await self.on_host(lambda: self._openflow(bridge).dump("table=23"))
            except Exception as error:  # the switch is away: the syncs will say so
                LOG.warning("cannot read the flows of %s: %s", bridge, error)
                continue
            if not present:
                LOG.warning("%s lost its flows (ovs-vswitchd restarted?): full resync",
                            bridge)
                self._applied.clear()
                self.request_full_sync()

    async def on_host(self, work: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._host, work, *args)

    # --- OVSDB -------------------------------------------------------------------------

    @property
    def db(self) -> Ovsdb:
        if self._db is None:
            ovs = self.conf.ovs
            self._db = Ovsdb(ovs.ovsdb_connection, ovs.ovsdb_timeout,
                             on_interface=self._interface_event)
        return self._db

    def _interface_event(self, event: str, name: str, external_ids: dict[str, str]) -> None:
        """From the IDL's thread: a port of an instance came, changed or went."""
        port_id = external_ids.get("iface-id")
        if port_id and self._loop is not None:
            self._loop.call_soon_threadsafe(self.mark_dirty, ("device", port_id))

    def _present(self) -> dict[str, str]:
        """Instance ports on br-int: port id -> interface name."""
        on_bridge = set(self.db.ports(self.conf.ovs.integration_bridge))
        return {row["external_ids"]["iface-id"]: name
                for name, row in self.db.interfaces().items()
                if name in on_bridge and row["external_ids"].get("iface-id")}

    # --- the reconciling ---------------------------------------------------------------

    async def sync(self, full: bool, dirty: set[Any]) -> None:
        self._loop = asyncio.get_running_loop()  # where OVSDB's events are handed
        steps = Steps()
        if full:
            await self.on_host(self._setup_bridges)
        dirty = dirty | {("device", port_id) for port_id in await self.trunks.wire(full, dirty)}
        present = await self.on_host(self._present)
        steps.done("OVSDB")
        if full:
            wanted = set(present) | set(self.ports)
        else:
            networks = named(dirty, "network")
            wanted = (named(dirty, "device") | named(dirty, "port")
                      | {p for p, port in self.ports.items() if port["network_id"] in networks})
        asked = sorted(wanted & set(present))
        details = await self._plugin.get_devices_details_list(
            self.context, devices=asked,
            agent_id=self._agent_id, host=self.host) if asked else []
        steps.done("port details")
        before = {p: self.ports[p] for p in wanted if p in self.ports}
        up, down, fresh = await self.on_host(self._apply, details, wanted - set(present),
                                             present)
        await self._tell_extensions(set(up) | set(down), before)
        steps.done("tags")
        if self.conf.agent.l2_population and (full or fresh):
            await self._fetch_fdb(None if full else fresh)
            steps.done("l2population")
        if self.firewall:
            changed = {p["port_id"] for p in details if "port_id" in p}
            await self._security_groups(None if full else changed,
                                        named(dirty, "security_group"))
            steps.done("security groups")
        await self.on_host(self._write_flows, full, self._extension_flows())
        steps.done("flows")
        if up or down:  # ACTIVE once its flows (filters included) are in place
            await self._plugin.update_device_list(self.context, devices_up=up,
                                    devices_down=down, agent_id=self._agent_id,
                                    host=self.host)
            steps.done("status")
        await self.trunks.report(self.ports)
        if steps.total() > SLOW_SYNC:
            LOG.info("a sync of %d ports took %.1f s: %s", len(asked), steps.total(), steps)

    async def _security_groups(self, changed: set[str] | None, groups: set[str]) -> None:
        """Know the groups of every port wired here, asking the server about the
        ``changed`` ones and those that the ``groups`` changing concern (about all
        when ``changed`` is None)."""
        wired = set(self.ports)
        ask = wired if changed is None else (changed | self._sg.concerned(groups, changed)) & wired
        answer = await self._plugin.security_group_info_for_devices(
            self.context, devices=sorted(ask)) if ask else None
        # in the host thread, which reads it when it writes flows
        await self.on_host(self._sg.update, answer, wired)

    def _setup_bridges(self) -> None:
        """The bridges and patches; what a full sync finds again after a restart."""
        ovs = self.conf.ovs
        self.db.ensure_bridge(ovs.integration_bridge, ovs.datapath_type)
        if self.conf.agent.tunnel_types:
            self.db.ensure_bridge(ovs.tunnel_bridge, ovs.datapath_type)
            self.db.ensure_patch(ovs.integration_bridge, "patch-tun", "patch-int")
            self.db.ensure_patch(ovs.tunnel_bridge, "patch-int", "patch-tun")
        for bridge in ovs.bridge_mappings.values():
            on_int, on_phys = _patch_names(bridge)
            self.db.ensure_bridge(bridge, ovs.datapath_type, secure=False)
            self.db.ensure_patch(ovs.integration_bridge, on_int, on_phys)
            self.db.ensure_patch(bridge, on_phys, on_int)
        # local VLANs as a previous run left them, so that they stay
        for tag, notes in self.db.port_tags().values():
            network_id = notes.get("net_uuid")
            if network_id and tag and tag != DEAD_VLAN and network_id not in self.vlans:
                self.vlans[network_id] = tag
        self._tunnels = {name for name in self.db.ports(ovs.tunnel_bridge)
                         if name.startswith(TUNNEL_TYPES)} if self.conf.agent.tunnel_types \
            else set()
        self._applied.clear()

    def _vlan_for(self, network_id: str) -> int:
        if network_id not in self.vlans:
            used = set(self.vlans.values())
            free = next((v for v in range(1, DEAD_VLAN) if v not in used), None)
            if free is None:
                raise RuntimeError("no local VLAN left on this host")
            self.vlans[network_id] = free
        return self.vlans[network_id]

    async def _tell_extensions(self, wired: set[str], before: dict[str, dict[str, Any]]
                               ) -> None:
        """``handle_port`` for the ports ``wired`` now, ``delete_port`` for
        those that left (with the details they had)."""
        for port_id in sorted(wired):
            port = self.ports.get(port_id)
            if port is not None:
                await self.extensions.each("handle_port", methodcaller("handle_port", port))
        for port_id, port in before.items():
            if port_id not in self.ports:
                await self.extensions.each("delete_port", methodcaller("delete_port", port))

    def _apply(self, details: list[PortDetails | MissingDevice], gone: set[str],
               present: dict[str, str]) -> tuple[list[str], list[str], set[str]]:
        """Tag the ports of ``details``; forget those ``gone``. The ports now up
        and down, and the networks new on this host."""
        up: list[str] = []
        down: list[str] = []
        fresh: set[str] = set()
        tags: dict[str, tuple[int, dict[str, str]]] = {}  # interface -> (tag, notes)
        wiring: list[tuple[PortDetails, str]] = []
        for port in details:
            port_id = port["port_id"] if "port_id" in port else port["device"]
            name = present.get(port_id)
            if "port_id" not in port or name is None:
                # not a port of the server's (any more): it passes nothing
                if name is not None:
                    tags[name] = (DEAD_VLAN, {})
                self.ports.pop(port_id, None)
                continue
            if not self._can_carry(port):
                tags[name] = (DEAD_VLAN, {})
                continue
            network_id = port["network_id"]
            if not any(p["network_id"] == network_id for p in self.ports.values()):
                fresh.add(network_id)
            vlan = self._vlan_for(network_id)
            tags[name] = (vlan if port["admin_state_up"] else DEAD_VLAN,
                          {"net_uuid": network_id})
            wiring.append((port, name))
        self.db.set_tags(tags)  # one transaction for the whole batch
        ofports = self._wait_ofports({name for _, name in wiring})
        for port, name in wiring:
            if name not in ofports:
                LOG.warning("%s has no OpenFlow port yet: wired at the next sync", name)
                self.mark_dirty_soon(port["port_id"])
                continue
            self.ports[port["port_id"]] = {**port, "interface": name, "ofport": ofports[name]}
            (up if port["admin_state_up"] else down).append(port["port_id"])
        for port_id in gone:
            if self.ports.pop(port_id, None) is not None:
                down.append(port_id)
        in_use = {port["network_id"] for port in self.ports.values()}
        for network_id in set(self.vlans) - in_use:
            del self.vlans[network_id]
            self.fdb.pop(network_id, None)
        return up, down, fresh

    def _wait_ofports(self, names: set[str], seconds: float = 2.0) -> dict[str, int]:
        """The OpenFlow ports of ``names``: ovs-vswitchd numbers a new port a
        moment after OVSDB has it, so wait a little (once for all) for those missing."""
        deadline = time.monotonic() + seconds
        while True:
            ofports = self.db.ofports()
            if names <= set(ofports) or time.monotonic() >= deadline:
                return ofports
            time.sleep(0.02)

    def mark_dirty_soon(self, port_id: str) -> None:
        """From the host thread: look at the port again in a second."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(
                self._loop.call_later, 1, self.mark_dirty, ("device", port_id))

    def _can_carry(self, port: PortDetails) -> bool:
        network_type = port["network_type"]
        if network_type in TUNNEL_TYPES:
            ok = network_type in self.conf.agent.tunnel_types and bool(self.conf.ovs.local_ip)
        elif network_type in ("flat", "vlan"):
            ok = port.get("physical_network") in self.conf.ovs.bridge_mappings
        else:
            ok = network_type == "local"
        if not ok:
            LOG.error("port %s: this host cannot carry %s network %s", port["port_id"],
                      network_type, port["network_id"])
        return ok

    # --- flows -------------------------------------------------------------------------

    def _networks(self) -> dict[str, dict[str, Any]]:
        """network id -> a port's details of it (type, segment, physical network)."""
        return {port["network_id"]: port for port in self.ports.values()}

    def _extension_flows(self) -> list[str]:
        """The flows the extensions add to br-int, read in the event loop."""
        return [flow for flows in self.extensions.gather("flows", methodcaller("flows"))
                for flow in flows]

    def _write_flows(self, full: bool, added: list[str]) -> None:
        """Every bridge's flows; ``added``: the extensions' on br-int."""
        ovs = self.conf.ovs
        networks = self._networks()
        tables = {ovs.integration_bridge: self._int_flows(networks) + added}
        if self.conf.agent.tunnel_types:
            tables[ovs.tunnel_bridge] = self._tun_flows(networks)
        for physnet, bridge in ovs.bridge_mappings.items():
            tables[bridge] = self._phys_flows(physnet, bridge, networks)
        with metrics.programming("openflow"):
            for bridge, flows in tables.items():
                applied = None if full else self._applied.get(bridge)
                if applied is None:  # the switch's table is not known: ovs-ofctl diffs
                    self._openflow(bridge).replace(flows)
                elif applied != flows:  # only what changed since the last write
                    self._openflow(bridge).update(applied, flows)
                self._applied[bridge] = flows
        if self.conf.agent.tunnel_types:
            self._drop_tunnel_ports()

    def _int_flows(self, networks: dict[str, dict[str, Any]]) -> list[str]:
        if self.firewall:
            return [CANARY, *self._filtering_int_flows(networks)]
        flows = [CANARY, "table=0,priority=0,actions=NORMAL"]
        for port_id, port in self.ports.items():
            if not port["admin_state_up"]:
                flows.append(f"cookie={cookie_of(port_id):#x},table=0,priority=10,"
                             f"in_port={port['interface']},actions=drop")
        for physnet, bridge in self.conf.ovs.bridge_mappings.items():
            on_int, _ = _patch_names(bridge)
            flows.append(f"table=0,priority=2,in_port={on_int},actions=drop")
            for network_id, port in networks.items():
                if port.get("physical_network") != physnet:
                    continue
                vlan = self.vlans[network_id]
                if port["network_type"] == "flat":
                    match, action = "vlan_tci=0x0000/0x1fff", push_vlan(vlan)
                else:
                    match, action = f"dl_vlan={port['segmentation_id']}", set_vlan(vlan)
                flows.append(f"cookie={cookie_of(network_id):#x},table=0,priority=3,"
                             f"in_port={on_int},{match},actions={action},NORMAL")
        return flows

    def _filtering_int_flows(self, networks: dict[str, dict[str, Any]]) -> list[str]:
        """br-int with the OpenFlow firewall (``ovs_firewall``): every packet leaves
        table 0 untagged with its network's VLAN in reg6; table 94 switches."""
        fw = ovs_firewall
        classify, local, normal = fw.CLASSIFY, fw.LOCAL, fw.NORMAL_OUT
        places = {port_id: fw.Place(port["ofport"], self.vlans[port["network_id"]])
                  for port_id, port in self.ports.items() if port["admin_state_up"]}
        flows = [f"table={classify},priority=0,actions=drop",
                 f"table={normal},priority=0,actions=NORMAL"]
        filtering = {port_id for port_id, port in self._sg.info()["devices"].items()
                     if fw.filtered(port) and port_id in places}
        for port_id, port in self.ports.items():
            cookie = f"cookie={cookie_of(port_id):#x}"
            if port_id not in places:  # admin down: nothing in, nothing out
                flows.append(f"{cookie},table={classify},priority=110,"
                             f"in_port={port['ofport']},actions=drop")
            elif port_id not in filtering:
                flows.append(f"{cookie},table={classify},priority=90,in_port={port['ofport']},"
                             f"actions=set_field:{places[port_id].vlan}->reg6,"
                             f"resubmit(,{local})")
        trunks = []  # (port on br-int, network, how its packets carry the network)
        if self.conf.agent.tunnel_types:
            trunks += [("patch-tun", n, f"dl_vlan={self.vlans[n]}") for n, port in
                       networks.items() if port["network_type"] in TUNNEL_TYPES]
        for physnet, bridge in self.conf.ovs.bridge_mappings.items():
            on_int, _ = _patch_names(bridge)
            trunks += [(on_int, n, "vlan_tci=0x0000/0x1fff" if port["network_type"] == "flat"
                        else f"dl_vlan={port['segmentation_id']}")
                       for n, port in networks.items()
                       if port.get("physical_network") == physnet]
        for trunk, network_id, match in trunks:
            vlan, cookie = self.vlans[network_id], f"cookie={cookie_of(network_id):#x}"
            pop = "" if match.startswith("vlan_tci") else "pop_vlan,"
            flows += [f"{cookie},table={classify},priority=90,in_port={trunk},{match},"
                      f"actions={pop}set_field:{vlan}->reg6,resubmit(,{local})",
                      f"{cookie},table={normal},priority=90,in_port={trunk},reg6={vlan},"
                      f"actions={push_vlan(vlan)},NORMAL"]
        return flows + fw.build(self._sg.info(), {p: places[p] for p in filtering})

    def _phys_flows(self, physnet: str, bridge: str, networks: dict[str, dict[str, Any]]
                    ) -> list[str]:
        _, on_phys = _patch_names(bridge)
        flows = ["table=0,priority=0,actions=NORMAL",
                 f"table=0,priority=2,in_port={on_phys},actions=drop"]
        for network_id, port in networks.items():
            if port.get("physical_network") != physnet:
                continue
            vlan = self.vlans[network_id]
            action = ("pop_vlan" if port["network_type"] == "flat"
                      else set_vlan(port["segmentation_id"]))
            flows.append(f"cookie={cookie_of(network_id):#x},table=0,priority=4,"
                         f"in_port={on_phys},dl_vlan={vlan},actions={action},NORMAL")
        return flows

    def _tun_flows(self, networks: dict[str, dict[str, Any]]) -> list[str]:
        local_ip = self.conf.ovs.local_ip
        flows = ["table=0,priority=0,actions=drop",
                 f"table=0,priority=1,in_port=patch-int,actions=goto_table:{FROM_INT}",
                 f"table={FROM_INT},priority=0,actions=drop",
                 f"table={FROM_TUNNEL},priority=0,actions=drop"]
        wanted_ports: dict[str, tuple[str, str]] = {}
        for network_id, port in networks.items():
            network_type = port["network_type"]
            if network_type not in TUNNEL_TYPES:
                continue
            vlan, key = self.vlans[network_id], port["segmentation_id"]
            cookie = f"cookie={cookie_of(network_id):#x}"
            remotes = {ip: entries for ip, entries in self.fdb.get(network_id, {}).items()
                       if ip != local_ip}
            outputs = []
            for remote, entries in sorted(remotes.items()):
                name = tunnel_port_name(network_type, remote)
                wanted_ports[name] = (network_type, remote)
                outputs.append(f"output:{name}")
                for mac, ip in sorted(entries):
                    if mac == FLOOD_MAC:
                        continue
                    flows.append(f"{cookie},table={FROM_INT},priority=2,dl_vlan={vlan},"
                                 f"dl_dst={mac},actions=pop_vlan,"
                                 f"set_field:{key}->tun_id,output:{name}")
                    if self.conf.agent.arp_responder and _ipv4(ip):
                        flows.append(f"{cookie},{arp_reply(vlan, mac, ip)}")
            if outputs:
                flows.append(f"{cookie},table={FROM_INT},priority=1,dl_vlan={vlan},"
                             f"actions=pop_vlan,set_field:{key}->tun_id,"
                             f"{','.join(outputs)}")
            flows.append(f"{cookie},table={FROM_TUNNEL},priority=1,tun_id={key},"
                         f"actions={push_vlan(vlan)},output:patch-int")
        self._tunnel_ports(wanted_ports)
        for name in sorted(wanted_ports):
            flows.append(f"table=0,priority=1,in_port={name},actions=goto_table:{FROM_TUNNEL}")
        return flows

    def _tunnel_ports(self, wanted: dict[str, tuple[str, str]]) -> None:
        """One port per remote host and tunnel type on br-tun, no more (those no longer
        wanted go after the flows are written). New ones are
        waited for until they have an OpenFlow number: the flows name them, and
        ovs-ofctl refuses a whole bundle that names a port it does not know yet."""
        bridge = self.conf.ovs.tunnel_bridge
        new = set(wanted) - self._tunnels
        for name in sorted(new):
            network_type, remote = wanted[name]
            self.db.ensure_port(bridge, name, type=network_type, options={
                "remote_ip": remote, "local_ip": self.conf.ovs.local_ip, "key": "flow"})
            self._tunnels.add(name)
        if new:
            self._wait_ofports(new)
        self._unwanted_tunnels = self._tunnels - set(wanted)

    def _drop_tunnel_ports(self) -> None:
        """Tunnel ports no flow names any more go, once their flows are gone: the
        deletes of those flows name the port, which ovs-ofctl must still know."""
        for name in self._unwanted_tunnels:
            self.db.delete_port(name, self.conf.ovs.tunnel_bridge)
            self._tunnels.discard(name)
        self._unwanted_tunnels = set()

    # --- l2population ------------------------------------------------------------------

    async def _fetch_fdb(self, only: set[str] | None) -> None:
        networks = {n for n, p in self._networks().items() if p["network_type"] in TUNNEL_TYPES}
        wanted = sorted(networks & only if only is not None else networks)
        if not wanted:
            return
        self.fdb.update(await fetch_fdb(self._plugin, self.context, self.host, wanted,
                                        lambda: self._fdb_changes))

    async def fdb_changed(self, entries: dict[str, Any], add: bool) -> None:
        """add_fdb_entries / remove_fdb_entries from the server."""
        self._fdb_changes += 1
        here = {n: value for n, value in entries.items() if n in self.vlans}
        if here:
            merge_fdb(self.fdb, here, add, FLOOD_MAC)
            await self.on_host(self._write_flows, False, self._extension_flows())


def openvswitch() -> None:
    main(OpenvswitchAgent)
