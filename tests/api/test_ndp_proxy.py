"""NDP proxies (l3-ndp-proxy) and the routers' enable_ndp_proxy (l3-ext-ndp-proxy):
/v2.0/ndp_proxies with Neutron's checks and errors, and what a proxy keeps
on its router (gateway, IPv6 gateway address, interface)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from tests.conftest import BACKENDS
from tests.harness import ApiClient, Server, create_database, expect_error, start_server

PROXIES = "/v2.0/ndp_proxies"


@pytest.fixture(scope="module", params=BACKENDS)
def ndp_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"ndp-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers",
                       extra="service_plugins = router,ndp_proxy\n")
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def admin(ndp_server: Server, project: str) -> ApiClient:
    return ndp_server.client(project, roles=("admin", "member"))


@pytest.fixture
def user(ndp_server: Server, project: str) -> ApiClient:
    return ndp_server.client(project, roles=("member", "reader"))


@pytest.fixture
def other(ndp_server: Server, other_project: str) -> ApiClient:
    return ndp_server.client(other_project, roles=("member", "reader"))


def made(client: ApiClient, path: str, kind: str, **attrs) -> dict:
    resp = client.post(path, json={kind: attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()[kind]


@dataclass
class Site:
    """An external network with an IPv6 subnet in a scope, a router on it with
    enable_ndp_proxy, an internal IPv6 subnet of the same scope on the router,
    and an instance's port there."""

    scope: str
    pool: dict
    ext_net: dict
    router: dict
    net: dict
    subnet: dict
    port: dict

    @property
    def address(self) -> str:
        return self.port["fixed_ips"][0]["ip_address"]


def scoped_pool(admin: ApiClient) -> tuple[str, dict]:
    scope = made(admin, "/v2.0/address-scopes", "address_scope", name="s6", ip_version=6,
                 shared=True)
    prefix = f"fd{uuid.uuid4().hex[:2]}:{uuid.uuid4().hex[:4]}::/48"
    pool = made(admin, "/v2.0/subnetpools", "subnetpool", name="p6", prefixes=[prefix],
                default_prefixlen=64, shared=True, address_scope_id=scope["id"])
    return scope["id"], pool


def subnet6(client: ApiClient, network_id: str, pool: dict | None = None,
            cidr: str | None = None) -> dict:
    attrs: dict = {"network_id": network_id, "ip_version": 6, "enable_dhcp": False}
    if pool is not None:
        attrs["subnetpool_id"] = pool["id"]
    if cidr is not None:
        attrs["cidr"] = cidr
    return made(client, "/v2.0/subnets", "subnet", **attrs)


def external(admin: ApiClient, pool: dict | None) -> dict:
    net = made(admin, "/v2.0/networks", "network", **{"router:external": True})
    subnet6(admin, net["id"], pool, None if pool else f"fd{uuid.uuid4().hex[:2]}:1::/64")
    return net


@pytest.fixture
def site(admin: ApiClient, user: ApiClient) -> Site:
    scope, pool = scoped_pool(admin)
    ext_net = external(admin, pool)
    router = made(user, "/v2.0/routers", "router", name="r",
                  external_gateway_info={"network_id": ext_net["id"]}, enable_ndp_proxy=True)
    net = made(user, "/v2.0/networks", "network", name="n")
    subnet = subnet6(user, net["id"], pool)
    resp = user.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                    json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    port = made(user, "/v2.0/ports", "port", network_id=net["id"])
    return Site(scope, pool, ext_net, router, net, subnet, port)


