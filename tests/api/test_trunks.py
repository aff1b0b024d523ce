"""The trunk extension: /v2.0/trunks with add_subports, remove_subports and
get_subports, Neutron's checks and errors, the subports' device owner, and
trunk-details on the parent port."""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import BACKENDS
from tests.harness import ApiClient, create_database, expect_error, start_server

TRUNKS = "/v2.0/trunks"


@pytest.fixture(scope="module", params=BACKENDS)
def trunk_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"trunks-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=(
        "service_plugins = router,trunk\n"
        "[ml2_type_vlan]\nnetwork_vlan_ranges = physnet1:100:199\n"))
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def project() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def admin(trunk_server, project) -> ApiClient:
    return trunk_server.client(project, roles=("admin", "member"))


@pytest.fixture
def user(trunk_server, project) -> ApiClient:
    return trunk_server.client(project, roles=("member", "reader"))


@pytest.fixture
def net(user) -> dict:
    return user.create("networks", name="trunk-net")


def port(client: ApiClient, network: dict, **attrs) -> dict:
    return client.create("ports", network_id=network["id"], **attrs)


def trunk(client: ApiClient, parent: dict, **attrs) -> dict:
    return client.create("trunks", port_id=parent["id"], **attrs)


def vlan(p: dict, seg_id: int) -> dict:
    return {"port_id": p["id"], "segmentation_type": "vlan", "segmentation_id": seg_id}


def add(client: ApiClient, trunk_id: str, *subports: dict):
    return client.put(f"{TRUNKS}/{trunk_id}/add_subports", json={"sub_ports": list(subports)})


def remove(client: ApiClient, trunk_id: str, *port_ids: str):
    return client.put(f"{TRUNKS}/{trunk_id}/remove_subports",
                      json={"sub_ports": [{"port_id": p} for p in port_ids]})


def test_the_extensions_are_listed(user):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert {"trunk", "trunk-details"} <= aliases


