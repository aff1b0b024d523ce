"""Address groups and security group rules that name them, through HTTP."""

from __future__ import annotations

import uuid

from tests.harness import ApiClient, Server, expect_error

KEYS = {"id", "name", "description", "project_id", "tenant_id", "addresses", "created_at",
        "updated_at", "revision_number"}


def make(client: ApiClient, **attrs) -> dict:
    resp = client.post("/v2.0/address-groups", json={"address_group": attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()["address_group"]


def change(client: ApiClient, group: dict, action: str, addresses):
    return client.put(f"/v2.0/address-groups/{group['id']}/{action}",
                      json={"address_group": {"addresses": addresses}})


def show(client: ApiClient, group_id: str) -> dict:
    resp = client.get(f"/v2.0/address-groups/{group_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()["address_group"]


def not_found(resp, group_id: str) -> None:
    expect_error(resp, 404, "AddressGroupNotFound",
                 f"Address group {group_id} could not be found.")


def test_create_show_list_update_delete(user, project):
    made = make(user, name="office", description="desks",
                addresses=["10.1.0.5/24", "192.168.0.1/32", "2001:DB8::1/64", "10.1.0.9/24"])
    assert set(made) == KEYS
    assert (made["name"], made["description"], made["project_id"], made["tenant_id"]) == (
        "office", "desks", project, project)
    assert made["addresses"] == ["10.1.0.0/24", "192.168.0.1/32", "2001:db8::/64"]
    assert show(user, made["id"]) == made
    listed = user.get("/v2.0/address-groups", params={"name": "office"}).json()
    assert listed["address_groups"] == [made]
    url = f"/v2.0/address-groups/{made['id']}"
    resp = user.put(url, json={"address_group": {"name": "hq", "description": ""}})
    assert resp.status_code == 200, resp.text
    assert (resp.json()["address_group"]["name"], resp.json()["address_group"]["description"]
            ) == ("hq", "")
    resp = user.put(url, json={"address_group": {"addresses": []}})
    expect_error(resp, 400, "HTTPBadRequest", "Cannot update read-only attribute addresses")
    assert user.delete(url).status_code == 204
    not_found(user.get(url), made["id"])
    not_found(user.delete(url), made["id"])
    assert make(user)["addresses"] == []


def test_bad_addresses(user):
    for bad in (["10.0.0.0/33"], ["nonsense"], ["10.0.0.0/24", "10.0.0.0/24"], "10.0.0.0/8"):
        resp = user.post("/v2.0/address-groups", json={"address_group": {"addresses": bad}})
        assert resp.status_code == 400, resp.text


def test_add_and_remove_addresses(user):
    group = make(user, addresses=["10.0.0.0/24"])
    resp = change(user, group, "add_addresses", ["10.0.1.7/24", "10.0.2.0/24"])
    assert resp.status_code == 200, resp.text
    added = resp.json()["address_group"]
    assert added["addresses"] == ["10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"]
    assert added["revision_number"] > group["revision_number"]
    resp = change(user, group, "add_addresses", ["10.0.3.0/24", "10.0.0.9/24"])
    expect_error(resp, 400, "AddressesAlreadyExist", "Addresses ['10.0.0.0/24'] already "
                 f"exist in the address group {group['id']}.")
    assert show(user, group["id"])["addresses"] == added["addresses"]  # all or nothing
    resp = change(user, group, "remove_addresses", ["10.0.2.0/24", "10.9.0.0/16"])
    expect_error(resp, 404, "AddressesNotFound", "Addresses ['10.9.0.0/16'] not found in "
                 f"the address group {group['id']}.")
    resp = change(user, group, "remove_addresses", ["10.0.2.1/24", "10.0.0.0/24"])
    assert resp.status_code == 200, resp.text
    assert resp.json()["address_group"]["addresses"] == ["10.0.1.0/24"]
    resp = user.put(f"/v2.0/address-groups/{group['id']}/add_addresses", json={})
    assert resp.status_code == 400
    resp = user.get(f"/v2.0/address-groups/{group['id']}/add_addresses")
    assert resp.status_code == 405


def test_actions_take_bare_addresses_as_host_routes(user):
    """Neutron's add/remove_addresses normalise what they are given: a lone address is
    its /32 (/128), repeats count once; its create takes CIDRs only."""
    group = make(user)
    resp = change(user, group, "add_addresses", ["10.200.200.200", "2001:DB8::7",
                                                 "10.200.200.200"])
    assert resp.status_code == 200, resp.text
    assert resp.json()["address_group"]["addresses"] == ["10.200.200.200/32",
                                                          "2001:db8::7/128"]
    resp = change(user, group, "add_addresses", ["10.200.200.200/32"])
    expect_error(resp, 400, "AddressesAlreadyExist", "Addresses ['10.200.200.200/32'] "
                 f"already exist in the address group {group['id']}.")
    resp = change(user, group, "remove_addresses", ["10.9.9.9"])
    expect_error(resp, 404, "AddressesNotFound", "Addresses ['10.9.9.9/32'] not found in "
                 f"the address group {group['id']}.")
    resp = change(user, group, "remove_addresses", ["10.200.200.200", "2001:db8::7"])
    assert resp.status_code == 200, resp.text
    assert resp.json()["address_group"]["addresses"] == []
    resp = user.post("/v2.0/address-groups",
                     json={"address_group": {"addresses": ["10.200.200.200"]}})
    expect_error(resp, 400, "HTTPBadRequest", "Invalid input for addresses. Reason: "
                 "'10.200.200.200' is not a valid IP subnet.")


def test_other_projects_address_groups(user, other, server: Server, project):
    theirs = make(other, addresses=["10.5.0.0/16"])
    url = f"/v2.0/address-groups/{theirs['id']}"
    not_found(user.get(url), theirs["id"])
    not_found(user.put(url, json={"address_group": {"name": "x"}}), theirs["id"])
    not_found(change(user, theirs, "add_addresses", ["10.6.0.0/16"]), theirs["id"])
    assert theirs["id"] not in {g["id"] for g in user.get("/v2.0/address-groups").json()[
        "address_groups"]}
    mine = make(user)
    reader = server.client(project, roles=("reader",))
    expect_error(change(reader, mine, "add_addresses", ["10.7.0.0/16"]), 403,
                 "PolicyNotAuthorized", "add_addresses is disallowed by policy")
    resp = reader.post("/v2.0/address-groups", json={"address_group": {"name": "r"}})
    expect_error(resp, 403, "PolicyNotAuthorized")


def _group(client: ApiClient) -> dict:
    resp = client.post("/v2.0/security-groups", json={"security_group": {"name": "ag"}})
    assert resp.status_code == 201, resp.text
    return resp.json()["security_group"]


def _rule(client: ApiClient, group_id: str, **attrs):
    return client.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": group_id, "direction": "ingress", **attrs}})


def test_rules_naming_an_address_group(user, other):
    addresses = make(user, addresses=["10.8.0.0/16"])
    group = _group(user)
    resp = _rule(user, group["id"], protocol="tcp", remote_address_group_id=addresses["id"])
    assert resp.status_code == 201, resp.text
    rule = resp.json()["security_group_rule"]
    assert rule["remote_address_group_id"] == addresses["id"]
    assert rule["remote_ip_prefix"] is None and rule["remote_group_id"] is None
    listed = user.get("/v2.0/security-group-rules", params={
        "remote_address_group_id": addresses["id"]}).json()["security_group_rules"]
    assert [r["id"] for r in listed] == [rule["id"]]
    resp = _rule(user, group["id"], protocol="tcp", remote_address_group_id=addresses["id"])
    expect_error(resp, 409, "SecurityGroupRuleExists")
    for extra in ({"remote_ip_prefix": "10.0.0.0/8"}, {"remote_group_id": group["id"]}):
        resp = _rule(user, group["id"], remote_address_group_id=addresses["id"], **extra)
        expect_error(resp, 400, "SecurityGroupMultipleRemoteEntites",
                     "Only one of remote_ip_prefix or remote_group_id or "
                     "remote_address_group_id may be provided.")
    missing = str(uuid.uuid4())
    not_found(_rule(user, group["id"], remote_address_group_id=missing), missing)
    theirs = make(other)
    not_found(_rule(user, group["id"], remote_address_group_id=theirs["id"]), theirs["id"])

    url = f"/v2.0/address-groups/{addresses['id']}"
    expect_error(user.delete(url), 409, "AddressGroupInUse",
                 f"Address group {addresses['id']} is in use on one or more security group "
                 "rules.")
    assert user.delete(f"/v2.0/security-group-rules/{rule['id']}").status_code == 204
    assert user.delete(url).status_code == 204
