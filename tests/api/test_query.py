"""Collection queries: fields, filters, sorting and pagination (Neutron's rules).

Every listing is scoped to rows of the test's own project (or a tag unique to
the test), so the session-wide shared database never leaks into assertions.
"""

from __future__ import annotations

import uuid
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from neutrino.definitions import CORE_RESOURCES, EXTENSIONS
from tests.harness import ApiClient, error_of


def names(items: list[dict]) -> set[str]:
    return {item["name"] for item in items}


def listing(client: ApiClient, collection: str, params) -> list[dict]:
    resp = client.get(f"/v2.0/{collection}", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()[collection]


def bad_request(resp, message: str, type_: str = "HTTPBadRequest") -> None:
    assert resp.status_code == 400, resp.text
    error = error_of(resp)
    assert (error["type"], error["message"]) == (type_, message)


@pytest.fixture
def nets(admin: ApiClient, project: str) -> list[dict]:
    """Five networks of the test's project, with repeated names and mixed states."""
    spec = [("b", True), ("a", False), ("c", True), ("a", True), ("b", False)]
    return [admin.network(name=name, admin_state_up=up, description=f"d{i}")
            for i, (name, up) in enumerate(spec)]


# --- fields --------------------------------------------------------------------


def test_fields_repeated_select_exactly_those(admin, project, nets):
    items = listing(admin, "networks", [("project_id", project), ("fields", "name"),
                                        ("fields", "status")])
    assert len(items) == 5
    assert all(set(item) == {"name", "status"} for item in items)


def test_fields_without_id_leave_id_out(admin, project, nets):
    items = listing(admin, "networks", {"project_id": project, "fields": "name"})
    assert sorted(item["name"] for item in items) == ["a", "a", "b", "b", "c"]
    assert all("id" not in item for item in items)
    with_id = listing(admin, "networks", [("project_id", project), ("fields", "name"),
                                          ("fields", "id")])
    assert {item["id"] for item in with_id} == {n["id"] for n in nets}


def test_fields_are_not_comma_split(admin, project, nets):
    items = listing(admin, "networks", {"project_id": project, "fields": "id,name"})
    assert items == [{}] * 5
    resp = admin.get(f"/v2.0/networks/{nets[0]['id']}", params={"fields": "id,name"})
    assert resp.status_code == 200 and resp.json() == {"network": {}}


def test_unknown_fields_are_ignored(admin, nets):
    resp = admin.get(f"/v2.0/networks/{nets[0]['id']}",
                     params=[("fields", "nonsense"), ("fields", "name")])
    assert resp.json() == {"network": {"name": nets[0]["name"]}}


def test_fields_apply_to_show(admin, nets):
    resp = admin.get(f"/v2.0/networks/{nets[1]['id']}",
                     params=[("fields", "admin_state_up"), ("fields", "id")])
    assert resp.json() == {"network": {"admin_state_up": False, "id": nets[1]["id"]}}


def test_fields_apply_to_create_update_and_bulk(admin):
    resp = admin.post("/v2.0/networks", params={"fields": "name"},
                      json={"network": {"name": "made"}})
    assert resp.status_code == 201
    assert resp.json() == {"network": {"name": "made"}}
    made = listing(admin, "networks", {"name": "made", "project_id": admin.project_id})
    assert len(made) == 1
    resp = admin.put(f"/v2.0/networks/{made[0]['id']}",
                     params=[("fields", "name"), ("fields", "revision_number")],
                     json={"network": {"name": "renamed"}})
    assert resp.status_code == 200
    assert resp.json() == {"network": {"name": "renamed",
                                       "revision_number": made[0]["revision_number"] + 1}}
    resp = admin.post("/v2.0/networks", params={"fields": "admin_state_up"},
                      json={"networks": [{"name": "x"}, {"admin_state_up": False}]})
    assert resp.status_code == 201
    assert resp.json() == {"networks": [{"admin_state_up": True},
                                        {"admin_state_up": False}]}


def test_fields_do_not_hide_pagination_markers(admin, project, nets):
    body = admin.get("/v2.0/networks", params={"project_id": project, "fields": "name",
                                               "limit": 2}).json()
    first_two = sorted(n["id"] for n in nets)[:2]
    assert all(set(item) == {"name"} for item in body["networks"])
    next_link = body["networks_links"][0]
    assert next_link["rel"] == "next"
    assert dict(parse_qsl(urlsplit(next_link["href"]).query))["marker"] == first_two[1]


# --- filters -------------------------------------------------------------------


def test_filter_repeated_values_are_ored(admin, project, nets):
    items = listing(admin, "networks", [("project_id", project), ("name", "a"),
                                        ("name", "c")])
    assert sorted(item["name"] for item in items) == ["a", "a", "c"]


def test_filters_on_different_attributes_are_anded(admin, project, nets):
    items = listing(admin, "networks", {"project_id": project, "name": "a",
                                        "admin_state_up": "true"})
    assert [item["id"] for item in items] == [nets[3]["id"]]


@pytest.mark.parametrize("text,expected", [
    ("false", False), ("False", False), ("0", False),
    ("true", True), ("TRUE", True), ("1", True),
])
def test_boolean_filter_values(admin, project, nets, text, expected):
    items = listing(admin, "networks", {"project_id": project, "admin_state_up": text})
    assert len(items) == (2 if expected is False else 3)
    assert all(item["admin_state_up"] is expected for item in items)


def test_bad_boolean_filter_is_invalid_input(admin):
    resp = admin.get("/v2.0/networks", params={"admin_state_up": "maybe"})
    bad_request(resp, "Invalid input for operation: 'maybe' cannot be converted to boolean.",
                "InvalidInput")


def test_integer_filters(admin, project, nets):
    admin.put(f"/v2.0/networks/{nets[0]['id']}", json={"network": {"name": "b"}})
    bumped = listing(admin, "networks", {"project_id": project,
                                         "revision_number": nets[0]["revision_number"] + 1})
    assert [item["id"] for item in bumped] == [nets[0]["id"]]
    mtu = nets[0]["mtu"]
    assert len(listing(admin, "networks", {"project_id": project, "mtu": str(mtu)})) == 5
    assert listing(admin, "networks", {"project_id": project, "mtu": str(mtu + 1)}) == []
    resp = admin.get("/v2.0/networks", params={"mtu": "big"})
    bad_request(resp, "Invalid input for operation: 'big' is not an integer.", "InvalidInput")


def test_integer_filter_on_subnets(admin, project):
    net = admin.network()
    v4 = admin.subnet(net["id"], "10.1.0.0/24")
    v6 = admin.subnet(net["id"], "2001:db8:1::/64")
    four = listing(admin, "subnets", {"project_id": project, "ip_version": "4"})
    six = listing(admin, "subnets", {"project_id": project, "ip_version": 6})
    assert [s["id"] for s in four] == [v4["id"]]
    assert [s["id"] for s in six] == [v6["id"]]


def test_empty_string_filter_matches_empty_values(admin, project):
    named = admin.network(name="named")
    unnamed = admin.network()
    assert unnamed["name"] == ""
    items = listing(admin, "networks", {"project_id": project, "name": ""})
    assert [item["id"] for item in items] == [unnamed["id"]]
    items = listing(admin, "networks", [("project_id", project), ("name", ""),
                                        ("name", "named")])
    assert {item["id"] for item in items} == {named["id"], unnamed["id"]}


def test_filter_by_tenant_id_and_project_id(admin, project, other_project):
    mine = admin.network()
    theirs = admin.network(project_id=other_project)
    assert [n["id"] for n in listing(admin, "networks", {"tenant_id": project})] == [mine["id"]]
    assert [n["id"] for n in listing(admin, "networks", [
        ("project_id", project), ("project_id", other_project)])] == sorted(
        [mine["id"], theirs["id"]])


def test_filter_by_id_list(admin, nets):
    wanted = [nets[0]["id"], nets[4]["id"]]
    items = listing(admin, "networks", [("id", wanted[0]), ("id", wanted[1])])
    assert [item["id"] for item in items] == sorted(wanted)


def test_unknown_filter_is_rejected(admin):
    resp = admin.get("/v2.0/networks", params={"foo": "bar"})
    bad_request(resp, "['foo'] is invalid attribute for filtering")


def test_every_unknown_filter_is_named(admin):
    resp = admin.get("/v2.0/networks", params=[("foo", "1"), ("name", "x"), ("bar", "2")])
    bad_request(resp, "['foo', 'bar'] is invalid attribute for filtering")


def test_unfilterable_attribute_is_rejected(admin):
    resp = admin.get("/v2.0/networks", params={"subnets": str(uuid.uuid4())})
    bad_request(resp, "['subnets'] is invalid attribute for filtering")


def _filterable(collection: str) -> list[str]:
    resource = next(r for r in CORE_RESOURCES if r.collection == collection)
    for ext in EXTENSIONS.values():
        resource = resource.extended(ext.attributes.get(collection, {}))
    return [name for name, attr in resource.attrs.items() if attr.filter and attr.visible]


@pytest.fixture
def one_of_each(admin):
    net = admin.network(name="every")
    subnet = admin.subnet(net["id"], "10.9.0.0/24", name="every",
                          dns_nameservers=["10.9.0.53"])
    port = admin.port(net["id"], name="every")
    pool = admin.create("subnetpools", name="every", prefixes=["10.200.0.0/16"])
    return {"networks": net, "subnets": subnet, "ports": port, "subnetpools": pool}


@pytest.mark.parametrize("collection", ["networks", "subnets", "ports", "subnetpools"])
def test_every_filterable_attribute_finds_the_item(admin, one_of_each, collection):
    """Any scalar value a resource shows can be used to find it again."""
    item = admin.show(collection, one_of_each[collection]["id"])
    for name in _filterable(collection):
        if name in ("created_at", "updated_at"):
            continue  # not filters in Neutron: see test_timestamps_are_not_filters
        value = item.get(name)
        if name == "fixed_ips" or isinstance(value, (list, dict)):
            resp = admin.get(f"/v2.0/{collection}", params={"id": item["id"], name: "x"})
            assert resp.status_code in (200, 400), (name, resp.text)
            continue
        text = "" if value is None else str(value).lower() if isinstance(value, bool) \
            else str(value)
        if value is None:
            continue  # null columns are not reachable through a query string
        resp = admin.get(f"/v2.0/{collection}", params={"id": item["id"], name: text})
        assert resp.status_code == 200, (name, resp.text)
        found = [i["id"] for i in resp.json()[collection]]
        assert found == [item["id"]], (name, text)


@pytest.mark.parametrize("name", ["created_at", "updated_at"])
def test_timestamps_are_not_filters(admin, name):
    resp = admin.get("/v2.0/networks", params={name: "2020-01-01T00:00:00Z"})
    bad_request(resp, f"['{name}'] is invalid attribute for filtering")


def test_list_valued_subnet_attributes_are_not_filters(admin):
    for name in ("dns_nameservers", "host_routes", "allocation_pools"):
        resp = admin.get("/v2.0/subnets", params={name: "10.0.0.1"})
        bad_request(resp, f"['{name}'] is invalid attribute for filtering")


def test_subnets_filter_on_shared(admin):
    net = admin.network(shared=True)
    subnet = admin.subnet(net["id"], "10.8.0.0/24")
    items = listing(admin, "subnets", {"network_id": net["id"], "shared": "true"})
    assert [s["id"] for s in items] == [subnet["id"]]


def test_filter_values_of_subnets_and_subnetpools(admin, project):
    net = admin.network()
    dhcp = admin.subnet(net["id"], "10.2.0.0/24", enable_dhcp=True)
    nodhcp = admin.subnet(net["id"], "10.3.0.0/24", enable_dhcp=False, gateway_ip=None)
    assert [s["id"] for s in listing(admin, "subnets", {
        "network_id": net["id"], "enable_dhcp": "false"})] == [nodhcp["id"]]
    assert [s["id"] for s in listing(admin, "subnets", {
        "network_id": net["id"], "cidr": "10.2.0.0/24"})] == [dhcp["id"]]
    assert [s["id"] for s in listing(admin, "subnets", {
        "network_id": net["id"], "gateway_ip": "10.2.0.1"})] == [dhcp["id"]]
    pool = admin.create("subnetpools", name="fv", prefixes=["10.201.0.0/16"],
                        min_prefixlen=20)
    assert [p["id"] for p in listing(admin, "subnetpools", {
        "project_id": project, "min_prefixlen": "20"})] == [pool["id"]]
    assert listing(admin, "subnetpools", {"project_id": project, "min_prefixlen": "21"}) == []


# --- ports: fixed_ips filters ----------------------------------------------------


@pytest.fixture
def addressed(admin):
    net = admin.network()
    sub_a = admin.subnet(net["id"], "10.20.0.0/24")
    sub_b = admin.subnet(net["id"], "10.21.0.0/24")
    p1 = admin.port(net["id"], fixed_ips=[{"subnet_id": sub_a["id"], "ip_address": "10.20.0.15"}])
    p2 = admin.port(net["id"], fixed_ips=[{"subnet_id": sub_a["id"], "ip_address": "10.20.0.150"}])
    p3 = admin.port(net["id"], fixed_ips=[{"subnet_id": sub_b["id"], "ip_address": "10.21.0.15"},
                                          {"subnet_id": sub_a["id"], "ip_address": "10.20.0.77"}])
    return net, sub_a, sub_b, p1, p2, p3


def port_ids(admin, net, *filters: str) -> list[str]:
    return [p["id"] for p in listing(admin, "ports", [("network_id", net["id"])] + [
        ("fixed_ips", f) for f in filters])]


def test_fixed_ips_ip_address_filter(admin, addressed):
    net, sub_a, sub_b, p1, p2, p3 = addressed
    assert port_ids(admin, net, "ip_address=10.20.0.15") == [p1["id"]]
    assert port_ids(admin, net, "ip_address=10.20.0.15", "ip_address=10.21.0.15") == sorted(
        [p1["id"], p3["id"]])
    assert port_ids(admin, net, "ip_address=10.20.0.16") == []


def test_fixed_ips_subnet_id_filter(admin, addressed):
    net, sub_a, sub_b, p1, p2, p3 = addressed
    assert port_ids(admin, net, f"subnet_id={sub_b['id']}") == [p3["id"]]
    assert port_ids(admin, net, f"subnet_id={sub_a['id']}") == sorted(
        [p1["id"], p2["id"], p3["id"]])
    assert port_ids(admin, net, f"subnet_id={sub_a['id']}",
                    "ip_address=10.20.0.150") == [p2["id"]]


def test_fixed_ips_ip_address_substr_filter(admin, addressed):
    net, sub_a, sub_b, p1, p2, p3 = addressed
    assert port_ids(admin, net, "ip_address_substr=.0.15") == sorted(
        [p1["id"], p2["id"], p3["id"]])
    assert port_ids(admin, net, "ip_address_substr=0.0.15") == sorted([p1["id"], p2["id"]])
    assert port_ids(admin, net, "ip_address_substr=0.0.150") == [p2["id"]]
    assert port_ids(admin, net, "ip_address_substr=.77") == [p3["id"]]


def test_fixed_ips_substr_values_are_ored(admin, addressed):
    net, sub_a, sub_b, p1, p2, p3 = addressed
    assert port_ids(admin, net, "ip_address_substr=.150", "ip_address_substr=.77") == sorted(
        [p2["id"], p3["id"]])


def test_fixed_ips_kinds_match_any_allocation(admin, addressed):
    net, sub_a, sub_b, p1, p2, p3 = addressed
    # p3 has 10.20.0.77 (subnet a) and an address in subnet b
    assert port_ids(admin, net, f"subnet_id={sub_b['id']}",
                    "ip_address=10.20.0.77") == [p3["id"]]


def test_malformed_fixed_ips_filter(admin):
    resp = admin.get("/v2.0/ports", params={"fixed_ips": "nonsense"})
    bad_request(resp, "Invalid input for operation: 'nonsense' is not of the form "
                "<key>=[value].", "InvalidInput")


def test_port_filters_mac_and_device(admin, addressed):
    net, sub_a, sub_b, p1, p2, p3 = addressed
    mac = p2["mac_address"]
    assert [p["id"] for p in listing(admin, "ports", {"mac_address": mac.upper()})] == [p2["id"]]
    admin.put(f"/v2.0/ports/{p1['id']}", json={"port": {"device_id": "vm-1",
                                                         "device_owner": "compute:nova"}})
    assert [p["id"] for p in listing(admin, "ports", {
        "network_id": net["id"], "device_owner": "compute:nova"})] == [p1["id"]]
    assert sorted(p["id"] for p in listing(admin, "ports", {
        "network_id": net["id"], "device_id": ""})) == sorted([p2["id"], p3["id"]])


# --- sorting -------------------------------------------------------------------


def test_default_order_is_by_id(admin, project, nets):
    items = listing(admin, "networks", {"project_id": project})
    assert [i["id"] for i in items] == sorted(n["id"] for n in nets)


def test_sort_by_one_key_breaks_ties_by_id(admin, project, nets):
    items = listing(admin, "networks", {"project_id": project, "sort_key": "name",
                                        "sort_dir": "desc"})
    expected = sorted(nets, key=lambda n: n["id"])
    expected = sorted(expected, key=lambda n: n["name"], reverse=True)
    assert [i["id"] for i in items] == [n["id"] for n in expected]


def test_sort_by_repeated_keys(admin, project, nets):
    items = listing(admin, "networks", [
        ("project_id", project), ("sort_key", "admin_state_up"), ("sort_dir", "asc"),
        ("sort_key", "name"), ("sort_dir", "desc"), ("sort_key", "id"), ("sort_dir", "desc")])
    expected = sorted(nets, key=lambda n: n["id"], reverse=True)
    expected = sorted(expected, key=lambda n: n["name"], reverse=True)
    expected = sorted(expected, key=lambda n: n["admin_state_up"])
    assert [i["id"] for i in items] == [n["id"] for n in expected]


def test_sort_key_needs_a_sort_dir(admin):
    resp = admin.get("/v2.0/networks", params={"sort_key": "name"})
    bad_request(resp, "The number of sort_keys and sort_dirs must be same")
    resp = admin.get("/v2.0/networks", params=[("sort_key", "name"), ("sort_dir", "asc"),
                                               ("sort_dir", "desc")])
    bad_request(resp, "The number of sort_keys and sort_dirs must be same")


def test_bad_sort_key(admin):
    resp = admin.get("/v2.0/networks", params={"sort_key": "foo", "sort_dir": "asc"})
    bad_request(resp, "['foo'] is invalid attribute for sort_keys")
    resp = admin.get("/v2.0/networks", params={"sort_key": "subnets", "sort_dir": "asc"})
    bad_request(resp, "['subnets'] is invalid attribute for sort_keys")


def test_bad_sort_dir(admin):
    resp = admin.get("/v2.0/networks", params={"sort_key": "name", "sort_dir": "up"})
    bad_request(resp, "['up'] is invalid value for sort_dirs, valid value is 'asc' and 'desc'")


# --- pagination ----------------------------------------------------------------


def page(client: ApiClient, url: str, collection: str = "networks"
         ) -> tuple[list[str], dict[str, str]]:
    resp = client.get(url)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    links = {link["rel"]: link["href"] for link in body.get(f"{collection}_links", [])}
    return [item["id"] for item in body[collection]], links


def walk_forward(client: ApiClient, url: str, collection: str = "networks"
                 ) -> tuple[list[str], int]:
    seen: list[str] = []
    pages = 0
    while url:
        ids, links = page(client, url, collection)
        pages += 1
        assert pages < 50
        seen += ids
        url = links.get("next")
    return seen, pages


def walk_backward(client: ApiClient, url: str, collection: str = "networks"
                  ) -> tuple[list[str], int]:
    seen: list[str] = []
    pages = 0
    while url:
        ids, links = page(client, url, collection)
        pages += 1
        assert pages < 50
        seen = ids + seen
        url = links.get("previous")
    return seen, pages


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 7])
def test_walk_forward_and_backward(admin, project, nets, limit):
    expected = sorted(n["id"] for n in nets)
    query = urlencode({"project_id": project, "limit": limit})
    seen, pages = walk_forward(admin, f"/v2.0/networks?{query}")
    assert seen == expected
    # a last full page is followed by one empty page, as in Neutron
    assert pages == len(expected) // limit + 1
    seen, pages = walk_backward(admin, f"/v2.0/networks?{query}&page_reverse=True")
    assert seen == expected
    assert pages == len(expected) // limit + 1


