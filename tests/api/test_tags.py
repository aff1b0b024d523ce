"""Tags (standard-attr-tag) on every taggable collection, and the tag filters."""

from __future__ import annotations

import uuid

import pytest

from tests.harness import ApiClient, error_of, expect_error

COLLECTIONS = ["networks", "subnets", "ports", "subnetpools"]


def make(client: ApiClient, collection: str, net: dict | None = None) -> dict:
    """One fresh resource of ``collection`` owned by the client's project."""
    if collection == "networks":
        return client.network()
    if collection == "subnetpools":
        return client.create("subnetpools", name="tagged", prefixes=[
            f"10.{uuid.uuid4().int % 200}.0.0/16"])
    net = net or client.network()
    if collection == "subnets":
        return client.subnet(net["id"], "10.77.0.0/24")
    return client.port(net["id"])


@pytest.fixture(params=COLLECTIONS)
def taggable(request, user) -> tuple[str, dict]:
    return request.param, make(user, request.param)


def tags_url(collection: str, item: dict, tag: str | None = None) -> str:
    url = f"/v2.0/{collection}/{item['id']}/tags"
    return url if tag is None else f"{url}/{tag}"


def revision(client: ApiClient, collection: str, item: dict) -> int:
    return client.show(collection, item["id"])["revision_number"]


def test_put_all_replaces_and_echoes(user, taggable):
    collection, item = taggable
    resp = user.put(tags_url(collection, item), json={"tags": ["red", "blue", "green"]})
    assert resp.status_code == 200
    assert resp.json() == {"tags": ["red", "blue", "green"]}  # the client's order
    resp = user.put(tags_url(collection, item), json={"tags": ["green", "black"]})
    assert resp.json() == {"tags": ["green", "black"]}
    got = user.get(tags_url(collection, item))
    assert got.status_code == 200
    assert sorted(got.json()["tags"]) == ["black", "green"]
    assert sorted(user.show(collection, item["id"])["tags"]) == ["black", "green"]
    assert user.put(tags_url(collection, item), json={"tags": []}).json() == {"tags": []}
    assert user.get(tags_url(collection, item)).json() == {"tags": []}


def test_put_one_get_one_delete_one(user, taggable):
    collection, item = taggable
    resp = user.put(tags_url(collection, item, "alpha"))
    assert resp.status_code == 201
    assert user.put(tags_url(collection, item, "alpha")).status_code == 201  # idempotent
    assert user.put(tags_url(collection, item, "beta")).status_code == 201
    assert sorted(user.get(tags_url(collection, item)).json()["tags"]) == ["alpha", "beta"]
    resp = user.get(tags_url(collection, item, "alpha"))
    assert resp.status_code == 204 and resp.content == b""
    resp = user.get(tags_url(collection, item, "gamma"))
    assert resp.status_code == 404
    assert error_of(resp) == {"type": "TagNotFound", "message": "Tag gamma could not be found.",
                              "detail": ""}
    assert user.delete(tags_url(collection, item, "alpha")).status_code == 204
    resp = user.delete(tags_url(collection, item, "alpha"))
    assert resp.status_code == 404 and error_of(resp)["type"] == "TagNotFound"
    assert user.get(tags_url(collection, item)).json() == {"tags": ["beta"]}


def test_delete_all(user, taggable):
    collection, item = taggable
    user.put(tags_url(collection, item), json={"tags": ["a", "b"]})
    assert user.delete(tags_url(collection, item)).status_code == 204
    assert user.get(tags_url(collection, item)).json() == {"tags": []}
    assert user.delete(tags_url(collection, item)).status_code == 204  # nothing left: still 204


def test_tag_changes_bump_the_revision(user, taggable):
    collection, item = taggable
    start = revision(user, collection, item)
    user.put(tags_url(collection, item, "one"))
    assert revision(user, collection, item) == start + 1
    user.put(tags_url(collection, item, "one"))  # already there: nothing changes
    assert revision(user, collection, item) == start + 1
    user.put(tags_url(collection, item), json={"tags": ["one", "two", "three"]})
    assert revision(user, collection, item) == start + 2
    user.put(tags_url(collection, item), json={"tags": ["three", "two", "one"]})  # same set
    assert revision(user, collection, item) == start + 2
    user.delete(tags_url(collection, item, "two"))
    assert revision(user, collection, item) == start + 3
    user.delete(tags_url(collection, item))
    assert revision(user, collection, item) == start + 4
    user.delete(tags_url(collection, item))  # no tags left to remove
    assert revision(user, collection, item) == start + 4


