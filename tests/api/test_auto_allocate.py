"""auto-allocated-topology over HTTP: ``is_default`` on networks, and a project's
topology built on first request, answered again, checked by a dry run, taken
down, refused to other projects, and undone whole when a step fails.

The default external network and the default subnet pools are the whole
deployment's, so these tests have a server of their own (on each backend);
each test first sets the defaults it needs (``Site.defaults``).
"""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BACKENDS
from tests.harness import ApiClient, Server, create_database, expect_error, start_server

PATH = "/v2.0/auto-allocated-topology"
EXTERNAL_CIDR = "172.24.0.0/20"
POOL_V4 = "10.160.0.0/16"
POOL_V6 = "fd00:160::/48"


@pytest.fixture(scope="module", params=BACKENDS)
def aa_server(request, tmp_path_factory) -> Server:
    tmp = tmp_path_factory.mktemp(f"auto-allocate-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers",
                       extra="service_plugins = router,auto_allocate\n")
    srv.backend = request.param
    yield srv
    srv.stop()
    drop()


def ok(resp, status: int = 200) -> Any:
    assert resp.status_code == status, resp.text
    return resp.json() if resp.content else None


class Site:
    """The operator's side: an external network and two shared subnet pools,
    each made the default or not as a test needs."""

    def __init__(self, server: Server):
        self.admin = server.client(uuid.uuid4().hex, roles=("admin", "member"))
        self.external = self.admin.network(name="public", **{"router:external": True})
        self.admin.subnet(self.external["id"], EXTERNAL_CIDR)
        self.pools = {
            4: self.admin.create("subnetpools", name="default-v4", prefixes=[POOL_V4],
                                 default_prefixlen=26, shared=True),
            6: self.admin.create("subnetpools", name="default-v6", prefixes=[POOL_V6],
                                 default_prefixlen=64, shared=True)}

    def defaults(self, external: bool = True, versions: tuple[int, ...] = (4, 6)) -> None:
        """Only these defaults: ``public`` the default external network or not, and
        the pools of ``versions`` the default ones."""
        found = ok(self.admin.get("/v2.0/networks", params={"is_default": "true"}))
        for net in found["networks"]:
            if net["id"] != self.external["id"]:
                self._set("networks", net["id"], False)
        for pool in ok(self.admin.get("/v2.0/subnetpools",
                                      params={"is_default": "true"}))["subnetpools"]:
            if pool["id"] not in {self.pools[v]["id"] for v in versions}:
                self._set("subnetpools", pool["id"], False)
        self._set("networks", self.external["id"], external)
        for version in versions:
            self._set("subnetpools", self.pools[version]["id"], True)

    def _set(self, collection: str, item_id: str, value: bool) -> None:
        ok(self.admin.put(f"/v2.0/{collection}/{item_id}",
                          json={collection[:-1]: {"is_default": value}}))


@pytest.fixture(scope="module")
def site(aa_server: Server) -> Site:
    return Site(aa_server)


@pytest.fixture
def project() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def admin(aa_server: Server, project: str) -> ApiClient:
    return aa_server.client(project, roles=("admin", "member"))


@pytest.fixture
def user(aa_server: Server, project: str) -> ApiClient:
    return aa_server.client(project, roles=("member",))


def owned(admin: ApiClient, project: str) -> dict[str, list[dict[str, Any]]]:
    """Everything the project has, by collection."""
    return {collection: ok(admin.get(f"/v2.0/{collection}", params={"project_id": project}))[
        collection] for collection in ("networks", "subnets", "ports", "routers")}


def nothing_left(admin: ApiClient, project: str) -> None:
    assert owned(admin, project) == {"networks": [], "subnets": [], "ports": [], "routers": []}


# --- is_default -------------------------------------------------------------------------


