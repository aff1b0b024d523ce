"""The ``openstack`` CLI on routers, floating IPs and port forwardings.

Floating IPs are given fixed addresses so that later commands can name them
(the CLI finds a floating IP by id or by address).
"""

from __future__ import annotations

import pytest

from tests.compat.cli import run_scenario

FIP = "172.24.9.100"
SCENARIO = [
    ("ext", "network create l3-ext --external -f json"),
    ("ext-subnet", "subnet create l3-ext-sub --network l3-ext --subnet-range 172.24.9.0/24 "
                   "-f json"),
    ("inner", "network create l3-inner -f json"),
    ("inner-subnet", "subnet create l3-inner-sub --network l3-inner "
                     "--subnet-range 10.70.0.0/24 -f json"),
    ("router", "router create l3-router -f json"),
    ("set-gateway", "router set l3-router --external-gateway l3-ext"),
    ("add-subnet", "router add subnet l3-router l3-inner-sub"),
    ("set-route", "router set l3-router "
                  "--route destination=192.168.70.0/24,gateway=10.70.0.5"),
    ("add-route", "router add route l3-router "
                  "--route destination=192.168.71.0/24,gateway=10.70.0.6 -f json"),
    ("router-show", "router show l3-router -f json"),
    ("router-list", "router list -f json"),
    ("vm", "port create l3-vm --network l3-inner "
           "--fixed-ip subnet=l3-inner-sub,ip-address=10.70.0.50 -f json"),
    ("fip", f"floating ip create l3-ext --floating-ip-address {FIP} --port l3-vm -f json"),
    ("fip-list", "floating ip list --port l3-vm -f json"),
    ("fip-unset", f"floating ip unset --port {FIP}"),
    ("fip-show", f"floating ip show {FIP} -f json"),
    ("pf", f"floating ip port forwarding create --internal-ip-address 10.70.0.50 "
           f"--port l3-vm --internal-protocol-port 22 --external-protocol-port 2222 "
           f"--protocol tcp {FIP} -f json"),
    ("pf-list", f"floating ip port forwarding list {FIP} -f json"),
    ("remove-in-use", "router remove subnet l3-router l3-inner-sub"),
    ("fip-delete-in-use", f"floating ip delete {FIP}"),
    ("vm-delete", "port delete l3-vm"),
    ("fip-delete", f"floating ip delete {FIP}"),
    ("remove-route", "router remove route l3-router "
                     "--route destination=192.168.71.0/24,gateway=10.70.0.6"),
    ("unset-route", "router unset l3-router "
                    "--route destination=192.168.70.0/24,gateway=10.70.0.5"),
    ("router-show-unset", "router show l3-router -f json"),
    ("unset-routes", "router set l3-router --no-route"),
    ("remove-subnet", "router remove subnet l3-router l3-inner-sub"),
    ("unset-gateway", "router unset l3-router --external-gateway"),
    ("router-delete", "router delete l3-router"),
    ("router-list-after", "router list -f json"),
    # an external network with floating IPs that serve nothing goes with them
    ("ext2", "network create l3-ext2 --external -f json"),
    ("ext2-subnet", "subnet create l3-ext2-sub --network l3-ext2 "
                    "--subnet-range 172.24.10.0/24 -f json"),
    ("fip2", "floating ip create l3-ext2 -f json"),
    ("fip3", "floating ip create l3-ext2 -f json"),
    ("ext2-delete", "network delete l3-ext2"),
    ("fip-list-after", "floating ip list -f json"),
]


@pytest.fixture(scope="module")
def cli(clouds_yaml, tmp_path_factory):
    return run_scenario(SCENARIO, clouds_yaml, tmp_path_factory.mktemp("home"))


def test_router(cli):
    ext, subnet = cli.json("ext"), cli.json("inner-subnet")
    for key in ("set-gateway", "add-subnet", "set-route"):
        cli.quiet(key)
    router = cli.json("router-show")
    assert router["external_gateway_info"]["network_id"] == ext["id"]
    assert sorted(r["destination"] for r in router["routes"]) == [
        "192.168.70.0/24", "192.168.71.0/24"]
    assert [r["Name"] for r in cli.json("router-list")] == ["l3-router"]
    interfaces = router["interfaces_info"]
    assert [i["subnet_id"] for i in interfaces] == [subnet["id"]]
    assert interfaces[0]["ip_address"] == subnet["gateway_ip"]


def test_floating_ip(cli):
    vm, fip = cli.json("vm"), cli.json("fip")
    assert (fip["floating_ip_address"], fip["port_id"]) == (FIP, vm["id"])
    assert [f["Floating IP Address"] for f in cli.json("fip-list")] == [FIP]
    cli.quiet("fip-unset")
    assert cli.json("fip-show")["port_id"] is None


def test_port_forwarding(cli):
    vm, forward = cli.json("vm"), cli.json("pf")
    assert (forward["internal_port"], forward["external_port"]) == (22, 2222)
    assert forward["internal_port_id"] == vm["id"]
    assert [f["ID"] for f in cli.json("pf-list")] == [forward["id"]]
    assert "RouterInterfaceInUseByFloatingIP" in cli.text("remove-in-use") or \
        "required by one or more floating IPs" in cli.text("remove-in-use")
    assert "in use by Port Forwarding" in cli.text("fip-delete-in-use")


def test_teardown(cli):
    for key in ("vm-delete", "fip-delete", "unset-route", "unset-routes", "remove-subnet",
                "unset-gateway", "router-delete"):
        cli.quiet(key)
    assert cli.json("router-show-unset")["routes"] == []
    # ``router remove route`` prints the router it changed
    assert "192.168.70.0/24" in cli.text("remove-route")
    assert "192.168.71.0/24" not in cli.text("remove-route")
    assert cli.json("router-list-after") == []


def test_external_network_delete_takes_its_floating_ips(cli):
    assert cli.json("fip2")["floating_network_id"] == cli.json("ext2")["id"]
    cli.quiet("ext2-delete")
    assert cli.json("fip-list-after") == []
