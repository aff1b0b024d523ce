"""The flavors extension: /v2.0/flavors, /v2.0/service_profiles and a flavor's
bindings (/v2.0/flavors/{id}/service_profiles), with Neutron's checks, errors
and policy (any reader sees flavors; only admins see profiles and change
either)."""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import BACKENDS
from tests.harness import ApiClient, create_database, expect_error, start_server

FLAVORS, PROFILES = "/v2.0/flavors", "/v2.0/service_profiles"
FAKE_DRIVER = "tests.fakes.providers.VpnDriver"
NOWHERE = "7d5c2f59-0c3f-4b07-9d1e-6a2f1f0c1a11"  # no flavor or profile has it


def unique(prefix: str = "flavor") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def flavor(client: ApiClient, **attrs) -> dict:
    attrs.setdefault("name", unique())
    attrs.setdefault("service_type", "L3_ROUTER_NAT")
    return client.create("flavors", **attrs)


def profile(client: ApiClient, **attrs) -> dict:
    if "driver" not in attrs:
        attrs.setdefault("metainfo", '{"tier": "gold"}')
    return client.create("service_profiles", **attrs)


def bindings(flavor_id: str) -> str:
    return f"{FLAVORS}/{flavor_id}/service_profiles"


def bind(client: ApiClient, flavor_id: str, profile_id: str):
    return client.post(bindings(flavor_id), json={"service_profile": {"id": profile_id}})


def named(client: ApiClient, *names: str, **params) -> list[dict]:
    resp = client.get(FLAVORS, params={"name": list(names), **params})
    assert resp.status_code == 200, resp.text
    return resp.json()["flavors"]


# --- flavors ------------------------------------------------------------------------------

def test_the_extension_is_listed(user):
    ext = user.get("/v2.0/extensions/flavors").json()["extension"]
    assert ext["name"] == "Neutron Service Flavors"


def test_a_flavor_round_trip(admin):
    made = flavor(admin, description="fast routers")
    assert made == {"id": made["id"], "name": made["name"], "description": "fast routers",
                    "service_type": "L3_ROUTER_NAT", "service_profiles": [], "enabled": True}
    assert admin.show("flavors", made["id"]) == made
    assert named(admin, made["name"]) == [made]

    resp = admin.put(f"{FLAVORS}/{made['id']}", json={"flavor": {
        "name": "renamed-" + made["name"], "description": None, "enabled": "false"}})
    assert resp.status_code == 200, resp.text
    changed = resp.json()["flavor"]
    assert changed == {**made, "name": "renamed-" + made["name"], "description": None,
                       "enabled": False}
    assert admin.show("flavors", made["id"]) == changed

    assert admin.delete(f"{FLAVORS}/{made['id']}").status_code == 204
    expect_error(admin.get(f"{FLAVORS}/{made['id']}"), 404, "FlavorNotFound",
                 f"Flavor {made['id']} could not be found.")
    expect_error(admin.delete(f"{FLAVORS}/{made['id']}"), 404, "FlavorNotFound")
    expect_error(admin.put(f"{FLAVORS}/{made['id']}", json={"flavor": {"name": "x"}}),
                 404, "FlavorNotFound")


@pytest.mark.parametrize("service_type", ["L3_ROUTER_NAT", "METERING", "VPN", "FIREWALL_V2",
                                          "LOGGING", "PORTFORWARDING", "FLAVORS",
                                          "network-ip-availability"])
def test_a_loaded_plugins_service_type(admin, service_type):
    assert flavor(admin, service_type=service_type)["service_type"] == service_type


@pytest.mark.parametrize("service_type", ["BGP", "l3_router_nat", "", "CORE ", "TRUNK"])
def test_a_service_type_no_loaded_plugin_offers(admin, service_type):
    name = unique()
    expect_error(admin.post(FLAVORS, json={"flavor": {"name": name,
                                                      "service_type": service_type}}),
                 400, "InvalidServiceType", f"Invalid service type: {service_type}.")
    assert named(admin, name) == []


BAD = "HTTPBadRequest"


