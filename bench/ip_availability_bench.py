"""network-ip-availability benchmark: GET /v2.0/network-ip-availabilities over
100 networks and 10,000 ports, and one network's, p50/p99.

    .venv/bin/python bench/ip_availability_bench.py [--backends sqlite,postgresql]

It starts ``neutrino-server`` (noauth, the plugin loaded) on each backend,
makes 100 networks with an IPv4 subnet each and 100 ports on each (bulk
creates), then times the whole list and one network's show.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.harness import create_database, start_server  # noqa: E402

NETWORKS, PORTS_EACH = 100, 100
EXTRA = ("service_plugins = router,network_ip_availability\n"
         "[quotas]\nquota_port = -1\nquota_network = -1\nquota_subnet = -1\n")


def timed(http: httpx.Client, path: str, count: int) -> tuple[float, float, int]:
    """p50 and p99 in ms of ``count`` GETs, and the answer's size."""
    took = []
    size = 0
    for _ in range(count):
        started = time.perf_counter()
        resp = http.get(path)
        took.append((time.perf_counter() - started) * 1000)
        assert resp.status_code == 200, resp.text
        size = len(resp.content)
    took.sort()
    return statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.99))], size


def bench(backend: str, tmp: Path, count: int) -> None:
    url, drop = create_database(backend, tmp)
    server = start_server(tmp, url, auth="noauth", extra=EXTRA)
    try:
        with httpx.Client(base_url=server.url, headers={"X-Project-Id": "bench"},
                          timeout=120) as http:
            started = time.perf_counter()
            networks = []
            for n in range(NETWORKS):
                net = http.post("/v2.0/networks", json={"network": {"name": f"n{n}"}}).json()
                http.post("/v2.0/subnets", json={"subnet": {
                    "network_id": net["network"]["id"], "ip_version": 4,
                    "cidr": f"10.{n // 250}.{n % 250}.0/24"}})
                resp = http.post("/v2.0/ports", json={"ports": [
                    {"network_id": net["network"]["id"]} for _ in range(PORTS_EACH)]})
                assert resp.status_code == 201, resp.text
                networks.append(net["network"]["id"])
            print(f"{backend}: {NETWORKS} networks, {NETWORKS * PORTS_EACH} ports made in "
                  f"{time.perf_counter() - started:.1f} s", flush=True)
            timed(http, "/v2.0/network-ip-availabilities", 3)  # warm up
            p50, p99, size = timed(http, "/v2.0/network-ip-availabilities", count)
            print(f"  GET /v2.0/network-ip-availabilities        p50 {p50:7.1f} ms  "
                  f"p99 {p99:7.1f} ms  ({size / 1000:.0f} kB)")
            p50, p99, size = timed(http, f"/v2.0/network-ip-availabilities/{networks[50]}",
                                   count)
            print(f"  GET /v2.0/network-ip-availabilities/<one>  p50 {p50:7.1f} ms  "
                  f"p99 {p99:7.1f} ms  ({size / 1000:.1f} kB)")
    finally:
        server.stop()
        drop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--count", type=int, default=50, help="timed GETs of each")
    args = parser.parse_args()
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory(prefix="neutrino-ipa-bench-") as tmp:
            bench(backend, Path(tmp), args.count)


if __name__ == "__main__":
    main()
