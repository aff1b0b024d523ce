"""Address scopes: the API, subnet pools in scopes, and networks' scopes."""

from __future__ import annotations

import uuid

import pytest

from tests.harness import ApiClient, Server, expect_error

URL = "/v2.0/address-scopes"
KEYS = {"id", "name", "project_id", "tenant_id", "shared", "ip_version"}


def scope(client: ApiClient, version: int = 4, **attrs) -> dict:
    resp = client.post(URL, json={"address_scope": {"name": "s", "ip_version": version,
                                                    **attrs}})
    assert resp.status_code == 201, resp.text
    return resp.json()["address_scope"]


def shown(client: ApiClient, scope_id: str) -> dict:
    resp = client.get(f"{URL}/{scope_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()["address_scope"]


def pool(client: ApiClient, prefixes: list[str], **attrs) -> dict:
    return client.create("subnetpools", name="p", prefixes=prefixes, **attrs)


def octet() -> int:
    """A second octet of 10/8 for this test's prefixes: pools in one scope must
    not overlap, and each test makes its own scopes anyway."""
    return uuid.uuid4().int % 250


def test_crud_and_listing(user: ApiClient, other: ApiClient):
    made = scope(user, name="blue")
    assert set(made) == KEYS
    assert (made["name"], made["ip_version"], made["shared"]) == ("blue", 4, False)
    assert shown(user, made["id"]) == made
    listed = user.get(URL, params={"ip_version": 4, "name": "blue"}).json()["address_scopes"]
    assert made in listed
    resp = user.put(f"{URL}/{made['id']}", json={"address_scope": {"name": "green"}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["address_scope"]["name"] == "green"
    # another project sees nothing of it
    expect_error(other.get(f"{URL}/{made['id']}"), 404, "AddressScopeNotFound",
                 f"Address scope {made['id']} could not be found.")
    assert made["id"] not in {s["id"] for s in other.get(URL).json()["address_scopes"]}
    assert user.delete(f"{URL}/{made['id']}").status_code == 204
    expect_error(user.get(f"{URL}/{made['id']}"), 404, "AddressScopeNotFound")


@pytest.mark.parametrize("body, status", [
    ({"name": "x"}, 400),  # ip_version is required
    ({"ip_version": 5}, 400),
    ({"ip_version": "four"}, 400),
    ({"ip_version": 4, "name": "x" * 256}, 400),
    ({"ip_version": 4, "id": str(uuid.uuid4())}, 400),
])
def test_bad_bodies(user: ApiClient, body: dict, status: int):
    resp = user.post(URL, json={"address_scope": body})
    assert resp.status_code == status, resp.text
    assert "NeutronError" in resp.json()


def test_only_admins_share_and_none_unshare(user: ApiClient, admin: ApiClient,
                                            other: ApiClient):
    expect_error(user.post(URL, json={"address_scope": {"ip_version": 4, "shared": True}}),
                 403, "PolicyNotAuthorized")
    mine = scope(user)
    expect_error(user.put(f"{URL}/{mine['id']}", json={"address_scope": {"shared": True}}),
                 403, "PolicyNotAuthorized")
    shared = scope(admin, shared=True)
    assert shared["shared"] is True
    assert shown(other, shared["id"])["shared"] is True
    expect_error(admin.put(f"{URL}/{shared['id']}", json={"address_scope": {"shared": False}}),
                 400, "AddressScopeUpdateError",
                 f"Unable to update address scope {shared['id']} : Shared address scope "
                 "can't be unshared.")
    # sharing later makes the '*' entry the attribute stands for
    resp = admin.put(f"{URL}/{mine['id']}", json={"address_scope": {"shared": True}})
    assert resp.status_code == 200 and resp.json()["address_scope"]["shared"] is True
    entries = admin.get("/v2.0/rbac-policies", params={"object_id": mine["id"]}).json()
    assert [(e["object_type"], e["target_tenant"]) for e in entries["rbac_policies"]] == [
        ("address_scope", "*")]
    for made in (shared, mine):
        assert admin.delete(f"{URL}/{made['id']}").status_code == 204
    assert admin.get("/v2.0/rbac-policies", params={"object_id": mine["id"]}).json() == {
        "rbac_policies": []}


def test_pools_in_a_scope(user: ApiClient, other: ApiClient):
    n = octet()
    s4, s6 = scope(user), scope(user, version=6)
    first = pool(user, [f"10.{n}.0.0/16"], address_scope_id=s4["id"])
    assert first["address_scope_id"] == s4["id"]
    expect_error(user.post("/v2.0/subnetpools", json={"subnetpool": {
        "name": "overlap", "prefixes": [f"10.{n}.128.0/20"], "address_scope_id": s4["id"]}}),
        409, "AddressScopePrefixConflict")
    resp = user.post("/v2.0/subnetpools", json={"subnetpool": {
        "name": "v6", "prefixes": ["fd00:1::/48"], "address_scope_id": s4["id"]}})
    error = expect_error(resp, 400, "IllegalSubnetPoolIpVersionAssociationToAddressScope")
    assert "because subnetpool ip_version is not 4" in error["message"]
    expect_error(user.post("/v2.0/subnetpools", json={"subnetpool": {
        "name": "gone", "prefixes": ["10.250.0.0/16"],
        "address_scope_id": str(uuid.uuid4())}}), 404, "AddressScopeNotFound")
    # another project's scope is not there for it
    expect_error(other.post("/v2.0/subnetpools", json={"subnetpool": {
        "name": "theirs", "prefixes": ["10.251.0.0/16"], "address_scope_id": s4["id"]}}),
        404, "AddressScopeNotFound")
    # a pool joins a scope by update, and its prefixes must not collide there either
    second = pool(user, [f"10.{n}.0.0/24"])
    expect_error(user.put(f"/v2.0/subnetpools/{second['id']}", json={"subnetpool": {
        "address_scope_id": s4["id"]}}), 409, "AddressScopePrefixConflict")
    six = pool(user, ["fd00:2::/48"])
    resp = user.put(f"/v2.0/subnetpools/{six['id']}",
                    json={"subnetpool": {"address_scope_id": s6["id"]}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["subnetpool"]["address_scope_id"] == s6["id"]
    # in use while a pool is in it; free once the pool leaves
    expect_error(user.delete(f"{URL}/{s6['id']}"), 409, "AddressScopeInUse")
    resp = user.put(f"/v2.0/subnetpools/{six['id']}",
                    json={"subnetpool": {"address_scope_id": None}})
    assert resp.status_code == 200, resp.text
    assert user.delete(f"{URL}/{s6['id']}").status_code == 204


def test_networks_show_their_scopes_and_keep_to_one(user: ApiClient):
    n = octet()
    s4, other4, s6 = scope(user), scope(user), scope(user, version=6)
    p4 = pool(user, [f"10.{n}.0.0/16"], address_scope_id=s4["id"], default_prefixlen=24)
    p4b = pool(user, [f"172.16.{n}.0/24"], address_scope_id=s4["id"], default_prefixlen=28)
    elsewhere = pool(user, [f"10.{n}.0.0/16"], address_scope_id=other4["id"],
                     default_prefixlen=24)
    p6 = pool(user, [f"fd00:{n:x}::/48"], address_scope_id=s6["id"], default_prefixlen=64)
    net = user.network()
    assert (net["ipv4_address_scope"], net["ipv6_address_scope"]) == (None, None)
    user.create("subnets", network_id=net["id"], ip_version=4, subnetpool_id=p4["id"])
    user.create("subnets", network_id=net["id"], ip_version=6, subnetpool_id=p6["id"])
    shown = user.show("networks", net["id"])
    assert (shown["ipv4_address_scope"], shown["ipv6_address_scope"]) == (s4["id"], s6["id"])
    listed = user.get("/v2.0/networks", params={"id": net["id"]}).json()["networks"]
    assert listed[0]["ipv4_address_scope"] == s4["id"]
    # another pool of the same scope is fine; one of another scope, or no pool, is not
    user.create("subnets", network_id=net["id"], ip_version=4, subnetpool_id=p4b["id"])
    for body in ({"subnetpool_id": elsewhere["id"]}, {"cidr": "192.168.77.0/24"}):
        resp = user.post("/v2.0/subnets", json={"subnet": {
            "network_id": net["id"], "ip_version": 4, **body}})
        expect_error(resp, 400, "NetworkAddressScopeAffinityError",
                     "Subnets of the same address family hosted on the same network must "
                     "all participate in the same address scope.")
    # moving one of its pools to another scope would split the network
    expect_error(user.put(f"/v2.0/subnetpools/{p4b['id']}", json={"subnetpool": {
        "address_scope_id": None}}), 400, "NetworkAddressScopeAffinityError")


def test_a_shared_scope_takes_pools_of_other_projects(server: Server, user: ApiClient):
    admin = server.client(uuid.uuid4().hex, roles=("admin", "member"))
    n = octet()
    shared = scope(admin, shared=True)
    mine = pool(user, [f"10.{n}.0.0/16"], address_scope_id=shared["id"])
    # the scope's owner decides what is in it: the pool's owner cannot change it now
    resp = user.put(f"/v2.0/subnetpools/{mine['id']}",
                    json={"subnetpool": {"name": "renamed"}})
    expect_error(resp, 400, "IllegalSubnetPoolUpdate",
                 f"Illegal subnetpool update : subnetpool {mine['id']} cannot be updated "
                 f"when associated with shared address scope {shared['id']}.")
    # an admin can, and can take it out
    resp = admin.put(f"/v2.0/subnetpools/{mine['id']}",
                     json={"subnetpool": {"address_scope_id": None}})
    assert resp.status_code == 200, resp.text
    assert admin.delete(f"{URL}/{shared['id']}").status_code == 204


def test_extension_is_listed(user: ApiClient):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert {"address-scope", "rbac-address-scope", "rbac-subnetpool",
            "rbac-security-groups", "rbac-address-group"} <= aliases
