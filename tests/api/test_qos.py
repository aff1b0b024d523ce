"""The qos extensions: /v2.0/qos/policies, their rules (under the policy and by
alias), and /v2.0/qos/rule-types, with Neutron's checks, errors and policy
(a project's managers change its policies, readers see theirs and the shared)."""

from __future__ import annotations

import uuid

import pytest

from tests.api.agent_reports import Reporter, unique_host
from tests.conftest import BACKENDS
from tests.harness import ApiClient, Server, create_database, expect_error, start_server

POLICIES = "/v2.0/qos/policies"
NOWHERE = "7d5c2f59-0c3f-4b07-9d1e-6a2f1f0c1a11"


@pytest.fixture(scope="module", params=BACKENDS)
def qos_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"qos-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=(
        "service_plugins = router,qos\n"
        "[ml2]\nmechanism_drivers = openvswitch,linuxbridge\n"
        "extension_drivers = port_security,qos\n"))
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def admin(qos_server: Server, project: str) -> ApiClient:
    return qos_server.client(project, roles=("admin", "member"))


@pytest.fixture
def manager(qos_server: Server, project: str) -> ApiClient:
    return qos_server.client(project, roles=("manager", "member", "reader"))


@pytest.fixture
def user(qos_server: Server, project: str) -> ApiClient:
    return qos_server.client(project, roles=("member", "reader"))


@pytest.fixture
def other(qos_server: Server, other_project: str) -> ApiClient:
    return qos_server.client(other_project, roles=("member", "reader"))


