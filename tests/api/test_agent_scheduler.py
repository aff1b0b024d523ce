"""Which agents host which networks and routers: automatic scheduling, the
admins' URLs (dhcp-networks, dhcp-agents, l3-routers, l3-agents), the zones it
gives networks and routers, and failover away from dead agents.

The shared servers hold other tests' agents, alive for a while: every test
here puts its agents in a zone of its own and its networks and routers in
that zone (availability_zone_hints), and removes its agents when done.
"""

from __future__ import annotations

import datetime
import time
import uuid

import pytest
from sqlalchemy import delete

from neutrino.db import models
from tests.api.agent_reports import DHCP, L3, Reporter, ago, unique_host
from tests.harness import create_database, expect_error, start_server

MISSING = "00000000-0000-0000-0000-000000000000"


def later(seconds: int) -> datetime.datetime:
    return ago(-seconds)


class Agents:
    """The test's agents, in its own zone; removed at the end."""

    def __init__(self, reporter: Reporter):
        self.reporter = reporter
        self.zone = f"az-{uuid.uuid4().hex[:10]}"
        self.ids: list[str] = []

    def add(self, agent_type: str, zone: str | None = None, **extra) -> str:
        extra.setdefault("configurations", {})
        agent_id = self.reporter.agent(unique_host(), agent_type,
                                       availability_zone=zone or self.zone, **extra)
        self.ids.append(agent_id)
        return agent_id

    def remove(self) -> None:
        t = models.agents
        self.reporter.db.write(lambda conn: conn.execute(delete(t).where(t.c.id.in_(self.ids))))


@pytest.fixture(scope="module")
def reporter(server):
    made = Reporter(server.db_url)
    yield made
    made.close()


@pytest.fixture
def agents(reporter):
    made = Agents(reporter)
    yield made
    made.remove()


def dhcp_agents_of(client, network_id: str) -> list[str]:
    resp = client.get(f"/v2.0/networks/{network_id}/dhcp-agents")
    assert resp.status_code == 200, resp.text
    return [a["id"] for a in resp.json()["agents"]]


def networks_of(client, agent_id: str) -> list[str]:
    resp = client.get(f"/v2.0/agents/{agent_id}/dhcp-networks")
    assert resp.status_code == 200, resp.text
    return [n["id"] for n in resp.json()["networks"]]


def l3_agents_of(client, router_id: str) -> list[str]:
    resp = client.get(f"/v2.0/routers/{router_id}/l3-agents")
    assert resp.status_code == 200, resp.text
    return [a["id"] for a in resp.json()["agents"]]


def routers_of(client, agent_id: str) -> list[str]:
    resp = client.get(f"/v2.0/agents/{agent_id}/l3-routers")
    assert resp.status_code == 200, resp.text
    return [r["id"] for r in resp.json()["routers"]]


def zoned_network(client, zone: str, cidr: str | None = "10.0.0.0/24", **subnet) -> dict:
    net = client.network(availability_zone_hints=[zone])
    if cidr:
        client.subnet(net["id"], cidr, **subnet)
    return net


# --- DHCP: automatic scheduling ----------------------------------------------------------

def test_a_dhcp_subnet_brings_a_dhcp_agent(admin, agents):
    agent = agents.add(DHCP)
    net = zoned_network(admin, agents.zone, cidr=None)
    assert dhcp_agents_of(admin, net["id"]) == []  # no subnet, no DHCP to serve
    admin.subnet(net["id"], "10.0.0.0/24")
    assert dhcp_agents_of(admin, net["id"]) == [agent]
    assert networks_of(admin, agent) == [net["id"]]
    assert admin.show("networks", net["id"])["availability_zones"] == [agents.zone]
    [shown] = admin.get(f"/v2.0/networks/{net['id']}/dhcp-agents").json()["agents"]
    assert shown["agent_type"] == DHCP and shown["alive"] is True


def test_subnets_without_dhcp_bring_none_until_dhcp_is_enabled(admin, agents):
    agent = agents.add(DHCP)
    net = zoned_network(admin, agents.zone, cidr=None)
    subnet = admin.subnet(net["id"], "10.0.0.0/24", enable_dhcp=False)
    admin.port(net["id"])
    assert dhcp_agents_of(admin, net["id"]) == []
    resp = admin.put(f"/v2.0/subnets/{subnet['id']}", json={"subnet": {"enable_dhcp": True}})
    assert resp.status_code == 200, resp.text
    assert dhcp_agents_of(admin, net["id"]) == [agent]


def test_one_agent_per_network_the_least_loaded(admin, agents):
    first, second = agents.add(DHCP), agents.add(DHCP)
    a = zoned_network(admin, agents.zone)
    [host_a] = dhcp_agents_of(admin, a["id"])
    b = zoned_network(admin, agents.zone)
    assert dhcp_agents_of(admin, b["id"]) == [{first: second, second: first}[host_a]]


