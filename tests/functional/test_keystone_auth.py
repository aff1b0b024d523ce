"""``auth_strategy = keystone`` against a real keystone: tokens, isolation, RBAC.

Users (tests/keystone.py): alice (member) and rita (reader) in alpha, bob
(member) in beta, carol (member) in gamma, admin.
"""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from tests.harness import ApiClient, Server, error_of, expect_error, start_server
from tests.keystone import Keystone, keystone_fixture  # noqa: F401

pytestmark = pytest.mark.slow

CACHE_SECONDS = 4  # token_cache_time of the server under test


@pytest.fixture(scope="module")
def server(keystone: Keystone, tmp_path_factory) -> Server:
    tmp = tmp_path_factory.mktemp("keystone-server")
    extra = f"{keystone.authtoken_section()}token_cache_time = {CACHE_SECONDS}\n"
    srv = start_server(tmp, f"sqlite:///{tmp}/neutrino.db", auth="keystone",
                       extra="\n" + extra)
    yield srv
    srv.stop()


def as_user(server: Server, keystone: Keystone, user: str) -> ApiClient:
    """A client with ``user``'s token, and headers that try to claim more (ignored)."""
    token, body = keystone.token(user)
    client = ApiClient(server.url, {"X-Auth-Token": token, "X-Roles": "admin",
                                    "X-Project-Id": uuid.uuid4().hex})
    client.project_id = body["token"]["project"]["id"]
    return client


@pytest.fixture(scope="module")
def users(server, keystone) -> dict[str, ApiClient]:
    return {name: as_user(server, keystone, name)
            for name in ("alice", "bob", "carol", "rita", "admin")}