def test_fifty_tags_at_most(user, taggable):
    collection, item = taggable
    fifty = [f"t{i}" for i in range(50)]
    assert user.put(tags_url(collection, item), json={"tags": fifty}).status_code == 200
    message = (f"Bad {collection} request: The number of tags exceed the per-resource limit "
               "of 50.")
    resp = user.put(tags_url(collection, item, "t50"))
    assert resp.status_code == 400
    assert error_of(resp) == {"type": "BadRequest", "message": message, "detail": ""}
    assert user.put(tags_url(collection, item, "t7")).status_code == 201  # already there
    resp = user.put(tags_url(collection, item), json={"tags": [*fifty, "t50"]})
    assert resp.status_code == 400
    assert error_of(resp) == {"type": "BadRequest", "message": message, "detail": ""}
    assert len(user.get(tags_url(collection, item)).json()["tags"]) == 50


def test_tag_length(user):
    net = user.network()
    longest = "x" * 255
    assert user.put(tags_url("networks", net, longest)).status_code == 201
    assert user.get(tags_url("networks", net, longest)).status_code == 204
    too_long = "y" * 256
    expected = {"type": "InvalidInput", "detail": "",
                "message": f"Invalid input for operation: '{too_long}' exceeds maximum "
                           "length of 255."}
    resp = user.put(tags_url("networks", net, too_long))
    assert resp.status_code == 400 and error_of(resp) == expected
    resp = user.put(tags_url("networks", net), json={"tags": ["ok", too_long]})
    assert resp.status_code == 400 and error_of(resp) == expected
    assert user.get(tags_url("networks", net)).json() == {"tags": [longest]}


def test_unusual_tag_text(user):
    net = user.network()
    for tag in ("with space", "ünïcödé", "a:b=c", "dots.and-dashes"):
        assert user.put(tags_url("networks", net, tag)).status_code == 201
        assert user.get(tags_url("networks", net, tag)).status_code == 204
    assert sorted(user.get(tags_url("networks", net)).json()["tags"]) == sorted(
        ["with space", "ünïcödé", "a:b=c", "dots.and-dashes"])


@pytest.mark.parametrize("body,message", [
    ({}, "Invalid tags body"),
    ({"tag": ["a"]}, "Invalid tags body"),
    ({"tags": "a"}, "'a' is not a list"),
    ({"tags": ["a", "b", "a"]}, "Duplicate items in the list: 'a'"),
    ({"tags": ["a", 5]}, "'5' is not a valid string"),
])
def test_bad_tags_body(user, body, message):
    net = user.network()
    resp = user.put(tags_url("networks", net), json=body)
    assert resp.status_code == 400
    assert error_of(resp) == {"type": "InvalidInput", "detail": "",
                              "message": f"Invalid input for operation: {message}."}


def test_tags_of_unknown_resource(user):
    missing = {"id": str(uuid.uuid4())}
    for method, tag, body in (("GET", None, None), ("GET", "a", None), ("PUT", "a", None),
                              ("PUT", None, {"tags": ["a"]}), ("DELETE", "a", None),
                              ("DELETE", None, None)):
        resp = user.request(method, tags_url("networks", missing, tag), json=body)
        assert resp.status_code == 404, (method, tag, resp.text)
        assert error_of(resp)["type"] == "NetworkNotFound"


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_tags_on_another_projects_resource_are_not_found(user, other, collection):
    theirs = make(other, collection)
    other.put(tags_url(collection, theirs, "secret"))
    for method, tag, body in (("GET", None, None), ("GET", "secret", None),
                              ("PUT", "mine", None), ("PUT", None, {"tags": ["mine"]}),
                              ("DELETE", "secret", None), ("DELETE", None, None)):
        resp = user.request(method, tags_url(collection, theirs, tag), json=body)
        assert resp.status_code == 404, (method, tag, resp.text)
    assert other.get(tags_url(collection, theirs)).json() == {"tags": ["secret"]}


