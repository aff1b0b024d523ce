"""The ovn driver's translation of API views into Northbound rows (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from neutrino.ovn import names
from neutrino.plugins.ml2.drivers.ovn import rows

GROUP = "5a0e4a1c-0000-4000-8000-000000000001"
PG = "pg_5a0e4a1c_0000_4000_8000_000000000001"
AG = "7b1f0000-0000-4000-8000-000000000002"


def rule(**attrs: Any) -> dict[str, Any]:
    return {"id": "r1", "security_group_id": GROUP, "direction": "ingress",
            "ethertype": "IPv4", "protocol": None, "port_range_min": None,
            "port_range_max": None, "remote_ip_prefix": None, "remote_group_id": None,
            "remote_address_group_id": None, **attrs}


@pytest.mark.parametrize(("attrs", "match"), [
    ({}, f"outport == @{PG} && ip4"),
    ({"direction": "egress", "ethertype": "IPv6"}, f"inport == @{PG} && ip6"),
    ({"protocol": "tcp", "port_range_min": 22, "port_range_max": 22,
      "remote_ip_prefix": "10.0.0.0/8"},
     f"outport == @{PG} && ip4 && ip4.src == 10.0.0.0/8 && tcp && tcp.dst == 22"),
    ({"protocol": "udp", "port_range_min": 1000, "port_range_max": 2000},
     f"outport == @{PG} && ip4 && udp && udp.dst >= 1000 && udp.dst <= 2000"),
    ({"protocol": "icmp", "port_range_min": 8, "port_range_max": 0},
     f"outport == @{PG} && ip4 && icmp4 && icmp4.type == 8 && icmp4.code == 0"),
    ({"protocol": "ipv6-icmp", "ethertype": "IPv6"}, f"outport == @{PG} && ip6 && icmp6"),
    ({"protocol": "112"}, f"outport == @{PG} && ip4 && ip.proto == 112"),
    ({"remote_group_id": GROUP, "direction": "egress"},
     f"inport == @{PG} && ip4 && ip4.dst == ${PG}_ip4"),
    ({"remote_address_group_id": AG, "ethertype": "IPv6"},
     f"outport == @{PG} && ip6 && ip6.src == $ag_{AG.replace('-', '_')}_ip6"),
])
def test_a_rule_as_an_acl_match(attrs: dict[str, Any], match: str) -> None:
    assert rows.acl_match(rule(**attrs)) == match


def test_a_security_group_is_a_port_group_with_an_acl_per_rule() -> None:
    group = {"id": GROUP, "stateful": False, "revision_number": 3,
             "security_group_rules": [rule(remote_address_group_id=AG), rule(id="r2")]}
    row, acls = rows.port_group(group)
    assert row.key.value == PG and row.revision == 3
    assert [(a["external_ids"][names.SECURITY_GROUP_RULE], a["action"]) for a in acls] == [
        ("r1", "allow-stateless"), ("r2", "allow-stateless")]


def test_an_address_group_is_an_address_set_per_ip_version() -> None:
    sets = rows.address_sets(AG, ["10.2.0.5/32", "10.1.0.0/24", "2001:db8::/64"])
    name = f"ag_{AG.replace('-', '_')}"
    assert [(s.key.table, s.key.value, s.columns["addresses"]) for s in sets] == [
        ("Address_Set", f"{name}_ip4", ["10.1.0.0/24", "10.2.0.5/32"]),
        ("Address_Set", f"{name}_ip6", ["2001:db8::/64"])]
    # a version of which the group has no address: an empty set, which matches nothing
    assert [s.columns["addresses"] for s in rows.address_sets(AG, [])] == [[], []]


def port(**attrs: Any) -> dict[str, Any]:
    return {"id": "p1", "network_id": "n1", "mac_address": "fa:16:3e:00:00:01",
            "fixed_ips": [{"subnet_id": "s1", "ip_address": "10.0.0.5"}],
            "revision_number": 4, "admin_state_up": True, "device_owner": "compute:nova",
            "device_id": "vm", "project_id": "p", "name": "web",
            "port_security_enabled": True, "security_groups": [GROUP],
            "allowed_address_pairs": [], "binding:host_id": "compute-1", **attrs}


SUBNETS = {"s1": {"id": "s1", "cidr": "10.0.0.0/24", "ip_version": 4, "enable_dhcp": True}}


def test_an_instance_port() -> None:
    row = rows.switch_port(port(allowed_address_pairs=[
        {"ip_address": "10.0.0.100", "mac_address": "fa:16:3e:00:00:01"},
        {"ip_address": "10.0.0.101", "mac_address": "fa:16:3e:00:00:99"}]), SUBNETS)
    columns = row.columns
    assert columns["addresses"] == ["fa:16:3e:00:00:01 10.0.0.5"]
    assert columns["port_security"] == ["fa:16:3e:00:00:01 10.0.0.5 10.0.0.100",
                                        "fa:16:3e:00:00:99 10.0.0.101"]
    assert columns["options"] == {"requested-chassis": "compute-1"}
    assert columns["external_ids"][names.CIDRS] == "10.0.0.5/24"
    assert columns["dhcpv4_options"].key == rows.dhcp_key("s1")
    assert row.groups == {PG, names.DROP_PORT_GROUP}
    assert row.parent is not None and row.parent.key == rows.switch_key("n1")


def test_ports_without_port_security_a_router_port_and_a_metadata_port() -> None:
    open_port = rows.switch_port(port(port_security_enabled=False, security_groups=[]), SUBNETS)
    assert open_port.columns["addresses"] == ["fa:16:3e:00:00:01 10.0.0.5", "unknown"]
    assert open_port.columns["port_security"] == [] and open_port.groups == set()
    router = rows.switch_port(port(device_owner="network:router_interface"), SUBNETS)
    assert router.columns["type"] == "router" and router.columns["addresses"] == ["router"]
    assert router.columns["options"] == {"router-port": "lrp-p1"} and router.groups == set()
    metadata = rows.switch_port(port(device_owner="network:distributed", security_groups=[]),
                                SUBNETS)
    assert metadata.columns["type"] == "localport"
    assert metadata.columns["dhcpv4_options"] == []
    # the network's own ports are trusted: no port security, and no flooding to them
    assert metadata.columns["port_security"] == [] and metadata.groups == set()
    assert metadata.columns["addresses"] == ["fa:16:3e:00:00:01 10.0.0.5"]


def test_dhcp_options_say_routes_in_a_stable_order() -> None:
    subnet = {"id": "s1", "cidr": "10.0.0.0/24", "ip_version": 4, "enable_dhcp": True,
              "gateway_ip": "10.0.0.1", "dns_nameservers": ["10.0.0.2"], "revision_number": 1,
              "host_routes": [{"destination": "192.168.0.0/16", "nexthop": "10.0.0.5"},
                              {"destination": "172.16.0.0/12", "nexthop": "10.0.0.6"}]}
    row = rows.dhcp_options(subnet, {"mtu": 1442}, metadata_ip="10.0.0.3")
    assert row is not None
    options = row.columns["options"]
    assert options["classless_static_route"] == (
        "{169.254.169.254/32,10.0.0.3, 172.16.0.0/12,10.0.0.6, 192.168.0.0/16,10.0.0.5, "
        "0.0.0.0/0,10.0.0.1}")
    assert options["mtu"] == "1442" and options["dns_server"] == "{10.0.0.2}"
    assert options["server_mac"] == rows.server_mac("s1")
    assert rows.dhcp_options({**subnet, "enable_dhcp": False}, {}) is None
    assert rows.dhcp_options({**subnet, "ip_version": 6, "cidr": "2001:db8::/64"}, {}) is None
