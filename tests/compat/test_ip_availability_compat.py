"""openstacksdk and the openstack CLI read IP availability (``ip availability``)."""

from __future__ import annotations

import openstack
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server


@pytest.fixture(scope="module")
def availability_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-ip-availability")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth",
                       extra="service_plugins = router,network_ip_availability\n")
    yield srv
    srv.stop()
    drop()


def test_openstacksdk_reads_ip_availability(availability_server):
    conn = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=availability_server.url)
    try:
        net = conn.network.create_network(name="counted")
        subnet = conn.network.create_subnet(network_id=net.id, cidr="10.46.0.0/28",
                                            ip_version=4)
        conn.network.create_port(network_id=net.id)
        found = conn.network.get_network_ip_availability(net.id)
        assert (found.network_name, found.total_ips, found.used_ips) == ("counted", 13, 1)
        [listed] = [a for a in conn.network.network_ip_availabilities()
                    if a.network_id == net.id]
        assert listed.subnet_ip_availability[0]["subnet_id"] == subnet.id
    finally:
        conn.close()


def test_openstack_cli_ip_availability(availability_server, tmp_path):
    session = run_scenario([
        ("net", "network create cli-counted -f json"),
        ("subnet", "subnet create cli-counted-sub --network cli-counted "
                   "--subnet-range 10.47.0.0/29 -f json"),
        ("port", "port create cli-counted-port --network cli-counted -f json"),
        ("list", "ip availability list -f json"),
        ("show", "ip availability show cli-counted -f json"),
    ], write_clouds_yaml(tmp_path, availability_server.url), tmp_path)
    net = session.json("net")
    [row] = [r for r in session.json("list") if r["Network ID"] == net["id"]]
    assert (row["Network Name"], row["Total IPs"], row["Used IPs"]) == ("cli-counted", 5, 1)
    shown = session.json("show")
    assert (shown["network_id"], shown["used_ips"], shown["total_ips"]) == (net["id"], 1, 5)
