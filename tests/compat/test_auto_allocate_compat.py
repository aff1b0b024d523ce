"""openstacksdk and the openstack CLI with auto-allocated topologies (``network
auto allocated topology create|delete``), and ``is_default`` on networks."""

from __future__ import annotations

import openstack
import pytest
from openstack import exceptions as sdk_exc

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import Server, create_database, start_server


@pytest.fixture(scope="module")
def aa_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-auto-allocate")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth",
                       extra="service_plugins = router,auto_allocate\n")
    yield srv
    srv.stop()
    drop()


@pytest.fixture(scope="module")
def sdk(aa_server: Server):
    conn = openstack.connection.Connection(auth_type="none",
                                           network_endpoint_override=aa_server.url)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def public(sdk):
    """What the operator sets up: a default external network, default subnet pools."""
    net = sdk.network.create_network(name="public", is_router_external=True)
    sdk.network.create_subnet(network_id=net.id, cidr="172.24.8.0/22", ip_version=4)
    sdk.network.create_subnet_pool(name="sdk-default-v4", prefixes=["10.170.0.0/16"],
                                   default_prefixlen=26, is_default=True, shared=True)
    return net


def test_openstacksdk_sets_the_default_external_network(sdk, public):
    assert sdk.network.get_network(public.id).is_default is False
    with pytest.raises(sdk_exc.ConflictException, match="No default router:external"):
        sdk.network.validate_auto_allocated_topology("sdk-project")
    assert sdk.network.update_network(public, is_default=True).is_default is True
    assert [n.id for n in sdk.network.networks(is_default=True)] == [public.id]


def test_openstacksdk_gets_validates_and_deletes_a_topology(sdk, public):
    sdk.network.update_network(public, is_default=True)
    checked = sdk.network.validate_auto_allocated_topology("sdk-project")
    assert (checked.id, checked.project_id) == ("dry-run=pass", "sdk-project")
    assert list(sdk.network.networks(project_id="sdk-project")) == []

    made = sdk.network.get_auto_allocated_topology("sdk-project")
    assert made.project_id == "sdk-project"
    net = sdk.network.get_network(made.id)
    assert (net.name, net.project_id) == ("auto_allocated_network", "sdk-project")
    [router] = sdk.network.routers(project_id="sdk-project")
    assert router.external_gateway_info["network_id"] == public.id
    assert sdk.network.get_auto_allocated_topology("sdk-project").id == made.id

    assert sdk.network.delete_auto_allocated_topology("sdk-project") is None
    assert sdk.network.find_network(made.id) is None
    assert list(sdk.network.routers(project_id="sdk-project")) == []


def test_openstack_cli_auto_allocated_topology(aa_server, public, sdk, tmp_path):
    sdk.network.update_network(public, is_default=True)
    session = run_scenario([
        ("check", "network auto allocated topology create --check-resources "
                  "--project cli-project -f json"),
        ("create", "network auto allocated topology create --project cli-project -f json"),
        ("again", "network auto allocated topology create --or-show --project cli-project "
                  "-f json"),
        ("shown", "network show auto_allocated_network -f json"),
        ("default", "network show public -c is_default -f json"),
        ("delete", "network auto allocated topology delete --project cli-project"),
        ("gone", "network list --name auto_allocated_network -f json"),
        ("unset", "network set --no-default public"),
        ("failed", "network auto allocated topology create --check-resources "
                   "--project cli-project"),
    ], write_clouds_yaml(tmp_path, aa_server.url), tmp_path)
    # the CLI reads Neutron's dry run answer (its id) and prints no value of its own
    assert "dry_run" in session.json("check")
    made = session.json("create")
    assert made["project_id"] == "cli-project"
    assert session.json("again") == made
    shown = session.json("shown")
    assert (shown["id"], shown["project_id"]) == (made["id"], "cli-project")
    assert session.json("default") == {"is_default": True}
    session.quiet("delete")
    assert session.json("gone") == []
    session.quiet("unset")
    assert "Deployment error: No default router:external network." in session.text("failed")
