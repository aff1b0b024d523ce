"""Availability zones: made by the agents' reports (DHCP agents: network zones, L3
agents: router zones), and the zones networks and routers ask for."""

from __future__ import annotations

import uuid

import pytest

from tests.api.agent_reports import DHCP, L3, OVS, Reporter, ago, unique_host
from tests.harness import create_database, expect_error, start_server


@pytest.fixture(scope="module")
def reporter(server):
    made = Reporter(server.db_url)
    yield made
    made.close()


def zone_name() -> str:
    return f"az-{uuid.uuid4().hex[:10]}"


def zones(client, **params) -> list[dict]:
    resp = client.get("/v2.0/availability_zones", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()["availability_zones"]


def not_found(zone: str) -> str:
    return f"AvailabilityZone {zone} could not be found."


@pytest.fixture
def zone(reporter) -> str:
    """A zone with a DHCP and an L3 agent: a network zone and a router zone."""
    name = zone_name()
    reporter.report(unique_host(), DHCP, availability_zone=name)
    reporter.report(unique_host(), L3, availability_zone=name)
    return name


# --- the zones ---------------------------------------------------------------------------

def test_dhcp_and_l3_agents_make_network_and_router_zones(admin, reporter, zone):
    assert sorted(zones(admin, name=zone), key=lambda z: z["resource"]) == [
        {"name": zone, "resource": "network", "state": "available"},
        {"name": zone, "resource": "router", "state": "available"}]
    other = zone_name()
    reporter.report(unique_host(), OVS, availability_zone=other)  # L2 agents make none
    reporter.report(unique_host(), "Metadata agent", availability_zone=other)
    assert zones(admin, name=other) == []


def test_a_zone_is_available_while_one_of_its_agents_is_enabled(admin, reporter):
    name = zone_name()
    first = reporter.agent(unique_host(), DHCP, availability_zone=name)
    second = reporter.agent(unique_host(), DHCP, availability_zone=name)
    admin.put(f"/v2.0/agents/{first}", json={"agent": {"admin_state_up": False}})
    assert zones(admin, name=name) == [
        {"name": name, "resource": "network", "state": "available"}]
    # a dead agent still counts: only admin_state_up does, as in Neutron
    reporter.set_times(second, heartbeat_timestamp=ago(3600))
    assert zones(admin, name=name)[0]["state"] == "available"
    admin.put(f"/v2.0/agents/{second}", json={"agent": {"admin_state_up": False}})
    assert zones(admin, name=name) == [
        {"name": name, "resource": "network", "state": "unavailable"}]
    admin.delete(f"/v2.0/agents/{first}")
    admin.delete(f"/v2.0/agents/{second}")
    assert zones(admin, name=name) == []


def test_zone_filters(admin, reporter, zone):
    assert [z["resource"] for z in zones(admin, name=zone, resource="router")] == ["router"]
    assert zones(admin, name=zone, state="unavailable") == []
    assert len(zones(admin, name=zone, state="available")) == 2
    both = zones(admin, name=[zone, "no-such-zone"], resource=["network", "router"])
    assert len(both) == 2
    expect_error(admin.get("/v2.0/availability_zones", params={"hosts": "x"}), 400,
                 "HTTPBadRequest", "['hosts'] is invalid attribute for filtering")
    expect_error(admin.get("/v2.0/availability_zones",
                           params={"sort_key": "name", "sort_dir": "asc"}),
                 400, "HTTPBadRequest", "['name'] is invalid attribute for sort_keys")


def test_zones_are_not_paged(admin, zone):
    resp = admin.get("/v2.0/availability_zones", params={"name": zone, "limit": 1})
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["availability_zones"]) == 2
    assert "availability_zones_links" not in resp.json()


def test_only_admins_see_zones(user, zone):
    assert zones(user, name=zone) == [] and zones(user) == []


def test_extensions_are_announced(user):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert {"availability_zone", "availability_zone_filter", "network_availability_zone",
            "router_availability_zone"} <= aliases


# --- networks ----------------------------------------------------------------------------

def test_network_without_hints(user):
    net = user.network()
    assert net["availability_zone_hints"] == [] and net["availability_zones"] == []


def test_network_hints_name_network_zones(user, reporter, zone):
    second = zone_name()
    reporter.report(unique_host(), DHCP, availability_zone=second)
    net = user.network(availability_zone_hints=[second, zone])
    assert net["availability_zone_hints"] == [second, zone]  # kept as given
    assert net["availability_zones"] == []  # no DHCP agent hosts it yet
    assert user.show("networks", net["id"]) == net
    [listed] = user.get("/v2.0/networks", params={"id": net["id"]}).json()["networks"]
    assert listed == net
    assert user.delete(f"/v2.0/networks/{net['id']}").status_code == 204


def test_network_hints_must_be_known_network_zones(user, reporter):
    unknown = zone_name()
    expect_error(user.post("/v2.0/networks", json={"network": {
        "availability_zone_hints": [unknown]}}), 404, "AvailabilityZoneNotFound",
        not_found(unknown))
    router_only = zone_name()
    reporter.report(unique_host(), L3, availability_zone=router_only)
    expect_error(user.post("/v2.0/networks", json={"network": {
        "name": "refused", "availability_zone_hints": [router_only]}}), 404,
        "AvailabilityZoneNotFound", not_found(router_only))
    # nothing was left behind
    assert user.get("/v2.0/networks", params={"name": "refused"}).json()["networks"] == []


