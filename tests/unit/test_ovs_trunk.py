"""The OVS agent's trunk wiring: its pure part (from the trunk bridges OVSDB
holds and what the server says of their parents, the patches to make and the
ports and bridges to remove; the status a trunk gets), then ``OvsTrunks`` on a
fake OVSDB with a fake trunk plugin (what the switch holds, what the server
was told)."""

from __future__ import annotations

import asyncio
from typing import Any

from neutrino.agents.ovs_trunk import OvsTrunks, TrunkBridge, TrunkWiring, patch_names, status_of
from neutrino.linux.ovs import PatchPort
from neutrino.rpc.contracts.trunk import TrunkPluginApi
from neutrino.rpc.errors import TransportError
from tests.fakes.ovsdb import FakeOvsdb

PARENT = "aaaaaaaa-1111-4000-8000-000000000001"
SUB1 = "bbbbbbbb-2222-4000-8000-000000000002"
SUB2 = "cccccccc-3333-4000-8000-000000000003"
TRUNK = "dddddddd-4444-4000-8000-000000000004"
BRIDGE = "tbr-dddddddd-44"


def details(*subports: tuple[str, int]) -> dict:
    return {"trunk_id": TRUNK, "port_id": PARENT, "admin_state_up": True, "status": "DOWN",
            "sub_ports": [{"port_id": port_id, "segmentation_type": "vlan",
                           "segmentation_id": vlan, "mac_address": "fa:16:3e:00:00:02"}
                          for port_id, vlan in subports]}


def applied(bridges: dict[str, TrunkBridge], int_patches: dict[str, str], plan) -> tuple[
        dict[str, TrunkBridge], dict[str, str]]:
    """What the switch holds once ``plan`` is applied (a fake switch: patches and
    bridges by name)."""
    gone = set(plan.deletions)
    result = {}
    for name, bridge in bridges.items():
        if name in plan.bridges:
            continue
        patches = {p: peer for p, peer in bridge.patches.items() if (name, p) not in gone}
        patches |= {p.name: p.peer for p in plan.patches if p.bridge == name}
        result[name] = TrunkBridge(name, bridge.parent_id, bridge.mac, patches)
    ints = {p: i for p, i in int_patches.items() if ("br-int", p) not in gone}
    ints |= {p.name: p.external_ids["iface-id"] for p in plan.patches if p.bridge == "br-int"}
    return result, ints


def test_names():
    assert patch_names(SUB1, subport=True) == ("spi-bbbbbbbb-22", "spt-bbbbbbbb-22")
    assert patch_names(PARENT, subport=False) == ("tpi-aaaaaaaa-11", "tpt-aaaaaaaa-11")


def test_a_new_trunk_bridge_is_patched_for_its_parent_and_each_subport():
    wiring = TrunkWiring("br-int")
    bridges = {BRIDGE: TrunkBridge(BRIDGE, PARENT, "fa:16:3e:00:00:01")}
    plan = wiring.plan(bridges, {}, {BRIDGE: details((SUB1, 101), (SUB2, 102))})
    by_name = {p.name: p for p in plan.patches}
    assert by_name["tpt-aaaaaaaa-11"] == PatchPort(BRIDGE, "tpt-aaaaaaaa-11",
                                                   "tpi-aaaaaaaa-11", 0)
    assert by_name["tpi-aaaaaaaa-11"].external_ids["iface-id"] == PARENT
    assert by_name["tpi-aaaaaaaa-11"].external_ids["attached-mac"] == "fa:16:3e:00:00:01"
    assert (by_name["spt-bbbbbbbb-22"].bridge, by_name["spt-bbbbbbbb-22"].tag) == (BRIDGE, 101)
    assert by_name["spi-cccccccc-33"].bridge == "br-int"
    assert by_name["spi-cccccccc-33"].external_ids["iface-id"] == SUB2
    assert by_name["spi-cccccccc-33"].tag is None  # br-int's tag is the agent's local VLAN
    assert plan.touched == {PARENT, SUB1, SUB2} and not plan.deletions and not plan.bridges


