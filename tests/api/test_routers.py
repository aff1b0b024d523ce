"""Routers: gateways, interfaces, extra routes, and the conflicts around them."""

from __future__ import annotations

import concurrent.futures

import pytest

from tests.harness import ApiClient, expect_error

ROUTER_KEYS = {
    "id", "name", "description", "project_id", "tenant_id", "admin_state_up", "status",
    "external_gateway_info", "routes", "tags", "created_at", "updated_at", "revision_number",
    "availability_zone_hints", "availability_zones",
    "conntrack_helpers", "enable_ndp_proxy",  # the shared server's conntrack_helper, ndp_proxy
    "flavor_id",  # and its flavors (l3-flavors)
}
MISSING = "00000000-0000-0000-0000-000000000000"


def router(client: ApiClient, **attrs) -> dict:
    resp = client.post("/v2.0/routers", json={"router": attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()["router"]


def update(client: ApiClient, router_id: str, **attrs):
    return client.put(f"/v2.0/routers/{router_id}", json={"router": attrs})


def add_interface(client: ApiClient, router_id: str, **body):
    return client.put(f"/v2.0/routers/{router_id}/add_router_interface", json=body)


def remove_interface(client: ApiClient, router_id: str, **body):
    return client.put(f"/v2.0/routers/{router_id}/remove_router_interface", json=body)


@pytest.fixture
def external(admin):
    """An external network with one subnet, as an operator makes it."""
    net = admin.network(**{"router:external": True})
    subnet = admin.subnet(net["id"], "172.24.4.0/24")
    return net, subnet


@pytest.fixture
def inside(user):
    net = user.network()
    return net, user.subnet(net["id"], "10.1.0.0/24")


def ports_of(admin: ApiClient, router_id: str, owner: str) -> list[dict]:
    resp = admin.get("/v2.0/ports", params={"device_id": router_id, "device_owner": owner})
    return resp.json()["ports"]


def test_create_with_defaults(user):
    created = router(user, name="r1")
    assert set(created) == ROUTER_KEYS
    assert created["name"] == "r1" and created["admin_state_up"] is True
    assert created["status"] == "ACTIVE"
    assert created["external_gateway_info"] is None and created["routes"] == []
    assert created["project_id"] == user.project_id
    shown = user.show("routers", created["id"])
    # an alive L3 agent left by another test on a shared database may have taken
    # the router after the create answered, which is when scheduling happens
    assert created["availability_zones"] == [] and len(shown.pop("availability_zones")) <= 1
    assert shown == {k: v for k, v in created.items() if k != "availability_zones"}
    listed = user.get("/v2.0/routers", params={"name": "r1"}).json()["routers"]
    assert [r["id"] for r in listed] == [created["id"]]


def test_gateway_set_changed_and_cleared(user, admin, external):
    net, subnet = external
    created = router(user, external_gateway_info={"network_id": net["id"]})
    gateway = created["external_gateway_info"]
    assert gateway["network_id"] == net["id"] and gateway["enable_snat"] is True
    [fixed] = gateway["external_fixed_ips"]
    assert fixed["subnet_id"] == subnet["id"]
    [port] = ports_of(admin, created["id"], "network:router_gateway")
    assert port["fixed_ips"] == [fixed] and port["network_id"] == net["id"]
    assert port["project_id"] == ""  # the router's, not the project's

    other = admin.network(**{"router:external": True})
    other_subnet = admin.subnet(other["id"], "198.51.100.0/24")
    moved = update(user, created["id"], external_gateway_info={"network_id": other["id"]})
    assert moved.status_code == 200, moved.text
    info = moved.json()["router"]["external_gateway_info"]
    assert info["network_id"] == other["id"]
    assert info["external_fixed_ips"][0]["subnet_id"] == other_subnet["id"]
    assert len(ports_of(admin, created["id"], "network:router_gateway")) == 1

    cleared = update(user, created["id"], external_gateway_info={})
    assert cleared.json()["router"]["external_gateway_info"] is None
    assert ports_of(admin, created["id"], "network:router_gateway") == []


def test_gateway_snat_and_fixed_ips_are_for_admins(user, admin, external):
    net, subnet = external
    body = {"network_id": net["id"], "enable_snat": False}
    expect_error(user.post("/v2.0/routers", json={"router": {"external_gateway_info": body}}),
                 403, "PolicyNotAuthorized")
    made = router(admin, external_gateway_info={
        **body, "external_fixed_ips": [{"subnet_id": subnet["id"], "ip_address": "172.24.4.9"}]})
    info = made["external_gateway_info"]
    assert info["enable_snat"] is False
    assert info["external_fixed_ips"] == [{"subnet_id": subnet["id"],
                                           "ip_address": "172.24.4.9"}]
    resp = update(admin, made["id"], external_gateway_info={"network_id": net["id"],
                                                            "enable_snat": True})
    assert resp.json()["router"]["external_gateway_info"]["enable_snat"] is True
    assert resp.json()["router"]["external_gateway_info"]["external_fixed_ips"] == \
        info["external_fixed_ips"]


def test_gateway_errors(user, admin, inside):
    net, _ = inside
    expect_error(user.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": net["id"]}}}), 400, "BadRequest",
        f"Bad router request: Network {net['id']} is not an external network.")
    # an external network without addresses still gives a gateway, with none
    bare = admin.network(**{"router:external": True})
    made = router(user, external_gateway_info={"network_id": bare["id"]})
    assert made["external_gateway_info"]["external_fixed_ips"] == []
    user.delete(f"/v2.0/routers/{made['id']}")
    ext = admin.network(**{"router:external": True})
    ext_subnet = admin.subnet(ext["id"], "192.0.2.0/24")
    expect_error(admin.post("/v2.0/routers", json={"router": {"external_gateway_info": {
        "network_id": ext["id"], "external_fixed_ips": [{"ip_address": "192.0.2.1"}]}}}),
        400, "BadRequest", "Bad router request: External IP 192.0.2.1 is the same as the "
                           "gateway IP.")
    # an interface subnet overlapping the external network's is refused
    inner = user.network()
    clash = user.subnet(inner["id"], "192.0.2.0/25")
    r = router(user, external_gateway_info={"network_id": ext["id"]})
    expect_error(add_interface(user, r["id"], subnet_id=clash["id"]), 400, "BadRequest",
                 f"Bad router request: Cidr 192.0.2.0/25 of subnet {clash['id']} overlaps "
                 f"with cidr 192.0.2.0/24 of subnet {ext_subnet['id']}.")
    user.delete(f"/v2.0/routers/{r['id']}")
    expect_error(user.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": MISSING}}}), 404, "NetworkNotFound")
    expect_error(user.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": "nope"}}}), 400, "HTTPBadRequest")
    expect_error(user.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": net["id"], "color": 1}}}), 400,
        "HTTPBadRequest")
    # nothing half-made stays: no router appeared
    assert user.get("/v2.0/routers", params={"project_id": user.project_id}
                    ).json()["routers"] == []


def test_interface_by_subnet(user, admin, inside):
    net, subnet = inside
    r = router(user)
    resp = add_interface(user, r["id"], subnet_id=subnet["id"])
    assert resp.status_code == 200, resp.text
    info = resp.json()
    assert set(info) == {"id", "tenant_id", "project_id", "port_id", "network_id",
                         "subnet_id", "subnet_ids"}
    assert (info["id"], info["network_id"], info["subnet_id"], info["subnet_ids"]) == (
        r["id"], net["id"], subnet["id"], [subnet["id"]])
    port = user.show("ports", info["port_id"])
    assert port["device_owner"] == "network:router_interface"
    assert port["device_id"] == r["id"]
    assert port["fixed_ips"] == [{"subnet_id": subnet["id"],
                                  "ip_address": subnet["gateway_ip"]}]
    expect_error(add_interface(user, r["id"], subnet_id=subnet["id"]), 400, "BadRequest",
                 f"Bad router request: Router already has a port on subnet {subnet['id']}.")
    overlapping = user.network()
    sub2 = user.subnet(overlapping["id"], "10.1.0.128/25")
    expect_error(add_interface(user, r["id"], subnet_id=sub2["id"]), 400, "BadRequest",
                 f"Bad router request: Cidr 10.1.0.128/25 of subnet {sub2['id']} overlaps "
                 f"with cidr 10.1.0.0/24 of subnet {subnet['id']}.")
    # the subnet and network are in use now
    expect_error(user.delete(f"/v2.0/subnets/{subnet['id']}"), 409, "SubnetInUse")
    expect_error(user.delete(f"/v2.0/networks/{net['id']}"), 409, "NetworkInUse")
    expect_error(user.delete(f"/v2.0/ports/{info['port_id']}"), 409, "ServicePortInUse",
                 f"Port {info['port_id']} cannot be deleted directly via the port API: has "
                 "device owner network:router_interface.")
    expect_error(user.delete(f"/v2.0/routers/{r['id']}"), 409, "RouterInUse",
                 f"Router {r['id']} has ports still attached: {info['port_id']}")

    removed = remove_interface(user, r["id"], subnet_id=subnet["id"])
    assert removed.status_code == 200, removed.text
    assert removed.json()["port_id"] == info["port_id"]
    expect_error(user.get(f"/v2.0/ports/{info['port_id']}"), 404, "PortNotFound")
    assert user.delete(f"/v2.0/routers/{r['id']}").status_code == 204
    assert user.delete(f"/v2.0/networks/{net['id']}").status_code == 204


def test_interface_by_port(user, inside):
    net, subnet = inside
    r = router(user)
    port = user.port(net["id"])
    resp = add_interface(user, r["id"], port_id=port["id"])
    assert resp.status_code == 200, resp.text
    assert resp.json()["port_id"] == port["id"]
    adopted = user.show("ports", port["id"])
    assert (adopted["device_owner"], adopted["device_id"]) == ("network:router_interface",
                                                               r["id"])
    other_router = router(user)
    expect_error(add_interface(user, other_router["id"], port_id=port["id"]), 409, "PortInUse")
    bare = user.port(net["id"], fixed_ips=[])
    expect_error(add_interface(user, other_router["id"], port_id=bare["id"]), 400,
                 "BadRequest", "Bad router request: Router port must have at least one "
                               "fixed IP.")
    two = user.network()
    a = user.subnet(two["id"], "10.2.0.0/24")
    b = user.subnet(two["id"], "10.3.0.0/24")
    double = user.port(two["id"], fixed_ips=[{"subnet_id": a["id"]}, {"subnet_id": b["id"]}])
    expect_error(add_interface(user, other_router["id"], port_id=double["id"]), 400,
                 "BadRequest", "Bad router request: Cannot have multiple IPv4 subnets on "
                               "router port.")
    expect_error(remove_interface(user, r["id"], port_id=bare["id"]), 404,
                 "RouterInterfaceNotFound",
                 f"Router {r['id']} does not have an interface with id {bare['id']}")
    expect_error(remove_interface(user, r["id"], port_id=port["id"], subnet_id=a["id"]), 400,
                 "SubnetMismatchForPort", f"Subnet on port {port['id']} does not match the "
                                          f"requested subnet {a['id']}.")
    assert remove_interface(user, r["id"], port_id=port["id"]).status_code == 200
    expect_error(user.get(f"/v2.0/ports/{port['id']}"), 404, "PortNotFound")


def test_interface_request_errors(user, other, inside):
    _, subnet = inside
    r = router(user)
    expect_error(add_interface(user, r["id"]), 400, "BadRequest",
                 "Bad router request: Either subnet_id or port_id must be specified.")
    expect_error(add_interface(user, r["id"], subnet_id=subnet["id"], port_id=MISSING), 400,
                 "BadRequest", "Bad router request: Cannot specify both subnet-id and port-id.")
    expect_error(add_interface(user, r["id"], subnet_id=MISSING), 404, "SubnetNotFound")
    expect_error(add_interface(user, r["id"], port_id=MISSING), 404, "PortNotFound")
    expect_error(add_interface(user, MISSING, subnet_id=subnet["id"]), 404, "RouterNotFound")
    expect_error(remove_interface(user, r["id"], subnet_id=subnet["id"]), 404,
                 "RouterInterfaceNotFoundForSubnet",
                 f"Router {r['id']} has no interface on subnet {subnet['id']}")
    no_gateway_net = user.network()
    no_gateway = user.subnet(no_gateway_net["id"], "10.9.0.0/24", gateway_ip=None)
    expect_error(add_interface(user, r["id"], subnet_id=no_gateway["id"]), 400, "BadRequest",
                 "Bad router request: Subnet for router interface must have a gateway IP.")
    # another project can neither see the router nor use its subnet
    expect_error(other.get(f"/v2.0/routers/{r['id']}"), 404, "RouterNotFound")
    expect_error(add_interface(other, r["id"], subnet_id=subnet["id"]), 404, "RouterNotFound")
    mine = router(other)
    expect_error(add_interface(other, mine["id"], subnet_id=subnet["id"]), 404,
                 "SubnetNotFound")
    expect_error(update(other, r["id"], name="x"), 404, "RouterNotFound")
    expect_error(other.delete(f"/v2.0/routers/{r['id']}"), 404, "RouterNotFound")


def test_interface_on_a_network_shared_by_another_project(admin, other, inside):
    shared = admin.network(shared=True)
    subnet = admin.subnet(shared["id"], "10.77.0.0/24")
    mine = router(other)
    expect_error(add_interface(other, mine["id"], subnet_id=subnet["id"]), 400, "BadRequest",
                 f"Bad router request: Cannot add interface to router because subnet "
                 f"{subnet['id']} is not owned by project making the request.")
    # an admin may, and the port is the router's project's
    resp = add_interface(admin, mine["id"], subnet_id=subnet["id"])
    assert resp.status_code == 200, resp.text
    assert resp.json()["project_id"] == other.project_id


def test_ipv6_subnets_share_one_interface_port(user, admin):
    net = user.network()
    first = user.subnet(net["id"], "2001:db8:1::/64", ipv6_ra_mode="slaac",
                        ipv6_address_mode="slaac")
    second = user.subnet(net["id"], "2001:db8:2::/64", ipv6_ra_mode="slaac",
                         ipv6_address_mode="slaac")
    r = router(user)
    one = add_interface(user, r["id"], subnet_id=first["id"]).json()
    two = add_interface(user, r["id"], subnet_id=second["id"]).json()
    assert one["port_id"] == two["port_id"] and two["subnet_id"] == second["id"]
    port = user.show("ports", one["port_id"])
    assert {ip["subnet_id"] for ip in port["fixed_ips"]} == {first["id"], second["id"]}
    # removing one subnet keeps the port for the other
    removed = remove_interface(user, r["id"], subnet_id=first["id"])
    assert removed.status_code == 200, removed.text
    port = user.show("ports", one["port_id"])
    assert [ip["subnet_id"] for ip in port["fixed_ips"]] == [second["id"]]
    external_ra = user.subnet(net["id"], "2001:db8:3::/64", ipv6_address_mode="slaac")
    expect_error(add_interface(user, r["id"], subnet_id=external_ra["id"]), 400, "BadRequest",
                 f"Bad router request: IPv6 subnet {external_ra['id']} configured to receive "
                 "RAs from an external router cannot be added to Neutron Router.")


def test_extra_routes(user, inside):
    _, subnet = inside
    r = router(user)
    add_interface(user, r["id"], subnet_id=subnet["id"])
    routes = [{"destination": "192.168.0.0/24", "nexthop": "10.1.0.5"},
              {"destination": "0.0.0.0/0", "nexthop": "10.1.0.6"}]
    resp = update(user, r["id"], routes=routes)
    assert resp.status_code == 200, resp.text
    got = resp.json()["router"]["routes"]
    assert sorted(got, key=lambda x: x["destination"]) == sorted(
        routes, key=lambda x: x["destination"])
    expect_error(update(user, r["id"], routes=[{"destination": "192.168.1.0/24",
                                                "nexthop": "10.5.0.1"}]), 400,
                 "InvalidRoutes")
    expect_error(update(user, r["id"], routes=[{"destination": "192.168.1.0/24",
                                                "nexthop": subnet["gateway_ip"]}]), 400,
                 "InvalidRoutes")
    expect_error(update(user, r["id"], routes=[{"destination": "192.168.1.5/24",
                                                "nexthop": "10.1.0.5"}]), 400,
                 "HTTPBadRequest")
    expect_error(update(user, r["id"], routes=[{"destination": "192.168.1.0/24"}]), 400,
                 "HTTPBadRequest")
    many = [{"destination": f"192.168.{i}.0/24", "nexthop": "10.1.0.5"} for i in range(31)]
    expect_error(update(user, r["id"], routes=many), 400, "RoutesExhausted")
    # routes through an interface keep it
    expect_error(remove_interface(user, r["id"], subnet_id=subnet["id"]), 409,
                 "RouterInterfaceInUseByRoute")
    assert update(user, r["id"], routes=[]).json()["router"]["routes"] == []
    assert remove_interface(user, r["id"], subnet_id=subnet["id"]).status_code == 200


def test_null_routes_clear_them(user, inside):
    """``"routes": null`` is no routes, as Neutron converts it; the atomic
    actions still want a list."""
    _, subnet = inside
    r = router(user)
    add_interface(user, r["id"], subnet_id=subnet["id"])
    route = {"destination": "192.168.7.0/24", "nexthop": "10.1.0.5"}
    assert update(user, r["id"], routes=[route]).json()["router"]["routes"] == [route]
    resp = update(user, r["id"], routes=None)
    assert resp.status_code == 200, resp.text
    assert resp.json()["router"]["routes"] == []
    assert user.show("routers", r["id"])["routes"] == []
    expect_error(user.put(f"/v2.0/routers/{r['id']}/add_extraroutes",
                          json={"router": {"routes": None}}), 400, "HTTPBadRequest")


def test_extraroutes_atomic(user, inside):
    _, subnet = inside
    r = router(user)
    add_interface(user, r["id"], subnet_id=subnet["id"])
    path = f"/v2.0/routers/{r['id']}"
    one = {"destination": "192.168.0.0/24", "nexthop": "10.1.0.5"}
    two = {"destination": "192.168.2.0/24", "nexthop": "10.1.0.7"}
    resp = user.put(f"{path}/add_extraroutes", json={"router": {"routes": [one, two, one]}})
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["router"]["routes"]) == 2
    resp = user.put(f"{path}/remove_extraroutes", json={"router": {"routes": [one]}})
    assert resp.json()["router"]["routes"] == [two]
    resp = user.put(f"{path}/remove_extraroutes", json={"router": {"routes": [one]}})
    assert resp.json()["router"]["routes"] == [two]
    expect_error(user.put(f"{path}/add_extraroutes", json={"routes": [one]}), 400,
                 "BadRequest")
    expect_error(user.put(f"{path}/add_extraroutes", json={"router": {"routes": [
        {"destination": "192.168.9.0/24", "nexthop": "10.99.0.1"}]}}), 400, "InvalidRoutes")
    expect_error(user.get(f"{path}/add_extraroutes"), 405, "HTTPMethodNotAllowed")


def test_update_and_policy(user, other, server, project):
    r = router(user, name="before")
    resp = update(user, r["id"], name="after", admin_state_up=False)
    assert resp.status_code == 200, resp.text
    changed = resp.json()["router"]
    assert (changed["name"], changed["admin_state_up"]) == ("after", False)
    assert changed["revision_number"] > r["revision_number"]
    expect_error(update(user, r["id"], status="DOWN"), 400, "HTTPBadRequest")
    reader = server.client(project, roles=("reader",))
    expect_error(update(reader, r["id"], name="no"), 403, "PolicyNotAuthorized")
    expect_error(reader.post("/v2.0/routers", json={"router": {}}), 403, "PolicyNotAuthorized")


def test_router_quota(admin, server):
    project = "quota-" + admin.project_id
    resp = admin.put(f"/v2.0/quotas/{project}", json={"quota": {"router": 1}})
    assert resp.status_code == 200, resp.text
    member = server.client(project, roles=("member",))
    router(member)
    expect_error(member.post("/v2.0/routers", json={"router": {}}), 409, "OverQuota")


def test_concurrent_interface_adds_never_duplicate_a_subnet(user, inside):
    net, subnet = inside
    r = router(user)
    by_port = [user.port(net["id"])["id"] for _ in range(4)]

    def add(body):
        return add_interface(user, r["id"], **body).status_code

    bodies = [{"subnet_id": subnet["id"]}] * 4 + [{"port_id": p} for p in by_port]
    with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
        codes = list(pool.map(add, bodies))
    assert codes.count(200) == 1, codes
    assert set(codes) <= {200, 400}, codes
    interfaces = user.get("/v2.0/ports", params={
        "device_id": r["id"], "device_owner": "network:router_interface"}).json()["ports"]
    assert len(interfaces) == 1


def test_an_interfaces_ipv4_address_is_the_routers(user, inside):
    """l3-port-ip-change-not-allowed: the interface port's IPv4 addresses do not
    change through the port API; its IPv6 ones and other attributes may."""
    net, subnet = inside
    r = router(user)
    port_id = add_interface(user, r["id"], subnet_id=subnet["id"]).json()["port_id"]
    path = f"/v2.0/ports/{port_id}"
    for fixed_ips in ([{"subnet_id": subnet["id"], "ip_address": "10.1.0.99"}],
                      [{"subnet_id": subnet["id"], "ip_address": subnet["gateway_ip"]},
                       {"subnet_id": subnet["id"], "ip_address": "10.1.0.98"}]):
        resp = user.put(path, json={"port": {"fixed_ips": fixed_ips}})
        expect_error(resp, 400, "IPAddressChangeNotAllowed",
                     f"IP updates for port {port_id} are not allowed")
    assert user.show("ports", port_id)["fixed_ips"] == [
        {"subnet_id": subnet["id"], "ip_address": subnet["gateway_ip"]}]
    v6 = user.subnet(net["id"], "fd10::/64", ipv6_ra_mode="slaac",
                     ipv6_address_mode="slaac")
    resp = user.put(path, json={"port": {"fixed_ips": [
        {"subnet_id": subnet["id"], "ip_address": subnet["gateway_ip"]},
        {"subnet_id": v6["id"], "ip_address": "fd10::1"}], "name": "kept"}})
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["port"]["fixed_ips"]) == 2
    # a port no router has is anyone's to renumber
    plain = user.port(net["id"], fixed_ips=[{"subnet_id": subnet["id"]}])
    resp = user.put(f"/v2.0/ports/{plain['id']}", json={"port": {"fixed_ips": [
        {"subnet_id": subnet["id"], "ip_address": "10.1.0.97"}]}})
    assert resp.status_code == 200, resp.text