@pytest.mark.parametrize("sorts", [
    [("name", "asc")],
    [("name", "desc")],
    [("admin_state_up", "desc"), ("description", "asc")],
    [("name", "asc"), ("id", "desc")],
])
def test_walk_sorted(admin, project, nets, sorts):
    params = [("project_id", project)]
    for key, direction in sorts:
        params += [("sort_key", key), ("sort_dir", direction)]
    expected = [i["id"] for i in listing(admin, "networks", params)]
    assert sorted(expected) == sorted(n["id"] for n in nets)
    query = urlencode(params + [("limit", 2)])
    assert walk_forward(admin, f"/v2.0/networks?{query}")[0] == expected
    assert walk_backward(admin, f"/v2.0/networks?{query}&page_reverse=true")[0] == expected


def test_walk_sorted_by_nullable_key(admin, project):
    """Subnets without a gateway sort before the others and pages still join up."""
    net = admin.network()
    made = []
    for i in range(5):
        gateway = None if i % 2 else f"10.30.{i}.1"
        made.append(admin.subnet(net["id"], f"10.30.{i}.0/24", gateway_ip=gateway))
    for direction in ("asc", "desc"):
        params = [("network_id", net["id"]), ("sort_key", "gateway_ip"),
                  ("sort_dir", direction)]
        full = listing(admin, "subnets", params)
        gateways = [s["gateway_ip"] for s in full]
        nulls_first = [None, None, "10.30.0.1", "10.30.2.1", "10.30.4.1"]
        assert gateways == (nulls_first if direction == "asc" else nulls_first[::-1])
        expected = [s["id"] for s in full]
        query = urlencode(params + [("limit", 2)])
        assert walk_forward(admin, f"/v2.0/subnets?{query}", "subnets")[0] == expected
        assert walk_backward(admin, f"/v2.0/subnets?{query}&page_reverse=True",
                             "subnets")[0] == expected


