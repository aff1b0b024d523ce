"""Hostile and careless input that once reached the database: each is a 4xx naming
the problem, the same on every backend, and nothing is left behind."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable

import pytest
from sqlalchemy import String, create_engine, select

from neutrino.db.models import metadata
from tests.harness import expect_error

LONG = "p" * 256  # one more than a project id column holds
MISSING = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def pool(admin):
    """An external network with a subnet: the caller sees one floating IP pool."""
    net = admin.network(**{"router:external": True})
    return admin.subnet(net["id"], "198.51.100.0/24")


def test_lists_without_ids_ignore_paging(admin, pool):
    for params in ({"limit": 1}, {"limit": 1, "marker": pool["id"]},
                   {"limit": 1, "page_reverse": "True"}):
        resp = admin.get("/v2.0/floatingip-pools", params=params)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert pool["id"] in {p["subnet_id"] for p in body["floatingip_pools"]}
        assert "floatingip_pools_links" not in body
    port = admin.port(pool["network_id"], **{"binding:host_id": "h1"})
    resp = admin.get(f"/v2.0/ports/{port['id']}/bindings", params={"limit": 1})
    assert resp.status_code == 200, resp.text
    assert [b["host"] for b in resp.json()["bindings"]] == ["h1"]


@pytest.mark.parametrize("collection,params", [
    ("networks", {"tags": "a\x00b"}),
    ("networks", {"tags-any": "a,\x00"}),
    ("networks", {"not-tags": "\x00"}),
    ("networks", {"provider:network_type": "vx\x00lan"}),
    ("networks", {"provider:physical_network": "\x00"}),
    ("networks", {"name": "a\x00b"}),
    ("ports", {"binding:host_id": "h\x00"}),
    ("ports", {"fixed_ips": "ip_address=10.0.0.1\x00"}),
    ("ports", {"fixed_ips": "ip_address_substr=10\x00"}),
    ("ports", {"security_groups": "no\x00such"}),
    ("ports", {"marker": "a\x00", "limit": "1"}),
    ("routers", {"sort_key": "name\x00", "sort_dir": "asc"}),
    ("networks", {"fields": "\x00"}),
])
def test_a_null_character_in_any_query_value_is_a_400(admin, collection, params):
    expect_error(admin.get(f"/v2.0/{collection}", params=params), 400, "InvalidInput")


@pytest.mark.parametrize("name", ["provider:segmentation_id", "revision_number", "mtu"])
def test_integer_filters_beyond_64_bits_are_a_400(admin, name):
    for value in ("99999999999999999999999", "-99999999999999999999999"):
        error = expect_error(admin.get("/v2.0/networks", params={name: value}), 400,
                             "InvalidInput")
        assert name in error["message"]
    # within range, but beyond any row: nothing matches
    resp = admin.get("/v2.0/networks", params={name: str(2 ** 62)})
    assert resp.status_code == 200 and resp.json()["networks"] == []


@pytest.mark.parametrize("value", [2 ** 31, 2 ** 63, -(2 ** 31) - 1])
def test_integer_attributes_fit_their_columns(admin, value):
    resp = admin.post("/v2.0/subnetpools", json={"subnetpool": {
        "name": "big", "prefixes": ["10.90.0.0/16"], "default_quota": value}})
    error = expect_error(resp, 400, "HTTPBadRequest")
    assert "default_quota" in error["message"]
    made = admin.create("subnetpools", name="fits", prefixes=["10.91.0.0/16"],
                        default_quota=2 ** 31 - 1)
    assert made["default_quota"] == 2 ** 31 - 1
    resp = admin.put(f"/v2.0/subnetpools/{made['id']}",
                     json={"subnetpool": {"default_quota": value}})
    expect_error(resp, 400, "HTTPBadRequest")


def test_project_ids_longer_than_a_column_are_refused(server, admin):
    for method in ("GET", "PUT", "DELETE"):
        resp = admin.request(method, f"/v2.0/quotas/{LONG}",
                             json={"quota": {"network": 5}} if method == "PUT" else None)
        error = expect_error(resp, 400, "HTTPBadRequest")
        assert "project_id" in error["message"]
    client = server.client(LONG, roles=("member",))
    error = expect_error(client.get("/v2.0/networks"), 400, "HTTPBadRequest")
    assert "x-project-id" in error["message"]
    client = server.client("p1", user="u" * 256)
    expect_error(client.get("/v2.0/networks"), 400, "HTTPBadRequest")
    # at the limit all is well
    resp = admin.put(f"/v2.0/quotas/{'p' * 255}", json={"quota": {"network": 5}})
    assert resp.status_code == 200, resp.text
    assert admin.delete(f"/v2.0/quotas/{'p' * 255}").status_code == 204


def test_a_fixed_ip_under_a_floating_ip_stays(admin, user):
    ext = admin.network(**{"router:external": True})
    admin.subnet(ext["id"], "203.0.113.0/24")
    net = user.network()
    subnet = user.subnet(net["id"], "10.30.0.0/24")
    router = user.create("routers", external_gateway_info={"network_id": ext["id"]})
    resp = user.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                    json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    port = user.port(net["id"])
    address = port["fixed_ips"][0]["ip_address"]
    # two addresses the port was not given (its own is drawn at random)
    other, another = [f"10.30.0.{n}" for n in (200, 201, 202) if f"10.30.0.{n}" != address][:2]
    fip = user.create("floatingips", floating_network_id=ext["id"], port_id=port["id"])
    for fixed_ips in ([{"subnet_id": subnet["id"], "ip_address": other}], []):
        resp = user.put(f"/v2.0/ports/{port['id']}", json={"port": {"fixed_ips": fixed_ips}})
        error = expect_error(resp, 400, "BadRequest")
        assert "associated to a floating ip" in error["message"]
    assert user.show("ports", port["id"])["fixed_ips"] == port["fixed_ips"]
    # naming the subnet alone keeps the address the port has there
    resp = user.put(f"/v2.0/ports/{port['id']}",
                    json={"port": {"fixed_ips": [{"subnet_id": subnet["id"]}]}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["port"]["fixed_ips"] == port["fixed_ips"]
    # adding an address beside it is fine
    more = [*port["fixed_ips"], {"subnet_id": subnet["id"], "ip_address": another}]
    resp = user.put(f"/v2.0/ports/{port['id']}", json={"port": {"fixed_ips": more}})
    assert resp.status_code == 200, resp.text
    assert user.show("floatingips", fip["id"])["fixed_ip_address"] == address
    # a second floating IP for the same fixed IP is still refused
    resp = user.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"], "port_id": port["id"], "fixed_ip_address": address}})
    assert resp.status_code == 409, resp.text


def test_a_subnet_pool_joins_only_an_address_scope_that_exists(admin):
    resp = admin.post("/v2.0/subnetpools", json={"subnetpool": {
        "name": "scoped", "prefixes": ["10.92.0.0/16"], "address_scope_id": MISSING}})
    expect_error(resp, 404, "AddressScopeNotFound",
                 f"Address scope {MISSING} could not be found.")
    made = admin.create("subnetpools", name="plain", prefixes=["10.93.0.0/16"])
    resp = admin.put(f"/v2.0/subnetpools/{made['id']}",
                     json={"subnetpool": {"address_scope_id": MISSING}})
    expect_error(resp, 404, "AddressScopeNotFound")
    resp = admin.put(f"/v2.0/subnetpools/{made['id']}",
                     json={"subnetpool": {"address_scope_id": None}})
    assert resp.status_code == 200, resp.text


def _make(client, path: str, member: str, **attrs) -> dict:
    resp = client.post(f"/v2.0/{path}", json={member: attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()[member]


def _build_everything(admin) -> tuple[list[str], Callable[[], None]]:
    """One of every kind of resource, with every extra row it can own: their ids,
    and a function that deletes them all."""
    ids = []
    ext = admin.network(**{"router:external": True, "port_security_enabled": False})
    ext_subnet = admin.subnet(ext["id"], "203.0.113.0/24")
    net = admin.network(port_security_enabled=True)
    pool = admin.create("subnetpools", name="pool", prefixes=["10.94.0.0/16"])
    subnet = admin.subnet(net["id"], "10.94.1.0/24", subnetpool_id=pool["id"],
                          dns_nameservers=["10.94.0.53"],
                          host_routes=[{"destination": "10.95.0.0/16", "nexthop": "10.94.1.9"}])
    remote = _make(admin, "address-groups", "address_group", addresses=["192.0.2.0/24"])
    group = _make(admin, "security-groups", "security_group", name="web")
    rule = _make(admin, "security-group-rules", "security_group_rule",
                 security_group_id=group["id"],
                        direction="ingress", remote_address_group_id=remote["id"])
    port = admin.port(net["id"], security_groups=[group["id"]],
                      allowed_address_pairs=[{"ip_address": "10.94.1.77"}],
                      extra_dhcp_opts=[{"opt_name": "mtu", "opt_value": "1400"}],
                      **{"binding:host_id": "h1", "port_security_enabled": True})
    router = admin.create("routers", external_gateway_info={"network_id": ext["id"]})
    resp = admin.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                     json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    resp = admin.put(f"/v2.0/routers/{router['id']}", json={"router": {"routes": [
        {"destination": "10.96.0.0/16", "nexthop": "203.0.113.9"}]}})
    assert resp.status_code == 200, resp.text
    fip = admin.create("floatingips", floating_network_id=ext["id"], port_id=port["id"])
    forwarded = admin.create("floatingips", floating_network_id=ext["id"])
    inner = admin.port(net["id"])  # a port with a floating IP cannot have forwardings
    resp = admin.post(f"/v2.0/floatingips/{forwarded['id']}/port_forwardings", json={
        "port_forwarding": {"internal_port_id": inner["id"], "protocol": "tcp",
                            "internal_ip_address": inner["fixed_ips"][0]["ip_address"],
                            "internal_port": 22, "external_port": 2222}})
    assert resp.status_code == 201, resp.text
    forwarding = resp.json()["port_forwarding"]
    rbac = _make(admin, "rbac-policies", "rbac_policy", object_type="network", object_id=net["id"],
                        action="access_as_shared", target_tenant="someone")
    owned = admin.get("/v2.0/ports", params={"device_id": router["id"]}).json()["ports"]
    for made in (fip, forwarded):
        owned += admin.get("/v2.0/ports", params={"device_id": made["id"]}).json()["ports"]
    owned += admin.get("/v2.0/ports", params={"network_id": ext["id"]}).json()["ports"]
    for kind, item in (("networks", ext), ("networks", net), ("subnets", subnet),
                       ("subnets", ext_subnet), ("subnetpools", pool), ("ports", port),
                       ("security-groups", group), ("routers", router),
                       ("floatingips", fip), ("floatingips", forwarded)):
        resp = admin.put(f"/v2.0/{kind}/{item['id']}/tags", json={"tags": ["t1", "t2"]})
        assert resp.status_code == 200, resp.text
    ids += [ext["id"], ext_subnet["id"], net["id"], pool["id"], subnet["id"], remote["id"],
            group["id"], rule["id"], port["id"], inner["id"], router["id"], fip["id"],
            forwarded["id"], forwarding["id"], rbac["id"]]
    ids += [p["id"] for p in owned]
    made = dict(locals())
    return ids, lambda: _delete_everything(admin, made)


def _delete_everything(admin, made: dict) -> None:
    """Everything goes, in the order a user would have to take."""
    fip, forwarded, forwarding, port, inner, rbac, router, subnet, group, remote, net, ext, \
        pool = (made[k] for k in ("fip", "forwarded", "forwarding", "port", "inner", "rbac",
                                  "router", "subnet", "group", "remote", "net", "ext", "pool"))
    for path in (f"floatingips/{forwarded['id']}/port_forwardings/{forwarding['id']}",
                 f"floatingips/{fip['id']}", f"floatingips/{forwarded['id']}",
                 f"ports/{port['id']}", f"ports/{inner['id']}",
                 f"rbac-policies/{rbac['id']}"):
        assert admin.delete(f"/v2.0/{path}").status_code == 204, path
    resp = admin.put(f"/v2.0/routers/{router['id']}/remove_router_interface",
                     json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    for path in (f"routers/{router['id']}", f"security-groups/{group['id']}",
                 f"address-groups/{remote['id']}", f"networks/{net['id']}",
                 f"networks/{ext['id']}", f"subnetpools/{pool['id']}"):
        resp = admin.delete(f"/v2.0/{path}")
        assert resp.status_code == 204, (path, resp.text)


def _tables_naming(db_url: str, ids: set[str]) -> set[str]:
    """The tables with a row whose id or project column holds one of ``ids``."""
    found = set()
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            for table in metadata.sorted_tables:
                for column in table.columns:
                    if isinstance(column.type, String) and column.type.length in (36, 255):
                        if conn.execute(select(column).where(column.in_(ids)).limit(1)).first():
                            found.add(table.name)
    finally:
        engine.dispose()
    return found


def test_deleted_resources_leave_no_rows_behind(server, admin):
    ids, delete_all = _build_everything(admin)
    before = _tables_naming(server.db_url, set(ids))
    # the scan sees the rows that hang off a resource (it would see leftovers)
    assert {"tags", "network_port_security", "port_port_security", "allowed_address_pairs",
            "extra_dhcp_opts", "router_routes", "port_forwardings", "networkrbacs",
            "address_group_addresses", "security_group_port_bindings"} <= before
    delete_all()
    assert _tables_naming(server.db_url, set(ids)) == set()


def _raw(server, request: bytes, linger: float = 0.0) -> None:
    """Send bytes to the server and hang up without reading the answer."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(request)
        time.sleep(linger)


def test_a_body_cut_short_by_a_hang_up_is_not_acted_on(server, admin, project):
    tracebacks = server.log.read_text(errors="replace").count("Traceback")
    name = f"cut-{project}"
    body = json.dumps({"network": {"name": name, "project_id": project}}).encode()
    head = (f"POST /v2.0/networks HTTP/1.1\r\nHost: x\r\nX-Project-Id: {project}\r\n"
            "X-User-Id: cut\r\nX-Roles: admin\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body) + 40}\r\n\r\n").encode()
    _raw(server, head + body + b" " * 10, linger=0.3)
    # clients that leave before their answer, mid-body and at once
    for _ in range(20):
        _raw(server, b"GET /v2.0/networks HTTP/1.1\r\nHost: x\r\n"
                     b"X-User-Id: cut\r\nX-Roles: admin\r\n\r\n")
        _raw(server, head + body[:5])
    # the server is still fine, kept nothing of the cut request, and logged no traceback
    listed = admin.get("/v2.0/networks", params={"name": name}).json()["networks"]
    assert listed == []
    assert server.log.read_text(errors="replace").count("Traceback") == tracebacks
