"""Mechanism drivers through the API: rollback on failure, and port binding."""

import pytest

from tests.conftest import BACKENDS
from tests.harness import create_database, error_of, expect_error, start_server

FAKES = "tests.fakes.mechanism"


def ml2_server(tmp, backend, drivers):
    url, drop = create_database(backend, tmp)
    srv = start_server(tmp, url, auth="trusted_headers",
                       extra=f"[ml2]\nmechanism_drivers = {drivers}\n")
    return srv, drop


@pytest.fixture(scope="module", params=BACKENDS)
def failing_server(request, tmp_path_factory):
    srv, drop = ml2_server(tmp_path_factory.mktemp(f"mech-{request.param}"), request.param,
                           f"logger,{FAKES}.FailingDriver,linuxbridge")
    srv.tracebacks_expected = True  # the driver fails on purpose; the plugin logs each
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def admin(failing_server, project):
    return failing_server.client(project, roles=("admin",))


@pytest.fixture
def user(failing_server, project):
    return failing_server.client(project, roles=("member",))


def names(client, collection):
    resp = client.get(f"/v2.0/{collection}", params={"project_id": client.project_id})
    return [item["name"] for item in resp.json()[collection]]


@pytest.mark.parametrize("method", ["create_network_precommit", "create_network_postcommit"])
def test_failed_network_create_leaves_nothing(admin, method):
    resp = admin.post("/v2.0/networks", json={"network": {"name": f"fail:{method}"}})
    assert resp.status_code == 500
    error = error_of(resp)
    assert error["type"] == "MechanismDriverError" and method in error["message"]
    assert names(admin, "networks") == []


@pytest.mark.parametrize("method", ["create_port_precommit", "create_port_postcommit"])
def test_failed_port_create_leaves_nothing(admin, method):
    net = admin.network(name="ok")
    admin.subnet(net["id"], "10.9.0.0/29")
    resp = admin.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                    "name": f"fail:{method}"}})
    assert resp.status_code == 500 and error_of(resp)["type"] == "MechanismDriverError"
    assert names(admin, "ports") == []
    # the address went back to the pool: the /29 still has all five for new ports
    for _ in range(5):
        admin.port(net["id"])


def test_failed_update_precommit_rolls_back(admin):
    net = admin.network(name="before")
    resp = admin.put(f"/v2.0/networks/{net['id']}",
                     json={"network": {"name": "fail:update_network_precommit"}})
    assert resp.status_code == 500
    assert admin.show("networks", net["id"])["name"] == "before"


def test_delete_stands_when_postcommit_fails(admin):
    net = admin.network(name="fail:delete_network_postcommit")
    assert admin.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    assert admin.get(f"/v2.0/networks/{net['id']}").status_code == 404


def test_binding_without_an_agent_fails_and_without_a_host_is_unbound(admin, user):
    net = admin.network()
    unbound = admin.port(net["id"])
    assert (unbound["binding:host_id"], unbound["binding:vif_type"]) == ("", "unbound")
    assert unbound["binding:vnic_type"] == "normal"
    failed = admin.port(net["id"], **{"binding:host_id": "compute-1"})
    assert failed["binding:vif_type"] == "binding_failed"
    assert admin.show("ports", failed["id"])["binding:vif_type"] == "binding_failed"
    mine = user.port(user.network()["id"])
    assert "binding:host_id" not in mine and mine["binding:vnic_type"] == "normal"
    resp = user.post("/v2.0/ports", json={"port": {"network_id": mine["network_id"],
                                                   "binding:host_id": "h"}})
    assert resp.status_code == 403


@pytest.fixture(scope="module")
def binding_server(tmp_path_factory):
    srv, drop = ml2_server(tmp_path_factory.mktemp("bind"), "sqlite",
                           f"{FAKES}.AlwaysBindDriver")
    yield srv
    srv.stop()
    drop()