def test_link_hrefs(server, admin, project, nets):
    ids = sorted(n["id"] for n in nets)
    base = f"{server.url}/v2.0/networks"
    body = admin.get("/v2.0/networks", params=[("project_id", project), ("fields", "name"),
                                               ("limit", "2")]).json()
    assert body["networks_links"] == [
        {"rel": "next", "href": f"{base}?project_id={project}&fields=name&limit=2"
                                f"&marker={ids[1]}"},
        {"rel": "previous", "href": f"{base}?project_id={project}&fields=name&limit=2"
                                    f"&marker={ids[0]}&page_reverse=True"},
    ]
    # a marker given in the middle of the query moves to the end
    body = admin.get("/v2.0/networks", params=[("marker", ids[1]), ("limit", "2"),
                                               ("project_id", project)]).json()
    assert [n["id"] for n in body["networks"]] == ids[2:4]
    assert body["networks_links"] == [
        {"rel": "next", "href": f"{base}?limit=2&project_id={project}&marker={ids[3]}"},
        {"rel": "previous", "href": f"{base}?limit=2&project_id={project}&marker={ids[2]}"
                                    "&page_reverse=True"},
    ]


def test_short_forward_page_has_only_previous(server, admin, project, nets):
    ids = sorted(n["id"] for n in nets)
    base = f"{server.url}/v2.0/networks"
    body = admin.get("/v2.0/networks", params={"project_id": project, "limit": 10}).json()
    assert [n["id"] for n in body["networks"]] == ids
    assert body["networks_links"] == [
        {"rel": "previous", "href": f"{base}?project_id={project}&limit=10&marker={ids[0]}"
                                    "&page_reverse=True"}]


