"""The load-balancer API (Octavia v2), served on its own port by a server with
the ``octavia`` service plugin, on each database: Octavia's bodies, faults,
status machine and policy, and the VIP as a real port on the Networking API."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import update

from neutrino.db import models
from neutrino.db.engine import Database
from tests.conftest import BACKENDS
from tests.harness import ApiClient, Server, create_database, free_port, start_server

EXTRA = ("service_plugins = router,octavia\n"
         "[api_settings]\n"
         "enabled_provider_drivers = noop:Done at once,pending:Never done,"
         "haproxy:Run by load-balancer agents\n")
LBS = "/v2/lbaas/loadbalancers"


@pytest.fixture(scope="module", params=BACKENDS)
def lb_server(request, tmp_path_factory) -> Server:
    tmp = tmp_path_factory.mktemp(f"octavia-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=EXTRA,
                       octavia_port=free_port())
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def project() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def net(lb_server: Server, project: str) -> ApiClient:
    return lb_server.client(project)


@pytest.fixture
def lbapi(lb_server: Server, project: str) -> ApiClient:
    return lb_server.octavia(project)


@pytest.fixture
def subnet(net: ApiClient) -> dict:
    return net.subnet(net.network(name="vip")["id"], "10.20.0.0/24")


def fault(resp: httpx.Response, status: int, message: str | None = None) -> str:
    """Octavia's fault body; its faultstring."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"faultcode", "faultstring", "debuginfo"}, body
    assert body["faultcode"] == ("Client" if status < 500 else "Server"), body
    assert body["debuginfo"] is None
    if message is not None:
        assert body["faultstring"] == message, body
    return body["faultstring"]


def make_lb(api: ApiClient, subnet: dict, **attrs) -> dict:
    resp = api.post(LBS, json={"loadbalancer": {"vip_subnet_id": subnet["id"], **attrs}})
    assert resp.status_code == 201, resp.text
    return resp.json()["loadbalancer"]


def show(api: ApiClient, path: str, key: str) -> dict:
    resp = api.get(path)
    assert resp.status_code == 200, resp.text
    return resp.json()[key]