def test_tags_on_a_shared_network_are_readable_not_writable(admin, user, other_project):
    shared = admin.network(shared=True, project_id=other_project)
    admin.put(tags_url("networks", shared, "public"))
    assert user.get(tags_url("networks", shared)).json() == {"tags": ["public"]}
    assert user.get(tags_url("networks", shared, "public")).status_code == 204
    for method, tag, body, action in (
            ("PUT", "mine", None, "update_network:tags"),
            ("PUT", None, {"tags": []}, "update_network:tags"),
            ("DELETE", "public", None, "delete_network:tags"),
            ("DELETE", None, None, "delete_network:tags")):
        resp = user.request(method, tags_url("networks", shared, tag), json=body)
        assert resp.status_code == 403, (method, tag, resp.text)
        assert error_of(resp) == {"type": "PolicyNotAuthorized", "detail": "",
                                  "message": f"{action} is disallowed by policy"}
    assert admin.get(tags_url("networks", shared)).json() == {"tags": ["public"]}


def test_admin_tags_any_projects_resource(admin, other):
    theirs = other.network()
    assert admin.put(tags_url("networks", theirs, "by-admin")).status_code == 201
    assert other.get(tags_url("networks", theirs)).json() == {"tags": ["by-admin"]}


def test_reader_cannot_change_tags(server, user, project):
    net = user.network()
    reader = server.client(project, roles=("reader",))
    assert reader.get(tags_url("networks", net)).status_code == 200
    assert reader.put(tags_url("networks", net, "nope")).status_code == 403
    assert reader.put(tags_url("networks", net), json={"tags": ["nope"]}).status_code == 403


# --- filters ---------------------------------------------------------------------


@pytest.fixture(params=COLLECTIONS)
def tagged_set(request, user) -> tuple[str, str, dict[str, str]]:
    """Four resources with tag sets {x}, {x,y}, {y,z}, {}; tags get a unique suffix."""
    collection = request.param
    suffix = uuid.uuid4().hex[:8]
    net = user.network() if collection in ("subnets", "ports") else None
    ids = {}
    for i, key in enumerate(["x", "xy", "yz", "none"]):
        if collection == "subnets":
            item = user.subnet(net["id"], f"10.78.{i}.0/24")
        else:
            item = make(user, collection, net)
        tags = [f"{t}{suffix}" for t in key if key != "none"]
        user.put(tags_url(collection, item), json={"tags": tags})
        ids[key] = item["id"]
    return collection, suffix, ids


def matching(client: ApiClient, collection: str, params, ids: dict[str, str]) -> set[str]:
    resp = client.get(f"/v2.0/{collection}", params=params)
    assert resp.status_code == 200, resp.text
    by_id = {v: k for k, v in ids.items()}
    return {by_id[item["id"]] for item in resp.json()[collection] if item["id"] in by_id}


def test_tag_filters(user, tagged_set):
    collection, s, ids = tagged_set
    x, y, z = f"x{s}", f"y{s}", f"z{s}"
    assert matching(user, collection, {"tags": x}, ids) == {"x", "xy"}
    assert matching(user, collection, {"tags": f"{x},{y}"}, ids) == {"xy"}
    assert matching(user, collection, [("tags", x), ("tags", y)], ids) == {"xy"}
    assert matching(user, collection, {"tags-any": f"{x},{z}"}, ids) == {"x", "xy", "yz"}
    assert matching(user, collection, [("tags-any", x), ("tags-any", z)], ids) == {
        "x", "xy", "yz"}
    assert matching(user, collection, {"not-tags": f"{x},{y}"}, ids) == {"x", "yz", "none"}
    assert matching(user, collection, {"not-tags-any": f"{x},{z}"}, ids) == {"none"}
    assert matching(user, collection, {"tags": y, "not-tags-any": z}, ids) == {"xy"}
    assert matching(user, collection, {"tags-any": f"{x},{y}", "not-tags": f"{x},{y}"},
                    ids) == {"x", "yz"}
    assert matching(user, collection, {"tags": f"nothing{s}"}, ids) == set()