def test_is_default_marks_one_external_network_set_by_admins(site, aa_server, admin, user):
    site.defaults(external=False)
    internal = admin.network(is_default=True)
    assert "is_default" not in internal  # ignored, as Neutron: not an external network
    assert "is_default" not in admin.show("networks", internal["id"])
    expect_error(user.post("/v2.0/networks", json={"network": {"is_default": True}}),
                 403, "PolicyNotAuthorized", "create_network:is_default is disallowed by policy")
    mine = user.network()
    expect_error(user.put(f"/v2.0/networks/{mine['id']}", json={"network": {"is_default": True}}),
                 403, "PolicyNotAuthorized", "update_network:is_default is disallowed by policy")

    first = admin.network(**{"router:external": True})
    assert first["is_default"] is False
    updated = ok(admin.put(f"/v2.0/networks/{first['id']}",
                           json={"network": {"is_default": True}}))["network"]
    assert updated["is_default"] is True and admin.show("networks", first["id"]) == updated
    listed = ok(admin.get("/v2.0/networks", params={"is_default": True, "fields": "id"}))
    assert listed["networks"] == [{"id": first["id"]}]
    # a member sees it on the external network too
    assert aa_server.client(uuid.uuid4().hex).show("networks", first["id"])["is_default"] is True

    message = f"A default external network already exists: {first['id']}."
    expect_error(admin.post("/v2.0/networks", json={"network": {
        "router:external": True, "is_default": True}}), 409, "DefaultExternalNetworkExists",
        message)
    second = admin.network(**{"router:external": True})
    expect_error(admin.put(f"/v2.0/networks/{second['id']}",
                           json={"network": {"is_default": True}}),
                 409, "DefaultExternalNetworkExists", message)
    assert admin.show("networks", second["id"])["is_default"] is False

    # the default is shared with every project: its '*' external entry stays
    [entry] = ok(admin.get("/v2.0/rbac-policies", params={
        "object_id": first["id"], "action": "access_as_external"}))["rbac_policies"]
    expect_error(admin.delete(f"/v2.0/rbac-policies/{entry['id']}"), 409, "RbacPolicyInUse")
    # made internal, it is no default any more, and another can be
    internal_now = ok(admin.put(f"/v2.0/networks/{first['id']}",
                                json={"network": {"router:external": False}}))["network"]
    assert "is_default" not in internal_now
    both = ok(admin.put(f"/v2.0/networks/{second['id']}", json={"network": {
        "is_default": True}}))["network"]
    assert both["is_default"] is True
    again = ok(admin.put(f"/v2.0/networks/{first['id']}",
                         json={"network": {"router:external": True}}))["network"]
    assert again["is_default"] is False
    for net in (first, second, internal):
        ok(admin.delete(f"/v2.0/networks/{net['id']}"), 204)


def test_is_default_takes_booleans_only(site, admin):
    for value in ("maybe", 2, None, [True]):
        resp = admin.post("/v2.0/networks", json={"network": {
            "router:external": True, "is_default": value}})
        assert resp.status_code == 400, (value, resp.text)


# --- prerequisites ----------------------------------------------------------------------


def test_no_default_external_network(site, admin, user, project):
    site.defaults(external=False)
    message = "Deployment error: No default router:external network."
    expect_error(user.get(f"{PATH}/{project}", params={"fields": "dry-run"}),
                 409, "AutoAllocationFailure", message)
    expect_error(user.get(f"{PATH}/{project}"), 409, "AutoAllocationFailure", message)
    nothing_left(admin, project)


def test_no_default_subnet_pools(site, admin, user, project):
    site.defaults(versions=())
    message = "Deployment error: No default subnetpools defined."
    expect_error(user.get(f"{PATH}/{project}", params={"fields": "dry-run"}),
                 409, "AutoAllocationFailure", message)
    expect_error(user.get(f"{PATH}/{project}"), 409, "AutoAllocationFailure", message)
    nothing_left(admin, project)


def test_dry_run_passes_without_building(site, admin, user, project):
    site.defaults()
    found = ok(user.get(f"{PATH}/{project}", params={"fields": "dry-run"}))
    assert found == {"auto_allocated_topology": {
        "id": "dry-run=pass", "tenant_id": project, "project_id": project}}
    nothing_left(admin, project)


# --- the topology -----------------------------------------------------------------------


