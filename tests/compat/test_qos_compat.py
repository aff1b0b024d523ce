"""QoS through openstacksdk and the ``openstack`` CLI (``network qos policy ...``,
``network qos rule ...``, ``network qos rule type ...``, ``port set --qos-policy``,
``router set --qos-policy``, ``floating ip create --qos-policy``)."""

from __future__ import annotations

import openstack
import openstack.exceptions
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server


@pytest.fixture(scope="module")
def qos_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-qos")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra=(
        "service_plugins = router,qos\n"
        "[ml2]\nmechanism_drivers = openvswitch\nextension_drivers = port_security,qos\n"))
    yield srv
    srv.stop()
    drop()


@pytest.fixture(scope="module")
def sdk(qos_server):
    connection = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=qos_server.url)
    yield connection
    connection.close()


def test_openstacksdk(sdk):
    net = sdk.network
    made = net.create_qos_policy(name="sdk-qos", description="gold")
    assert (made.name, made.description, made.is_shared, made.is_default) == (
        "sdk-qos", "gold", False, False)
    assert net.find_qos_policy("sdk-qos").id == made.id
    rule = net.create_qos_bandwidth_limit_rule(made, max_kbps=1000, max_burst_kbps=800,
                                               direction="ingress")
    assert (rule.max_kbps, rule.max_burst_kbps, rule.direction) == (1000, 800, "ingress")
    dscp = net.create_qos_dscp_marking_rule(made, dscp_mark=26)
    minimum = net.create_qos_minimum_bandwidth_rule(made, min_kbps=100)
    assert [r.id for r in net.qos_bandwidth_limit_rules(made)] == [rule.id]
    assert net.get_qos_dscp_marking_rule(dscp, made).dscp_mark == 26
    changed = net.update_qos_minimum_bandwidth_rule(minimum, made, min_kbps=200)
    assert changed.min_kbps == 200
    with pytest.raises(openstack.exceptions.ConflictException, match="conflicts"):
        net.create_qos_dscp_marking_rule(made, dscp_mark=8)
    assert len(net.get_qos_policy(made.id).rules) == 3

    types = {t.type for t in net.qos_rule_types()}
    assert {"bandwidth_limit", "dscp_marking", "minimum_bandwidth"} <= types
    detail = net.get_qos_rule_type("bandwidth_limit")
    assert [d["name"] for d in detail.drivers] == ["openvswitch"]

    network = net.create_network(name="sdk-qos-net", qos_policy_id=made.id)
    assert network.qos_policy_id == made.id
    port = net.create_port(network_id=network.id)
    assert port.qos_network_policy_id == made.id
    # the minimum bandwidth rule, as Nova reads it
    groups = net.get_port(port.id).resource_request["request_groups"]
    assert groups[0]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 200}
    with pytest.raises(openstack.exceptions.ConflictException, match="is used by"):
        net.delete_qos_policy(made, ignore_missing=False)
    net.delete_port(port)
    net.delete_network(network)
    net.delete_qos_dscp_marking_rule(dscp, made, ignore_missing=False)
    net.update_qos_policy(made, name="sdk-renamed", shared=True)
    assert net.get_qos_policy(made.id).is_shared is True
    net.delete_qos_policy(made, ignore_missing=False)
    assert net.find_qos_policy("sdk-renamed") is None


@pytest.fixture(scope="module")
def clouds(qos_server, tmp_path_factory):
    """The README's clouds.yaml, and an identity endpoint (``--project`` lookups)."""
    path = write_clouds_yaml(tmp_path_factory.mktemp("clouds"), qos_server.url)
    path.write_text(path.read_text()
                    + f"    identity_endpoint_override: {qos_server.url}\n")
    return path


def test_openstack_cli(clouds, tmp_path_factory):
    run = run_scenario([
        ("create", "network qos policy create --description gold cli-qos -f json"),
        ("rule", "network qos rule create --type bandwidth-limit --max-kbps 1000 "
                 "--max-burst-kbits 800 --egress cli-qos -f json"),
        ("dscp", "network qos rule create --type dscp-marking --dscp-mark 26 cli-qos -f json"),
        ("rules", "network qos rule list cli-qos -f json"),
        ("set", "network qos policy set --name cli-qos-2 --share cli-qos"),
        ("show", "network qos policy show cli-qos-2 -f json"),
        ("list", "network qos policy list -f json"),
        ("types", "network qos rule type list -f json"),
        ("net", "network create cli-qos-net -f json"),
        ("port", "port create --network cli-qos-net cli-qos-port -f json"),
        ("port-set", "port set --qos-policy cli-qos-2 cli-qos-port"),
        ("port-show", "port show cli-qos-port -f json"),
        ("ext", "network create --external cli-qos-ext -f json"),
        ("ext-sub", "subnet create --network cli-qos-ext --subnet-range 172.30.5.0/24 "
                    "--no-dhcp cli-qos-ext-sub -f json"),
        ("router", "router create cli-qos-router -f json"),
        ("gw-set", "router set --external-gateway cli-qos-ext --qos-policy cli-qos-2 "
                   "cli-qos-router"),
        ("router-show", "router show cli-qos-router -f json"),
        ("fip", "floating ip create --floating-ip-address 172.30.5.50 --qos-policy cli-qos-2 "
                "cli-qos-ext -f json"),
        ("in-use", "network qos policy delete cli-qos-2"),
        ("port-unset", "port unset --qos-policy cli-qos-port"),
        ("gw-unset", "router unset --qos-policy cli-qos-router"),
        ("fip-unset", "floating ip unset --qos-policy 172.30.5.50"),
        ("delete", "network qos policy delete cli-qos-2"),
        ("list-after", "network qos policy list -f json"),
    ], clouds, tmp_path_factory.mktemp("home"))
    policy = run.json("create")
    assert (policy["name"], policy["description"]) == ("cli-qos", "gold")
    assert run.json("rule")["max_kbps"] == 1000
    assert run.json("dscp")["dscp_mark"] == 26
    assert len(run.json("rules")) == 2
    run.quiet("set")
    assert run.json("show")["shared"] is True
    assert [row["Name"] for row in run.json("list")] == ["cli-qos-2"]
    assert {"bandwidth_limit", "dscp_marking"} <= {row["Type"] for row in run.json("types")}
    run.quiet("port-set")
    assert run.json("port-show")["qos_policy_id"] == policy["id"]
    run.quiet("gw-set")
    assert run.json("router-show")["external_gateway_info"]["qos_policy_id"] == policy["id"]
    assert run.json("fip")["qos_policy_id"] == policy["id"]
    assert "is used by" in run.text("in-use")
    run.quiet("port-unset")
    run.quiet("gw-unset")
    run.quiet("fip-unset")
    run.quiet("delete")
    assert run.json("list-after") == []
