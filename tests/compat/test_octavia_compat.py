"""python-octaviaclient's ``openstack loadbalancer ...`` and openstacksdk's
``load_balancer`` proxy against neutrino's load-balancer API, unchanged."""

from __future__ import annotations

from pathlib import Path

import openstack
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import CLOUD
from tests.harness import Server, create_database, free_port, start_server


@pytest.fixture(scope="module")
def lb_server(tmp_path_factory) -> Server:
    tmp = tmp_path_factory.mktemp("compat-octavia")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra=(
        "service_plugins = router,octavia\n[api_settings]\nenabled_provider_drivers = "
        "noop:Done at once,haproxy:Run by load-balancer agents\n"), octavia_port=free_port())
    yield srv
    srv.stop()
    drop()


def clouds_yaml(directory: Path, server: Server) -> Path:
    """The README's clouds.yaml with the load-balancer endpoint beside the network's."""
    path = directory / "clouds.yaml"
    path.write_text(
        "clouds:\n"
        f"  {CLOUD}:\n"
        "    auth_type: none\n"
        f"    network_endpoint_override: {server.url}\n"
        f"    load_balancer_endpoint_override: {server.octavia_url}\n")
    return path


def test_openstack_loadbalancer_cli(lb_server: Server, tmp_path: Path):
    session = run_scenario([
        ("net", "network create lbnet -f json"),
        ("subnet", "subnet create lbsub --network lbnet --subnet-range 10.90.0.0/24 -f json"),
        ("lb", "loadbalancer create --name web --vip-subnet-id lbsub -f json"),
        ("lb-show", "loadbalancer show web -f json"),
        ("lb-set", "loadbalancer set web --description front"),
        ("lb-list", "loadbalancer list -f json"),
        ("listener", "loadbalancer listener create web --name http --protocol HTTP "
                     "--protocol-port 80 -f json"),
        ("dup", "loadbalancer listener create web --name again --protocol HTTP "
                "--protocol-port 80 -f json"),
        ("pool", "loadbalancer pool create --name p --listener http --protocol HTTP "
                 "--lb-algorithm ROUND_ROBIN -f json"),
        ("member", "loadbalancer member create p --name m1 --address 10.90.0.9 "
                   "--protocol-port 8080 --subnet-id lbsub -f json"),
        ("member-list", "loadbalancer member list p -f json"),
        ("hm", "loadbalancer healthmonitor create --name hm --delay 5 --timeout 3 "
               "--max-retries 2 --type HTTP --url-path /healthz p -f json"),
        ("listener-list", "loadbalancer listener list -f json"),
        ("pool-show", "loadbalancer pool show p -f json"),
        ("status", "loadbalancer status show web"),
        ("stats", "loadbalancer stats show web -f json"),
        ("l7", "loadbalancer l7policy create http --action REJECT --name no -f json"),
        ("l7rule", "loadbalancer l7rule create no --type PATH --compare-type STARTS_WITH "
                   "--value /admin -f json"),
        ("quota", "loadbalancer quota defaults show -f json"),
        ("delete", "loadbalancer delete web --cascade"),
        ("after", "loadbalancer list -f json"),
    ], clouds_yaml(tmp_path, lb_server), tmp_path)
    subnet = session.json("subnet")
    lb = session.json("lb")
    assert lb["name"] == "web" and lb["vip_subnet_id"] == subnet["id"]
    shown = session.json("lb-show")
    assert shown["provisioning_status"] == "ACTIVE" and shown["operating_status"] == "ONLINE"
    session.quiet("lb-set")
    assert [row["name"] for row in session.json("lb-list")] == ["web"]
    listener = session.json("listener")
    assert (listener["protocol"], listener["protocol_port"]) == ("HTTP", 80)
    assert "already using protocol HTTP and protocol_port 80" in session.text("dup")
    pool = session.json("pool")
    assert pool["lb_algorithm"] == "ROUND_ROBIN"
    member = session.json("member")
    assert member["address"] == "10.90.0.9"
    assert [row["name"] for row in session.json("member-list")] == ["m1"]
    hm = session.json("hm")
    assert (hm["type"], hm["url_path"], hm["http_method"]) == ("HTTP", "/healthz", "GET")
    assert [row["name"] for row in session.json("listener-list")] == ["http"]
    assert session.json("pool-show")["provisioning_status"] == "ACTIVE"
    tree = session.json("status")["loadbalancer"]
    assert (tree["name"], tree["operating_status"]) == ("web", "ONLINE")
    [in_listener] = tree["listeners"]
    [in_pool] = in_listener["pools"]
    assert (in_listener["name"], in_pool["name"]) == ("http", "p")
    assert in_pool["health_monitor"]["type"] == "HTTP"
    assert [(m["name"], m["address"]) for m in in_pool["members"]] == [("m1", "10.90.0.9")]
    assert (session.json("l7")["action"], session.json("l7")["position"]) == ("REJECT", 1)
    assert session.json("l7rule")["value"] == "/admin"
    assert session.json("quota")["load_balancer"] == -1
    assert session.json("stats") == {"active_connections": 0, "bytes_in": 0, "bytes_out": 0,
                                     "request_errors": 0, "total_connections": 0}
    session.quiet("delete")
    assert session.json("after") == []