def make(api: ApiClient, path: str, key: str, **attrs) -> dict:
    resp = api.post(path, json={key: attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()[key]


def test_root_is_the_version_document_without_auth(lb_server: Server):
    resp = httpx.get(lb_server.octavia_url + "/")
    assert resp.status_code == 200
    versions = resp.json()["versions"]
    assert versions[0]["id"] == "v2.0"
    assert [v["status"] for v in versions].count("CURRENT") == 1
    assert versions[-1]["links"] == [{"href": lb_server.octavia_url + "/v2", "rel": "self"}]
    assert httpx.get(lb_server.octavia_url + "/v2",
                     headers={"X-User-Id": "u", "X-Roles": "reader",
                              "X-Project-Id": "p"}).json() == "v2"
    # the API itself wants an identity, in Octavia's fault body
    fault(httpx.get(lb_server.octavia_url + LBS), 401)


def test_load_balancer_crud_with_a_real_vip_port(lbapi: ApiClient, net: ApiClient,
                                                 subnet: dict, project: str):
    lb = make_lb(lbapi, subnet, name="web", description="front")
    assert lb["provisioning_status"] == "PENDING_CREATE"
    assert lb["operating_status"] == "OFFLINE"
    assert lb["project_id"] == project and lb["provider"] == "noop"
    assert lb["vip_subnet_id"] == subnet["id"]
    assert lb["vip_network_id"] == subnet["network_id"]
    port = net.show("ports", lb["vip_port_id"])
    assert port["device_owner"] == "Octavia"
    assert port["fixed_ips"] == [{"subnet_id": subnet["id"], "ip_address": lb["vip_address"]}]
    shown = show(lbapi, f"{LBS}/{lb['id']}", "loadbalancer")
    assert (shown["provisioning_status"], shown["operating_status"]) == ("ACTIVE", "ONLINE")
    listed = lbapi.get(LBS).json()
    assert [item["id"] for item in listed["loadbalancers"]] == [lb["id"]]
    assert listed["loadbalancers_links"] == []
    assert lbapi.get(LBS, params={"name": "nope"}).json()["loadbalancers"] == []
    resp = lbapi.put(f"{LBS}/{lb['id']}", json={"loadbalancer": {"name": "web2",
                                                                 "admin_state_up": False}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["loadbalancer"]["provisioning_status"] == "PENDING_UPDATE"
    shown = show(lbapi, f"{LBS}/{lb['id']}", "loadbalancer")
    assert (shown["name"], shown["operating_status"]) == ("web2", "OFFLINE")
    resp = lbapi.delete(f"{LBS}/{lb['id']}")
    assert resp.status_code == 204 and resp.content == b""
    fault(lbapi.get(f"{LBS}/{lb['id']}"), 404, f"Load Balancer {lb['id']} not found.")
    assert net.get(f"/v2.0/ports/{lb['vip_port_id']}").status_code == 404


def test_vip_on_a_network_and_at_a_chosen_address(lbapi: ApiClient, subnet: dict,
                                                  net: ApiClient):
    # the chosen address first: a VIP allocated at random could otherwise take it
    lb = make_lb(lbapi, subnet, vip_address="10.20.0.50")
    assert lb["vip_address"] == "10.20.0.50"
    resp = lbapi.post(LBS, json={"loadbalancer": {"vip_network_id": subnet["network_id"]}})
    assert resp.status_code == 201, resp.text
    assert resp.json()["loadbalancer"]["vip_subnet_id"] == subnet["id"]
    # the address is taken now: Networking's conflict, in Octavia's body, nothing made
    before = len(lbapi.get(LBS).json()["loadbalancers"])
    ports = len(net.get("/v2.0/ports").json()["ports"])
    resp = lbapi.post(LBS, json={"loadbalancer": {"vip_subnet_id": subnet["id"],
                                                  "vip_address": "10.20.0.50"}})
    fault(resp, 409)
    assert len(lbapi.get(LBS).json()["loadbalancers"]) == before
    assert len(net.get("/v2.0/ports").json()["ports"]) == ports


def test_listener_pool_member_crud(lbapi: ApiClient, subnet: dict):
    lb = make_lb(lbapi, subnet)
    listener = make(lbapi, "/v2/lbaas/listeners", "listener", loadbalancer_id=lb["id"],
                    protocol="HTTP", protocol_port=80, name="http")
    assert listener["provisioning_status"] == "PENDING_CREATE"
    assert listener["loadbalancers"] == [{"id": lb["id"]}]
    assert listener["connection_limit"] == -1 and listener["timeout_client_data"] == 50000
    fault(lbapi.post("/v2/lbaas/listeners", json={"listener": {
        "loadbalancer_id": lb["id"], "protocol": "HTTP", "protocol_port": 80}}), 409,
        "Another Listener on this Load Balancer is already using protocol HTTP and "
        "protocol_port 80")
    pool = make(lbapi, "/v2/lbaas/pools", "pool", listener_id=listener["id"],
                protocol="HTTP", lb_algorithm="ROUND_ROBIN",
                session_persistence={"type": "HTTP_COOKIE"})
    assert pool["listeners"] == [{"id": listener["id"]}]
    assert pool["loadbalancers"] == [{"id": lb["id"]}]
    shown = show(lbapi, f"/v2/lbaas/listeners/{listener['id']}", "listener")
    assert shown["default_pool_id"] == pool["id"]
    assert shown["provisioning_status"] == "ACTIVE"
    members = f"/v2/lbaas/pools/{pool['id']}/members"
    member = make(lbapi, members, "member", address="10.20.0.9", protocol_port=8080,
                  subnet_id=subnet["id"], weight=5)
    assert (member["weight"], member["backup"]) == (5, False)
    assert "description" not in member  # none in Octavia
    fault(lbapi.post(members, json={"member": {"address": "10.20.0.9",
                                               "protocol_port": 8080}}), 409,
          "Another member on this pool is already using ip 10.20.0.9 on protocol_port 8080")
    resp = lbapi.put(f"{members}/{member['id']}", json={"member": {"weight": 0}})
    assert resp.status_code == 200, resp.text
    shown = show(lbapi, f"{members}/{member['id']}", "member")
    assert (shown["weight"], shown["provisioning_status"], shown["operating_status"]) == (
        0, "ACTIVE", "ONLINE")
    assert show(lbapi, f"{LBS}/{lb['id']}", "loadbalancer")["listeners"] == [
        {"id": listener["id"]}]
    # batch update: one kept (updated), one new, the rest removed
    resp = lbapi.put(members, json={"members": [
        {"address": "10.20.0.9", "protocol_port": 8080, "weight": 7},
        {"address": "10.20.0.10", "protocol_port": 8080}]})
    assert resp.status_code == 202, resp.text
    got = {(m["address"], m["weight"]) for m in lbapi.get(members).json()["members"]}
    assert got == {("10.20.0.9", 7), ("10.20.0.10", 1)}
    resp = lbapi.put(members, json={"members": []})
    assert resp.status_code == 202
    assert lbapi.get(members).json()["members"] == []
    resp = lbapi.put(f"/v2/lbaas/pools/{pool['id']}", json={"pool": {
        "lb_algorithm": "LEAST_CONNECTIONS"}})
    assert resp.status_code == 200, resp.text
    assert lbapi.delete(f"/v2/lbaas/pools/{pool['id']}").status_code == 204
    assert show(lbapi, f"/v2/lbaas/listeners/{listener['id']}",
                "listener")["default_pool_id"] is None
    assert lbapi.delete(f"/v2/lbaas/listeners/{listener['id']}").status_code == 204
    fault(lbapi.get(f"/v2/lbaas/listeners/{listener['id']}"), 404)
    assert show(lbapi, f"{LBS}/{lb['id']}", "loadbalancer")["provisioning_status"] == "ACTIVE"


def test_cascade_delete_removes_the_tree_and_the_vip_port(lbapi: ApiClient, net: ApiClient,
                                                          subnet: dict):
    lb = make_lb(lbapi, subnet)
    listener = make(lbapi, "/v2/lbaas/listeners", "listener", loadbalancer_id=lb["id"],
                    protocol="TCP", protocol_port=443)
    pool = make(lbapi, "/v2/lbaas/pools", "pool", loadbalancer_id=lb["id"], protocol="TCP",
                lb_algorithm="SOURCE_IP")
    make(lbapi, f"/v2/lbaas/pools/{pool['id']}/members", "member", address="10.20.0.7",
         protocol_port=443)
    fault(lbapi.delete(f"{LBS}/{lb['id']}"), 400,
          f"Validation failure: Cannot delete Load Balancer {lb['id']} - it has children")
    assert show(lbapi, f"{LBS}/{lb['id']}", "loadbalancer")["provisioning_status"] == "ACTIVE"
    assert lbapi.delete(f"{LBS}/{lb['id']}", params={"cascade": "true"}).status_code == 204
    for path in (f"{LBS}/{lb['id']}", f"/v2/lbaas/listeners/{listener['id']}",
                 f"/v2/lbaas/pools/{pool['id']}"):
        fault(lbapi.get(path), 404)
    assert net.get(f"/v2.0/ports/{lb['vip_port_id']}").status_code == 404


def test_a_floating_ip_on_the_vip_lets_go_when_the_load_balancer_goes(
        lbapi: ApiClient, net: ApiClient, lb_server: Server, subnet: dict):
    admin = lb_server.client(uuid.uuid4().hex, roles=("admin",))
    external = admin.network(**{"router:external": True})
    admin.subnet(external["id"], "198.51.100.0/24")
    router = net.create("routers", name="r", external_gateway_info={
        "network_id": external["id"]})
    assert net.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                   json={"subnet_id": subnet["id"]}).status_code == 200
    lb = make_lb(lbapi, subnet)
    fip = net.create("floatingips", floating_network_id=external["id"],
                     port_id=lb["vip_port_id"])
    assert lbapi.delete(f"{LBS}/{lb['id']}").status_code == 204
    fault(lbapi.get(f"{LBS}/{lb['id']}"), 404)
    assert net.get(f"/v2.0/ports/{lb['vip_port_id']}").status_code == 404
    assert net.show("floatingips", fip["id"])["port_id"] is None


def test_the_status_tree_follows_listeners_to_their_pools(lbapi: ApiClient, subnet: dict):
    lb = make_lb(lbapi, subnet, name="tree")
    listener = make(lbapi, "/v2/lbaas/listeners", "listener", loadbalancer_id=lb["id"],
                    protocol="HTTP", protocol_port=80, name="front")
    tcp = make(lbapi, "/v2/lbaas/listeners", "listener", loadbalancer_id=lb["id"],
               protocol="TCP", protocol_port=22, name="ssh")
    pool = make(lbapi, "/v2/lbaas/pools", "pool", listener_id=listener["id"],
                protocol="HTTP", lb_algorithm="ROUND_ROBIN", name="back")
    make(lbapi, "/v2/lbaas/pools", "pool", loadbalancer_id=lb["id"], protocol="TCP",
         lb_algorithm="ROUND_ROBIN")  # on no listener: not in the tree
    member = make(lbapi, f"/v2/lbaas/pools/{pool['id']}/members", "member",
                  address="10.20.0.7", protocol_port=8080)
    monitor = make(lbapi, "/v2/lbaas/healthmonitors", "healthmonitor", pool_id=pool["id"],
                   type="TCP", delay=5, timeout=3, max_retries=2)
    tree = show(lbapi, f"{LBS}/{lb['id']}/status", "statuses")

    def brief(item: dict, name: str) -> dict:
        return {"id": item["id"], "name": name, "provisioning_status": "ACTIVE",
                "operating_status": "ONLINE"}
    listeners = tree["loadbalancer"].pop("listeners")
    assert tree == {"loadbalancer": brief(lb, "tree")}
    # listeners made in one second come in the order of their ids
    assert sorted(listeners, key=lambda item: item["name"]) == [
        {**brief(listener, "front"), "pools": [
            {**brief(pool, "back"),
             "health_monitor": {**brief(monitor, ""), "type": "TCP"},
             "members": [{**brief(member, ""), "address": "10.20.0.7",
                          "protocol_port": 8080}]}]},
        {**brief(tcp, "ssh"), "pools": []}]
    fault(lbapi.get(f"{LBS}/{uuid.uuid4()}/status"), 404)
    zero = {"active_connections": 0, "bytes_in": 0, "bytes_out": 0, "request_errors": 0,
            "total_connections": 0}
    assert show(lbapi, f"{LBS}/{lb['id']}/stats", "stats") == zero  # the noop provider's
    assert show(lbapi, f"/v2/lbaas/listeners/{listener['id']}/stats", "stats") == zero


def test_failover_is_an_admins(lbapi: ApiClient, lb_server: Server, subnet: dict):
    lb = make_lb(lbapi, subnet)
    fault(lbapi.put(f"{LBS}/{lb['id']}/failover"), 403)
    admin = lb_server.octavia(uuid.uuid4().hex, roles=("admin",))
    resp = admin.put(f"{LBS}/{lb['id']}/failover")
    assert resp.status_code == 202 and resp.content == b"", resp.text
    # the noop provider has it ACTIVE again at once
    assert show(lbapi, f"{LBS}/{lb['id']}", "loadbalancer")["provisioning_status"] == "ACTIVE"
    fault(admin.put(f"{LBS}/{uuid.uuid4()}/failover"), 404)


def test_l7_policies_in_position_order_and_their_rules(lbapi: ApiClient, subnet: dict):
    lb = make_lb(lbapi, subnet)
    listener = make(lbapi, "/v2/lbaas/listeners", "listener", loadbalancer_id=lb["id"],
                    protocol="HTTP", protocol_port=80)
    tcp = make(lbapi, "/v2/lbaas/listeners", "listener", loadbalancer_id=lb["id"],
               protocol="TCP", protocol_port=22)
    pool = make(lbapi, "/v2/lbaas/pools", "pool", loadbalancer_id=lb["id"], protocol="HTTP",
                lb_algorithm="ROUND_ROBIN")
    policies = "/v2/lbaas/l7policies"
    to_pool = make(lbapi, policies, "l7policy", listener_id=listener["id"],
                   action="REDIRECT_TO_POOL", redirect_pool_id=pool["id"], name="api")
    assert (to_pool["position"], to_pool["redirect_http_code"]) == (1, None)
    reject = make(lbapi, policies, "l7policy", listener_id=listener["id"], action="REJECT",
                  position=1)
    to_url = make(lbapi, policies, "l7policy", listener_id=listener["id"],
                  action="REDIRECT_TO_URL", redirect_url="https://example.com/x", position=9)
    assert to_url["position"] == 3 and to_url["redirect_http_code"] == 302
    assert show(lbapi, f"{policies}/{to_pool['id']}", "l7policy")["position"] == 2
    assert show(lbapi, f"/v2/lbaas/listeners/{listener['id']}", "listener")[
        "l7policies"] == [{"id": reject["id"]}, {"id": to_pool["id"]}, {"id": to_url["id"]}]

    rules = f"{policies}/{reject['id']}/rules"
    made_rule = lbapi.post(rules, json={"rule": {"type": "HEADER", "compare_type": "EQUAL_TO",
                                                 "key": "X-Bad", "value": "yes"}})
    assert made_rule.status_code == 201, made_rule.text
    rule = made_rule.json()["rule"]
    assert {k: rule[k] for k in ("type", "compare_type", "key", "value", "invert",
                                 "provisioning_status")} == {
        "type": "HEADER", "compare_type": "EQUAL_TO", "key": "X-Bad", "value": "yes",
        "invert": False, "provisioning_status": "PENDING_CREATE"}  # as made
    assert show(lbapi, f"{rules}/{rule['id']}", "rule")["provisioning_status"] == "ACTIVE"
    assert "name" not in rule
    assert show(lbapi, f"{policies}/{reject['id']}", "l7policy")["rules"] == [
        {"id": rule["id"]}]
    assert [r["id"] for r in lbapi.get(rules).json()["rules"]] == [rule["id"]]
    updated = lbapi.put(f"{rules}/{rule['id']}", json={"rule": {"invert": True}})
    assert updated.status_code == 200 and updated.json()["rule"]["invert"] is True

    # what Octavia refuses
    fault(lbapi.post(policies, json={"l7policy": {"listener_id": listener["id"],
                                                  "action": "REDIRECT_TO_URL"}}), 400)
    fault(lbapi.post(policies, json={"l7policy": {"listener_id": tcp["id"],
                                                  "action": "REJECT"}}), 400)
    fault(lbapi.post(policies, json={"l7policy": {
        "listener_id": listener["id"], "action": "REDIRECT_TO_URL",
        "redirect_url": "https://example.com", "redirect_http_code": 404}}), 400)
    for bad in ({"type": "HEADER", "compare_type": "EQUAL_TO", "value": "x"},
                {"type": "PATH", "compare_type": "EQUAL_TO", "key": "k", "value": "/x"},
                {"type": "FILE_TYPE", "compare_type": "CONTAINS", "value": "jpg"},
                {"type": "PATH", "compare_type": "REGEX", "value": "(unclosed"},
                {"type": "PATH", "compare_type": "EQUAL_TO", "value": "/a\nb"}):
        fault(lbapi.post(rules, json={"rule": bad}), 400)

    # a policy that goes: the others close up; a pool that goes: its policies reject
    assert lbapi.delete(f"{policies}/{reject['id']}").status_code == 204
    fault(lbapi.get(f"{rules}/{rule['id']}"), 404)
    assert [show(lbapi, f"{policies}/{p['id']}", "l7policy")["position"]
            for p in (to_pool, to_url)] == [1, 2]
    assert lbapi.delete(f"/v2/lbaas/pools/{pool['id']}").status_code == 204
    shown = show(lbapi, f"{policies}/{to_pool['id']}", "l7policy")
    assert (shown["action"], shown["redirect_pool_id"]) == ("REJECT", None)
    moved = lbapi.put(f"{policies}/{to_url['id']}", json={"l7policy": {"position": 1}})
    assert moved.status_code == 200 and moved.json()["l7policy"]["position"] == 1
    assert show(lbapi, f"{policies}/{to_pool['id']}", "l7policy")["position"] == 2
    assert lbapi.delete(f"{LBS}/{lb['id']}", params={"cascade": "true"}).status_code == 204
    fault(lbapi.get(f"{policies}/{to_url['id']}"), 404)


def test_quotas_set_by_an_admin_hold(lbapi: ApiClient, lb_server: Server, subnet: dict,
                                     project: str):
    admin = lb_server.octavia(uuid.uuid4().hex, roles=("admin",))
    unlimited = {"load_balancer": -1, "listener": -1, "member": -1, "pool": -1,
                 "health_monitor": -1, "l7policy": -1, "l7rule": -1, "loadbalancer": -1,
                 "healthmonitor": -1}
    assert show(lbapi, "/v2/lbaas/quotas/defaults", "quota") == unlimited
    assert show(lbapi, f"/v2/lbaas/quotas/{project}", "quota") == unlimited
    fault(lbapi.put(f"/v2/lbaas/quotas/{project}", json={"quota": {"load_balancer": 1}}),
          403)
    resp = admin.put(f"/v2/lbaas/quotas/{project}",
                     json={"quota": {"loadbalancer": 1, "member": 2}})
    assert resp.status_code == 202, resp.text
    assert resp.json()["quota"] == {**unlimited, "load_balancer": 1, "loadbalancer": 1,
                                    "member": 2}
    fault(admin.put(f"/v2/lbaas/quotas/{project}", json={"quota": {"member": -2}}), 400)
    fault(admin.put(f"/v2/lbaas/quotas/{project}", json={"quota": {"routers": 1}}), 400)
    assert [q["project_id"] for q in lbapi.get("/v2/lbaas/quotas").json()["quotas"]] == [
        project]

    lb = make_lb(lbapi, subnet)
    fault(lbapi.post(LBS, json={"loadbalancer": {"vip_subnet_id": subnet["id"]}}), 403,
          "Quota has been met for resources: Load Balancer")
    pool = make(lbapi, "/v2/lbaas/pools", "pool", loadbalancer_id=lb["id"], protocol="TCP",
                lb_algorithm="ROUND_ROBIN")
    members = f"/v2/lbaas/pools/{pool['id']}/members"
    three = [{"address": f"10.20.0.{i}", "protocol_port": 80} for i in (7, 8, 9)]
    fault(lbapi.put(members, json={"members": three}), 403,
          "Quota has been met for resources: Member")
    assert lbapi.put(members, json={"members": three[:2]}).status_code == 202
    # the batch that replaces one member by another stays within the quota
    assert lbapi.put(members, json={"members": three[1:]}).status_code == 202
    assert admin.delete(f"/v2/lbaas/quotas/{project}").status_code == 202
    assert show(lbapi, f"/v2/lbaas/quotas/{project}", "quota") == unlimited
    make_lb(lbapi, subnet)


def test_a_pending_load_balancer_is_immutable(lbapi: ApiClient, subnet: dict):
    lb = make_lb(lbapi, subnet, provider="pending")
    assert show(lbapi, f"{LBS}/{lb['id']}", "loadbalancer")["provisioning_status"] == \
        "PENDING_CREATE"
    immutable = f"Load Balancer {lb['id']} is immutable and cannot be updated."
    fault(lbapi.put(f"{LBS}/{lb['id']}", json={"loadbalancer": {"name": "x"}}), 409,
          immutable)
    fault(lbapi.delete(f"{LBS}/{lb['id']}"), 409, immutable)
    fault(lbapi.post("/v2/lbaas/listeners", json={"listener": {
        "loadbalancer_id": lb["id"], "protocol": "HTTP", "protocol_port": 80}}), 409,
        immutable)
    assert lbapi.get("/v2/lbaas/listeners").json()["listeners"] == []
    assert show(lbapi, f"{LBS}/{lb['id']}", "loadbalancer")["name"] == ""
    fault(lbapi.post(LBS, json={"loadbalancer": {"vip_subnet_id": subnet["id"],
                                                 "provider": "amphora"}}), 400,
          "Provider 'amphora' is not enabled.")
    providers = lbapi.get("/v2/lbaas/providers").json()["providers"]
    assert {p["name"] for p in providers} == {"noop", "pending", "haproxy"}


@pytest.mark.parametrize(("path", "key", "attrs", "message"), [
    (LBS, "loadbalancer", {}, "Validation failure: VIP must contain one of: vip_port_id, "
                              "vip_network_id, vip_subnet_id."),
    (LBS, "loadbalancer", {"vip_subnet_id": "x"}, None),
    (LBS, "loadbalancer", {"bogus": 1}, None),
    (LBS, "loadbalancer", {"admin_state_up": "yes"}, None),
    ("/v2/lbaas/listeners", "listener", {"protocol": "FTP", "protocol_port": 21}, None),
    ("/v2/lbaas/listeners", "listener", {"protocol": "HTTP", "protocol_port": 0},
     "Invalid input for field/attribute protocol_port. Value: '0'. Value should be greater "
     "or equal to 1"),
    ("/v2/lbaas/listeners", "listener", {"protocol": "HTTP"},
     "Invalid input for field/attribute protocol_port. Value: 'None'. Mandatory field "
     "missing."),
    ("/v2/lbaas/listeners", "listener", {"protocol": "TERMINATED_HTTPS",
                                         "protocol_port": 443}, None),
    ("/v2/lbaas/listeners", "listener", {"protocol": "TERMINATED_HTTPS", "protocol_port": 443,
                                         "default_tls_container_ref": "https://kms/c1"},
     "Could not retrieve certificate: https://kms/c1 (no secret store serves this cloud)"),
    ("/v2/lbaas/listeners", "listener", {"protocol": "HTTP", "protocol_port": 81,
                                         "sni_container_refs": ["https://kms/c1"]},
     "Validation failure: Certificate container references are only allowed on "
     "TERMINATED_HTTPS protocol listeners."),
    ("/v2/lbaas/pools", "pool", {"protocol": "HTTP", "lb_algorithm": "RANDOM"}, None),
    ("/v2/lbaas/pools", "pool", {"protocol": "UDP", "lb_algorithm": "ROUND_ROBIN"},
     "Validation failure: The pool protocol 'UDP' is invalid while the listener protocol "
     "is 'HTTP'."),
    ("/v2/lbaas/pools", "pool", {"protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
                                 "session_persistence": {"type": "APP_COOKIE"}}, None),
])
def test_bad_input_is_a_400_in_octavias_body(lbapi: ApiClient, subnet: dict, path: str,
                                             key: str, attrs: dict, message: str | None):
    lb = make_lb(lbapi, subnet)
    listener = make(lbapi, "/v2/lbaas/listeners", "listener", loadbalancer_id=lb["id"],
                    protocol="HTTP", protocol_port=8000)
    parent = {"listener": {"loadbalancer_id": lb["id"]},
              "pool": {"listener_id": listener["id"]}}.get(key, {})
    fault(lbapi.post(path, json={key: {**parent, **attrs}}), 400, message)
    assert len(lbapi.get(LBS).json()["loadbalancers"]) == 1
    assert len(lbapi.get("/v2/lbaas/listeners").json()["listeners"]) == 1
    assert lbapi.get("/v2/lbaas/pools").json()["pools"] == []


def test_member_on_an_unknown_subnet_makes_nothing(lbapi: ApiClient, subnet: dict):
    lb = make_lb(lbapi, subnet)
    pool = make(lbapi, "/v2/lbaas/pools", "pool", loadbalancer_id=lb["id"], protocol="TCP",
                lb_algorithm="ROUND_ROBIN")
    members = f"/v2/lbaas/pools/{pool['id']}/members"
    missing = str(uuid.uuid4())
    fault(lbapi.post(members, json={"member": {"address": "10.20.0.5", "protocol_port": 80,
                                               "subnet_id": missing}}), 400,
          f"Subnet {missing} not found.")
    assert lbapi.get(members).json()["members"] == []
    assert show(lbapi, f"{LBS}/{lb['id']}", "loadbalancer")["provisioning_status"] == "ACTIVE"


def test_member_at_a_reserved_address_is_refused(lbapi: ApiClient, subnet: dict):
    """Octavia's ``[networking] reserved_ips`` (169.254.169.254 by default): its
    InvalidOption 400, on create and for a batch's new members."""
    lb = make_lb(lbapi, subnet)
    pool = make(lbapi, "/v2/lbaas/pools", "pool", loadbalancer_id=lb["id"], protocol="TCP",
                lb_algorithm="ROUND_ROBIN")
    members = f"/v2/lbaas/pools/{pool['id']}/members"
    message = "169.254.169.254 is not a valid option for member address"
    fault(lbapi.post(members, json={"member": {"address": "169.254.169.254",
                                               "protocol_port": 80}}), 400, message)
    kept = make(lbapi, members, "member", address="10.20.0.5", protocol_port=80)
    fault(lbapi.put(members, json={"members": [
        {"address": "10.20.0.5", "protocol_port": 80},
        {"address": "169.254.169.254", "protocol_port": 80}]}), 400, message)
    assert [m["id"] for m in lbapi.get(members).json()["members"]] == [kept["id"]]
    assert show(lbapi, f"{LBS}/{lb['id']}", "loadbalancer")["provisioning_status"] == "ACTIVE"


def _as_reported_active(server: Server, lb_id: str) -> None:
    """What the load-balancer agent's report would do: the tree ACTIVE."""
    db = Database(server.db_url, pool_size=1)
    try:
        db.write(lambda conn: conn.execute(
            update(models.lbaas_loadbalancers).where(models.lbaas_loadbalancers.c.id == lb_id)
            .values(provisioning_status="ACTIVE")))
    finally:
        db.dispose()


def test_haproxy_refuses_a_member_its_namespace_cannot_reach(
        lbapi: ApiClient, net: ApiClient, lb_server: Server):
    """The haproxy provider's HAProxy has only the VIP port: with no gateway on
    the VIP subnet, a member outside it (or of the other IP version) cannot be
    reached, and Octavia's provider-unsupported fault says so."""
    isolated = net.subnet(net.network(name="isolated")["id"], "10.30.0.0/24",
                          gateway_ip=None)
    routed = net.subnet(net.network(name="routed")["id"], "10.40.0.0/24")
    pools = {}
    for vip in (isolated, routed):
        lb = make_lb(lbapi, vip, provider="haproxy")
        _as_reported_active(lb_server, lb["id"])  # no agent here: as if it had served it
        pools[vip["id"]] = make(lbapi, "/v2/lbaas/pools", "pool", loadbalancer_id=lb["id"],
                                protocol="TCP", lb_algorithm="ROUND_ROBIN")["id"]
        _as_reported_active(lb_server, lb["id"])
    members = f"/v2/lbaas/pools/{pools[isolated['id']]}/members"
    for address, version in (("10.40.0.9", 4), ("2001:db8::9", 6)):
        fault(lbapi.post(members, json={"member": {"address": address, "protocol_port": 80}}),
              501, f"Provider 'haproxy' does not support a requested option: member address "
                   f"{address} is outside the VIP subnet 10.30.0.0/24, which has no "
                   f"IPv{version} gateway")
    fault(lbapi.put(members, json={"members": [{"address": "10.40.0.9", "protocol_port": 80}]}),
          501)
    assert lbapi.get(members).json()["members"] == []
    # on link, it is taken; through a gateway, anything of its version is
    make(lbapi, members, "member", address="10.30.0.9", protocol_port=80)
    routed_members = f"/v2/lbaas/pools/{pools[routed['id']]}/members"
    fault(lbapi.post(routed_members, json={"member": {"address": "2001:db8::9",
                                                      "protocol_port": 80}}), 501)
    make(lbapi, routed_members, "member", address="10.30.0.9", protocol_port=80)


def test_policy_reader_member_other_project_admin(lb_server: Server, lbapi: ApiClient,
                                                  subnet: dict, project: str):
    lb = make_lb(lbapi, subnet)
    path = f"{LBS}/{lb['id']}"
    forbidden = "Policy does not allow this request to be performed."
    reader = lb_server.octavia(project, roles=("reader",))
    assert reader.get(path).status_code == 200
    assert [i["id"] for i in reader.get(LBS).json()["loadbalancers"]] == [lb["id"]]
    fault(reader.put(path, json={"loadbalancer": {"name": "r"}}), 403, forbidden)
    fault(reader.delete(path), 403, forbidden)
    fault(reader.post(LBS, json={"loadbalancer": {"vip_subnet_id": subnet["id"]}}), 403,
          forbidden)
    other = lb_server.octavia(uuid.uuid4().hex)
    fault(other.get(path), 403, forbidden)
    fault(other.put(path, json={"loadbalancer": {"name": "o"}}), 403, forbidden)
    fault(other.delete(path), 403, forbidden)
    assert other.get(LBS).json()["loadbalancers"] == []
    # a member may not create in another project
    fault(lbapi.post(LBS, json={"loadbalancer": {"vip_subnet_id": subnet["id"],
                                                 "project_id": uuid.uuid4().hex}}), 403,
          forbidden)
    # Octavia's own roles serve as well as keystone's
    lb_member = lb_server.octavia(project, roles=("load-balancer_member",))
    resp = lb_member.put(path, json={"loadbalancer": {"name": "by-lb-member"}})
    assert resp.status_code == 200, resp.text
    nobody = lb_server.octavia(project, roles=())
    fault(nobody.get(path), 403, forbidden)
    admin = lb_server.octavia(uuid.uuid4().hex, roles=("admin",))
    assert lb["id"] in {i["id"] for i in admin.get(LBS).json()["loadbalancers"]}
    assert [i["id"] for i in admin.get(LBS, params={"project_id": project}).json()[
        "loadbalancers"]] == [lb["id"]]
    assert admin.delete(path).status_code == 204


def test_pagination_links(lbapi: ApiClient, subnet: dict):
    made = [make_lb(lbapi, subnet, name=f"lb{i}")["id"] for i in range(3)]
    first = lbapi.get(LBS, params={"limit": 2}).json()
    assert len(first["loadbalancers"]) == 2
    (link,) = first["loadbalancers_links"]
    assert link["rel"] == "next"
    rest = lbapi.get(link["href"]).json()
    assert len(rest["loadbalancers"]) == 1
    assert {i["id"] for i in first["loadbalancers"] + rest["loadbalancers"]} == set(made)
    assert rest["loadbalancers_links"] == []
    fields = lbapi.get(LBS, params={"fields": "name"}).json()["loadbalancers"]
    assert sorted(fields, key=lambda f: f["name"]) == [{"name": f"lb{i}"} for i in range(3)]


def test_served_by_every_api_worker(tmp_path):
    """With api_workers = 2 both APIs answer, each on its own port."""
    url, drop = create_database("sqlite", tmp_path)
    srv = start_server(tmp_path, url, auth="noauth", workers=2,
                       extra="service_plugins = octavia\n", octavia_port=free_port())
    try:
        api = srv.octavia("p")
        for _ in range(6):  # the connections land on either worker
            with httpx.Client(base_url=srv.octavia_url, headers=dict(api.http.headers)) as c:
                assert c.get(LBS).json() == {"loadbalancers": [], "loadbalancers_links": []}
        headers = dict(api.http.headers)
        assert httpx.get(srv.url + "/v2.0/networks", headers=headers).json() == {
            "networks": []}
        resp = httpx.get(srv.url + LBS, headers=headers)  # not on the Networking API
        assert resp.status_code == 404 and "NeutronError" in resp.json()
        fault(httpx.get(srv.octavia_url + "/v2/lbaas/nothing", headers=headers), 404)
    finally:
        srv.stop()
        drop()


def test_health_monitor_crud_and_checks(lbapi: ApiClient, subnet: dict):
    lb = make_lb(lbapi, subnet)
    pool = make(lbapi, "/v2/lbaas/pools", "pool", loadbalancer_id=lb["id"], protocol="HTTP",
                lb_algorithm="ROUND_ROBIN")
    hms = "/v2/lbaas/healthmonitors"
    hm = make(lbapi, hms, "healthmonitor", pool_id=pool["id"], type="HTTP", delay=5,
              timeout=3, max_retries=2)
    assert (hm["http_method"], hm["url_path"], hm["expected_codes"]) == ("GET", "/", "200")
    assert hm["max_retries_down"] == 3 and hm["pools"] == [{"id": pool["id"]}]
    assert show(lbapi, f"/v2/lbaas/pools/{pool['id']}", "pool")["healthmonitor_id"] == hm["id"]
    fault(lbapi.post(hms, json={"healthmonitor": {
        "pool_id": pool["id"], "type": "TCP", "delay": 5, "timeout": 3, "max_retries": 2}}),
        409, "This pool already has a health monitor")
    resp = lbapi.put(f"{hms}/{hm['id']}", json={"healthmonitor": {
        "url_path": "/healthz", "expected_codes": "200-204"}})
    assert resp.status_code == 200, resp.text
    shown = show(lbapi, f"{hms}/{hm['id']}", "healthmonitor")
    assert (shown["url_path"], shown["provisioning_status"]) == ("/healthz", "ACTIVE")
    fault(lbapi.put(f"{hms}/{hm['id']}", json={"healthmonitor": {
        "expected_codes": "abc"}}), 400)
    assert lbapi.delete(f"{hms}/{hm['id']}").status_code == 204
    assert show(lbapi, f"/v2/lbaas/pools/{pool['id']}", "pool")["healthmonitor_id"] is None
    tcp = {"pool_id": pool["id"], "type": "TCP", "delay": 5, "timeout": 3, "max_retries": 2}
    fault(lbapi.post(hms, json={"healthmonitor": {**tcp, "url_path": "/x"}}), 400,
          "url_path is not a valid option for health monitors of type TCP")
    fault(lbapi.post(hms, json={"healthmonitor": {**tcp, "type": "UDP-CONNECT"}}), 400,
          "Validation failure: The UDP-CONNECT type is only supported for pools of type "
          "UDP/SCTP.")
    fault(lbapi.post(hms, json={"healthmonitor": {**tcp, "max_retries": 11}}), 400)
    assert lbapi.get(hms).json()["healthmonitors"] == []
    # a cascade delete takes the monitor with the pool
    hm = make(lbapi, hms, "healthmonitor", **tcp)
    assert lbapi.delete(f"{LBS}/{lb['id']}", params={"cascade": "true"}).status_code == 204
    fault(lbapi.get(f"{hms}/{hm['id']}"), 404)


def test_security_groups_on_the_vip_port(lbapi: ApiClient, net: ApiClient, subnet: dict):
    group = net.post("/v2.0/security-groups", json={"security_group": {"name": "web"}}).json()[
        "security_group"]
    lb = make_lb(lbapi, subnet, vip_sg_ids=[group["id"]])
    assert lb["vip_sg_ids"] == [group["id"]]
    assert net.show("ports", lb["vip_port_id"])["security_groups"] == [group["id"]]
    # another project's group cannot be used, and nothing is left of the attempt
    foreign = ApiClient(net.base_url, {"X-Project-Id": uuid.uuid4().hex, "X-Roles": "member",
                                       "X-User-Id": "someone"})
    theirs = foreign.post("/v2.0/security-groups", json={
        "security_group": {"name": "theirs"}}).json()["security_group"]
    resp = lbapi.post(LBS, json={"loadbalancer": {"vip_subnet_id": subnet["id"],
                                                  "vip_sg_ids": [theirs["id"]]}})
    fault(resp, 404, f"Security group {theirs['id']} does not exist")
    assert [i["id"] for i in lbapi.get(LBS).json()["loadbalancers"]] == [lb["id"]]


# --- flavors, availability zones and their profiles ------------------------------------

FLAVOR_PROFILES, FLAVORS = "/v2/lbaas/flavorprofiles", "/v2/lbaas/flavors"
ZONE_PROFILES, ZONES = "/v2/lbaas/availabilityzoneprofiles", "/v2/lbaas/availabilityzones"


def test_providers_say_which_flavor_and_zone_options_they_apply(lb_server: Server,
                                                                 lbapi: ApiClient):
    admin = lb_server.octavia(uuid.uuid4().hex, roles=("admin",))
    found = show(admin, "/v2/lbaas/providers/haproxy/flavor_capabilities",
                 "flavor_capabilities")
    assert {item["name"] for item in found} == {"maxconn", "nbthread"}
    assert all(item["description"] for item in found)
    only = show(admin, "/v2/lbaas/providers/haproxy/flavor_capabilities?name=nbthread"
                       "&fields=name", "flavor_capabilities")
    assert only == [{"name": "nbthread"}]
    zones = show(admin, "/v2/lbaas/providers/haproxy/availability_zone_capabilities",
                 "availability_zone_capabilities")
    assert [item["name"] for item in zones] == ["agent_availability_zone"]
    assert show(admin, "/v2/lbaas/providers/noop/flavor_capabilities",
                "flavor_capabilities") == []
    fault(admin.get("/v2/lbaas/providers/nope/flavor_capabilities"), 400,
          "Provider 'nope' is not enabled.")
    fault(lbapi.get("/v2/lbaas/providers/haproxy/flavor_capabilities"), 403)


def test_flavors_and_profiles_as_octavia_keeps_them(lb_server: Server, lbapi: ApiClient,
                                                    subnet: dict):
    admin = lb_server.octavia(uuid.uuid4().hex, roles=("admin",))
    name = f"small-{uuid.uuid4().hex[:8]}"
    # the haproxy provider checks the options it applies; JSON they must be
    checked = make(admin, FLAVOR_PROFILES, "flavorprofile", name="h", provider_name="haproxy",
                   flavor_data='{"maxconn": 100, "nbthread": 2}')
    assert checked["flavor_data"] == '{"maxconn": 100, "nbthread": 2}'
    assert admin.delete(f"{FLAVOR_PROFILES}/{checked['id']}").status_code == 204
    for data in ('{"maxconn": 0}', '{"nbthread": "2"}', '{"compute_flavor": "x"}'):
        fault(admin.post(FLAVOR_PROFILES, json={"flavorprofile": {
            "name": "bad", "provider_name": "haproxy", "flavor_data": data}}), 501)
    fault(admin.post(FLAVOR_PROFILES, json={"flavorprofile": {
        "name": "bad", "provider_name": "haproxy", "flavor_data": "[1"}}), 400,
        "[1 is not a valid option for flavor_data")
    fault(admin.post(FLAVOR_PROFILES, json={"flavorprofile": {
        "name": "bad", "provider_name": "nope", "flavor_data": "{}"}}), 400,
        "Provider 'nope' is not enabled.")
    profile = make(admin, FLAVOR_PROFILES, "flavorprofile", name="p", provider_name="noop",
                   flavor_data='{"maxconn": 100}')
    flavor = make(admin, FLAVORS, "flavor", name=name, flavor_profile_id=profile["id"])
    assert flavor == {"id": flavor["id"], "name": name, "description": None, "enabled": True,
                      "flavor_profile_id": profile["id"]}
    fault(admin.post(FLAVORS, json={"flavor": {"name": name,
                                               "flavor_profile_id": profile["id"]}}), 409,
          f"A flavor of {name} already exists.")
    fault(admin.post(FLAVORS, json={"flavor": {"name": "x",
                                               "flavor_profile_id": str(uuid.uuid4())}}), 400)
    # projects read flavors, not profiles; only an admin writes
    assert flavor["id"] in [f["id"] for f in show(lbapi, FLAVORS, "flavors")]
    assert show(lbapi, f"{FLAVORS}/{flavor['id']}", "flavor")["name"] == name
    fault(lbapi.get(FLAVOR_PROFILES), 403)
    fault(lbapi.post(FLAVORS, json={"flavor": {"name": "mine",
                                               "flavor_profile_id": profile["id"]}}), 403)
    # a load balancer of the flavor takes its provider; another provider is refused
    lb = make_lb(lbapi, subnet, flavor_id=flavor["id"])
    assert lb["provider"] == "noop" and lb["flavor_id"] == flavor["id"]
    fault(lbapi.post(LBS, json={"loadbalancer": {
        "vip_subnet_id": subnet["id"], "flavor_id": flavor["id"], "provider": "pending"}}),
        400, f"Flavor '{flavor['id']}' is not compatible with provider 'pending'")
    fault(lbapi.post(LBS, json={"loadbalancer": {
        "vip_subnet_id": subnet["id"], "flavor_id": str(uuid.uuid4())}}), 400,
        "Validation failure: Invalid flavor_id.")
    # in use: the profile keeps its options, neither goes
    fault(admin.put(f"{FLAVOR_PROFILES}/{profile['id']}", json={"flavorprofile": {
        "flavor_data": '{"maxconn": 5}'}}), 409)
    renamed = admin.put(f"{FLAVOR_PROFILES}/{profile['id']}",
                        json={"flavorprofile": {"name": "renamed"}})
    assert renamed.status_code == 200 and renamed.json()["flavorprofile"]["name"] == "renamed"
    fault(admin.delete(f"{FLAVOR_PROFILES}/{profile['id']}"), 409)
    fault(admin.delete(f"{FLAVORS}/{flavor['id']}"), 409,
          f"Flavor {flavor['id']} is in use and cannot be modified.")
    # disabled: no new load balancer of it
    resp = admin.put(f"{FLAVORS}/{flavor['id']}", json={"flavor": {"enabled": False}})
    assert resp.status_code == 200 and resp.json()["flavor"]["enabled"] is False
    fault(lbapi.post(LBS, json={"loadbalancer": {
        "vip_subnet_id": subnet["id"], "flavor_id": flavor["id"]}}), 400,
        f"The selected flavor is not allowed in this deployment: {flavor['id']}")
    assert lbapi.delete(f"{LBS}/{lb['id']}").status_code == 204
    assert admin.delete(f"{FLAVORS}/{flavor['id']}").status_code == 204
    assert admin.delete(f"{FLAVOR_PROFILES}/{profile['id']}").status_code == 204
    fault(admin.get(f"{FLAVOR_PROFILES}/{profile['id']}"), 404,
          f"Flavor profile {profile['id']} not found.")


def test_availability_zones_as_octavia_keeps_them(lb_server: Server, lbapi: ApiClient,
                                                  subnet: dict):
    admin = lb_server.octavia(uuid.uuid4().hex, roles=("admin",))
    name = f"az-{uuid.uuid4().hex[:8]}"
    profile = make(admin, ZONE_PROFILES, "availability_zone_profile", name="p",
                   provider_name="noop", availability_zone_data='{"anything": 1}')
    zone = make(admin, ZONES, "availability_zone", name=name, description="rack 1",
                availability_zone_profile_id=profile["id"])
    assert zone == {"name": name, "description": "rack 1", "enabled": True,
                    "availability_zone_profile_id": profile["id"]}
    listed = admin.get(ZONE_PROFILES).json()
    assert profile["id"] in [p["id"] for p in listed["availability_zone_profiles"]]
    assert listed["availability_zone_profile_links"] == []
    assert name in [z["name"] for z in show(lbapi, ZONES, "availability_zones")]
    # a zone's name is its key: set once
    fault(admin.put(f"{ZONES}/{name}", json={"availability_zone": {"name": "other"}}), 400)
    lb = make_lb(lbapi, subnet, availability_zone=name)
    assert lb["availability_zone"] == name
    fault(lbapi.post(LBS, json={"loadbalancer": {
        "vip_subnet_id": subnet["id"], "availability_zone": "nowhere"}}), 400,
        "Validation failure: Invalid availability zone.")
    fault(admin.delete(f"{ZONES}/{name}"), 409)
    # the haproxy provider takes only the agents' zone
    fault(admin.post(ZONE_PROFILES, json={"availability_zone_profile": {
        "name": "x", "provider_name": "haproxy",
        "availability_zone_data": '{"compute_zone": "a"}'}}), 501)
    assert lbapi.delete(f"{LBS}/{lb['id']}").status_code == 204
    assert admin.delete(f"{ZONES}/{name}").status_code == 204
    fault(admin.get(f"{ZONES}/{name}"), 404, f"Availability Zone {name} not found.")


def test_a_projects_port_as_the_vip(lbapi: ApiClient, net: ApiClient, subnet: dict):
    port = net.port(subnet["network_id"], fixed_ips=[{"subnet_id": subnet["id"]}])
    address = port["fixed_ips"][0]["ip_address"]
    lb = make_lb(lbapi, subnet, vip_port_id=port["id"])
    assert (lb["vip_port_id"], lb["vip_address"]) == (port["id"], address)
    assert lb["vip_network_id"] == subnet["network_id"]
    assert net.show("ports", port["id"])["device_id"] == f"lb-{lb['id']}"
    # used: no second load balancer on it
    message = fault(lbapi.post(LBS, json={"loadbalancer": {"vip_port_id": port["id"]}}), 400)
    assert message.startswith(f"Validation failure: Port {port['id']} is already used")
    # the address asked for must be the port's
    other = net.port(subnet["network_id"])
    fault(lbapi.post(LBS, json={"loadbalancer": {"vip_port_id": other["id"],
                                                 "vip_address": "10.20.0.250"}}), 400,
          "Validation failure: Specified VIP address not found on the specified VIP port.")
    fault(lbapi.post(LBS, json={"loadbalancer": {"vip_port_id": str(uuid.uuid4())}}), 400)
    # the project's port outlives the load balancer, unused again
    assert lbapi.delete(f"{LBS}/{lb['id']}").status_code == 204
    kept = net.show("ports", port["id"])
    assert kept["device_id"] == "" and kept["fixed_ips"] == port["fixed_ips"]
