"""The L3 sync data's TypedDict spells Neutron's keys out (a TypedDict's keys
must be literal strings): they must stay the keys the agent and server use."""

from __future__ import annotations

from neutrino.rpc.contracts import l3


def test_router_sync_data_has_the_keys_the_constants_name() -> None:
    keys = l3.RouterSyncData.__annotations__
    for key in (l3.INTERFACES, l3.FLOATINGIPS, l3.PORT_FORWARDINGS):
        assert key in keys
