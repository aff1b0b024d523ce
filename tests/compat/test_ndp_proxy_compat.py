"""NDP proxies through openstacksdk and the ``openstack`` CLI (``router ndp
proxy create|list|show|set|delete``, ``router set --enable-ndp-proxy``)."""

from __future__ import annotations

import openstack
import openstack.exceptions
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server


@pytest.fixture(scope="module")
def ndp_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-ndp")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra="service_plugins = router,ndp_proxy\n")
    yield srv
    srv.stop()
    drop()


@pytest.fixture(scope="module")
def sdk(ndp_server):
    connection = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=ndp_server.url)
    yield connection
    connection.close()


def test_openstacksdk(sdk):
    net = sdk.network
    scope = net.create_address_scope(name="sdk-s6", ip_version=6, shared=True)
    pool = net.create_subnet_pool(name="sdk-p6", prefixes=["2001:db8:66::/48"],
                                  default_prefixlen=64, address_scope_id=scope.id,
                                  shared=True)
    ext = net.create_network(name="sdk-ext6", is_router_external=True)
    net.create_subnet(network_id=ext.id, ip_version=6, subnetpool_id=pool.id,
                      is_dhcp_enabled=False)
    router = net.create_router(name="sdk-r6", external_gateway_info={"network_id": ext.id},
                               enable_ndp_proxy=True)
    assert router.enable_ndp_proxy is True
    inner = net.create_network(name="sdk-in6")
    subnet = net.create_subnet(network_id=inner.id, ip_version=6, subnetpool_id=pool.id)
    net.add_interface_to_router(router, subnet_id=subnet.id)
    port = net.create_port(network_id=inner.id)

    proxy = net.create_ndp_proxy(name="sdk-np", router_id=router.id, port_id=port.id)
    assert (proxy.router_id, proxy.port_id, proxy.ip_address) == (
        router.id, port.id, port.fixed_ips[0]["ip_address"])
    assert net.find_ndp_proxy("sdk-np").id == proxy.id
    assert [p.id for p in net.ndp_proxies(router_id=router.id)] == [proxy.id]
    changed = net.update_ndp_proxy(proxy, description="web")
    assert changed.description == "web"
    assert net.get_ndp_proxy(proxy.id).description == "web"
    with pytest.raises(openstack.exceptions.ConflictException, match="ndp proxies"):
        net.update_router(router, external_gateway_info={})
    net.delete_ndp_proxy(proxy, ignore_missing=False)
    assert net.find_ndp_proxy("sdk-np") is None
    assert net.update_router(router, enable_ndp_proxy=False).enable_ndp_proxy is False


@pytest.fixture(scope="module")
def clouds(ndp_server, tmp_path_factory):
    """The README's clouds.yaml, and an identity endpoint (``--project`` lookups)."""
    path = write_clouds_yaml(tmp_path_factory.mktemp("clouds"), ndp_server.url)
    path.write_text(path.read_text()
                    + f"    identity_endpoint_override: {ndp_server.url}\n")
    return path


def test_openstack_cli(clouds, tmp_path_factory):
    run = run_scenario([
        ("scope", "address scope create --ip-version 6 --share cli-s6 -f json"),
        ("pool", "subnet pool create --pool-prefix 2001:db8:67::/48 --default-prefix-length 64 "
                 "--address-scope cli-s6 --share cli-p6 -f json"),
        ("ext", "network create --external cli-ext6 -f json"),
        ("ext-sub", "subnet create --network cli-ext6 --ip-version 6 --subnet-pool cli-p6 "
                    "--no-dhcp cli-ext6-sub -f json"),
        ("router", "router create cli-r6 -f json"),
        ("enable-no-gw", "router set --enable-ndp-proxy cli-r6"),
        ("gw", "router set --external-gateway cli-ext6 --enable-ndp-proxy cli-r6"),
        ("router-show", "router show cli-r6 -f json"),
        ("in", "network create cli-in6 -f json"),
        ("in-sub", "subnet create --network cli-in6 --ip-version 6 --subnet-pool cli-p6 "
                   "cli-in6-sub -f json"),
        ("add", "router add subnet cli-r6 cli-in6-sub"),
        ("port", "port create --network cli-in6 cli-p1 -f json"),
        ("create", "router ndp proxy create --port cli-p1 --name cli-np cli-r6 -f json"),
        ("list", "router ndp proxy list -f json"),
        ("set", "router ndp proxy set --description web cli-np"),
        ("show", "router ndp proxy show cli-np -f json"),
        ("gw-unset", "router unset --external-gateway cli-r6"),
        ("delete", "router ndp proxy delete cli-np"),
        ("list-after", "router ndp proxy list -f json"),
        ("disable", "router set --disable-ndp-proxy cli-r6"),
        ("router-after", "router show cli-r6 -f json"),
    ], clouds, tmp_path_factory.mktemp("home"))
    assert "Can not enable ndp proxy on router" in run.text("enable-no-gw")
    run.quiet("gw")
    assert run.json("router-show")["enable_ndp_proxy"] is True
    port = run.json("port")
    proxy = run.json("create")
    assert (proxy["name"], proxy["port_id"], proxy["ip_address"]) == (
        "cli-np", port["id"], port["fixed_ips"][0]["ip_address"])
    assert [row["ID"] for row in run.json("list")] == [proxy["id"]]
    run.quiet("set")
    assert run.json("show")["description"] == "web"
    assert "ndp proxies" in run.text("gw-unset")
    run.quiet("delete")
    assert run.json("list-after") == []
    run.quiet("disable")
    assert run.json("router-after")["enable_ndp_proxy"] is False