def test_a_trunk_round_trip(user, net, project):
    parent, sub = port(user, net), port(user, net)
    made = trunk(user, parent, name="t1", sub_ports=[vlan(sub, 100)])
    assert made["status"] == "DOWN" and made["admin_state_up"] is True
    assert made["project_id"] == made["tenant_id"] == project
    assert made["sub_ports"] == [vlan(sub, 100)]
    assert made["tags"] == [] and made["revision_number"] == 0
    assert user.show("trunks", made["id"]) == made
    resp = user.get(TRUNKS, params={"port_id": parent["id"]})
    assert resp.status_code == 200, resp.text
    listed = resp.json()["trunks"]
    assert listed == [made]

    resp = user.put(f"{TRUNKS}/{made['id']}", json={"trunk": {"name": "t2",
                                                              "description": "d"}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["trunk"]["name"] == "t2"
    assert resp.json()["trunk"]["revision_number"] == 1
    expect_error(user.put(f"{TRUNKS}/{made['id']}", json={"trunk": {"port_id": sub["id"]}}),
                 400, "HTTPBadRequest")

    # the subport's owner is the trunk
    shown = user.show("ports", sub["id"])
    assert (shown["device_owner"], shown["device_id"]) == ("trunk:subport", made["id"])
    # the parent shows trunk_details, other ports none
    details = user.show("ports", parent["id"])["trunk_details"]
    assert details == {"trunk_id": made["id"], "sub_ports": [
        {**vlan(sub, 100), "mac_address": sub["mac_address"]}]}
    assert "trunk_details" not in shown
    ports = user.get("/v2.0/ports", params={"network_id": net["id"]}).json()["ports"]
    assert [p["id"] for p in ports if "trunk_details" in p] == [parent["id"]]
    fields = user.get("/v2.0/ports", params={"id": parent["id"], "fields": "trunk_details"})
    assert fields.json()["ports"] == [{"trunk_details": details}]

    assert user.put(f"{TRUNKS}/{made['id']}/tags", json={"tags": ["a"]}).status_code == 200
    assert user.show("trunks", made["id"])["tags"] == ["a"]

    assert user.delete(f"{TRUNKS}/{made['id']}").status_code == 204
    expect_error(user.get(f"{TRUNKS}/{made['id']}"), 404, "TrunkNotFound",
                 f"Trunk {made['id']} could not be found.")
    shown = user.show("ports", sub["id"])
    assert (shown["device_owner"], shown["device_id"]) == ("", "")
    assert "trunk_details" not in user.show("ports", parent["id"])


def test_member_actions(user, net):
    parent, a, b = port(user, net), port(user, net), port(user, net)
    made = trunk(user, parent)
    resp = add(user, made["id"], vlan(a, 10), vlan(b, "11"))
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["id"] == made["id"] and body["status"] == "DOWN"
    assert sorted(body["sub_ports"], key=lambda s: s["segmentation_id"]) == [
        vlan(a, 10), vlan(b, 11)]
    got = user.get(f"{TRUNKS}/{made['id']}/get_subports")
    assert got.status_code == 200, got.text
    assert sorted(got.json()["sub_ports"], key=lambda s: s["segmentation_id"]) == [
        vlan(a, 10), vlan(b, 11)]
    assert user.put(f"{TRUNKS}/{made['id']}/get_subports", json={}).status_code == 405
    expect_error(user.get(f"{TRUNKS}/{uuid.uuid4()}/get_subports"), 404, "TrunkNotFound")
    assert user.request("GET", f"{TRUNKS}/{made['id']}/get_subports",
                        content=b"\xff not json").status_code == 200  # a GET's body is ignored
    assert user.get(f"{TRUNKS}/{made['id']}/add_subports").status_code == 405

    expect_error(add(user, made["id"], vlan(a, 12)), 409, "TrunkPortInUse")
    other = port(user, net)
    expect_error(add(user, made["id"], vlan(other, 10)), 409, "DuplicateSubPort")
    expect_error(remove(user, made["id"], other["id"]), 404, "SubPortNotFound")

    resp = remove(user, made["id"], a["id"])
    assert resp.status_code == 200, resp.text
    assert resp.json()["sub_ports"] == [vlan(b, 11)]
    assert user.show("ports", a["id"])["device_owner"] == ""

    # a disabled trunk takes no subport change and is not deleted
    user.put(f"{TRUNKS}/{made['id']}", json={"trunk": {"admin_state_up": False}})
    expect_error(add(user, made["id"], vlan(a, 12)), 409, "TrunkDisabled")
    expect_error(remove(user, made["id"], b["id"]), 409, "TrunkDisabled")
    expect_error(user.delete(f"{TRUNKS}/{made['id']}"), 409, "TrunkDisabled")
    user.put(f"{TRUNKS}/{made['id']}", json={"trunk": {"admin_state_up": True}})
    assert user.delete(f"{TRUNKS}/{made['id']}").status_code == 204


def test_ports_in_trunks(user, net):
    parent, sub = port(user, net), port(user, net)
    made = trunk(user, parent, sub_ports=[vlan(sub, 5)])
    expect_error(user.delete(f"/v2.0/ports/{parent['id']}"), 409, "PortInUseAsTrunkParent",
                 f"Port {parent['id']} is currently a parent port for trunk {made['id']}.")
    expect_error(user.delete(f"/v2.0/ports/{sub['id']}"), 409, "PortInUseAsSubPort")
    expect_error(user.post(TRUNKS, json={"trunk": {"port_id": parent["id"]}}), 409,
                 "ParentPortInUse")
    expect_error(user.post(TRUNKS, json={"trunk": {"port_id": sub["id"]}}), 409,
                 "TrunkPortInUse")
    lone = port(user, net)
    expect_error(user.post(TRUNKS, json={"trunk": {"port_id": lone["id"], "sub_ports": [
        vlan(lone, 7)]}}), 409, "ParentPortInUse")
    expect_error(add(user, made["id"], vlan(parent, 7)), 409, "ParentPortInUse")
    vm = port(user, net, device_id="vm-1", device_owner="compute:nova")
    expect_error(add(user, made["id"], vlan(vm, 7)), 409, "PortInUse")
    # nothing was half-made by the refusals
    assert user.get(TRUNKS, params={"port_id": lone["id"]}).json()["trunks"] == []
    assert user.delete(f"{TRUNKS}/{made['id']}").status_code == 204
    assert user.delete(f"/v2.0/ports/{parent['id']}").status_code == 204


def test_a_bound_parent(admin, net):
    parent = port(admin, net, **{"binding:host_id": "host-1"})
    made = trunk(admin, parent)
    assert made["port_id"] == parent["id"]
    assert admin.delete(f"{TRUNKS}/{made['id']}").status_code == 204


def test_missing_and_invisible_ports(user, trunk_server, net):
    nowhere = str(uuid.uuid4())
    expect_error(user.post(TRUNKS, json={"trunk": {"port_id": nowhere}}), 404, "PortNotFound")
    parent = port(user, net)
    expect_error(user.post(TRUNKS, json={"trunk": {"port_id": parent["id"], "sub_ports": [
        {"port_id": nowhere, "segmentation_type": "vlan", "segmentation_id": 3}]}}),
        404, "PortNotFound")
    stranger = trunk_server.client(uuid.uuid4().hex, roles=("member",))
    expect_error(stranger.post(TRUNKS, json={"trunk": {"port_id": parent["id"]}}), 404,
                 "PortNotFound")
    made = trunk(user, parent)
    expect_error(stranger.get(f"{TRUNKS}/{made['id']}"), 404, "TrunkNotFound")
    expect_error(stranger.get(f"{TRUNKS}/{made['id']}/get_subports"), 404, "TrunkNotFound")
    expect_error(add(stranger, made["id"]), 404, "TrunkNotFound")
    assert stranger.get(TRUNKS).json()["trunks"] == []


def test_a_reader_reads_only(trunk_server, user, net, project):
    made = trunk(user, port(user, net))
    reader = trunk_server.client(project, roles=("reader",))
    assert reader.show("trunks", made["id"])["id"] == made["id"]
    assert reader.get(f"{TRUNKS}/{made['id']}/get_subports").status_code == 200
    expect_error(add(reader, made["id"]), 403, "PolicyNotAuthorized")
    expect_error(reader.delete(f"{TRUNKS}/{made['id']}"), 403, "PolicyNotAuthorized")


@pytest.mark.parametrize("sub_ports", [
    "x", [1], [{}], [{"port_id": "nope"}],
    [{"port_id": "PORT", "segmentation_type": "vlan"}],
    [{"port_id": "PORT", "segmentation_type": "vlan", "segmentation_id": 0}],
    [{"port_id": "PORT", "segmentation_type": "vlan", "segmentation_id": 4095}],
    [{"port_id": "PORT", "segmentation_type": "vlan", "segmentation_id": "x"}],
    [{"port_id": "PORT", "segmentation_type": "vlan", "segmentation_id": True}],
    [{"port_id": "PORT", "segmentation_type": "vxlan", "segmentation_id": 5}],
    [{"port_id": "PORT", "segmentation_type": "vlan", "segmentation_id": 5, "x": 1}],
    [{"port_id": "PORT", "segmentation_type": "vlan", "segmentation_id": 5},
     {"port_id": "PORT", "segmentation_type": "vlan", "segmentation_id": 6}],
    [{"port_id": "PORT"}],
])
def test_bad_subports_are_400s(user, net, sub_ports):
    parent, sub = port(user, net), port(user, net)

    def filled(value):
        if isinstance(value, list):
            return [{k: (sub["id"] if x == "PORT" else x) for k, x in i.items()}
                    if isinstance(i, dict) else i for i in value]
        return value

    body = filled(sub_ports)
    resp = user.post(TRUNKS, json={"trunk": {"port_id": parent["id"], "sub_ports": body}})
    assert resp.status_code == 400, resp.text
    made = trunk(user, parent)
    resp = add(user, made["id"], *body) if isinstance(body, list) else user.put(
        f"{TRUNKS}/{made['id']}/add_subports", json={"sub_ports": body})
    assert resp.status_code == 400, resp.text
    assert user.show("trunks", made["id"])["sub_ports"] == []
    for bad in ([], None, "x", {"sub_ports": "x"}, {"sub_ports": [{"port_id": 1}]}):
        resp = user.put(f"{TRUNKS}/{made['id']}/remove_subports", json=bad)
        assert resp.status_code == 400, (bad, resp.text)


def test_mtu_and_inherit(admin, project):
    big = admin.create("networks", name="big", mtu=1450)
    small = admin.create("networks", name="small", mtu=1400)
    parent = port(admin, small)
    made = trunk(admin, parent)
    sub = port(admin, big)
    expect_error(add(admin, made["id"], vlan(sub, 9)), 409,
                 "SubPortMtuGreaterThanTrunkPortMtu")
    vlan_net = admin.create("networks", name="v", mtu=1400, **{
        "provider:network_type": "vlan", "provider:physical_network": "physnet1",
        "provider:segmentation_id": 142})
    inherited = port(admin, vlan_net)
    resp = add(admin, made["id"], {"port_id": inherited["id"], "segmentation_type": "inherit"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["sub_ports"] == [vlan(inherited, 142)]
    local = admin.create("networks", name="l", mtu=1400, **{"provider:network_type": "local"})
    expect_error(add(admin, made["id"], {"port_id": port(admin, local)["id"],
                                         "segmentation_type": "inherit"}),
                 400, "InvalidInput")
