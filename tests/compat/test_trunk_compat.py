"""Trunks through openstacksdk and the ``openstack`` CLI (``network trunk ...``,
``network subport list``)."""

from __future__ import annotations

import openstack
import openstack.exceptions
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server


@pytest.fixture(scope="module")
def trunk_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-trunk")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra="service_plugins = router,trunk\n")
    yield srv
    srv.stop()
    drop()


@pytest.fixture(scope="module")
def sdk(trunk_server):
    connection = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=trunk_server.url)
    yield connection
    connection.close()


def test_openstacksdk(sdk):
    net = sdk.network
    network = net.create_network(name="sdk-trunk-net")
    parent, a, b = (net.create_port(network_id=network.id, name=n)
                    for n in ("parent", "a", "b"))
    made = net.create_trunk(port_id=parent.id, name="sdk-trunk",
                            sub_ports=[{"port_id": a.id, "segmentation_type": "vlan",
                                        "segmentation_id": 100}])
    assert (made.name, made.status, made.is_admin_state_up, made.port_id) == (
        "sdk-trunk", "DOWN", True, parent.id)
    assert net.find_trunk("sdk-trunk").id == made.id
    assert [t.id for t in net.trunks(port_id=parent.id)] == [made.id]

    net.add_trunk_subports(made, [{"port_id": b.id, "segmentation_type": "vlan",
                                   "segmentation_id": 101}])
    listed = net.get_trunk_subports(made)["sub_ports"]
    assert sorted((s["port_id"], s["segmentation_id"]) for s in listed) == sorted(
        [(a.id, 100), (b.id, 101)])
    assert net.get_port(b.id).device_owner == "trunk:subport"
    details = net.get_port(parent.id).trunk_details
    assert details["trunk_id"] == made.id and len(details["sub_ports"]) == 2

    net.delete_trunk_subports(made, [{"port_id": a.id}])
    assert [s["port_id"] for s in net.get_trunk_subports(made)["sub_ports"]] == [b.id]
    with pytest.raises(openstack.exceptions.ConflictException, match="in use by another"):
        net.add_trunk_subports(made, [{"port_id": b.id, "segmentation_type": "vlan",
                                       "segmentation_id": 102}])
    with pytest.raises(openstack.exceptions.ConflictException, match="parent port"):
        net.delete_port(parent, ignore_missing=False)

    changed = net.update_trunk(made, name="sdk-renamed", is_admin_state_up=False)
    assert (changed.name, changed.is_admin_state_up) == ("sdk-renamed", False)
    with pytest.raises(openstack.exceptions.ConflictException, match="disabled"):
        net.delete_trunk(made, ignore_missing=False)
    net.update_trunk(made, is_admin_state_up=True)
    net.delete_trunk(made, ignore_missing=False)
    assert net.find_trunk("sdk-renamed") is None
    assert net.get_port(b.id).device_owner == ""


@pytest.fixture(scope="module")
def clouds(trunk_server, tmp_path_factory):
    """The README's clouds.yaml, and an identity endpoint: ``network trunk create``
    and ``set`` make the SDK's identity proxy (to find a ``--project`` they may
    not be given), which looks for a version there; neutrino's version list does."""
    path = write_clouds_yaml(tmp_path_factory.mktemp("clouds"), trunk_server.url)
    path.write_text(path.read_text()
                    + f"    identity_endpoint_override: {trunk_server.url}\n")
    return path


def test_openstack_cli(clouds, tmp_path_factory):
    made = run_scenario([
        ("net", "network create cli-trunk-net -f json"),
        ("parent", "port create --network cli-trunk-net cli-parent -f json"),
        ("sub", "port create --network cli-trunk-net cli-sub -f json"),
        ("sub-2", "port create --network cli-trunk-net cli-sub-2 -f json"),
    ], clouds, tmp_path_factory.mktemp("home"))
    sub, sub2 = made.json("sub"), made.json("sub-2")
    run = run_scenario([
        ("create", "network trunk create --parent-port cli-parent "
                   "--subport port=cli-sub,segmentation-type=vlan,segmentation-id=100 "
                   "cli-trunk -f json"),
        ("set", "network trunk set --subport "
                "port=cli-sub-2,segmentation-type=vlan,segmentation-id=200 cli-trunk"),
        ("subports", "network subport list --trunk cli-trunk -f json"),
        ("list", "network trunk list -f json"),
        ("unset", "network trunk unset --subport cli-sub cli-trunk"),
        ("subports-after", "network subport list --trunk cli-trunk -f json"),
        ("show", "network trunk show cli-trunk -f json"),
        ("port-delete", "port delete cli-sub-2"),
        ("delete", "network trunk delete cli-trunk"),
        ("list-after", "network trunk list -f json"),
    ], clouds, tmp_path_factory.mktemp("home"))
    trunk = run.json("create")
    assert (trunk["name"], trunk["status"]) == ("cli-trunk", "DOWN")
    assert sorted((row["Port"], row["Segmentation ID"]) for row in run.json("subports")) == \
        sorted([(sub["id"], 100), (sub2["id"], 200)])
    assert [row["Name"] for row in run.json("list")] == ["cli-trunk"]
    assert [row["Port"] for row in run.json("subports-after")] == [sub2["id"]]
    assert run.json("show")["id"] == trunk["id"]
    assert "is currently a subport" in run.text("port-delete")
    assert run.json("list-after") == []
