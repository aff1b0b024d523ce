"""openstacksdk and the ``openstack`` CLI on agents and availability zones.

The agents are reported into the server's database beforehand, as their
state reports would make them."""

from __future__ import annotations

import pytest
from openstack import exceptions as sdk_exc

from tests.api.agent_reports import DHCP, L3, OVS, Reporter
from tests.compat.cli import run_scenario

ZONE = "az-compat"


@pytest.fixture(scope="module")
def reported(noauth_server) -> dict[str, str]:
    """host -> agent id: a DHCP and an L3 agent in ZONE, an OVS agent in none."""
    reporter = Reporter(noauth_server.db_url)
    try:
        return {
            "compat-dhcp": reporter.agent("compat-dhcp", DHCP, availability_zone=ZONE),
            "compat-l3": reporter.agent("compat-l3", L3, availability_zone=ZONE),
            "compat-ovs": reporter.agent("compat-ovs", OVS),
            "sdk-ovs": reporter.agent("sdk-ovs", OVS),
        }
    finally:
        reporter.close()


def test_sdk_agents(conn, reported):
    listed = {a.host: a for a in conn.network.agents()}
    assert {h: a.id for h, a in listed.items()} == reported
    dhcp = conn.network.get_agent(reported["compat-dhcp"])
    assert (dhcp.agent_type, dhcp.availability_zone, dhcp.is_alive) == (DHCP, ZONE, True)
    assert dhcp.is_admin_state_up is True and dhcp.configuration
    assert dhcp.last_heartbeat_at and dhcp.resources_synced is None
    assert [a.id for a in conn.network.agents(agent_type=L3)] == [reported["compat-l3"]]
    agent = conn.network.update_agent(reported["sdk-ovs"], is_admin_state_up=False,
                                      description="draining")
    assert (agent.is_admin_state_up, agent.description) == (False, "draining")
    conn.network.delete_agent(reported["sdk-ovs"], ignore_missing=False)
    with pytest.raises(sdk_exc.NotFoundException):
        conn.network.get_agent(reported["sdk-ovs"])


def test_sdk_availability_zones(conn, reported):
    found = {(z.name, z.resource, z.state) for z in conn.network.availability_zones()}
    assert found == {(ZONE, "network", "available"), (ZONE, "router", "available")}
    net = conn.network.create_network(name="sdk-az-net", availability_zone_hints=[ZONE])
    assert net.availability_zone_hints == [ZONE] and net.availability_zones == []
    router = conn.network.create_router(name="sdk-az-router", availability_zone_hints=[ZONE])
    assert router.availability_zone_hints == [ZONE]
    conn.network.delete_router(router)
    conn.network.delete_network(net)


@pytest.fixture(scope="module")
def cli(reported, clouds_yaml, tmp_path_factory):
    ovs = reported["compat-ovs"]
    scenario = [
        ("agents", "network agent list -f json"),
        ("agents-dhcp", "network agent list --agent-type dhcp -f json"),
        ("agents-host", "network agent list --host compat-l3 -f json"),
        ("disable", f"network agent set --disable --description spare {ovs}"),
        ("show", f"network agent show {ovs} -f json"),
        ("zones", "availability zone list --network --long -f json"),
        ("net", f"network create cli-az-net --availability-zone-hint {ZONE} -f json"),
        ("router", f"router create cli-az-router --availability-zone-hint {ZONE} -f json"),
        ("delete", f"network agent delete {ovs}"),
        ("agents-after", "network agent list --host compat-ovs -f json"),
    ]
    return run_scenario(scenario, clouds_yaml, tmp_path_factory.mktemp("home"))


def test_cli_agents(cli, reported):
    hosts = {row["Host"]: row for row in cli.json("agents")}
    assert {"compat-dhcp", "compat-l3", "compat-ovs"} <= set(hosts)
    assert hosts["compat-dhcp"]["Availability Zone"] == ZONE
    assert hosts["compat-dhcp"]["Alive"] is True and hosts["compat-dhcp"]["State"] is True
    assert [row["ID"] for row in cli.json("agents-dhcp")] == [reported["compat-dhcp"]]
    assert [row["ID"] for row in cli.json("agents-host")] == [reported["compat-l3"]]
    cli.quiet("disable")
    shown = cli.json("show")
    assert (shown["admin_state_up"], shown["description"]) == (False, "spare")
    cli.quiet("delete")
    assert cli.json("agents-after") == []


def test_cli_availability_zones(cli):
    zones = {(row["Zone Name"], row["Zone Resource"], row["Zone Status"])
             for row in cli.json("zones")}
    assert zones == {(ZONE, "network", "available"), (ZONE, "router", "available")}
    assert cli.json("net")["availability_zone_hints"] == [ZONE]
    assert cli.json("router")["availability_zone_hints"] == [ZONE]
