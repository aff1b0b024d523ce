"""openstacksdk against a no-auth neutrino: the proxy layer and the cloud layer.

The connection is made the way the README documents: ``auth_type: none``
and ``network_endpoint_override`` pointing at the server root (no ``/v2.0``;
the SDK finds the version from the root document).
"""

from __future__ import annotations

import ipaddress

import openstack
import openstack.config
import pytest
from openstack import exceptions as sdk_exc
from openstack.network.v2 import port as sdk_port

from tests.compat.conftest import CLOUD


def test_connect_from_clouds_yaml(noauth_server, clouds_yaml):
    config = openstack.config.OpenStackConfig(
        config_files=[str(clouds_yaml)], vendor_files=[], secure_files=[],
        load_envvars=False)
    connection = openstack.connection.Connection(config=config.get_one(cloud=CLOUD))
    try:
        net = connection.network.create_network(name="from-clouds-yaml")
        assert connection.network.get_endpoint().rstrip("/") == f"{noauth_server.url}/v2.0"
        assert net.id in {n.id for n in connection.network.networks()}
        connection.network.delete_network(net)
    finally:
        connection.close()


def test_network_crud(conn):
    net = conn.network.create_network(name="sdk-net", description="first")
    assert net.status == "ACTIVE" and net.is_admin_state_up is True
    assert net.mtu == 1500 and net.is_router_external is False and net.is_shared is False
    assert net.project_id and net.created_at and net.revision_number is not None
    created_revision = net.revision_number  # the SDK updates ``net`` in place

    assert conn.network.get_network(net.id).name == "sdk-net"
    assert conn.network.find_network("sdk-net").id == net.id
    assert [n.id for n in conn.network.networks(name="sdk-net")] == [net.id]

    updated = conn.network.update_network(net, name="sdk-net2", description="second",
                                          is_admin_state_up=False)
    assert (updated.name, updated.description, updated.is_admin_state_up) == (
        "sdk-net2", "second", False)
    assert updated.revision_number > created_revision
    assert conn.network.find_network("sdk-net") is None

    ext = conn.network.create_network(name="sdk-ext", is_router_external=True, shared=True)
    assert ext.is_router_external is True and ext.is_shared is True
    external = {n.id for n in conn.network.networks(is_router_external=True)}
    assert ext.id in external and net.id not in external

    conn.network.delete_network(net)
    conn.network.delete_network(ext)
    with pytest.raises(sdk_exc.NotFoundException):
        conn.network.get_network(net.id)
    assert conn.network.delete_network(net.id, ignore_missing=True) is None
    with pytest.raises(sdk_exc.NotFoundException):
        conn.network.delete_network(net.id, ignore_missing=False)


def test_update_with_if_revision(conn):
    net = conn.network.create_network(name="sdk-revision")
    with pytest.raises(sdk_exc.PreconditionFailedException):
        conn.network.update_network(net, if_revision=net.revision_number + 10, name="x")
    updated = conn.network.update_network(net, if_revision=net.revision_number, name="y")
    assert updated.name == "y"
    conn.network.delete_network(net)


