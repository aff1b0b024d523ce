"""Network flavors and their service profiles through openstacksdk and the
``openstack`` CLI (``network flavor ...``, ``network flavor profile ...``)."""

from __future__ import annotations

import openstack
import openstack.exceptions
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server

DRIVER = "tests.fakes.providers.VpnDriver"
EXTRA = ("service_plugins = router,flavors\n"
         f"[service_providers]\nservice_provider = VPN:strongswan:{DRIVER}:default\n")


@pytest.fixture(scope="module")
def flavors_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-flavors")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra=EXTRA)
    yield srv
    srv.stop()
    drop()


@pytest.fixture(scope="module")
def sdk(flavors_server):
    connection = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=flavors_server.url)
    yield connection
    connection.close()


def test_openstacksdk(sdk):
    net = sdk.network
    gold = net.create_service_profile(description="gold", driver=DRIVER, metainfo="{}")
    assert (gold.description, gold.driver, gold.meta_info, gold.is_enabled) == (
        "gold", DRIVER, "{}", True)
    made = net.create_flavor(name="sdk-flavor", service_type="L3_ROUTER_NAT",
                             description="fast")
    assert (made.name, made.service_type, made.is_enabled, made.service_profile_ids) == (
        "sdk-flavor", "L3_ROUTER_NAT", True, [])
    assert net.find_flavor("sdk-flavor").id == made.id
    assert [f.id for f in net.flavors(name="sdk-flavor")] == [made.id]

    answer = net.associate_flavor_with_service_profile(made, gold)
    assert answer == {"service_profile": {"id": gold.id}}
    assert net.get_flavor(made.id).service_profile_ids == [gold.id]
    # the SDK hands back what the server answers, an error too, without raising
    again = net.associate_flavor_with_service_profile(made, gold)
    assert again["NeutronError"]["type"] == "FlavorServiceProfileBindingExists"
    with pytest.raises(openstack.exceptions.ConflictException, match="is used by"):
        net.delete_service_profile(gold, ignore_missing=False)

    net.disassociate_flavor_from_service_profile(made, gold)
    assert net.get_flavor(made.id).service_profile_ids == []
    net.disassociate_flavor_from_service_profile(made, gold)  # a 404, not raised either

    changed = net.update_flavor(made, is_enabled=False, name="sdk-renamed")
    assert (changed.name, changed.is_enabled) == ("sdk-renamed", False)
    assert net.update_service_profile(gold, is_enabled=False).is_enabled is False
    assert gold.id in [p.id for p in net.service_profiles()]

    net.delete_flavor(made, ignore_missing=False)
    net.delete_service_profile(gold, ignore_missing=False)
    assert net.find_flavor("sdk-renamed") is None
    with pytest.raises(openstack.exceptions.NotFoundException):
        net.get_service_profile(gold.id)


def test_openstacksdk_errors(sdk):
    net = sdk.network
    with pytest.raises(openstack.exceptions.BadRequestException,
                       match="Invalid service type: VPN"):
        net.create_flavor(name="sdk-vpn", service_type="VPN")  # vpnaas is not loaded
    with pytest.raises(openstack.exceptions.BadRequestException,
                       match="needs either a driver or metainfo"):
        net.create_service_profile(description="empty")
    with pytest.raises(openstack.exceptions.NotFoundException,
                       match="driver no.such.Driver could not be found"):
        net.create_service_profile(driver="no.such.Driver")


@pytest.fixture(scope="module")
def clouds(flavors_server, tmp_path_factory):
    return write_clouds_yaml(tmp_path_factory.mktemp("clouds"), flavors_server.url)


def test_openstack_cli(clouds, tmp_path_factory):
    made = run_scenario([
        ("profile", "network flavor profile create --description gold --metainfo gold-tier "
                    "-f json"),
        ("profile-driver", f"network flavor profile create --driver {DRIVER} --disable "
                           "-f json"),
        ("profile-bad", "network flavor profile create --driver no.such.Driver"),
        ("flavor", "network flavor create --service-type L3_ROUTER_NAT --description fast "
                   "cli-flavor -f json"),
        ("flavor-2", "network flavor create --service-type FLAVORS --disable cli-flavor-2 "
                     "-f json"),
        ("bad-type", "network flavor create --service-type QOS cli-bad"),
        ("list", "network flavor list -f json"),
        ("set", "network flavor set --name cli-renamed --description faster --disable "
                "cli-flavor"),
        ("show", "network flavor show cli-renamed -f json"),
        ("profile-list", "network flavor profile list -f json"),
    ], clouds, tmp_path_factory.mktemp("home"))
    profile, driven = made.json("profile"), made.json("profile-driver")
    assert (profile["description"], profile["meta_info"], profile["enabled"]) == (
        "gold", "gold-tier", True)
    assert (driven["driver"], driven["enabled"]) == (DRIVER, False)
    assert "Service Profile driver no.such.Driver could not be found" in made.text(
        "profile-bad")
    flavor = made.json("flavor")
    assert (flavor["name"], flavor["service_type"], flavor["description"],
            flavor["enabled"]) == ("cli-flavor", "L3_ROUTER_NAT", "fast", True)
    assert made.json("flavor-2")["enabled"] is False
    assert "Invalid service type: QOS." in made.text("bad-type")
    assert sorted((row["Name"], row["Service Type"], row["Enabled"])
                  for row in made.json("list")) == [
        ("cli-flavor", "L3_ROUTER_NAT", True), ("cli-flavor-2", "FLAVORS", False)]
    made.quiet("set")
    shown = made.json("show")
    assert (shown["id"], shown["description"], shown["enabled"]) == (
        flavor["id"], "faster", False)
    assert sorted(row["ID"] for row in made.json("profile-list")) == sorted(
        [profile["id"], driven["id"]])

    bound = run_scenario([
        ("add", f"network flavor add profile cli-renamed {profile['id']}"),
        ("add-2", f"network flavor add profile cli-renamed {driven['id']}"),
        ("show", "network flavor show cli-renamed -f json"),
        ("add-again", f"network flavor add profile cli-renamed {profile['id']}"),
        ("delete-in-use", f"network flavor profile delete {profile['id']}"),
        ("remove", f"network flavor remove profile cli-renamed {profile['id']}"),
        ("show-after", "network flavor show cli-renamed -f json"),
        ("remove-again", f"network flavor remove profile cli-renamed {profile['id']}"),
        ("profile-show", f"network flavor profile show {profile['id']} -f json"),
        ("profile-delete", f"network flavor profile delete {profile['id']}"),
        ("delete", "network flavor delete cli-renamed cli-flavor-2"),
        ("list-after", "network flavor list -f json"),
        ("profile-delete-2", f"network flavor profile delete {driven['id']}"),
        ("profile-list-after", "network flavor profile list -f json"),
    ], clouds, tmp_path_factory.mktemp("home"))
    bound.quiet("add")
    bound.quiet("add-2")
    assert sorted(bound.json("show")["service_profile_ids"]) == sorted(
        [profile["id"], driven["id"]])
    bound.quiet("add-again")  # the CLI does not look at the answer (a 409)
    assert "is used by some service instance" in bound.text("delete-in-use")
    bound.quiet("remove")
    assert bound.json("show-after")["service_profile_ids"] == [driven["id"]]
    bound.quiet("remove-again")  # nor here (a 404)
    assert bound.json("profile-show")["id"] == profile["id"]
    bound.quiet("profile-delete")
    bound.quiet("delete")  # the flavor's bindings go with it
    assert bound.json("list-after") == []
    bound.quiet("profile-delete-2")
    assert bound.json("profile-list-after") == []
