"""openstacksdk and the openstack CLI list the configured service providers."""

from __future__ import annotations

import openstack
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server

FAKES = "tests.fakes.providers"
PROVIDERS = (
    "[service_providers]\n"
    f"service_provider = VPN:strongswan:{FAKES}.VpnDriver:default\n"
    f"service_provider = VPN:other:{FAKES}.OtherVpnDriver\n"
    f"service_provider = FIREWALL_V2:iptables:{FAKES}.FirewallDriver:default\n"
)


@pytest.fixture(scope="module")
def providers_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-providers")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra=PROVIDERS)
    yield srv
    srv.stop()
    drop()


@pytest.fixture(scope="module")
def sdk(providers_server):
    connection = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=providers_server.url)
    yield connection
    connection.close()


def test_openstacksdk_lists_service_providers(sdk):
    found = [(p.service_type, p.name, p.is_default) for p in sdk.network.service_providers()]
    assert found == [("VPN", "strongswan", True), ("VPN", "other", False),
                     ("FIREWALL_V2", "iptables", True)]


def test_openstacksdk_filters_service_providers(sdk):
    assert [p.name for p in sdk.network.service_providers(service_type="VPN")] == [
        "strongswan", "other"]
    assert [p.name for p in sdk.network.service_providers(is_default=True)] == [
        "strongswan", "iptables"]
    assert [p.name for p in sdk.network.service_providers(name="other")] == ["other"]


def test_openstacksdk_sees_the_service_type_extension(sdk):
    assert sdk.network.find_extension("service-type") is not None


def test_openstack_cli_lists_service_providers(providers_server, tmp_path):
    clouds = write_clouds_yaml(tmp_path, providers_server.url)
    session = run_scenario([("list", "network service provider list -f json")], clouds,
                           tmp_path)
    assert session.json("list") == [
        {"Service Type": "VPN", "Name": "strongswan", "Default": True},
        {"Service Type": "VPN", "Name": "other", "Default": False},
        {"Service Type": "FIREWALL_V2", "Name": "iptables", "Default": True}]
