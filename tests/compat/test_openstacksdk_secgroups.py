"""openstacksdk against neutrino's security groups, their rules and address groups."""

from __future__ import annotations

import pytest
from openstack import exceptions as sdk_exc


def test_security_group_lifecycle(conn):
    assert [g.name for g in conn.network.security_groups()] == ["default"]
    group = conn.network.create_security_group(name="sdk-web", description="web")
    assert group.stateful is True and len(group.security_group_rules) == 2
    rule = conn.network.create_security_group_rule(
        security_group_id=group.id, direction="ingress", protocol="tcp",
        port_range_min=80, port_range_max=80, remote_ip_prefix="10.0.0.9/8")
    assert (rule.remote_ip_prefix, rule.normalized_cidr) == ("10.0.0.9/8", "10.0.0.0/8")
    with pytest.raises(sdk_exc.ConflictException):
        conn.network.create_security_group_rule(
            security_group_id=group.id, direction="ingress", protocol="6",
            port_range_min=80, port_range_max=80, remote_ip_prefix="10.0.0.0/8")
    assert conn.network.find_security_group("sdk-web").id == group.id
    listed = {r.id for r in conn.network.security_group_rules(security_group_id=group.id)}
    assert rule.id in listed and len(listed) == 3
    group = conn.network.update_security_group(group, name="sdk-www", stateful=False)
    assert (group.name, group.stateful) == ("sdk-www", False)

    net = conn.network.create_network(name="sdk-sg-net")
    conn.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.80.0.0/24")
    port = conn.network.create_port(network_id=net.id, security_group_ids=[group.id])
    assert port.security_group_ids == [group.id]
    with pytest.raises(sdk_exc.ConflictException):
        conn.network.delete_security_group(group)
    port = conn.network.update_port(port, security_group_ids=[])
    assert port.security_group_ids == []
    conn.network.delete_security_group_rule(rule)
    conn.network.delete_security_group(group)
    assert conn.network.find_security_group("sdk-www") is None


def test_address_groups(conn):
    group = conn.network.create_address_group(name="sdk-ag", addresses=["10.1.0.7/24"])
    assert group.addresses == ["10.1.0.0/24"]
    group = conn.network.add_addresses_to_address_group(group, ["10.2.0.0/24"])
    assert group.addresses == ["10.1.0.0/24", "10.2.0.0/24"]
    group = conn.network.remove_addresses_from_address_group(group, ["10.1.0.0/24"])
    assert group.addresses == ["10.2.0.0/24"]
    sg = conn.network.create_security_group(name="sdk-ag-user")
    rule = conn.network.create_security_group_rule(
        security_group_id=sg.id, direction="ingress", remote_address_group_id=group.id)
    with pytest.raises(sdk_exc.ConflictException):
        conn.network.delete_address_group(group)
    conn.network.delete_security_group_rule(rule)
    conn.network.delete_address_group(group)
    assert conn.network.find_address_group("sdk-ag") is None