def test_bound_port_and_rebinding(binding_server, project):
    admin = binding_server.client(project, roles=("admin",))
    net = admin.network()
    port = admin.port(net["id"], **{"binding:host_id": "h1",
                                    "binding:profile": {"k": "v"}})
    assert (port["binding:vif_type"], port["binding:host_id"]) == ("fake", "h1")
    assert port["binding:vif_details"]["bound_drivers"] == {"0": "always_bind"}
    assert port["binding:profile"] == {"k": "v"}
    moved = admin.put(f"/v2.0/ports/{port['id']}",
                      json={"port": {"binding:host_id": "h2"}}).json()["port"]
    assert (moved["binding:host_id"], moved["binding:vif_type"]) == ("h2", "fake")
    cleared = admin.put(f"/v2.0/ports/{port['id']}",
                        json={"port": {"binding:host_id": ""}}).json()["port"]
    assert (cleared["binding:host_id"], cleared["binding:vif_type"]) == ("", "unbound")
    other = admin.port(net["id"], **{"binding:host_id": "h3"})

    def on(host):
        resp = admin.get("/v2.0/ports", params={"binding:host_id": host,
                                                "network_id": net["id"]})
        return [p["id"] for p in resp.json()["ports"]]

    assert on("h3") == [other["id"]] and on("h2") == [] and on("") == [port["id"]]


def test_port_bindings_on_two_hosts(binding_server, project):
    """binding-extended, as Nova uses it to live-migrate: bind on the target host
    too, activate it, drop the source host's binding."""
    admin = binding_server.client(project, roles=("admin",))
    member = binding_server.client(project, roles=("member",))
    port = admin.port(admin.network()["id"], **{"binding:host_id": "src"})
    path = f"/v2.0/ports/{port['id']}/bindings"
    resp = admin.post(path, json={"binding": {"host": "dst", "profile": {"m": 1}}})
    assert resp.status_code == 201, resp.text
    assert resp.json()["binding"] == {
        "host": "dst", "vnic_type": "normal", "profile": {"m": 1}, "vif_type": "fake",
        "vif_details": {"port_filter": False, "bound_drivers": {"0": "always_bind"}},
        "status": "INACTIVE"}
    listed = admin.get(path).json()["bindings"]
    assert [(b["host"], b["status"]) for b in listed] == [("dst", "INACTIVE"),
                                                          ("src", "ACTIVE")]
    assert [b["host"] for b in admin.get(path, params={"status": "ACTIVE"}
                                         ).json()["bindings"]] == ["src"]
    assert expect_error(admin.post(path, json={"binding": {"host": "dst"}}),
                        409, "PortBindingAlreadyExists")
    assert admin.put(f"{path}/dst/activate").json()["binding"]["status"] == "ACTIVE"
    assert expect_error(admin.put(f"{path}/dst/activate"), 409, "PortBindingAlreadyActive")
    assert admin.get(f"/v2.0/ports/{port['id']}").json()["port"]["binding:host_id"] == "dst"
    assert admin.get(f"{path}/src").json()["binding"]["status"] == "INACTIVE"
    updated = admin.put(f"{path}/src", json={"binding": {"vnic_type": "direct"}})
    assert updated.json()["binding"]["vnic_type"] == "direct"
    assert admin.delete(f"{path}/src").status_code == 204
    assert expect_error(admin.get(f"{path}/src"), 404, "PortBindingNotFound")
    assert expect_error(admin.post(path, json={"binding": {}}), 400, "HTTPBadRequest")
    assert expect_error(admin.post(path, json={"binding": {"host": "x", "vif_type": "y"}}),
                        400, "HTTPBadRequest")
    assert expect_error(admin.get("/v2.0/ports/00000000-0000-0000-0000-000000000000/bindings"),
                        404, "PortNotFound")
    # admin only: a member sees none and may change none
    assert member.get(path).json()["bindings"] == []
    assert expect_error(member.get(f"{path}/dst"), 404, "HTTPNotFound")
    assert expect_error(member.post(path, json={"binding": {"host": "h9"}}), 403,
                        "PolicyNotAuthorized")
    assert expect_error(member.put(f"{path}/dst/activate"), 403, "PolicyNotAuthorized")


