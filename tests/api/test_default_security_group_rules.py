"""The template of new security groups' rules (security-groups-default-rules) and
rules' ``belongs_to_default_sg``, through HTTP.

The template is global: a test that changes it puts it back (each test worker
has a server of its own, and its tests run one at a time)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pytest

from tests.harness import ApiClient, expect_error

PATH = "/v2.0/default-security-group-rules"
KEYS = {"id", "description", "direction", "ethertype", "protocol", "port_range_min",
        "port_range_max", "remote_ip_prefix", "remote_group_id", "remote_address_group_id",
        "used_in_default_sg", "used_in_non_default_sg"}


def template(client: ApiClient, **params) -> list[dict]:
    resp = client.get(PATH, params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()["default_security_group_rules"]


def post(client: ApiClient, **attrs):
    return client.post(PATH, json={"default_security_group_rule": {"direction": "ingress",
                                                                   **attrs}})


@contextlib.contextmanager
def added(admin: ApiClient, **attrs) -> Iterator[dict]:
    resp = post(admin, **attrs)
    assert resp.status_code == 201, resp.text
    rule = resp.json()["default_security_group_rule"]
    try:
        yield rule
    finally:
        admin.delete(f"{PATH}/{rule['id']}")


def shape(rule: dict) -> tuple:
    return (rule["direction"], rule["ethertype"], rule["protocol"], rule["port_range_min"],
            rule["port_range_max"], rule["remote_ip_prefix"], rule["remote_group_id"])


def shapes(rules: list[dict]) -> list[tuple]:
    return sorted((shape(r) for r in rules), key=repr)


def new_group(client: ApiClient) -> dict:
    resp = client.post("/v2.0/security-groups", json={"security_group": {"name": "web"}})
    assert resp.status_code == 201, resp.text
    return resp.json()["security_group"]


def default_group(server, project: str) -> dict:
    client = server.client(project, roles=("member",))
    return next(g for g in client.get("/v2.0/security-groups").json()["security_groups"]
                if g["name"] == "default")


def test_the_template_starts_as_the_rules_groups_always_had(user):
    rules = template(user)
    assert all(set(rule) == KEYS for rule in rules)
    assert sorted((shape(r), r["used_in_default_sg"], r["used_in_non_default_sg"])
                  for r in rules) == [
        (("egress", "IPv4", None, None, None, None, None), True, True),
        (("egress", "IPv6", None, None, None, None, None), True, True),
        (("ingress", "IPv4", None, None, None, None, "PARENT"), True, False),
        (("ingress", "IPv6", None, None, None, None, "PARENT"), True, False)]
    one = rules[0]
    assert user.get(f"{PATH}/{one['id']}").json()["default_security_group_rule"] == one
    assert [r["id"] for r in template(user, used_in_non_default_sg="false")] == [
        r["id"] for r in rules if not r["used_in_non_default_sg"]]


def test_new_groups_get_the_template_rules(admin, server, user):
    with added(admin, protocol="tcp", port_range_min=22, port_range_max=22,
               remote_ip_prefix="10.0.0.0/8", used_in_default_sg=True,
               used_in_non_default_sg=True, description="ssh") as ssh, \
            added(admin, protocol="icmp", used_in_default_sg=True,
                  used_in_non_default_sg=False) as ping:
        assert ssh["description"] == "ssh" and ping["used_in_non_default_sg"] is False
        custom = new_group(user)
        assert shapes(custom["security_group_rules"]) == sorted([
            ("egress", "IPv4", None, None, None, None, None),
            ("egress", "IPv6", None, None, None, None, None),
            ("ingress", "IPv4", "tcp", 22, 22, "10.0.0.0/8", None)], key=repr)
        assert all(r["description"] == "" for r in custom["security_group_rules"])
        fresh = default_group(server, uuid.uuid4().hex)
        own = fresh["id"]
        assert shapes(fresh["security_group_rules"]) == sorted([
            ("egress", "IPv4", None, None, None, None, None),
            ("egress", "IPv6", None, None, None, None, None),
            ("ingress", "IPv4", "icmp", None, None, None, None),
            ("ingress", "IPv4", "tcp", 22, 22, "10.0.0.0/8", None),
            ("ingress", "IPv4", None, None, None, None, own),
            ("ingress", "IPv6", None, None, None, None, own)], key=repr)
    after = new_group(user)  # the template is back as it was
    assert len(after["security_group_rules"]) == 2


def test_the_quota_counts_the_template_rules(admin, server):
    project = uuid.uuid4().hex
    resp = admin.put(f"/v2.0/quotas/{project}", json={"quota": {"security_group_rule": 4}})
    assert resp.status_code == 200, resp.text
    client = server.client(project, roles=("member",))
    with added(admin, protocol="udp", port_range_min=53, port_range_max=53,
               used_in_default_sg=True):
        resp = client.get("/v2.0/security-groups")  # the default group needs 5 rules
        expect_error(resp, 409, "OverQuota")
    assert len(default_group(server, project)["security_group_rules"]) == 4


def test_rules_say_whether_their_group_is_the_default_one(user, project, server):
    default = default_group(server, project)
    custom = new_group(user)
    assert {r["belongs_to_default_sg"] for r in default["security_group_rules"]} == {True}
    assert {r["belongs_to_default_sg"] for r in custom["security_group_rules"]} == {False}
    made = user.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": default["id"], "direction": "ingress", "protocol": "tcp"}})
    assert made.status_code == 201, made.text
    assert made.json()["security_group_rule"]["belongs_to_default_sg"] is True
    rule_id = made.json()["security_group_rule"]["id"]
    shown = user.get(f"/v2.0/security-group-rules/{rule_id}").json()["security_group_rule"]
    assert shown["belongs_to_default_sg"] is True
    listed = user.get("/v2.0/security-group-rules",
                      params={"belongs_to_default_sg": "false"}).json()["security_group_rules"]
    assert {r["security_group_id"] for r in listed} == {custom["id"]}
    listed = user.get("/v2.0/security-group-rules",
                      params={"belongs_to_default_sg": "true"}).json()["security_group_rules"]
    assert {r["security_group_id"] for r in listed} == {default["id"]}


def test_only_admins_change_the_template(user):
    expect_error(post(user, protocol="tcp"), 403, "PolicyNotAuthorized")
    one = template(user)[0]
    expect_error(user.delete(f"{PATH}/{one['id']}"), 403, "PolicyNotAuthorized")
    resp = user.put(f"{PATH}/{one['id']}",
                    json={"default_security_group_rule": {"description": "x"}})
    expect_error(resp, 400, "HTTPBadRequest", "Cannot update read-only attribute description")


def test_duplicates_are_refused_per_kind_of_group(admin):
    egress = next(r for r in template(admin) if r["direction"] == "egress"
                  and r["ethertype"] == "IPv4")
    resp = post(admin, direction="egress", used_in_default_sg=False,
                used_in_non_default_sg=True)
    expect_error(resp, 409, "DefaultSecurityGroupRuleExists",
                 f"Default Security group rule already exists. Rule id is {egress['id']}.")
    body = {"direction": "ingress", "protocol": "tcp", "used_in_default_sg": True}
    resp = admin.post(PATH, json={"default_security_group_rules": [body, body]})
    expect_error(resp, 409, "DuplicateDefaultSgRuleInPost")
    assert len(template(admin)) == 4  # nothing half-written


@pytest.mark.parametrize("attrs, status, kind", [
    ({"protocol": "tcp", "port_range_min": 90, "port_range_max": 80}, 400,
     "SecurityGroupInvalidPortRange"),
    ({"protocol": "bogus"}, 400, "SecurityGroupRuleInvalidProtocol"),
    ({"ethertype": "IPv6", "remote_ip_prefix": "10.0.0.0/8"}, 400,
     "SecurityGroupRuleParameterConflict"),
    ({"remote_ip_prefix": "10.0.0.0/8", "remote_group_id": "PARENT"}, 400,
     "SecurityGroupMultipleRemoteEntites"),
    ({"direction": "sideways"}, 400, "HTTPBadRequest"),
    ({"used_in_default_sg": "maybe"}, 400, "InvalidInput"),
    ({"security_group_id": "x"}, 400, "HTTPBadRequest"),
])
def test_bad_template_rules_are_refused(admin, attrs, status, kind):
    expect_error(post(admin, **attrs), status, kind)
    assert len(template(admin)) == 4


def test_missing_template_rules_are_404(admin):
    missing = str(uuid.uuid4())
    for resp in (admin.get(f"{PATH}/{missing}"), admin.delete(f"{PATH}/{missing}")):
        expect_error(resp, 404, "DefaultSecurityGroupRuleNotFound",
                     f"Default Security Group rule {missing} does not exist")
