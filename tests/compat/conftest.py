"""A no-auth neutrino-server on SQLite for the real-client tests.

The server is module-scoped: each compat module gets a fresh, empty
database, so the tests may assert on whole listings.
"""

from __future__ import annotations

from pathlib import Path

import openstack
import pytest

from tests.harness import Server, create_database, start_server

CLOUD = "neutrino"


@pytest.fixture(scope="module")
def noauth_server(tmp_path_factory) -> Server:
    tmp = tmp_path_factory.mktemp("compat")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth",
                       extra="service_plugins = router,port_forwarding,metering\n")
    yield srv
    srv.stop()
    drop()


def write_clouds_yaml(directory: Path, endpoint: str) -> Path:
    """The clouds.yaml the README documents: no keystone, a network endpoint."""
    path = directory / "clouds.yaml"
    path.write_text(
        "clouds:\n"
        f"  {CLOUD}:\n"
        "    auth_type: none\n"
        f"    network_endpoint_override: {endpoint}\n")
    return path


@pytest.fixture(scope="module")
def clouds_yaml(noauth_server: Server, tmp_path_factory) -> Path:
    return write_clouds_yaml(tmp_path_factory.mktemp("clouds"), noauth_server.url)


@pytest.fixture(scope="module")
def conn(noauth_server: Server) -> openstack.connection.Connection:
    """openstacksdk as the README connects it: no auth, the server root as endpoint."""
    connection = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=noauth_server.url)
    yield connection
    connection.close()
