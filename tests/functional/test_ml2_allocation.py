"""Segment allocation under concurrency: two API workers, every database."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.functional.test_concurrency import ADMIN, BACKENDS, burst, loud
from tests.harness import create_database, start_server

pytestmark = pytest.mark.slow

VNIS = 50


@pytest.fixture(scope="module", params=BACKENDS)
def server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"ml2-alloc-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", workers=2, extra=(
        "[ml2]\ntenant_network_types = vxlan\n"
        f"[ml2_type_vxlan]\nvni_ranges = 7001:{7000 + VNIS}\n"
        "[quotas]\nquota_network = -1\n"))
    srv.backend = request.param
    yield srv
    srv.stop()
    drop()


def test_concurrent_tenant_networks_get_distinct_vnis_until_none_is_left(server):
    headers = {**ADMIN, "X-Project-Id": "ml2-alloc"}
    with loud(server):
        responses = burst(server, [("POST", "/v2.0/networks", {"network": {"name": f"n{i}"}})
                                   for i in range(VNIS + 5)], headers)
        statuses = Counter(r.status_code for r in responses)
        assert statuses == {201: VNIS, 503: 5}, statuses
        vnis = [r.json()["network"]["provider:segmentation_id"] for r in responses
                if r.status_code == 201]
        assert sorted(vnis) == list(range(7001, 7001 + VNIS))
        assert {r.json()["NeutronError"]["type"] for r in responses
                if r.status_code == 503} == {"NoNetworkAvailable"}
