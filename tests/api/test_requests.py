"""Request handling shared by every resource: bodies, validation, bulk, If-Match,
methods, unknown URLs, request ids, the versions and extensions documents."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.harness import ApiClient, error_of

CRLF_405 = ("The server could not comply with the request since\r\nit is either malformed "
            "or otherwise incorrect.\r\n")


def expect(resp: httpx.Response, status: int, type_: str, message: str) -> None:
    assert resp.status_code == status, resp.text
    assert error_of(resp) == {"type": type_, "message": message, "detail": ""}


def expect_bad(resp: httpx.Response, message: str) -> None:
    expect(resp, 400, "HTTPBadRequest", message)


def raw(client: ApiClient, method: str, path: str, body: bytes, **kw) -> httpx.Response:
    return client.request(method, path, content=body,
                          headers={"Content-Type": "application/json", **kw})


def ids_in_project(client: ApiClient, collection: str, project: str) -> list[str]:
    resp = client.get(f"/v2.0/{collection}", params={"project_id": project})
    assert resp.status_code == 200
    return [item["id"] for item in resp.json()[collection]]


# --- bodies --------------------------------------------------------------------


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b'"network"', b"5", b"null",
                                  b'{"network": {"name": "x"}'])
def test_body_that_is_not_a_json_object(user, body):
    net = user.network()
    expect_bad(raw(user, "POST", "/v2.0/networks", body), "Body contains invalid data")
    expect_bad(raw(user, "PUT", f"/v2.0/networks/{net['id']}", body),
               "Body contains invalid data")


@pytest.mark.parametrize("body", [b"", b"{}", b'{"port": {}}', b'{"Network": {}}'])
def test_body_without_the_resource(user, body):
    net = user.network()
    expect_bad(raw(user, "POST", "/v2.0/networks", body),
               "Unable to find 'network' in request body")
    expect_bad(raw(user, "PUT", f"/v2.0/networks/{net['id']}", body),
               "Unable to find 'network' in request body")


@pytest.mark.parametrize("value", [5, "x", ["a"], True])
def test_resource_that_is_not_an_object(user, value):
    net = user.network()
    expect_bad(user.post("/v2.0/networks", json={"network": value}),
               "Object 'network' contains invalid data")
    expect_bad(user.put(f"/v2.0/networks/{net['id']}", json={"network": value}),
               "Object 'network' contains invalid data")


def test_unknown_attribute(user):
    net = user.network()
    expect_bad(user.post("/v2.0/networks", json={"network": {"name": "a", "colour": "red"}}),
               "Unrecognized attribute(s) 'colour'")
    expect_bad(user.put(f"/v2.0/networks/{net['id']}", json={"network": {"colour": "red"}}),
               "Unrecognized attribute(s) 'colour'")
    resp = user.post("/v2.0/ports", json={"port": {"network_id": net["id"], "a": 1, "b": 2}})
    assert resp.status_code == 400
    assert error_of(resp)["message"] in ("Unrecognized attribute(s) 'a, b'",
                                         "Unrecognized attribute(s) 'b, a'")


@pytest.mark.parametrize("collection,attr,value", [
    ("networks", "id", "0a8b4c1e-5d43-4b3e-8f7e-2b1a0c9d8e7f"),
    ("networks", "status", "DOWN"),
    ("networks", "subnets", []),
    ("networks", "revision_number", 3),
    ("networks", "created_at", "2020-01-01T00:00:00Z"),
    ("ports", "status", "ACTIVE"),
    ("subnetpools", "ip_version", 4),
])
def test_attribute_not_allowed_in_post(user, collection, attr, value):
    name = collection[:-1]
    resp = user.post(f"/v2.0/{collection}", json={name: {attr: value}})
    expect_bad(resp, f"Attribute '{attr}' not allowed in POST")


@pytest.mark.parametrize("attr,value", [
    ("id", "0a8b4c1e-5d43-4b3e-8f7e-2b1a0c9d8e7f"), ("status", "DOWN"),
    ("revision_number", 9), ("subnets", []),
])
def test_read_only_attribute_on_put(user, attr, value):
    net = user.network()
    expect_bad(user.put(f"/v2.0/networks/{net['id']}", json={"network": {attr: value}}),
               f"Cannot update read-only attribute {attr}")


def test_read_only_attributes_of_ports_and_subnets(user):
    net = user.network()
    subnet = user.subnet(net["id"], "10.50.0.0/24")
    port = user.port(net["id"])
    other_net = user.network()
    expect_bad(user.put(f"/v2.0/ports/{port['id']}",
                        json={"port": {"network_id": other_net["id"]}}),
               "Cannot update read-only attribute network_id")
    for attr, value in (("cidr", "10.51.0.0/24"), ("ip_version", 6),
                        ("network_id", other_net["id"])):
        expect_bad(user.put(f"/v2.0/subnets/{subnet['id']}", json={"subnet": {attr: value}}),
                   f"Cannot update read-only attribute {attr}")


def test_put_with_a_bulk_body(user):
    net = user.network()
    expect_bad(user.put(f"/v2.0/networks/{net['id']}", json={"networks": [{"name": "x"}]}),
               "Bulk operation not supported")


@pytest.mark.parametrize("collection,body,missing", [
    ("ports", {}, "network_id"),
    ("subnets", {"network_id": "<net>", "cidr": "10.0.0.0/24"}, "ip_version"),
    ("subnets", {"ip_version": 4, "cidr": "10.0.0.0/24"}, "network_id"),
    ("subnetpools", {"prefixes": ["10.0.0.0/8"]}, "name"),
    ("subnetpools", {"name": "p"}, "prefixes"),
])
def test_missing_required_attribute(user, collection, body, missing):
    net = user.network()
    body = {k: net["id"] if v == "<net>" else v for k, v in body.items()}
    resp = user.post(f"/v2.0/{collection}", json={collection[:-1]: body})
    expect_bad(resp, f"Failed to parse request. Required attribute '{missing}' not specified")


@pytest.mark.parametrize("attr,value,reason", [
    ("name", 5, "'5' is not a valid string"),
    ("name", "n" * 256, f"'{'n' * 256}' exceeds maximum length of 255"),
    ("description", ["x"], "'['x']' is not a valid string"),
    ("description", "d" * 256, f"'{'d' * 256}' exceeds maximum length of 255"),
])
def test_invalid_values(user, attr, value, reason):
    net = user.network()
    message = f"Invalid input for {attr}. Reason: {reason}."
    expect_bad(user.post("/v2.0/networks", json={"network": {attr: value}}), message)
    expect_bad(user.put(f"/v2.0/networks/{net['id']}", json={"network": {attr: value}}),
               message)


def test_longest_values_are_accepted(user):
    net = user.network(name="n" * 255, description="d" * 255)
    assert (len(net["name"]), len(net["description"])) == (255, 255)


@pytest.mark.parametrize("value", ["maybe", "", 2, [True], None])
def test_unconvertible_boolean(user, value):
    resp = user.post("/v2.0/networks", json={"network": {"admin_state_up": value}})
    expect(resp, 400, "InvalidInput",
           f"Invalid input for operation: '{value}' cannot be converted to boolean.")


@pytest.mark.parametrize("value,expected", [("true", True), ("False", False), (0, False),
                                            (1, True), ("1", True)])
def test_convertible_boolean(user, value, expected):
    net = user.network(admin_state_up=value)
    assert net["admin_state_up"] is expected


def test_bad_uuid(user):
    for value in ("xyz", "", 42, None):
        resp = user.post("/v2.0/ports", json={"port": {"network_id": value}})
        expect_bad(resp, f"Invalid input for network_id. Reason: '{value}' is not a valid UUID.")


def test_unknown_path_ids_are_not_found(user):
    for collection, type_, template in (
            ("networks", "NetworkNotFound", "Network {} could not be found."),
            ("subnets", "SubnetNotFound", "Subnet {} could not be found."),
            ("ports", "PortNotFound", "Port {} could not be found."),
            ("subnetpools", "SubnetPoolNotFound", "Subnet pool {} could not be found.")):
        for item_id in (str(uuid.uuid4()), "not-a-uuid"):
            url = f"/v2.0/{collection}/{item_id}"
            message = template.format(item_id)
            expect(user.get(url), 404, type_, message)
            expect(user.put(url, json={collection[:-1]: {"name": "x"}}), 404, type_, message)
            expect(user.delete(url), 404, type_, message)


def test_bad_cidr_ip_and_mac(user):
    net = user.network()
    resp = user.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "nonsense"}})
    assert resp.status_code == 400
    assert error_of(resp)["type"] in ("InvalidInput", "HTTPBadRequest")
    expect_bad(user.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.0.0.0/24",
        "gateway_ip": "10.0.0.999"}}),
        "Invalid input for gateway_ip. Reason: '10.0.0.999' is not a valid IP address.")
    resp = user.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.0.0.0/24",
        "dns_nameservers": ["8.8.8.8", "dns.example"]}})
    assert resp.status_code == 400
    assert error_of(resp)["message"].startswith("Invalid input for dns_nameservers. Reason: ")
    expect_bad(user.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "mac_address": "zz:zz:zz:zz:zz:zz"}}),
        "Invalid input for mac_address. Reason: 'zz:zz:zz:zz:zz:zz' is not a valid MAC "
        "address.")
    expect_bad(user.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "fixed_ips": [{"ip_address": "300.1.1.1"}]}}),
        "Invalid input for fixed_ips. Reason: '300.1.1.1' is not a valid IP address.")
    assert ids_in_project(user, "subnets", user.project_id) == []
    assert ids_in_project(user, "ports", user.project_id) == []


def test_bad_cidr_message(user):
    net = user.network()
    resp = user.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "nonsense"}})
    expect(resp, 400, "InvalidInput",
           "Invalid input for operation: nonsense is not in a CIDR format.")


def test_bad_nameserver_message(user):
    net = user.network()
    resp = user.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.0.0.0/24",
        "dns_nameservers": ["dns.example"]}})
    expect_bad(resp, "Invalid input for dns_nameservers. Reason: 'dns.example' is not a valid "
                     "nameserver. 'dns.example' is not a valid IP address.")


def test_out_of_range_values(user):
    net = user.network()
    resp = user.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 5, "cidr": "10.0.0.0/24"}})
    assert resp.status_code == 400
    assert error_of(resp)["message"].startswith("Invalid input for ip_version. Reason: ")
    resp = user.post("/v2.0/subnetpools", json={"subnetpool": {
        "name": "q", "prefixes": ["10.0.0.0/8"], "default_quota": -1}})
    assert resp.status_code == 400
    assert error_of(resp)["message"].startswith("Invalid input for default_quota. Reason: ")
    resp = user.post("/v2.0/subnetpools", json={"subnetpool": {
        "name": "q", "prefixes": ["10.0.0.0/8"], "min_prefixlen": "eight"}})
    expect(resp, 400, "InvalidInput", "Invalid input for operation: 'eight' is not an integer.")
    assert ids_in_project(user, "subnetpools", user.project_id) == []


def test_values_validator_message(user):
    net = user.network()
    resp = user.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 5, "cidr": "10.0.0.0/24"}})
    expect_bad(resp, "Invalid input for ip_version. Reason: 5 is not in [4, 6].")


def test_non_negative_validator_message(user):
    resp = user.post("/v2.0/subnetpools", json={"subnetpool": {
        "name": "q", "prefixes": ["10.0.0.0/8"], "default_quota": -1}})
    expect_bad(resp, "Invalid input for default_quota. Reason: '-1' should be non-negative.")


def test_project_and_tenant_must_match(user, project):
    resp = user.post("/v2.0/networks", json={"network": {"project_id": project,
                                                         "tenant_id": uuid.uuid4().hex}})
    expect_bad(resp, "'project_id' and 'tenant_id' do not match")


def test_admin_without_a_project_must_name_one(server, project):
    admin = server.client(None, roles=("admin",))
    expect_bad(admin.post("/v2.0/networks", json={"network": {"name": "orphan"}}),
               "Running without keystone AuthN requires that project_id is specified")
    net = admin.post("/v2.0/networks", json={"network": {"project_id": project}}).json()
    assert net["network"]["project_id"] == project


# --- bulk ----------------------------------------------------------------------


def test_bulk_create(user, project):
    resp = user.post("/v2.0/networks", json={"networks": [
        {"name": "one"}, {"network": {"name": "two"}}, {"name": "three",
                                                        "admin_state_up": False}]})
    assert resp.status_code == 201, resp.text
    made = resp.json()["networks"]
    assert [n["name"] for n in made] == ["one", "two", "three"]
    assert [n["admin_state_up"] for n in made] == [True, True, False]
    assert sorted(ids_in_project(user, "networks", project)) == sorted(n["id"] for n in made)


def test_bulk_ports_and_subnets(user, project):
    net = user.network()
    resp = user.post("/v2.0/subnets", json={"subnets": [
        {"network_id": net["id"], "ip_version": 4, "cidr": "10.60.0.0/24"},
        {"network_id": net["id"], "ip_version": 6, "cidr": "2001:db8:60::/64"}]})
    assert resp.status_code == 201, resp.text
    assert len(resp.json()["subnets"]) == 2
    resp = user.post("/v2.0/ports", json={"ports": [{"network_id": net["id"]}] * 3})
    assert resp.status_code == 201, resp.text
    ports = resp.json()["ports"]
    assert len({p["mac_address"] for p in ports}) == 3
    v4 = [ip["ip_address"] for p in ports for ip in p["fixed_ips"] if "." in ip["ip_address"]]
    assert len(set(v4)) == 3


@pytest.mark.parametrize("body", [{"networks": []}, {"networks": None}])
def test_empty_bulk(user, body):
    expect_bad(user.post("/v2.0/networks", json=body), "Resources required")


def test_bulk_with_an_invalid_item_creates_nothing(user, project):
    resp = user.post("/v2.0/networks", json={"networks": [
        {"name": "good"}, {"name": "good too"}, {"name": 5}]})
    expect_bad(resp, "Invalid input for name. Reason: '5' is not a valid string.")
    assert ids_in_project(user, "networks", project) == []


def test_bulk_failing_in_the_plugin_creates_nothing(user, project):
    net = user.network()
    resp = user.post("/v2.0/subnets", json={"subnets": [
        {"network_id": net["id"], "ip_version": 4, "cidr": "10.61.0.0/24"},
        {"network_id": net["id"], "ip_version": 4, "cidr": "10.62.0.0/24"},
        {"network_id": net["id"], "ip_version": 4, "cidr": "10.61.0.0/25"}]})
    assert resp.status_code == 400, resp.text
    assert ids_in_project(user, "subnets", project) == []
    subnet = user.subnet(net["id"], "10.63.0.0/24")
    mac = "fa:16:3e:00:11:22"
    resp = user.post("/v2.0/ports", json={"ports": [
        {"network_id": net["id"], "mac_address": mac},
        {"network_id": net["id"], "fixed_ips": [{"subnet_id": subnet["id"]}]},
        {"network_id": net["id"], "mac_address": mac}]})
    assert resp.status_code == 409, resp.text
    assert error_of(resp)["type"] == "MacAddressInUse"
    assert ids_in_project(user, "ports", project) == []
    # nothing of the failed bulk holds an address: the whole pool is still free
    port = user.port(net["id"], fixed_ips=[{"ip_address": "10.63.0.2"}])
    assert port["fixed_ips"][0]["ip_address"] == "10.63.0.2"


def test_bulk_past_the_quota_creates_nothing(admin, user, project):
    resp = admin.put(f"/v2.0/quotas/{project}", json={"quota": {"network": 2}})
    assert resp.status_code == 200
    resp = user.post("/v2.0/networks", json={"networks": [{}, {}, {}]})
    expect(resp, 409, "OverQuota", "Quota exceeded for resources: ['network'].")
    assert ids_in_project(user, "networks", project) == []


def test_bulk_with_a_foreign_project_item_creates_nothing(user, project):
    resp = user.post("/v2.0/networks", json={"networks": [
        {"name": "a"}, {"project_id": uuid.uuid4().hex}]})
    expect_bad(resp, "Specifying 'project_id' other than the authenticated project in request "
                     "is not allowed for the current user.")
    assert ids_in_project(user, "networks", project) == []


# --- If-Match ------------------------------------------------------------------


def test_if_match_on_put(user):
    net = user.network()
    rev = net["revision_number"]
    resp = user.put(f"/v2.0/networks/{net['id']}", json={"network": {"name": "a"}},
                    headers={"If-Match": f"revision_number={rev}"})
    assert resp.status_code == 200
    assert resp.json()["network"]["revision_number"] == rev + 1
    resp = user.put(f"/v2.0/networks/{net['id']}", json={"network": {"name": "b"}},
                    headers={"If-Match": f"revision_number={rev}"})
    expect(resp, 412, "RevisionNumberConstraintFailed",
           f"Constrained to {rev}, but current revision is {rev + 1}")
    assert user.show("networks", net["id"])["name"] == "a"
    resp = user.put(f"/v2.0/networks/{net['id']}", json={"network": {"name": "c"}},
                    headers={"If-Match": f'"revision_number={rev + 1}"'})
    assert resp.status_code == 200 and resp.json()["network"]["name"] == "c"


def test_if_match_on_delete(user):
    net = user.network()
    port = user.port(net["id"])
    rev = port["revision_number"]
    resp = user.delete(f"/v2.0/ports/{port['id']}",
                       headers={"If-Match": f"revision_number={rev + 5}"})
    expect(resp, 412, "RevisionNumberConstraintFailed",
           f"Constrained to {rev + 5}, but current revision is {rev}")
    assert user.show("ports", port["id"])["id"] == port["id"]
    resp = user.delete(f"/v2.0/ports/{port['id']}", headers={"If-Match": f"revision_number={rev}"})
    assert resp.status_code == 204
    rev = user.show("networks", net["id"])["revision_number"]
    resp = user.delete(f"/v2.0/networks/{net['id']}",
                       headers={"If-Match": f"revision_number={rev - 1}"})
    assert resp.status_code == 412
    resp = user.delete(f"/v2.0/networks/{net['id']}",
                       headers={"If-Match": f"revision_number={rev}"})
    assert resp.status_code == 204


def test_if_match_on_every_collection(user):
    """revision-if-match, listed: every resource with revision numbers honours it."""
    net = user.network()
    group = user.post("/v2.0/security-groups", json={"security_group": {"name": "m"}})
    items = {"networks": net, "subnets": user.subnet(net["id"], "10.64.0.0/24"),
             "ports": user.port(net["id"]),
             "subnetpools": user.create("subnetpools", name="m", prefixes=["10.65.0.0/16"]),
             "routers": user.create("routers", name="m"),
             "security-groups": group.json()["security_group"],
             "address-groups": user.post("/v2.0/address-groups", json={
                 "address_group": {"name": "m"}}).json()["address_group"]}
    for collection, item in items.items():
        key = collection[:-1].replace("-", "_")
        current = user.get(f"/v2.0/{collection}/{item['id']}").json()[key]["revision_number"]
        resp = user.put(f"/v2.0/{collection}/{item['id']}",
                        json={key: {"description": "x"}},
                        headers={"If-Match": f"revision_number={current + 1}"})
        assert resp.status_code == 412, (collection, resp.text)
        resp = user.put(f"/v2.0/{collection}/{item['id']}",
                        json={key: {"description": "x"}},
                        headers={"If-Match": f"revision_number={current}"})
        assert resp.status_code == 200, (collection, resp.text)
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert "revision-if-match" in aliases


@pytest.mark.parametrize("header,message", [
    ("revision_number=abc", "Revision number etag must be in the format of "
                            "revision_number=<int>."),
    ("revision_number=", "Revision number etag must be in the format of "
                         "revision_number=<int>."),
    ('"revision_number=1", "revision_number=2"', "Multiple revision_number etags are not "
                                                 "supported.."),
])
def test_malformed_if_match(user, header, message):
    net = user.network()
    for resp in (user.put(f"/v2.0/networks/{net['id']}", json={"network": {"name": "z"}},
                          headers={"If-Match": header}),
                 user.delete(f"/v2.0/networks/{net['id']}", headers={"If-Match": header})):
        expect(resp, 400, "BadRequest", f"Bad if-match request: {message}")
    assert user.show("networks", net["id"])["name"] == ""


def test_other_etags_are_ignored(user):
    net = user.network()
    for header in ("*", '"abc"'):
        resp = user.put(f"/v2.0/networks/{net['id']}", json={"network": {"name": "e"}},
                        headers={"If-Match": header})
        assert resp.status_code == 200, resp.text


# --- methods, URLs, request ids ------------------------------------------------------


@pytest.mark.parametrize("method,path", [
    ("PATCH", "/v2.0/networks"),
    ("POST", "/v2.0/networks/{id}"), ("PATCH", "/v2.0/networks/{id}"),
    ("POST", "/v2.0/subnets/{id}"),
    ("POST", "/"), ("PUT", "/"), ("DELETE", "/"),
    ("POST", "/v2.0/"), ("DELETE", "/v2.0/"),
])
def test_method_not_allowed(user, method, path):
    net = user.network()
    resp = user.request(method, path.format(id=net["id"]))
    expect(resp, 405, "HTTPMethodNotAllowed", CRLF_405)


@pytest.mark.parametrize("method,collection,error,name", [
    ("PUT", "networks", "NetworkNotFound", "Network"),
    ("DELETE", "networks", "NetworkNotFound", "Network"),
    ("PUT", "ports", "PortNotFound", "Port"),
    ("DELETE", "subnets", "SubnetNotFound", "Subnet"),
    ("DELETE", "subnetpools", "SubnetPoolNotFound", "Subnet pool"),
])
def test_put_and_delete_on_a_collection_look_for_no_item(user, method, collection, error,
                                                         name):
    """Neutron's policy check fetches the item the URL does not name: a 404 of its type."""
    net = user.network()
    resp = user.request(method, f"/v2.0/{collection}")
    expect(resp, 404, error, f"{name} None could not be found.")
    assert user.show("networks", net["id"])["id"] == net["id"]


