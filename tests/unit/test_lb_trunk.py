"""The Linux bridge agent's trunks: a trunk whose parent is wired here goes to
ERROR, said once; a server without the trunk plugin costs nothing."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from neutrino.agents.lb_trunk import TrunkNotifications, TrunksRefused
from neutrino.rpc.contracts.trunk import TrunkPluginApi
from neutrino.rpc.errors import TransportError

PARENT, OTHER, TRUNK = "p" * 8 + "-1", "o" * 8 + "-2", "t" * 8 + "-3"


class FakeTrunkPlugin:
    def __init__(self) -> None:
        self.status = "DOWN"
        self.answers = True

    async def call(self, ctx: dict, method: str, **args: Any) -> Any:
        if not self.answers:
            raise TransportError("cannot send to trunk: is anyone listening?")
        if method == "get_trunk_details":
            return {PARENT: {"trunk_id": TRUNK, "port_id": PARENT, "admin_state_up": True,
                             "status": self.status, "sub_ports": []}} \
                if PARENT in args["port_ids"] else {}
        assert method == "update_trunk_status"
        self.status = args["status"]
        return None


async def settled(trunks: TrunksRefused) -> None:
    while trunks._tasks:
        await asyncio.sleep(0)


def test_a_trunk_of_a_parent_wired_here_goes_to_error_once(caplog):
    plugin = FakeTrunkPlugin()
    trunks = TrunksRefused(TrunkPluginApi(plugin), {}, lambda: [PARENT, OTHER])

    async def scenario() -> None:
        trunks.check([OTHER])
        await settled(trunks)
        assert plugin.status == "DOWN"
        trunks.check([PARENT, OTHER])
        await settled(trunks)
        trunks.check([PARENT])  # wired again (a full sync): said already
        await settled(trunks)

    with caplog.at_level(logging.ERROR, logger="neutrino.agents.lb_trunk"):
        asyncio.run(scenario())
    assert plugin.status == "ERROR"
    assert [r.getMessage() for r in caplog.records] == [
        f"trunk {TRUNK} (parent port {PARENT}) is in ERROR: this Linux bridge host cannot "
        "carry subports (they need VLAN sub-interfaces of the parent's tap, and the kernel "
        "has no 8021q module); use an Open vSwitch host"]


def test_a_trunk_made_for_a_parent_wired_here_is_refused_too():
    plugin = FakeTrunkPlugin()
    trunks = TrunksRefused(TrunkPluginApi(plugin), {}, lambda: [PARENT])

    async def scenario() -> None:
        await TrunkNotifications(trunks).trunk_changed({}, TRUNK, OTHER)  # not here
        await settled(trunks)
        assert plugin.status == "DOWN"
        await TrunkNotifications(trunks).trunk_changed({}, TRUNK, PARENT)
        await settled(trunks)

    asyncio.run(scenario())
    assert plugin.status == "ERROR"


def test_no_trunk_plugin_is_no_error(caplog):
    plugin = FakeTrunkPlugin()
    plugin.answers = False
    trunks = TrunksRefused(TrunkPluginApi(plugin), {}, lambda: [PARENT])

    async def scenario() -> None:
        trunks.check([PARENT])
        await settled(trunks)

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    assert not caplog.records
