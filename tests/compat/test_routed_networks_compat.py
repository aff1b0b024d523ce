"""openstacksdk and the openstack CLI with routed networks: segments, subnets
on segments (``--network-segment``) and ports whose address waits for a host."""

from __future__ import annotations

import openstack
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server

EXTRA = ("service_plugins = router,segments\n"
         "[ml2]\ntype_drivers = flat,vxlan\ntenant_network_types = vxlan\n"
         "mechanism_drivers = logger\n"
         "[ml2_type_flat]\nflat_networks = *\n[ml2_type_vxlan]\nvni_ranges = 1000:1999\n")


@pytest.fixture(scope="module")
def routed_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-routed")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra=EXTRA)
    yield srv
    srv.stop()
    drop()


def test_openstacksdk_routed_network(routed_server):
    conn = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=routed_server.url)
    try:
        net = conn.network.create_network(provider_network_type="flat",
                                          provider_physical_network="sdk-rack1")
        second = conn.network.create_segment(network_id=net.id, network_type="flat",
                                             physical_network="sdk-rack2", name="rack2")
        subnet = conn.network.create_subnet(network_id=net.id, ip_version=4,
                                            cidr="10.95.2.0/24", segment_id=second.id)
        assert subnet.segment_id == second.id
        port = conn.network.create_port(network_id=net.id)
        assert (port.fixed_ips, port.ip_allocation) == ([], "deferred")
        with pytest.raises(openstack.exceptions.ConflictException):
            conn.network.delete_segment(second)  # its subnet is on it
    finally:
        conn.close()


def test_openstack_cli_routed_network(routed_server, tmp_path):
    session = run_scenario([
        ("net", "network create cli-routed --provider-network-type flat "
                "--provider-physical-network cli-rack1 -f json"),
        ("segment", "network segment create cli-rack2 --network cli-routed "
                    "--network-type flat --physical-network cli-rack2 -f json"),
        ("subnet", "subnet create cli-rack2-sub --network cli-routed --network-segment "
                   "cli-rack2 --subnet-range 10.96.2.0/24 -f json"),
        ("port", "port create cli-waiting --network cli-routed -f json"),
        ("segments", "network segment list --network cli-routed -f json"),
    ], write_clouds_yaml(tmp_path, routed_server.url), tmp_path)
    segment = session.json("segment")
    assert session.json("subnet")["segment_id"] == segment["id"]
    port = session.json("port")
    assert (port["fixed_ips"], port["ip_allocation"]) == ([], "deferred")
    assert {row["Name"] for row in session.json("segments")} >= {"cli-rack2"}