def test_put_on_a_collection_checks_its_body_first(user):
    resp = user.put("/v2.0/networks", json={"network": {"status": "DOWN"}})
    expect(resp, 400, "HTTPBadRequest", "Cannot update read-only attribute status")
    resp = user.put("/v2.0/networks", json={"networks": [{"name": "a"}]})
    expect(resp, 400, "HTTPBadRequest", "Bulk operation not supported")
    resp = user.put("/v2.0/networks", json={"network": {"name": "a"}})
    expect(resp, 404, "NetworkNotFound", "Network None could not be found.")


def test_head_is_not_allowed(user):
    net = user.network()
    for path in ("/v2.0/networks", f"/v2.0/networks/{net['id']}"):
        assert user.request("HEAD", path).status_code == 405


@pytest.mark.parametrize("path", [
    "/v2.0/nothing", "/v2.0/nothing/1", "/v3/networks", "/v2.0/networks/{id}/extra",
    "/v2.0/networks/{id}/tags/a/b", "/v2.0", "/favicon.ico",
])
def test_unknown_urls_are_not_found(user, path):
    net = user.network()
    resp = user.get(path.format(id=net["id"]))
    expect(resp, 404, "HTTPNotFound", "The resource could not be found.")


def test_delete_with_a_body(user):
    net = user.network()
    for body in (b'{"network": {}}', b"{}", b" "):
        expect_bad(raw(user, "DELETE", f"/v2.0/networks/{net['id']}", body),
                   "Request body is not supported in DELETE.")
    assert user.show("networks", net["id"])["id"] == net["id"]


