"""Routers' conntrack helpers (/v2.0/routers/{id}/conntrack_helpers), with
Neutron's checks, errors and policy (the router's owner), and listed in the
router itself (expose-l3-conntrack-helper)."""

from __future__ import annotations

import pytest

from tests.conftest import BACKENDS
from tests.harness import ApiClient, Server, create_database, expect_error, start_server

NOWHERE = "7d5c2f59-0c3f-4b07-9d1e-6a2f1f0c1a11"


@pytest.fixture(scope="module", params=BACKENDS)
def cth_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"cth-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=(
        "service_plugins = router,conntrack_helper\n"
        "allowed_conntrack_helpers = ftp:tcp, tftp:udp, sip:udp, sip:tcp\n"))
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def admin(cth_server: Server, project: str) -> ApiClient:
    return cth_server.client(project, roles=("admin", "member"))


@pytest.fixture
def user(cth_server: Server, project: str) -> ApiClient:
    return cth_server.client(project, roles=("member", "reader"))


@pytest.fixture
def other(cth_server: Server, other_project: str) -> ApiClient:
    return cth_server.client(other_project, roles=("member", "reader"))


@pytest.fixture
def router(user: ApiClient) -> dict:
    resp = user.post("/v2.0/routers", json={"router": {"name": "r"}})
    assert resp.status_code == 201, resp.text
    return resp.json()["router"]


def path(router_id: str, helper_id: str = "") -> str:
    return f"/v2.0/routers/{router_id}/conntrack_helpers" + (f"/{helper_id}" if helper_id
                                                             else "")


def add(client: ApiClient, parent: str, **attrs):
    body = {"protocol": "tcp", "port": 21, "helper": "ftp", **attrs}
    return client.post(path(parent), json={"conntrack_helper": body})


def test_the_extensions_are_listed(user):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert {"l3-conntrack-helper", "expose-l3-conntrack-helper"} <= aliases


