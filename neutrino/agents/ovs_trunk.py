"""Trunks on the Open vSwitch agent, wired as Neutron's OVS trunk driver wires
them: a bridge per trunk, patched into br-int once per port.

The hypervisor (or ``neutrino-instance``) plugs an instance's trunk parent
into a trunk bridge ``tbr-<trunk id[:11]>`` instead of br-int, with the
usual ``external_ids:iface-id``. The agent then patches the trunk bridge to
br-int: ``tpt-<parent id[:11]>`` on it (VLAN 0: the untagged frames) with
``tpi-<parent id[:11]>`` on br-int, whose ``iface-id`` is the parent's; and
for each subport ``spt-<subport id[:11]>`` on it, an access port of the
subport's segmentation id, with ``spi-<subport id[:11]>`` on br-int, whose
``iface-id`` is the subport's. The trunk bridge switches with NORMAL, so a
frame the instance sends tagged 101 leaves untagged through the subport's
patch; on br-int the ``tpi-``/``spi-`` ports are instance ports like any other
and the agent's port wiring (local VLANs, firewall, status) takes them from
there. A trunk bridge whose instance port went (with patches of ours left) is
removed with its br-int patches; one being plugged (no instance port yet, no
patch) is left alone.

``TrunkWiring`` is the pure part: from what OVSDB holds and the server's
trunk details, the patches to make and the ports and bridges to remove.
``OvsTrunks`` runs it inside the agent's sync: before the agent reads br-int's
ports (``wire``: the trunks' details, the subports' bindings, the patches)
and after the ports are wired (``report``: each trunk's status, ACTIVE when
its parent and every subport are wired, DEGRADED when a subport is not,
ERROR when its patches could not be made, DOWN once the instance's port
left the trunk bridge; only changes are sent).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from neutrino.agents.base import named
from neutrino.linux.ovs import Ovsdb, PatchPort
from neutrino.rpc.contracts import trunk as contract
from neutrino.rpc.contracts.trunk import TRUNK_BRIDGE_PREFIX as BRIDGE_PREFIX
from neutrino.rpc.contracts.trunk import TrunkDetails, TrunkPluginApi
from neutrino.rpc.contracts.trunk import trunk_bridge_name as bridge_name
from neutrino.rpc.errors import MessagingTimeout, TransportError

LOG = logging.getLogger(__name__)

PARENT_PREFIXES = ("tpi-", "tpt-")  # (on br-int, on the trunk bridge)
SUBPORT_PREFIXES = ("spi-", "spt-")
SERVICE_PREFIXES = (*PARENT_PREFIXES, *SUBPORT_PREFIXES)


def patch_names(port_id: str, subport: bool) -> tuple[str, str]:
    """The patch pair of a trunk's port: (on br-int, on the trunk bridge)."""
    on_int, on_trunk = SUBPORT_PREFIXES if subport else PARENT_PREFIXES
    return f"{on_int}{port_id[:11]}", f"{on_trunk}{port_id[:11]}"


@dataclass(frozen=True)
class TrunkBridge:
    """A trunk bridge as OVSDB holds it."""

    name: str
    #: the instance's port on it: its iface-id (the parent's id) and attached-mac
    parent_id: str | None = None
    mac: str | None = None
    #: the ``tpt-``/``spt-`` ports on it -> their peers on br-int
    patches: Mapping[str, str] = field(default_factory=dict)


def observe(db: Ovsdb, integration_bridge: str
            ) -> tuple[dict[str, TrunkBridge], dict[str, str]]:
    """The trunk bridges, and the ``tpi-``/``spi-`` ports on br-int with their
    ``iface-id`` (from the replica: no round trip; on a host without trunks,
    two short reads, not a read of every interface)."""
    trunk_bridges = [name for name in db.bridges() if name.startswith(BRIDGE_PREFIX)]
    on_int = [port for port in db.ports(integration_bridge)
              if port.startswith((PARENT_PREFIXES[0], SUBPORT_PREFIXES[0]))]
    if not trunk_bridges and not on_int:
        return {}, {}
    interfaces = db.interfaces()
    bridges = {}
    for name in trunk_bridges:
        parent_id = mac = None
        patches = {}
        for port in db.ports(name):
            row = interfaces.get(port) or {}
            if port.startswith(SERVICE_PREFIXES):
                patches[port] = row.get("options", {}).get("peer", "")
            elif port != name and row.get("external_ids", {}).get("iface-id"):
                parent_id = row["external_ids"]["iface-id"]
                mac = row["external_ids"].get("attached-mac")
        bridges[name] = TrunkBridge(name, parent_id, mac, patches)
    int_patches = {port: (interfaces.get(port) or {}).get("external_ids", {}).get("iface-id", "")
                   for port in on_int}
    return bridges, int_patches


