"""Highly available routers through the API (``l3-ha``): an admin's ``ha``,
the project's HA network, a port there per L3 agent that hosts the router,
``ha_state`` per agent in ``l3-agents``, conversion while disabled, and
Neutron's errors. The L3 agents are state reports made here (a server of
the module's own: the count of alive agents matters)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import delete, update

from neutrino.db import models
from tests.api.agent_reports import L3, Reporter, ago, unique_host
from tests.conftest import BACKENDS
from tests.harness import ApiClient, Server, create_database, expect_error, start_server

HA_INTERFACE = "network:router_ha_interface"


@pytest.fixture(scope="module", params=BACKENDS)
def ha_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"ha-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=(
        "service_plugins = router,ndp_proxy\nmax_l3_agents_per_router = 2\n"))
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def admin(ha_server: Server) -> ApiClient:
    return ha_server.client(f"p-{uuid.uuid4().hex[:8]}", roles=("admin", "member"))


@pytest.fixture
def agents(ha_server: Server):
    """Add L3 agents (by host); all removed at the end."""
    reporter = Reporter(ha_server.db_url)
    made: list[str] = []

    def add(count: int) -> list[str]:
        for _ in range(count):
            made.append(reporter.agent(unique_host(), L3))
        return list(made)

    yield add
    t = models.agents
    reporter.db.write(lambda conn: conn.execute(delete(t).where(t.c.id.in_(made))))
    reporter.close()


def ha_ports(admin: ApiClient, router_id: str) -> list[dict]:
    return admin.get("/v2.0/ports", params={"device_id": router_id,
                                            "device_owner": HA_INTERFACE}).json()["ports"]


def ha_networks(admin: ApiClient, project: str) -> list[dict]:
    return admin.get("/v2.0/networks", params={
        "name": f"HA network tenant {project}"}).json()["networks"]


def test_an_ha_router_on_two_agents(admin, agents, ha_server):
    aliases = {e["alias"] for e in admin.get("/v2.0/extensions").json()["extensions"]}
    assert "l3-ha" in aliases and "l3-flavors" not in aliases  # no flavors plugin here
    expect_error(admin.post("/v2.0/routers", json={"router": {"name": "r", "flavor_id": "x"}}),
                 400, "HTTPBadRequest", "Unrecognized attribute(s) 'flavor_id'")
    expect_error(admin.post("/v2.0/routers", json={"router": {"name": "r", "ha": True}}),
                 409, "HANotEnoughAvailableAgents")
    agent_ids = agents(3)
    router = admin.create("routers", name="r", ha=True)
    assert router["ha"] is True
    project = router["project_id"]
    [network] = ha_networks(admin, project)
    assert network["project_id"] == ""
    subnets = admin.get("/v2.0/subnets", params={"network_id": network["id"]}).json()
    assert [s["cidr"] for s in subnets["subnets"]] == ["169.254.192.0/18"]

    hosting = admin.get(f"/v2.0/routers/{router['id']}/l3-agents").json()["agents"]
    assert len(hosting) == 2  # max_l3_agents_per_router
    assert {a["id"] for a in hosting} <= set(agent_ids)
    assert {a["ha_state"] for a in hosting} == {"standby"}
    ports = ha_ports(admin, router["id"])
    assert sorted(p["binding:host_id"] for p in ports) == sorted(a["host"] for a in hosting)
    assert {p["network_id"] for p in ports} == {network["id"]}

    # a second HA router of the project shares its network, with another VR id
    other = admin.create("routers", name="r2", ha=True)
    assert len(ha_networks(admin, project)) == 1
    # a member sees no ha
    member = ha_server.client(project)
    assert "ha" not in member.show("routers", router["id"])
    assert member.post("/v2.0/routers", json={"router": {"name": "x", "ha": True}}
                       ).status_code == 403

    # converted only while disabled
    path = f"/v2.0/routers/{router['id']}"
    error = expect_error(admin.put(path, json={"router": {"ha": False}}), 400, "BadRequest")
    assert "admin_state_up to False" in error["message"]
    resp = admin.put(path, json={"router": {"ha": False, "admin_state_up": False}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["router"]["ha"] is False
    assert ha_ports(admin, router["id"]) == []
    hosting = admin.get(f"/v2.0/routers/{router['id']}/l3-agents").json()["agents"]
    assert all("ha_state" not in agent for agent in hosting)
    resp = admin.put(path, json={"router": {"ha": True}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["router"]["ha"] is True
    assert admin.put(path, json={"router": {"admin_state_up": True}}).status_code == 200
    assert len(ha_ports(admin, router["id"])) == 2

    # the last HA router gone, the HA network goes
    for made in (router, other):
        assert admin.delete(f"/v2.0/routers/{made['id']}").status_code == 204
    assert ha_networks(admin, project) == []
    assert admin.get("/v2.0/ports", params={"device_owner": HA_INTERFACE,
                                            "network_id": network["id"]}).json()["ports"] == []


def test_a_legacy_router_stays_on_one_agent(admin, agents):
    agents(3)
    router = admin.create("routers", name="legacy")
    assert router["ha"] is False
    hosting = admin.get(f"/v2.0/routers/{router['id']}/l3-agents").json()["agents"]
    assert len(hosting) == 1 and "ha_state" not in hosting[0]
    assert ha_ports(admin, router["id"]) == []
    assert ha_networks(admin, router["project_id"]) == []


def test_no_ndp_proxy_on_an_ha_router(admin, agents):
    """HA routers' devices have IPv6 off here: a proxy there would publish
    nothing, so it is refused."""
    agents(2)
    router = admin.create("routers", name="r", ha=True)
    error = expect_error(admin.post("/v2.0/ndp_proxies", json={"ndp_proxy": {
        "router_id": router["id"], "port_id": str(uuid.uuid4())}}), 409, "Conflicting")
    assert "highly available" in error["message"]
    assert admin.get("/v2.0/ndp_proxies", params={"router_id": router["id"]}
                     ).json()["ndp_proxies"] == []


def test_a_dead_agents_ha_state_is_unknown(admin, agents, ha_server):
    """As Neutron: whatever a dead agent last said of its role, ``l3-agents``
    shows it as unknown; the live one's role stays as reported."""
    agents(2)
    router = admin.create("routers", name="r", ha=True)
    path = f"/v2.0/routers/{router['id']}/l3-agents"
    hosting = admin.get(path).json()["agents"]
    assert len(hosting) == 2
    reporter = Reporter(ha_server.db_url)
    try:
        t = models.ha_router_agent_port_bindings
        reporter.db.write(lambda conn: conn.execute(  # as the agents reported it
            update(t).where(t.c.router_id == router["id"]).values(state="active")))
        assert {a["ha_state"] for a in admin.get(path).json()["agents"]} == {"active"}
        dead = hosting[0]["id"]
        reporter.set_times(dead, heartbeat_timestamp=ago(3600))
        states = {a["id"]: (a["alive"], a["ha_state"]) for a in admin.get(path).json()["agents"]}
        assert states == {dead: (False, "unknown"), hosting[1]["id"]: (True, "active")}
    finally:
        reporter.close()