def test_converged_and_round_trip():
    """Applied, the same plan again changes nothing; a subport removed goes with
    both ends of its patch; added back, the switch is as it was."""
    wiring = TrunkWiring("br-int")
    start = {BRIDGE: TrunkBridge(BRIDGE, PARENT, None)}
    both = {BRIDGE: details((SUB1, 101), (SUB2, 102))}
    wired, ints = applied(start, {}, wiring.plan(start, {}, both))
    again = wiring.plan(wired, ints, both)
    assert not again.deletions and {p.name for p in again.patches} == set(ints) | set(
        wired[BRIDGE].patches)
    one = wiring.plan(wired, ints, {BRIDGE: details((SUB1, 101))})
    assert set(one.deletions) == {(BRIDGE, "spt-cccccccc-33"), ("br-int", "spi-cccccccc-33")}
    assert SUB2 in one.touched
    fewer, fewer_ints = applied(wired, ints, one)
    back, back_ints = applied(fewer, fewer_ints, wiring.plan(fewer, fewer_ints, both))
    assert (back, back_ints) == (wired, ints)


def test_a_trunk_bridge_whose_instance_went_is_removed():
    wiring = TrunkWiring("br-int")
    bridges = {BRIDGE: TrunkBridge(BRIDGE, None, None, {
        "tpt-aaaaaaaa-11": "tpi-aaaaaaaa-11", "spt-bbbbbbbb-22": "spi-bbbbbbbb-22"})}
    ints = {"tpi-aaaaaaaa-11": PARENT, "spi-bbbbbbbb-22": SUB1}
    plan = wiring.plan(bridges, ints, {})
    assert plan.bridges == [BRIDGE]
    assert set(plan.deletions) == {("br-int", "tpi-aaaaaaaa-11"), ("br-int", "spi-bbbbbbbb-22")}
    assert plan.touched == {PARENT, SUB1} and not plan.patches


def test_a_trunk_bridge_being_plugged_is_left_alone():
    plan = TrunkWiring("br-int").plan({BRIDGE: TrunkBridge(BRIDGE)}, {}, {})
    assert not plan.patches and not plan.deletions and not plan.bridges


def test_orphan_patches_on_br_int_go():
    """br-int patches whose trunk bridge is gone (deleted by hand, say)."""
    plan = TrunkWiring("br-int").plan({}, {"spi-bbbbbbbb-22": SUB1}, {})
    assert plan.deletions == [("br-int", "spi-bbbbbbbb-22")] and plan.touched == {SUB1}


def test_a_port_that_is_no_trunks_parent_is_wired_untagged():
    bridges = {BRIDGE: TrunkBridge(BRIDGE, PARENT, None, {"spt-bbbbbbbb-22": "spi-bbbbbbbb-22"})}
    plan = TrunkWiring("br-int").plan(bridges, {"spi-bbbbbbbb-22": SUB1}, {BRIDGE: None})
    assert {p.name for p in plan.patches} == {"tpi-aaaaaaaa-11", "tpt-aaaaaaaa-11"}
    assert set(plan.deletions) == {(BRIDGE, "spt-bbbbbbbb-22"), ("br-int", "spi-bbbbbbbb-22")}


def test_status():
    trunk = details((SUB1, 101), (SUB2, 102))
    assert status_of(PARENT, trunk, {PARENT: {}, SUB1: {}, SUB2: {}}) == "ACTIVE"
    assert status_of(PARENT, trunk, {PARENT: {}, SUB1: {}}) == "DEGRADED"
    assert status_of(PARENT, trunk, {SUB1: {}, SUB2: {}}) == "BUILD"


# --- OvsTrunks in the agent's sync, with a fake OVSDB and a fake trunk plugin -------------

