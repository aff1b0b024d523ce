"""Router flavors (``l3-flavors``): a router made of a flavor of L3_ROUTER_NAT
gets the provider its profile's driver names, which makes it HA or not;
``flavor_id`` shown, filtered on, never updated; Neutron's errors for each
flavor that serves no router; a flavor with routers is not deleted. A server
of the module's own (the count of alive L3 agents matters, as in test_l3_ha)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import delete

from neutrino.config import ConfigError
from neutrino.db import models
from neutrino.plugins.providers import Provider, ServiceProviders
from neutrino.services.l3 import providers as l3_providers
from tests.api.agent_reports import L3, Reporter, unique_host
from tests.conftest import BACKENDS
from tests.harness import ApiClient, Server, create_database, expect_error, start_server

VPN_DRIVER = "tests.fakes.providers.VpnDriver"
DVRHA_DRIVER = "neutrino.services.l3.providers.DvrHaDriver"
HA_INTERFACE = "network:router_ha_interface"
NOWHERE = "7d5c2f59-0c3f-4b07-9d1e-6a2f1f0c1a11"  # no flavor has it


@pytest.fixture(scope="module", params=BACKENDS)
def flavors_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"router-flavors-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=(
        "service_plugins = router,flavors\nmax_l3_agents_per_router = 2\n"
        "[service_providers]\n"
        "service_provider = L3_ROUTER_NAT:single_node:single_node\n"
        "service_provider = L3_ROUTER_NAT:ha:ha\n"
        "service_provider = L3_ROUTER_NAT:dvr:dvr\n"
        f"service_provider = L3_ROUTER_NAT:dvrha:{DVRHA_DRIVER}\n"
        f"service_provider = VPN:strongswan:{VPN_DRIVER}:default\n"))
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def project() -> str:
    return f"p-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(flavors_server: Server, project: str) -> ApiClient:
    return flavors_server.client(project, roles=("admin", "member"))


@pytest.fixture
def member(flavors_server: Server, project: str) -> ApiClient:
    return flavors_server.client(project)


@pytest.fixture
def agents(flavors_server: Server):
    """Add L3 agents; all removed at the end."""
    reporter = Reporter(flavors_server.db_url)
    made: list[str] = []

    def add(count: int) -> None:
        made.extend(reporter.agent(unique_host(), L3) for _ in range(count))

    yield add
    t = models.agents
    reporter.db.write(lambda conn: conn.execute(delete(t).where(t.c.id.in_(made))))
    reporter.close()


def flavor_of(admin: ApiClient, *drivers: str, service_type: str = "L3_ROUTER_NAT",
              enabled: bool = True, profile: dict | None = None) -> str:
    """A flavor bound to a profile per driver (or to ``profile``'s attributes)."""
    bodies = [{"driver": d} for d in drivers] + ([profile] if profile else [])
    ids = [admin.create("service_profiles", **body)["id"] for body in bodies]
    return admin.create("flavors", name=f"f-{uuid.uuid4().hex[:8]}",
                        service_type=service_type, enabled=enabled,
                        service_profiles=ids)["id"]


def router_post(client: ApiClient, **attrs):
    return client.post("/v2.0/routers", json={"router": {"name": "r", **attrs}})


def ha_ports(admin: ApiClient, router_id: str) -> list[dict]:
    return admin.get("/v2.0/ports", params={"device_id": router_id,
                                            "device_owner": HA_INTERFACE}).json()["ports"]


def test_a_single_node_flavor_makes_a_legacy_router(admin, member, project):
    ext = admin.get("/v2.0/extensions/l3-flavors").json()["extension"]
    assert ext["name"] == "Router Flavor Extension"
    flavor_id = flavor_of(admin, "single_node")
    plain = member.create("routers", name="plain")
    assert plain["flavor_id"] is None

    # any project's member may use a flavor
    router = member.create("routers", name="flavored", flavor_id=flavor_id)
    assert router["flavor_id"] == flavor_id
    shown = admin.show("routers", router["id"])
    assert shown["flavor_id"] == flavor_id and shown["ha"] is False
    listed = member.get("/v2.0/routers", params={"flavor_id": flavor_id}).json()["routers"]
    assert [r["id"] for r in listed] == [router["id"]]
    ordered = member.get("/v2.0/routers", params={"sort_key": "flavor_id",
                                                  "sort_dir": "desc"}).json()["routers"]
    assert {r["id"] for r in ordered} == {router["id"], plain["id"]}

    # flavor_id is the create's only; the provider keeps ha as it is
    path = f"/v2.0/routers/{router['id']}"
    expect_error(member.put(path, json={"router": {"flavor_id": NOWHERE}}), 400, "HTTPBadRequest",
                 "Cannot update read-only attribute flavor_id")
    expect_error(admin.put(path, json={"router": {"ha": True, "admin_state_up": False}}), 400,
                 "InvalidInput", "Invalid input for operation: Changing the 'ha' and "
                 "'distributed' attributes on a router associated with a flavor is not "
                 "supported.")
    assert admin.put(path, json={"router": {"ha": False, "name": "same"}}).status_code == 200
    expect_error(router_post(admin, flavor_id=flavor_id, ha=True), 400, "InvalidInput",
                 "Invalid input for operation: Provider single_node does not support "
                 "ha=True.")

    # a flavor with routers stays
    expect_error(admin.delete(f"/v2.0/flavors/{flavor_id}"), 409, "FlavorInUse",
                 f"Flavor {flavor_id} is used by some service instance.")
    assert admin.delete(path).status_code == 204
    assert admin.delete(f"/v2.0/flavors/{flavor_id}").status_code == 204
    assert member.get("/v2.0/routers", params={"flavor_id": flavor_id}).json() == {
        "routers": []}


def test_an_ha_flavor_makes_an_ha_router(admin, member, project, agents):
    flavor_id = flavor_of(admin, "ha")
    expect_error(router_post(member, flavor_id=flavor_id), 409, "HANotEnoughAvailableAgents")
    agents(2)
    router = member.create("routers", name="ha", flavor_id=flavor_id)
    assert "ha" not in router and router["flavor_id"] == flavor_id
    assert admin.show("routers", router["id"])["ha"] is True
    assert len(ha_ports(admin, router["id"])) == 2
    hosting = admin.get(f"/v2.0/routers/{router['id']}/l3-agents").json()["agents"]
    assert {a["ha_state"] for a in hosting} == {"standby"}
    expect_error(router_post(admin, flavor_id=flavor_id, ha=False), 400, "InvalidInput",
                 "Invalid input for operation: Provider ha does not support ha=False.")
    explicit = admin.create("routers", name="ha2", flavor_id=flavor_id, ha=True)
    assert explicit["ha"] is True
    path = f"/v2.0/routers/{router['id']}"
    resp = admin.put(path, json={"router": {"ha": False, "admin_state_up": False}})
    expect_error(resp, 400, "InvalidInput")
    assert admin.show("routers", router["id"])["ha"] is True
    for made in (router, explicit):
        assert admin.delete(f"/v2.0/routers/{made['id']}").status_code == 204
    assert ha_ports(admin, router["id"]) == []


@pytest.mark.parametrize(("case", "status", "type_", "message"), [
    ("unknown", 404, "FlavorNotFound", f"Flavor {NOWHERE} could not be found."),
    ("not a uuid", 404, "FlavorNotFound", "Flavor not-a-flavor could not be found."),
    ("other type", 400, "InvalidFlavorServiceType",
     "Invalid service type FLAVORS."),
    ("disabled", 503, "FlavorDisabled", "Flavor is not enabled."),
    ("no profile", 404, "FlavorServiceProfileBindingNotFound", None),
    ("profile disabled", 503, "ServiceProfileDisabled", "Service Profile is not enabled."),
    ("metainfo only", 404, "ServiceProfileDriverNotFound", None),
    ("dvr", 400, "InvalidInput",
     "Invalid input for operation: Provider dvr does not support distributed=False."),
    ("dvrha", 400, "InvalidInput",
     "Invalid input for operation: Provider dvrha does not support distributed=False."),
    ("vpn driver", 400, "ServiceProviderNotFound",
     "Service provider 'strongswan' could not be found for service type L3_ROUTER_NAT"),
])
def test_a_flavor_that_serves_no_router(admin, case, status, type_, message):
    flavor_id = {
        "unknown": lambda: NOWHERE,
        "not a uuid": lambda: "not-a-flavor",
        "other type": lambda: flavor_of(admin, service_type="FLAVORS",
                                        profile={"metainfo": "{}"}),
        "disabled": lambda: flavor_of(admin, "single_node", enabled=False),
        "no profile": lambda: flavor_of(admin),
        "profile disabled": lambda: flavor_of(
            admin, profile={"driver": "single_node", "enabled": False}),
        "metainfo only": lambda: flavor_of(admin, profile={"metainfo": '{"a": 1}'}),
        "dvr": lambda: flavor_of(admin, "dvr"),
        "dvrha": lambda: flavor_of(admin, DVRHA_DRIVER),
        "vpn driver": lambda: flavor_of(admin, VPN_DRIVER),
    }[case]()
    name = f"refused-{uuid.uuid4().hex[:8]}"
    expect_error(router_post(admin, name=name, flavor_id=flavor_id), status, type_, message)
    assert admin.get("/v2.0/routers", params={"name": name}).json() == {"routers": []}


def test_a_flavor_id_of_no_string_is_a_400(admin):
    for value in (5, ["x"], {"id": NOWHERE}):
        expect_error(router_post(admin, flavor_id=value), 400, "HTTPBadRequest")
    router = admin.create("routers", name="null", flavor_id=None)
    assert router["flavor_id"] is None
    assert admin.delete(f"/v2.0/routers/{router['id']}").status_code == 204


def test_each_l3_provider_must_be_a_router_provider():
    def provider(name: str, cls: type) -> Provider:
        return Provider("L3_ROUTER_NAT", name, f"x.{cls.__name__}", False, cls)

    l3_providers.check_config(ServiceProviders([
        provider("ha", l3_providers.HaDriver),
        Provider("VPN", "vpn", "v", True, object)]))
    with pytest.raises(ConfigError, match="not a router provider"):
        l3_providers.check_config(ServiceProviders([provider("odd", object)]))
