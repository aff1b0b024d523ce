"""RBAC policies on networks: sharing with chosen projects, and external access."""

from __future__ import annotations

import uuid

import pytest

from tests.harness import ApiClient, Server, expect_error

URL = "/v2.0/rbac-policies"
KEYS = {"id", "project_id", "tenant_id", "object_type", "object_id", "target_tenant",
        "action"}


def post(client: ApiClient, network_id: str, target: str,
         action: str = "access_as_shared", **extra):
    return client.post(URL, json={"rbac_policy": {
        "object_type": "network", "object_id": network_id, "target_tenant": target,
        "action": action, **extra}})


def share(client: ApiClient, network_id: str, target: str,
          action: str = "access_as_shared") -> dict:
    resp = post(client, network_id, target, action)
    assert resp.status_code == 201, resp.text
    return resp.json()["rbac_policy"]


def shown(client: ApiClient, policy_id: str) -> dict:
    resp = client.get(f"{URL}/{policy_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()["rbac_policy"]


def ids(client: ApiClient, collection: str, **params) -> set[str]:
    resp = client.get(f"/v2.0/{collection}", params=params)
    assert resp.status_code == 200, resp.text
    return {item["id"] for item in resp.json()[collection.replace("-", "_")]}


@pytest.fixture
def third(server: Server) -> ApiClient:
    return server.client(uuid.uuid4().hex, roles=("member",))


def test_extension_listed(user):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert "rbac-policies" in aliases


def test_share_with_one_project(user, other, third, other_project):
    net = user.network(name="for-other")
    subnet = user.subnet(net["id"], "10.91.0.0/24")
    expect_error(other.get(f"/v2.0/networks/{net['id']}"), 404, "NetworkNotFound")
    policy = share(user, net["id"], other_project)
    assert set(policy) == KEYS
    assert policy["project_id"] == policy["tenant_id"] == user.project_id
    assert (policy["object_type"], policy["object_id"], policy["target_tenant"],
            policy["action"]) == ("network", net["id"], other_project, "access_as_shared")

    # the target sees it, shared with it; the owner does not see it as shared
    assert other.show("networks", net["id"])["shared"] is True
    assert net["id"] in ids(other, "networks")
    assert net["id"] in ids(other, "networks", shared="true")
    assert net["id"] not in ids(other, "networks", shared="false")
    assert user.show("networks", net["id"])["shared"] is False
    assert net["id"] in ids(user, "networks", shared="false")
    assert other.show("subnets", subnet["id"])["network_id"] == net["id"]
    assert subnet["id"] in ids(other, "subnets")
    assert subnet["id"] in ids(other, "subnets", shared="true")
    assert subnet["id"] in ids(user, "subnets", shared="false")
    port = other.port(net["id"])
    assert port["project_id"] == other.project_id

    # nobody else
    expect_error(third.get(f"/v2.0/networks/{net['id']}"), 404, "NetworkNotFound")
    assert net["id"] not in ids(third, "networks")
    expect_error(third.get(f"/v2.0/subnets/{subnet['id']}"), 404, "SubnetNotFound")
    resp = third.post("/v2.0/ports", json={"port": {"network_id": net["id"]}})
    expect_error(resp, 404, "NetworkNotFound")

    # the entry is the owner's alone
    assert shown(user, policy["id"]) == policy
    assert policy["id"] in ids(user, "rbac-policies", object_id=net["id"])
    message = f"RBAC policy of type network with ID {policy['id']} not found"
    for client in (other, third):
        expect_error(client.get(f"{URL}/{policy['id']}"), 404, "RbacPolicyNotFound", message)
        assert policy["id"] not in ids(client, "rbac-policies")
        expect_error(client.delete(f"{URL}/{policy['id']}"), 404, "RbacPolicyNotFound")

    # removing it while the target has a port, then after
    url = f"{URL}/{policy['id']}"
    in_use = (f"RBAC policy on object {net['id']} cannot be removed because other objects "
              f"depend on it.\nDetails: tenant_id={other_project}")
    expect_error(user.delete(url), 409, "RbacPolicyInUse", in_use)
    resp = user.put(url, json={"rbac_policy": {"target_tenant": third.project_id}})
    expect_error(resp, 409, "RbacPolicyInUse", in_use)
    assert other.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    assert user.delete(url).status_code == 204
    expect_error(other.get(f"/v2.0/networks/{net['id']}"), 404, "NetworkNotFound")
    expect_error(user.get(url), 404, "RbacPolicyNotFound")


def test_filters_and_admin_view(user, admin, other_project):
    net = user.network()
    shared = share(user, net["id"], other_project)
    external = share(user, net["id"], other_project, "access_as_external")
    assert ids(user, "rbac-policies", object_id=net["id"]) == {shared["id"], external["id"]}
    assert ids(user, "rbac-policies", object_id=net["id"],
               action="access_as_external") == {external["id"]}
    assert ids(user, "rbac-policies", object_id=net["id"], object_type="network",
               target_tenant=other_project) == {shared["id"], external["id"]}
    assert ids(user, "rbac-policies", object_id=net["id"], object_type="qos_policy") == set()
    assert {shared["id"], external["id"]} <= ids(admin, "rbac-policies",
                                                 project_id=user.project_id)
    assert shown(admin, shared["id"]) == shared


def test_update_target(user, other, third, other_project):
    net = user.network()
    policy = share(user, net["id"], other_project)
    resp = user.put(f"{URL}/{policy['id']}", json={"rbac_policy": {
        "target_tenant": third.project_id}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["rbac_policy"] == {**policy, "target_tenant": third.project_id}
    expect_error(other.get(f"/v2.0/networks/{net['id']}"), 404, "NetworkNotFound")
    assert third.show("networks", net["id"])["shared"] is True
    for attr, value in (("action", "access_as_external"), ("object_id", str(uuid.uuid4()))):
        resp = user.put(f"{URL}/{policy['id']}", json={"rbac_policy": {attr: value}})
        assert resp.status_code == 400, resp.text


def test_create_refusals(user, other, admin, other_project):
    net = user.network()
    share(user, net["id"], other_project)
    expect_error(post(user, net["id"], other_project), 409, "DuplicateRbacPolicy",
                 "An RBAC policy already exists with those values.")
    expect_error(post(other, net["id"], other_project), 400, "InvalidInput",
                 "Invalid input for operation: Only admins can manipulate policies on "
                 "networks they do not own.")
    missing = str(uuid.uuid4())
    expect_error(post(user, missing, other_project), 404, "NetworkNotFound")
    resp = user.post(URL, json={"rbac_policy": {
        "object_type": "bgpvpn", "object_id": net["id"], "target_tenant": other_project,
        "action": "access_as_shared"}})
    expect_error(resp, 400, "HTTPBadRequest",
                 "Invalid input for object_type. Reason: bgpvpn is not in ['network', "
                 "'security_group', 'subnetpool', 'address_scope', 'address_group', "
                 "'qos_policy'].")
    resp = post(user, net["id"], other_project, action="access_as_owner")
    assert resp.status_code == 400, resp.text
    resp = user.post(URL, json={"rbac_policy": {"object_type": "network",
                                                "object_id": net["id"],
                                                "action": "access_as_shared"}})
    assert resp.status_code == 400, resp.text
    # only admins share with everyone (a policy rule, restrict_wildcard)
    expect_error(post(user, net["id"], "*"), 403, "PolicyNotAuthorized",
                 "create_rbac_policy:target_tenant is disallowed by policy")
    # an admin may share another project's network
    made = share(admin, net["id"], str(uuid.uuid4()))
    assert made["project_id"] == admin.project_id


def test_shared_flag_is_the_wildcard_entry(admin, other, third):
    net = admin.network(shared=True)
    wildcard = [p for p in admin.get(URL, params={"object_id": net["id"]}).json()[
        "rbac_policies"]]
    assert [(p["target_tenant"], p["action"], p["project_id"]) for p in wildcard] == [
        ("*", "access_as_shared", admin.project_id)]
    assert other.show("networks", net["id"])["shared"] is True
    port = other.port(net["id"])
    url = f"/v2.0/networks/{net['id']}"
    expect_error(admin.put(url, json={"network": {"shared": False}}), 409,
                 "InvalidSharedSetting")
    expect_error(admin.delete(f"{URL}/{wildcard[0]['id']}"), 409, "RbacPolicyInUse")
    # a specific entry for the port's project keeps it: then '*' may go
    share(admin, net["id"], other.project_id)
    resp = admin.put(url, json={"network": {"shared": False}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["network"]["shared"] is False
    assert [p["target_tenant"] for p in admin.get(URL, params={
        "object_id": net["id"]}).json()["rbac_policies"]] == [other.project_id]
    assert other.show("networks", net["id"])["shared"] is True
    expect_error(third.get(url), 404, "NetworkNotFound")
    assert other.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    # sharing again through the API sets the flag
    share(admin, net["id"], "*")
    assert admin.show("networks", net["id"])["shared"] is True


def test_network_delete_takes_its_entries(user, other_project):
    net = user.network()
    policy = share(user, net["id"], other_project)
    assert user.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    expect_error(user.get(f"{URL}/{policy['id']}"), 404, "RbacPolicyNotFound")


def test_access_as_external(admin, other, third, server):
    member = server.client(uuid.uuid4().hex, roles=("member",))
    net = admin.network()
    subnet = admin.subnet(net["id"], "198.51.100.0/24")
    assert net["router:external"] is False
    policy = share(admin, net["id"], member.project_id, "access_as_external")
    assert admin.show("networks", net["id"])["router:external"] is True
    seen = member.show("networks", net["id"])
    assert seen["router:external"] is True and seen["shared"] is False
    assert subnet["id"] in ids(member, "subnets")
    expect_error(other.get(f"/v2.0/networks/{net['id']}"), 404, "NetworkNotFound")
    pools = {p["network_id"] for p in other.get("/v2.0/floatingip-pools").json()[
        "floatingip_pools"]}
    assert net["id"] not in pools

    resp = member.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": net["id"]}}})
    assert resp.status_code == 201, resp.text
    router = resp.json()["router"]
    resp = other.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": net["id"]}}})
    expect_error(resp, 404, "NetworkNotFound")
    resp = member.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": net["id"]}})
    assert resp.status_code == 201, resp.text
    fip = resp.json()["floatingip"]
    resp = third.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": net["id"]}})
    expect_error(resp, 404, "NetworkNotFound")

    url = f"{URL}/{policy['id']}"
    # as Neutron: the member's gateway needs the entry, its floating IP does not
    expect_error(admin.delete(url), 409, "RbacPolicyInUse",
                 f"RBAC policy on object {net['id']} cannot be removed because other "
                 "objects depend on it.\nDetails: There are routers attached to this "
                 "network that depend on this policy for access.")
    resp = member.put(f"/v2.0/routers/{router['id']}", json={"router": {
        "external_gateway_info": {}}})
    assert resp.status_code == 200, resp.text
    assert admin.delete(url).status_code == 204
    expect_error(member.get(f"/v2.0/networks/{net['id']}"), 404, "NetworkNotFound")
    # its last external entry gone, the network is internal again, as in Neutron;
    # the floating IP stays
    assert admin.show("networks", net["id"])["router:external"] is False
    assert admin.show("floatingips", fip["id"])["floating_network_id"] == net["id"]


def test_router_external_flag_is_the_wildcard_entry(admin, other):
    net = admin.network(**{"router:external": True})
    admin.subnet(net["id"], "198.51.101.0/24")
    entries = admin.get(URL, params={"object_id": net["id"]}).json()["rbac_policies"]
    assert [(p["target_tenant"], p["action"]) for p in entries] == [
        ("*", "access_as_external")]
    resp = other.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": net["id"]}}})
    assert resp.status_code == 201, resp.text
    router = resp.json()["router"]
    url = f"/v2.0/networks/{net['id']}"
    expect_error(admin.put(url, json={"network": {"router:external": False}}), 409,
                 "ExternalNetworkInUse")
    expect_error(admin.delete(f"{URL}/{entries[0]['id']}"), 409, "RbacPolicyInUse")
    assert other.delete(f"/v2.0/routers/{router['id']}").status_code == 204
    resp = admin.put(url, json={"network": {"router:external": False}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["network"]["router:external"] is False
    assert admin.get(URL, params={"object_id": net["id"]}).json()["rbac_policies"] == []
    expect_error(other.get(url), 404, "NetworkNotFound")


def test_last_external_entry_makes_the_network_internal(admin, other, third):
    """As Neutron: '*' may go while every router with its gateway on the network
    belongs to a project with an entry of its own (floating IPs do not count);
    with the last external entry gone the network is internal again."""
    net = admin.network(**{"router:external": True})
    admin.subnet(net["id"], "198.51.102.0/24")
    [wildcard] = admin.get(URL, params={"object_id": net["id"]}).json()["rbac_policies"]
    resp = other.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": net["id"]}}})
    assert resp.status_code == 201, resp.text
    router = resp.json()["router"]
    resp = third.post("/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": net["id"]}})
    assert resp.status_code == 201, resp.text
    expect_error(admin.delete(f"{URL}/{wildcard['id']}"), 409, "RbacPolicyInUse",
                 f"RBAC policy on object {net['id']} cannot be removed because other "
                 "objects depend on it.\nDetails: There are routers attached to this "
                 "network that depend on this policy for access.")
    own = share(admin, net["id"], other.project_id, "access_as_external")
    assert admin.delete(f"{URL}/{wildcard['id']}").status_code == 204
    assert admin.show("networks", net["id"])["router:external"] is True  # own is left
    expect_error(third.get(f"/v2.0/networks/{net['id']}"), 404, "NetworkNotFound")
    expect_error(admin.delete(f"{URL}/{own['id']}"), 409, "RbacPolicyInUse")
    resp = other.put(f"/v2.0/routers/{router['id']}", json={"router": {
        "external_gateway_info": {}}})
    assert resp.status_code == 200, resp.text
    assert admin.delete(f"{URL}/{own['id']}").status_code == 204
    shown_net = admin.show("networks", net["id"])
    assert shown_net["router:external"] is False
    resp = other.post("/v2.0/routers", json={"router": {
        "external_gateway_info": {"network_id": net["id"]}}})
    expect_error(resp, 404, "NetworkNotFound")


def test_entries_revise_their_network(admin, user, other_project):
    """An entry made, moved or removed is a change of its network, as Neutron's
    revision plugin counts it (turning it external or internal is one more)."""
    net = user.network()

    def revision() -> int:
        return user.show("networks", net["id"])["revision_number"]

    start = revision()
    policy = share(user, net["id"], other_project)
    assert revision() == start + 1
    resp = user.put(f"{URL}/{policy['id']}", json={"rbac_policy": {
        "target_tenant": uuid.uuid4().hex}})
    assert resp.status_code == 200, resp.text
    assert revision() == start + 2
    assert user.delete(f"{URL}/{policy['id']}").status_code == 204
    assert revision() == start + 3
    external = share(admin, net["id"], other_project, "access_as_external")
    assert revision() == start + 5
    assert admin.delete(f"{URL}/{external['id']}").status_code == 204
    assert revision() == start + 7
    assert user.show("networks", net["id"])["router:external"] is False


def test_subnets_of_external_networks(admin, other, third):
    """As Neutron 29 (access_as_external among the actions that open a subnet,
    and the external_network rule of get_subnet): a project an external entry
    names (or '*') sees the network's subnets, listed and one by one; others not."""
    everyone = admin.network(**{"router:external": True})
    open_subnet = admin.subnet(everyone["id"], "198.51.103.0/24")
    for client in (other, third):
        assert open_subnet["id"] in ids(client, "subnets", network_id=everyone["id"])
        assert client.show("subnets", open_subnet["id"])["network_id"] == everyone["id"]
    chosen = admin.network()
    chosen_subnet = admin.subnet(chosen["id"], "198.51.104.0/24")
    share(admin, chosen["id"], other.project_id, "access_as_external")
    assert ids(other, "subnets", network_id=chosen["id"]) == {chosen_subnet["id"]}
    assert other.show("subnets", chosen_subnet["id"])["id"] == chosen_subnet["id"]
    assert ids(third, "subnets", network_id=chosen["id"]) == set()
    expect_error(third.get(f"/v2.0/subnets/{chosen_subnet['id']}"), 404, "SubnetNotFound")
