"""HA routers through the ``openstack`` CLI (``router create --ha``, ``network
agent list --router ... --long``) and openstacksdk (``is_ha``, the agents
hosting a router with their ``ha_state``); two L3 agents are state reports.
Router flavors too (l3-flavors): a flavor whose profile names the ha or the
single_node provider, and routers made of it (``router create --flavor``)."""

from __future__ import annotations

import openstack
import openstack.exceptions
import pytest

from tests.api.agent_reports import L3, Reporter, unique_host
from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server


@pytest.fixture(scope="module")
def ha_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-ha")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra=(
        "service_plugins = router,flavors\n[service_providers]\n"
        "service_provider = L3_ROUTER_NAT:single_node:single_node\n"
        "service_provider = L3_ROUTER_NAT:ha:ha\n"))
    reporter = Reporter(srv.db_url)
    for _ in range(2):
        reporter.agent(unique_host(), L3)
    yield srv
    reporter.close()
    srv.stop()
    drop()


def test_openstacksdk(ha_server):
    conn = openstack.connection.Connection(auth_type="none",
                                           network_endpoint_override=ha_server.url)
    router = conn.network.create_router(name="sdk-ha", is_ha=True)
    assert router.is_ha is True
    agents = list(conn.network.routers_hosting_l3_agents(router))
    assert len(agents) == 2 and {a.ha_state for a in agents} == {"standby"}
    conn.network.update_router(router, is_admin_state_up=False)
    assert conn.network.update_router(router, is_ha=False).is_ha is False
    conn.network.delete_router(router)
    conn.close()


def test_openstack_cli(ha_server, tmp_path_factory):
    clouds = write_clouds_yaml(tmp_path_factory.mktemp("clouds"), ha_server.url)
    run = run_scenario([
        ("create", "router create --ha cli-ha -f json"),
        ("agents", "network agent list --router cli-ha --long -f json"),
        ("disable", "router set --disable cli-ha"),
        ("legacy", "router set --no-ha cli-ha"),
        ("show", "router show cli-ha -f json"),
    ], clouds, tmp_path_factory.mktemp("home"))
    assert run.json("create")["ha"] is True
    rows = run.json("agents")
    assert len(rows) == 2 and {row["HA State"] for row in rows} == {"standby"}, rows
    run.quiet("disable")
    run.quiet("legacy")
    assert run.json("show")["ha"] is False


def test_openstacksdk_flavored_router(ha_server):
    conn = openstack.connection.Connection(auth_type="none",
                                           network_endpoint_override=ha_server.url)
    net = conn.network
    profile = net.create_service_profile(driver="ha")
    flavor = net.create_flavor(name="sdk-ha-flavor", service_type="L3_ROUTER_NAT")
    net.associate_flavor_with_service_profile(flavor, profile)
    router = net.create_router(name="sdk-flavored", flavor_id=flavor.id)
    assert (router.flavor_id, router.is_ha) == (flavor.id, True)
    assert [r.id for r in net.routers(flavor_id=flavor.id)] == [router.id]
    with pytest.raises(openstack.exceptions.ConflictException, match="is used by"):
        net.delete_flavor(flavor, ignore_missing=False)
    net.delete_router(router)
    net.delete_flavor(flavor, ignore_missing=False)
    conn.close()


def test_openstack_cli_flavored_router(ha_server, tmp_path_factory):
    clouds = write_clouds_yaml(tmp_path_factory.mktemp("clouds"), ha_server.url)
    home = tmp_path_factory.mktemp("home")
    made = run_scenario([
        ("profile", "network flavor profile create --driver single_node -f json"),
        ("flavor", "network flavor create --service-type L3_ROUTER_NAT cli-l3 -f json"),
    ], clouds, home)
    profile_id, flavor_id = made.json("profile")["id"], made.json("flavor")["id"]
    run = run_scenario([
        ("add", f"network flavor add profile cli-l3 {profile_id}"),
        ("create", "router create --flavor cli-l3 cli-flavored -f json"),
        ("show", "router show cli-flavored -f json"),
        ("in-use", "network flavor delete cli-l3"),
    ], clouds, home)
    run.quiet("add")
    created = run.json("create")
    assert (created["flavor_id"], created["ha"]) == (flavor_id, False)
    assert run.json("show")["flavor_id"] == flavor_id
    assert f"Flavor {flavor_id} is used by some service instance" in run.text("in-use")