def test_dead_disabled_and_other_zones_agents_get_nothing(admin, agents, reporter):
    dead = agents.add(DHCP)
    reporter.set_times(dead, heartbeat_timestamp=ago(3600))
    disabled = agents.add(DHCP)
    assert admin.put(f"/v2.0/agents/{disabled}",
                     json={"agent": {"admin_state_up": False}}).status_code == 200
    agents.add(DHCP, zone=f"{agents.zone}-other")
    net = zoned_network(admin, agents.zone)
    assert dhcp_agents_of(admin, net["id"]) == []
    assert admin.show("networks", net["id"])["availability_zones"] == []


# --- DHCP: the admins' say -----------------------------------------------------------------

def test_remove_and_add_a_network(admin, agents):
    agent = agents.add(DHCP)
    net = zoned_network(admin, agents.zone)
    url = f"/v2.0/agents/{agent}/dhcp-networks"
    assert admin.delete(f"{url}/{net['id']}").status_code == 204
    assert dhcp_agents_of(admin, net["id"]) == []
    expect_error(admin.delete(f"{url}/{net['id']}"), 409, "NetworkNotHostedByDhcpAgent",
                 f"The network {net['id']} is not hosted by the DHCP agent {agent}.")
    resp = admin.post(url, json={"network_id": net["id"]})
    assert resp.status_code == 201 and resp.json() is None
    assert networks_of(admin, agent) == [net["id"]]
    expect_error(admin.post(url, json={"network_id": net["id"]}), 409,
                 "NetworkHostedByDHCPAgent",
                 f"The network {net['id']} has been already hosted by the DHCP Agent "
                 f"{agent}.")


def test_an_admin_may_add_more_agents_than_dhcp_agents_per_network(admin, agents):
    first, second = agents.add(DHCP), agents.add(DHCP)
    net = zoned_network(admin, agents.zone)
    [other] = {first, second} - set(dhcp_agents_of(admin, net["id"]))
    resp = admin.post(f"/v2.0/agents/{other}/dhcp-networks", json={"network_id": net["id"]})
    assert resp.status_code == 201
    assert sorted(dhcp_agents_of(admin, net["id"])) == sorted([first, second])


def test_bad_dhcp_scheduling_requests(admin, user, agents):
    dhcp, l3 = agents.add(DHCP), agents.add(L3)
    net = zoned_network(admin, agents.zone, cidr=None)
    body = {"network_id": net["id"]}
    expect_error(admin.post(f"/v2.0/agents/{l3}/dhcp-networks", json=body), 400,
                 "InvalidDHCPAgent",
                 f"Agent {l3} is not a valid DHCP Agent or has been disabled")
    expect_error(admin.post(f"/v2.0/agents/{MISSING}/dhcp-networks", json=body), 404,
                 "AgentNotFound")
    expect_error(admin.post(f"/v2.0/agents/{dhcp}/dhcp-networks",
                            json={"network_id": MISSING}), 404, "NetworkNotFound")
    for bad in ({}, {"network_id": 7}, {"network_id": "nope"}):
        expect_error(admin.post(f"/v2.0/agents/{dhcp}/dhcp-networks", json=bad), 400,
                     "HTTPBadRequest")
    expect_error(admin.get(f"/v2.0/networks/{MISSING}/dhcp-agents"), 404, "NetworkNotFound")
    expect_error(admin.get(f"/v2.0/agents/{MISSING}/dhcp-networks"), 404, "AgentNotFound")
    expect_error(admin.put(f"/v2.0/agents/{dhcp}/dhcp-networks", json=body), 405,
                 "HTTPMethodNotAllowed")
    expect_error(admin.post(f"/v2.0/networks/{net['id']}/dhcp-agents", json={}), 405,
                 "HTTPMethodNotAllowed")
    assert admin.put(f"/v2.0/agents/{dhcp}", json={"agent": {"admin_state_up": False}}
                     ).status_code == 200
    expect_error(admin.post(f"/v2.0/agents/{dhcp}/dhcp-networks", json=body), 400,
                 "InvalidDHCPAgent")
    # only admins see or change any of it
    own = user.network()
    for resp in (user.get(f"/v2.0/networks/{own['id']}/dhcp-agents"),
                 user.get(f"/v2.0/agents/{dhcp}/dhcp-networks"),
                 user.post(f"/v2.0/agents/{dhcp}/dhcp-networks", json={"network_id": own["id"]}),
                 user.delete(f"/v2.0/agents/{dhcp}/dhcp-networks/{own['id']}")):
        expect_error(resp, 403, "PolicyNotAuthorized")


# --- L3 -----------------------------------------------------------------------------------

def zoned_router(client, zone: str, **attrs) -> dict:
    return client.create("routers", availability_zone_hints=[zone], **attrs)


def test_a_router_gets_an_l3_agent_when_made(admin, agents):
    agent = agents.add(L3)
    router = zoned_router(admin, agents.zone)
    assert l3_agents_of(admin, router["id"]) == [agent]
    assert routers_of(admin, agent) == [router["id"]]
    assert admin.show("routers", router["id"])["availability_zones"] == [agents.zone]