def test_subnets_v4_and_v6(conn):
    net = conn.network.create_network(name="sdk-subnets")
    v4 = conn.network.create_subnet(
        network_id=net.id, ip_version=4, cidr="10.20.0.0/24", name="v4",
        allocation_pools=[{"start": "10.20.0.10", "end": "10.20.0.99"}],
        dns_nameservers=["192.0.2.53"],
        host_routes=[{"destination": "198.51.100.0/24", "nexthop": "10.20.0.254"}])
    assert v4.gateway_ip == "10.20.0.1" and v4.is_dhcp_enabled is True
    assert v4.allocation_pools == [{"start": "10.20.0.10", "end": "10.20.0.99"}]
    assert v4.dns_nameservers == ["192.0.2.53"]
    assert v4.host_routes == [{"destination": "198.51.100.0/24", "nexthop": "10.20.0.254"}]

    v6 = conn.network.create_subnet(
        network_id=net.id, ip_version=6, cidr="fd00:20::/64", name="v6",
        ipv6_ra_mode="slaac", ipv6_address_mode="slaac")
    assert (v6.ip_version, v6.gateway_ip) == (6, "fd00:20::")  # subnet-router anycast
    assert (v6.ipv6_ra_mode, v6.ipv6_address_mode) == ("slaac", "slaac")

    assert conn.network.get_network(net.id).subnet_ids and set(
        conn.network.get_network(net.id).subnet_ids) == {v4.id, v6.id}
    assert {s.id for s in conn.network.subnets(network_id=net.id)} == {v4.id, v6.id}
    assert [s.id for s in conn.network.subnets(network_id=net.id, ip_version=6)] == [v6.id]

    updated = conn.network.update_subnet(v4, name="v4b", dns_nameservers=[],
                                         is_dhcp_enabled=False)
    assert (updated.name, updated.dns_nameservers, updated.is_dhcp_enabled) == (
        "v4b", [], False)
    no_gateway = conn.network.update_subnet(v4, gateway_ip=None)
    assert no_gateway.gateway_ip is None

    with pytest.raises(sdk_exc.BadRequestException):
        conn.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.20.0.0/33")
    conn.network.delete_subnet(v6)
    assert [s.id for s in conn.network.subnets(network_id=net.id)] == [v4.id]
    conn.network.delete_network(net)  # takes the remaining subnet with it
    with pytest.raises(sdk_exc.NotFoundException):
        conn.network.get_subnet(v4.id)


def test_ports_with_fixed_ips(conn):
    net = conn.network.create_network(name="sdk-ports")
    v4 = conn.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.30.0.0/24")
    v6 = conn.network.create_subnet(network_id=net.id, ip_version=6, cidr="fd00:30::/64",
                                    ipv6_ra_mode="slaac", ipv6_address_mode="slaac")
    port = conn.network.create_port(
        network_id=net.id, name="p1", mac_address="fa:16:3e:00:30:01",
        device_owner="compute:nova", device_id="vm-1",
        fixed_ips=[{"subnet_id": v4.id, "ip_address": "10.30.0.10"}])
    by_subnet = {f["subnet_id"]: f["ip_address"] for f in port.fixed_ips}
    assert by_subnet[v4.id] == "10.30.0.10"
    # A SLAAC subnet gives every port its EUI-64 address, as in Neutron.
    assert by_subnet[v6.id] == "fd00:30::f816:3eff:fe00:3001"
    assert port.mac_address == "fa:16:3e:00:30:01" and port.status == "DOWN"

    auto = conn.network.create_port(network_id=net.id, name="p2")
    auto_v4 = [f["ip_address"] for f in auto.fixed_ips if f["subnet_id"] == v4.id]
    assert len(auto_v4) == 1 and ipaddress.ip_address(auto_v4[0]) in ipaddress.ip_network(
        "10.30.0.0/24")
    assert auto.mac_address != port.mac_address

    assert {p.id for p in conn.network.ports(network_id=net.id)} == {port.id, auto.id}
    assert [p.id for p in conn.network.ports(fixed_ips=["ip_address=10.30.0.10"])] == [port.id]
    assert [p.id for p in conn.network.ports(device_id="vm-1")] == [port.id]

    moved = conn.network.update_port(
        port, name="p1b", fixed_ips=[{"subnet_id": v4.id, "ip_address": "10.30.0.11"}])
    assert moved.name == "p1b"
    # The SLAAC address stays: Neutron only drops it when asked to explicitly.
    assert sorted(f["ip_address"] for f in moved.fixed_ips) == [
        "10.30.0.11", "fd00:30::f816:3eff:fe00:3001"]
    assert conn.network.get_port(port.id).fixed_ips == moved.fixed_ips
    # the port's entries plus one naming only the subnet: a second address there
    two = conn.network.update_port(port, fixed_ips=[*moved.fixed_ips, {"subnet_id": v4.id}])
    on_v4 = sorted(f["ip_address"] for f in two.fixed_ips if f["subnet_id"] == v4.id)
    assert len(on_v4) == 2 and "10.30.0.11" in on_v4
    moved = conn.network.update_port(port, fixed_ips=moved.fixed_ips)

    with pytest.raises(sdk_exc.ConflictException):  # the address is taken
        conn.network.create_port(network_id=net.id,
                                 fixed_ips=[{"subnet_id": v4.id, "ip_address": "10.30.0.11"}])
    with pytest.raises(sdk_exc.ConflictException):  # ports are still in use
        conn.network.delete_network(net)

    bulk = list(sdk_port.Port.bulk_create(conn.network, [
        {"network_id": net.id, "name": "b1"}, {"network_id": net.id, "name": "b2"}]))
    assert sorted(p.name for p in bulk) == ["b1", "b2"]

    for p in (port, auto, *bulk):
        conn.network.delete_port(p)
    assert list(conn.network.ports(network_id=net.id)) == []
    conn.network.delete_network(net)


