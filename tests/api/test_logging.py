"""Packet logs (/v2.0/log/logs) and loggable resources, through HTTP."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import create_engine

from neutrino.services.logging.security_group import logs_of_ports
from tests.conftest import BACKENDS
from tests.harness import ApiClient, create_database, expect_error, start_server

LOGS = "/v2.0/log/logs"
KEYS = {"id", "name", "description", "project_id", "tenant_id", "resource_type",
        "resource_id", "target_id", "event", "enabled", "created_at", "updated_at",
        "revision_number"}
MISSING = "00000000-0000-0000-0000-000000000000"


@pytest.fixture(scope="module", params=BACKENDS)
def log_server(request, tmp_path_factory):
    """The Linux bridge mechanism driver (whose agents log) and one that binds
    any port to a host with a vif_type no log driver knows."""
    tmp = tmp_path_factory.mktemp(f"logging-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers",
                       extra="service_plugins = log\n[ml2]\nmechanism_drivers = "
                             "linuxbridge,tests.fakes.mechanism.AlwaysBindDriver\n")
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def admin(log_server, project) -> ApiClient:
    return log_server.client(project, roles=("admin", "member"))


@pytest.fixture
def manager(log_server, project) -> ApiClient:
    return log_server.client(project, roles=("manager", "member", "reader"))


@pytest.fixture
def member(log_server, project) -> ApiClient:
    return log_server.client(project, roles=("member", "reader"))


def make(client: ApiClient, **attrs) -> dict:
    resp = client.post(LOGS, json={"log": {"resource_type": "security_group", **attrs}})
    assert resp.status_code == 201, resp.text
    return resp.json()["log"]


def group(client: ApiClient) -> dict:
    resp = client.post("/v2.0/security-groups",
                       json={"security_group": {"name": f"g-{uuid.uuid4().hex[:6]}"}})
    assert resp.status_code == 201, resp.text
    return resp.json()["security_group"]


def test_loggable_resources(admin, member, manager):
    resp = admin.get("/v2.0/log/loggable-resources")
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"loggable_resources": [{"type": "security_group"}]}
    assert admin.get("/v2.0/log/loggable-resources", params={"type": "firewall_group"}
                     ).json() == {"loggable_resources": []}
    assert manager.get("/v2.0/log/loggable-resources").status_code == 200
    assert member.get("/v2.0/log/loggable-resources").json() == {"loggable_resources": []}
    aliases = {e["alias"] for e in admin.get("/v2.0/extensions").json()["extensions"]}
    assert "logging" in aliases


def test_create_show_list_update_delete(admin, project):
    sg = group(admin)
    made = make(admin, name="web", description="who knocks", resource_id=sg["id"],
                event="DROP")
    assert set(made) == KEYS
    assert (made["name"], made["description"], made["resource_id"], made["target_id"],
            made["event"], made["enabled"], made["project_id"], made["tenant_id"]) == (
        "web", "who knocks", sg["id"], None, "DROP", True, project, project)
    url = f"{LOGS}/{made['id']}"
    assert admin.get(url).json()["log"] == made
    assert admin.get(LOGS, params={"resource_id": sg["id"]}).json()["logs"] == [made]
    resp = admin.put(url, json={"log": {"enabled": False, "name": "off"}})
    assert resp.status_code == 200, resp.text
    updated = resp.json()["log"]
    assert (updated["enabled"], updated["name"]) == (False, "off")
    assert updated["revision_number"] > made["revision_number"]
    for attr, value in (("event", "ALL"), ("resource_id", sg["id"]), ("target_id", None),
                        ("resource_type", "security_group"), ("project_id", project)):
        resp = admin.put(url, json={"log": {attr: value}})
        expect_error(resp, 400, "HTTPBadRequest", f"Cannot update read-only attribute {attr}")
    assert admin.delete(url).status_code == 204
    expect_error(admin.get(url), 404, "LogResourceNotFound",
                 f"Log resource {made['id']} could not be found.")
    expect_error(admin.delete(url), 404, "LogResourceNotFound")


def test_defaults_and_filters(admin):
    everything = make(admin)
    assert (everything["event"], everything["enabled"], everything["resource_id"],
            everything["target_id"], everything["name"]) == ("ALL", True, None, None, "")
    off = make(admin, event="ACCEPT", enabled=False)
    mine = {"project_id": admin.project_id}
    listed = admin.get(LOGS, params={**mine, "enabled": "false"}).json()["logs"]
    assert [log["id"] for log in listed] == [off["id"]]
    listed = admin.get(LOGS, params={**mine, "event": "ALL"}).json()["logs"]
    assert [log["id"] for log in listed] == [everything["id"]]
    ids = {log["id"] for log in admin.get(LOGS, params=mine).json()["logs"]}
    assert ids == {everything["id"], off["id"]}


def test_a_port_and_its_group(admin):
    net = admin.network()
    sg = group(admin)
    port = admin.port(net["id"], security_groups=[sg["id"]])
    made = make(admin, resource_id=sg["id"], target_id=port["id"], event="ACCEPT")
    assert (made["resource_id"], made["target_id"]) == (sg["id"], port["id"])
    other = group(admin)
    resp = admin.post(LOGS, json={"log": {"resource_type": "security_group",
                                          "resource_id": other["id"],
                                          "target_id": port["id"]}})
    expect_error(resp, 400, "InvalidResourceConstraint",
                 f"Invalid resource constraint between resource (security_group "
                 f"{other['id']}) and target resource (port {port['id']}).")
    # a port's logs go with it; a group's with the group
    on_port = make(admin, target_id=port["id"])
    assert admin.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    for gone in (made, on_port):
        expect_error(admin.get(f"{LOGS}/{gone['id']}"), 404, "LogResourceNotFound")
    on_group = make(admin, resource_id=other["id"])
    assert admin.delete(f"/v2.0/security-groups/{other['id']}").status_code == 204
    expect_error(admin.get(f"{LOGS}/{on_group['id']}"), 404, "LogResourceNotFound")


def test_which_logs_reach_a_port(admin, log_server):
    """What the agents are told (``get_sg_log_info_for_ports``): the enabled
    logs naming the port, one of its groups, or neither (of a project owning
    one of its groups); read from the server's database."""
    net = admin.network()
    g1, g2 = group(admin), group(admin)
    p1 = admin.port(net["id"], security_groups=[g1["id"]])
    p2 = admin.port(net["id"], security_groups=[g2["id"]])
    p3 = admin.port(net["id"], security_groups=[g1["id"], g2["id"]])
    bare = admin.port(net["id"], security_groups=[])
    on_g1 = make(admin, resource_id=g1["id"], event="DROP")
    on_p2 = make(admin, target_id=p2["id"], event="ACCEPT")
    everywhere = make(admin)
    make(admin, resource_id=g2["id"], enabled=False)
    stranger = log_server.client(uuid.uuid4().hex, roles=("manager", "member"))
    make(stranger)  # another project's: none of these ports' groups is its

    engine = create_engine(log_server.db_url)
    try:
        with engine.connect() as conn:
            found = logs_of_ports(conn, [p1["id"], p2["id"], p3["id"], bare["id"], MISSING])
    finally:
        engine.dispose()
    reach = {port_id: sorted((log["id"], log["event"]) for log in logs)
             for port_id, logs in found.items()}
    assert reach == {
        p1["id"]: sorted([(on_g1["id"], "DROP"), (everywhere["id"], "ALL")]),
        p2["id"]: sorted([(on_p2["id"], "ACCEPT"), (everywhere["id"], "ALL")]),
        p3["id"]: sorted([(on_g1["id"], "DROP"), (everywhere["id"], "ALL")]),
        bare["id"]: [], MISSING: []}
    assert {log["project_id"] for logs in found.values() for log in logs} == {
        admin.project_id}


