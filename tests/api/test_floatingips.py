"""Floating IPs: allocation from external networks, association through routers."""

from __future__ import annotations

import concurrent.futures
import ipaddress

import pytest

from tests.harness import ApiClient, expect_error

FIP_KEYS = {
    "id", "description", "project_id", "tenant_id", "floating_ip_address",
    "floating_network_id", "router_id", "port_id", "fixed_ip_address", "status",
    "port_details", "tags", "created_at", "updated_at", "revision_number",
    "port_forwardings",  # the shared servers load the port_forwarding plugin
    "qos_policy_id",  # and the qos plugin (qos-fip)
}
MISSING = "00000000-0000-0000-0000-000000000000"


def fip(client: ApiClient, network_id: str, **attrs) -> dict:
    resp = client.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": network_id, **attrs}})
    assert resp.status_code == 201, resp.text
    return resp.json()["floatingip"]


def update(client: ApiClient, fip_id: str, **attrs):
    return client.put(f"/v2.0/floatingips/{fip_id}", json={"floatingip": attrs})


@pytest.fixture
def external(admin):
    net = admin.network(**{"router:external": True})
    return net, admin.subnet(net["id"], "203.0.113.0/24")


@pytest.fixture
def routed(user, external):
    """A project network behind a router with a gateway on ``external``."""
    net = user.network()
    subnet = user.subnet(net["id"], "10.20.0.0/24")
    resp = user.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": external[0]["id"]}}})
    router = resp.json()["router"]
    resp = user.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                    json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    return net, subnet, router


def test_allocate_and_release(user, admin, external):
    net, subnet = external
    made = fip(user, net["id"], description="web")
    assert set(made) == FIP_KEYS
    assert ipaddress.ip_address(made["floating_ip_address"]) in ipaddress.ip_network(
        subnet["cidr"])
    assert made["status"] == "DOWN" and made["description"] == "web"
    assert (made["port_id"], made["router_id"], made["fixed_ip_address"],
            made["port_details"]) == (None, None, None, None)
    assert user.show("floatingips", made["id"]) == made
    [port] = admin.get("/v2.0/ports", params={"device_id": made["id"]}).json()["ports"]
    assert port["device_owner"] == "network:floatingip"
    assert port["fixed_ips"][0]["ip_address"] == made["floating_ip_address"]
    expect_error(admin.delete(f"/v2.0/ports/{port['id']}"), 409, "ServicePortInUse")
    assert user.delete(f"/v2.0/floatingips/{made['id']}").status_code == 204
    expect_error(user.get(f"/v2.0/floatingips/{made['id']}"), 404, "FloatingIPNotFound")
    assert admin.get("/v2.0/ports", params={"device_id": made["id"]}).json()["ports"] == []
    assert admin.delete(f"/v2.0/networks/{net['id']}").status_code == 204


