"""Answers people notice in their first hour, pinned to what Neutron answers.

Each looks like a slip and is not: it is Neutron's behaviour, read in its code
(the pecan app, its hooks, neutron-lib's converters and validators), and real
clients depend on Neutron's answers, not on prettier ones. A test says where
each comes from, so that nobody "fixes" it away.
"""

from __future__ import annotations

import httpx
import pytest

from tests.harness import ApiClient, error_of

# webob's HTTPClientError explanation: pecan.abort(405) raises webob's
# HTTPMethodNotAllowed, which has no text of its own, and Neutron's error hook
# puts str(exception) in the body: CR LF and all.
WEBOB_405 = ("The server could not comply with the request since\r\nit is either malformed "
             "or otherwise incorrect.\r\n")


def neutron_error(resp: httpx.Response, status: int, type_: str, message: str) -> None:
    assert resp.status_code == status, resp.text
    assert error_of(resp) == {"type": type_, "message": message, "detail": ""}


def send(client: ApiClient, method: str, path: str, body: bytes, content_type: str
         ) -> httpx.Response:
    return client.request(method, path, content=body, headers={"Content-Type": content_type})


@pytest.mark.parametrize("method,path", [("PATCH", "/v2.0/networks"),
                                         ("PATCH", "/v2.0/networks/{id}"),
                                         ("POST", "/v2.0/networks/{id}"),
                                         ("POST", "/")])
def test_405_carries_webobs_text_with_its_line_breaks(user, method, path):
    net = user.network()
    neutron_error(user.request(method, path.format(id=net["id"])), 405,
                  "HTTPMethodNotAllowed", WEBOB_405)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "application/octet-stream"])
def test_a_body_is_read_as_json_whatever_its_content_type(user, content_type):
    """Neutron's body hook parses every POST and PUT body as JSON and never
    looks at Content-Type (its legacy WSGI path fell back to JSON too)."""
    resp = send(user, "POST", "/v2.0/networks", b'{"network": {"name": "plain"}}',
                content_type)
    assert resp.status_code == 201, resp.text
    net = resp.json()["network"]
    assert net["name"] == "plain"
    resp = send(user, "PUT", f"/v2.0/networks/{net['id']}",
                b'{"network": {"name": "still plain"}}', content_type)
    assert resp.status_code == 200, resp.text
    assert user.show("networks", net["id"])["name"] == "still plain"
    neutron_error(send(user, "POST", "/v2.0/networks", b"name=plain", content_type), 400,
                  "HTTPBadRequest", "Body contains invalid data")


@pytest.mark.parametrize("body", [b"{not json", b'{"network": {"name": "x"}', b"\xff\xfe",
                                  b"[]"])
def test_invalid_json_is_body_contains_invalid_data(user, body):
    """The message of Neutron's body hook, which names no parser error."""
    net = user.network()
    for method, path in (("POST", "/v2.0/networks"), ("PUT", f"/v2.0/networks/{net['id']}")):
        neutron_error(send(user, method, path, body, "application/json"), 400,
                      "HTTPBadRequest", "Body contains invalid data")


def test_fields_naming_no_attribute_select_nothing(user):
    """Neutron's user-filter hook keeps, of each item, the keys the fields name:
    none, for a name no attribute has. An empty object per item, no error."""
    nets = [user.network(), user.network()]
    resp = user.get("/v2.0/networks", params={"fields": "nope",
                                              "project_id": nets[0]["project_id"]})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"networks": [{}, {}]}
    resp = user.get(f"/v2.0/networks/{nets[0]['id']}", params={"fields": "nope"})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"network": {}}


@pytest.mark.parametrize("value", ["maybe", "1", "yes", ""])
def test_page_reverse_is_reverse_only_when_true(user, value):
    """Neutron's get_page_reverse: ``value.lower() == "true"``, anything else is
    a forward page, not an error."""
    project = user.network()["project_id"]
    user.network()
    forward = user.get("/v2.0/networks", params={"project_id": project, "limit": 1})
    asked = user.get("/v2.0/networks", params={"project_id": project, "limit": 1,
                                               "page_reverse": value})
    assert asked.status_code == 200, asked.text
    assert asked.json()["networks"] == forward.json()["networks"]
    reverse = user.get("/v2.0/networks", params={"project_id": project, "limit": 1,
                                                 "page_reverse": "TRUE"})
    assert reverse.json()["networks"] != forward.json()["networks"]


def test_a_value_a_converter_refuses_is_invalid_input_for_operation(user):
    """neutron-lib's converters (convert_to_int, ...) raise InvalidInput, whose
    text names no attribute, single or bulk; its validators' failures are
    wrapped with the attribute's name."""
    for body in ({"network": {"mtu": "abc"}}, {"networks": [{"name": "a"}, {"mtu": "abc"}]}):
        neutron_error(user.post("/v2.0/networks", json=body), 400, "InvalidInput",
                      "Invalid input for operation: 'abc' is not an integer.")
    for body in ({"network": {"name": 5}}, {"networks": [{"name": "a"}, {"name": 5}]}):
        neutron_error(user.post("/v2.0/networks", json=body), 400, "HTTPBadRequest",
                      "Invalid input for name. Reason: '5' is not a valid string.")


@pytest.mark.parametrize("pairs,message", [
    ([{"ip_address": "abc"}], "'abc' is not a valid IP address"),
    ([{"ip_address": "10.0.0.5", "mac_address": "zz"}], "'zz' is not a valid MAC address"),
    ("x", "Allowed address pairs must be a list."),
])
def test_allowed_address_pairs_errors_are_the_validators_own(user, pairs, message):
    """neutron-lib's allowed_address_pairs validator raises HTTPBadRequest with
    its own text rather than returning it: the attribute is not named."""
    net = user.network()
    for body in ({"port": {"network_id": net["id"], "allowed_address_pairs": pairs}},
                 {"ports": [{"network_id": net["id"], "allowed_address_pairs": pairs}]}):
        neutron_error(user.post("/v2.0/ports", json=body), 400, "HTTPBadRequest", message)