def test_a_port_no_driver_logs(admin):
    net = admin.network()
    bound = admin.port(net["id"], **{"binding:host_id": "h1"})
    assert bound["binding:vif_type"] == "fake"
    resp = admin.post(LOGS, json={"log": {"resource_type": "security_group",
                                          "target_id": bound["id"]}})
    expect_error(resp, 409, "LoggingTypeNotSupported",
                 f"Logging type security_group is not supported on port {bound['id']}.")


def test_bad_input(admin, log_server):
    def post(**body):
        return admin.post(LOGS, json={"log": body})

    expect_error(post(), 400, "HTTPBadRequest",
                 "Failed to parse request. Required attribute 'resource_type' not "
                 "specified")
    for kind in ("firewall_group", "port", ""):
        expect_error(post(resource_type=kind), 400, "InvalidLogResourceType",
                     f"Invalid log resource_type: {kind}.")
    expect_error(post(resource_type="security_group", resource_id=MISSING), 404,
                 "ResourceNotFound", f"Resource {MISSING} could not be found.")
    expect_error(post(resource_type="security_group", target_id=MISSING), 404,
                 "TargetResourceNotFound", f"Target resource {MISSING} could not be found.")
    for attrs in ({"event": "REJECT"}, {"event": None}, {"resource_id": "nope"},
                  {"target_id": 7}, {"enabled": "maybe"}, {"resource_type": 5},
                  {"resource_type": "x" * 37}, {"name": "n" * 256}, {"status": "up"}):
        resp = post(**{"resource_type": "security_group", **attrs})
        assert resp.status_code == 400, (attrs, resp.text)
    made = make(admin)
    resp = admin.put(f"{LOGS}/{made['id']}", json={"log": {"enabled": "maybe"}})
    expect_error(resp, 400, "InvalidInput")
    # another project's group or port is not there for a project's manager
    stranger = log_server.client(uuid.uuid4().hex, roles=("manager", "member"))
    sg = group(admin)
    port = admin.port(admin.network()["id"])
    resp = stranger.post(LOGS, json={"log": {"resource_type": "security_group",
                                             "resource_id": sg["id"]}})
    expect_error(resp, 404, "ResourceNotFound")
    resp = stranger.post(LOGS, json={"log": {"resource_type": "security_group",
                                             "target_id": port["id"]}})
    expect_error(resp, 404, "TargetResourceNotFound")