@pytest.mark.parametrize(("body", "type_", "message"), [
    ({"name": "x"}, BAD,
     "Failed to parse request. Required attribute 'service_type' not specified"),
    ({"service_type": 7}, BAD, None),
    ({"service_type": None}, BAD, None),
    ({"service_type": "L3_ROUTER_NAT", "enabled": "maybe"}, "InvalidInput", None),
    ({"service_type": "L3_ROUTER_NAT", "enabled": None}, "InvalidInput", None),
    ({"service_type": "L3_ROUTER_NAT", "name": "n" * 256}, BAD, None),
    ({"service_type": "L3_ROUTER_NAT", "name": None}, BAD, None),
    ({"service_type": "L3_ROUTER_NAT", "description": "d" * 1025}, BAD, None),
    ({"service_type": "L3_ROUTER_NAT", "service_profiles": "not-a-list"}, BAD, None),
    ({"service_type": "L3_ROUTER_NAT", "service_profiles": ["not-a-uuid"]}, BAD, None),
    ({"service_type": "L3_ROUTER_NAT", "service_profiles": [
        NOWHERE] * 2}, BAD, None),
    ({"service_type": "L3_ROUTER_NAT", "tenant_id": "p"}, BAD,
     "Unrecognized attribute(s) 'tenant_id'"),
    ({"service_type": "L3_ROUTER_NAT", "id": NOWHERE}, BAD,
     "Attribute 'id' not allowed in POST"),
])
def test_a_bad_flavor_body_is_a_400(admin, body, type_, message):
    expect_error(admin.post(FLAVORS, json={"flavor": body}), 400, type_, message)


def test_a_bad_flavor_update_is_a_400(admin):
    made = flavor(admin)
    url = f"{FLAVORS}/{made['id']}"
    expect_error(admin.put(url, json={"flavor": {"service_type": "METERING"}}), 400,
                 "HTTPBadRequest", "Cannot update read-only attribute service_type")
    expect_error(admin.put(url, json={"flavor": {"enabled": []}}), 400, "InvalidInput")
    expect_error(admin.put(url, json={"flavor": {"name": ["x"]}}), 400, "HTTPBadRequest")
    assert admin.show("flavors", made["id"]) == made


def test_bulk_creation_is_not_supported(admin):
    expect_error(admin.post(FLAVORS, json={"flavors": [
        {"name": unique(), "service_type": "L3_ROUTER_NAT"}]}),
        400, "HTTPBadRequest", "Bulk operation not supported")


def test_filters_sorting_and_pages(admin):
    names = sorted(unique() for _ in range(3))
    made = [flavor(admin, name=names[0], service_type="METERING"),
            flavor(admin, name=names[1], enabled=False),
            flavor(admin, name=names[2])]
    assert named(admin, *names, service_type="METERING") == [made[0]]
    assert named(admin, *names, enabled="false") == [made[1]]
    assert [f["name"] for f in named(admin, *names, sort_key="name", sort_dir="desc")] == \
        names[::-1]
    first = admin.get(FLAVORS, params={"name": names, "sort_key": "name", "sort_dir": "asc",
                                       "limit": 2}).json()
    assert [f["name"] for f in first["flavors"]] == names[:2]
    marker = first["flavors"][-1]["id"]
    rest = named(admin, *names, sort_key="name", sort_dir="asc", limit=2, marker=marker)
    assert [f["name"] for f in rest] == names[2:]
    assert named(admin, *names, fields="service_type", sort_key="name", sort_dir="asc") == [
        {"service_type": "METERING"}, {"service_type": "L3_ROUTER_NAT"},
        {"service_type": "L3_ROUTER_NAT"}]


@pytest.mark.parametrize("params", [{"service_profiles": "x"}, {"enabled": "perhaps"},
                                    {"project_id": "p"}, {"sort_key": "service_profiles",
                                                          "sort_dir": "asc"}])
def test_a_bad_query_is_a_400(admin, params):
    assert admin.get(FLAVORS, params=params).status_code == 400


@pytest.mark.parametrize("item_id", ["no-such-flavor", NOWHERE, "x" * 300])
def test_a_flavor_that_is_not_there(admin, item_id):
    expect_error(admin.get(f"{FLAVORS}/{item_id}"), 404, "FlavorNotFound")


# --- service profiles ---------------------------------------------------------------------

