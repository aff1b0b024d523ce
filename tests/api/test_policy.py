"""Who may see and change what, with identities from trusted headers."""

from __future__ import annotations

import uuid

import pytest

from tests.harness import ApiClient, error_of

NOT_FOUND = {"networks": ("NetworkNotFound", "Network {} could not be found."),
             "subnets": ("SubnetNotFound", "Subnet {} could not be found."),
             "ports": ("PortNotFound", "Port {} could not be found."),
             "subnetpools": ("SubnetPoolNotFound", "Subnet pool {} could not be found.")}


def forbidden(resp, action: str) -> None:
    assert resp.status_code == 403, resp.text
    assert error_of(resp) == {"type": "PolicyNotAuthorized", "detail": "",
                              "message": f"{action} is disallowed by policy"}


def listed_ids(client: ApiClient, collection: str, **params) -> set[str]:
    resp = client.get(f"/v2.0/{collection}", params=params)
    assert resp.status_code == 200, resp.text
    return {item["id"] for item in resp.json()[collection]}


@pytest.fixture
def theirs(other: ApiClient) -> dict[str, dict]:
    """One private resource of each kind in the other project."""
    net = other.network(name="private")
    return {"networks": net, "subnets": other.subnet(net["id"], "10.70.0.0/24"),
            "ports": other.port(net["id"]),
            "subnetpools": other.create("subnetpools", name="private",
                                        prefixes=["10.71.0.0/16"])}


@pytest.mark.parametrize("collection", ["networks", "subnets", "ports", "subnetpools"])
def test_other_projects_resources_are_not_found(user, other, theirs, collection):
    item = theirs[collection]
    url = f"/v2.0/{collection}/{item['id']}"
    type_, template = NOT_FOUND[collection]
    resp = user.get(url)
    assert resp.status_code == 404
    assert error_of(resp) == {"type": type_, "message": template.format(item["id"]),
                              "detail": ""}
    assert user.put(url, json={collection[:-1]: {"name": "mine now"}}).status_code == 404
    assert user.delete(url).status_code == 404
    assert item["id"] not in listed_ids(user, collection)
    assert item["id"] not in listed_ids(user, collection, id=item["id"])
    assert other.show(collection, item["id"])["name"] == item["name"]  # untouched


def test_other_projects_network_takes_no_ports_or_subnets(user, theirs):
    net_id = theirs["networks"]["id"]
    resp = user.post("/v2.0/ports", json={"port": {"network_id": net_id}})
    assert resp.status_code == 404 and error_of(resp)["type"] == "NetworkNotFound"
    # Neutron answers a create it refuses by policy with 403 (its policy hook says
    # a POST gives nothing away)
    forbidden(user.post("/v2.0/subnets", json={"subnet": {
        "network_id": net_id, "ip_version": 4, "cidr": "10.72.0.0/24"}}), "create_subnet")


def test_admin_sees_and_changes_everything(admin, other_project, theirs):
    for collection, item in theirs.items():
        assert admin.show(collection, item["id"])["project_id"] == other_project
        assert item["id"] in listed_ids(admin, collection, project_id=other_project)
        resp = admin.put(f"/v2.0/{collection}/{item['id']}",
                         json={collection[:-1]: {"description": "by admin"}})
        assert resp.status_code == 200, resp.text
    assert admin.delete(f"/v2.0/ports/{theirs['ports']['id']}").status_code == 204


