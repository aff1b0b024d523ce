"""Local IPs through openstacksdk and the ``openstack`` CLI (``local ip
create|list|show|set|delete``, ``local ip association create|list|delete``)."""

from __future__ import annotations

import openstack
import openstack.exceptions
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server


@pytest.fixture(scope="module")
def lip_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-lip")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra="service_plugins = local_ip\n")
    yield srv
    srv.stop()
    drop()


@pytest.fixture(scope="module")
def sdk(lip_server):
    connection = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=lip_server.url)
    yield connection
    connection.close()


def test_openstacksdk(sdk):
    net = sdk.network
    network = net.create_network(name="sdk-lip-net")
    net.create_subnet(network_id=network.id, ip_version=4, cidr="10.71.0.0/24")
    lip = net.create_local_ip(name="sdk-lip", network_id=network.id,
                              local_ip_address="10.71.0.50")
    assert (lip.local_ip_address, lip.network_id, lip.ip_mode) == (
        "10.71.0.50", network.id, "translate")
    assert net.get_port(lip.local_port_id).device_owner == "network:local_ip"
    assert net.find_local_ip("sdk-lip").id == lip.id
    assert [item.id for item in net.local_ips(network_id=network.id)] == [lip.id]
    assert net.update_local_ip(lip, description="web").description == "web"
    assert net.get_local_ip(lip.id).description == "web"

    port = net.create_port(network_id=network.id, name="sdk-lip-port")
    fixed = port.fixed_ips[0]["ip_address"]
    assoc = net.create_local_ip_association(lip, fixed_port_id=port.id)
    assert (assoc.fixed_port_id, assoc.fixed_ip, assoc.local_ip_address) == (
        port.id, fixed, "10.71.0.50")
    listed = list(net.local_ip_associations(lip))
    assert [(a.fixed_port_id, a.fixed_ip) for a in listed] == [(port.id, fixed)]
    with pytest.raises(openstack.exceptions.ConflictException, match="still associated"):
        net.delete_local_ip(lip, ignore_missing=False)
    net.delete_local_ip_association(lip, port.id, ignore_missing=False)
    assert list(net.local_ip_associations(lip)) == []
    net.delete_local_ip(lip, ignore_missing=False)
    assert net.find_local_ip("sdk-lip") is None
    assert [p.id for p in net.ports(device_owner="network:local_ip")] == []


@pytest.fixture(scope="module")
def clouds(lip_server, tmp_path_factory):
    """The README's clouds.yaml, and an identity endpoint (``--project`` lookups)."""
    path = write_clouds_yaml(tmp_path_factory.mktemp("clouds"), lip_server.url)
    path.write_text(path.read_text()
                    + f"    identity_endpoint_override: {lip_server.url}\n")
    return path


def test_openstack_cli(clouds, tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    run = run_scenario([
        ("net", "network create cli-lip-net -f json"),
        ("sub", "subnet create --network cli-lip-net --subnet-range 10.72.0.0/24 "
                "cli-lip-sub -f json"),
        ("create", "local ip create --network cli-lip-net --local-ip-address 10.72.0.60 "
                   "--name cli-lip -f json"),
        ("list", "local ip list -f json"),
        ("set", "local ip set --description web cli-lip"),
        ("show", "local ip show cli-lip -f json"),
        ("port", "port create --network cli-lip-net cli-lip-port -f json"),
        ("assoc", "local ip association create cli-lip cli-lip-port -f json"),
        ("assoc-again", "local ip association create cli-lip cli-lip-port -f json"),
        ("assoc-list", "local ip association list cli-lip -f json"),
        ("delete-in-use", "local ip delete cli-lip"),
    ], clouds, home)
    lip = run.json("create")
    assert (lip["name"], lip["local_ip_address"], lip["ip_mode"]) == (
        "cli-lip", "10.72.0.60", "translate")
    assert [row["ID"] for row in run.json("list")] == [lip["id"]]
    run.quiet("set")
    assert run.json("show")["description"] == "web"
    port = run.json("port")
    assoc = run.json("assoc")
    assert (assoc["fixed_port_id"], assoc["fixed_ip"]) == (
        port["id"], port["fixed_ips"][0]["ip_address"])
    assert "already associated" in run.text("assoc-again")
    [row] = run.json("assoc-list")
    assert (row["Local IP ID"], row["Fixed port ID"]) == (lip["id"], port["id"])
    assert "still associated" in run.text("delete-in-use")

    # the association is named by its port's id
    run = run_scenario([
        ("assoc-delete", f"local ip association delete cli-lip {port['id']}"),
        ("assoc-after", "local ip association list cli-lip -f json"),
        ("delete", "local ip delete cli-lip"),
        ("list-after", "local ip list -f json"),
    ], clouds, home)
    run.quiet("assoc-delete")
    assert run.json("assoc-after") == []
    run.quiet("delete")
    assert run.json("list-after") == []