def test_subnet_pools(conn):
    pool = conn.network.create_subnet_pool(
        name="sdk-pool", prefixes=["10.100.0.0/16"], default_prefixlen=24,
        min_prefixlen=20, max_prefixlen=28)
    assert (pool.ip_version, pool.default_prefix_length, pool.minimum_prefix_length,
            pool.maximum_prefix_length) == (4, 24, 20, 28)
    assert conn.network.find_subnet_pool("sdk-pool").id == pool.id
    assert pool.id in {p.id for p in conn.network.subnet_pools()}

    grown = conn.network.update_subnet_pool(
        pool, prefixes=["10.100.0.0/16", "10.101.0.0/16"], description="grown")
    assert grown.prefixes == ["10.100.0.0/15"]  # merged, as Neutron does
    assert grown.description == "grown"

    net = conn.network.create_network(name="sdk-pool-net")
    carved = conn.network.create_subnet(network_id=net.id, ip_version=4,
                                        subnetpool_id=pool.id, prefixlen=26)
    assert carved.subnet_pool_id == pool.id
    assert ipaddress.ip_network(carved.cidr).prefixlen == 26
    assert ipaddress.ip_network(carved.cidr).subnet_of(ipaddress.ip_network("10.100.0.0/15"))
    default_len = conn.network.create_subnet(network_id=net.id, ip_version=4,
                                             subnetpool_id=pool.id)
    assert ipaddress.ip_network(default_len.cidr).prefixlen == 24

    pool6 = conn.network.create_subnet_pool(name="sdk-pool6", prefixes=["fd50::/48"],
                                            default_prefixlen=64, is_default=True,
                                            shared=True)
    assert (pool6.ip_version, pool6.is_default, pool6.is_shared) == (6, True, True)
    from_default = conn.network.create_subnet(network_id=net.id, ip_version=6,
                                              use_default_subnet_pool=True)
    assert from_default.subnet_pool_id == pool6.id
    assert ipaddress.ip_network(from_default.cidr).subnet_of(ipaddress.ip_network("fd50::/48"))

    with pytest.raises(sdk_exc.BadRequestException, match="existing allocations"):
        conn.network.delete_subnet_pool(pool)
    conn.network.delete_network(net)
    conn.network.delete_subnet_pool(pool)
    conn.network.delete_subnet_pool(pool6)
    assert conn.network.find_subnet_pool("sdk-pool") is None


def test_tags(conn):
    red_blue = conn.network.create_network(name="sdk-tags-a")
    red = conn.network.create_network(name="sdk-tags-b")
    conn.network.set_tags(red_blue, ["red", "blue"])
    conn.network.set_tags(red, ["red"])
    assert sorted(conn.network.get_network(red_blue.id).tags) == ["blue", "red"]

    def names(**query):
        return sorted(n.name for n in conn.network.networks(**query)
                      if n.name.startswith("sdk-tags-"))

    assert names(tags="red,blue") == ["sdk-tags-a"]
    assert names(tags=["red"]) == ["sdk-tags-a", "sdk-tags-b"]
    assert names(any_tags="blue,green") == ["sdk-tags-a"]
    assert names(not_tags="blue") == ["sdk-tags-b"]
    assert names(not_any_tags="blue,red") == []

    conn.network.add_tag(red, "green")
    conn.network.remove_tag(red_blue, "red")
    assert sorted(conn.network.get_network(red.id).tags) == ["green", "red"]
    assert conn.network.get_network(red_blue.id).tags == ["blue"]
    assert conn.network.check_tag(red, "green") is not None
    with pytest.raises(sdk_exc.NotFoundException):
        conn.network.remove_tag(red, "absent")
    conn.network.remove_all_tags(red)
    assert conn.network.get_network(red.id).tags == []

    subnet = conn.network.create_subnet(network_id=red.id, ip_version=4, cidr="10.40.0.0/24")
    conn.network.set_tags(subnet, ["s"])
    assert [s.id for s in conn.network.subnets(tags="s")] == [subnet.id]
    for net in (red_blue, red):
        conn.network.delete_network(net)