def test_binding_of_an_unbound_port_becomes_active(binding_server, project):
    admin = binding_server.client(project, roles=("admin",))
    port = admin.port(admin.network()["id"])
    path = f"/v2.0/ports/{port['id']}/bindings"
    assert admin.get(path).json()["bindings"] == []
    created = admin.post(path, json={"binding": {"host": "h1"}}).json()["binding"]
    assert created["status"] == "ACTIVE"
    assert admin.get(f"/v2.0/ports/{port['id']}").json()["port"]["binding:vif_type"] == "fake"


def test_a_bound_port_keeps_its_mac(binding_server, project):
    admin = binding_server.client(project, roles=("admin",))
    port = admin.port(admin.network()["id"], **{"binding:host_id": "h1"})
    assert port["binding:vif_type"] == "fake"
    resp = admin.put(f"/v2.0/ports/{port['id']}", json={"port": {"mac_address": None}})
    error = expect_error(resp, 409, "PortBound")
    assert error["message"].startswith(f"Unable to complete operation on port {port['id']}, "
                                       "port is already bound, port type: fake, old_mac "
                                       f"{port['mac_address']}, new_mac ")
    assert admin.show("ports", port["id"])["mac_address"] == port["mac_address"]
    # unbound, it may have a new one
    admin.put(f"/v2.0/ports/{port['id']}", json={"port": {"binding:host_id": ""}})
    resp = admin.put(f"/v2.0/ports/{port['id']}", json={"port": {"mac_address": None}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["port"]["mac_address"] != port["mac_address"]


@pytest.fixture(scope="module")
def port_security_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("portsec")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="trusted_headers",
                       extra="[ml2]\nextension_drivers = port_security\n")
    yield srv
    srv.stop()
    drop()


def test_port_security_network_default_and_port_override(port_security_server, project):
    user = port_security_server.client(project, roles=("member",))
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert "port-security" in aliases
    secured = user.network()
    assert secured["port_security_enabled"] is True
    assert user.port(secured["id"])["port_security_enabled"] is True
    open_net = user.network(port_security_enabled=False)
    assert user.port(open_net["id"])["port_security_enabled"] is False
    override = user.port(open_net["id"], port_security_enabled=True)
    assert override["port_security_enabled"] is True
    updated = user.put(f"/v2.0/ports/{override['id']}", json={"port": {
        "port_security_enabled": False, "security_groups": []}}).json()["port"]
    assert updated["port_security_enabled"] is False
    listed = user.get("/v2.0/networks", params={"id": [secured["id"], open_net["id"]]})
    assert {n["id"]: n["port_security_enabled"] for n in listed.json()["networks"]} == {
        secured["id"]: True, open_net["id"]: False}


def test_filter_by_port_security(port_security_server, project):
    user = port_security_server.client(project, roles=("member",))
    net = user.network(port_security_enabled=False)
    closed = user.port(net["id"], port_security_enabled=True)
    opened = user.port(net["id"])

    def ids(value):
        resp = user.get("/v2.0/ports", params={"network_id": net["id"],
                                               "port_security_enabled": value})
        assert resp.status_code == 200, resp.text
        return [p["id"] for p in resp.json()["ports"]]

    assert ids("true") == [closed["id"]] and ids("False") == [opened["id"]]
    resp = user.get("/v2.0/networks", params={"id": net["id"],
                                              "port_security_enabled": "false"})
    assert [n["id"] for n in resp.json()["networks"]] == [net["id"]]
    assert user.get("/v2.0/ports", params={"port_security_enabled": "maybe"}
                    ).status_code == 400


def test_port_security_is_absent_unless_its_driver_is_loaded(admin):
    aliases = {e["alias"] for e in admin.get("/v2.0/extensions").json()["extensions"]}
    assert "port-security" not in aliases
    resp = admin.post("/v2.0/networks", json={"network": {"port_security_enabled": False}})
    assert resp.status_code == 400
