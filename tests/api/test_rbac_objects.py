"""RBAC entries of security groups, subnet pools, address scopes and address
groups: who sees and uses the object, and when an entry may go."""

from __future__ import annotations

import uuid

from tests.harness import ApiClient, Server, expect_error

URL = "/v2.0/rbac-policies"


def share(client: ApiClient, object_type: str, object_id: str, target: str,
          action: str = "access_as_shared"):
    return client.post(URL, json={"rbac_policy": {
        "object_type": object_type, "object_id": object_id, "target_tenant": target,
        "action": action}})


def shared(client: ApiClient, object_type: str, object_id: str, target: str) -> dict:
    resp = share(client, object_type, object_id, target)
    assert resp.status_code == 201, resp.text
    return resp.json()["rbac_policy"]


def group(client: ApiClient, name: str = "web") -> dict:
    resp = client.post("/v2.0/security-groups", json={"security_group": {"name": name}})
    assert resp.status_code == 201, resp.text
    return resp.json()["security_group"]


def test_a_shared_security_group(user: ApiClient, other: ApiClient, other_project: str):
    sg = group(user)
    url = f"/v2.0/security-groups/{sg['id']}"
    expect_error(other.get(url), 404, "SecurityGroupNotFound")
    net = other.network()
    other.subnet(net["id"], "10.9.0.0/24")
    resp = other.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                    "security_groups": [sg["id"]]}})
    expect_error(resp, 404, "SecurityGroupNotFound")

    entry = shared(user, "security_group", sg["id"], other_project)
    assert entry["object_type"] == "security_group"
    seen = other.get(url).json()["security_group"]
    assert seen["shared"] is True and seen["security_group_rules"]
    assert user.get(url).json()["security_group"]["shared"] is False  # not with '*'
    listed = other.get("/v2.0/security-groups", params={"shared": "true"}).json()
    assert [g["id"] for g in listed["security_groups"]] == [sg["id"]]
    # the other project's port may use it, but not change it
    port = other.port(net["id"], security_groups=[sg["id"]])
    assert port["security_groups"] == [sg["id"]]
    expect_error(other.put(url, json={"security_group": {"name": "mine"}}), 403,
                 "PolicyNotAuthorized")
    # the entry cannot go while that port uses the group
    expect_error(user.delete(f"{URL}/{entry['id']}"), 409, "RbacPolicyInUse",
                 f"RBAC policy on object {sg['id']} cannot be removed because other objects "
                 f"depend on it.\nDetails: project_id={other_project}")
    # nor move to another project; '*' covers it
    third = uuid.uuid4().hex
    resp = user.put(f"{URL}/{entry['id']}", json={"rbac_policy": {"target_tenant": third}})
    expect_error(resp, 409, "RbacPolicyInUse")
    assert other.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    assert user.delete(f"{URL}/{entry['id']}").status_code == 204
    expect_error(other.get(url), 404, "SecurityGroupNotFound")


def test_the_wildcard_and_its_users(admin: ApiClient, user: ApiClient, other: ApiClient,
                                    other_project: str):
    sg = group(user)
    expect_error(share(user, "security_group", sg["id"], "*"), 403, "PolicyNotAuthorized")
    everyone = shared(admin, "security_group", sg["id"], "*")
    assert user.get(f"/v2.0/security-groups/{sg['id']}").json()["security_group"]["shared"]
    net = other.network()
    other.subnet(net["id"], "10.9.1.0/24")
    other.port(net["id"], security_groups=[sg["id"]])
    expect_error(user.delete(f"{URL}/{everyone['id']}"), 409, "RbacPolicyInUse")
    # an entry of the other project's own lets the '*' one go
    own = shared(user, "security_group", sg["id"], other_project)
    assert user.delete(f"{URL}/{everyone['id']}").status_code == 204
    expect_error(user.delete(f"{URL}/{own['id']}"), 409, "RbacPolicyInUse")


def test_refusals(user: ApiClient, other: ApiClient, other_project: str):
    sg = group(user)
    expect_error(share(user, "security_group", sg["id"], other_project,
                       action="access_as_external"), 400, "InvalidActionForType",
                 "Invalid action 'access_as_external' for object type 'security_group'. "
                 "Valid actions: ('access_as_shared',)")
    expect_error(share(user, "security_group", str(uuid.uuid4()), other_project), 404,
                 "SecurityGroupNotFound")
    # a project that cannot see the group is told it is not there
    expect_error(share(other, "security_group", sg["id"], other_project), 404,
                 "SecurityGroupNotFound")
    shared(user, "security_group", sg["id"], other_project)
    expect_error(share(user, "security_group", sg["id"], other_project), 409,
                 "DuplicateRbacPolicy")
    # one that sees it through an entry may not make more
    expect_error(share(other, "security_group", sg["id"], uuid.uuid4().hex), 400,
                 "InvalidInput", "Invalid input for operation: Only admins can manipulate "
                 "policies on objects they do not own.")