class FakeTrunkPlugin:
    """The server's end of ``trunk``, as a ``Caller``: the trunk of PARENT, and
    what the agent told it."""

    def __init__(self, trunk: dict | None) -> None:
        self.trunk = trunk
        self.statuses: list[str] = []
        self.bindings = 0
        self.answers = True

    async def call(self, ctx: dict, method: str, **args: Any) -> Any:
        if method == "get_trunk_details":
            if not self.answers:
                raise TransportError("cannot send to trunk: is anyone listening?")
            return {PARENT: self.trunk} if self.trunk and PARENT in args["port_ids"] else {}
        if method == "update_subport_bindings":
            self.bindings += 1
            return [s["port_id"] for s in self.trunk["sub_ports"]] if self.trunk else []
        if method == "update_trunk_status":
            self.statuses.append(args["status"])
            return None
        raise AssertionError(method)


def trunks_on(db: FakeOvsdb, plugin: FakeTrunkPlugin) -> OvsTrunks:
    async def run(work, *args):
        return work(*args)

    return OvsTrunks(TrunkPluginApi(plugin), lambda: db, "br-int", run, {},  # type: ignore[arg-type]
                     "h1")


def plugged() -> FakeOvsdb:
    db = FakeOvsdb()
    db.ensure_bridge("br-int", "netdev")
    db.ensure_bridge(BRIDGE, "netdev", secure=False)
    db.plug(BRIDGE, "tapaaaaaaaa-11", PARENT, "fa:16:3e:00:00:01")
    return db


def test_a_trunk_is_wired_bound_and_reported_once():
    db, plugin = plugged(), FakeTrunkPlugin(details((SUB1, 101), (SUB2, 102)))
    trunks = trunks_on(db, plugin)

    async def scenario() -> None:
        touched = await trunks.wire(True, set())
        assert touched == {PARENT, SUB1, SUB2}
        assert db.tag("spt-cccccccc-33") == 102 and db.tag("tpt-aaaaaaaa-11") == 0
        assert plugin.bindings == 1
        await trunks.report({PARENT: {}, SUB1: {}})  # SUB2 not wired (yet)
        await trunks.report({PARENT: {}, SUB1: {}, SUB2: {}})
        await trunks.report({PARENT: {}, SUB1: {}, SUB2: {}})
        writes = db.writes
        await trunks.wire(True, set())  # a full sync: nothing to write, nothing to bind
        assert db.writes == writes and plugin.bindings == 1

    asyncio.run(scenario())
    assert plugin.statuses == ["DEGRADED", "ACTIVE"]


def test_a_subport_removed_loses_its_patches_and_the_bridge_goes_with_the_instance():
    db, plugin = plugged(), FakeTrunkPlugin(details((SUB1, 101), (SUB2, 102)))
    trunks = trunks_on(db, plugin)

    async def scenario() -> None:
        await trunks.wire(True, set())
        plugin.trunk = {**details((SUB1, 101)), "status": "DOWN"}
        touched = await trunks.wire(False, {("trunk", TRUNK)})
        assert SUB2 in touched and "spi-cccccccc-33" not in db.ports("br-int")
        assert "spt-cccccccc-33" not in db.ports(BRIDGE) and plugin.bindings == 2
        await trunks.report({PARENT: {}, SUB1: {}})
        db.unplug("tapaaaaaaaa-11")
        touched = await trunks.wire(False, {("device", PARENT)})
        assert touched == {PARENT, SUB1}
        assert BRIDGE not in db.bridges() and db.ports("br-int") == []

    asyncio.run(scenario())
    # ACTIVE again after the change (the server had set it DOWN), DOWN once the
    # instance went
    assert plugin.statuses == ["ACTIVE", "DOWN"]


def test_no_trunk_plugin_wires_the_parent_alone():
    db, plugin = plugged(), FakeTrunkPlugin(details((SUB1, 101)))
    plugin.answers = False

    async def scenario() -> None:
        assert await trunks_on(db, plugin).wire(True, set()) == {PARENT}

    asyncio.run(scenario())
    assert db.ports("br-int") == ["tpi-aaaaaaaa-11"] and plugin.statuses == []
