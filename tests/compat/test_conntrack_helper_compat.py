"""Routers' conntrack helpers through openstacksdk (``create_conntrack_helper``
...) and the ``openstack`` CLI (``network l3 conntrack helper ...``)."""

from __future__ import annotations

import openstack
import openstack.exceptions
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server


@pytest.fixture(scope="module")
def cth_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-cth")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth",
                       extra="service_plugins = router,conntrack_helper\n")
    yield srv
    srv.stop()
    drop()


@pytest.fixture(scope="module")
def sdk(cth_server):
    connection = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=cth_server.url)
    yield connection
    connection.close()


def test_openstacksdk(sdk):
    net = sdk.network
    router = net.create_router(name="sdk-cth-router")
    made = net.create_conntrack_helper(router, protocol="udp", port=69, helper="tftp")
    assert (made.protocol, made.port, made.helper, made.router_id) == (
        "udp", 69, "tftp", router.id)
    other = net.create_conntrack_helper(router, protocol="tcp", port=21, helper="ftp")
    assert {h.id for h in net.conntrack_helpers(router)} == {made.id, other.id}
    assert [h.id for h in net.conntrack_helpers(router, helper="ftp")] == [other.id]
    assert net.get_conntrack_helper(made, router).port == 69
    changed = net.update_conntrack_helper(other, router, port=2121)
    assert changed.port == 2121
    with pytest.raises(openstack.exceptions.BadRequestException, match="duplicate"):
        net.create_conntrack_helper(router, protocol="udp", port=69, helper="tftp")
    with pytest.raises(openstack.exceptions.BadRequestException, match="not allowed"):
        net.create_conntrack_helper(router, protocol="tcp", port=1, helper="nope")
    shown = net.get_router(router.id)
    assert sorted(h["port"] for h in shown.conntrack_helpers) == [69, 2121]
    net.delete_conntrack_helper(made, router, ignore_missing=False)
    with pytest.raises(openstack.exceptions.NotFoundException):
        net.get_conntrack_helper(made, router)
    net.delete_conntrack_helper(other, router, ignore_missing=False)
    assert list(net.conntrack_helpers(router)) == []
    net.delete_router(router)


@pytest.fixture(scope="module")
def clouds(cth_server, tmp_path_factory):
    return write_clouds_yaml(tmp_path_factory.mktemp("clouds"), cth_server.url)


def test_openstack_cli(clouds, tmp_path_factory):
    run = run_scenario([
        ("router", "router create cli-cth-router -f json"),
        ("create", "network l3 conntrack helper create --helper ftp --protocol tcp "
                   "--port 21 cli-cth-router -f json"),
        ("tftp", "network l3 conntrack helper create --helper tftp --protocol udp "
                 "--port 69 cli-cth-router -f json"),
        ("list", "network l3 conntrack helper list cli-cth-router -f json"),
        ("filtered", "network l3 conntrack helper list --protocol udp cli-cth-router -f json"),
        ("bad", "network l3 conntrack helper create --helper ftp --protocol udp "
                "--port 21 cli-cth-router"),
        ("router-show", "router show cli-cth-router -f json"),
    ], clouds, tmp_path_factory.mktemp("home"))
    router = run.json("router")
    made = run.json("create")
    assert (made["helper"], made["protocol"], made["port"]) == ("ftp", "tcp", 21)
    tftp = run.json("tftp")
    listed = run.json("list")
    assert sorted(row["Helper"] for row in listed) == ["ftp", "tftp"]
    assert {row["Router ID"] for row in listed} == {router["id"]}
    assert [row["ID"] for row in run.json("filtered")] == [tftp["id"]]
    assert "does not support: udp" in run.text("bad")
    assert len(run.json("router-show")["conntrack_helpers"]) == 2

    later = run_scenario([
        ("set", f"network l3 conntrack helper set --port 2121 cli-cth-router {made['id']}"),
        ("show", f"network l3 conntrack helper show cli-cth-router {made['id']} -f json"),
        ("delete", f"network l3 conntrack helper delete cli-cth-router {made['id']}"),
        ("after", "network l3 conntrack helper list cli-cth-router -f json"),
    ], clouds, tmp_path_factory.mktemp("home"))
    later.quiet("set")
    assert later.json("show")["port"] == 2121
    later.quiet("delete")
    assert [row["ID"] for row in later.json("after")] == [tftp["id"]]