def test_a_shared_subnet_pool(user: ApiClient, other: ApiClient, other_project: str):
    n = uuid.uuid4().int % 250
    pool = user.create("subnetpools", name="p", prefixes=[f"10.{n}.0.0/16"],
                       default_prefixlen=24)
    entry = shared(user, "subnetpool", pool["id"], other_project)
    seen = other.get(f"/v2.0/subnetpools/{pool['id']}").json()["subnetpool"]
    assert seen["shared"] is True
    net = other.network()
    other.create("subnets", network_id=net["id"], ip_version=4, subnetpool_id=pool["id"])
    expect_error(user.delete(f"{URL}/{entry['id']}"), 409, "RbacPolicyInUse")
    # a pool in a scope goes only where the scope goes
    scope = user.post("/v2.0/address-scopes", json={"address_scope": {
        "ip_version": 4}}).json()["address_scope"]
    scoped = user.create("subnetpools", name="s", prefixes=[f"10.{n}.0.0/16"],
                         address_scope_id=scope["id"])
    expect_error(share(user, "subnetpool", scoped["id"], other_project), 409,
                 "RbacPolicyInitError",
                 f"Failed to create RBAC policy on object {scoped['id']} because target "
                 "project doesn't have access to associated address scope.")
    shared(user, "address_scope", scope["id"], other_project)
    shared(user, "subnetpool", scoped["id"], other_project)


def test_a_shared_address_group(user: ApiClient, other: ApiClient, other_project: str):
    resp = user.post("/v2.0/address-groups", json={"address_group": {
        "name": "office", "addresses": ["192.0.2.0/24"]}})
    ag = resp.json()["address_group"]
    theirs = group(other)
    rule = {"security_group_id": theirs["id"], "direction": "ingress",
            "remote_address_group_id": ag["id"]}
    expect_error(other.post("/v2.0/security-group-rules",
                            json={"security_group_rule": rule}), 404, "AddressGroupNotFound")
    entry = shared(user, "address_group", ag["id"], other_project)
    assert other.get(f"/v2.0/address-groups/{ag['id']}").status_code == 200
    resp = other.post("/v2.0/security-group-rules", json={"security_group_rule": rule})
    assert resp.status_code == 201, resp.text
    expect_error(user.delete(f"{URL}/{entry['id']}"), 409, "RbacPolicyInUse")
    # a deleted object takes its entries with it
    made = user.post("/v2.0/address-groups", json={"address_group": {"name": "x"}})
    spare = made.json()["address_group"]
    gone = shared(user, "address_group", spare["id"], other_project)
    assert user.delete(f"/v2.0/address-groups/{spare['id']}").status_code == 204
    expect_error(user.get(f"{URL}/{gone['id']}"), 404, "RbacPolicyNotFound")


def test_one_collection_of_every_type(server: Server, user: ApiClient, other_project: str):
    net = user.network()
    sg = group(user)
    made = [shared(user, "network", net["id"], other_project),
            shared(user, "security_group", sg["id"], other_project)]
    resp = user.get(URL, params={"sort_key": "object_type", "sort_dir": "asc"})
    listed = resp.json()["rbac_policies"]
    assert [e["id"] for e in listed] == [e["id"] for e in made]
    page = user.get(URL, params={"limit": 1, "sort_key": "object_type",
                                 "sort_dir": "asc"}).json()
    assert [e["object_type"] for e in page["rbac_policies"]] == ["network"]
    after = user.get(URL, params={"limit": 1, "sort_key": "object_type", "sort_dir": "asc",
                                  "marker": page["rbac_policies"][0]["id"]}).json()
    assert [e["object_type"] for e in after["rbac_policies"]] == ["security_group"]
    by_type = user.get(URL, params={"object_type": "security_group"}).json()
    assert [e["id"] for e in by_type["rbac_policies"]] == [made[1]["id"]]
    # another project does not see them, and their 404 names their type
    stranger = server.client(uuid.uuid4().hex)
    expect_error(stranger.get(f"{URL}/{made[1]['id']}"), 404, "RbacPolicyNotFound",
                 f"RBAC policy of type security_group with ID {made[1]['id']} not found")
    assert stranger.get(URL).json()["rbac_policies"] == []
