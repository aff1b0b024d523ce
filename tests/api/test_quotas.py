"""/v2.0/quotas: limits per project, defaults, usage, and enforcement on create."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.harness import ApiClient, error_of

DEFAULTS = {"network": 100, "subnet": 100, "port": 500, "subnetpool": -1}


def quota_of(client: ApiClient, project: str) -> dict[str, int]:
    resp = client.get(f"/v2.0/quotas/{project}")
    assert resp.status_code == 200, resp.text
    return resp.json()["quota"]


def set_quota(client: ApiClient, project: str, **limits) -> dict[str, int]:
    resp = client.put(f"/v2.0/quotas/{project}", json={"quota": limits})
    assert resp.status_code == 200, resp.text
    return resp.json()["quota"]


def expect(resp, status: int, type_: str, message: str) -> None:
    assert resp.status_code == status, resp.text
    assert error_of(resp) == {"type": type_, "message": message, "detail": ""}


def test_defaults_until_set(admin, project):
    quota = quota_of(admin, project)
    assert {k: quota[k] for k in DEFAULTS} == DEFAULTS
    resp = admin.get(f"/v2.0/quotas/{project}/default")
    assert resp.status_code == 200
    assert {k: resp.json()["quota"][k] for k in DEFAULTS} == DEFAULTS


def test_put_get_delete(admin, project):
    updated = set_quota(admin, project, network=7, port=-1)
    assert {k: updated[k] for k in DEFAULTS} == {**DEFAULTS, "network": 7, "port": -1}
    assert quota_of(admin, project) == updated
    again = set_quota(admin, project, subnet="12")  # numbers may come as strings
    assert {k: again[k] for k in DEFAULTS} == {**DEFAULTS, "network": 7, "port": -1,
                                               "subnet": 12}
    defaults = admin.get(f"/v2.0/quotas/{project}/default").json()["quota"]
    assert {k: defaults[k] for k in DEFAULTS} == DEFAULTS  # /default ignores custom limits
    assert admin.delete(f"/v2.0/quotas/{project}").status_code == 204
    assert {k: quota_of(admin, project)[k] for k in DEFAULTS} == DEFAULTS
    expect(admin.delete(f"/v2.0/quotas/{project}"), 404, "TenantQuotaNotFound",
           f"Quota for project {project} could not be found.")


def test_delete_without_custom_limits(admin):
    nobody = uuid.uuid4().hex
    expect(admin.delete(f"/v2.0/quotas/{nobody}"), 404, "TenantQuotaNotFound",
           f"Quota for project {nobody} could not be found.")


def test_list_shows_only_projects_with_custom_limits(admin, project):
    untouched = uuid.uuid4().hex
    quota_of(admin, untouched)
    set_quota(admin, project, network=3)
    resp = admin.get("/v2.0/quotas")
    assert resp.status_code == 200
    by_project = {q["project_id"]: q for q in resp.json()["quotas"]}
    assert untouched not in by_project
    mine = by_project[project]
    assert mine["tenant_id"] == project
    assert {k: mine[k] for k in DEFAULTS} == {**DEFAULTS, "network": 3}
    admin.delete(f"/v2.0/quotas/{project}")
    listed = {q["project_id"] for q in admin.get("/v2.0/quotas").json()["quotas"]}
    assert project not in listed


def test_details_count_usage(admin, user, project):
    net = user.network()
    user.network()
    subnet = user.subnet(net["id"], "10.90.0.0/24")
    for _ in range(3):
        user.port(net["id"], fixed_ips=[{"subnet_id": subnet["id"]}])
    set_quota(admin, project, port=10)
    for client in (admin, user):
        resp = client.get(f"/v2.0/quotas/{project}/details")
        assert resp.status_code == 200, resp.text
        details = resp.json()["quota"]
        assert details["network"] == {"limit": 100, "used": 2, "reserved": 0}
        assert details["subnet"] == {"limit": 100, "used": 1, "reserved": 0}
        assert details["port"] == {"limit": 10, "used": 3, "reserved": 0}
        assert details["subnetpool"] == {"limit": -1, "used": 0, "reserved": 0}


def test_project_and_tenant_info(user, project):
    assert user.get("/v2.0/quotas/project").json() == {"project": {"project_id": project}}
    assert user.get("/v2.0/quotas/tenant").json() == {"tenant": {"tenant_id": project}}


@pytest.mark.parametrize("resource", ["network", "subnet", "port", "subnetpool"])
def test_over_quota(admin, user, project, resource):
    net = user.network() if resource in ("subnet", "port") else None

    def make(i: int):
        if resource == "network":
            return user.post("/v2.0/networks", json={"network": {}})
        if resource == "subnet":
            return user.post("/v2.0/subnets", json={"subnet": {
                "network_id": net["id"], "ip_version": 4, "cidr": f"10.91.{i}.0/24"}})
        if resource == "port":
            return user.post("/v2.0/ports", json={"port": {"network_id": net["id"]}})
        return user.post("/v2.0/subnetpools", json={"subnetpool": {
            "name": f"p{i}", "prefixes": [f"10.{100 + i}.0.0/16"]}})

    set_quota(admin, project, **{resource: 2})
    assert make(0).status_code == 201
    assert make(1).status_code == 201
    expect(make(2), 409, "OverQuota", f"Quota exceeded for resources: ['{resource}'].")
    details = user.get(f"/v2.0/quotas/{project}/details").json()["quota"]
    assert details[resource] == {"limit": 2, "used": 2, "reserved": 0}
    set_quota(admin, project, **{resource: -1})  # unlimited
    for i in range(2, 5):
        assert make(i).status_code == 201


@pytest.mark.parametrize("resource", ["network", "port"])
def test_concurrent_creates_stop_at_the_limit(server, admin, project, resource):
    """Creates racing in one project are counted one after the other: the
    limit holds (a port create checks its quota in its read of the network)."""
    creator = server.client(project, roles=("member",))
    net = creator.network() if resource == "port" else None
    set_quota(admin, project, **{resource: 5})

    def make(_: int) -> int:
        client = server.client(project, roles=("member",))
        if resource == "port":
            return client.post("/v2.0/ports", json={"port": {"network_id": net["id"]}}).status_code
        return client.post("/v2.0/networks", json={"network": {}}).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(make, range(24)))
    assert sorted(set(statuses)) == [201, 409], statuses
    assert statuses.count(201) == 5
    details = admin.get(f"/v2.0/quotas/{project}/details").json()["quota"]
    assert details[resource]["used"] == details[resource]["limit"]


def test_rbac_policy_quota(admin, user, project):
    """As Neutron: RBAC policies have a quota (quota_rbac_policy, 10), counted
    over the entries the project owns and enforced on create."""
    assert quota_of(admin, project)["rbac_policy"] == 10
    set_quota(admin, project, rbac_policy=1)
    net = user.network()

    def share_with(target: str):
        return user.post("/v2.0/rbac-policies", json={"rbac_policy": {
            "object_type": "network", "object_id": net["id"], "target_tenant": target,
            "action": "access_as_shared"}})

    assert share_with(uuid.uuid4().hex).status_code == 201
    expect(share_with(uuid.uuid4().hex), 409, "OverQuota",
           "Quota exceeded for resources: ['rbac_policy'].")
    details = user.get(f"/v2.0/quotas/{project}/details").json()["quota"]
    assert details["rbac_policy"] == {"limit": 1, "used": 1, "reserved": 0}


def test_zero_quota(admin, user, project):
    set_quota(admin, project, network=0)
    expect(user.post("/v2.0/networks", json={"network": {}}), 409, "OverQuota",
           "Quota exceeded for resources: ['network'].")


def test_quota_is_per_project(admin, user, other, project):
    set_quota(admin, project, network=0)
    assert other.post("/v2.0/networks", json={"network": {}}).status_code == 201
    # an admin creating in the limited project is held to its quota too
    resp = admin.post("/v2.0/networks", json={"network": {"project_id": project}})
    assert resp.status_code == 409


def test_lowering_below_usage(admin, user, project):
    user.network()
    user.network()
    resp = admin.put(f"/v2.0/quotas/{project}", json={"quota": {"network": 1}})
    expect(resp, 400, "HTTPBadRequest",
           "Quota limit 1 for network must be greater than or equal to already used 2")
    assert quota_of(admin, project)["network"] == 100
    assert set_quota(admin, project, network=2)["network"] == 2
    assert set_quota(admin, project, network=-1)["network"] == -1
    resp = admin.put(f"/v2.0/quotas/{project}", json={"quota": {"network": 1, "force": "yes"}})
    assert resp.status_code == 400  # only a JSON true forces
    # check_limit (quota-check-limit) asks for what is done anyway
    resp = admin.put(f"/v2.0/quotas/{project}", json={"quota": {"network": 1,
                                                               "check_limit": True}})
    expect(resp, 400, "HTTPBadRequest",
           "Quota limit 1 for network must be greater than or equal to already used 2")
    aliases = {e["alias"] for e in admin.get("/v2.0/extensions").json()["extensions"]}
    assert {"quota-check-limit", "quota-check-limit-default"} <= aliases
    assert set_quota(admin, project, network=1, force=True)["network"] == 1
    expect(user.post("/v2.0/networks", json={"network": {}}), 409, "OverQuota",
           "Quota exceeded for resources: ['network'].")


@pytest.mark.parametrize("value,type_,message", [
    ("abc", "InvalidInput", "Invalid input for operation: 'abc' is not an integer."),
    ("1.5", "InvalidInput", "Invalid input for operation: '1.5' is not an integer."),
    (None, "InvalidInput", "Invalid input for operation: 'None' is not an integer."),
    (-2, "HTTPBadRequest", "Invalid input for network. Reason: '-2' is too small - must be "
                           "at least '-1'."),
    (2147483648, "HTTPBadRequest", "Invalid input for network. Reason: '2147483648' is too "
                                   "large - must be no larger than '2147483647'."),
])
def test_bad_values(admin, project, value, type_, message):
    expect(admin.put(f"/v2.0/quotas/{project}", json={"quota": {"network": value}}),
           400, type_, message)
    assert quota_of(admin, project)["network"] == 100


def test_unknown_resource(admin, project):
    expect(admin.put(f"/v2.0/quotas/{project}", json={"quota": {"widget": 5}}),
           400, "HTTPBadRequest", "Unrecognized attribute(s) 'widget'")
    expect(admin.put(f"/v2.0/quotas/{project}", json={"quota": {"widget": 5, "network": 5}}),
           400, "HTTPBadRequest", "Unrecognized attribute(s) 'widget'")
    assert quota_of(admin, project)["network"] == 100


def test_bad_bodies(admin, project):
    for body in ({}, {"quota": 5}, {"quotas": {"network": 1}}):
        assert admin.put(f"/v2.0/quotas/{project}", json=body).status_code == 400


def test_non_admin_cannot_change_quotas(user, project, other_project):
    for target in (project, other_project):
        expect(user.put(f"/v2.0/quotas/{target}", json={"quota": {"network": 1000}}),
               403, "PolicyNotAuthorized", "update_quota is disallowed by policy")
        expect(user.delete(f"/v2.0/quotas/{target}"), 403, "PolicyNotAuthorized",
               "delete_quota is disallowed by policy")


def test_non_admin_reads(admin, user, project, other_project):
    set_quota(admin, other_project, network=9)
    assert quota_of(user, project)["network"] == 100
    assert user.get(f"/v2.0/quotas/{project}/default").status_code == 200
    resp = user.get(f"/v2.0/quotas/{other_project}")
    assert resp.status_code == 403 and error_of(resp)["type"] == "PolicyNotAuthorized"
    assert user.get(f"/v2.0/quotas/{other_project}/default").status_code == 403
    expect(user.get(f"/v2.0/quotas/{other_project}/details"), 403, "AdminRequired",
           "User does not have admin privileges: Only admin is authorized to access quotas "
           "for another project.")
    resp = user.get("/v2.0/quotas")
    assert resp.status_code == 403 and error_of(resp)["type"] == "PolicyNotAuthorized"
    assert quota_of(admin, other_project)["network"] == 9


def test_post_is_not_implemented(admin):
    expect(admin.post("/v2.0/quotas", json={"quota": {"network": 1}}), 501,
           "HTTPNotImplemented", "POST requests are not supported on this resource.")
