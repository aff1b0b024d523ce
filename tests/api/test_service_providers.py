"""/v2.0/service-providers (the service-type extension): the providers of
[service_providers], read only, with filters, fields and sorting."""

from __future__ import annotations

import pytest

from tests.conftest import BACKENDS
from tests.harness import create_database, expect_error, start_server

FAKES = "tests.fakes.providers"
# Two sections and a repeated key: every entry counts.
PROVIDERS = (
    "[service_providers]\n"
    f"service_provider = VPN:StrongSwan:{FAKES}.VpnDriver:default\n"
    f"service_provider = VPN:other:{FAKES}.OtherVpnDriver\n"
    "[service_providers]\n"
    f"service_provider = FIREWALL_V2:iptables:{FAKES}.FirewallDriver:default\n"
)
STRONGSWAN = {"service_type": "VPN", "name": "strongswan", "default": True}
OTHER = {"service_type": "VPN", "name": "other", "default": False}
IPTABLES = {"service_type": "FIREWALL_V2", "name": "iptables", "default": True}
PATH = "/v2.0/service-providers"


@pytest.fixture(scope="module", params=BACKENDS)
def providers_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"providers-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=PROVIDERS)
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def reader(providers_server, project):
    return providers_server.client(project, roles=("reader",))


def listed(client, params=None) -> list[dict]:
    resp = client.get(PATH, params=params)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert list(body) == ["service_providers"], "no links: the list is never paged"
    return body["service_providers"]


def test_without_providers_the_list_is_empty_and_the_extension_listed(admin):
    assert listed(admin) == []
    aliases = {e["alias"] for e in admin.get("/v2.0/extensions").json()["extensions"]}
    assert "service-type" in aliases
    ext = admin.get("/v2.0/extensions/service-type").json()["extension"]
    assert ext["name"] == "Neutron Service Type Management"


def test_every_configured_provider_is_listed_in_order(reader):
    assert listed(reader) == [STRONGSWAN, OTHER, IPTABLES]


@pytest.mark.parametrize(("params", "expected"), [
    ({"service_type": "VPN"}, [STRONGSWAN, OTHER]),
    ({"service_type": ["FIREWALL_V2", "VPN"]}, [STRONGSWAN, OTHER, IPTABLES]),
    ({"service_type": "METERING"}, []),
    ({"name": "other"}, [OTHER]),
    ({"name": "StrongSwan"}, []),  # names are kept in lower case
    ({"default": "true"}, [STRONGSWAN, IPTABLES]),
    ({"default": "False"}, [OTHER]),
    ({"default": "true", "service_type": "VPN"}, [STRONGSWAN]),
    ({"driver": f"{FAKES}.FirewallDriver"}, [IPTABLES]),  # as Neutron, though not shown
])
def test_filters(reader, params, expected):
    assert listed(reader, params) == expected


def test_fields(reader):
    assert listed(reader, {"fields": "name"}) == [{"name": "strongswan"}, {"name": "other"},
                                                  {"name": "iptables"}]
    assert listed(reader, {"fields": ["service_type", "default"], "name": "other"}) == [
        {"service_type": "VPN", "default": False}]


def test_sorting(reader):
    by_name = listed(reader, {"sort_key": "name", "sort_dir": "asc"})
    assert [p["name"] for p in by_name] == ["iptables", "other", "strongswan"]
    mixed = listed(reader, {"sort_key": ["service_type", "default"],
                            "sort_dir": ["desc", "asc"]})
    assert mixed == [OTHER, STRONGSWAN, IPTABLES]


def test_limit_and_marker_do_not_page_a_list_without_ids(reader):
    assert listed(reader, {"limit": "1"}) == [STRONGSWAN, OTHER, IPTABLES]
    assert listed(reader, {"limit": "1", "marker": "x", "page_reverse": "true"}) == [
        STRONGSWAN, OTHER, IPTABLES]


@pytest.mark.parametrize(("params", "type_"), [
    ({"default": "maybe"}, "InvalidInput"),
    ({"provider": "x"}, "HTTPBadRequest"),
    ({"sort_key": "driver", "sort_dir": "asc"}, "HTTPBadRequest"),
    ({"sort_key": "name"}, "HTTPBadRequest"),
])
def test_bad_queries_are_400(reader, params, type_):
    expect_error(reader.get(PATH, params=params), 400, type_)


def test_read_only(providers_server, project):
    admin = providers_server.client(project, roles=("admin",))
    expect_error(admin.post(PATH, json={"service_provider": {"name": "x"}}), 405,
                 "HTTPMethodNotAllowed")
    expect_error(admin.get(f"{PATH}/strongswan"), 404, "HTTPNotFound")
    expect_error(admin.put(f"{PATH}/strongswan", json={"service_provider": {}}), 404,
                 "HTTPNotFound")
    expect_error(admin.delete(f"{PATH}/strongswan"), 405, "HTTPMethodNotAllowed")
    assert listed(admin) == [STRONGSWAN, OTHER, IPTABLES]


def test_readers_of_any_project_see_them_others_do_not(providers_server, project):
    """Neutron's rule: role:reader (members and admins are readers too)."""
    for roles in (("member",), ("admin",), ("reader",)):
        assert len(listed(providers_server.client(project, roles=roles))) == 3, roles
    assert listed(providers_server.client(project, roles=("observer",))) == []
