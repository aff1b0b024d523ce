"""Port attributes of their own extension drivers: numa_affinity_policy,
device_profile and trusted (port-numa-affinity-policy, port-device-profile,
port-trusted-vif)."""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import BACKENDS
from tests.harness import Server, create_database, expect_error, start_server

DRIVERS = "port_security,port_numa_affinity_policy,port_device_profile,port_trusted"


@pytest.fixture(scope="module", params=BACKENDS)
def attr_server(request, tmp_path_factory) -> Server:
    tmp = tmp_path_factory.mktemp(f"port-attrs-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers",
                       extra=f"[ml2]\nextension_drivers = {DRIVERS}\n")
    yield srv
    srv.stop()
    drop()


def test_the_attributes_are_kept_and_shown(attr_server: Server):
    project = uuid.uuid4().hex
    user = attr_server.client(project)
    admin = attr_server.client(project, roles=("admin",))
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert {"port-numa-affinity-policy", "port-device-profile", "port-trusted-vif"} <= aliases
    net = user.network()
    port = user.port(net["id"], numa_affinity_policy="required", device_profile="gpu-1")
    assert (port["numa_affinity_policy"], port["device_profile"]) == ("required", "gpu-1")
    assert "trusted" not in port  # an admin's to see
    plain = user.port(net["id"])
    assert (plain["numa_affinity_policy"], plain["device_profile"]) == (None, None)
    resp = user.put(f"/v2.0/ports/{port['id']}", json={"port": {
        "numa_affinity_policy": "preferred"}})
    assert resp.json()["port"]["numa_affinity_policy"] == "preferred"
    resp = user.put(f"/v2.0/ports/{port['id']}", json={"port": {"numa_affinity_policy": None}})
    assert resp.json()["port"]["numa_affinity_policy"] is None
    assert user.show("ports", port["id"])["numa_affinity_policy"] is None
    expect_error(user.put(f"/v2.0/ports/{port['id']}", json={"port": {
        "numa_affinity_policy": "nearby"}}), 400, "HTTPBadRequest")
    expect_error(user.put(f"/v2.0/ports/{port['id']}", json={"port": {
        "numa_affinity_policy": "socket"}}), 400, "HTTPBadRequest")  # not without its driver
    expect_error(user.put(f"/v2.0/ports/{port['id']}", json={"port": {
        "device_profile": "gpu-2"}}), 400, "HTTPBadRequest")  # set once
    # trusted: an admin sets it and sees it
    expect_error(user.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                       "trusted": True}}), 403,
                 "PolicyNotAuthorized")
    resp = admin.put(f"/v2.0/ports/{port['id']}", json={"port": {"trusted": True}})
    assert resp.status_code == 200 and resp.json()["port"]["trusted"] is True
    assert admin.show("ports", port["id"])["trusted"] is True
    assert "trusted" not in user.show("ports", port["id"])
    listed = {p["id"]: p for p in admin.get("/v2.0/ports", params={
        "network_id": net["id"]}).json()["ports"]}
    assert (listed[port["id"]]["trusted"], listed[plain["id"]]["trusted"]) == (True, None)
    assert listed[port["id"]]["device_profile"] == "gpu-1"


def test_the_socket_policy_comes_with_its_driver(tmp_path):
    url, drop = create_database("sqlite", tmp_path)
    srv = start_server(tmp_path, url, auth="trusted_headers", extra=(
        "[ml2]\nextension_drivers = port_numa_affinity_policy_socket\n"))
    try:
        user = srv.client(uuid.uuid4().hex)
        aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
        assert {"port-numa-affinity-policy", "port-numa-affinity-policy-socket"} <= aliases
        port = user.port(user.network()["id"], numa_affinity_policy="socket")
        assert port["numa_affinity_policy"] == "socket"
    finally:
        srv.stop()
        drop()