@dataclass
class Plan:
    """What to change on the switch: the patch ports to make, the (bridge, port)
    pairs and the bridges to remove, and the ports whose wiring this changes."""

    patches: list[PatchPort] = field(default_factory=list)
    deletions: list[tuple[str, str]] = field(default_factory=list)
    bridges: list[str] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)


class TrunkWiring:
    """The pure part: from the trunk bridges, br-int's patch ports and what the
    server said of each parent, what to change."""

    def __init__(self, integration_bridge: str):
        self.integration_bridge = integration_bridge

    def wanted(self, bridge: TrunkBridge, details: TrunkDetails | None) -> list[PatchPort]:
        """The patches of a trunk bridge with an instance port: the parent's,
        and one per subport (none when the port is no trunk's parent: it is
        then wired untagged, as if plugged into br-int)."""
        assert bridge.parent_id is not None
        int_bridge = self.integration_bridge
        on_int, on_trunk = patch_names(bridge.parent_id, subport=False)
        notes = {"iface-id": bridge.parent_id, "iface-status": "active"}
        if bridge.mac:
            notes["attached-mac"] = bridge.mac
        patches = [PatchPort(int_bridge, on_int, on_trunk, None, notes),
                   PatchPort(bridge.name, on_trunk, on_int, 0)]
        for sub in details["sub_ports"] if details else []:
            on_int, on_trunk = patch_names(sub["port_id"], subport=True)
            patches += [PatchPort(int_bridge, on_int, on_trunk, None, {
                "iface-id": sub["port_id"], "attached-mac": sub["mac_address"],
                "iface-status": "active"}),
                PatchPort(bridge.name, on_trunk, on_int, sub["segmentation_id"])]
        return patches

    def plan(self, bridges: Mapping[str, TrunkBridge], int_patches: Mapping[str, str],
             details: Mapping[str, TrunkDetails | None]) -> Plan:
        """``int_patches``: br-int's trunk patches -> their iface-id; ``details``:
        trunk bridge -> its parent's trunk (None: not a trunk's parent); a bridge
        with an instance port and no entry keeps its patches."""
        plan = Plan()
        kept: set[str] = set()  # br-int patches of a trunk bridge still there
        for bridge in bridges.values():
            if bridge.parent_id is None:
                if bridge.patches:  # its instance went: the bridge goes too
                    plan.deletions += [(self.integration_bridge, peer)
                                       for peer in bridge.patches.values() if peer]
                    plan.bridges.append(bridge.name)
                continue
            if bridge.name not in details:
                kept |= set(bridge.patches.values())
                continue
            wanted = self.wanted(bridge, details[bridge.name])
            plan.patches += wanted
            names = {patch.name for patch in wanted}
            kept |= names
            for port, peer in bridge.patches.items():
                if port not in names:
                    plan.deletions += [(bridge.name, port), (self.integration_bridge, peer)]
            plan.touched |= {patch.external_ids["iface-id"] for patch in wanted
                             if "iface-id" in patch.external_ids}
        gone = {(self.integration_bridge, port) for port in int_patches if port not in kept}
        plan.deletions += sorted(gone - set(plan.deletions))
        plan.touched |= {int_patches[port] for bridge, port in plan.deletions
                         if bridge == self.integration_bridge and int_patches.get(port)}
        return plan


def status_of(parent_id: str, details: TrunkDetails, wired: Mapping[str, Any]
              ) -> contract.Status:
    """What a trunk's status is once the agent's sync is done."""
    if parent_id not in wired:
        return contract.BUILD  # the parent's port is being wired yet
    missing = [sub["port_id"] for sub in details["sub_ports"] if sub["port_id"] not in wired]
    return contract.DEGRADED if missing else contract.ACTIVE


class TrunkNotifications:
    """What an OVS agent serves on ``TRUNK_UPDATE``."""

    rpc_version = contract.NOTIFICATION_VERSION

    def __init__(self, mark_dirty: Callable[..., None]):
        self._mark_dirty = mark_dirty

    async def trunk_changed(self, context: dict, trunk_id: str, port_id: str = "",
                            **kwargs: Any) -> None:
        self._mark_dirty(("trunk", trunk_id))