def test_first_request_builds_the_topology_and_later_ones_find_it(site, admin, user, project):
    site.defaults()
    found = ok(user.get(f"{PATH}/{project}"))["auto_allocated_topology"]
    assert found["tenant_id"] == found["project_id"] == project
    net = user.show("networks", found["id"])
    assert (net["name"], net["project_id"], net["admin_state_up"], net["shared"]) == (
        "auto_allocated_network", project, True, False)
    subnets = {s["ip_version"]: s for s in ok(user.get(
        "/v2.0/subnets", params={"network_id": net["id"]}))["subnets"]}
    assert sorted(subnets) == [4, 6]
    assert subnets[4]["name"] == "auto_allocated_subnet_v4"
    assert subnets[4]["subnetpool_id"] == site.pools[4]["id"]
    assert subnets[4]["cidr"].startswith("10.160.") and subnets[4]["cidr"].endswith("/26")
    assert subnets[6]["name"] == "auto_allocated_subnet_v6"
    assert subnets[6]["cidr"].startswith("fd00:160:") and subnets[6]["cidr"].endswith("/64")
    assert subnets[4]["enable_dhcp"] is True  # the API's default, as a user would get
    [router] = ok(user.get("/v2.0/routers", params={"project_id": project}))["routers"]
    assert router["name"] == "auto_allocated_router" and router["admin_state_up"] is True
    assert router["external_gateway_info"]["network_id"] == site.external["id"]
    interfaces = ok(user.get("/v2.0/ports", params={
        "device_id": router["id"], "device_owner": "network:router_interface"}))["ports"]
    assert sorted(ip["subnet_id"] for port in interfaces for ip in port["fixed_ips"]) == sorted(
        s["id"] for s in subnets.values())
    # counted against the project's quotas, as its own creates are
    used = ok(admin.get(f"/v2.0/quotas/{project}/details"))["quota"]
    assert (used["network"]["used"], used["subnet"]["used"], used["router"]["used"]) == (1, 2, 1)

    again = ok(user.get(f"{PATH}/{project}"))["auto_allocated_topology"]
    assert again == found
    assert ok(user.get(f"{PATH}/None"))["auto_allocated_topology"] == found  # older clients
    assert len(owned(admin, project)["networks"]) == 1
    # a dry run still checks the deployment, and changes nothing
    assert ok(user.get(f"{PATH}/{project}", params={"fields": "dry-run"}))[
        "auto_allocated_topology"]["id"] == "dry-run=pass"
    # what the admin sees of it, but its admin-only ha
    assert [{k: v for k, v in r.items() if k != "ha"}
            for r in owned(admin, project)["routers"]] == [router]


def test_one_pool_makes_one_subnet(site, admin, user, project):
    site.defaults(versions=(4,))
    found = ok(user.get(f"{PATH}/{project}"))["auto_allocated_topology"]
    [subnet] = owned(admin, project)["subnets"]
    assert (subnet["network_id"], subnet["ip_version"]) == (found["id"], 4)


def test_delete_takes_the_topology_down(site, admin, user, project):
    site.defaults()
    first = ok(user.get(f"{PATH}/{project}"))["auto_allocated_topology"]
    ok(user.delete(f"{PATH}/{project}"), 204)
    nothing_left(admin, project)
    ok(user.delete(f"{PATH}/{project}"), 204)  # none: nothing to do
    second = ok(user.get(f"{PATH}/{project}"))["auto_allocated_topology"]
    assert second["id"] != first["id"]
    ok(admin.delete(f"{PATH}/{project}"), 204)
    nothing_left(admin, project)


def test_concurrent_first_requests_get_one_topology(site, aa_server, admin, project):
    site.defaults(versions=(4,))
    clients = [aa_server.client(project) for _ in range(4)]
    with concurrent.futures.ThreadPoolExecutor(len(clients)) as pool:
        answers = list(pool.map(lambda c: c.get(f"{PATH}/{project}"), clients))
    ids = {ok(resp)["auto_allocated_topology"]["id"] for resp in answers}
    assert len(ids) == 1
    left = owned(admin, project)
    assert [n["id"] for n in left["networks"]] == list(ids)
    assert len(left["routers"]) == 1 and len(left["subnets"]) == 1


# --- who may ----------------------------------------------------------------------------


def test_other_projects_are_an_admins(site, aa_server, admin, user, project):
    site.defaults(versions=(4,))
    other = uuid.uuid4().hex
    expect_error(user.get(f"{PATH}/{other}"), 403, "NotAuthorized", "Not authorized.")
    expect_error(user.get(f"{PATH}/{other}", params={"fields": "dry-run"}), 403,
                 "NotAuthorized")
    expect_error(user.delete(f"{PATH}/{other}"), 403, "NotAuthorized")
    nothing_left(admin, other)
    theirs = ok(admin.get(f"{PATH}/{other}"))["auto_allocated_topology"]
    assert theirs["project_id"] == other
    assert admin.show("networks", theirs["id"])["project_id"] == other
    assert ok(aa_server.client(other).get(f"{PATH}/{other}"))["auto_allocated_topology"] == theirs
    # a reader gets the project's topology; only members take it down
    reader = aa_server.client(project, roles=("reader",))
    mine = ok(reader.get(f"{PATH}/{project}"))["auto_allocated_topology"]
    expect_error(reader.delete(f"{PATH}/{project}"), 403, "PolicyNotAuthorized",
                 "delete_auto_allocated_topology is disallowed by policy")
    assert ok(user.get(f"{PATH}/{project}"))["auto_allocated_topology"] == mine
    ok(admin.delete(f"{PATH}/{other}"), 204)
    nothing_left(admin, other)