def test_empty_page_links_carry_no_marker(server, admin, project, nets):
    ids = sorted(n["id"] for n in nets)
    base = f"{server.url}/v2.0/networks"
    body = admin.get("/v2.0/networks", params={"project_id": project, "limit": 5,
                                               "marker": ids[-1]}).json()
    assert body["networks"] == []
    assert body["networks_links"] == [
        {"rel": "previous", "href": f"{base}?project_id={project}&limit=5"
                                    "&page_reverse=True"}]


def test_reverse_pages(server, admin, project, nets):
    ids = sorted(n["id"] for n in nets)
    base = f"{server.url}/v2.0/networks"
    body = admin.get("/v2.0/networks", params={"project_id": project, "limit": 2,
                                               "page_reverse": "True"}).json()
    assert [n["id"] for n in body["networks"]] == ids[3:5]
    assert body["networks_links"] == [
        {"rel": "next", "href": f"{base}?project_id={project}&limit=2&marker={ids[4]}"},
        {"rel": "previous", "href": f"{base}?project_id={project}&limit=2&marker={ids[3]}"
                                    "&page_reverse=True"},
    ]
    # before the second item only one is left: a short reverse page has no previous
    body = admin.get("/v2.0/networks", params={"project_id": project, "limit": 2,
                                               "page_reverse": "true",
                                               "marker": ids[1]}).json()
    assert [n["id"] for n in body["networks"]] == ids[:1]
    assert body["networks_links"] == [
        {"rel": "next", "href": f"{base}?project_id={project}&limit=2&marker={ids[0]}"}]


