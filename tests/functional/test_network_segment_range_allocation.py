"""Allocation from network segment ranges: what it costs a network create (one
statement more than without the plugin, none without it), and distinct ids,
a project's own range first, when many networks are made at once."""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterator

import pytest

from neutrino.cmd.server import build_app, load_config
from neutrino.db import migrate
from tests.functional.test_concurrency import ADMIN, BACKENDS, burst, loud
from tests.functional.test_statement_budget import Counter
from tests.harness import create_database, start_server

ML2 = ("[ml2]\ntenant_network_types = vxlan\n"
       "[ml2_type_vxlan]\nvni_ranges = 7001:7050\n"
       "[quotas]\nquota_network = -1\n")


def counter(tmp, plugins: str) -> Counter:
    url = f"sqlite:///{tmp / 'neutrino.db'}"
    (tmp / "neutrino.conf").write_text(
        f"[DEFAULT]\nstate_path = {tmp}\nservice_plugins = {plugins}\n{ML2}"
        f"[database]\nconnection = {url}\n")
    migrate.upgrade(url)
    return Counter(build_app(load_config([str(tmp / "neutrino.conf")]), sync=True))


def statements_of_network_create(count: Counter, project: str) -> int:
    def create() -> None:
        scope = {"method": "POST", "path": "/v2.0/networks", "query_string": b"",
                 "headers": [(b"x-project-id", project.encode())], "scheme": "http",
                 "server": ("127.0.0.1", 9696)}
        status, _, payload = count.app.handle(scope, b'{"network": {"name": "n"}}')
        assert status == 201, payload

    create()  # warm: the project's first call makes its default security group
    _, statements, _ = count.count(create)
    return len(statements)


@pytest.fixture
def without(tmp_path) -> Iterator[Counter]:
    (tmp_path / "without").mkdir()
    count = counter(tmp_path / "without", "router")
    yield count
    count.app.on_shutdown()


@pytest.fixture
def with_ranges(tmp_path) -> Iterator[Counter]:
    (tmp_path / "with").mkdir()
    count = counter(tmp_path / "with", "router,network_segment_range")
    yield count
    count.app.on_shutdown()


def test_a_network_create_costs_one_statement_more_with_ranges(without, with_ranges):
    base = statements_of_network_create(without, "budget")
    assert statements_of_network_create(with_ranges, "shared-only") == base + 1
    with_ranges.call("POST", "/v2.0/network_segment_ranges", {"network_segment_range": {
        "network_type": "vxlan", "minimum": 8000, "maximum": 8009, "shared": False,
        "project_id": "own"}})
    # its own range and the shared ones: their candidates in one statement
    assert statements_of_network_create(with_ranges, "own") == base + 1


@pytest.fixture(scope="module", params=BACKENDS)
def server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"ranges-alloc-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", workers=2, extra=(
        "service_plugins = router,network_segment_range\n" + ML2))
    srv.backend = request.param
    yield srv
    srv.stop()
    drop()


@pytest.mark.slow
def test_concurrent_networks_take_their_projects_range_then_the_shared_one(server):
    admin = server.client("ranges-admin", roles=("admin", "member"))
    resp = admin.post("/v2.0/network_segment_ranges", json={"network_segment_range": {
        "network_type": "vxlan", "minimum": 8001, "maximum": 8010, "shared": False,
        "project_id": "racer"}})
    assert resp.status_code == 201, resp.text
    headers = {**ADMIN, "X-Project-Id": "racer"}

    def networks(count: int) -> tuple[Tally, list[int]]:
        responses = burst(server, [("POST", "/v2.0/networks", {"network": {"name": f"n{i}"}})
                                   for i in range(count)], headers)
        return Tally(r.status_code for r in responses), [
            r.json()["network"]["provider:segmentation_id"] for r in responses
            if r.status_code == 201]

    with loud(server):
        statuses, first = networks(15)
        assert statuses == {201: 15}, statuses
        own = sorted(vni for vni in first if vni > 8000)
        assert own == list(range(8001, 8011)), first  # its own, all, before shared ones
        statuses, rest = networks(50)
        assert statuses == {201: 45, 503: 5}, statuses
        assert sorted(first + rest) == [*range(7001, 7051), *range(8001, 8011)]
