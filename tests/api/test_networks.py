"""Networks over HTTP: defaults, updates, revisions, in-use, visibility and policy."""

import re

from tests.harness import expect_error

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
NETWORK_KEYS = {
    "id", "name", "tenant_id", "project_id", "admin_state_up", "mtu", "status", "subnets",
    "shared", "router:external", "description", "tags", "created_at", "updated_at",
    "revision_number", "port_security_enabled", "availability_zone_hints",
    "availability_zones", "l2_adjacency", "ipv4_address_scope", "ipv6_address_scope",
}


def _url(net_id: str) -> str:
    return f"/v2.0/networks/{net_id}"


def test_create_with_defaults_shows_every_attribute(user):
    resp = user.post("/v2.0/networks", json={"network": {}})
    assert resp.status_code == 201, resp.text
    net = resp.json()["network"]
    assert set(net) == NETWORK_KEYS
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                        net["id"])
    assert net["name"] == "" and net["description"] == ""
    assert net["tenant_id"] == net["project_id"] == user.project_id
    assert net["admin_state_up"] is True
    assert net["mtu"] == 1500
    assert net["status"] == "ACTIVE"
    assert net["subnets"] == [] and net["tags"] == []
    assert net["shared"] is False and net["router:external"] is False
    assert net["revision_number"] == 1
    assert TIMESTAMP.match(net["created_at"]) and TIMESTAMP.match(net["updated_at"])
    assert net["created_at"] == net["updated_at"]
    assert user.show("networks", net["id"]) == net


def test_create_with_attributes(user):
    net = user.network(name="blue", description="d", admin_state_up=False)
    assert (net["name"], net["description"], net["admin_state_up"]) == ("blue", "d", False)
    listed = user.get("/v2.0/networks", params={"name": "blue"}).json()["networks"]
    assert [n["id"] for n in listed] == [net["id"]]


def test_update_name_admin_state_and_revision(user):
    net = user.network(name="before")
    resp = user.put(_url(net["id"]), json={"network": {"name": "after"}})
    assert resp.status_code == 200, resp.text
    updated = resp.json()["network"]
    assert updated["name"] == "after"
    assert updated["revision_number"] == 2
    assert updated["created_at"] == net["created_at"]
    assert updated["updated_at"] >= net["updated_at"]
    updated = user.put(_url(net["id"]),
                       json={"network": {"admin_state_up": False}}).json()["network"]
    assert updated["admin_state_up"] is False and updated["name"] == "after"
    assert updated["revision_number"] == 3
    assert user.show("networks", net["id"])["revision_number"] == 3


def test_update_read_only_attribute_rejected(user):
    net = user.network()
    resp = user.put(_url(net["id"]), json={"network": {"status": "DOWN"}})
    expect_error(resp, 400, "HTTPBadRequest", "Cannot update read-only attribute status")


def test_mtu_is_writable_up_to_what_the_segments_carry(user):
    """net-mtu-writable: an owner may lower the MTU, never raise it past the maximum."""
    net = user.network(mtu=1400)
    assert net["mtu"] == 1400
    resp = user.put(_url(net["id"]), json={"network": {"mtu": 1300}})
    assert resp.status_code == 200 and resp.json()["network"]["mtu"] == 1300
    resp = user.put(_url(net["id"]), json={"network": {"mtu": 9000}})
    expect_error(resp, 400, "InvalidInput",
           "Invalid input for operation: Requested MTU is too big, maximum is 1500.")
    expect_error(user.post("/v2.0/networks", json={"network": {"mtu": -1}}), 400,
                 "HTTPBadRequest", "Invalid input for mtu. Reason: '-1' should be non-negative.")


def _mtu_conflict(resp, net_id: str, minimum: int) -> None:
    expect_error(resp, 409, "NetworkMTUSubnetConflict",
                 f"MTU of {net_id} is not valid, subnet requires a minimum of {minimum}")