def test_create_show_list_update_delete(user, router):
    resp = add(user, router["id"])
    assert resp.status_code == 201, resp.text
    made = resp.json()["conntrack_helper"]
    assert made == {"id": made["id"], "protocol": "tcp", "port": 21, "helper": "ftp"}
    assert user.get(path(router["id"], made["id"])).json()["conntrack_helper"] == made
    assert user.get(path(router["id"])).json()["conntrack_helpers"] == [made]
    # the router lists them (protocol, port and helper only)
    shown = user.get(f"/v2.0/routers/{router['id']}").json()["router"]
    assert shown["conntrack_helpers"] == [{"protocol": "tcp", "port": 21, "helper": "ftp"}]
    resp = user.put(path(router["id"], made["id"]), json={"conntrack_helper": {"port": 2121}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["conntrack_helper"] == {**made, "port": 2121}
    assert user.delete(path(router["id"], made["id"])).status_code == 204
    expect_error(user.get(path(router["id"], made["id"])), 404, "ConntrackHelperNotFound",
                 f"Conntrack Helper {made['id']} could not be found.")
    assert user.get(f"/v2.0/routers/{router['id']}").json()["router"][
        "conntrack_helpers"] == []


def test_filters_sorts_and_pages(user, router):
    made = [add(user, router["id"], **attrs).json()["conntrack_helper"] for attrs in (
        {"port": 21}, {"port": 2121}, {"protocol": "udp", "port": 69, "helper": "tftp"})]
    listed = user.get(path(router["id"]), params={"protocol": "udp"}).json()
    assert [h["id"] for h in listed["conntrack_helpers"]] == [made[2]["id"]]
    listed = user.get(path(router["id"]), params={"sort_key": "port",
                                                  "sort_dir": "desc"}).json()
    assert [h["port"] for h in listed["conntrack_helpers"]] == [2121, 69, 21]
    page = user.get(path(router["id"]), params={"limit": 2, "sort_key": "port",
                                                "sort_dir": "asc"}).json()
    assert [h["port"] for h in page["conntrack_helpers"]] == [21, 69]
    assert page["conntrack_helpers_links"][0]["rel"] == "next"
    only = user.get(path(router["id"]), params={"fields": "helper"}).json()
    assert sorted(h["helper"] for h in only["conntrack_helpers"]) == ["ftp", "ftp", "tftp"]
    assert all(set(h) == {"helper"} for h in only["conntrack_helpers"])


def test_only_allowed_helpers_and_protocols(user, router):
    expect_error(add(user, router["id"], helper="irc", port=6667), 400,
                 "ConntrackHelperNotAllowed", "Conntrack Helper irc is not allowed.")
    expect_error(add(user, router["id"], protocol="udp"), 400, "InvalidProtocolForHelper",
                 "Conntrack Helper ftp does not support: udp. Supported protocols are: tcp")
    made = add(user, router["id"], protocol="udp", port=5060, helper="sip")
    assert made.status_code == 201, made.text
    resp = user.put(path(router["id"], made.json()["conntrack_helper"]["id"]),
                    json={"conntrack_helper": {"helper": "tftp", "protocol": "tcp"}})
    expect_error(resp, 400, "InvalidProtocolForHelper",
                 "Conntrack Helper tftp does not support: tcp. Supported protocols are: udp")


@pytest.mark.parametrize(("attrs", "fragment"), [
    ({"protocol": "gre"}, "IP protocol 'gre' is not supported"),
    ({"protocol": "TCP"}, "Invalid input for protocol"),
    ({"port": 0}, "Invalid input for port"),
    ({"port": 65536}, "Invalid input for port"),
    ({"port": "twenty-one"}, "'twenty-one' is not an integer"),
    ({"helper": "x" * 65}, "Invalid input for helper"),
    ({"id": NOWHERE}, "Attribute 'id' not allowed in POST"),
    ({"router_id": NOWHERE}, "Unrecognized attribute(s) 'router_id'"),
])
def test_bad_input(user, router, attrs, fragment):
    resp = add(user, router["id"], **attrs)
    assert resp.status_code == 400, resp.text
    assert fragment in resp.json()["NeutronError"]["message"]


def test_what_is_required(user, router):
    resp = user.post(path(router["id"]), json={"conntrack_helper": {"protocol": "tcp",
                                                                    "port": 21}})
    assert resp.status_code == 400, resp.text
    assert "helper" in resp.json()["NeutronError"]["message"]


def test_a_duplicate_is_refused_as_neutron_does(user, router):
    first = add(user, router["id"])
    assert first.status_code == 201, first.text
    error = expect_error(add(user, router["id"]), 400, "BadRequest")
    assert "A duplicate conntrack helper entry with same attributes already exists" in \
        error["message"]
    other = add(user, router["id"], port=2121).json()["conntrack_helper"]
    resp = user.put(path(router["id"], other["id"]), json={"conntrack_helper": {"port": 21}})
    expect_error(resp, 400, "BadRequest")
    # the same combination on another router is another helper
    second = user.post("/v2.0/routers", json={"router": {}}).json()["router"]
    assert add(user, second["id"]).status_code == 201


def test_a_helper_belongs_to_its_router(user, router):
    made = add(user, router["id"]).json()["conntrack_helper"]
    second = user.post("/v2.0/routers", json={"router": {}}).json()["router"]
    expect_error(user.get(path(second["id"], made["id"])), 404, "ConntrackHelperNotFound")
    expect_error(user.delete(path(second["id"], made["id"])), 404, "ConntrackHelperNotFound")
    expect_error(user.get(path(NOWHERE)), 404, "RouterNotFound")
    expect_error(add(user, NOWHERE), 404, "RouterNotFound")


def test_the_routers_owner_only(user, other, admin, router):
    made = add(user, router["id"]).json()["conntrack_helper"]
    expect_error(other.get(path(router["id"], made["id"])), 404, "RouterNotFound")
    expect_error(add(other, router["id"], port=2121), 404, "RouterNotFound")
    expect_error(other.delete(path(router["id"], made["id"])), 404, "RouterNotFound")
    # an admin manages any router's, and a project's helper stays the router's
    resp = add(admin, router["id"], port=2121)
    assert resp.status_code == 201, resp.text
    assert len(user.get(path(router["id"])).json()["conntrack_helpers"]) == 2


def test_a_reader_may_not_change_them(cth_server, project, user, router):
    made = add(user, router["id"]).json()["conntrack_helper"]
    reader = cth_server.client(project, roles=("reader",))
    assert reader.get(path(router["id"])).json()["conntrack_helpers"] == [made]
    expect_error(add(reader, router["id"], port=2121), 403, "PolicyNotAuthorized")
    expect_error(reader.delete(path(router["id"], made["id"])), 403, "PolicyNotAuthorized")


def test_they_go_with_their_router(user, admin, router):
    add(user, router["id"])
    assert user.delete(f"/v2.0/routers/{router['id']}").status_code == 204
    expect_error(user.get(path(router["id"])), 404, "RouterNotFound")


def test_a_bulk_create_is_all_or_nothing(user, router):
    items = [{"protocol": "tcp", "port": 21, "helper": "ftp"},
             {"protocol": "udp", "port": 69, "helper": "tftp"}]
    resp = user.post(path(router["id"]), json={"conntrack_helpers": items})
    assert resp.status_code == 201, resp.text
    assert [h["helper"] for h in resp.json()["conntrack_helpers"]] == ["ftp", "tftp"]
    resp = user.post(path(router["id"]), json={"conntrack_helpers": [
        {"protocol": "udp", "port": 5060, "helper": "sip"}, items[0]]})
    expect_error(resp, 400, "BadRequest")
    assert len(user.get(path(router["id"])).json()["conntrack_helpers"]) == 2