def test_tags_in_create_call(conn):
    """As Neutron: only ports take tags in a create body; tag-creation adds tags."""
    with pytest.raises(sdk_exc.BadRequestException, match="'tags' not allowed in POST"):
        conn.network.create_network(name="sdk-tags-create", tags=["x", "y"])
    net = conn.network.create_network(name="sdk-tags-create")
    port = conn.network.create_port(network_id=net.id, tags=["p"])
    assert conn.network.get_port(port.id).tags == ["p"]
    conn.network.add_tags(net, ["x", "y"])
    conn.network.add_tags(net, ["y", "z"])
    assert sorted(conn.network.get_network(net.id).tags) == ["x", "y", "z"]
    conn.network.delete_port(port)
    conn.network.delete_network(net)


def test_quotas(conn):
    project = conn.network.create_network(name="sdk-quota").project_id
    quota = conn.network.get_quota(project)
    assert (quota.networks, quota.subnets, quota.ports) == (100, 100, 500)
    details = conn.network.get_quota(project, details=True)
    assert details.networks["limit"] == 100 and details.networks["used"] >= 1

    assert conn.network.update_quota(project, networks=7, ports=9).networks == 7
    assert (conn.network.get_quota(project).networks, conn.network.get_quota(project).ports) == (
        7, 9)
    assert project in {q.project_id for q in conn.network.quotas()}
    assert conn.network.get_quota_default(project).networks == 100

    conn.network.delete_quota(project)
    assert conn.network.get_quota(project).networks == 100
    conn.network.delete_network(conn.network.find_network("sdk-quota"))


def test_pagination_and_sorting(conn):
    made = [conn.network.create_network(name=f"sdk-page-{i}") for i in range(5)]
    # limit=2 makes the SDK follow networks_links page by page
    paged = [n.name for n in conn.network.networks(limit=2, sort_key="name", sort_dir="desc")
             if n.name.startswith("sdk-page-")]
    assert paged == [f"sdk-page-{i}" for i in reversed(range(5))]
    for net in made:
        conn.network.delete_network(net)


def test_extensions(conn):
    aliases = {e.alias for e in conn.network.extensions()}
    assert {"external-net", "standard-attr-tag", "quotas", "subnet_allocation"} <= aliases
    assert conn.network.find_extension("standard-attr-tag").alias == "standard-attr-tag"
    assert conn.network.find_extension("no-such-extension") is None


def test_cloud_layer(conn):
    net = conn.create_network("cloud-net", external=True)
    assert net.is_router_external is True
    subnet = conn.create_subnet("cloud-net", cidr="10.60.0.0/24", subnet_name="cloud-sub",
                                enable_dhcp=True, dns_nameservers=["192.0.2.1"])
    assert conn.get_subnet("cloud-sub").cidr == "10.60.0.0/24"
    assert conn.update_subnet(subnet.id, disable_gateway_ip=True).gateway_ip is None
    port = conn.create_port(net.id, name="cloud-port",
                            fixed_ips=[{"ip_address": "10.60.0.5"}])
    assert port.fixed_ips == [{"subnet_id": subnet.id, "ip_address": "10.60.0.5"}]
    assert [p.id for p in conn.search_ports("cloud-port")] == [port.id]
    assert conn.update_port("cloud-port", name="cloud-port2").name == "cloud-port2"
    assert net.id in {n.id for n in conn.get_external_networks()}
    assert conn.delete_port("cloud-port2") is True
    assert conn.delete_subnet("cloud-sub") is True
    assert conn.delete_network("cloud-net") is True
    assert conn.get_network("cloud-net") is None
