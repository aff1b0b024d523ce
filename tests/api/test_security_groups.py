"""Security groups, their rules and the ports' ``security_groups``, through HTTP."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.harness import ApiClient, Server, error_of, expect_error

GROUP_KEYS = {"id", "name", "tenant_id", "project_id", "description", "security_group_rules",
              "stateful", "shared", "tags", "created_at", "updated_at", "revision_number"}
RULE_KEYS = {"id", "tenant_id", "project_id", "security_group_id", "direction", "ethertype",
             "protocol", "port_range_min", "port_range_max", "remote_ip_prefix",
             "normalized_cidr", "remote_group_id", "remote_address_group_id", "description",
             "created_at", "updated_at", "revision_number", "belongs_to_default_sg"}
ALIASES = {"security-group", "stateful-security-group", "security-groups-normalized-cidr",
           "security-groups-shared-filtering", "security-groups-remote-address-group",
           "address-group", "security-groups-default-rules",
           "security-groups-rules-belongs-to-default-sg"}


# --- helpers ---------------------------------------------------------------------------

def make_group(client: ApiClient, **attrs) -> dict:
    resp = client.post("/v2.0/security-groups", json={"security_group": attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()["security_group"]


def post_rule(client: ApiClient, group_id: str, **attrs):
    body = {"security_group_id": group_id, "direction": "ingress", **attrs}
    return client.post("/v2.0/security-group-rules", json={"security_group_rule": body})


def make_rule(client: ApiClient, group_id: str, **attrs) -> dict:
    resp = post_rule(client, group_id, **attrs)
    assert resp.status_code == 201, resp.text
    return resp.json()["security_group_rule"]


def groups(client: ApiClient, **params) -> list[dict]:
    resp = client.get("/v2.0/security-groups", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()["security_groups"]


def rules(client: ApiClient, **params) -> list[dict]:
    resp = client.get("/v2.0/security-group-rules", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()["security_group_rules"]


def show(client: ApiClient, group_id: str) -> dict:
    resp = client.get(f"/v2.0/security-groups/{group_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()["security_group"]


def defaults(client: ApiClient) -> list[dict]:
    return [g for g in groups(client) if g["name"] == "default"]


def shape(rule: dict) -> tuple:
    """What a rule filters, without ids and times."""
    return (rule["direction"], rule["ethertype"], rule["protocol"], rule["port_range_min"],
            rule["port_range_max"], rule["remote_ip_prefix"], rule["remote_group_id"])


def not_found(resp, group_id: str) -> None:
    expect_error(resp, 404, "SecurityGroupNotFound", f"Security group {group_id} does not exist")


# --- the default group -------------------------------------------------------------------

def test_extensions_are_announced(user):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert ALIASES <= aliases


def test_first_list_makes_the_default_group_once(user, project):
    listed = groups(user)
    assert len(listed) == 1
    default = listed[0]
    assert set(default) == GROUP_KEYS
    assert default["name"] == "default" and default["description"] == "Default security group"
    assert default["project_id"] == default["tenant_id"] == project
    assert default["stateful"] is True and default["shared"] is False and default["tags"] == []
    own = default["id"]
    assert sorted(shape(r) for r in default["security_group_rules"]) == [
        ("egress", "IPv4", None, None, None, None, None),
        ("egress", "IPv6", None, None, None, None, None),
        ("ingress", "IPv4", None, None, None, None, own),
        ("ingress", "IPv6", None, None, None, None, own)]
    assert all(set(r) == RULE_KEYS and r["project_id"] == project
               for r in default["security_group_rules"])
    assert [g["id"] for g in groups(user)] == [own]  # listing again makes no other
    assert show(user, own) == default


def test_port_create_makes_the_default_group_and_uses_it(admin, user, project):
    shared = admin.network(shared=True, project_id=uuid.uuid4().hex)
    admin.subnet(shared["id"], "10.60.0.0/24")
    port = user.port(shared["id"])
    assert len(port["security_groups"]) == 1
    assert [g["id"] for g in defaults(user)] == port["security_groups"]
    assert user.show("ports", port["id"])["security_groups"] == port["security_groups"]


def test_network_and_group_create_make_the_default_group(user, other):
    user.network()
    made = make_group(other, name="web")
    assert len(defaults(user)) == 1
    assert sorted(g["name"] for g in groups(other)) == ["default", "web"]
    assert made["id"] in {g["id"] for g in groups(other)}


def test_admin_lists_for_a_project_and_makes_its_default(admin):
    someone = uuid.uuid4().hex
    listed = groups(admin, project_id=someone)
    assert [(g["name"], g["project_id"]) for g in listed] == [("default", someone)]


def test_concurrent_first_uses_make_one_default_group(server: Server, admin):
    """Ten first requests of a fresh project at once: one default group, used by all."""
    net = admin.network(shared=True, project_id=uuid.uuid4().hex)
    admin.subnet(net["id"], "10.61.0.0/24")
    fresh = uuid.uuid4().hex
    kinds = ["list", "create", "port", "rules"] * 2 + ["list", "port"]

    def first_use(kind: str):
        client = server.client(fresh, roles=("member",))
        if kind == "list":
            return client.get("/v2.0/security-groups")
        if kind == "rules":
            return client.get("/v2.0/security-group-rules")
        if kind == "create":
            return client.post("/v2.0/security-groups",
                               json={"security_group": {"name": "web"}})
        return client.post("/v2.0/ports", json={"port": {"network_id": net["id"]}})

    with ThreadPoolExecutor(len(kinds)) as pool:
        responses = list(pool.map(first_use, kinds))
    assert all(r.status_code in (200, 201) for r in responses), [r.text for r in responses]
    user = server.client(fresh, roles=("member",))
    found = defaults(user)
    assert len(found) == 1
    ports = [r.json()["port"] for r in responses if "port" in r.json()]
    assert ports and all(p["security_groups"] == [found[0]["id"]] for p in ports)
    assert len(rules(user, security_group_id=found[0]["id"])) == 4
    assert len(groups(user)) == 1 + kinds.count("create")


# --- groups ------------------------------------------------------------------------------

def test_create_group_has_egress_rules(user, project):
    made = make_group(user, name="web", description="front end")
    assert set(made) == GROUP_KEYS
    assert (made["name"], made["description"], made["project_id"]) == (
        "web", "front end", project)
    assert made["stateful"] is True and made["shared"] is False
    assert sorted(shape(r) for r in made["security_group_rules"]) == [
        ("egress", "IPv4", None, None, None, None, None),
        ("egress", "IPv6", None, None, None, None, None)]
    assert all(r["security_group_id"] == made["id"] for r in made["security_group_rules"])
    assert show(user, made["id"]) == made
    assert make_group(user, stateful=False)["stateful"] is False


def test_bulk_create(user):
    resp = user.post("/v2.0/security-groups", json={"security_groups": [
        {"name": "a"}, {"security_group": {"name": "b", "stateful": "false"}}]})
    assert resp.status_code == 201, resp.text
    made = resp.json()["security_groups"]
    assert [(g["name"], g["stateful"]) for g in made] == [("a", True), ("b", False)]


@pytest.mark.parametrize("name", ["default", "Default", "DEFAULT"])
def test_no_second_group_named_default(user, name):
    resp = user.post("/v2.0/security-groups", json={"security_group": {"name": name}})
    expect_error(resp, 409, "SecurityGroupDefaultAlreadyExists",
                 "Default security group already exists.")
    made = make_group(user, name="web")
    resp = user.put(f"/v2.0/security-groups/{made['id']}",
                    json={"security_group": {"name": name}})
    expect_error(resp, 409, "SecurityGroupDefaultAlreadyExists")


def test_update(user):
    made = make_group(user, name="web")
    resp = user.put(f"/v2.0/security-groups/{made['id']}", json={"security_group": {
        "name": "www", "description": "public", "stateful": False}})
    assert resp.status_code == 200, resp.text
    updated = resp.json()["security_group"]
    assert (updated["name"], updated["description"], updated["stateful"]) == (
        "www", "public", False)
    assert updated["revision_number"] > made["revision_number"]
    assert show(user, made["id"]) == updated
    for attr, value in (("shared", True), ("security_group_rules", []), ("id", made["id"])):
        resp = user.put(f"/v2.0/security-groups/{made['id']}",
                        json={"security_group": {attr: value}})
        expect_error(resp, 400, "HTTPBadRequest", f"Cannot update read-only attribute {attr}")


def test_if_match_revision(user):
    made = make_group(user, name="rev")
    url = f"/v2.0/security-groups/{made['id']}"
    stale = {"If-Match": f"revision_number={made['revision_number'] - 1}"}
    resp = user.put(url, json={"security_group": {"name": "x"}}, headers=stale)
    expect_error(resp, 412, "RevisionNumberConstraintFailed")
    expect_error(user.delete(url, headers=stale), 412, "RevisionNumberConstraintFailed")
    rule = made["security_group_rules"][0]
    resp = user.delete(f"/v2.0/security-group-rules/{rule['id']}",
                       headers={"If-Match": "revision_number=7"})
    expect_error(resp, 412, "RevisionNumberConstraintFailed")
    current = {"If-Match": f"revision_number={made['revision_number']}"}
    assert user.put(url, json={"security_group": {"name": "y"}}, headers=current
                    ).status_code == 200


def test_default_group_keeps_its_name(user, admin):
    default = defaults(user)[0]
    url = f"/v2.0/security-groups/{default['id']}"
    for client in (user, admin):
        resp = client.put(url, json={"security_group": {"name": "renamed"}})
        expect_error(resp, 409, "SecurityGroupCannotUpdateDefault",
                     "Updating default security group not allowed.")
    resp = user.put(url, json={"security_group": {"description": "ours"}})
    assert resp.status_code == 200 and resp.json()["security_group"]["description"] == "ours"


def test_only_admin_deletes_the_default_group(user, admin):
    default = defaults(user)[0]
    resp = user.delete(f"/v2.0/security-groups/{default['id']}")
    expect_error(resp, 409, "SecurityGroupCannotRemoveDefault",
                 "Insufficient rights for removing default security group.")
    assert admin.delete(f"/v2.0/security-groups/{default['id']}").status_code == 204
    again = defaults(user)  # the next use makes a new one
    assert len(again) == 1 and again[0]["id"] != default["id"]


def test_group_in_use_by_a_port(user):
    made = make_group(user, name="web")
    port = user.port(user.network()["id"], security_groups=[made["id"]])
    url = f"/v2.0/security-groups/{made['id']}"
    expect_error(user.delete(url), 409, "SecurityGroupInUse",
                 f"Security Group {made['id']} in use.")
    # stateful cannot change under a port either
    resp = user.put(url, json={"security_group": {"stateful": False}})
    expect_error(resp, 409, "SecurityGroupInUse")
    assert user.put(url, json={"security_group": {"stateful": True}}).status_code == 200
    assert user.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    assert user.delete(url).status_code == 204
    not_found(user.get(url), made["id"])


def test_not_found_and_other_projects_groups(user, other):
    missing = str(uuid.uuid4())
    url = f"/v2.0/security-groups/{missing}"
    not_found(user.get(url), missing)
    not_found(user.put(url, json={"security_group": {"name": "x"}}), missing)
    not_found(user.delete(url), missing)
    theirs = make_group(other, name="theirs")
    url = f"/v2.0/security-groups/{theirs['id']}"
    not_found(user.get(url), theirs["id"])
    not_found(user.put(url, json={"security_group": {"name": "x"}}), theirs["id"])
    not_found(user.delete(url), theirs["id"])
    assert theirs["id"] not in {g["id"] for g in groups(user)}
    assert show(other, theirs["id"])["name"] == "theirs"


def test_policy(server: Server, user, admin, project):
    reader = server.client(project, roles=("reader",))
    resp = reader.post("/v2.0/security-groups", json={"security_group": {"name": "r"}})
    expect_error(resp, 403, "PolicyNotAuthorized",
                 "create_security_group is disallowed by policy")
    made = make_group(user, name="web")
    assert {g["id"] for g in groups(reader)} >= {made["id"]}
    resp = reader.put(f"/v2.0/security-groups/{made['id']}",
                      json={"security_group": {"name": "x"}})
    expect_error(resp, 403, "PolicyNotAuthorized")
    resp = post_rule(reader, made["id"], protocol="tcp")
    expect_error(resp, 403, "PolicyNotAuthorized")
    resp = user.post("/v2.0/security-groups", json={"security_group": {
        "name": "x", "project_id": uuid.uuid4().hex}})
    assert resp.status_code == 400, resp.text
    someone = uuid.uuid4().hex
    theirs = make_group(admin, name="for them", project_id=someone)
    assert theirs["project_id"] == someone
    assert len([g for g in groups(admin, project_id=someone) if g["name"] == "default"]) == 1


def test_filters_sorting_and_pages(user):
    made = [make_group(user, name=f"page-{i}", stateful=i % 2 == 0) for i in range(4)]
    names = [g["name"] for g in groups(user, sort_key="name", sort_dir="desc")]
    assert names == ["page-3", "page-2", "page-1", "page-0", "default"]
    assert {g["name"] for g in groups(user, stateful="false")} == {"page-1", "page-3"}
    assert groups(user, name="page-2")[0]["id"] == made[2]["id"]
    assert groups(user, shared="true") == []
    assert len(groups(user, shared="false")) == 5
    resp = user.get("/v2.0/security-groups", params={"limit": 2, "sort_key": "name",
                                                      "sort_dir": "asc"})
    page = resp.json()
    assert [g["name"] for g in page["security_groups"]] == ["default", "page-0"]
    assert any(link["rel"] == "next" for link in page["security_groups_links"])
    marker = page["security_groups"][-1]["id"]
    rest = groups(user, limit=10, marker=marker, sort_key="name", sort_dir="asc")
    assert [g["name"] for g in rest] == ["page-1", "page-2", "page-3"]
    only = groups(user, fields=["id", "name"], name="page-0")
    assert only == [{"id": made[0]["id"], "name": "page-0"}]
    resp = user.get("/v2.0/security-groups", params={"security_group_rules": "x"})
    assert resp.status_code == 400


def test_tags(user):
    made = make_group(user, name="tagged")
    url = f"/v2.0/security-groups/{made['id']}/tags"
    assert user.put(url, json={"tags": ["red", "blue"]}).status_code == 200
    assert user.put(f"{url}/green").status_code == 201
    assert sorted(user.get(url).json()["tags"]) == ["blue", "green", "red"]
    assert [g["id"] for g in groups(user, tags="green")] == [made["id"]]
    assert made["id"] not in {g["id"] for g in groups(user, **{"not-tags": "red"})}
    assert show(user, made["id"])["revision_number"] > made["revision_number"]


# --- rules -------------------------------------------------------------------------------

def test_create_rule(user, project):
    group = make_group(user, name="web")
    rule = make_rule(user, group["id"], protocol="TCP", port_range_min=22, port_range_max="22",
                     remote_ip_prefix="10.0.0.5/8", description="ssh")
    assert set(rule) == RULE_KEYS
    assert rule["protocol"] == "tcp" and (rule["port_range_min"], rule["port_range_max"]) == (
        22, 22)
    assert rule["remote_ip_prefix"] == "10.0.0.5/8" and rule["normalized_cidr"] == "10.0.0.0/8"
    assert rule["ethertype"] == "IPv4" and rule["direction"] == "ingress"
    assert (rule["description"], rule["project_id"], rule["tenant_id"]) == (
        "ssh", project, project)
    assert rule["remote_group_id"] is None and rule["remote_address_group_id"] is None
    resp = user.get(f"/v2.0/security-group-rules/{rule['id']}")
    assert resp.status_code == 200 and resp.json()["security_group_rule"] == rule
    after = show(user, group["id"])
    assert rule in after["security_group_rules"]
    assert after["revision_number"] > group["revision_number"]  # rules revise their group


@pytest.mark.parametrize(("given", "stored"), [
    ({"protocol": "6"}, {"protocol": "6"}),
    ({"protocol": 17}, {"protocol": "17"}),
    ({"protocol": "any"}, {"protocol": None}),
    ({"protocol": "icmp", "ethertype": "ipv6"}, {"protocol": "ipv6-icmp", "ethertype": "IPv6"}),
    ({"protocol": "icmpv6", "ethertype": "IPv6"}, {"protocol": "ipv6-icmp"}),
    ({"protocol": "1", "ethertype": "IPv6"}, {"protocol": "58"}),
    ({"protocol": "icmp", "port_range_min": 8, "port_range_max": 0},
     {"port_range_min": 8, "port_range_max": 0}),
    ({"protocol": "icmp", "port_range_min": 3}, {"port_range_min": 3, "port_range_max": None}),
    ({"protocol": "udp", "port_range_min": 1, "port_range_max": 65535},
     {"port_range_min": None, "port_range_max": None}),
    ({"protocol": "sctp", "port_range_min": 5, "port_range_max": 6}, {"port_range_min": 5}),
    ({"remote_ip_prefix": "10.1.2.3"}, {"remote_ip_prefix": "10.1.2.3/32",
                                        "normalized_cidr": "10.1.2.3/32"}),
    ({"remote_ip_prefix": "2001:DB8::1/64", "ethertype": "IPv6"},
     {"remote_ip_prefix": "2001:db8::1/64", "normalized_cidr": "2001:db8::/64"}),
    ({"remote_ip_prefix": ""}, {"remote_ip_prefix": None}),
    ({"protocol": "gre", "direction": "egress"}, {"protocol": "gre", "direction": "egress"}),
])
def test_rules_are_stored_as_neutron_stores_them(user, given, stored):
    group = make_group(user, name="conv")
    rule = make_rule(user, group["id"], **given)
    assert {k: rule[k] for k in stored} == stored


@pytest.mark.parametrize(("given", "status", "type_", "message"), [
    ({"remote_ip_prefix": "10.0.0.0/8", "remote_group_id": "SELF"}, 400,
     "SecurityGroupMultipleRemoteEntites",
     "Only one of remote_ip_prefix or remote_group_id or remote_address_group_id may be "
     "provided."),
    ({"remote_ip_prefix": "2001:db8::/64"}, 400, "SecurityGroupRuleParameterConflict",
     "Conflicting value ethertype IPv4 for CIDR 2001:db8::/64"),
    ({"remote_ip_prefix": "10.0.0.0/8", "ethertype": "IPv6"}, 400,
     "SecurityGroupRuleParameterConflict", "Conflicting value ethertype IPv6 for CIDR 10.0.0.0/8"),
    ({"protocol": "tcp", "port_range_min": 80, "port_range_max": 79}, 400,
     "SecurityGroupInvalidPortRange",
     "For TCP/UDP protocols, port_range_min must be <= port_range_max"),
    ({"protocol": "udp", "port_range_min": 80}, 400, "SecurityGroupInvalidPortRange", None),
    ({"protocol": "tcp", "port_range_min": 0, "port_range_max": 10}, 400,
     "SecurityGroupInvalidPortValue", "Invalid value for port 0."),
    ({"protocol": "tcp", "port_range_min": 1, "port_range_max": 65536}, 400,
     "SecurityGroupInvalidPortValue", "Invalid value for port 65536."),
    ({"protocol": "tcp", "port_range_min": "http"}, 400, "SecurityGroupInvalidPortValue",
     "Invalid value for port http."),
    ({"port_range_min": 22, "port_range_max": 22}, 400,
     "SecurityGroupProtocolRequiredWithPorts",
     "Must also specify protocol if port range is given."),
    ({"protocol": "icmp", "port_range_max": 0}, 400, "SecurityGroupMissingIcmpType",
     "ICMP code (port-range-max) 0 is provided but ICMP type (port-range-min) is missing."),
    ({"protocol": "icmp", "port_range_min": 256}, 400, "SecurityGroupInvalidIcmpValue",
     "Invalid value for ICMP type (port_range_min) 256. It must be 0 to 255."),
    ({"protocol": "ipv6-icmp", "ethertype": "IPv6", "port_range_min": 1,
      "port_range_max": 300}, 400, "SecurityGroupInvalidIcmpValue",
     "Invalid value for ICMP code (port_range_max) 300. It must be 0 to 255."),
    ({"protocol": "gre", "port_range_min": 1, "port_range_max": 2}, 400,
     "SecurityGroupInvalidProtocolForPort", "Ports cannot be specified for protocol 47. "
     "Ports are only supported for DCCP, SCTP, TCP, UDP, UDPLITE."),
    ({"protocol": "ipv6-icmp"}, 400, "SecurityGroupEthertypeConflictWithProtocol",
     "Invalid ethertype IPv4 for protocol ipv6-icmp."),
    ({"protocol": "41"}, 400, "SecurityGroupEthertypeConflictWithProtocol", None),
    ({"protocol": "bogus"}, 400, "SecurityGroupRuleInvalidProtocol", None),
    ({"protocol": 256}, 400, "SecurityGroupRuleInvalidProtocol", None),
    ({"protocol": True}, 400, "SecurityGroupRuleInvalidProtocol", None),
    ({"remote_ip_prefix": "10.0.0.256/8"}, 400, "InvalidCIDR",
     "Invalid CIDR 10.0.0.256/8 given as IP prefix."),
    ({"remote_ip_prefix": "10.0.0.0/33"}, 400, "InvalidCIDR", None),
    ({"direction": "up"}, 400, "HTTPBadRequest",
     "Invalid input for direction. Reason: up is not in ['ingress', 'egress']."),
    ({"ethertype": "IPv5"}, 400, "HTTPBadRequest",
     "Invalid input for ethertype. Reason: IPv5 is not in ['IPv4', 'IPv6']."),
    ({"remote_group_id": "MISSING"}, 404, "SecurityGroupNotFound", None),
    ({"security_group_id": "MISSING"}, 404, "SecurityGroupNotFound", None),
    ({"name": "x"}, 400, "HTTPBadRequest", "Unrecognized attribute(s) 'name'"),
    ({"normalized_cidr": "10.0.0.0/8"}, 400, "HTTPBadRequest",
     "Attribute 'normalized_cidr' not allowed in POST"),
])
def test_rule_errors(user, given, status, type_, message):
    group = make_group(user, name="bad")
    missing = str(uuid.uuid4())
    given = {k: {"SELF": group["id"], "MISSING": missing}.get(v, v) if isinstance(v, str)
             else v for k, v in given.items()}
    resp = post_rule(user, group["id"], **given)
    error = expect_error(resp, status, type_, message)
    if type_ == "SecurityGroupNotFound":
        assert error["message"] == f"Security group {missing} does not exist"
    assert len(show(user, group["id"])["security_group_rules"]) == 2  # nothing was added


def test_rule_requires_group_and_direction(user):
    resp = user.post("/v2.0/security-group-rules",
                     json={"security_group_rule": {"direction": "ingress"}})
    expect_error(resp, 400, "HTTPBadRequest", "Failed to parse request. Required attribute "
                 "'security_group_id' not specified")
    group = make_group(user)
    resp = user.post("/v2.0/security-group-rules",
                     json={"security_group_rule": {"security_group_id": group["id"]}})
    expect_error(resp, 400, "HTTPBadRequest", "Failed to parse request. Required attribute "
                 "'direction' not specified")


def test_duplicate_rules(user):
    group = make_group(user, name="dup")
    first = make_rule(user, group["id"], protocol="tcp", port_range_min=80, port_range_max=80,
                      remote_ip_prefix="10.0.0.0/8")
    exists = f"Security group rule already exists. Rule id is {first['id']}."
    for same in ({"protocol": "tcp"}, {"protocol": "6"}, {"protocol": "TCP"},
                 {"protocol": "tcp", "remote_ip_prefix": "10.9.9.9/8"},
                 {"protocol": "tcp", "description": "another description"}):
        attrs = {"port_range_min": 80, "port_range_max": 80, "remote_ip_prefix": "10.0.0.0/8",
                 **same}
        expect_error(post_rule(user, group["id"], **attrs), 409, "SecurityGroupRuleExists",
                     exists)
    # "anywhere" is the same with or without a prefix: the egress rule exists already
    egress = [r for r in group["security_group_rules"] if r["ethertype"] == "IPv4"][0]
    resp = post_rule(user, group["id"], direction="egress", remote_ip_prefix="0.0.0.0/0")
    expect_error(resp, 409, "SecurityGroupRuleExists",
                 f"Security group rule already exists. Rule id is {egress['id']}.")
    # a different port, direction or remote makes another rule
    make_rule(user, group["id"], protocol="tcp", port_range_min=81, port_range_max=81,
              remote_ip_prefix="10.0.0.0/8")
    make_rule(user, group["id"], protocol="tcp", remote_group_id=group["id"])


def test_bulk_rules(user, other):
    group = make_group(user, name="bulk")
    body = [{"security_group_id": group["id"], "direction": "ingress", "protocol": p}
            for p in ("tcp", "udp")]
    resp = user.post("/v2.0/security-group-rules", json={"security_group_rules": body})
    assert resp.status_code == 201, resp.text
    assert [r["protocol"] for r in resp.json()["security_group_rules"]] == ["tcp", "udp"]
    dup = [{"security_group_id": group["id"], "direction": "egress", "protocol": "17"},
           {"security_group_id": group["id"], "direction": "egress", "protocol": "udp"}]
    resp = user.post("/v2.0/security-group-rules", json={"security_group_rules": dup})
    expect_error(resp, 409, "DuplicateSecurityGroupRuleInPost",
                 "Duplicate Security Group Rule in POST.")
    second = make_group(user, name="second")
    mixed = [body[0], {**body[1], "security_group_id": second["id"], "protocol": "icmp"}]
    resp = user.post("/v2.0/security-group-rules", json={"security_group_rules": mixed})
    expect_error(resp, 400, "SecurityGroupNotSingleGroupRules",
                 "Only allowed to update rules for one security profile at a time")
    assert len(show(user, group["id"])["security_group_rules"]) == 4  # 2 egress + tcp + udp


def test_rules_are_immutable_and_deleted(user):
    group = make_group(user, name="del")
    rule = make_rule(user, group["id"], protocol="icmp")
    url = f"/v2.0/security-group-rules/{rule['id']}"
    resp = user.put(url, json={"security_group_rule": {"direction": "egress"}})
    expect_error(resp, 400, "HTTPBadRequest", "Cannot update read-only attribute direction")
    resp = user.put(url, json={"security_group_rule": {"description": "d"}})
    assert resp.status_code == 405
    missing = f"/v2.0/security-group-rules/{uuid.uuid4()}"
    expect_error(user.put(missing, json={"security_group_rule": {"description": "d"}}), 404,
                 "SecurityGroupRuleNotFound")
    before = show(user, group["id"])["revision_number"]
    assert user.delete(url).status_code == 204
    expect_error(user.get(url), 404, "SecurityGroupRuleNotFound",
                 f"Security group rule {rule['id']} does not exist")
    expect_error(user.delete(url), 404, "SecurityGroupRuleNotFound")
    after = show(user, group["id"])
    assert rule["id"] not in {r["id"] for r in after["security_group_rules"]}
    assert after["revision_number"] > before


def test_rules_of_other_projects(user, other, admin, project):
    theirs = make_group(other, name="theirs")
    mine = make_group(user, name="mine")
    not_found(post_rule(user, theirs["id"]), theirs["id"])
    not_found(post_rule(user, mine["id"], remote_group_id=theirs["id"]), theirs["id"])
    their_rule = theirs["security_group_rules"][0]
    url = f"/v2.0/security-group-rules/{their_rule['id']}"
    expect_error(user.get(url), 404, "SecurityGroupRuleNotFound")
    expect_error(user.delete(url), 404, "SecurityGroupRuleNotFound")
    assert their_rule["id"] not in {r["id"] for r in rules(user)}
    # an admin adding to a project's group makes a rule of that project
    added = make_rule(admin, theirs["id"], protocol="udp")
    assert added["project_id"] == theirs["project_id"] != project
    assert added["id"] in {r["id"] for r in rules(other)}


def test_rule_filters_and_sorting(user):
    group = make_group(user, name="filters")
    ssh = make_rule(user, group["id"], protocol="tcp", port_range_min=22, port_range_max=22,
                    remote_ip_prefix="192.168.1.7/24")
    dns = make_rule(user, group["id"], protocol="udp", port_range_min=53, port_range_max=53)
    v6 = make_rule(user, group["id"], ethertype="IPv6", protocol="ipv6-icmp")

    def ids(**params) -> list[str]:
        return [r["id"] for r in rules(user, security_group_id=group["id"], **params)]

    assert set(ids(direction="ingress")) == {ssh["id"], dns["id"], v6["id"]}
    assert ids(protocol="tcp") == [ssh["id"]]
    assert ids(protocol="TCP") == [ssh["id"]]
    assert ids(ethertype="ipv6", direction="ingress") == [v6["id"]]
    assert ids(port_range_min="53") == [dns["id"]]
    assert ids(normalized_cidr="192.168.1.0/24") == [ssh["id"]]
    assert ids(remote_ip_prefix="192.168.1.7/24") == [ssh["id"]]
    ordered = [r["port_range_min"] for r in rules(
        user, security_group_id=group["id"], protocol=["tcp", "udp"],
        sort_key="port_range_min", sort_dir="desc")]
    assert ordered == [53, 22]
    assert len(ids(limit=2)) == 2
    resp = user.get("/v2.0/security-group-rules", params={"port_range_min": "x"})
    expect_error(resp, 400, "SecurityGroupInvalidPortValue")


def test_deleting_a_group_deletes_rules_naming_it(user):
    target = make_group(user, name="target")
    holder = make_group(user, name="holder")
    naming = make_rule(user, holder["id"], remote_group_id=target["id"])
    assert user.delete(f"/v2.0/security-groups/{target['id']}").status_code == 204
    assert naming["id"] not in {r["id"] for r in show(user, holder["id"])["security_group_rules"]}
    expect_error(user.get(f"/v2.0/security-group-rules/{naming['id']}"), 404,
                 "SecurityGroupRuleNotFound")
    assert rules(user, security_group_id=target["id"]) == []


# --- quotas ------------------------------------------------------------------------------

def set_quota(admin: ApiClient, project: str, **limits) -> None:
    resp = admin.put(f"/v2.0/quotas/{project}", json={"quota": limits})
    assert resp.status_code == 200, resp.text


def usage(client: ApiClient, project: str) -> dict:
    return client.get(f"/v2.0/quotas/{project}/details").json()["quota"]


def test_quota_defaults_and_usage(user, project):
    quota = user.get(f"/v2.0/quotas/{project}").json()["quota"]
    assert (quota["security_group"], quota["security_group_rule"]) == (10, 100)
    make_group(user, name="web")
    used = usage(user, project)
    # the default group and its four rules count, as in Neutron
    assert used["security_group"] == {"limit": 10, "used": 2, "reserved": 0}
    assert used["security_group_rule"] == {"limit": 100, "used": 6, "reserved": 0}


def test_over_group_and_rule_quota(admin, user, project):
    set_quota(admin, project, security_group=2, security_group_rule=8)
    web = make_group(user, name="web")  # default (4 rules) + web (2 rules)
    resp = user.post("/v2.0/security-groups", json={"security_group": {"name": "more"}})
    expect_error(resp, 409, "OverQuota", "Quota exceeded for resources: ['security_group'].")
    make_rule(user, web["id"], protocol="tcp")
    make_rule(user, web["id"], protocol="udp")
    expect_error(post_rule(user, web["id"], protocol="icmp"), 409, "OverQuota",
                 "Quota exceeded for resources: ['security_group_rule'].")
    set_quota(admin, project, security_group=5)
    # a group's first rules need room too
    resp = user.post("/v2.0/security-groups", json={"security_group": {"name": "more"}})
    expect_error(resp, 409, "OverQuota", "Quota exceeded for resources: ['security_group_rule'].")


# --- ports -------------------------------------------------------------------------------

@pytest.fixture
def net(user) -> dict:
    network = user.network()
    user.subnet(network["id"], "10.62.0.0/24")
    return network


def test_a_group_twice_on_a_port_is_refused(user, net):
    web = make_group(user, name="web")
    message = (f"Invalid input for security_groups. Reason: Duplicate items in the list: "
               f"'{web['id']}'.")
    resp = user.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "security_groups": [web["id"], web["id"]]}})
    expect_error(resp, 400, "HTTPBadRequest", message)
    port = user.port(net["id"])
    resp = user.put(f"/v2.0/ports/{port['id']}",
                    json={"port": {"security_groups": [web["id"], web["id"]]}})
    expect_error(resp, 400, "HTTPBadRequest", message)


def test_stateful_and_stateless_groups_do_not_mix_on_a_port(user, net):
    stateful, stateless = make_group(user, name="sf"), make_group(user, name="sl",
                                                                  stateful=False)
    message = ("Error Cannot apply both stateful and stateless security groups on the same "
               "port at the same time while attempting the operation.")
    resp = user.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "security_groups": [stateful["id"], stateless["id"]]}})
    expect_error(resp, 409, "SecurityGroupConflict", message)
    port = user.port(net["id"], security_groups=[stateless["id"]])
    url = f"/v2.0/ports/{port['id']}"
    resp = user.put(url, json={"port": {"security_groups": [stateless["id"], stateful["id"]]}})
    expect_error(resp, 409, "SecurityGroupConflict", message)
    assert user.show("ports", port["id"])["security_groups"] == [stateless["id"]]
    other = make_group(user, name="sl2", stateful=False)
    resp = user.put(url, json={"port": {"security_groups": [stateless["id"], other["id"]]}})
    assert resp.status_code == 200, resp.text


def test_port_groups_on_create_and_update(user, net):
    web, db = make_group(user, name="web"), make_group(user, name="db")
    default = defaults(user)[0]["id"]
    assert user.port(net["id"])["security_groups"] == [default]
    assert user.port(net["id"], security_groups=None)["security_groups"] == [default]
    assert user.port(net["id"], security_groups=[])["security_groups"] == []
    both = user.port(net["id"], security_groups=[web["id"], db["id"]])
    assert sorted(both["security_groups"]) == sorted([web["id"], db["id"]])
    url = f"/v2.0/ports/{both['id']}"
    resp = user.put(url, json={"port": {"security_groups": [db["id"]]}})
    assert resp.status_code == 200 and resp.json()["port"]["security_groups"] == [db["id"]]
    assert user.show("ports", both["id"])["security_groups"] == [db["id"]]
    resp = user.put(url, json={"port": {"name": "renamed"}})
    assert resp.json()["port"]["security_groups"] == [db["id"]]  # untouched unless given
    resp = user.put(url, json={"port": {"security_groups": None}})
    assert resp.json()["port"]["security_groups"] == []
    assert user.delete(f"/v2.0/security-groups/{web['id']}").status_code == 204


def test_network_owned_ports_get_no_group(admin, net):
    dhcp = admin.port(net["id"], device_owner="network:dhcp")
    assert dhcp["security_groups"] == []
    compute = admin.port(net["id"], device_owner="compute:nova")
    assert len(compute["security_groups"]) == 1


def test_port_groups_must_be_the_ports_projects(user, other, admin, net):
    theirs = make_group(other, name="theirs")
    missing = str(uuid.uuid4())
    for wanted in ([theirs["id"]], [missing]):
        resp = user.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                       "security_groups": wanted}})
        not_found(resp, wanted[0])
    # even an admin cannot put a port into another project's group
    resp = admin.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                    "security_groups": [theirs["id"]]}})
    not_found(resp, theirs["id"])
    port = user.port(net["id"])
    resp = user.put(f"/v2.0/ports/{port['id']}",
                    json={"port": {"security_groups": [missing, theirs["id"]]}})
    not_found(resp, f"{missing}, {theirs['id']}")
    for bad in ("not-a-uuid", ["not-a-uuid"], [1]):
        resp = user.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                       "security_groups": bad}})
        assert resp.status_code == 400, resp.text
        assert error_of(resp)["type"] == "HTTPBadRequest"


def test_admin_port_for_another_project_gets_its_default(admin, net):
    someone = uuid.uuid4().hex
    port = admin.port(net["id"], project_id=someone)
    their_default = [g for g in groups(admin, project_id=someone) if g["name"] == "default"]
    assert port["security_groups"] == [their_default[0]["id"]]


def test_list_ports_with_groups_and_filter(user, net):
    web = make_group(user, name="web")
    default = defaults(user)[0]["id"]
    in_web = [user.port(net["id"], security_groups=[web["id"], default]) for _ in range(3)]
    plain = [user.port(net["id"]) for _ in range(3)]
    listed = {p["id"]: p for p in user.get("/v2.0/ports", params={
        "network_id": net["id"]}).json()["ports"]}
    for port in in_web:
        assert sorted(listed[port["id"]]["security_groups"]) == sorted([web["id"], default])
    for port in plain:
        assert listed[port["id"]]["security_groups"] == [default]
    resp = user.get("/v2.0/ports", params={"security_groups": web["id"]})
    assert resp.status_code == 200, resp.text
    assert {p["id"] for p in resp.json()["ports"]} == {p["id"] for p in in_web}
    resp = user.get("/v2.0/ports", params={"security_groups": default,
                                           "network_id": net["id"]})
    assert len(resp.json()["ports"]) == 6
    resp = user.get("/v2.0/ports", params={"security_groups": "no\x00such"})
    assert resp.status_code == 400, resp.text
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert "port-security-groups-filtering" in aliases


def test_port_security_and_groups(user, net):
    web = make_group(user, name="web")
    resp = user.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "port_security_enabled": False,
        "security_groups": [web["id"]]}})
    expect_error(resp, 400, "PortSecurityAndIPRequiredForSecurityGroups",
                 "Port security must be enabled and port must have an IP address in order "
                 "to use security groups.")
    open_port = user.port(net["id"], port_security_enabled=False)
    assert open_port["security_groups"] == []
    resp = user.put(f"/v2.0/ports/{open_port['id']}",
                    json={"port": {"security_groups": [web["id"]]}})
    expect_error(resp, 400, "PortSecurityAndIPRequiredForSecurityGroups")
    resp = user.put(f"/v2.0/ports/{open_port['id']}", json={"port": {
        "port_security_enabled": True, "security_groups": [web["id"]]}})
    assert resp.status_code == 200 and resp.json()["port"]["security_groups"] == [web["id"]]

    secured = user.port(net["id"])
    url = f"/v2.0/ports/{secured['id']}"
    resp = user.put(url, json={"port": {"port_security_enabled": False}})
    expect_error(resp, 409, "PortSecurityPortHasSecurityGroup",
                 "Port has security group associated. Cannot disable port security or IP "
                 "address until security group is removed.")
    assert user.show("ports", secured["id"])["port_security_enabled"] is True
    resp = user.put(url, json={"port": {"port_security_enabled": False,
                                        "security_groups": []}})
    assert resp.status_code == 200, resp.text
    assert (resp.json()["port"]["port_security_enabled"],
            resp.json()["port"]["security_groups"]) == (False, [])


def test_ports_of_an_open_network_get_no_group(user):
    network = user.network(port_security_enabled=False)
    assert user.port(network["id"])["security_groups"] == []
    secured = user.port(network["id"], port_security_enabled=True)
    assert len(secured["security_groups"]) == 1


def test_default_statefulness_of_new_groups(server, project, other_project):
    """security-groups-default-statefulness: a project's setting, else the
    system-wide one, else true, for a group asking none (its default group too)."""
    admin = server.client(project, roles=("admin",))
    manager = server.client(project, roles=("manager", "member"))
    member = server.client(project, roles=("member",))
    path = "/v2.0/security-groups-default-statefulness"
    key = "security_groups_default_statefulness"
    resp = admin.post(path, json={key: {"project_id": None, "stateful": False}})
    assert resp.status_code == 201, resp.text
    everywhere = resp.json()[key]
    try:
        assert everywhere["project_id"] is None and everywhere["stateful"] is False
        fresh = server.client(other_project, roles=("member",))
        groups = fresh.get("/v2.0/security-groups").json()["security_groups"]
        assert [g["stateful"] for g in groups if g["name"] == "default"] == [False]
        made = fresh.post("/v2.0/security-groups", json={"security_group": {"name": "a"}})
        assert made.json()["security_group"]["stateful"] is False
        asked = fresh.post("/v2.0/security-groups", json={"security_group": {
            "name": "b", "stateful": True}})
        assert asked.json()["security_group"]["stateful"] is True
        # the project's own setting wins; its manager's to make, not a member's
        resp = member.post(path, json={key: {"project_id": project, "stateful": True}})
        assert resp.status_code == 403, resp.text
        resp = manager.post(path, json={key: {"project_id": project, "stateful": True}})
        assert resp.status_code == 201, resp.text
        mine = resp.json()[key]
        made = member.post("/v2.0/security-groups", json={"security_group": {"name": "c"}})
        assert made.json()["security_group"]["stateful"] is True
        again = admin.post(path, json={key: {"project_id": project, "stateful": False}})
        expect_error(again, 409, "SecurityGroupDefaultStatefulnessAlreadyExists")
        listed = member.get(path).json()[key]
        assert [item["id"] for item in listed] == [mine["id"]]  # the system-wide: an admin's
        assert member.get(f"{path}/{everywhere['id']}").status_code == 404
        resp = manager.put(f"{path}/{mine['id']}", json={key: {"stateful": False}})
        assert resp.status_code == 200 and resp.json()[key]["stateful"] is False
        assert admin.get(f"{path}/{mine['id']}").json()[key]["stateful"] is False
        assert manager.delete(f"{path}/{mine['id']}").status_code == 204
        assert admin.get(f"{path}/{mine['id']}").status_code == 404
    finally:
        admin.delete(f"{path}/{everywhere['id']}")
    made = member.post("/v2.0/security-groups", json={"security_group": {"name": "d"}})
    assert made.json()["security_group"]["stateful"] is True
