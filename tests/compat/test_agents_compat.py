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


# --- which agents host which networks and routers -------------------------------------------

SCHED_ZONE = "az-compat-sched"


@pytest.fixture(scope="module")
def scheduling_agents(noauth_server) -> dict[str, str]:
    """A DHCP and an L3 agent of their own zone, so only this test's resources go to them."""
    reporter = Reporter(noauth_server.db_url)
    try:
        return {kind: reporter.agent(f"compat-sched-{kind}", kind, configurations={},
                                     availability_zone=SCHED_ZONE) for kind in (DHCP, L3)}
    finally:
        reporter.close()


def test_sdk_agent_scheduling(conn, scheduling_agents):
    dhcp, l3 = scheduling_agents[DHCP], scheduling_agents[L3]
    net = conn.network.create_network(name="sdk-sched-net",
                                      availability_zone_hints=[SCHED_ZONE])
    conn.network.create_subnet(network_id=net.id, cidr="10.9.0.0/24", ip_version=4)
    assert [a.id for a in conn.network.network_hosting_dhcp_agents(net)] == [dhcp]
    assert [n.id for n in conn.network.dhcp_agent_hosting_networks(dhcp)] == [net.id]
    conn.network.remove_dhcp_agent_from_network(dhcp, net)
    assert list(conn.network.network_hosting_dhcp_agents(net)) == []
    conn.network.add_dhcp_agent_to_network(dhcp, net)
    assert [a.id for a in conn.network.network_hosting_dhcp_agents(net)] == [dhcp]

    router = conn.network.create_router(name="sdk-sched-router",
                                        availability_zone_hints=[SCHED_ZONE])
    assert [a.id for a in conn.network.routers_hosting_l3_agents(router)] == [l3]
    assert [r.id for r in conn.network.agent_hosted_routers(l3)] == [router.id]
    conn.network.remove_router_from_agent(l3, router)
    assert list(conn.network.routers_hosting_l3_agents(router)) == []
    conn.network.add_router_to_agent(l3, router)
    assert [a.id for a in conn.network.routers_hosting_l3_agents(router)] == [l3]
    assert conn.network.get_router(router).availability_zones == [SCHED_ZONE]
    conn.network.delete_router(router)
    conn.network.delete_network(net)


def test_cli_agent_scheduling(scheduling_agents, clouds_yaml, tmp_path_factory):
    dhcp, l3 = scheduling_agents[DHCP], scheduling_agents[L3]
    scenario = [
        ("net", f"network create cli-sched-net --availability-zone-hint {SCHED_ZONE} -f json"),
        ("subnet", "subnet create cli-sched-subnet --network cli-sched-net "
                   "--subnet-range 10.8.0.0/24 -f json"),
        ("hosting", "network agent list --network cli-sched-net -f json"),
        ("nets", f"network list --agent {dhcp} -f json"),
        ("remove-net", f"network agent remove network --dhcp {dhcp} cli-sched-net"),
        ("hosting-after", "network agent list --network cli-sched-net -f json"),
        ("add-net", f"network agent add network --dhcp {dhcp} cli-sched-net"),
        ("router", f"router create cli-sched-router --availability-zone-hint {SCHED_ZONE} "
                   "-f json"),
        ("l3", "network agent list --router cli-sched-router -f json"),
        ("routers", f"router list --agent {l3} -f json"),
        ("remove-router", f"network agent remove router --l3 {l3} cli-sched-router"),
        ("l3-after", "network agent list --router cli-sched-router -f json"),
        ("add-router", f"network agent add router --l3 {l3} cli-sched-router"),
        ("l3-again", "network agent list --router cli-sched-router -f json"),
    ]
    cli = run_scenario(scenario, clouds_yaml, tmp_path_factory.mktemp("home"))
    net = cli.json("net")
    assert [row["ID"] for row in cli.json("hosting")] == [dhcp]
    assert [row["ID"] for row in cli.json("nets")] == [net["id"]]
    cli.quiet("remove-net")
    assert cli.json("hosting-after") == []
    cli.quiet("add-net")
    router = cli.json("router")
    assert [row["ID"] for row in cli.json("l3")] == [l3]
    assert [row["ID"] for row in cli.json("routers")] == [router["id"]]
    cli.quiet("remove-router")
    assert cli.json("l3-after") == []
    cli.quiet("add-router")
    assert [row["ID"] for row in cli.json("l3-again")] == [l3]