def test_limit_zero_and_no_limit_give_everything_without_links(admin, project, nets):
    for params in ({"project_id": project}, {"project_id": project, "limit": 0}):
        body = admin.get("/v2.0/networks", params=params).json()
        assert len(body["networks"]) == 5
        assert "networks_links" not in body


def test_marker_without_limit_is_ignored(admin, project, nets):
    ids = sorted(n["id"] for n in nets)
    items = listing(admin, "networks", {"project_id": project, "marker": ids[2]})
    assert [i["id"] for i in items] == ids
    items = listing(admin, "networks", {"project_id": project, "marker": str(uuid.uuid4())})
    assert [i["id"] for i in items] == ids


@pytest.mark.parametrize("limit", ["-1", "abc", "1.5", ""])
def test_bad_limit(admin, limit):
    resp = admin.get("/v2.0/networks", params={"limit": limit})
    bad_request(resp, f"Bad limit request: Limit must be an integer 0 or greater and not "
                      f"'{limit}'.", "BadRequest")


@pytest.mark.parametrize("collection,type_,template", [
    ("networks", "NetworkNotFound", "Network {} could not be found."),
    ("ports", "PortNotFound", "Port {} could not be found."),
])
def test_unknown_marker_is_not_found(admin, collection, type_, template):
    marker = str(uuid.uuid4())
    resp = admin.get(f"/v2.0/{collection}", params={"limit": 2, "marker": marker})
    assert resp.status_code == 404
    assert error_of(resp) == {"type": type_, "message": template.format(marker),
                              "detail": ""}