def test_tag_filter_result_shows_all_tags(user, tagged_set):
    collection, s, ids = tagged_set
    resp = user.get(f"/v2.0/{collection}", params={"tags": f"z{s}"})
    items = resp.json()[collection]
    assert [i["id"] for i in items] == [ids["yz"]]
    assert sorted(items[0]["tags"]) == [f"y{s}", f"z{s}"]


def test_ports_take_tags_on_create(user):
    net = user.network()
    resp = user.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                   "tags": ["made-with"]}})
    assert resp.status_code == 201, resp.text
    assert resp.json()["port"]["tags"] == ["made-with"]


def test_ports_take_tags_in_a_bulk_create(user):
    net = user.network()
    resp = user.post("/v2.0/ports", json={"ports": [
        {"network_id": net["id"], "tags": ["b", "a"]}, {"network_id": net["id"]}]})
    assert resp.status_code == 201, resp.text
    made = resp.json()["ports"]
    assert [p["tags"] for p in made] == [["a", "b"], []]
    assert user.show("ports", made[0]["id"])["tags"] == ["a", "b"]
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert "tag-ports-during-bulk-creation" in aliases
    resp = user.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                   "tags": ["a", "a"]}})
    assert resp.status_code == 400
    assert "Duplicate items" in error_of(resp)["message"]


@pytest.mark.parametrize("collection", ["networks", "subnets", "subnetpools",
                                        "security-groups"])
def test_only_ports_take_tags_in_a_create_body(user, collection):
    """As Neutron: the other taggable resources refuse them (tags go to /tags)."""
    net = user.network()
    bodies = {"networks": {}, "subnets": {"network_id": net["id"], "ip_version": 4,
                                          "cidr": "10.78.0.0/24"},
              "subnetpools": {"name": "p", "prefixes": ["10.79.0.0/16"]},
              "security-groups": {"name": "g"}}
    name = collection.replace("-", "_")[:-1]
    resp = user.post(f"/v2.0/{collection}",
                     json={name: {**bodies[collection], "tags": ["a"]}})
    expect_error(resp, 400, "HTTPBadRequest", "Attribute 'tags' not allowed in POST")
    # its own project's only: other tests' shared and external resources are visible
    assert user.get(f"/v2.0/{collection}", params={
        "tags": "a", "project_id": user.project_id}).json()[collection.replace("-", "_")] == []


def test_tag_creation_adds_tags(user, taggable):
    """tag-creation: POST /tags adds to the tags there are (idempotent), 200 with the body."""
    collection, item = taggable
    url = tags_url(collection, item)
    assert user.put(url, json={"tags": ["red"]}).status_code == 200
    resp = user.post(url, json={"tags": ["green", "red"]})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"tags": ["green", "red"]}
    revision = user.show(collection, item["id"])["revision_number"]
    assert sorted(user.get(url).json()["tags"]) == ["green", "red"]
    assert user.post(url, json={"tags": ["red"]}).status_code == 200
    assert user.show(collection, item["id"])["revision_number"] == revision  # nothing new
    expect_error(user.post(url, json={"tags": ["a", "a"]}), 400, "InvalidInput")
    expect_error(user.post(url, json={}), 400, "InvalidInput")
    assert user.post(f"{url}/red").status_code == 405


def test_tags_are_case_sensitive(request, server, user):
    net = user.network()
    resp = user.put(tags_url("networks", net), json={"tags": ["Blue", "blue"]})
    assert resp.status_code == 200, resp.text
    assert sorted(user.get(tags_url("networks", net)).json()["tags"]) == ["Blue", "blue"]
    assert user.delete(tags_url("networks", net, "blue")).status_code == 204
    assert user.get(tags_url("networks", net, "BLUE")).status_code == 404
    found = user.get("/v2.0/networks", params={"id": net["id"], "tags": "blue"})
    assert found.json()["networks"] == []
