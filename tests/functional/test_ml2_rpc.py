"""What L2 agents ask of ML2 over the bus, answered from a real database."""

from __future__ import annotations

import pytest

from neutrino.cmd.server import build_app, load_config
from neutrino.context import Context
from neutrino.db import migrate
from neutrino.plugins.ml2.rpc import Ml2RpcCallbacks
from tests.conftest import BACKENDS
from tests.harness import create_database

ADMIN = Context.admin()
CTX = {"request_id": "r"}


@pytest.fixture(scope="module", params=BACKENDS)
def app(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"ml2rpc-{request.param}")
    url, drop = create_database(request.param, tmp)
    path = tmp / "neutrino.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp}\n[database]\nconnection = {url}\n"
                    "[ml2]\nextension_drivers = port_security\n")
    conf = load_config([str(path)])
    migrate.upgrade(url)
    app = build_app(conf, sync=True)
    yield app
    app.on_shutdown()
    drop()


@pytest.fixture
def plugin(app):
    return app.router.controllers["ports"].plugin


def make_port(plugin, **extra):
    net = plugin.create_network(ADMIN, {"project_id": "p1", "name": "n"})
    plugin.create_subnet(ADMIN, {"project_id": "p1", "network_id": net["id"],
                                 "cidr": "10.0.0.0/24", "ip_version": 4})
    port = plugin.create_port(ADMIN, {"project_id": "p1", "network_id": net["id"], **extra})
    return net, port


def test_device_details_by_port_id_and_tap_name(plugin):
    net, port = make_port(plugin, **{"binding:host_id": "h1"})
    rpc = Ml2RpcCallbacks(plugin)
    tap = "tap" + port["id"][:11]
    by_id, by_tap, unknown = rpc.get_devices_details_list(
        CTX, [port["id"], tap, "tap00000000-00"], host="h1")
    assert by_id["port_id"] == by_tap["port_id"] == port["id"]
    assert by_tap["device"] == tap and by_id["device"] == port["id"]
    assert by_tap["network_id"] == net["id"] and by_tap["mac_address"] == port["mac_address"]
    assert by_tap["network_type"] == "local" and by_tap["mtu"] == 1500
    assert by_tap["fixed_ips"] == port["fixed_ips"]
    assert by_tap["port_security_enabled"] is True
    assert len(by_tap["security_groups"]) == 1  # the project's default group
    assert unknown == {"device": "tap00000000-00"}


def test_devices_up_and_down(plugin):
    _, port = make_port(plugin, **{"binding:host_id": "h1"})
    rpc = Ml2RpcCallbacks(plugin)
    tap = "tap" + port["id"][:11]
    assert plugin.get_port(ADMIN, port["id"])["status"] == "DOWN"
    rpc.update_device_up(CTX, tap, host="h1")
    assert plugin.get_port(ADMIN, port["id"])["status"] == "ACTIVE"
    # a report from a host the port is not bound to changes nothing
    assert rpc.update_device_down(CTX, tap, host="elsewhere") == {"device": tap,
                                                                   "exists": True}
    assert plugin.get_port(ADMIN, port["id"])["status"] == "ACTIVE"
    result = rpc.update_device_list(CTX, [], [tap, "tapffffffff-ff"], host="h1")
    assert result["devices_down"] == [tap]
    assert plugin.get_port(ADMIN, port["id"])["status"] == "DOWN"
    assert rpc.update_device_down(CTX, "tapffffffff-ff", host="h1")["exists"] is False


def test_security_group_info(plugin):
    _, port = make_port(plugin)
    _, other = make_port(plugin)
    rpc = Ml2RpcCallbacks(plugin)
    info = rpc.security_group_info_for_devices(CTX, [port["id"]])
    [group] = port["security_groups"]
    assert list(info["devices"]) == [port["id"]]
    rules = info["security_groups"][group]
    assert {(r["direction"], r["ethertype"]) for r in rules} == {
        ("ingress", "IPv4"), ("ingress", "IPv6"), ("egress", "IPv4"), ("egress", "IPv6")}
    members = info["sg_member_ips"][group]["IPv4"]
    assert port["fixed_ips"][0]["ip_address"] in members
    assert other["fixed_ips"][0]["ip_address"] in members


def test_security_group_info_names_pairs_and_address_groups(app, plugin):
    """Members' allowed address pairs count as the group's addresses, and the
    addresses of an address group a rule names come along."""
    _, port = make_port(plugin, allowed_address_pairs=[{"ip_address": "10.9.0.0/24"}])
    [group] = port["security_groups"]
    # companions of ML2, each serving its own collections
    sg = app.router.controllers["security-group-rules"].plugin
    ags = app.router.controllers["address-groups"].plugin
    ag = ags.create_address_group(ADMIN, {"project_id": "p1", "name": "ag",
                                          "addresses": ["192.0.2.0/28", "2001:db8::/64"]})
    sg.create_security_group_rule(ADMIN, {
        "project_id": "p1", "security_group_id": group, "direction": "ingress",
        "ethertype": "IPv4", "remote_address_group_id": ag["id"], "protocol": None,
        "port_range_min": None, "port_range_max": None, "remote_ip_prefix": None,
        "remote_group_id": None, "description": ""})
    info = Ml2RpcCallbacks(plugin).security_group_info_for_devices(CTX, [port["id"]])
    assert "10.9.0.0/24" in info["sg_member_ips"][group]["IPv4"]
    assert info["address_group_ips"] == {ag["id"]: {"IPv4": ["192.0.2.0/28"],
                                                    "IPv6": ["2001:db8::/64"]}}
    assert any(rule["remote_address_group_id"] == ag["id"]
               for rule in info["security_groups"][group])