def test_other_projects_marker_is_not_found(user, other):
    theirs = other.network()
    resp = user.get("/v2.0/networks", params={"limit": 2, "marker": theirs["id"]})
    assert resp.status_code == 404
    assert error_of(resp)["type"] == "NetworkNotFound"


def test_unknown_marker_is_ignored_for_subnets(admin, project):
    net = admin.network()
    made = sorted(admin.subnet(net["id"], f"10.40.{i}.0/24")["id"] for i in range(3))
    ids, links = page(admin, f"/v2.0/subnets?network_id={net['id']}&limit=2"
                             f"&marker={uuid.uuid4()}", "subnets")
    assert ids == made[:2]
    assert set(links) == {"next", "previous"}


def test_walk_ports_and_subnetpools(admin, project):
    net = admin.network()
    ports = sorted(admin.port(net["id"])["id"] for _ in range(4))
    query = urlencode({"network_id": net["id"], "limit": 3})
    assert walk_forward(admin, f"/v2.0/ports?{query}", "ports")[0] == ports
    assert walk_backward(admin, f"/v2.0/ports?{query}&page_reverse=True", "ports")[0] == ports
    pools = sorted(admin.create("subnetpools", name=f"p{i}",
                                prefixes=[f"10.{210 + i}.0.0/16"])["id"] for i in range(3))
    query = urlencode({"project_id": project, "limit": 2})
    assert walk_forward(admin, f"/v2.0/subnetpools?{query}", "subnetpools")[0] == pools
    assert walk_backward(admin, f"/v2.0/subnetpools?{query}&page_reverse=True",
                         "subnetpools")[0] == pools