def router_of(client: ApiClient, router_id: str) -> dict:
    resp = client.get(f"/v2.0/routers/{router_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()["router"]


def test_the_extensions_are_listed(user):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert {"l3-ndp-proxy", "l3-ext-ndp-proxy"} <= aliases


def test_a_proxy_round_trip(user, other, site, project):
    assert site.router["enable_ndp_proxy"] is True
    proxy = made(user, PROXIES, "ndp_proxy", name="web", router_id=site.router["id"],
                 port_id=site.port["id"])
    assert proxy == {
        "id": proxy["id"], "name": "web", "description": "", "project_id": project,
        "tenant_id": project, "router_id": site.router["id"], "port_id": site.port["id"],
        "ip_address": site.address, "tags": [], "created_at": proxy["created_at"],
        "updated_at": proxy["updated_at"], "revision_number": 0}
    assert user.get(f"{PROXIES}/{proxy['id']}").json()["ndp_proxy"] == proxy
    listed = user.get(PROXIES, params={"router_id": site.router["id"]}).json()["ndp_proxies"]
    assert [p["id"] for p in listed] == [proxy["id"]]
    assert user.get(PROXIES, params={"ip_address": "fd00::1"}).json()["ndp_proxies"] == []
    # another project sees none of it
    assert other.get(PROXIES).json()["ndp_proxies"] == []
    expect_error(other.get(f"{PROXIES}/{proxy['id']}"), 404, "NDPProxyNotFound",
                 f"Ndp proxy {proxy['id']} could not be found.")

    changed = user.put(f"{PROXIES}/{proxy['id']}", json={"ndp_proxy": {
        "name": "web2", "description": "d"}})
    assert changed.status_code == 200, changed.text
    assert changed.json()["ndp_proxy"]["revision_number"] == 1
    assert changed.json()["ndp_proxy"]["description"] == "d"
    resp = user.put(f"{PROXIES}/{proxy['id']}", json={"ndp_proxy": {"ip_address": "fd00::9"}})
    assert resp.status_code == 400, resp.text

    # one proxy per router and address
    expect_error(user.post(PROXIES, json={"ndp_proxy": {
        "router_id": site.router["id"], "port_id": site.port["id"],
        "ip_address": site.address}}), 409, "DuplicateNDPProxy")

    assert user.delete(f"{PROXIES}/{proxy['id']}").status_code == 204
    expect_error(user.delete(f"{PROXIES}/{proxy['id']}"), 404, "NDPProxyNotFound")


def test_what_a_proxy_needs_stays(user, site):
    proxy = made(user, PROXIES, "ndp_proxy", router_id=site.router["id"],
                 port_id=site.port["id"], ip_address=site.address)
    rid = site.router["id"]
    expect_error(user.put(f"/v2.0/routers/{rid}", json={"router": {
        "external_gateway_info": {}}}), 409, "RouterGatewayInUseByNDPProxy",
        f"Unable to unset external gateway of router {rid}, There are one or more ndp "
        "proxies still in use on the router.")
    expect_error(user.put(f"/v2.0/routers/{rid}/remove_router_interface",
                          json={"subnet_id": site.subnet["id"]}),
                 409, "RouterInterfaceInUseByNDPProxy",
                 f"Unable to remove subnet {site.subnet['id']} from router {rid}, There are "
                 "one or more ndp proxies still in use on the subnet.")
    # turning it off is allowed, as in Neutron: the proxy stays, unpublished
    resp = user.put(f"/v2.0/routers/{rid}", json={"router": {"enable_ndp_proxy": False}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["router"]["enable_ndp_proxy"] is False
    assert user.get(f"{PROXIES}/{proxy['id']}").status_code == 200
    # the router's other updates keep it off
    user.put(f"/v2.0/routers/{rid}", json={"router": {"name": "renamed"}})
    assert router_of(user, rid)["enable_ndp_proxy"] is False
    # and a proxy cannot be made on it
    port2 = made(user, "/v2.0/ports", "port", network_id=site.net["id"])
    expect_error(user.post(PROXIES, json={"ndp_proxy": {
        "router_id": rid, "port_id": port2["id"]}}), 409, "RouterNDPProxyNotEnable",
        f"The enable_ndp_proxy parameter of router {rid} must be set as True while create "
        "ndp proxy entry on it.")
    # the port deleted: its proxy goes with it
    assert user.delete(f"/v2.0/ports/{site.port['id']}").status_code == 204
    expect_error(user.get(f"{PROXIES}/{proxy['id']}"), 404, "NDPProxyNotFound")
    # and the gateway may go now; enable_ndp_proxy is false without one
    resp = user.put(f"/v2.0/routers/{rid}", json={"router": {"external_gateway_info": {}}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["router"]["enable_ndp_proxy"] is False


def test_the_ipv6_gateway_address_stays_while_enabled(admin, site):
    rid = site.router["id"]
    ext_v4 = made(admin, "/v2.0/subnets", "subnet", network_id=site.ext_net["id"],
                  ip_version=4, cidr="198.51.100.0/24", enable_dhcp=False)
    expect_error(admin.put(f"/v2.0/routers/{rid}", json={"router": {"external_gateway_info": {
        "network_id": site.ext_net["id"], "external_fixed_ips": [
            {"subnet_id": ext_v4["id"]}]}}}), 409, "RouterIPv6GatewayInUse",
        f"Can't remove the IPv6 subnet from external gateway of router {rid}, the IPv6 "
        "subnet in use by the router's ndp proxy.")


def test_the_port_and_address_are_checked(admin, user, site):
    rid = site.router["id"]
    base = {"router_id": rid, "port_id": site.port["id"]}
    expect_error(user.post(PROXIES, json={"ndp_proxy": {**base, "ip_address": "fd00::77"}}),
                 400, "InvalidAddress",
                 f"The address fd00::77 is invalid, reason: This address not belong to the "
                 f"port {site.port['id']}.")
    expect_error(user.post(PROXIES, json={"ndp_proxy": {**base, "ip_address": "fd00::zz"}}),
                 400, "HTTPBadRequest")
    # a port on a network the router is not on
    net = made(user, "/v2.0/networks", "network")
    subnet6(user, net["id"], site.pool)
    away = made(user, "/v2.0/ports", "port", network_id=net["id"])
    expect_error(user.post(PROXIES, json={"ndp_proxy": {"router_id": rid,
                                                        "port_id": away["id"]}}),
                 409, "PortUnreachableRouter",
                 f"The port {away['id']} cannot reach the router {rid} by IPv6 subnet.")
    # an IPv4-only port on a network the router is on
    v4 = made(user, "/v2.0/networks", "network")
    v4_subnet = made(user, "/v2.0/subnets", "subnet", network_id=v4["id"], ip_version=4,
                     cidr="10.9.8.0/24")
    resp = user.put(f"/v2.0/routers/{rid}/add_router_interface",
                    json={"subnet_id": v4_subnet["id"]})
    assert resp.status_code == 200, resp.text
    v4_port = made(user, "/v2.0/ports", "port", network_id=v4["id"])
    expect_error(user.post(PROXIES, json={"ndp_proxy": {"router_id": rid,
                                                        "port_id": v4_port["id"]}}),
                 400, "BadRequest")
    # a subnet of no scope on the router: its addresses are not in the gateway's
    loose = made(user, "/v2.0/networks", "network")
    loose_subnet = subnet6(user, loose["id"], cidr=f"fd{uuid.uuid4().hex[:2]}:5::/64")
    resp = user.put(f"/v2.0/routers/{rid}/add_router_interface",
                    json={"subnet_id": loose_subnet["id"]})
    assert resp.status_code == 200, resp.text
    loose_port = made(user, "/v2.0/ports", "port", network_id=loose["id"])
    expect_error(user.post(PROXIES, json={"ndp_proxy": {"router_id": rid,
                                                        "port_id": loose_port["id"]}}),
                 409, "AddressScopeConflict",
                 f"The IPv6 address scope {site.scope} of external network conflict with "
                 "internal network's IPv6 address scope None.")
    # routers of others are not found
    expect_error(user.post(PROXIES, json={"ndp_proxy": {
        "router_id": str(uuid.uuid4()), "port_id": site.port["id"]}}), 404, "RouterNotFound")


def test_enable_ndp_proxy_follows_the_gateway(admin, user):
    scope, pool = scoped_pool(admin)
    good = external(admin, pool)
    unscoped = external(admin, None)
    # no gateway: cannot enable; false without saying
    bare = made(user, "/v2.0/routers", "router", name="bare")
    assert bare["enable_ndp_proxy"] is False
    expect_error(user.post("/v2.0/routers", json={"router": {"enable_ndp_proxy": True}}),
                 409, "RouterGatewayNotValid")
    expect_error(user.put(f"/v2.0/routers/{bare['id']}", json={"router": {
        "enable_ndp_proxy": True}}), 409, "RouterGatewayNotValid")
    # a gateway network without an IPv6 scope refuses it
    expect_error(user.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": unscoped["id"]}, "enable_ndp_proxy": True}}),
        409, "RouterGatewayNotValid",
        None)
    # [DEFAULT] enable_ndp_proxy_by_default is false
    r = made(user, "/v2.0/routers", "router",
             external_gateway_info={"network_id": good["id"]})
    assert r["enable_ndp_proxy"] is False
    on = user.put(f"/v2.0/routers/{r['id']}", json={"router": {"enable_ndp_proxy": True}})
    assert on.status_code == 200, on.text
    assert on.json()["router"]["enable_ndp_proxy"] is True
    listed = user.get("/v2.0/routers", params={"enable_ndp_proxy": True}).json()["routers"]
    assert [item["id"] for item in listed] == [r["id"]]
    listed = user.get("/v2.0/routers", params={"enable_ndp_proxy": False}).json()["routers"]
    assert {item["id"] for item in listed} == {bare["id"]}
    # the gateway moved to a network that refuses it, then cleared: off
    moved = user.put(f"/v2.0/routers/{r['id']}", json={"router": {
        "external_gateway_info": {"network_id": unscoped["id"]}}})
    assert moved.status_code == 200, moved.text
    assert moved.json()["router"]["enable_ndp_proxy"] is False
    expect_error(user.put(f"/v2.0/routers/{r['id']}", json={"router": {
        "external_gateway_info": {}, "enable_ndp_proxy": True}}), 409,
        "RouterGatewayNotValid",
        f"Can not enable ndp proxy on router {r['id']}, The router's external gateway will "
        "be unset.")
    expect_error(user.put(f"/v2.0/routers/{r['id']}", json={"router": {
        "enable_ndp_proxy": "maybe"}}), 400, "InvalidInput")