def test_small_mtus_are_refused_by_the_subnets(user):
    """As Neutron: any MTU is taken; an IPv4 subnet needs 68, an IPv6 one 1280."""
    tiny = user.network(mtu=67)
    assert tiny["mtu"] == 67
    _mtu_conflict(user.post("/v2.0/subnets", json={"subnet": {
        "network_id": tiny["id"], "ip_version": 4, "cidr": "10.0.0.0/24"}}), tiny["id"], 68)
    short = user.network(mtu=1279)
    _mtu_conflict(user.post("/v2.0/subnets", json={"subnet": {
        "network_id": short["id"], "ip_version": 6, "cidr": "2001:db8::/64"}}),
        short["id"], 1280)
    user.subnet(short["id"], "10.0.0.0/24")  # IPv4 is fine at 1279
    _mtu_conflict(user.put(_url(short["id"]), json={"network": {"mtu": 67}}), short["id"], 68)
    _mtu_conflict(user.put(_url(short["id"]), json={"network": {"mtu": 0}}), short["id"], 68)
    assert user.put(_url(short["id"]), json={"network": {"mtu": 68}}).status_code == 200
    v6 = user.network()
    user.subnet(v6["id"], "2001:db8:1::/64")
    _mtu_conflict(user.put(_url(v6["id"]), json={"network": {"mtu": 1279}}), v6["id"], 1280)
    resp = user.put(_url(v6["id"]), json={"network": {"mtu": 1280}})
    assert resp.status_code == 200 and resp.json()["network"]["mtu"] == 1280
    assert user.show("networks", v6["id"])["mtu"] == 1280
    empty = user.network(mtu=0)  # 0: the most the segments carry
    assert empty["mtu"] == 1500
    resp = user.put(_url(empty["id"]), json={"network": {"mtu": 1}})
    assert resp.status_code == 200 and resp.json()["network"]["mtu"] == 1
    resp = user.put(_url(empty["id"]), json={"network": {"mtu": 0}})
    assert resp.status_code == 200 and resp.json()["network"]["mtu"] == 1500


def test_admin_updates_shared(admin, other):
    net = admin.network(name="to-share")
    assert other.get(_url(net["id"])).status_code == 404
    updated = admin.put(_url(net["id"]), json={"network": {"shared": True}}).json()["network"]
    assert updated["shared"] is True and updated["revision_number"] == 2
    assert other.show("networks", net["id"])["shared"] is True
    updated = admin.put(_url(net["id"]), json={"network": {"shared": False}}).json()["network"]
    assert updated["shared"] is False
    assert other.get(_url(net["id"])).status_code == 404


def test_unshare_refused_while_another_project_has_ports(admin, other):
    net = admin.network(shared=True)
    port = other.port(net["id"])
    resp = admin.put(_url(net["id"]), json={"network": {"shared": False}})
    expect_error(resp, 409, "InvalidSharedSetting",
           f"Unable to reconfigure sharing settings for network {net['id']}. "
           "Multiple projects are using it.")
    assert admin.show("networks", net["id"])["shared"] is True
    assert other.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    resp = admin.put(_url(net["id"]), json={"network": {"shared": False}})
    assert resp.status_code == 200, resp.text


def test_revision_bumps_on_subnet_create_and_delete(user):
    net = user.network()
    subnet = user.subnet(net["id"], "10.10.0.0/24")
    shown = user.show("networks", net["id"])
    assert shown["revision_number"] == 2
    assert shown["subnets"] == [subnet["id"]]
    assert user.delete(f"/v2.0/subnets/{subnet['id']}").status_code == 204
    shown = user.show("networks", net["id"])
    assert shown["revision_number"] == 3
    assert shown["subnets"] == []


def test_delete(user):
    net = user.network()
    user.subnet(net["id"], "10.0.0.0/24")
    resp = user.delete(_url(net["id"]))
    assert resp.status_code == 204 and resp.content == b""
    expect_error(user.get(_url(net["id"])), 404, "NetworkNotFound",
           f"Network {net['id']} could not be found.")
    assert user.get("/v2.0/subnets", params={"network_id": net["id"]}).json()["subnets"] == []
    expect_error(user.delete(_url(net["id"])), 404, "NetworkNotFound")


def test_network_in_use_lists_its_ports(user):
    net = user.network()
    user.subnet(net["id"], "10.0.0.0/24")
    port = user.port(net["id"])
    resp = user.delete(_url(net["id"]))
    expect_error(resp, 409, "NetworkInUse",
           f"Unable to complete operation on network {net['id']}. There are one or more "
           "ports still in use on the network, id for these ports is: "
           f"{port['id']}.")
    second = user.port(net["id"])
    message = expect_error(user.delete(_url(net["id"])), 409, "NetworkInUse")["message"]
    listed = message.rsplit(": ", 1)[1].rstrip(".").split(",")
    assert sorted(listed) == sorted([port["id"], second["id"]])
    assert user.show("networks", net["id"])["id"] == net["id"]
    for p in (port, second):
        assert user.delete(f"/v2.0/ports/{p['id']}").status_code == 204
    assert user.delete(_url(net["id"])).status_code == 204