def test_openstack_loadbalancer_flavors_and_zones_cli(lb_server: Server, tmp_path: Path):
    session = run_scenario([
        ("net", "network create fznet -f json"),
        ("subnet", "subnet create fzsub --network fznet --subnet-range 10.92.0.0/24 -f json"),
        ("caps", "loadbalancer provider capability list haproxy -f json"),
        ("fp", "loadbalancer flavorprofile create --name fp --provider noop "
               "--flavor-data {} -f json"),
        ("flavor", "loadbalancer flavor create --name small --flavorprofile fp "
                   "--description tiny -f json"),
        ("flavors", "loadbalancer flavor list -f json"),
        ("azp", "loadbalancer availabilityzoneprofile create --name azp --provider noop "
                "--availability-zone-data '{}' -f json"),
        ("az", "loadbalancer availabilityzone create --name rack1 "
               "--availabilityzoneprofile azp -f json"),
        ("azs", "loadbalancer availabilityzone list -f json"),
        ("lb", "loadbalancer create --name sized --vip-subnet-id fzsub --flavor small "
               "--availability-zone rack1 -f json"),
        ("in-use", "loadbalancer flavor delete small"),
        ("lb-delete", "loadbalancer delete sized"),
        ("flavor-off", "loadbalancer flavor set --disable small"),
        ("flavor-show", "loadbalancer flavor show small -f json"),
        ("cleanup", "loadbalancer flavor delete small"),
        ("cleanup-fp", "loadbalancer flavorprofile delete fp"),
        ("cleanup-az", "loadbalancer availabilityzone delete rack1"),
        ("cleanup-azp", "loadbalancer availabilityzoneprofile delete azp"),
        ("after", "loadbalancer flavor list -f json"),
    ], clouds_yaml(tmp_path, lb_server), tmp_path)
    names = {row["name"] for row in session.json("caps")}
    assert {"maxconn", "nbthread", "agent_availability_zone"} <= names
    profile = session.json("fp")
    assert (profile["provider_name"], profile["flavor_data"]) == ("noop", "{}")
    flavor = session.json("flavor")
    assert (flavor["name"], flavor["flavor_profile_id"]) == ("small", profile["id"])
    assert [row["name"] for row in session.json("flavors")] == ["small"]
    zone = session.json("az")
    assert zone["name"] == "rack1"
    assert [row["name"] for row in session.json("azs")] == ["rack1"]
    lb = session.json("lb")
    assert (lb["flavor_id"], lb["availability_zone"]) == (flavor["id"], "rack1")
    assert "is in use and cannot be modified" in session.text("in-use")
    session.quiet("lb-delete")
    assert session.json("flavor-show")["enabled"] is False
    for key in ("cleanup", "cleanup-fp", "cleanup-az", "cleanup-azp"):
        session.quiet(key)
    assert session.json("after") == []


