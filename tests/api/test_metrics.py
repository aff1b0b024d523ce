"""``GET /metrics``: the API's requests counted by collection, action and status,
for admins only, summed over the API workers, and nothing private in a label."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.harness import ApiClient, create_database, expect_error, start_server

REQUESTS = "neutrino_api_requests_total"
SECONDS = "neutrino_api_request_duration_seconds_count"


def samples(resp: httpx.Response) -> dict[tuple[str, frozenset], float]:
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(resp.text)
            for sample in family.samples}


def count(found: dict[tuple[str, frozenset], float], name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def test_requests_are_counted_by_collection_action_and_status(admin: ApiClient):
    before = samples(admin.get("/metrics"))
    network = admin.network()
    admin.subnet(network["id"])
    for _ in range(3):
        admin.port(network["id"])
    assert admin.get("/v2.0/ports").status_code == 200
    assert admin.get(f"/v2.0/ports/{uuid.uuid4()}").status_code == 404
    after = samples(admin.get("/metrics"))

    def added(name: str, **labels: str) -> float:
        return count(after, name, **labels) - count(before, name, **labels)

    assert added(REQUESTS, resource="ports", action="create", status="201") == 3
    assert added(SECONDS, resource="ports", action="create", status="201") == 3
    assert added(REQUESTS, resource="ports", action="list", status="200") == 1
    assert added(REQUESTS, resource="ports", action="show", status="404") == 1
    assert added(REQUESTS, resource="networks", action="create", status="201") == 1
    assert added(REQUESTS, resource="metrics", action="show", status="200") == 1


def test_no_label_says_anything_private(admin: ApiClient, project: str):
    secret = f"secret-{uuid.uuid4().hex[:8]}"
    network = admin.network(name=secret)
    subnet = admin.subnet(network["id"], cidr="10.66.0.0/24")
    port = admin.port(network["id"], name=secret, device_id=secret)
    admin.put(f"/v2.0/ports/{port['id']}", json={"port": {"description": secret}})
    admin.get(f"/v2.0/{secret}/{port['id']}")  # unknown: labelled other
    admin.get(f"/v2.0/ports/{port['id']}/{secret}")
    admin.put(f"/v2.0/networks/{network['id']}/tags/{secret}")
    admin.get("/v2.0/ports", params={"name": secret, "project_id": project})
    private = {secret, project, network["id"], subnet["id"], port["id"],
               port["mac_address"], port["fixed_ips"][0]["ip_address"], "10.66.0."}
    resp = admin.get("/metrics")
    values = {value for _, labels in samples(resp) for _, value in labels}
    assert "ports" in values and "other" in values and "tags" in values
    assert not [value for value in values if any(word in value for word in private)]
    assert not [word for word in private if word in resp.text]


def test_a_member_may_not_read_them_nor_a_stranger(user: ApiClient, server):
    expect_error(user.get("/metrics"), 403, "PolicyNotAuthorized",
                 "get_metrics is disallowed by policy")
    assert user.get("/metrics/more").status_code == 404
    stranger = httpx.get(f"{server.url}/metrics")  # no identity: authenticated first
    assert stranger.status_code == 401
    assert "neutrino_" not in stranger.text


def test_turned_off_there_is_no_page_and_nothing_recorded(tmp_path: Path):
    url, drop = create_database("sqlite", tmp_path)
    server = start_server(tmp_path, url, extra="enable_metrics = false\n")
    try:
        client = server.client(uuid.uuid4().hex)
        assert client.get("/v2.0/networks").status_code == 200
        expect_error(client.get("/metrics"), 404, "HTTPNotFound")
    finally:
        server.stop()
        drop()
    assert not (tmp_path / "state" / "metrics").exists()


def test_the_counts_are_the_sum_over_the_api_workers(tmp_path: Path):
    url, drop = create_database("sqlite", tmp_path)
    server = start_server(tmp_path, url, workers=2)
    try:
        for _ in range(30):  # a connection each: the kernel spreads them over the workers
            assert httpx.get(f"{server.url}/v2.0/networks").status_code == 200
        seen = set()
        for _ in range(6):  # whichever worker answers, it answers for both
            found = samples(httpx.get(f"{server.url}/metrics"))
            seen.add(count(found, REQUESTS, resource="networks", action="list", status="200"))
        assert seen == {30}
        lines = [line.split() for line in server.log.read_text().splitlines()
                 if '"GET /v2.0/networks HTTP' in line]
        assert len({line[2] for line in lines}) == 2  # the pids: both workers answered
    finally:
        server.stop()
        drop()