def test_shared_network_is_visible_but_not_changeable(admin, user, other, other_project):
    shared = other.network(name="private")
    assert admin.put(f"/v2.0/networks/{shared['id']}",
                     json={"network": {"shared": True}}).status_code == 200
    subnet = other.subnet(shared["id"], "10.73.0.0/24")
    assert user.show("networks", shared["id"])["shared"] is True
    assert shared["id"] in listed_ids(user, "networks", shared="true")
    assert user.show("subnets", subnet["id"])["network_id"] == shared["id"]
    forbidden(user.put(f"/v2.0/networks/{shared['id']}", json={"network": {"name": "x"}}),
              "update_network")
    forbidden(user.delete(f"/v2.0/networks/{shared['id']}"), "delete_network")
    forbidden(user.put(f"/v2.0/subnets/{subnet['id']}", json={"subnet": {"name": "x"}}),
              "update_subnet")
    forbidden(user.delete(f"/v2.0/subnets/{subnet['id']}"), "delete_subnet")
    forbidden(user.post("/v2.0/subnets", json={"subnet": {
        "network_id": shared["id"], "ip_version": 4, "cidr": "10.74.0.0/24"}}), "create_subnet")
    assert other.show("networks", shared["id"])["name"] == "private"


def test_ports_on_a_shared_network(admin, user, other):
    net = other.network()
    admin.put(f"/v2.0/networks/{net['id']}", json={"network": {"shared": True}})
    other.subnet(net["id"], "10.75.0.0/24")
    mine = user.port(net["id"])
    assert mine["project_id"] == user.project_id
    # the network's owner sees and may delete ports others put on its network
    assert mine["id"] in listed_ids(other, "ports", network_id=net["id"])
    # the port's owner does not see the network owner's ports
    theirs = other.port(net["id"])
    assert listed_ids(user, "ports", network_id=net["id"]) == {mine["id"]}
    assert user.get(f"/v2.0/ports/{theirs['id']}").status_code == 404
    # a member may not pose as a network service on someone else's network
    forbidden(user.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                      "device_owner": "network:dhcp"}}),
              "create_port:device_owner")
    forbidden(user.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "fixed_ips": [{"ip_address": "10.75.0.50"}]}}),
        "create_port:fixed_ips:ip_address")
    forbidden(user.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "mac_address": "fa:16:3e:12:34:56"}}),
        "create_port:mac_address")
    assert other.delete(f"/v2.0/ports/{mine['id']}").status_code == 204


def test_shared_subnetpool_is_visible_but_not_changeable(admin, user, other_project):
    pool = admin.create("subnetpools", name="common", prefixes=["10.76.0.0/16"],
                        shared=True, project_id=other_project)
    assert user.show("subnetpools", pool["id"])["shared"] is True
    forbidden(user.put(f"/v2.0/subnetpools/{pool['id']}",
                       json={"subnetpool": {"name": "mine"}}), "update_subnetpool")
    forbidden(user.delete(f"/v2.0/subnetpools/{pool['id']}"), "delete_subnetpool")


@pytest.mark.parametrize("collection,body,action", [
    ("networks", {"shared": True}, "create_network:shared"),
    ("networks", {"router:external": True}, "create_network:router:external"),
    ("subnetpools", {"name": "s", "prefixes": ["10.0.0.0/8"], "shared": True},
     "create_subnetpool:shared"),
    ("subnetpools", {"name": "s", "prefixes": ["10.0.0.0/8"], "is_default": True},
     "create_subnetpool:is_default"),
])
def test_admin_only_attributes_on_create(user, project, collection, body, action):
    forbidden(user.post(f"/v2.0/{collection}", json={collection[:-1]: body}), action)
    assert listed_ids(user, collection, project_id=project) == set()


def test_explicit_defaults_of_admin_only_attributes_are_allowed(user):
    net = user.network(shared=False, **{"router:external": False})
    assert (net["shared"], net["router:external"]) == (False, False)
    pool = user.create("subnetpools", name="d", prefixes=["10.0.0.0/8"], shared=False,
                       is_default=False)
    assert pool["shared"] is False


