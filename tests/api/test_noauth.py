"""auth_strategy = noauth: one command, no identity service, everyone is admin."""

from __future__ import annotations

import uuid

import httpx
import pytest

from neutrino.context import DEFAULT_PROJECT_ID
from tests.harness import Server, start_server


@pytest.fixture(scope="module")
def noauth(tmp_path_factory) -> Server:
    tmp = tmp_path_factory.mktemp("noauth")
    srv = start_server(tmp, f"sqlite:///{tmp / 'noauth.db'}", auth="noauth")
    yield srv
    srv.stop()


@pytest.fixture
def bare(noauth: Server) -> httpx.Client:
    """A client that sends no identity headers at all."""
    with httpx.Client(base_url=noauth.url, timeout=30) as client:
        yield client


def test_versions_and_resources(noauth, bare):
    resp = bare.get("/")
    assert resp.status_code == 200
    assert resp.json()["versions"][0]["links"] == [{"rel": "self",
                                                   "href": f"{noauth.url}/v2.0/"}]
    assert [r["collection"] for r in bare.get("/v2.0/").json()["resources"]] == [
        "networks", "subnets", "subnetpools", "ports"]
    assert bare.get("/v2.0/extensions").status_code == 200


def test_requests_without_headers_use_the_default_project(bare):
    resp = bare.post("/v2.0/networks", json={"network": {"name": "plain"}})
    assert resp.status_code == 201, resp.text
    net = resp.json()["network"]
    assert (net["project_id"], net["tenant_id"]) == (DEFAULT_PROJECT_ID, DEFAULT_PROJECT_ID)
    listed = bare.get("/v2.0/networks", params={"id": net["id"]}).json()["networks"]
    assert [n["id"] for n in listed] == [net["id"]]
    assert bare.get("/v2.0/quotas/project").json() == {
        "project": {"project_id": DEFAULT_PROJECT_ID}}


@pytest.mark.parametrize("key", ["project_id", "tenant_id"])
def test_project_in_the_body_is_honoured(bare, key):
    project = uuid.uuid4().hex
    resp = bare.post("/v2.0/networks", json={"network": {key: project}})
    assert resp.status_code == 201, resp.text
    net = resp.json()["network"]
    assert (net["project_id"], net["tenant_id"]) == (project, project)
    subnet = bare.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.0.0.0/24", key: project}})
    assert subnet.status_code == 201 and subnet.json()["subnet"]["project_id"] == project
    listed = bare.get("/v2.0/networks", params={"project_id": project}).json()["networks"]
    assert [n["id"] for n in listed] == [net["id"]]


def test_project_header_is_used_when_given(noauth, bare):
    project = uuid.uuid4().hex
    resp = bare.post("/v2.0/networks", json={"network": {}},
                     headers={"X-Project-Id": project})
    assert resp.json()["network"]["project_id"] == project
    # a header no project column could hold is a 400, not a silent truncation
    resp = bare.post("/v2.0/networks", json={"network": {}},
                     headers={"X-Project-Id": "p" * 256})
    assert resp.status_code == 400 and "x-project-id" in resp.json()["NeutronError"]["message"]


def test_everyone_is_admin(bare):
    owner = uuid.uuid4().hex
    resp = bare.post("/v2.0/networks", json={"network": {
        "project_id": owner, "shared": True, "router:external": True}})
    assert resp.status_code == 201, resp.text
    net = resp.json()["network"]
    assert (net["shared"], net["router:external"]) == (True, True)
    stranger = {"X-Project-Id": uuid.uuid4().hex, "X-Roles": "reader"}
    resp = bare.put(f"/v2.0/networks/{net['id']}", json={"network": {"name": "changed"}},
                    headers=stranger)
    assert resp.status_code == 200, resp.text
    assert bare.put(f"/v2.0/quotas/{owner}", json={"quota": {"network": 5}}).status_code == 200
    assert owner in {q["project_id"] for q in bare.get("/v2.0/quotas").json()["quotas"]}
    assert bare.delete(f"/v2.0/networks/{net['id']}", headers=stranger).status_code == 204


def test_errors_still_carry_neutron_bodies(bare):
    resp = bare.get(f"/v2.0/networks/{uuid.uuid4()}")
    assert resp.status_code == 404
    assert resp.json()["NeutronError"]["type"] == "NetworkNotFound"
    assert resp.headers["x-openstack-request-id"].startswith("req-")