def make(client: ApiClient, collection: str, key: str, **attrs) -> dict:
    resp = client.post(f"/v2.0/{collection}", json={key: attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()[key]


def ids(client: ApiClient, collection: str, **params) -> set[str]:
    resp = client.get(f"/v2.0/{collection}", params=params)
    assert resp.status_code == 200, resp.text
    return {item["id"] for item in resp.json()[collection.replace("-", "_")]}


def test_missing_and_invalid_tokens_are_401(server, keystone):
    for headers in ({}, {"X-Auth-Token": "not-a-token"},
                    {"X-Auth-Token": keystone.token("alice")[0] + "x"}):
        resp = httpx.get(f"{server.url}/v2.0/networks", headers=headers)
        assert resp.status_code == 401, resp.text
        assert resp.headers["www-authenticate"] == f'Keystone uri="{keystone.url}"'
        assert error_of(resp)["type"] == "HTTPUnauthorized"
    # the versions document is public, as in Neutron
    assert httpx.get(f"{server.url}/").status_code == 200


def test_identity_comes_from_the_token_only(users, keystone):
    alice = users["alice"]
    net = alice.network(name="mine")
    assert net["project_id"] == keystone.project_ids["alpha"]
    # X-Roles: admin was sent too, but alice is no admin
    assert alice.get("/v2.0/agents").json()["agents"] == []
    resp = alice.post("/v2.0/networks", json={"network": {"shared": True}})
    expect_error(resp, 403, "PolicyNotAuthorized", "create_network:shared is disallowed "
                                                   "by policy")


def test_expired_token_is_401(server, keystone):
    token, _ = keystone.short_lived_token("alice", seconds=2)
    url = f"{server.url}/v2.0/networks"
    assert httpx.get(url, headers={"X-Auth-Token": token}).status_code == 200
    time.sleep(3)
    assert httpx.get(url, headers={"X-Auth-Token": token}).status_code == 401


def test_a_service_token_lets_an_expired_user_token_through(server, keystone):
    """Nova's case: a long operation started in time, finished with a service token."""
    token, body = keystone.short_lived_token("alice", seconds=1)
    time.sleep(2)
    url = f"{server.url}/v2.0/networks"
    assert httpx.get(url, headers={"X-Auth-Token": token}).status_code == 401
    resp = httpx.post(url, json={"network": {"name": "late"}}, headers={
        "X-Auth-Token": token, "X-Service-Token": keystone.service_token})
    assert resp.status_code == 201, resp.text
    assert resp.json()["network"]["project_id"] == body["token"]["project"]["id"]
    # a service token without the service role vouches for nothing
    resp = httpx.get(url, headers={"X-Auth-Token": token,
                                   "X-Service-Token": keystone.token("bob")[0]})
    assert resp.status_code == 401


def test_revoked_token_lives_at_most_token_cache_time(server, keystone):
    token, _ = keystone.token("alice")
    url = f"{server.url}/v2.0/networks"
    assert httpx.get(url, headers={"X-Auth-Token": token}).status_code == 200
    validated = time.monotonic()
    keystone.revoke(token)
    assert keystone.validate(token).status_code == 404
    resp = httpx.get(url, headers={"X-Auth-Token": token})
    if time.monotonic() - validated < CACHE_SECONDS - 1:
        assert resp.status_code == 200, "the cached validation serves until it expires"
    time.sleep(max(0.0, validated + CACHE_SECONDS + 0.5 - time.monotonic()))
    assert httpx.get(url, headers={"X-Auth-Token": token}).status_code == 401


def test_projects_see_only_their_own(users, keystone):
    alice, bob, rita, admin = users["alice"], users["bob"], users["rita"], users["admin"]
    net = alice.network(name="alpha-net")
    subnet = alice.subnet(net["id"], "10.81.0.0/24")
    port = alice.port(net["id"])
    router = alice.create("routers", name="alpha-router")
    group = make(alice, "security-groups", "security_group", name="alpha-sg")
    mine = {"networks": net, "subnets": subnet, "ports": port, "routers": router,
            "security-groups": group}
    for collection, item in mine.items():
        url = f"/v2.0/{collection}/{item['id']}"
        # bob, another project: not found, whatever he tries
        assert bob.get(url).status_code == 404
        assert item["id"] not in ids(bob, collection)
        key = "security_group" if collection == "security-groups" else collection[:-1]
        assert bob.put(url, json={key: {"name": "bob's"}}).status_code == 404
        assert bob.delete(url).status_code == 404
        # rita, a reader of alpha: reads, may not write (403: she can see it)
        assert rita.get(url).status_code == 200
        assert item["id"] in ids(rita, collection)
        resp = rita.put(url, json={key: {"name": "rita's"}})
        expect_error(resp, 403, "PolicyNotAuthorized")
        expect_error(rita.delete(url), 403, "PolicyNotAuthorized")
        # the admin sees everyone's
        assert item["id"] in ids(admin, collection, project_id=keystone.project_ids["alpha"])
    expect_error(rita.post("/v2.0/networks", json={"network": {"name": "no"}}), 403,
                 "PolicyNotAuthorized", "create_network is disallowed by policy")
    expect_error(bob.post("/v2.0/ports", json={"port": {"network_id": net["id"]}}), 404,
                 "NetworkNotFound")
    assert alice.show("networks", net["id"])["name"] == "alpha-net"  # untouched


def test_shared_and_external_networks_are_seen_by_all(users):
    admin = users["admin"]
    shared = admin.network(name="shared", shared=True)
    external = admin.network(name="public", **{"router:external": True})
    for name in ("alice", "bob", "rita"):
        seen = ids(users[name], "networks")
        assert {shared["id"], external["id"]} <= seen, name
    # but not changeable: they can see it, so 403
    resp = users["bob"].put(f"/v2.0/networks/{shared['id']}",
                            json={"network": {"name": "bob's"}})
    expect_error(resp, 403, "PolicyNotAuthorized")
    assert users["bob"].port(shared["id"])["project_id"] == users["bob"].project_id


def test_rbac_shares_a_network_with_one_project(users, keystone):
    alice, bob, carol = users["alice"], users["bob"], users["carol"]
    net = alice.network(name="for-beta")
    resp = alice.post("/v2.0/rbac-policies", json={"rbac_policy": {
        "object_type": "network", "object_id": net["id"], "action": "access_as_shared",
        "target_tenant": "*"}})
    expect_error(resp, 403, "PolicyNotAuthorized")  # only admins share with everyone
    policy = make(alice, "rbac-policies", "rbac_policy", object_type="network",
                  object_id=net["id"], action="access_as_shared",
                  target_tenant=keystone.project_ids["beta"])
    assert bob.show("networks", net["id"])["shared"] is True
    assert net["id"] in ids(bob, "networks")
    assert bob.port(net["id"])["project_id"] == bob.project_id
    assert carol.get(f"/v2.0/networks/{net['id']}").status_code == 404
    assert net["id"] not in ids(carol, "networks")
    # the policy is alice's business: bob does not see it
    assert bob.get(f"/v2.0/rbac-policies/{policy['id']}").status_code == 404
    resp = users["rita"].get(f"/v2.0/rbac-policies/{policy['id']}")
    assert resp.json()["rbac_policy"]["object_id"] == net["id"]


def test_unreachable_keystone_is_503(tmp_path):
    section = ("[keystone_authtoken]\nauth_url = http://127.0.0.1:1/v3\nusername = neutron\n"
               "password = x\nhttp_connect_timeout = 2\n")
    srv = start_server(tmp_path, f"sqlite:///{tmp_path}/n.db", auth="keystone",
                       extra="\n" + section)
    try:
        resp = httpx.get(f"{srv.url}/v2.0/networks", headers={"X-Auth-Token": "any"},
                         timeout=30)
        expect_error(resp, 503, "KeystoneUnavailable",
                     "The Keystone service is temporarily unavailable.")
    finally:
        srv.stop()