def test_admin_only_attributes_on_update(user):
    net = user.network()
    forbidden(user.put(f"/v2.0/networks/{net['id']}", json={"network": {"shared": True}}),
              "update_network:shared")
    forbidden(user.put(f"/v2.0/networks/{net['id']}",
                       json={"network": {"router:external": True}}),
              "update_network:router:external")
    port = user.port(net["id"])
    forbidden(user.put(f"/v2.0/ports/{port['id']}",
                       json={"port": {"mac_address": "fa:16:3e:aa:bb:cc"}}),
              "update_port:mac_address")
    assert user.show("networks", net["id"])["shared"] is False


def test_admin_sets_admin_only_attributes(admin, other_project):
    net = admin.network(shared=True, project_id=other_project)
    assert net["shared"] is True
    resp = admin.put(f"/v2.0/networks/{net['id']}", json={"network": {"router:external": True}})
    assert resp.status_code == 200 and resp.json()["network"]["router:external"] is True


@pytest.mark.parametrize("key", ["project_id", "tenant_id"])
def test_member_cannot_create_in_another_project(user, project, key):
    for collection, body in (("networks", {}),
                             ("subnetpools", {"name": "x", "prefixes": ["10.0.0.0/8"]})):
        resp = user.post(f"/v2.0/{collection}",
                         json={collection[:-1]: {**body, key: uuid.uuid4().hex}})
        assert resp.status_code == 400
        assert error_of(resp) == {
            "type": "HTTPBadRequest", "detail": "",
            "message": "Specifying 'project_id' other than the authenticated project in "
                       "request is not allowed for the current user."}
    net = user.network(project_id=project)  # naming one's own project is fine
    assert net["tenant_id"] == project


def test_admin_creates_in_another_project(admin, user, other_project):
    net = admin.network(tenant_id=other_project)
    assert (net["project_id"], net["tenant_id"]) == (other_project, other_project)
    assert user.get(f"/v2.0/networks/{net['id']}").status_code == 404


def test_reader_reads_but_does_not_write(server, user, project):
    net = user.network()
    port = user.port(net["id"])
    reader = server.client(project, roles=("reader",))
    assert reader.show("networks", net["id"])["id"] == net["id"]
    assert listed_ids(reader, "ports", network_id=net["id"]) == {port["id"]}
    forbidden(reader.post("/v2.0/networks", json={"network": {}}), "create_network")
    forbidden(reader.put(f"/v2.0/networks/{net['id']}", json={"network": {"name": "r"}}),
              "update_network")
    forbidden(reader.delete(f"/v2.0/ports/{port['id']}"), "delete_port")
    forbidden(reader.delete(f"/v2.0/networks/{net['id']}"), "delete_network")
    forbidden(reader.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.79.0.0/24"}}), "create_subnet")
    assert user.show("networks", net["id"])["name"] == ""


def test_reader_and_member_together_may_write(server, project):
    both = server.client(project, roles=("reader", "member"))
    assert both.post("/v2.0/networks", json={"network": {}}).status_code == 201


def test_missing_identity_is_unauthorized(server):
    anonymous = server.client(None, roles=())
    for resp in (anonymous.get("/v2.0/networks"),
                 anonymous.post("/v2.0/networks", json={"network": {}})):
        assert resp.status_code == 401
        assert error_of(resp)["type"] == "HTTPUnauthorized"


def test_identity_without_a_user_is_unauthorized(server, project):
    """The proxy that sets the headers authenticated nobody: keystone's middleware
    would have answered 401, whatever project and roles are claimed."""
    for roles in (("member",), ("admin",)):
        nobody = ApiClient(server.url, {"X-Project-Id": project, "X-Roles": ",".join(roles)})
        resp = nobody.get("/v2.0/networks")
        assert resp.status_code == 401, resp.text
        assert error_of(resp)["type"] == "HTTPUnauthorized"
        assert resp.headers["www-authenticate"]


def test_roles_are_case_insensitive_and_admin_is_admin(server, other):
    theirs = other.network()
    admin = server.client(uuid.uuid4().hex, roles=("Admin",))
    assert admin.get(f"/v2.0/networks/{theirs['id']}").status_code == 200