def test_policy(admin, manager, member, log_server):
    resp = member.post(LOGS, json={"log": {"resource_type": "security_group"}})
    expect_error(resp, 403, "PolicyNotAuthorized")
    made = make(manager)
    url = f"{LOGS}/{made['id']}"
    assert manager.get(url).status_code == 200
    expect_error(member.get(url), 404, "LogResourceNotFound")
    assert member.get(LOGS).json()["logs"] == []
    stranger = log_server.client(uuid.uuid4().hex, roles=("manager", "member"))
    expect_error(stranger.get(url), 404, "LogResourceNotFound")
    expect_error(stranger.put(url, json={"log": {"enabled": False}}), 404,
                 "LogResourceNotFound")
    assert stranger.get(LOGS).json()["logs"] == []
    assert manager.put(url, json={"log": {"enabled": False}}).status_code == 200
    assert manager.delete(url).status_code == 204
    assert admin.get(LOGS, params={"id": made["id"]}).json()["logs"] == []


def test_without_a_driver_nothing_is_loggable(server, project):
    """The shared server runs no mechanism driver whose agents log security
    groups (its firewall groups are, by the L3 agents: firewall_v2 is loaded)."""
    admin = server.client(project, roles=("admin", "member"))
    assert admin.get("/v2.0/log/loggable-resources").json() == {
        "loggable_resources": [{"type": "firewall_group"}]}
    resp = admin.post(LOGS, json={"log": {"resource_type": "security_group"}})
    expect_error(resp, 400, "InvalidLogResourceType",
                 "Invalid log resource_type: security_group.")
