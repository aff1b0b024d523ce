"""Races through the API: many requests at once against a server with two workers.

Each backend gets its own ``neutrino-server`` with ``api_workers = 2`` so that
requests really run in two processes (and several threads in each), and the
database alone has to keep addresses, MACs, quotas and revisions right.
Every failure carries the server's log.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests.harness import Server, create_database, start_server

pytestmark = pytest.mark.slow

BACKENDS = tuple(b for b in os.environ.get("NEUTRINO_TEST_BACKENDS",
                                           "sqlite,postgresql,mysql").split(",") if b)
ADMIN = {"X-Roles": "admin,member", "X-User-Id": "admin"}


@pytest.fixture(scope="module", params=BACKENDS)
def server(request, tmp_path_factory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp(f"concurrency-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", workers=2)
    srv.backend = request.param
    yield srv
    srv.stop()
    drop()


@contextmanager
def loud(server: Server) -> Iterator[None]:
    """Re-raise a failed check with the server's log, and fail on any logged traceback."""
    start = server.log.stat().st_size
    try:
        yield
        new = server.log.read_bytes()[start:].decode(errors="replace")
        assert "Traceback" not in new, "the server logged an error"
    except AssertionError as error:
        log = server.log.read_bytes().decode(errors="replace")[-20000:]
        raise AssertionError(f"{error}\n--- server log ({server.backend}) ---\n{log}") from None


def burst(server: Server, requests: list[tuple[str, str, Any]],
          headers: dict[str, str]) -> list[httpx.Response]:
    """Send all ``(method, path, json)`` requests at once; responses in the same order."""

    async def run() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=len(requests), max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60,
                                     limits=limits) as client:
            return await asyncio.gather(*(client.request(method, path, json=body)
                                          for method, path, body in requests))

    return asyncio.run(run())


def summary(responses: list[httpx.Response]) -> str:
    counts = Counter((r.status_code, r.json()["NeutronError"]["type"]
                      if r.status_code >= 400 else "") for r in responses)
    return ", ".join(f"{n} x {status} {kind}".rstrip() for (status, kind), n in counts.items())


def project_headers(project: str) -> dict[str, str]:
    return {**ADMIN, "X-Project-Id": project}


def network_with_subnet(server: Server, project: str, cidr: str) -> tuple[str, dict]:
    client = server.client(project, roles=("admin", "member"))
    net = client.network(name=f"race-{cidr}")
    subnet = client.subnet(net["id"], cidr=cidr)
    return net["id"], subnet


def pool_size(subnet: dict) -> int:
    return sum(int(ipaddress.ip_address(p["end"])) - int(ipaddress.ip_address(p["start"])) + 1
               for p in subnet["allocation_pools"])


def in_pools(address: str, subnet: dict) -> bool:
    value = int(ipaddress.ip_address(address))
    return any(int(ipaddress.ip_address(p["start"])) <= value
               <= int(ipaddress.ip_address(p["end"])) for p in subnet["allocation_pools"])


def test_concurrent_port_creates_get_distinct_ips_and_macs(server):
    project = uuid.uuid4().hex
    with loud(server):
        net_id, subnet = network_with_subnet(server, project, "10.20.0.0/26")
        body = {"port": {"network_id": net_id}}
        responses = burst(server, [("POST", "/v2.0/ports", body)] * 40, project_headers(project))
        assert all(r.status_code == 201 for r in responses), summary(responses)
        ports = [r.json()["port"] for r in responses]
        ips = [ip["ip_address"] for p in ports for ip in p["fixed_ips"]]
        assert len(ips) == 40 and len(set(ips)) == 40, sorted(ips)
        assert all(in_pools(ip, subnet) for ip in ips), sorted(ips)
        macs = {p["mac_address"] for p in ports}
        assert len(macs) == 40, sorted(macs)


def test_concurrent_port_creates_exhaust_a_small_subnet(server):
    project = uuid.uuid4().hex
    with loud(server):
        net_id, subnet = network_with_subnet(server, project, "10.30.0.0/28")
        free = pool_size(subnet)
        assert free == 13, subnet["allocation_pools"]
        body = {"port": {"network_id": net_id}}
        responses = burst(server, [("POST", "/v2.0/ports", body)] * 30, project_headers(project))
        created = [r for r in responses if r.status_code == 201]
        refused = [r for r in responses if r.status_code == 409
                   and r.json()["NeutronError"]["type"] == "IpAddressGenerationFailure"]
        assert len(created) == free and len(refused) == 30 - free, summary(responses)
        ips = sorted(p["port"]["fixed_ips"][0]["ip_address"]
                     for p in (r.json() for r in created))
        assert len(set(ips)) == free and all(in_pools(ip, subnet) for ip in ips), ips

        listed = server.client(project, roles=("admin", "member")).get(
            "/v2.0/ports", params={"network_id": net_id})
        assert listed.status_code == 200, listed.text
        listed_ips = sorted(ip["ip_address"] for p in listed.json()["ports"]
                            for ip in p["fixed_ips"])
        assert listed_ips == ips
        assert {p["id"] for p in listed.json()["ports"]} == \
            {r.json()["port"]["id"] for r in created}


def test_concurrent_network_creates_respect_the_quota(server):
    project = uuid.uuid4().hex
    admin = server.client(project, roles=("admin", "member"))
    with loud(server):
        resp = admin.put(f"/v2.0/quotas/{project}", json={"quota": {"network": 5}})
        assert resp.status_code == 200, resp.text
        member = {"X-Roles": "member", "X-User-Id": "u", "X-Project-Id": project}
        body = {"network": {"name": "q"}}
        responses = burst(server, [("POST", "/v2.0/networks", body)] * 16, member)
        created = [r for r in responses if r.status_code == 201]
        over = [r for r in responses if r.status_code == 409
                and r.json()["NeutronError"]["type"] == "OverQuota"]
        assert len(created) == 5 and len(over) == 11, summary(responses)
        listed = admin.get("/v2.0/networks", params={"project_id": project}).json()["networks"]
        assert len(listed) == 5


def test_concurrent_updates_bump_the_revision_once_each(server):
    project = uuid.uuid4().hex
    admin = server.client(project, roles=("admin", "member"))
    with loud(server):
        net = admin.network(name="rev")
        assert net["revision_number"] == 1
        updates = 20
        requests = [("PUT", f"/v2.0/networks/{net['id']}", {"network": {"name": f"n{i}"}})
                    for i in range(updates)]
        responses = burst(server, requests, project_headers(project))
        assert all(r.status_code == 200 for r in responses), summary(responses)
        revisions = sorted(r.json()["network"]["revision_number"] for r in responses)
        assert revisions == list(range(2, updates + 2)), revisions
        final = admin.show("networks", net["id"])
        assert final["revision_number"] == 1 + updates
        assert final["name"] == next(r.json()["network"]["name"] for r in responses
                                     if r.json()["network"]["revision_number"] == 1 + updates)
