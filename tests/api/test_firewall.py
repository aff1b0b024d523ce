"""FWaaS v2 over HTTP: rules, policies, groups, their checks and statuses."""

from __future__ import annotations

import concurrent.futures
import uuid

import pytest

from tests.harness import ApiClient, expect_error

FW = "/v2.0/fwaas"


def make(client: ApiClient, kind: str, **attrs) -> dict:
    name = kind[:-1] if kind != "firewall_policies" else "firewall_policy"
    resp = client.post(f"{FW}/{kind}", json={name: attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()[name]


def rule(client: ApiClient, **attrs) -> dict:
    return make(client, "firewall_rules", **attrs)


def policy(client: ApiClient, **attrs) -> dict:
    return make(client, "firewall_policies", **attrs)


def group(client: ApiClient, **attrs) -> dict:
    return make(client, "firewall_groups", **attrs)


def router_port(client: ApiClient, cidr: str = "10.9.0.0/24") -> str:
    """A router interface port of the client's project."""
    net = client.network()
    subnet = client.subnet(net["id"], cidr)
    router = client.create("routers", name="r")
    resp = client.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                      json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    return resp.json()["port_id"]


def test_rule_create_show_update_delete(user, project):
    made = rule(user, name="web", protocol="TCP", destination_port="80:90",
                source_ip_address="10.0.0.0/24", action="ALLOW")
    assert made["protocol"] == "tcp" and made["action"] == "allow"
    assert (made["destination_port"], made["source_port"]) == ("80:90", None)
    assert made["ip_version"] == 4 and made["enabled"] is True and made["shared"] is False
    assert made["project_id"] == made["tenant_id"] == project
    assert made["firewall_policy_id"] is None
    shown = user.get(f"{FW}/firewall_rules/{made['id']}").json()["firewall_rule"]
    assert shown == made
    resp = user.put(f"{FW}/firewall_rules/{made['id']}",
                    json={"firewall_rule": {"destination_port": 443, "enabled": False}})
    assert resp.status_code == 200, resp.text
    updated = resp.json()["firewall_rule"]
    assert updated["destination_port"] == "443" and updated["enabled"] is False
    assert updated["revision_number"] == made["revision_number"] + 1
    assert user.delete(f"{FW}/firewall_rules/{made['id']}").status_code == 204
    expect_error(user.get(f"{FW}/firewall_rules/{made['id']}"), 404, "FirewallRuleNotFound",
                 f"Firewall rule {made['id']} could not be found.")


@pytest.mark.parametrize("body, status, kind", [
    ({"protocol": "icmp", "destination_port": "80"}, 400, "FirewallRuleInvalidICMPParameter"),
    ({"destination_port": "80"}, 400, "FirewallRuleWithPortWithoutProtocolInvalid"),
    ({"protocol": "tcp", "destination_port": "90:80"}, 400, "FirewallRuleInvalidPortValue"),
    ({"protocol": "tcp", "destination_port": "70000"}, 400, "HTTPBadRequest"),
    ({"protocol": "tcp", "destination_port": "a:b"}, 400, "HTTPBadRequest"),
    ({"protocol": "bogus"}, 400, "InvalidInput"),
    ({"protocol": 256}, 400, "InvalidInput"),
    ({"ip_version": 6, "source_ip_address": "10.0.0.1"}, 400, "FirewallIpAddressConflict"),
    ({"destination_ip_address": "2001:db8::/64"}, 400, "FirewallIpAddressConflict"),
    ({"source_ip_address": "10.0.0.300"}, 400, "HTTPBadRequest"),
    ({"ip_version": 5}, 400, "HTTPBadRequest"),
    ({"action": "maybe"}, 400, "HTTPBadRequest"),
    ({"enabled": "perhaps"}, 400, "InvalidInput"),
    ({"position": 1}, 400, "HTTPBadRequest"),
])
def test_bad_rules_are_refused(user, body, status, kind):
    expect_error(user.post(f"{FW}/firewall_rules", json={"firewall_rule": body}), status, kind)


def test_protocol_numbers_and_an_update_checked_whole(user):
    assert rule(user, protocol=17)["protocol"] == "17"
    # as in neutron-fwaas, ports go with a protocol named tcp or udp only
    expect_error(user.post(f"{FW}/firewall_rules", json={"firewall_rule": {
        "protocol": 17, "destination_port": "53"}}), 400, "FirewallRuleInvalidICMPParameter")
    tcp = rule(user, protocol="tcp", destination_port="22")
    expect_error(user.put(f"{FW}/firewall_rules/{tcp['id']}",
                          json={"firewall_rule": {"protocol": "icmp"}}),
                 400, "FirewallRuleInvalidICMPParameter")
    assert user.get(f"{FW}/firewall_rules/{tcp['id']}").json()["firewall_rule"][
        "protocol"] == "tcp"


def test_policy_orders_rules_and_insert_remove(user):
    a, b, c = (rule(user, name=n, protocol="tcp", destination_port=str(p))
               for n, p in (("a", 1), ("b", 2), ("c", 3)))
    made = policy(user, name="p", firewall_rules=[a["id"], b["id"]])
    assert made["firewall_rules"] == [a["id"], b["id"]] and made["audited"] is False
    url = f"{FW}/firewall_policies/{made['id']}"
    resp = user.put(f"{url}/insert_rule", json={"firewall_rule_id": c["id"],
                                                "insert_before": b["id"]})
    assert resp.status_code == 200, resp.text
    assert resp.json()["firewall_rules"] == [a["id"], c["id"], b["id"]]
    assert user.put(f"{url}/remove_rule", json={"firewall_rule_id": a["id"]}).json()[
        "firewall_rules"] == [c["id"], b["id"]]
    assert user.put(f"{url}/insert_rule", json={"firewall_rule_id": a["id"],
                                                "insert_after": b["id"]}).json()[
        "firewall_rules"] == [c["id"], b["id"], a["id"]]
    # no reference: at the top
    d = rule(user, name="d")
    assert user.put(f"{url}/insert_rule", json={"firewall_rule_id": d["id"]}).json()[
        "firewall_rules"][0] == d["id"]
    # the rules know their policies, and one in use cannot go
    assert user.get(f"{FW}/firewall_rules/{a['id']}").json()["firewall_rule"][
        "firewall_policy_id"] == [made["id"]]
    expect_error(user.delete(f"{FW}/firewall_rules/{a['id']}"), 409, "FirewallRuleInUse")
    listed = user.get(f"{FW}/firewall_policies", params={"firewall_rules": a["id"]}).json()
    assert [p["id"] for p in listed["firewall_policies"]] == [made["id"]]
    # errors of the member actions
    expect_error(user.put(f"{url}/insert_rule", json={"firewall_rule_id": a["id"]}),
                 409, "FirewallRuleAlreadyAssociated")
    expect_error(user.put(f"{url}/insert_rule", json={}), 400, "FirewallRuleInfoMissing")
    expect_error(user.put(f"{url}/insert_rule", json={"firewall_rule_id": "nope"}),
                 404, "FirewallRuleNotFound")
    e = rule(user, name="e")
    expect_error(user.put(f"{url}/insert_rule", json={"firewall_rule_id": e["id"],
                                                      "insert_before": str(uuid.uuid4())}),
                 400, "FirewallRuleNotAssociatedWithPolicy")
    expect_error(user.put(f"{url}/remove_rule", json={"firewall_rule_id": e["id"]}),
                 400, "FirewallRuleNotAssociatedWithPolicy")
    # a whole list replaced by an update; audited set, then cleared by a change
    resp = user.put(url, json={"firewall_policy": {"firewall_rules": [e["id"]],
                                                   "audited": True}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["firewall_policy"]["firewall_rules"] == [e["id"]]
    assert resp.json()["firewall_policy"]["audited"] is True
    assert user.put(f"{url}/insert_rule", json={"firewall_rule_id": a["id"]}).json()[
        "audited"] is False
    assert user.delete(url).status_code == 204
    assert user.delete(f"{FW}/firewall_rules/{a['id']}").status_code == 204


def test_policies_refuse_unknown_and_foreign_rules(user, other, admin):
    expect_error(user.post(f"{FW}/firewall_policies", json={"firewall_policy": {
        "firewall_rules": [str(uuid.uuid4())]}}), 404, "FirewallRuleNotFound")
    theirs = rule(other, name="theirs")
    expect_error(user.post(f"{FW}/firewall_policies", json={"firewall_policy": {
        "firewall_rules": [theirs["id"]]}}), 404, "FirewallRuleNotFound")
    mine = rule(user)
    expect_error(admin.post(f"{FW}/firewall_policies", json={"firewall_policy": {
        "firewall_rules": [mine["id"]], "project_id": other.project_id}}),
        409, "FirewallRuleConflict")
    expect_error(admin.post(f"{FW}/firewall_policies", json={"firewall_policy": {
        "firewall_rules": [mine["id"]], "shared": True}}), 404, "FirewallRuleSharingConflict")
    for reserved in ("default ingress", "default egress"):
        expect_error(user.post(f"{FW}/firewall_policies", json={"firewall_policy": {
            "name": reserved}}), 409, "FirewallDefaultParameterExists")


def test_sharing_is_for_admins_and_shared_rules_are_seen(user, other, admin):
    expect_error(user.post(f"{FW}/firewall_rules", json={"firewall_rule": {"shared": True}}),
                 403, "PolicyNotAuthorized")
    shared = rule(admin, name="everyone's", shared=True)
    assert other.get(f"{FW}/firewall_rules/{shared['id']}").status_code == 200
    theirs_policy = policy(other, firewall_rules=[shared["id"]])
    assert theirs_policy["firewall_rules"] == [shared["id"]]
    private = rule(user)
    expect_error(other.get(f"{FW}/firewall_rules/{private['id']}"), 404,
                 "FirewallRuleNotFound")
    # a shared policy needs shared rules
    p = policy(admin, firewall_rules=[private["id"]], project_id=user.project_id)
    expect_error(admin.put(f"{FW}/firewall_policies/{p['id']}",
                           json={"firewall_policy": {"shared": True}}),
                 409, "FirewallPolicySharingConflict")


def test_the_default_group_is_made_on_first_look(user, project):
    groups = user.get(f"{FW}/firewall_groups").json()["firewall_groups"]
    [default] = [g for g in groups if g["name"] == "default"]
    assert default["status"] == "INACTIVE" and default["ports"] == []
    ingress = user.get(f"{FW}/firewall_policies/{default['ingress_firewall_policy_id']}").json()
    assert ingress["firewall_policy"]["name"] == "default ingress"
    rules = [user.get(f"{FW}/firewall_rules/{r}").json()["firewall_rule"]
             for r in ingress["firewall_policy"]["firewall_rules"]]
    assert [(r["action"], r["ip_version"]) for r in rules] == [("deny", 4), ("deny", 6)]
    # once only, however often looked at
    again = user.get(f"{FW}/firewall_groups").json()["firewall_groups"]
    assert [g["id"] for g in again if g["name"] == "default"] == [default["id"]]
    expect_error(user.post(f"{FW}/firewall_groups", json={"firewall_group": {
        "name": "default"}}), 409, "FirewallDefaultParameterExists")
    expect_error(user.put(f"{FW}/firewall_groups/{default['id']}", json={
        "firewall_group": {"description": "mine"}}), 409,
        "FirewallDefaultObjectUpdateRestricted")
    expect_error(user.delete(f"{FW}/firewall_groups/{default['id']}"), 409,
                 "FirewallGroupCannotRemoveDefault")
    expect_error(user.put(f"{FW}/firewall_policies/{default['egress_firewall_policy_id']}",
                          json={"firewall_policy": {"name": "x"}}),
                 409, "FirewallDefaultObjectUpdateRestricted")


def test_groups_take_router_ports_once(user, other):
    port = router_port(user)
    p = policy(user, firewall_rules=[rule(user, action="allow")["id"]])
    made = group(user, name="g", ingress_firewall_policy_id=p["id"], ports=[port])
    assert made["status"] == "PENDING_CREATE" and made["ports"] == [port]
    assert made["admin_state_up"] is True
    # no agent here: it stays pending, and refuses changes meanwhile
    expect_error(user.put(f"{FW}/firewall_groups/{made['id']}",
                          json={"firewall_group": {"ports": []}}),
                 409, "FirewallGroupInPendingState")
    expect_error(user.put(f"{FW}/firewall_policies/{p['id']}/insert_rule",
                          json={"firewall_rule_id": rule(user)["id"]}),
                 409, "FirewallGroupInPendingState")
    expect_error(user.post(f"{FW}/firewall_groups", json={"firewall_group": {
        "ports": [port]}}), 409, "FirewallGroupPortInUse")
    expect_error(user.delete(f"{FW}/firewall_groups/{made['id']}"), 409, "FirewallGroupInUse")
    expect_error(user.delete(f"{FW}/firewall_policies/{p['id']}"), 409, "FirewallPolicyInUse")
    listed = user.get(f"{FW}/firewall_groups", params={"ports": port}).json()
    assert [g["id"] for g in listed["firewall_groups"]] == [made["id"]]
    # without a policy there is nothing to enforce
    idle = group(user, ports=[router_port(user, "10.8.0.0/24")])
    assert idle["status"] == "INACTIVE"
    assert user.put(f"{FW}/firewall_groups/{idle['id']}",
                    json={"firewall_group": {"ports": []}}).status_code == 200
    assert user.delete(f"{FW}/firewall_groups/{idle['id']}").status_code == 204


def test_groups_refuse_other_ports_and_policies(user, other):
    net = user.network()
    user.subnet(net["id"], "10.7.0.0/24")
    vm = user.port(net["id"], device_owner="compute:nova")
    expect_error(user.post(f"{FW}/firewall_groups", json={"firewall_group": {
        "ports": [vm["id"]]}}), 409, "FirewallGroupPortNotSupported")
    plain = user.port(net["id"])
    expect_error(user.post(f"{FW}/firewall_groups", json={"firewall_group": {
        "ports": [plain["id"]]}}), 409, "FirewallGroupPortInvalid")
    expect_error(user.post(f"{FW}/firewall_groups", json={"firewall_group": {
        "ports": [str(uuid.uuid4())]}}), 404, "PortNotFound")
    theirs = policy(other)
    expect_error(user.post(f"{FW}/firewall_groups", json={"firewall_group": {
        "egress_firewall_policy_id": theirs["id"]}}), 404, "FirewallPolicyNotFound")
    expect_error(user.post(f"{FW}/firewall_groups", json={"firewall_group": {
        "ports": "not a list"}}), 400, "HTTPBadRequest")
    # nothing half-written: no group of those names
    names = {g["name"] for g in user.get(f"{FW}/firewall_groups").json()["firewall_groups"]}
    assert names == {"default"}


def test_quotas_count_firewall_resources(admin, user, project):
    resp = admin.put(f"/v2.0/quotas/{project}", json={"quota": {"firewall_rule": 1}})
    assert resp.status_code == 200, resp.text
    rule(user)
    expect_error(user.post(f"{FW}/firewall_rules", json={"firewall_rule": {}}), 409,
                 "OverQuota")


def test_concurrent_inserts_keep_one_order(user):
    rules = [rule(user, name=f"r{n}")["id"] for n in range(12)]
    made = policy(user, firewall_rules=rules[:2])
    url = f"{FW}/firewall_policies/{made['id']}/insert_rule"

    def insert(rule_id: str) -> int:
        return user.put(url, json={"firewall_rule_id": rule_id,
                                   "insert_after": rules[0]}).status_code

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        assert list(pool.map(insert, rules[2:])) == [200] * 10
    final = user.get(f"{FW}/firewall_policies/{made['id']}").json()["firewall_policy"]
    assert final["firewall_rules"][0] == rules[0] and final["firewall_rules"][-1] == rules[1]
    assert sorted(final["firewall_rules"]) == sorted(rules)


def test_extensions_are_listed(user):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert {"fwaas_v2", "standard-attr-fwaas-v2"} <= aliases


def test_readers_read_and_only_members_write(server, project, user):
    reader = server.client(project, roles=("reader",))
    made = rule(user, name="seen")
    assert reader.get(f"{FW}/firewall_rules/{made['id']}").status_code == 200
    for kind, name in (("firewall_rules", "firewall_rule"), ("firewall_groups", "firewall_group"),
                       ("firewall_policies", "firewall_policy")):
        expect_error(reader.post(f"{FW}/{kind}", json={name: {}}), 403, "PolicyNotAuthorized")
    expect_error(reader.put(f"{FW}/firewall_rules/{made['id']}",
                            json={"firewall_rule": {"name": "x"}}), 403, "PolicyNotAuthorized")
    p = policy(user)
    expect_error(reader.put(f"{FW}/firewall_policies/{p['id']}/insert_rule",
                            json={"firewall_rule_id": made["id"]}), 403, "PolicyNotAuthorized")


def test_other_projects_see_nothing_private(user, other, admin):
    made = group(user, name="mine")
    expect_error(other.get(f"{FW}/firewall_groups/{made['id']}"), 404, "FirewallGroupNotFound")
    expect_error(other.put(f"{FW}/firewall_groups/{made['id']}",
                           json={"firewall_group": {"name": "theirs"}}),
                 404, "FirewallGroupNotFound")
    assert made["id"] not in {g["id"] for g in other.get(f"{FW}/firewall_groups").json()[
        "firewall_groups"]}
    assert admin.get(f"{FW}/firewall_groups/{made['id']}").status_code == 200
    listed = admin.get(f"{FW}/firewall_groups", params={"project_id": user.project_id}).json()
    assert made["id"] in {g["id"] for g in listed["firewall_groups"]}


def test_a_port_that_goes_leaves_its_group(user):
    net = user.network()
    subnet = user.subnet(net["id"], "10.6.0.0/24")
    router = user.create("routers", name="r")
    resp = user.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                    json={"subnet_id": subnet["id"]})
    port = resp.json()["port_id"]
    p = policy(user, firewall_rules=[rule(user, action="allow")["id"]])
    made = group(user, ingress_firewall_policy_id=p["id"], ports=[port])
    resp = user.put(f"/v2.0/routers/{router['id']}/remove_router_interface",
                    json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    left = user.get(f"{FW}/firewall_groups/{made['id']}").json()["firewall_group"]
    assert (left["ports"], left["status"]) == ([], "INACTIVE")
    assert user.delete(f"{FW}/firewall_groups/{made['id']}").status_code == 204


def test_firewall_groups_are_loggable(admin, user, project):
    types = [t["type"] for t in admin.get("/v2.0/log/loggable-resources").json()[
        "loggable_resources"]]
    assert "firewall_group" in types
    made = group(user, name="logged")

    def log(**attrs):
        return admin.post("/v2.0/log/logs", json={"log": {
            "resource_type": "firewall_group", "project_id": project, **attrs}})

    resp = log(resource_id=made["id"], event="DROP")
    assert resp.status_code == 201, resp.text
    log_id = resp.json()["log"]["id"]
    expect_error(log(resource_id=str(uuid.uuid4())), 404, "ResourceNotFound")
    expect_error(log(target_id=str(uuid.uuid4())), 404, "TargetResourceNotFound")
    port = router_port(user, "10.5.0.0/24")
    expect_error(log(resource_id=made["id"], target_id=port), 400,
                 "InvalidResourceConstraint")
    # the group's logs go with it
    assert user.delete(f"{FW}/firewall_groups/{made['id']}").status_code == 204
    expect_error(admin.get(f"/v2.0/log/logs/{log_id}"), 404, "LogResourceNotFound")