def test_a_service_profile_round_trip(admin):
    made = profile(admin, description="gold", enabled=False)
    assert made == {"id": made["id"], "description": "gold", "driver": "",
                    "metainfo": '{"tier": "gold"}', "enabled": False}
    assert admin.show("service_profiles", made["id"]) == made
    listed = admin.get(PROFILES, params={"id": made["id"]}).json()["service_profiles"]
    assert listed == [made]

    resp = admin.put(f"{PROFILES}/{made['id']}", json={"service_profile": {
        "description": "silver", "enabled": True, "metainfo": "{}"}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["service_profile"] == {**made, "description": "silver",
                                              "enabled": True, "metainfo": "{}"}

    assert admin.delete(f"{PROFILES}/{made['id']}").status_code == 204
    expect_error(admin.get(f"{PROFILES}/{made['id']}"), 404, "ServiceProfileNotFound",
                 f"Service Profile {made['id']} could not be found.")
    expect_error(admin.delete(f"{PROFILES}/{made['id']}"), 404, "ServiceProfileNotFound")


@pytest.mark.parametrize("body", [{}, {"description": "only words"}, {"driver": ""},
                                  {"metainfo": ""}, {"metainfo": None}])
def test_a_profile_needs_a_driver_or_metainfo(admin, body):
    expect_error(admin.post(PROFILES, json={"service_profile": body}), 400,
                 "ServiceProfileEmpty", "Service Profile needs either a driver or metainfo.")


def test_an_update_may_not_empty_a_profile(admin):
    made = profile(admin)
    expect_error(admin.put(f"{PROFILES}/{made['id']}",
                           json={"service_profile": {"metainfo": ""}}),
                 400, "ServiceProfileEmpty")
    assert admin.show("service_profiles", made["id"]) == made


@pytest.mark.parametrize("driver", ["no.such.Driver", FAKE_DRIVER])
def test_a_driver_no_provider_names_is_refused(admin, driver):
    """The shared server configures no provider: no driver is one."""
    expect_error(admin.post(PROFILES, json={"service_profile": {"driver": driver}}), 404,
                 "ServiceProfileDriverNotFound",
                 f"Service Profile driver {driver} could not be found.")
    made = profile(admin)
    expect_error(admin.put(f"{PROFILES}/{made['id']}",
                           json={"service_profile": {"driver": driver}}),
                 404, "ServiceProfileDriverNotFound")


@pytest.mark.parametrize("body", [
    {"metainfo": "m", "driver": None}, {"metainfo": "m", "driver": 3},
    {"metainfo": "m" * 4097}, {"metainfo": {"a": 1}}, {"metainfo": "m", "enabled": "x"},
    {"metainfo": "m", "description": "d" * 1025}, {"metainfo": "m", "project_id": "p"},
    {"metainfo": "m", "flavors": []},
])
def test_a_bad_profile_body_is_a_400(admin, body):
    resp = admin.post(PROFILES, json={"service_profile": body})
    assert resp.status_code == 400, resp.text


def test_profile_filters(admin):
    made = profile(admin, description=unique("profile"), enabled=False)
    listed = admin.get(PROFILES, params={"description": made["description"],
                                         "enabled": "False"}).json()["service_profiles"]
    assert listed == [made]
    assert admin.get(PROFILES, params={"description": made["description"],
                                       "enabled": "true"}).json()["service_profiles"] == []
    assert admin.get(PROFILES, params={"metainfo": "m"}).status_code == 400


# --- bindings -----------------------------------------------------------------------------

def test_binding_a_profile_to_a_flavor(admin):
    made, one, two = flavor(admin), profile(admin), profile(admin)
    resp = bind(admin, made["id"], one["id"])
    assert resp.status_code == 201, resp.text
    assert resp.json() == {"service_profile": {"id": one["id"]}}
    assert bind(admin, made["id"], two["id"]).status_code == 201
    both = sorted([one["id"], two["id"]])
    assert admin.show("flavors", made["id"])["service_profiles"] == both
    assert named(admin, made["name"])[0]["service_profiles"] == both

    listed = admin.get(bindings(made["id"])).json()
    assert listed == {"service_profiles": [{"id": i} for i in both]}
    resp = admin.get(f"{bindings(made['id'])}/{one['id']}")
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"service_profile": {"id": one["id"]}}

    expect_error(bind(admin, made["id"], one["id"]), 409,
                 "FlavorServiceProfileBindingExists",
                 f"Service Profile {one['id']} is already associated with flavor "
                 f"{made['id']}.")

    assert admin.delete(f"{bindings(made['id'])}/{one['id']}").status_code == 204
    assert admin.show("flavors", made["id"])["service_profiles"] == [two["id"]]
    message = f"Service Profile {one['id']} is not associated with flavor {made['id']}."
    expect_error(admin.delete(f"{bindings(made['id'])}/{one['id']}"), 404,
                 "FlavorServiceProfileBindingNotFound", message)
    expect_error(admin.get(f"{bindings(made['id'])}/{one['id']}"), 404,
                 "FlavorServiceProfileBindingNotFound", message)


def test_a_bound_profile_is_in_use(admin):
    made, bound = flavor(admin), profile(admin)
    assert bind(admin, made["id"], bound["id"]).status_code == 201
    in_use = f"Service Profile {bound['id']} is used by some service instance."
    expect_error(admin.delete(f"{PROFILES}/{bound['id']}"), 409, "ServiceProfileInUse",
                 in_use)
    expect_error(admin.put(f"{PROFILES}/{bound['id']}",
                           json={"service_profile": {"enabled": False}}),
                 409, "ServiceProfileInUse", in_use)
    assert admin.show("service_profiles", bound["id"]) == bound
    # a flavor's delete takes its bindings along: the profile is free again
    assert admin.delete(f"{FLAVORS}/{made['id']}").status_code == 204
    assert admin.delete(f"{PROFILES}/{bound['id']}").status_code == 204


def test_binding_what_is_not_there(admin):
    made, there = flavor(admin), profile(admin)
    nowhere = str(uuid.uuid4())
    expect_error(bind(admin, made["id"], nowhere), 404, "ServiceProfileNotFound")
    expect_error(bind(admin, nowhere, there["id"]), 404, "FlavorNotFound")
    expect_error(admin.get(bindings(nowhere)), 404, "FlavorNotFound")
    expect_error(admin.delete(f"{bindings(nowhere)}/{there['id']}"), 404, "FlavorNotFound")
    expect_error(admin.delete(f"{bindings(made['id'])}/{nowhere}"), 404,
                 "FlavorServiceProfileBindingNotFound")
    assert admin.show("flavors", made["id"])["service_profiles"] == []


@pytest.mark.parametrize("body", [{"service_profile": {}}, {"service_profile": {"id": "x"}},
                                  {"service_profile": {"id": None}},
                                  {"service_profile": "x"}, {"other": {}},
                                  {"service_profile": {"id": NOWHERE, "driver": "d"}}])
def test_a_bad_binding_body_is_a_400(admin, body):
    made = flavor(admin)
    assert admin.post(bindings(made["id"]), json=body).status_code == 400


def test_a_binding_is_not_updated(admin):
    made, bound = flavor(admin), profile(admin)
    assert bind(admin, made["id"], bound["id"]).status_code == 201
    expect_error(admin.put(f"{bindings(made['id'])}/{bound['id']}",
                           json={"service_profile": {"id": bound["id"]}}),
                 400, "HTTPBadRequest", "Cannot update read-only attribute id")


def test_a_flavor_binds_the_profiles_its_body_names(admin):
    one, two, three = (profile(admin) for _ in range(3))
    made = flavor(admin, service_profiles=[one["id"], two["id"]])
    assert made["service_profiles"] == sorted([one["id"], two["id"]])
    resp = admin.put(f"{FLAVORS}/{made['id']}",
                     json={"flavor": {"service_profiles": [three["id"], two["id"]]}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["flavor"]["service_profiles"] == sorted([two["id"], three["id"]])
    assert admin.delete(f"{PROFILES}/{one['id']}").status_code == 204  # unbound
    resp = admin.put(f"{FLAVORS}/{made['id']}", json={"flavor": {"service_profiles": []}})
    assert resp.json()["flavor"]["service_profiles"] == []


def test_nothing_is_half_written(admin):
    there = profile(admin)
    name, nowhere = unique(), str(uuid.uuid4())
    expect_error(admin.post(FLAVORS, json={"flavor": {
        "name": name, "service_type": "L3_ROUTER_NAT",
        "service_profiles": [there["id"], nowhere]}}), 404, "ServiceProfileNotFound")
    assert named(admin, name) == []
    made = flavor(admin, service_profiles=[there["id"]])
    expect_error(admin.put(f"{FLAVORS}/{made['id']}", json={"flavor": {
        "name": "changed", "service_profiles": [nowhere]}}), 404, "ServiceProfileNotFound")
    assert admin.show("flavors", made["id"]) == made


# --- policy -------------------------------------------------------------------------------

def test_readers_see_flavors_and_only_admins_change_them(admin, user):
    made = flavor(admin)
    assert user.show("flavors", made["id"]) == made
    assert named(user, made["name"]) == [made]
    expect_error(user.post(FLAVORS, json={"flavor": {"name": unique(),
                                                     "service_type": "L3_ROUTER_NAT"}}),
                 403, "PolicyNotAuthorized", "create_flavor is disallowed by policy")
    expect_error(user.put(f"{FLAVORS}/{made['id']}", json={"flavor": {"name": "x"}}), 403,
                 "PolicyNotAuthorized")
    expect_error(user.delete(f"{FLAVORS}/{made['id']}"), 403, "PolicyNotAuthorized")
    assert admin.show("flavors", made["id"]) == made


def test_only_admins_see_and_change_profiles(admin, user):
    made = profile(admin)
    expect_error(user.get(f"{PROFILES}/{made['id']}"), 404, "ServiceProfileNotFound")
    assert user.get(PROFILES, params={"id": made["id"]}).json() == {"service_profiles": []}
    expect_error(user.post(PROFILES, json={"service_profile": {"metainfo": "m"}}), 403,
                 "PolicyNotAuthorized")
    expect_error(user.put(f"{PROFILES}/{made['id']}",
                          json={"service_profile": {"description": "x"}}),
                 403, "PolicyNotAuthorized")
    expect_error(user.delete(f"{PROFILES}/{made['id']}"), 403, "PolicyNotAuthorized")


def test_only_admins_bind(admin, user):
    made, bound, other = flavor(admin), profile(admin), profile(admin)
    assert bind(admin, made["id"], bound["id"]).status_code == 201
    expect_error(bind(user, made["id"], other["id"]), 403, "PolicyNotAuthorized",
                 "create_flavor_service_profile is disallowed by policy")
    expect_error(user.delete(f"{bindings(made['id'])}/{bound['id']}"), 403,
                 "PolicyNotAuthorized")
    assert user.get(bindings(made["id"])).json() == {"service_profiles": []}
    assert user.get(f"{bindings(made['id'])}/{bound['id']}").status_code == 404
    assert admin.show("flavors", made["id"])["service_profiles"] == [bound["id"]]


# --- with a configured provider, and only the flavors plugin ------------------------------

@pytest.fixture(scope="module", params=BACKENDS)
def providers_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"flavors-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=(
        "service_plugins = flavors\n"
        f"[service_providers]\nservice_provider = VPN:strongswan:{FAKE_DRIVER}:default\n"))
    yield srv
    srv.stop()
    drop()


def test_a_configured_providers_driver_makes_a_profile(providers_server, project):
    admin = providers_server.client(project, roles=("admin", "member"))
    made = profile(admin, driver=FAKE_DRIVER)
    assert made["driver"] == FAKE_DRIVER and made["metainfo"] == ""
    other = profile(admin)
    resp = admin.put(f"{PROFILES}/{other['id']}",
                     json={"service_profile": {"driver": FAKE_DRIVER}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["service_profile"]["driver"] == FAKE_DRIVER
    # spelt as [service_providers] spells it, or not at all
    expect_error(admin.post(PROFILES, json={"service_profile": {"driver": "VpnDriver"}}),
                 404, "ServiceProfileDriverNotFound")


def test_only_the_loaded_plugins_types_are_offered(providers_server, project):
    admin = providers_server.client(project, roles=("admin", "member"))
    assert flavor(admin, service_type="FLAVORS")["service_type"] == "FLAVORS"
    aliases = {e["alias"] for e in admin.get("/v2.0/extensions").json()["extensions"]}
    assert "flavors" in aliases and "l3-flavors" not in aliases  # no router plugin here
    for absent in ("L3_ROUTER_NAT", "VPN"):  # a provider is not a loaded plugin
        expect_error(admin.post(FLAVORS, json={"flavor": {"name": unique(),
                                                          "service_type": absent}}),
                     400, "InvalidServiceType")