def test_agents_serving_only_routers_with_gateways(admin, agents):
    agents.add(L3, configurations={"handle_internal_only_routers": False})
    router = zoned_router(admin, agents.zone)
    assert l3_agents_of(admin, router["id"]) == []
    ext = admin.network(**{"router:external": True})
    admin.subnet(ext["id"], "192.0.2.0/24")
    resp = admin.put(f"/v2.0/routers/{router['id']}", json={"router": {
        "external_gateway_info": {"network_id": ext["id"]}}})
    assert resp.status_code == 200, resp.text
    assert len(l3_agents_of(admin, router["id"])) == 1


def test_remove_and_add_a_router(admin, agents):
    first = agents.add(L3)
    router = zoned_router(admin, agents.zone)
    second = agents.add(L3)
    url = f"/v2.0/agents/{first}/l3-routers"
    expect_error(admin.post(f"/v2.0/agents/{second}/l3-routers",
                            json={"router_id": router["id"]}), 409, "RouterHostedByL3Agent",
                 f"The router {router['id']} has been already hosted by the L3 Agent "
                 f"{first}.")
    # adding it where it is changes nothing
    resp = admin.post(url, json={"router_id": router["id"]})
    assert resp.status_code == 201 and resp.json() is None
    assert admin.delete(f"{url}/{router['id']}").status_code == 204
    assert l3_agents_of(admin, router["id"]) == []
    expect_error(admin.delete(f"{url}/{router['id']}"), 409, "RouterNotHostedByL3Agent")
    assert admin.post(f"/v2.0/agents/{second}/l3-routers",
                      json={"router_id": router["id"]}).status_code == 201
    assert l3_agents_of(admin, router["id"]) == [second]


def test_bad_l3_scheduling_requests(admin, user, agents):
    dhcp, l3 = agents.add(DHCP), agents.add(L3)
    router = admin.create("routers")
    body = {"router_id": router["id"]}
    expect_error(admin.post(f"/v2.0/agents/{dhcp}/l3-routers", json=body), 400,
                 "InvalidL3Agent", f"Agent {dhcp} is not a L3 Agent or has been disabled")
    expect_error(admin.post(f"/v2.0/agents/{l3}/l3-routers", json={"router_id": MISSING}),
                 404, "RouterNotFound")
    expect_error(admin.get(f"/v2.0/routers/{MISSING}/l3-agents"), 404, "RouterNotFound")
    expect_error(admin.post(f"/v2.0/agents/{l3}/l3-routers", json={}), 400, "HTTPBadRequest")
    for resp in (user.get(f"/v2.0/agents/{l3}/l3-routers"),
                 user.post(f"/v2.0/agents/{l3}/l3-routers", json=body),
                 user.delete(f"/v2.0/agents/{l3}/l3-routers/{router['id']}")):
        expect_error(resp, 403, "PolicyNotAuthorized")


# --- failover -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def failover_server(tmp_path_factory):
    """A server whose agents count as dead after 2 s, moving routers too."""
    tmp = tmp_path_factory.mktemp("failover")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra=(
        "agent_down_time = 2\nallow_automatic_l3agent_failover = true\n"
        "service_plugins = router\n"))
    reporter = Reporter(url)
    yield srv, reporter
    reporter.close()
    srv.stop()
    drop()


def wait_for(check, seconds: float = 20.0):
    deadline = time.monotonic() + seconds
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)
    return value


def test_networks_and_routers_leave_dead_agents(failover_server):
    server, reporter = failover_server
    client = server.client("p1")
    # agents kept alive by a heartbeat in the future, killed by one in the past
    dhcp_a = reporter.agent(unique_host(), DHCP, configurations={})
    l3_a = reporter.agent(unique_host(), L3, configurations={})
    for agent_id in (dhcp_a, l3_a):
        reporter.set_times(agent_id, heartbeat_timestamp=later(3600))
    net = client.network()
    client.subnet(net["id"], "10.0.0.0/24")
    router = client.create("routers")
    assert dhcp_agents_of(client, net["id"]) == [dhcp_a]
    assert l3_agents_of(client, router["id"]) == [l3_a]
    dhcp_b = reporter.agent(unique_host(), DHCP, configurations={})
    l3_b = reporter.agent(unique_host(), L3, configurations={})
    for agent_id in (dhcp_b, l3_b):
        reporter.set_times(agent_id, heartbeat_timestamp=later(3600))
    for agent_id in (dhcp_a, l3_a):
        reporter.set_times(agent_id, heartbeat_timestamp=ago(3600))
    wait_for(lambda: dhcp_agents_of(client, net["id"]) == [dhcp_b])
    wait_for(lambda: l3_agents_of(client, router["id"]) == [l3_b])
    assert networks_of(client, dhcp_a) == [] and routers_of(client, l3_a) == []