def test_request_id_on_every_response(server, user):
    net = user.network()
    anonymous = httpx.Client(base_url=server.url)
    responses = [
        user.get("/"), user.get("/v2.0/"), user.get("/v2.0/networks"),
        user.get(f"/v2.0/networks/{net['id']}"),
        user.post("/v2.0/networks", json={"network": {}}),
        user.put(f"/v2.0/networks/{net['id']}", json={"network": {"name": "r"}}),
        user.get(f"/v2.0/networks/{uuid.uuid4()}"), user.get("/v2.0/nothing"),
        user.request("PATCH", "/v2.0/networks"), raw(user, "POST", "/v2.0/networks", b"{"),
        user.get("/v2.0/networks", params={"foo": "bar"}),
        user.get("/v2.0/extensions"),
        anonymous.get("/v2.0/networks"),
        user.delete(f"/v2.0/networks/{net['id']}"),
    ]
    seen = set()
    for resp in responses:
        request_id = resp.headers.get("x-openstack-request-id", "")
        assert request_id.startswith("req-"), (resp.request.url, resp.status_code)
        uuid.UUID(request_id[4:])
        seen.add(request_id)
    assert len(seen) == len(responses)
    assert [r.status_code for r in responses] == [
        200, 200, 200, 200, 201, 200, 404, 404, 405, 400, 400, 200, 401, 204]