def test_requests_it_does_not_serve(site, aa_server, user, project):
    expect_error(user.get(f"{PATH}/{project}", params={"fields": "id"}), 400, "BadRequest",
                 "Bad auto_allocate request: Unrecognized field.")
    for method in ("PUT", "POST"):
        expect_error(user.request(method, f"{PATH}/{project}", json={}), 405,
                     "HTTPMethodNotAllowed")
    for path in (PATH, f"{PATH}/{project}/x"):
        expect_error(user.get(path), 404, "HTTPNotFound")
    expect_error(user.request("DELETE", f"{PATH}/{project}", content=b"{}"), 400,
                 "HTTPBadRequest", "Request body is not supported in DELETE.")
    admin = aa_server.client(project, roles=("admin",))
    for bad in ("p" * 256, "\U0001f4a5" * 300):
        for method in ("GET", "DELETE"):
            resp = admin.request(method, f"{PATH}/{bad}")
            assert resp.status_code == 400, resp.text


# --- failures midway --------------------------------------------------------------------


def test_over_quota_leaves_nothing(site, admin, user, project):
    site.defaults()
    ok(admin.put(f"/v2.0/quotas/{project}", json={"quota": {"router": 0}}))
    expect_error(user.get(f"{PATH}/{project}"), 409, "OverQuota",
                 "Quota exceeded for resources: ['router'].")
    nothing_left(admin, project)
    ok(admin.put(f"/v2.0/quotas/{project}", json={"quota": {"router": 1, "subnet": 1}}))
    expect_error(user.get(f"{PATH}/{project}"), 409, "OverQuota",
                 "Quota exceeded for resources: ['subnet'].")
    nothing_left(admin, project)


def test_an_interface_refused_undoes_the_build(site, admin, user, project):
    """A default pool whose subnets overlap the external network: the router
    cannot take them, and what was made goes."""
    site.defaults(versions=())
    overlapping = admin.create("subnetpools", name="overlapping", prefixes=["172.24.0.0/16"],
                               default_prefixlen=16, shared=True, is_default=True)
    try:
        expect_error(user.get(f"{PATH}/{project}"), 409, "AutoAllocationFailure",
                     "Deployment error: Unable to provide external connectivity.")
        nothing_left(admin, project)
    finally:
        ok(admin.delete(f"/v2.0/subnetpools/{overlapping['id']}"), 204)


def test_an_exhausted_pool_undoes_the_build(site, admin, user, project):
    site.defaults(versions=())
    small = admin.create("subnetpools", name="small", prefixes=["10.161.0.0/26"],
                         default_prefixlen=26, shared=True, is_default=True)
    taken = site.admin.network()  # another project's subnet takes the whole pool
    site.admin.create("subnets", network_id=taken["id"], ip_version=4,
                      subnetpool_id=small["id"])
    try:
        expect_error(user.get(f"{PATH}/{project}"), 409, "AutoAllocationFailure",
                     "Deployment error: Unable to provide project private network.")
        nothing_left(admin, project)
    finally:
        ok(admin.delete(f"/v2.0/networks/{taken['id']}"), 204)
        ok(admin.delete(f"/v2.0/subnetpools/{small['id']}"), 204)


# --- configuration ----------------------------------------------------------------------


def test_without_the_router_plugin_the_server_does_not_start(tmp_path):
    conf = tmp_path / "no-router.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\n"
                    "service_plugins = auto_allocate\n")
    server = Path(sys.executable).parent / "neutrino-server"
    done = subprocess.run([str(server), "--config-file", str(conf)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in output, output
    [line] = [line for line in output.splitlines() if line.startswith("neutrino-server:")]
    assert "extension 'auto-allocated-topology' requires router" in line
    assert f"service_plugins in [DEFAULT] of {conf}" in line