def test_dhcp_port_does_not_block_delete(admin):
    net = admin.network()
    admin.subnet(net["id"], "10.0.0.0/24")
    dhcp = admin.port(net["id"], device_owner="network:dhcp")
    assert dhcp["fixed_ips"]
    assert admin.delete(_url(net["id"])).status_code == 204
    expect_error(admin.get(f"/v2.0/ports/{dhcp['id']}"), 404, "PortNotFound")


def test_unknown_network_is_404(user):
    missing = "9e5b0b2b-7a4c-4bb4-9d0a-0cbd0f6c3f11"
    expect_error(user.get(_url(missing)), 404, "NetworkNotFound",
           f"Network {missing} could not be found.")
    expect_error(user.put(_url(missing), json={"network": {"name": "x"}}), 404, "NetworkNotFound")
    expect_error(user.delete(_url(missing)), 404, "NetworkNotFound")
    # Neutron does not check the form of ids in the path
    expect_error(user.get(_url("not-a-uuid")), 404, "NetworkNotFound",
           "Network not-a-uuid could not be found.")


def test_non_admin_cannot_set_shared_or_external(user):
    resp = user.post("/v2.0/networks", json={"network": {"shared": True}})
    expect_error(resp, 403, "PolicyNotAuthorized", "create_network:shared is disallowed by policy")
    resp = user.post("/v2.0/networks", json={"network": {"router:external": True}})
    expect_error(resp, 403, "PolicyNotAuthorized",
           "create_network:router:external is disallowed by policy")
    net = user.network()
    resp = user.put(_url(net["id"]), json={"network": {"shared": True}})
    expect_error(resp, 403, "PolicyNotAuthorized", "update_network:shared is disallowed by policy")
    resp = user.put(_url(net["id"]), json={"network": {"router:external": True}})
    expect_error(resp, 403, "PolicyNotAuthorized",
           "update_network:router:external is disallowed by policy")
    # repeating the current value is not a change and needs no right
    resp = user.put(_url(net["id"]), json={"network": {"shared": False}})
    assert resp.status_code == 200, resp.text
    assert user.show("networks", net["id"])["shared"] is False


def test_other_projects_private_network_is_404(user, other):
    net = user.network(name="private")
    expect_error(other.get(_url(net["id"])), 404, "NetworkNotFound")
    expect_error(other.put(_url(net["id"]), json={"network": {"name": "x"}}), 404,
                 "NetworkNotFound")
    expect_error(other.delete(_url(net["id"])), 404, "NetworkNotFound")
    assert net["id"] not in {n["id"] for n in other.get("/v2.0/networks").json()["networks"]}
    assert user.show("networks", net["id"])["name"] == "private"


def test_shared_and_external_visible_to_other_projects(admin, other):
    shared = admin.network(shared=True)
    external = admin.network(**{"router:external": True})
    private = admin.network()
    assert other.show("networks", shared["id"])["shared"] is True
    assert other.show("networks", external["id"])["router:external"] is True
    seen = {n["id"] for n in other.get("/v2.0/networks").json()["networks"]}
    assert {shared["id"], external["id"]} <= seen
    assert private["id"] not in seen
    filtered = other.get("/v2.0/networks", params={"shared": "true"}).json()["networks"]
    assert shared["id"] in {n["id"] for n in filtered}
    assert all(n["shared"] for n in filtered)


def test_other_project_cannot_change_shared_network(admin, other):
    net = admin.network(shared=True, name="common")
    resp = other.put(_url(net["id"]), json={"network": {"name": "mine"}})
    expect_error(resp, 403, "PolicyNotAuthorized", "update_network is disallowed by policy")
    resp = other.delete(_url(net["id"]))
    expect_error(resp, 403, "PolicyNotAuthorized", "delete_network is disallowed by policy")
    assert admin.show("networks", net["id"])["name"] == "common"


def test_admin_creates_for_another_project(admin, other):
    net = admin.network(project_id=other.project_id)
    assert net["project_id"] == net["tenant_id"] == other.project_id
    assert other.show("networks", net["id"])["id"] == net["id"]
    resp = other.post("/v2.0/networks", json={"network": {"project_id": admin.project_id}})
    expect_error(resp, 400, "HTTPBadRequest",
           "Specifying 'project_id' other than the authenticated project in request is not "
           "allowed for the current user.")


def test_invalid_admin_state_up(user):
    resp = user.post("/v2.0/networks", json={"network": {"admin_state_up": "maybe"}})
    expect_error(resp, 400, "InvalidInput",
           "Invalid input for operation: 'maybe' cannot be converted to boolean.")