def test_errors_are_json(user):
    resp = user.get("/v2.0/nothing")
    assert resp.headers["content-type"].startswith("application/json")
    resp = user.delete(f"/v2.0/networks/{user.network()['id']}")
    assert resp.status_code == 204 and resp.content == b""


# --- versions, resources, extensions -------------------------------------------------


def test_versions_document(server):
    resp = httpx.get(server.url + "/")  # no identity needed
    assert resp.status_code == 200
    assert resp.json() == {"versions": [{
        "id": "v2.0", "status": "CURRENT",
        "links": [{"rel": "self", "href": f"{server.url}/v2.0/"}]}]}


def test_resources_document(server, user):
    resp = user.get("/v2.0/")
    assert resp.status_code == 200
    assert resp.json() == {"resources": [
        {"name": name, "collection": f"{name}s",
         "links": [{"rel": "self", "href": f"{server.url}/v2.0/{name}s"}]}
        for name in ("network", "subnet", "subnetpool", "port")]}


def test_extensions_list_and_show(user):
    resp = user.get("/v2.0/extensions")
    assert resp.status_code == 200
    extensions = resp.json()["extensions"]
    by_alias = {e["alias"]: e for e in extensions}
    assert len(by_alias) == len(extensions)
    assert {"external-net", "net-mtu", "standard-attr-tag", "quotas", "quota_details",
            "project-id", "pagination", "sorting", "filter-validation",
            "standard-attr-revisions", "empty-string-filtering"} <= set(by_alias)
    for ext in extensions:
        assert list(ext) == ["name", "alias", "description", "updated", "links"]
        assert ext["links"] == []
    resp = user.get("/v2.0/extensions/standard-attr-tag")
    assert resp.status_code == 200
    assert resp.json() == {"extension": by_alias["standard-attr-tag"]}
    assert by_alias["standard-attr-tag"]["description"] == (
        "Enables to set tag on resources with standard attribute.")


def test_unknown_extension(user):
    expect(user.get("/v2.0/extensions/warp-drive"), 404, "HTTPNotFound",
           "Extension with alias warp-drive does not exist")


def test_extensions_only_answer_get(user):
    for method, path in (("POST", "/v2.0/extensions"), ("PUT", "/v2.0/extensions/quotas"),
                         ("DELETE", "/v2.0/extensions/quotas")):
        assert user.request(method, path).status_code == 404


def test_nul_in_the_path_is_not_found(user):
    for path in ("/v2.0/networks/a%00b", "/v2.0/net%00works"):
        assert user.get(path).status_code == 404