def test_zone_names_compare_exactly(admin, user, reporter):
    upper = zone_name().upper()
    reporter.report(unique_host(), DHCP, availability_zone=upper)
    reporter.report(unique_host(), DHCP, availability_zone=upper.lower())
    assert sorted(z["name"] for z in zones(admin, resource="network",
                                           name=[upper, upper.lower()])) == [
        upper, upper.lower()]
    other = zone_name().upper()
    reporter.report(unique_host(), DHCP, availability_zone=other)
    expect_error(user.post("/v2.0/networks", json={"network": {
        "availability_zone_hints": [other.lower()]}}), 404, "AvailabilityZoneNotFound",
        not_found(other.lower()))


@pytest.mark.parametrize(("hints", "type_", "message"), [
    ("az1", "HTTPBadRequest",
     "Invalid input for availability_zone_hints. Reason: 'az1' is not a list."),
    (["az1", "az1"], "HTTPBadRequest",
     "Invalid input for availability_zone_hints. Reason: Duplicate items in the list: 'az1'."),
    ([1], "HTTPBadRequest",
     "Invalid input for availability_zone_hints. Reason: '1' is not a valid string."),
    ([f"az-{i:03}" for i in range(40)], "InvalidInput",
     "Invalid input for operation: Too many availability_zone_hints specified."),
])
def test_network_hints_are_validated(user, hints, type_, message):
    expect_error(user.post("/v2.0/networks", json={"network": {
        "availability_zone_hints": hints}}), 400, type_, message)


def test_network_hints_are_set_only_at_create(user, zone):
    net = user.network(availability_zone_hints=[zone])
    expect_error(user.put(f"/v2.0/networks/{net['id']}", json={"network": {
        "availability_zone_hints": []}}), 400, "HTTPBadRequest",
        "Cannot update read-only attribute availability_zone_hints")
    expect_error(user.post("/v2.0/networks", json={"network": {
        "availability_zones": [zone]}}), 400, "HTTPBadRequest",
        "Attribute 'availability_zones' not allowed in POST")
    for name in ("availability_zone_hints", "availability_zones"):
        expect_error(user.get("/v2.0/networks", params={name: zone}), 400, "HTTPBadRequest",
                     f"['{name}'] is invalid attribute for filtering")


# --- routers -----------------------------------------------------------------------------

def test_router_hints_name_router_zones_and_are_sorted(user, reporter, zone):
    first = f"a{zone}"  # sorts before ``zone``
    reporter.report(unique_host(), L3, availability_zone=first)
    resp = user.post("/v2.0/routers", json={"router": {
        "availability_zone_hints": [zone, first]}})
    assert resp.status_code == 201, resp.text
    router = resp.json()["router"]
    assert router["availability_zone_hints"] == [first, zone]
    # as in Neutron, the router is given an agent once made: its zone shows after
    assert router["availability_zones"] == []
    shown = user.show("routers", router["id"])
    assert len(shown.pop("availability_zones")) == 1
    router.pop("availability_zones")
    assert shown == router
    assert user.delete(f"/v2.0/routers/{router['id']}").status_code == 204


def test_router_hints_must_be_known_router_zones(user, reporter):
    network_only = zone_name()
    reporter.report(unique_host(), DHCP, availability_zone=network_only)
    expect_error(user.post("/v2.0/routers", json={"router": {
        "name": "refused", "availability_zone_hints": [network_only]}}), 404,
        "AvailabilityZoneNotFound", not_found(network_only))
    assert user.get("/v2.0/routers", params={"name": "refused"}).json()["routers"] == []
    expect_error(user.post("/v2.0/routers", json={"router": {
        "availability_zone_hints": ["x", "x"]}}), 400, "HTTPBadRequest",
        "Invalid input for availability_zone_hints. Reason: Duplicate items in the list: 'x'.")


def test_router_hints_are_set_only_at_create(user, zone):
    resp = user.post("/v2.0/routers", json={"router": {"availability_zone_hints": [zone]}})
    router = resp.json()["router"]
    expect_error(user.put(f"/v2.0/routers/{router['id']}", json={"router": {
        "availability_zone_hints": []}}), 400, "HTTPBadRequest",
        "Cannot update read-only attribute availability_zone_hints")
    renamed = user.put(f"/v2.0/routers/{router['id']}", json={"router": {"name": "r2"}})
    assert renamed.json()["router"]["availability_zone_hints"] == [zone]


@pytest.fixture(scope="module")
def default_zone_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("default-zones")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="trusted_headers",
                       extra="default_availability_zones = az-default\n")
    yield srv
    srv.stop()
    drop()


def test_routers_without_hints_get_the_default_zones(default_zone_server, project):
    """[DEFAULT] default_availability_zones stand in for missing hints, and are checked."""
    user = default_zone_server.client(project, roles=("member",))
    expect_error(user.post("/v2.0/routers", json={"router": {}}), 404,
                 "AvailabilityZoneNotFound", not_found("az-default"))
    reporter = Reporter(default_zone_server.db_url)
    try:
        reporter.report(unique_host(), L3, availability_zone="az-default")
    finally:
        reporter.close()
    router = user.create("routers")
    assert router["availability_zone_hints"] == ["az-default"]
    # networks keep theirs as given: the default only guides their scheduling
    assert user.network()["availability_zone_hints"] == []
