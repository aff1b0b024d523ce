"""openstacksdk and the openstack CLI with address scopes (``address scope``),
and openstacksdk with the RBAC entries of objects beyond networks (the CLI's
``network rbac create`` asks keystone for projects: test_keystone_clients)."""

from __future__ import annotations

import openstack
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server


@pytest.fixture(scope="module")
def scope_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-address-scopes")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra="service_plugins = router\n")
    yield srv
    srv.stop()
    drop()


def test_openstacksdk_address_scopes(scope_server):
    conn = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=scope_server.url)
    try:
        net = conn.network
        scope = net.create_address_scope(name="sdk-scope", ip_version=4)
        assert (scope.name, scope.ip_version, scope.is_shared) == ("sdk-scope", 4, False)
        assert net.find_address_scope("sdk-scope").id == scope.id
        scope = net.update_address_scope(scope, name="sdk-renamed", shared=True)
        assert (scope.name, scope.is_shared) == ("sdk-renamed", True)
        pool = net.create_subnet_pool(name="sdk-pool", prefixes=["10.60.0.0/16"],
                                      address_scope_id=scope.id, default_prefix_length=24)
        assert pool.address_scope_id == scope.id
        network = net.create_network(name="sdk-scoped")
        net.create_subnet(network_id=network.id, ip_version=4, subnet_pool_id=pool.id)
        assert net.get_network(network.id).ipv4_address_scope_id == scope.id
        group = net.create_security_group(name="sdk-shared")
        policy = net.create_rbac_policy(object_type="security_group", object_id=group.id,
                                        target_project_id="*", action="access_as_shared")
        assert policy.object_type == "security_group"
        assert net.get_security_group(group.id).is_shared is True
        assert {p.object_type for p in net.rbac_policies()} >= {"address_scope",
                                                                "security_group"}
        net.delete_rbac_policy(policy)
        with pytest.raises(openstack.exceptions.ConflictException):
            net.delete_address_scope(scope)  # its pool is in it
    finally:
        conn.close()


def test_openstack_cli_address_scopes(scope_server, tmp_path):
    session = run_scenario([
        ("create", "address scope create cli-scope --ip-version 6 -f json"),
        ("list", "address scope list -f json"),
        ("set", "address scope set cli-scope --name cli-renamed"),
        ("show", "address scope show cli-renamed -f json"),
        ("pool", "subnet pool create cli-pool --pool-prefix fd00:60::/48 "
                 "--address-scope cli-renamed -f json"),
        ("delete-busy", "address scope delete cli-renamed"),
        ("unpool", "subnet pool set cli-pool --no-address-scope"),
        ("delete", "address scope delete cli-renamed"),
        ("after", "address scope list -f json"),
    ], write_clouds_yaml(tmp_path, scope_server.url), tmp_path)
    made = session.json("create")
    assert (made["name"], made["ip_version"], made["shared"]) == ("cli-scope", 6, False)
    assert made["id"] in {row["ID"] for row in session.json("list")}
    session.quiet("set")
    assert session.json("show")["name"] == "cli-renamed"
    assert session.json("pool")["address_scope_id"] == made["id"]
    assert "in use" in session.text("delete-busy")
    session.quiet("unpool")
    session.quiet("delete")
    assert made["id"] not in {row["ID"] for row in session.json("after")}