def test_create_errors(user, admin, external):
    net, subnet = external
    internal = user.network()
    user.subnet(internal["id"], "10.30.0.0/24")
    expect_error(user.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": internal["id"]}}), 400, "BadRequest",
        f"Bad floatingip request: Network {internal['id']} is not a valid external network.")
    expect_error(user.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": MISSING}}), 404, "NetworkNotFound")
    expect_error(user.post("/v2.0/floatingips", json={"floatingip": {}}), 400,
                 "HTTPBadRequest")
    expect_error(user.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": net["id"], "floating_ip_address": "203.0.113.50"}}), 403,
        "PolicyNotAuthorized")
    chosen = fip(admin, net["id"], floating_ip_address="203.0.113.50")
    assert chosen["floating_ip_address"] == "203.0.113.50"
    expect_error(admin.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": net["id"], "floating_ip_address": "203.0.113.50"}}), 409,
        "IpAddressAlreadyAllocated")
    v6only = admin.network(**{"router:external": True})
    admin.subnet(v6only["id"], "2001:db8:77::/64")
    expect_error(user.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": v6only["id"]}}), 400, "BadRequest",
        f"Bad floatingip request: Network {v6only['id']} does not contain any IPv4 subnet.")
    on_subnet = fip(user, net["id"], subnet_id=subnet["id"])
    assert on_subnet["floating_ip_address"].startswith("203.0.113.")


def test_associate_reassociate_disassociate(user, external, routed):
    net, subnet, router = routed
    first = user.port(net["id"], name="vm1")
    second = user.port(net["id"], name="vm2")
    made = fip(user, external[0]["id"], port_id=first["id"])
    assert made["port_id"] == first["id"] and made["router_id"] == router["id"]
    assert made["fixed_ip_address"] == first["fixed_ips"][0]["ip_address"]
    details = made["port_details"]
    assert details["name"] == "vm1" and details["network_id"] == net["id"]
    assert details["mac_address"] == first["mac_address"]
    assert set(details) == {"name", "network_id", "mac_address", "admin_state_up", "status",
                            "device_id", "device_owner"}
    moved = update(user, made["id"], port_id=second["id"])
    assert moved.status_code == 200, moved.text
    assert moved.json()["floatingip"]["fixed_ip_address"] == \
        second["fixed_ips"][0]["ip_address"]
    listed = user.get("/v2.0/floatingips", params={"port_id": second["id"]})
    assert [f["id"] for f in listed.json()["floatingips"]] == [made["id"]]
    by_router = user.get("/v2.0/floatingips", params={"router_id": router["id"]})
    assert [f["id"] for f in by_router.json()["floatingips"]] == [made["id"]]
    released = update(user, made["id"], port_id=None).json()["floatingip"]
    assert (released["port_id"], released["router_id"], released["fixed_ip_address"],
            released["port_details"]) == (None, None, None, None)


def test_empty_update_dissociates(user, external, routed):
    """As Neutron: PUT {"floatingip": {}} clears the association; a body without
    port_id but with something else keeps it."""
    net, subnet, router = routed
    port = user.port(net["id"])
    made = fip(user, external[0]["id"], port_id=port["id"])
    kept = update(user, made["id"], description="still")
    assert kept.status_code == 200, kept.text
    assert kept.json()["floatingip"]["port_id"] == port["id"]
    resp = update(user, made["id"])
    assert resp.status_code == 200, resp.text
    cleared = resp.json()["floatingip"]
    assert (cleared["port_id"], cleared["fixed_ip_address"], cleared["router_id"],
            cleared["port_details"]) == (None, None, None, None)
    assert cleared["description"] == "still"
    assert user.show("floatingips", made["id"]) == cleared


def test_revision_numbers(user, external, routed):
    """As Neutron (its L3 router plugin): a new floating IP is revision 0, with
    or without a port; each update is one revision more."""
    net, subnet, router = routed
    port = user.port(net["id"])
    plain = fip(user, external[0]["id"])
    bound = fip(user, external[0]["id"], port_id=port["id"])
    for made in (plain, bound):
        assert made["revision_number"] == 0
        assert user.show("floatingips", made["id"])["revision_number"] == 0
    other = user.port(net["id"])
    moved = update(user, bound["id"], port_id=other["id"]).json()["floatingip"]
    assert moved["revision_number"] == 1
    assert update(user, bound["id"], port_id=None).json()["floatingip"][
        "revision_number"] == 2


def test_network_delete_takes_its_idle_floating_ips(admin, user, external, routed):
    """As Neutron: deleting an external network deletes its floating IPs that
    have no port (whoever owns them); one in use keeps the network in use, and a
    floating IP's port cannot be deleted by itself."""
    net, subnet, router = routed
    ext = admin.network(**{"router:external": True})
    admin.subnet(ext["id"], "198.51.100.0/24")
    idle = [fip(user, ext["id"]), fip(admin, ext["id"])]
    [fport] = admin.get("/v2.0/ports", params={"device_id": idle[0]["id"]}).json()["ports"]
    expect_error(admin.delete(f"/v2.0/ports/{fport['id']}"), 409, "ServicePortInUse")
    assert admin.delete(f"/v2.0/networks/{ext['id']}").status_code == 204
    for made in idle:
        expect_error(admin.get(f"/v2.0/floatingips/{made['id']}"), 404,
                     "FloatingIPNotFound")
    assert admin.get("/v2.0/ports", params={"network_id": ext["id"]}).json()["ports"] == []
    # associated: its port (and the router's gateway) keep the network
    ext_net = external[0]
    used = fip(user, ext_net["id"], port_id=user.port(net["id"])["id"])
    spare = fip(user, ext_net["id"])
    expect_error(admin.delete(f"/v2.0/networks/{ext_net['id']}"), 409, "NetworkInUse")
    assert user.show("floatingips", used["id"])["port_id"] is not None
    assert user.show("floatingips", spare["id"])["id"] == spare["id"]  # one transaction


def test_association_errors(user, other, admin, external, routed):
    net, subnet, router = routed
    ext_id = external[0]["id"]
    port = user.port(net["id"])
    made = fip(user, ext_id)
    # an address of the subnet that the port was not given (it gets one at random)
    not_its = next(a for a in ("10.20.0.250", "10.20.0.251")
                   if a != port["fixed_ips"][0]["ip_address"])
    expect_error(update(user, made["id"], port_id=port["id"], fixed_ip_address=not_its),
                 400, "BadRequest", f"Bad floatingip request: Port {port['id']} does not "
                                    f"have fixed ip {not_its}.")
    extra = user.subnet(net["id"], "10.21.0.0/24")
    double = user.port(net["id"], fixed_ips=[{"subnet_id": subnet["id"]},
                                             {"subnet_id": extra["id"]}])
    expect_error(update(user, made["id"], port_id=double["id"]), 400, "BadRequest",
                 f"Bad floatingip request: Port {double['id']} has multiple fixed IPv4 "
                 "addresses.  Must provide a specific IPv4 address when assigning a floating "
                 "IP.")
    on_extra = [ip for ip in double["fixed_ips"] if ip["subnet_id"] == extra["id"]][0]
    expect_error(update(user, made["id"], port_id=double["id"],
                        fixed_ip_address=on_extra["ip_address"]), 404,
                 "ExternalGatewayForFloatingIPNotFound")
    isolated = user.network()
    user.subnet(isolated["id"], "10.22.0.0/24")
    lonely = user.port(isolated["id"])
    expect_error(update(user, made["id"], port_id=lonely["id"]), 404,
                 "ExternalGatewayForFloatingIPNotFound")
    expect_error(update(user, made["id"], fixed_ip_address=port["fixed_ips"][0]["ip_address"]),
                 400, "BadRequest", "Bad floatingip request: fixed_ip_address cannot be "
                                    "specified without a port_id.")
    expect_error(update(user, made["id"], port_id=port["id"], fixed_ip_address="2001:db8::5"),
                 400, "BadRequest", "Bad floatingip request: Cannot process floating IP "
                 "association with 2001:db8::5, since that is not an IPv4 address.")
    dhcp = admin.port(net["id"], device_owner="network:dhcp")
    expect_error(update(admin, made["id"], port_id=dhcp["id"]), 400, "BadRequest",
                 f"Bad floatingip request: Port {dhcp['id']} is unable to be assigned a "
                 "floating IP.")
    bare = user.port(net["id"], fixed_ips=[])
    expect_error(update(user, made["id"], port_id=bare["id"]), 400, "BadRequest")
    expect_error(update(user, made["id"], port_id=MISSING), 404, "PortNotFound")
    theirs = other.port(other.network()["id"])
    expect_error(update(user, made["id"], port_id=theirs["id"]), 404, "PortNotFound")
    # one floating IP per fixed IP and external network
    assert update(user, made["id"], port_id=port["id"]).status_code == 200
    second = fip(user, ext_id)
    expect_error(update(user, second["id"], port_id=port["id"]), 409,
                 "FloatingIPPortAlreadyAssociated")
    # another project neither sees nor changes it
    expect_error(other.get(f"/v2.0/floatingips/{made['id']}"), 404, "FloatingIPNotFound")
    expect_error(update(other, made["id"], port_id=None), 404, "FloatingIPNotFound")
    expect_error(other.delete(f"/v2.0/floatingips/{made['id']}"), 404, "FloatingIPNotFound")
    # the router's gateway and interface stay while the floating IP needs them
    expect_error(user.put(f"/v2.0/routers/{router['id']}", json={"router": {
        "external_gateway_info": {}}}), 409, "RouterExternalGatewayInUseByFloatingIp")
    expect_error(user.put(f"/v2.0/routers/{router['id']}/remove_router_interface",
                          json={"subnet_id": subnet["id"]}), 409,
                 "RouterInterfaceInUseByFloatingIP")


def test_deleting_the_port_disassociates(user, external, routed):
    net, _, _ = routed
    port = user.port(net["id"])
    made = fip(user, external[0]["id"], port_id=port["id"])
    assert user.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    after = user.show("floatingips", made["id"])
    assert (after["port_id"], after["router_id"], after["fixed_ip_address"]) == (
        None, None, None)


def test_floatingip_pools(user, external):
    """Served at /v2.0/floatingip-pools, as Neutron serves it (and not with an
    underscore); the body's key keeps its underscore."""
    net, subnet = external
    expect_error(user.get("/v2.0/floatingip_pools"), 404, "HTTPNotFound")
    pools = user.get("/v2.0/floatingip-pools").json()["floatingip_pools"]
    mine = [p for p in pools if p["network_id"] == net["id"]]
    # listed as the caller's, as Neutron does
    assert mine == [{"subnet_id": subnet["id"], "subnet_name": subnet["name"],
                     "network_id": net["id"], "cidr": subnet["cidr"],
                     "project_id": user.project_id, "tenant_id": user.project_id}]
    filtered = user.get("/v2.0/floatingip-pools", params={"network_id": net["id"]})
    assert filtered.json()["floatingip_pools"] == mine


def test_floatingip_quota(admin, server, external):
    project = "fipquota-" + admin.project_id
    admin.put(f"/v2.0/quotas/{project}", json={"quota": {"floatingip": 1}})
    member = server.client(project, roles=("member",))
    fip(member, external[0]["id"])
    expect_error(member.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": external[0]["id"]}}), 409, "OverQuota")


def test_concurrent_creates_never_share_an_address(user, admin):
    net = admin.network(**{"router:external": True})
    admin.subnet(net["id"], "192.0.2.0/27")  # 29 addresses besides the gateway

    def create(_):
        return user.post("/v2.0/floatingips", json={"floatingip": {
            "floating_network_id": net["id"]}})

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        responses = list(pool.map(create, range(32)))
    made = [r.json()["floatingip"]["floating_ip_address"] for r in responses
            if r.status_code == 201]
    failed = [r for r in responses if r.status_code != 201]
    assert len(made) == len(set(made)) == 29, [r.text for r in failed][:3]
    assert all(r.status_code == 409 for r in failed), [r.text for r in failed][:3]