def test_pagination_with_tag_filter(admin):
    tag = uuid.uuid4().hex
    made = []
    for _ in range(3):
        net = admin.network()
        assert admin.put(f"/v2.0/networks/{net['id']}/tags/{tag}").status_code == 201
        made.append(net["id"])
    seen, _ = walk_forward(admin, f"/v2.0/networks?tags={tag}&limit=2")
    assert seen == sorted(made)


def test_huge_limit_is_one_page(server, admin, project, nets):
    ids = sorted(n["id"] for n in nets)
    huge = "99999999999999999999"
    body = admin.get("/v2.0/networks", params={"project_id": project, "limit": huge}).json()
    assert [n["id"] for n in body["networks"]] == ids
    assert [link["rel"] for link in body["networks_links"]] == ["previous"]


def test_filter_values_no_row_can_hold(admin, project, nets):
    for params in ({"revision_number": "999999999999999999"}, {"mtu": "-99999999999999"},
                   {"id": "x" * 500}):
        assert listing(admin, "networks", {"project_id": project, **params}) == []
    # what no database can compare is refused (tests/api/test_hardening.py has more)
    for params in ({"revision_number": "99999999999999999999"}, {"name": "a\x00b"}):
        resp = admin.get("/v2.0/networks", params={"project_id": project, **params})
        assert resp.status_code == 400, resp.text