def policy(client: ApiClient, **attrs) -> dict:
    attrs.setdefault("name", f"qos-{uuid.uuid4().hex[:10]}")
    resp = client.post(POLICIES, json={"policy": attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()["policy"]


def rules(policy_id: str, kind: str) -> str:
    return f"{POLICIES}/{policy_id}/{kind}_rules"


def add_rule(client: ApiClient, policy_id: str, kind: str, **attrs) -> dict:
    resp = client.post(rules(policy_id, kind), json={f"{kind}_rule": attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()[f"{kind}_rule"]


def test_the_extensions_are_listed(user):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert {"qos", "qos-bw-limit-direction", "qos-bw-minimum-ingress", "qos-pps",
            "qos-pps-minimum", "qos-rules-alias", "qos-pps-minimum-rule-alias",
            "qos-rule-type-details", "qos-rule-type-filter",
            "qos-port-network-policy", "qos-default", "qos-fip",
            "qos-gateway-ip"} <= aliases


def test_a_policy_round_trip(admin, project):
    made = policy(admin, description="gold")
    assert made == {"id": made["id"], "name": made["name"], "description": "gold",
                    "shared": False, "is_default": False, "rules": [], "tags": [],
                    "project_id": project,
                    "tenant_id": project, "created_at": made["created_at"],
                    "updated_at": made["updated_at"], "revision_number": 0}
    assert admin.get(f"{POLICIES}/{made['id']}").json()["policy"] == made
    listed = admin.get(POLICIES, params={"name": made["name"]}).json()["policies"]
    assert listed == [made]

    resp = admin.put(f"{POLICIES}/{made['id']}", json={"policy": {"name": "renamed",
                                                                  "shared": "true"}})
    assert resp.status_code == 200, resp.text
    changed = resp.json()["policy"]
    assert changed["name"] == "renamed" and changed["shared"] is True
    assert changed["revision_number"] == 1

    assert admin.delete(f"{POLICIES}/{made['id']}").status_code == 204
    expect_error(admin.get(f"{POLICIES}/{made['id']}"), 404, "QosPolicyNotFound",
                 f"QoS policy {made['id']} could not be found.")
    expect_error(admin.delete(f"{POLICIES}/{made['id']}"), 404, "QosPolicyNotFound")


def test_every_rule_kind_round_trip(admin):
    made = policy(admin)
    bw = add_rule(admin, made["id"], "bandwidth_limit", max_kbps=1000)
    assert bw == {"id": bw["id"], "max_kbps": 1000, "max_burst_kbps": 0, "direction": "egress"}
    dscp = add_rule(admin, made["id"], "dscp_marking", dscp_mark="16")
    assert dscp == {"id": dscp["id"], "dscp_mark": 16}
    minimum = add_rule(admin, made["id"], "minimum_bandwidth", min_kbps=100,
                       direction="ingress")
    assert minimum["direction"] == "ingress"
    pps = add_rule(admin, made["id"], "packet_rate_limit", max_kpps=10, max_burst_kpps=2,
                   direction="ingress")
    min_pps = add_rule(admin, made["id"], "minimum_packet_rate", min_kpps=5, direction="any")
    assert min_pps["direction"] == "any"

    shown = admin.get(f"{POLICIES}/{made['id']}").json()["policy"]
    assert shown["revision_number"] == 5
    by_type = {r["type"]: r for r in shown["rules"]}
    assert by_type["bandwidth_limit"] == {**bw, "type": "bandwidth_limit",
                                          "qos_policy_id": made["id"]}
    assert set(by_type) == {"bandwidth_limit", "dscp_marking", "minimum_bandwidth",
                            "packet_rate_limit", "minimum_packet_rate"}
    assert by_type["packet_rate_limit"]["id"] == pps["id"]

    url = f"{rules(made['id'], 'bandwidth_limit')}/{bw['id']}"
    assert admin.get(url).json()["bandwidth_limit_rule"] == bw
    assert admin.get(rules(made["id"], "bandwidth_limit")).json() == {
        "bandwidth_limit_rules": [bw]}
    resp = admin.put(url, json={"bandwidth_limit_rule": {"max_kbps": 2000,
                                                         "max_burst_kbps": 1600}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["bandwidth_limit_rule"]["max_burst_kbps"] == 1600
    assert admin.delete(url).status_code == 204
    expect_error(admin.get(url), 404, "QosRuleNotFound",
                 f"QoS rule {bw['id']} for policy {made['id']} could not be found.")
    # the policy's rules go with it
    assert admin.delete(f"{POLICIES}/{made['id']}").status_code == 204
    expect_error(admin.get(f"/v2.0/qos/alias_dscp_marking_rules/{dscp['id']}"), 404,
                 "QosRuleNotFound")


def test_rules_by_alias(admin, project):
    made = policy(admin)
    bw = add_rule(admin, made["id"], "bandwidth_limit", max_kbps=1000)
    url = f"/v2.0/qos/alias_bandwidth_limit_rules/{bw['id']}"
    assert admin.get(url).json()["alias_bandwidth_limit_rule"] == {**bw, "tenant_id": project}
    resp = admin.put(url, json={"alias_bandwidth_limit_rule": {"direction": "ingress"}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["alias_bandwidth_limit_rule"]["direction"] == "ingress"
    expect_error(admin.post("/v2.0/qos/alias_bandwidth_limit_rules",
                            json={"alias_bandwidth_limit_rule": {"max_kbps": 1}}), 405,
                 "HTTPMethodNotAllowed")
    # a rule of another kind is not found under this kind's alias
    expect_error(admin.get(f"/v2.0/qos/alias_dscp_marking_rules/{bw['id']}"), 404,
                 "QosRuleNotFound")
    min_pps = add_rule(admin, made["id"], "minimum_packet_rate", min_kpps=5)
    pps_url = f"/v2.0/qos/alias_minimum_packet_rate_rules/{min_pps['id']}"
    assert admin.delete(pps_url).status_code == 204
    assert admin.delete(url).status_code == 204
    assert admin.get(f"{POLICIES}/{made['id']}").json()["policy"]["rules"] == []


@pytest.mark.parametrize(("kind", "body", "message"), [
    ("bandwidth_limit", {"max_kbps": 10, "direction": "sideways"}, "sideways"),
    ("bandwidth_limit", {"max_kbps": -1}, "too small"),
    ("bandwidth_limit", {"max_kbps": 2 ** 31}, "too large"),
    ("bandwidth_limit", {"max_kbps": "ten"}, None),
    ("bandwidth_limit", {"max_burst_kbps": 10}, "max_kbps"),
    ("dscp_marking", {"dscp_mark": 1}, "1 is not in"),
    ("minimum_bandwidth", {"min_kbps": 10, "direction": "any"}, "any is not in"),
    ("packet_rate_limit", {"max_kpps": 10, "direction": "any"}, None),
    ("minimum_packet_rate", {"min_kpps": 10, "direction": "up"}, None),
    ("bandwidth_limit", {"max_kbps": 10, "qos_policy_id": NOWHERE}, None),
])
def test_invalid_rules_are_400s(admin, kind, body, message):
    made = policy(admin)
    resp = admin.post(rules(made["id"], kind), json={f"{kind}_rule": body})
    assert resp.status_code == 400, resp.text
    if message:
        assert message in resp.json()["NeutronError"]["message"]


def test_conflicting_rules(admin):
    made = policy(admin)
    bw = add_rule(admin, made["id"], "bandwidth_limit", max_kbps=1000)
    error = expect_error(admin.post(rules(made["id"], "bandwidth_limit"), json={
        "bandwidth_limit_rule": {"max_kbps": 10}}), 409, "QoSRulesConflict")
    assert bw["id"] in error["message"]
    add_rule(admin, made["id"], "bandwidth_limit", max_kbps=10, direction="ingress")
    # a minimum above the limit of its direction, a limit below its minimum
    expect_error(admin.post(rules(made["id"], "minimum_bandwidth"), json={
        "minimum_bandwidth_rule": {"min_kbps": 2000}}), 409, "QoSRuleParameterConflict")
    add_rule(admin, made["id"], "minimum_bandwidth", min_kbps=500)
    expect_error(admin.put(f"{rules(made['id'], 'bandwidth_limit')}/{bw['id']}", json={
        "bandwidth_limit_rule": {"max_kbps": 100}}), 409, "QoSRuleParameterConflict")
    add_rule(admin, made["id"], "dscp_marking", dscp_mark=0)
    expect_error(admin.post(rules(made["id"], "dscp_marking"), json={
        "dscp_marking_rule": {"dscp_mark": 8}}), 409, "QoSRulesConflict")
    # minimum packet rates: 'any' does not mix with a direction
    add_rule(admin, made["id"], "minimum_packet_rate", min_kpps=1, direction="egress")
    expect_error(admin.post(rules(made["id"], "minimum_packet_rate"), json={
        "minimum_packet_rate_rule": {"min_kpps": 1, "direction": "any"}}), 409,
        "QoSRuleParameterConflict")


def test_rules_of_an_unknown_policy(admin):
    expect_error(admin.post(rules(NOWHERE, "bandwidth_limit"), json={
        "bandwidth_limit_rule": {"max_kbps": 1}}), 404, "QosPolicyNotFound")
    expect_error(admin.get(f"{rules(NOWHERE, 'dscp_marking')}/{NOWHERE}"), 404,
                 "QosPolicyNotFound")
    made = policy(admin)
    expect_error(admin.get(f"{rules(made['id'], 'dscp_marking')}/{NOWHERE}"), 404,
                 "QosRuleNotFound")
    expect_error(admin.delete(f"/v2.0/qos/alias_minimum_bandwidth_rules/{NOWHERE}"), 404,
                 "QosRuleNotFound")


def test_who_sees_and_changes_policies(admin, manager, user, other):
    own = policy(admin)
    shared = policy(admin, shared=True)
    # a member is no manager: the policies are an admin's or a manager's to make
    expect_error(user.post(POLICIES, json={"policy": {"name": "x"}}), 403,
                 "PolicyNotAuthorized")
    mine = policy(manager)
    add_rule(manager, mine["id"], "bandwidth_limit", max_kbps=1)
    expect_error(user.post(rules(mine["id"], "dscp_marking"), json={
        "dscp_marking_rule": {"dscp_mark": 8}}), 403, "PolicyNotAuthorized")
    assert user.get(f"{POLICIES}/{own['id']}").status_code == 200
    assert len(user.get(rules(mine["id"], "bandwidth_limit")).json()[
        "bandwidth_limit_rules"]) == 1
    # another project sees the shared one only, and changes none
    seen = {p["id"] for p in other.get(POLICIES).json()["policies"]}
    assert shared["id"] in seen and own["id"] not in seen and mine["id"] not in seen
    expect_error(other.get(f"{POLICIES}/{own['id']}"), 404, "QosPolicyNotFound")
    assert other.put(f"{POLICIES}/{shared['id']}", json={
        "policy": {"name": "mine"}}).status_code in (403, 404)
    assert other.delete(f"{POLICIES}/{shared['id']}").status_code in (403, 404)


def test_tags_on_a_policy(admin):
    made = policy(admin)
    resp = admin.put(f"{POLICIES}/{made['id']}/tags/gold")
    assert resp.status_code == 201, resp.text
    assert admin.get(f"{POLICIES}/{made['id']}").json()["policy"]["tags"] == ["gold"]
    listed = admin.get(POLICIES, params={"tags": "gold"}).json()["policies"]
    assert [p["id"] for p in listed] == [made["id"]]


def test_rule_types(admin, user):
    # both drivers loaded: what both support; 'all_supported': what either does
    common = {t["type"] for t in user.get("/v2.0/qos/rule-types").json()["rule_types"]}
    assert common == {"bandwidth_limit", "dscp_marking"}
    either = {t["type"] for t in user.get("/v2.0/qos/rule-types", params={
        "all_supported": "true"}).json()["rule_types"]}
    assert either == {"bandwidth_limit", "dscp_marking", "minimum_bandwidth",
                      "packet_rate_limit", "minimum_packet_rate"}
    every = {t["type"] for t in user.get("/v2.0/qos/rule-types", params={
        "all_rules": "true"}).json()["rule_types"]}
    assert every == either
    detail = admin.get("/v2.0/qos/rule-types/bandwidth_limit").json()["rule_type"]
    assert detail["type"] == "bandwidth_limit"
    assert sorted(d["name"] for d in detail["drivers"]) == ["linuxbridge", "openvswitch"]
    params = {p["parameter_name"]: p for p in detail["drivers"][0]["supported_parameters"]}
    assert params["max_kbps"]["parameter_type"] == "range"
    assert params["direction"]["parameter_values"] == ["ingress", "egress"]
    only_ovs = admin.get("/v2.0/qos/rule-types/minimum_bandwidth").json()["rule_type"]
    assert [d["name"] for d in only_ovs["drivers"]] == ["openvswitch"]
    expect_error(admin.get("/v2.0/qos/rule-types/warp_speed"), 404, "QosRuleTypeNotFound")
    assert user.get("/v2.0/qos/rule-types/bandwidth_limit").status_code == 403


# --- networks and ports -------------------------------------------------------------------

def test_networks_and_ports_take_a_policy(admin, user, other):
    net_policy, port_policy = policy(admin), policy(admin, shared=True)
    net = user.create("networks", name="q", qos_policy_id=net_policy["id"])
    assert net["qos_policy_id"] == net_policy["id"]
    assert user.show("networks", net["id"])["qos_policy_id"] == net_policy["id"]
    port = user.create("ports", network_id=net["id"])
    assert port["qos_policy_id"] is None
    assert port["qos_network_policy_id"] == net_policy["id"]

    resp = user.put(f"/v2.0/ports/{port['id']}", json={"port": {
        "qos_policy_id": port_policy["id"]}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["port"]["qos_policy_id"] == port_policy["id"]
    shown = user.show("ports", port["id"])
    assert (shown["qos_policy_id"], shown["qos_network_policy_id"]) == (
        port_policy["id"], net_policy["id"])
    listed = user.get("/v2.0/ports", params={"qos_policy_id": port_policy["id"]}).json()
    assert [p["id"] for p in listed["ports"]] == [port["id"]]
    listed = user.get("/v2.0/networks", params={"qos_policy_id": net_policy["id"]}).json()
    assert [n["id"] for n in listed["networks"]] == [net["id"]]

    # a policy in use is not deleted
    error = expect_error(admin.delete(f"{POLICIES}/{net_policy['id']}"), 409, "QosPolicyInUse")
    assert net["id"] in error["message"]
    expect_error(admin.delete(f"{POLICIES}/{port_policy['id']}"), 409, "QosPolicyInUse")

    # unset: the policies are free again
    resp = user.put(f"/v2.0/networks/{net['id']}", json={"network": {"qos_policy_id": None}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["network"]["qos_policy_id"] is None
    resp = user.put(f"/v2.0/ports/{port['id']}", json={"port": {"qos_policy_id": None}})
    assert resp.status_code == 200, resp.text
    assert user.show("ports", port["id"])["qos_network_policy_id"] is None
    assert admin.delete(f"{POLICIES}/{net_policy['id']}").status_code == 204

    # the project's own policy, not shared, is taken by an update too
    own = policy(admin, project_id=net["project_id"])
    for kind, item in (("networks", net), ("ports", port)):
        resp = user.put(f"/v2.0/{kind}/{item['id']}", json={
            kind[:-1]: {"qos_policy_id": own["id"]}})
        assert resp.status_code == 200, resp.text
        resp = user.put(f"/v2.0/{kind}/{item['id']}", json={kind[:-1]: {"qos_policy_id": None}})
        assert resp.status_code == 200, resp.text

    # another project's policy that is not shared is not found; a shared one is used
    expect_error(other.post("/v2.0/networks", json={"network": {
        "qos_policy_id": policy(admin)["id"]}}), 404, "QosPolicyNotFound")
    expect_error(user.post("/v2.0/networks", json={"network": {
        "qos_policy_id": NOWHERE}}), 404, "QosPolicyNotFound")
    theirs = other.create("networks", qos_policy_id=port_policy["id"])
    assert theirs["qos_policy_id"] == port_policy["id"]
    assert user.post("/v2.0/networks", json={"network": {
        "qos_policy_id": "not-a-uuid"}}).status_code == 400


def test_a_projects_default_policy(admin, manager, user, project):
    first = policy(manager, is_default=True)
    assert first["is_default"] is True
    expect_error(manager.post(POLICIES, json={"policy": {"name": "d", "is_default": True}}),
                 409, "QoSPolicyDefaultAlreadyExists",
                 f"A default QoS policy exists for project {project}.")
    second = policy(manager)
    expect_error(manager.put(f"{POLICIES}/{second['id']}", json={"policy": {
        "is_default": True}}), 409, "QoSPolicyDefaultAlreadyExists")
    listed = manager.get(POLICIES, params={"is_default": "true"}).json()["policies"]
    assert [p["id"] for p in listed] == [first["id"]]
    # the project's new networks take it, unless they name one; its ports do not
    net = user.create("networks", name="d")
    assert net["qos_policy_id"] == first["id"]
    named = user.create("networks", name="d", qos_policy_id=second["id"])
    assert named["qos_policy_id"] == second["id"]
    port = user.create("ports", network_id=net["id"])
    assert (port["qos_policy_id"], port["qos_network_policy_id"]) == (None, first["id"])
    # no longer the default: another may be
    resp = manager.put(f"{POLICIES}/{first['id']}", json={"policy": {"is_default": False}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["policy"]["is_default"] is False
    resp = manager.put(f"{POLICIES}/{second['id']}", json={"policy": {"is_default": True}})
    assert resp.json()["policy"]["is_default"] is True
    assert user.create("networks", name="d")["qos_policy_id"] == second["id"]


def test_sharing_a_policy_with_one_project(admin, other, other_project):
    made = policy(admin)
    expect_error(other.get(f"{POLICIES}/{made['id']}"), 404, "QosPolicyNotFound")
    resp = admin.post("/v2.0/rbac-policies", json={"rbac_policy": {
        "object_type": "qos_policy", "object_id": made["id"], "action": "access_as_shared",
        "target_tenant": other_project}})
    assert resp.status_code == 201, resp.text
    entry = resp.json()["rbac_policy"]
    seen = other.get(f"{POLICIES}/{made['id']}").json()["policy"]
    assert seen["shared"] is True  # shared with the caller, as Neutron shows it
    assert admin.get(f"{POLICIES}/{made['id']}").json()["policy"]["shared"] is False
    net = other.create("networks", qos_policy_id=made["id"])
    # the project uses it: the entry stays, and the owner does not delete the policy
    expect_error(admin.delete(f"/v2.0/rbac-policies/{entry['id']}"), 409, "RbacPolicyInUse")
    expect_error(admin.delete(f"{POLICIES}/{made['id']}"), 409, "QosPolicyInUse")
    assert other.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    assert admin.delete(f"/v2.0/rbac-policies/{entry['id']}").status_code == 204
    expect_error(other.get(f"{POLICIES}/{made['id']}"), 404, "QosPolicyNotFound")
    expect_error(other.post("/v2.0/networks", json={"network": {
        "qos_policy_id": made["id"]}}), 404, "QosPolicyNotFound")

    # shared with every project: '*' entry, and 'shared' unset only when unused
    everyone = policy(admin, shared=True)
    entries = admin.get("/v2.0/rbac-policies", params={"object_id": everyone["id"]}).json()
    assert [e["target_tenant"] for e in entries["rbac_policies"]] == ["*"]
    used = other.create("networks", qos_policy_id=everyone["id"])
    expect_error(admin.put(f"{POLICIES}/{everyone['id']}", json={"policy": {
        "shared": False}}), 409, "RbacPolicyInUse")
    assert other.delete(f"/v2.0/networks/{used['id']}").status_code == 204
    resp = admin.put(f"{POLICIES}/{everyone['id']}", json={"policy": {"shared": False}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["policy"]["shared"] is False
    assert admin.delete(f"{POLICIES}/{everyone['id']}").status_code == 204


def test_floating_ips_take_a_policy(admin, user, other):
    ext = admin.create("networks", name="qos-ext", **{"router:external": True})
    admin.create("subnets", network_id=ext["id"], cidr="172.31.9.0/24", ip_version=4)
    made = policy(admin)
    fip = user.create("floatingips", floating_network_id=ext["id"], qos_policy_id=made["id"])
    assert fip["qos_policy_id"] == made["id"]
    assert user.show("floatingips", fip["id"])["qos_policy_id"] == made["id"]
    expect_error(admin.delete(f"{POLICIES}/{made['id']}"), 409, "QosPolicyInUse")
    resp = user.put(f"/v2.0/floatingips/{fip['id']}", json={"floatingip": {
        "qos_policy_id": None}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["floatingip"]["qos_policy_id"] is None
    expect_error(other.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"], "qos_policy_id": made["id"]}}), 404,
        "QosPolicyNotFound")
    plain = user.create("floatingips", floating_network_id=ext["id"])
    assert plain["qos_policy_id"] is None
    assert admin.delete(f"{POLICIES}/{made['id']}").status_code == 204


def test_router_gateways_take_a_policy(admin, user, other):
    ext = admin.create("networks", name="qos-gw", **{"router:external": True})
    admin.create("subnets", network_id=ext["id"], cidr="172.31.10.0/24", ip_version=4)
    made = policy(admin, shared=True)
    router = user.create("routers", external_gateway_info={
        "network_id": ext["id"], "qos_policy_id": made["id"]})
    assert router["external_gateway_info"]["qos_policy_id"] == made["id"]
    assert user.show("routers", router["id"])["external_gateway_info"]["qos_policy_id"] \
        == made["id"]
    expect_error(admin.delete(f"{POLICIES}/{made['id']}"), 409, "QosPolicyInUse")
    # an update of the gateway without the key keeps the policy; None drops it
    path = f"/v2.0/routers/{router['id']}"
    resp = user.put(path, json={"router": {"external_gateway_info": {"network_id": ext["id"]}}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["router"]["external_gateway_info"]["qos_policy_id"] == made["id"]
    resp = user.put(path, json={"router": {"external_gateway_info": {
        "network_id": ext["id"], "qos_policy_id": None}}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["router"]["external_gateway_info"]["qos_policy_id"] is None
    # a policy that is not the router's project's nor shared with it is not found
    private = policy(admin, project_id=NOWHERE)
    expect_error(user.put(path, json={"router": {"external_gateway_info": {
        "network_id": ext["id"], "qos_policy_id": private["id"]}}}), 404, "QosPolicyNotFound")
    expect_error(user.put(path, json={"router": {"external_gateway_info": {
        "network_id": ext["id"], "qos_policy_id": "nope"}}}), 400, "HTTPBadRequest")
    # the gateway cleared, the binding goes with it: the policy is free again
    user.put(path, json={"router": {"external_gateway_info": {
        "network_id": ext["id"], "qos_policy_id": made["id"]}}})
    resp = user.put(path, json={"router": {"external_gateway_info": {}}})
    assert resp.json()["router"]["external_gateway_info"] is None
    assert admin.delete(f"{POLICIES}/{made['id']}").status_code == 204
    assert user.delete(path).status_code == 204


def test_a_bound_ports_driver_must_support_the_rules(qos_server, admin, user):
    """Linux bridge enforces no packet rate limit: a policy with one is refused
    on a port it bound, on the network of such a port, and as a new rule of a
    policy such a port follows; an unbound port may take it (Open vSwitch
    may bind it)."""
    host = unique_host()
    Reporter(qos_server.db_url).agent(host, "Linux bridge agent", configurations={
        "interface_mappings": {"physnet1": "eth1"}})
    net = admin.create("networks", **{"provider:network_type": "flat",
                                      "provider:physical_network": "physnet1"})
    admin.create("subnets", network_id=net["id"], cidr="10.77.0.0/24", ip_version=4)
    port = admin.create("ports", network_id=net["id"], **{"binding:host_id": host})
    assert port["binding:vif_type"] == "bridge", port
    pps = policy(admin, shared=True)
    add_rule(admin, pps["id"], "packet_rate_limit", max_kpps=10)
    error = expect_error(admin.put(f"/v2.0/ports/{port['id']}", json={"port": {
        "qos_policy_id": pps["id"]}}), 409, "QosRuleNotSupported")
    assert error["message"] == (f"Rule packet_rate_limit is not supported by port "
                                f"{port['id']}")
    expect_error(admin.put(f"/v2.0/networks/{net['id']}", json={"network": {
        "qos_policy_id": pps["id"]}}), 409, "QosRuleNotSupported")
    unbound = admin.create("ports", network_id=net["id"], qos_policy_id=pps["id"])
    assert unbound["qos_policy_id"] == pps["id"]

    # a policy the bound port follows (through its network) takes no such rule
    limits = policy(admin, shared=True)
    add_rule(admin, limits["id"], "bandwidth_limit", max_kbps=1000)
    resp = admin.put(f"/v2.0/networks/{net['id']}", json={"network": {
        "qos_policy_id": limits["id"]}})
    assert resp.status_code == 200, resp.text
    expect_error(admin.post(rules(limits["id"], "packet_rate_limit"), json={
        "packet_rate_limit_rule": {"max_kpps": 5}}), 409, "QosRuleNotSupported")
    add_rule(admin, limits["id"], "dscp_marking", dscp_mark=10)


def test_a_ports_resource_request(admin, user):
    """The minimums of a port's policy, as Nova reads them (admins only)."""
    minimums = policy(admin, shared=True)
    add_rule(admin, minimums["id"], "minimum_bandwidth", min_kbps=1000, direction="egress")
    add_rule(admin, minimums["id"], "minimum_bandwidth", min_kbps=2000, direction="ingress")
    add_rule(admin, minimums["id"], "minimum_packet_rate", min_kpps=100, direction="any")
    flat = admin.create("networks", **{"provider:network_type": "flat",
                                       "provider:physical_network": "phys-min"})
    port = admin.create("ports", network_id=flat["id"], qos_policy_id=minimums["id"])
    request = admin.show("ports", port["id"])["resource_request"]
    bw, pps = (str(uuid.uuid5(uuid.UUID(port["id"]), kind))
               for kind in ("minimum_bandwidth", "minimum_packet_rate"))
    assert request == {
        "request_groups": [
            {"id": bw, "required": ["CUSTOM_PHYSNET_PHYS_MIN", "CUSTOM_VNIC_TYPE_NORMAL"],
             "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000,
                           "NET_BW_IGR_KILOBIT_PER_SEC": 2000}},
            {"id": pps, "required": ["CUSTOM_VNIC_TYPE_NORMAL"],
             "resources": {"NET_PACKET_RATE_KILOPACKET_PER_SEC": 100}}],
        "same_subtree": [bw, pps]}
    assert port["resource_request"] == request  # the create's answer too
    # through the network's policy, on a tunnel: the tunnels' trait
    tunnelled = admin.create("networks", qos_policy_id=minimums["id"])
    follower = admin.create("ports", network_id=tunnelled["id"])
    groups = follower["resource_request"]["request_groups"]
    assert groups[0]["required"] == ["CUSTOM_NETWORK_TUNNEL_PROVIDER", "CUSTOM_VNIC_TYPE_NORMAL"]
    dhcp = admin.create("ports", network_id=tunnelled["id"], device_owner="network:dhcp")
    assert dhcp["resource_request"] is None  # the network's services follow no policy
    # no minimum, no request; and a member does not see it
    limits = policy(admin, shared=True)
    add_rule(admin, limits["id"], "bandwidth_limit", max_kbps=1000)
    resp = admin.put(f"/v2.0/ports/{port['id']}", json={"port": {"qos_policy_id": limits["id"]}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["port"]["resource_request"] is None
    mine = user.create("ports", network_id=user.create("networks")["id"])
    assert "resource_request" not in mine
    assert "resource_request" not in user.show("ports", mine["id"])
