"""Fixtures: real neutrino-server processes on SQLite, PostgreSQL and MariaDB.

Every API test talks HTTP to a server started here. Servers are shared by a
test session (per xdist worker), so tests isolate themselves by using their
own project ids (the ``project`` fixtures) rather than assuming an empty DB.

``NEUTRINO_TEST_BACKENDS=sqlite`` (comma list) limits the backends.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tests.harness import ApiClient, Server, create_database, rabbit_vhost, start_server

ALL_BACKENDS = ("sqlite", "postgresql", "mysql")
BACKENDS = tuple(b for b in os.environ.get("NEUTRINO_TEST_BACKENDS", ",".join(ALL_BACKENDS))
                 .split(",") if b)


# What the shared servers load beyond the defaults, as a typical cloud does.
SERVER_EXTRA = ("service_plugins = router,port_forwarding,firewall_v2,metering,log,vpnaas,"
                "network_ip_availability,flavors,auto_allocate,network_segment_range,trunk,"
                "qos,conntrack_helper,ndp_proxy,local_ip\n"
                "[ml2]\nextension_drivers = port_security\n")


@pytest.fixture(scope="session", params=BACKENDS)
def server(request, tmp_path_factory) -> Server:
    """A trusted_headers server (policy applies) on each database backend."""
    tmp = tmp_path_factory.mktemp(f"server-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=SERVER_EXTRA)
    srv.backend = request.param
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def project() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def other_project() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def admin(server: Server, project: str) -> ApiClient:
    """An admin acting from ``project`` (creates land in it unless told otherwise)."""
    return server.client(project, roles=("admin", "member"))


@pytest.fixture
def user(server: Server, project: str) -> ApiClient:
    return server.client(project, roles=("member",))


@pytest.fixture
def other(server: Server, other_project: str) -> ApiClient:
    return server.client(other_project, roles=("member",))


@pytest.fixture(scope="session")
def rabbit_url() -> str:
    """A RabbitMQ vhost for this test worker's servers and agents, one deployment
    at a time (a server stopped drops the stale reports left in its queues)."""
    with rabbit_vhost() as url:
        yield url


def paths_under(top: str) -> set[str]:
    """``top`` and every file and directory under it (none when it is not there)."""
    if not os.path.exists(top):
        return set()
    return {top, *(os.path.join(where, name) for where, dirs, files in os.walk(top)
                   for name in dirs + files)}


@pytest.fixture(scope="session", autouse=True)
def no_state_in_the_working_directory() -> Iterator[None]:
    """Every server and agent a test starts keeps its state in a temp dir: one
    started without ``state_path`` (default ``./state``) would leave files, a
    metadata agent's socket, in the checkout. A run that adds anything to
    ./state fails, whether or not ./state was there before (a developer's
    own server keeps its database there)."""
    state = os.path.join(os.getcwd(), "state")
    before = paths_under(state)
    yield
    left = sorted(paths_under(state) - before)
    if left:
        pytest.fail(f"a test wrote to {state} (give its server or agent a state_path "
                    f"in its tmp_path): {left}")
