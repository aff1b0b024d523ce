"""The L3 agent's sync against a fake router dataplane and a fake server on
the in-memory bus: interfaces, the gateway, floating IPs and SNAT as a
router on the host would apply them. No root."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from neutrino.agents.l3 import L3Agent
from tests.fakes.agent_conf import agent_conf
from tests.fakes.routers import FakeRouterDataplane
from tests.fakes.server import FakeServer, serving

ROUTER = "11111111-0000-4000-8000-000000000001"
GW, QR = "22222222-0000-4000-8000-000000000002", "33333333-0000-4000-8000-000000000003"
FIP = "44444444-0000-4000-8000-000000000004"
GATEWAY_DEVICE, INTERFACE_DEVICE = "qg-" + GW[:11], "qr-" + QR[:11]


def port(port_id: str, address: str, cidr: str, gateway: str) -> dict:
    return {"id": port_id, "mac_address": "fa:16:3e:00:00:" + port_id[:2], "mtu": 1500,
            "network_id": "net-" + port_id[:4],
            "fixed_ips": [{"subnet_id": "s-" + port_id[:4], "ip_address": address}],
            "subnets": [{"id": "s-" + port_id[:4], "cidr": cidr, "gateway_ip": gateway}]}


def router_data() -> dict:
    return {"id": ROUTER, "enable_snat": True, "routes": [],
            "gw_port": port(GW, "203.0.113.10", "203.0.113.0/24", "203.0.113.1"),
            "_interfaces": [port(QR, "10.0.0.1", "10.0.0.0/24", "10.0.0.1")],
            "_floatingips": [], "_port_forwardings": []}


def floating_ip() -> dict:
    return {"id": FIP, "floating_ip_address": "203.0.113.20", "fixed_ip_address": "10.0.0.5",
            "port_id": "instance-port"}


@pytest.fixture
def server():
    made = FakeServer()
    made.routers[ROUTER] = router_data()
    return made


def run(tmp_path, server: FakeServer, dataplane: FakeRouterDataplane,
        scenario: Callable[[L3Agent], Awaitable[None]]) -> None:
    async def main() -> None:
        async with serving(server) as bus:
            agent = L3Agent(agent_conf(tmp_path, L3Agent, ""), bus)
            agent.dataplane = dataplane  # the agent's public host seam
            await scenario(agent)
    asyncio.run(main())


def full(agent: L3Agent) -> Awaitable[None]:
    return agent.sync(True, set())


def test_interfaces_and_gateway_hold_their_addresses_and_snat_hides_the_subnet(
        tmp_path, server):
    host = FakeRouterDataplane()
    run(tmp_path, server, host, full)
    assert host.addresses(ROUTER) == {INTERFACE_DEVICE: ("10.0.0.1/24",),
                                      GATEWAY_DEVICE: ("203.0.113.10/24",)}
    assert ("0.0.0.0/0", "203.0.113.1") in host.routers[ROUTER].routes
    assert host.snat(ROUTER, "10.0.0.5", GATEWAY_DEVICE) == "203.0.113.10"


def test_without_snat_the_subnet_leaves_as_it_is(tmp_path, server):
    server.routers[ROUTER]["enable_snat"] = False
    host = FakeRouterDataplane()
    run(tmp_path, server, host, full)
    assert host.snat(ROUTER, "10.0.0.5", GATEWAY_DEVICE) is None


def test_a_floating_ip_is_carried_translated_both_ways_and_reported(tmp_path, server):
    host = FakeRouterDataplane()

    async def scenario(agent):
        await full(agent)
        assert host.dnat(ROUTER, "203.0.113.20") is None
        server.routers[ROUTER]["_floatingips"] = [floating_ip()]
        await agent.sync(False, {("router", ROUTER)})

    run(tmp_path, server, host, scenario)
    assert "203.0.113.20/32" in host.addresses(ROUTER)[GATEWAY_DEVICE]
    assert host.dnat(ROUTER, "203.0.113.20") == "10.0.0.5"
    assert host.snat(ROUTER, "10.0.0.5", GATEWAY_DEVICE) == "203.0.113.20"
    assert host.snat(ROUTER, "10.0.0.6", GATEWAY_DEVICE) == "203.0.113.10"
    assert server.fip_status == {FIP: "ACTIVE"}


def test_a_disassociated_floating_ip_goes_and_is_reported_down(tmp_path, server):
    server.routers[ROUTER]["_floatingips"] = [floating_ip()]
    host = FakeRouterDataplane()

    async def scenario(agent):
        await full(agent)
        server.routers[ROUTER]["_floatingips"] = []
        await agent.sync(False, {("router", ROUTER)})

    run(tmp_path, server, host, scenario)
    assert host.dnat(ROUTER, "203.0.113.20") is None
    assert server.fip_status == {FIP: "DOWN"}


def test_a_router_deleted_or_moved_away_is_taken_down(tmp_path, server):
    host = FakeRouterDataplane()

    async def scenario(agent):
        await full(agent)
        del server.routers[ROUTER]
        await agent.sync(False, {("router", ROUTER)})

    run(tmp_path, server, host, scenario)
    assert host.present() == set()


def test_a_router_deleted_while_the_agent_was_down_goes_at_the_first_sync(tmp_path, server):
    host = FakeRouterDataplane()
    run(tmp_path, server, host, full)
    del server.routers[ROUTER]
    run(tmp_path, server, host, full)  # a restarted agent: it finds the leftover
    assert host.present() == set()


def test_a_restarted_agent_converges_to_the_same_routers_and_writes_nothing(
        tmp_path, server):
    server.routers[ROUTER]["_floatingips"] = [floating_ip()]
    host = FakeRouterDataplane()
    run(tmp_path, server, host, full)
    before, writes = host.state(), host.writes
    run(tmp_path, server, host, full)
    assert host.state() == before and host.writes == writes


def test_a_change_and_its_reversal_leave_the_router_as_it_was(tmp_path, server):
    host = FakeRouterDataplane()

    async def scenario(agent):
        await full(agent)
        before = host.state()
        data = server.routers[ROUTER]
        data["_floatingips"] = [floating_ip()]
        data["routes"] = [{"destination": "192.168.0.0/24", "nexthop": "10.0.0.254"}]
        await agent.sync(False, {("router", ROUTER)})
        assert host.state() != before
        data["_floatingips"], data["routes"] = [], []
        await agent.sync(False, {("router", ROUTER)})
        assert host.state() == before

    run(tmp_path, server, host, scenario)


def test_the_extensions_state_is_the_routers_after_a_full_sync(tmp_path, server):
    async def scenario(agent: L3Agent) -> None:
        state = agent.extension_handles().state
        await agent.sync(True, set())
        assert state is agent.routers and set(state) == {ROUTER}

    run(tmp_path, server, FakeRouterDataplane(), scenario)