def test_unicode_values_filter_and_sort(admin, project):
    made = [admin.network(name=name) for name in ("ünï", "ωmega", "plain")]
    items = listing(admin, "networks", {"project_id": project, "name": "ωmega"})
    assert [i["id"] for i in items] == [made[1]["id"]]
    assert len(listing(admin, "networks", {"project_id": project, "sort_key": "name",
                                           "sort_dir": "asc"})) == 3


def test_ip_address_substr_is_not_a_pattern(admin, addressed):
    net = addressed[0]
    assert port_ids(admin, net, "ip_address_substr=10.2_.0") == []
    assert port_ids(admin, net, "ip_address_substr=%") == []
    assert len(port_ids(admin, net, "ip_address_substr=10.2")) == 3


def test_forwarded_proto_sets_the_link_scheme(server, admin, project, nets):
    resp = admin.get("/v2.0/networks", params={"project_id": project, "limit": 2},
                     headers={"X-Forwarded-Proto": "https"})
    hrefs = [link["href"] for link in resp.json()["networks_links"]]
    host = server.url.split("://", 1)[1]
    assert all(h.startswith(f"https://{host}/v2.0/networks?") for h in hrefs)


def test_json_suffix(server, admin, project, nets):
    body = admin.get("/v2.0/networks.json", params={"project_id": project, "limit": 2}).json()
    assert len(body["networks"]) == 2
    assert body["networks_links"][0]["href"].startswith(f"{server.url}/v2.0/networks.json?")
    one = admin.get(f"/v2.0/networks/{nets[0]['id']}.json")
    assert one.status_code == 200 and one.json()["network"]["id"] == nets[0]["id"]


@pytest.fixture(scope="module")
def paged_server(tmp_path_factory):
    """A noauth SQLite server that never returns more than two items at once."""
    from tests.harness import start_server

    tmp = tmp_path_factory.mktemp("paged")
    srv = start_server(tmp, f"sqlite:///{tmp / 'paged.db'}", auth="noauth",
                       extra="pagination_max_limit = 2")
    yield srv
    srv.stop()


def test_pagination_max_limit(paged_server):
    client = paged_server.client(uuid.uuid4().hex, roles=("admin",))
    made = sorted(client.network()["id"] for _ in range(5))
    project = client.project_id
    # without a limit the server pages at its maximum, and says so in links
    body = client.get("/v2.0/networks", params={"project_id": project}).json()
    assert [n["id"] for n in body["networks"]] == made[:2]
    assert body["networks_links"][0] == {
        "rel": "next",
        "href": f"{paged_server.url}/v2.0/networks?project_id={project}&marker={made[1]}"}
    for limit in ("0", "3", "100"):
        items = listing(client, "networks", {"project_id": project, "limit": limit})
        assert [n["id"] for n in items] == made[:2]
    assert [n["id"] for n in listing(client, "networks", {
        "project_id": project, "limit": 1})] == made[:1]
    seen, _ = walk_forward(client, f"/v2.0/networks?project_id={project}")
    assert seen == made
