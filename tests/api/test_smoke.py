"""The server answers on every backend: versions, resources, one network."""

from tests.harness import error_of


def test_versions_and_resources(admin):
    versions = admin.get("/").json()["versions"]
    assert versions[0]["id"] == "v2.0" and versions[0]["status"] == "CURRENT"
    collections = {r["collection"] for r in admin.get("/v2.0/").json()["resources"]}
    assert {"networks", "subnets", "ports", "subnetpools"} <= collections


def test_network_round_trip(admin):
    net = admin.network(name="smoke")
    assert admin.show("networks", net["id"])["name"] == "smoke"
    assert admin.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    resp = admin.get(f"/v2.0/networks/{net['id']}")
    assert resp.status_code == 404
    assert error_of(resp)["type"] == "NetworkNotFound"


def test_request_id_header(admin):
    resp = admin.get("/v2.0/networks")
    assert resp.headers["x-openstack-request-id"].startswith("req-")