def test_openstacksdk_load_balancer(lb_server: Server):
    conn = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=lb_server.url,
        load_balancer_endpoint_override=lb_server.octavia_url)
    try:
        net = conn.network.create_network(name="sdk-lb")
        subnet = conn.network.create_subnet(network_id=net.id, cidr="10.91.0.0/24",
                                            ip_version=4)
        lb = conn.load_balancer.create_load_balancer(name="sdk", vip_subnet_id=subnet.id)
        lb = conn.load_balancer.wait_for_load_balancer(lb.id, wait=30)
        assert lb.provisioning_status == "ACTIVE"
        port = conn.network.get_port(lb.vip_port_id)
        assert port.device_owner == "Octavia"
        listener = conn.load_balancer.create_listener(
            load_balancer_id=lb.id, protocol="TCP", protocol_port=22, name="ssh")
        pool = conn.load_balancer.create_pool(listener_id=listener.id, protocol="TCP",
                                              lb_algorithm="SOURCE_IP")
        member = conn.load_balancer.create_member(pool, address="10.91.0.5",
                                                  protocol_port=22)
        assert [m.id for m in conn.load_balancer.members(pool)] == [member.id]
        hm = conn.load_balancer.create_health_monitor(pool_id=pool.id, type="TCP", delay=5,
                                                      timeout=3, max_retries=3)
        assert conn.load_balancer.get_pool(pool.id).health_monitor_id == hm.id
        conn.load_balancer.update_load_balancer(lb, description="sdk made")
        assert conn.load_balancer.get_load_balancer(lb.id).description == "sdk made"
        assert [x.name for x in conn.load_balancer.load_balancers()] == ["sdk"]
        conn.load_balancer.delete_load_balancer(lb, cascade=True)
        assert list(conn.load_balancer.load_balancers()) == []
        assert conn.network.find_port(lb.vip_port_id) is None

        # flavors and availability zones, and a project's own port as a VIP
        profile = conn.load_balancer.create_flavor_profile(
            name="sdk-fp", provider_name="noop", flavor_data='{"a": 1}')
        flavor = conn.load_balancer.create_flavor(name="sdk-small",
                                                  flavor_profile_id=profile.id)
        zone_profile = conn.load_balancer.create_availability_zone_profile(
            name="sdk-azp", provider_name="noop", availability_zone_data="{}")
        zone = conn.load_balancer.create_availability_zone(
            name="sdk-rack", availability_zone_profile_id=zone_profile.id)
        assert [f.name for f in conn.load_balancer.flavors()] == ["sdk-small"]
        assert conn.load_balancer.get_availability_zone("sdk-rack").is_enabled is True
        vip = conn.network.create_port(network_id=net.id)
        lb = conn.load_balancer.create_load_balancer(
            name="sized", vip_port_id=vip.id, flavor_id=flavor.id,
            availability_zone=zone.name)
        lb = conn.load_balancer.wait_for_load_balancer(lb.id, wait=30)
        assert (lb.vip_port_id, lb.flavor_id) == (vip.id, flavor.id)
        assert lb.vip_address == vip.fixed_ips[0]["ip_address"]
        conn.load_balancer.delete_load_balancer(lb)
        assert conn.network.get_port(vip.id).device_id == ""
        conn.load_balancer.delete_flavor(flavor)
        conn.load_balancer.delete_flavor_profile(profile)
        conn.load_balancer.delete_availability_zone(zone.name)  # its key: no id
        conn.load_balancer.delete_availability_zone_profile(zone_profile)
        assert list(conn.load_balancer.flavor_profiles()) == []
    finally:
        conn.close()