class OvsTrunks:
    """The OVS agent's trunks: ``wire`` early in each sync, ``report`` at its end."""

    def __init__(self, api: TrunkPluginApi, db: Callable[[], Ovsdb], integration_bridge: str,
                 run: Callable[..., Awaitable[Any]], context: dict[str, Any], host: str):
        """``db``: the agent's database (made when first used); ``run``: where
        the agent runs host work; ``host``: the agent's."""
        self._api = api
        self._host = host
        self._db = db
        self._run = run
        self._context = context
        self.wiring = TrunkWiring(integration_bridge)
        #: trunk bridge -> its parent's trunk as last told (None: no trunk)
        self.details: dict[str, TrunkDetails | None] = {}
        self._bound: dict[str, set[str]] = {}  # trunk id -> the subports bound for it
        self._reported: dict[str, contract.Status] = {}  # trunk id -> the status last reported
        self._failed: set[str] = set()  # trunks whose patches could not be made

    def _observe(self) -> tuple[dict[str, TrunkBridge], dict[str, str]]:
        return observe(self._db(), self.wiring.integration_bridge)

    async def wire(self, full: bool, dirty: set[Any]) -> set[str]:
        """The trunk bridges patched to br-int as their trunks say; the ports
        whose patches came or went (the agent looks at them in this sync)."""
        bridges, int_patches = await self._run(self._observe)
        if not bridges and not int_patches:
            self.details.clear()
            return set()
        trunks, devices = named(dirty, "trunk"), named(dirty, "device")
        changed = {bridge_name(trunk_id) for trunk_id in trunks}
        ask = {b.parent_id: b.name for b in bridges.values() if b.parent_id and (
            full or b.name not in self.details or b.parent_id in devices
            or b.name in changed)}
        if ask:
            await self._ask(ask)
        for name in set(self.details) - {b for b, v in bridges.items() if v.parent_id}:
            gone = self.details.pop(name)  # its instance went: the trunk is DOWN
            if gone is not None:
                await self._report(gone["trunk_id"], contract.DOWN)
        for details in self.details.values():
            if details is not None:
                await self._bind(details)
        plan = self.wiring.plan(bridges, int_patches, self.details)
        try:
            await self._run(self._apply, plan)
        except Exception:
            for details in self.details.values():
                if details is not None:
                    self._failed.add(details["trunk_id"])
                    await self._report(details["trunk_id"], contract.ERROR)
            raise
        self._failed.clear()
        return plan.touched

    async def _ask(self, ask: dict[str, str]) -> None:
        """The trunks of these parents (parent id -> its trunk bridge). Unanswered
        (no ``trunk`` plugin on the server, say), a new bridge's parent is wired
        alone, untagged, and the question is asked again at the next full sync."""
        try:
            told = await self._api.get_trunk_details(self._context, sorted(ask))
        except (MessagingTimeout, TransportError) as error:
            LOG.warning("no answer about the trunks of ports %s (is the trunk service "
                        "plugin loaded?): %s", ", ".join(sorted(ask)), error)
            for name in ask.values():
                self.details.setdefault(name, None)
            return
        for parent_id, name in ask.items():
            details = self.details[name] = told.get(parent_id)
            if details is not None:  # the server's word: DOWN after a change, say
                self._reported[details["trunk_id"]] = details["status"]

    async def _bind(self, details: TrunkDetails) -> None:
        """The subports bound to this host (the server puts the trunk in BUILD
        meanwhile), once per change of the trunk's subports."""
        trunk_id = details["trunk_id"]
        subports = {sub["port_id"] for sub in details["sub_ports"]}
        if self._bound.get(trunk_id) != subports:
            await self._api.update_subport_bindings(self._context, trunk_id)
            self._bound[trunk_id] = subports
            self._reported[trunk_id] = contract.BUILD

    def _apply(self, plan: Plan) -> None:
        db = self._db()
        if plan.deletions or plan.bridges:
            db.delete_ports(plan.deletions, plan.bridges)
            for name in plan.bridges:
                LOG.info("trunk bridge %s removed: its instance port went", name)
        if plan.patches:
            written = db.ensure_patches(plan.patches)
            if written:
                LOG.info("%d trunk patch ports made", written)

    async def report(self, wired: Mapping[str, Any]) -> None:
        """Each trunk's status as the sync left it, where it changed (``wired``:
        the agent's ports as wired, by id)."""
        for details in self.details.values():
            if details is None or details["trunk_id"] in self._failed:
                continue
            await self._report(details["trunk_id"],
                               status_of(details["port_id"], details, wired))

    async def _report(self, trunk_id: str, status: contract.Status) -> None:
        if self._reported.get(trunk_id) != status:
            LOG.info("trunk %s: %s", trunk_id, status)
            await self._api.update_trunk_status(self._context, trunk_id, status, self._host)
            self._reported[trunk_id] = status
