"""openstacksdk against neutrino's routers, floating IPs and port forwardings."""

from __future__ import annotations

import pytest
from openstack import exceptions as sdk_exc


@pytest.fixture(scope="module")
def topology(conn):
    ext = conn.network.create_network(name="sdk-ext", is_router_external=True)
    ext_subnet = conn.network.create_subnet(network_id=ext.id, ip_version=4,
                                            cidr="172.24.8.0/24")
    inner = conn.network.create_network(name="sdk-inner")
    subnet = conn.network.create_subnet(network_id=inner.id, ip_version=4,
                                        cidr="10.60.0.0/24")
    return ext, ext_subnet, inner, subnet


def test_router_lifecycle(conn, topology):
    ext, ext_subnet, inner, subnet = topology
    router = conn.network.create_router(name="sdk-router")
    assert router.status == "ACTIVE" and router.external_gateway_info is None
    router = conn.network.update_router(router, external_gateway_info={"network_id": ext.id})
    info = router.external_gateway_info
    assert info["network_id"] == ext.id and info["enable_snat"] is True
    assert info["external_fixed_ips"][0]["subnet_id"] == ext_subnet.id
    added = conn.network.add_interface_to_router(router, subnet_id=subnet.id)
    assert added["subnet_id"] == subnet.id and added["port_id"]
    port = conn.network.get_port(added["port_id"])
    assert port.device_owner == "network:router_interface"
    assert port.fixed_ips[0]["ip_address"] == subnet.gateway_ip

    route = {"destination": "192.168.50.0/24", "nexthop": "10.60.0.9"}
    router = conn.network.add_extra_routes_to_router(router, body={"router": {
        "routes": [route]}})
    assert router.routes == [route]
    router = conn.network.remove_extra_routes_from_router(router, body={"router": {
        "routes": [route]}})
    assert router.routes == []
    router = conn.network.update_router(router, routes=[route], name="sdk-router2")
    assert router.routes == [route] and router.name == "sdk-router2"
    assert conn.network.find_router("sdk-router2").id == router.id

    with pytest.raises(sdk_exc.ConflictException):
        conn.network.delete_router(router)
    conn.network.update_router(router, routes=[])
    conn.network.remove_interface_from_router(router, subnet_id=subnet.id)
    conn.network.update_router(router, external_gateway_info={})
    assert conn.network.get_router(router.id).external_gateway_info is None
    conn.network.delete_router(router)
    assert conn.network.find_router(router.id) is None


def test_floating_ips_and_port_forwarding(conn, topology):
    ext, _, inner, subnet = topology
    router = conn.network.create_router(name="sdk-fip-router",
                                        external_gateway_info={"network_id": ext.id})
    conn.network.add_interface_to_router(router, subnet_id=subnet.id)
    vm = conn.network.create_port(network_id=inner.id, name="sdk-vm")
    fip = conn.network.create_ip(floating_network_id=ext.id, port_id=vm.id)
    assert fip.port_id == vm.id and fip.router_id == router.id
    assert fip.fixed_ip_address == vm.fixed_ips[0]["ip_address"]
    assert fip.port_details["name"] == "sdk-vm"
    assert conn.network.find_ip(fip.floating_ip_address).id == fip.id
    assert [f.id for f in conn.network.ips(port_id=vm.id)] == [fip.id]
    fip = conn.network.update_ip(fip, port_id=None)
    assert fip.port_id is None and fip.router_id is None

    forward = conn.network.create_port_forwarding(
        floatingip_id=fip.id, internal_port_id=vm.id,
        internal_ip_address=vm.fixed_ips[0]["ip_address"], internal_port=22,
        external_port=2222, protocol="tcp")
    assert (forward.internal_port, forward.external_port) == (22, 2222)
    listed = list(conn.network.port_forwardings(fip))
    assert [f.id for f in listed] == [forward.id]
    conn.network.update_port_forwarding(forward, fip, external_port=2200)
    assert conn.network.get_port_forwarding(forward, fip).external_port == 2200
    conn.network.delete_port_forwarding(forward, fip)
    assert list(conn.network.port_forwardings(fip)) == []

    conn.network.delete_ip(fip)
    conn.network.delete_port(vm)
    conn.network.remove_interface_from_router(router, subnet_id=subnet.id)
    conn.network.delete_router(router)
    assert conn.network.find_ip(fip.id) is None


def test_null_routes_empty_fip_update_and_network_delete(conn, topology):
    """As against Neutron: routes=None clears the routes, an empty floating IP
    update dissociates it, and an external network goes with its idle floating IPs."""
    ext, _, inner, subnet = topology
    router = conn.network.create_router(name="sdk-null-router",
                                        external_gateway_info={"network_id": ext.id})
    conn.network.add_interface_to_router(router, subnet_id=subnet.id)
    route = {"destination": "192.168.60.0/24", "nexthop": "10.60.0.9"}
    router = conn.network.update_router(router, routes=[route])
    assert router.routes == [route]
    assert conn.network.update_router(router, routes=None).routes == []
    assert conn.network.get_router(router.id).routes == []

    vm = conn.network.create_port(network_id=inner.id, name="sdk-vm2")
    fip = conn.network.create_ip(floating_network_id=ext.id, port_id=vm.id)
    assert conn.network.update_ip(fip, description="kept").port_id == vm.id
    resp = conn.network.put(f"/floatingips/{fip.id}", json={"floatingip": {}})
    assert resp.status_code == 200, resp.text
    fip = conn.network.get_ip(fip.id)
    assert (fip.port_id, fip.fixed_ip_address, fip.router_id) == (None, None, None)
    conn.network.delete_ip(fip)
    conn.network.delete_port(vm)
    conn.network.remove_interface_from_router(router, subnet_id=subnet.id)
    conn.network.delete_router(router)

    other = conn.network.create_network(name="sdk-ext2", is_router_external=True)
    conn.network.create_subnet(network_id=other.id, ip_version=4, cidr="172.24.11.0/24")
    idle = [conn.network.create_ip(floating_network_id=other.id) for _ in range(2)]
    conn.network.delete_network(other)
    assert conn.network.find_network(other.id) is None
    for made in idle:
        assert conn.network.find_ip(made.id) is None