def test_network_ha_makes_a_network_the_projects_ha_network(admin, agents, ha_server):
    """neutron-lib's ``network_ha``: ``ha`` given (by an admin) at a network's
    create makes it its project's HA network, as Neutron marks the ones it
    makes: the project's HA routers use it, a second is a 409; never shown."""
    aliases = {e["alias"] for e in admin.get("/v2.0/extensions").json()["extensions"]}
    assert "network_ha" in aliases
    project = uuid.uuid4().hex
    member = ha_server.client(project)
    assert member.post("/v2.0/networks", json={"network": {"name": "n", "ha": True}}
                       ).status_code == 403
    plain = admin.create("networks", name="plain", project_id=project, ha=False)
    network = admin.create("networks", name="mine", project_id=project, ha=True)
    assert "ha" not in network and "ha" not in admin.show("networks", network["id"])
    error = expect_error(admin.post("/v2.0/networks", json={"network": {
        "name": "again", "project_id": project, "ha": True}}), 409, "DuplicatedHANetwork")
    assert error["message"] == f"Project {project} already has a HA network."
    assert sorted(n["name"] for n in admin.get("/v2.0/networks", params={
        "project_id": project}).json()["networks"]) == ["mine", "plain"]
    admin.create("subnets", network_id=network["id"], project_id=project, ip_version=4,
                 cidr="169.254.64.0/24", enable_dhcp=False, gateway_ip=None)

    agents(2)
    router = admin.create("routers", name="r", project_id=project, ha=True)
    ports = ha_ports(admin, router["id"])
    assert len(ports) == 2 and {p["network_id"] for p in ports} == {network["id"]}
    assert ha_networks(admin, project) == []  # none of its own made
    assert plain["id"] not in {p["network_id"] for p in ports}


@pytest.fixture(scope="module", params=BACKENDS)
def ha_default_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"ha-default-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=(
        "service_plugins = router\nl3_ha = true\nl3_ha_network_type = vxlan\n"
        "[ml2_type_vxlan]\nvni_ranges = 4000:4010\n"))
    yield srv
    srv.stop()
    drop()


def test_l3_ha_makes_routers_ha_by_default_on_the_configured_type(ha_default_server):
    """``[DEFAULT] l3_ha = true``: a router made without ``ha`` is HA (a member
    cannot say otherwise; an admin can), its project's HA network of
    ``l3_ha_network_type`` (local is the tenant network type here)."""
    reporter = Reporter(ha_default_server.db_url)
    try:
        for _ in range(2):
            reporter.agent(unique_host(), L3)
        project = uuid.uuid4().hex
        member = ha_default_server.client(project)
        admin = ha_default_server.client(project, roles=("admin", "member"))
        router = member.create("routers", name="r")
        assert admin.show("routers", router["id"])["ha"] is True
        assert len(ha_ports(admin, router["id"])) == 2
        [network] = ha_networks(admin, project)
        assert network["provider:network_type"] == "vxlan"
        assert 4000 <= network["provider:segmentation_id"] <= 4010
        legacy = admin.create("routers", name="legacy", ha=False)
        assert legacy["ha"] is False and ha_ports(admin, legacy["id"]) == []
        tenant = admin.create("networks", name="n", project_id=project)
        assert tenant["provider:network_type"] == "local"
    finally:
        reporter.close()
