"""What keystone authentication costs a request, beside noauth, in one run.

    .venv/bin/python bench/auth_bench.py [--requests 2000] [--tokens 50]

Starts a real keystone (tests/keystone.py: from PyPI, SQLite) and three
neutrino servers on SQLite: ``noauth`` (every caller is admin),
``trusted_headers`` (a project member named in headers: the same policy work
as a keystone user, no token) and ``keystone``, then measures
``GET /v2.0/networks/<id>``:

* one request at a time, the same token each time (validated once, then
  served from the token cache): latency p50/p99 and requests per second;
* 8 threads at once, same token: requests per second;
* the first request of each of ``--tokens`` fresh tokens (the server asks
  keystone about it): latency p50/p99, against the cached p50.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.harness import start_server  # noqa: E402
from tests.keystone import start_keystone  # noqa: E402


def timed_gets(client: httpx.Client, path: str, count: int) -> list[float]:
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        resp = client.get(path)
        latencies.append(time.perf_counter() - start)
        assert resp.status_code == 200, resp.text
    return latencies


def concurrent_rate(url: str, headers: dict[str, str], path: str, count: int,
                    threads: int = 8) -> float:
    def stream(_: int) -> None:
        with httpx.Client(base_url=url, headers=headers) as client:
            timed_gets(client, path, count // threads)

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(stream, range(threads)))
    return (count // threads * threads) / (time.perf_counter() - start)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def report(name: str, latencies: list[float], rate: float) -> None:
    print(f"{name:28s} p50 {statistics.median(latencies) * 1000:6.2f} ms   "
          f"p99 {percentile(latencies, 0.99) * 1000:6.2f} ms   "
          f"{len(latencies) / sum(latencies):7.0f} req/s sequential   "
          f"{rate:7.0f} req/s with 8 threads")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--tokens", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        keystone = start_keystone(tmp / "keystone")
        servers = []
        try:
            for name in ("noauth", "headers", "keystone-auth"):
                (tmp / name).mkdir()
            plain = start_server(tmp / "noauth", f"sqlite:///{tmp}/noauth.db")
            servers.append(plain)
            headed = start_server(tmp / "headers", f"sqlite:///{tmp}/headers.db",
                                  auth="trusted_headers")
            servers.append(headed)
            guarded = start_server(tmp / "keystone-auth", f"sqlite:///{tmp}/keystone.db",
                                   auth="keystone", extra="\n" + keystone.authtoken_section())
            servers.append(guarded)
            token = keystone.token("alice")[0]
            results = {}
            member = {"X-Project-Id": "alpha", "X-Roles": "member"}
            for name, srv, headers in (("noauth (admin)", plain, {}),
                                       ("trusted_headers (member)", headed, member),
                                       ("keystone, cached token", guarded,
                                        {"X-Auth-Token": token})):
                with httpx.Client(base_url=srv.url, headers=headers) as client:
                    resp = client.post("/v2.0/networks", json={"network": {"name": "b"}})
                    assert resp.status_code == 201, resp.text
                    path = f"/v2.0/networks/{resp.json()['network']['id']}"
                    timed_gets(client, path, 100)  # warm up
                    latencies = timed_gets(client, path, args.requests)
                rate = concurrent_rate(srv.url, headers, path, args.requests)
                results[name] = (latencies, rate)
                report(name, latencies, rate)
            cold = []
            fresh = [keystone.token("alice")[0] for _ in range(args.tokens)]
            with httpx.Client(base_url=guarded.url) as client:
                for each in fresh:
                    start = time.perf_counter()
                    resp = client.get("/v2.0/networks", headers={"X-Auth-Token": each},
                                      params={"limit": 1})
                    cold.append(time.perf_counter() - start)
                    assert resp.status_code == 200, resp.text
            cached = statistics.median(results["keystone, cached token"][0])
            print(f"{'keystone, first use':28s} p50 {statistics.median(cold) * 1000:6.2f} ms"
                  f"   p99 {percentile(cold, 0.99) * 1000:6.2f} ms   (cached p50 "
                  f"{cached * 1000:.2f} ms; the difference is keystone's validation)")
            ratio = (results["keystone, cached token"][1]
                     / results["trusted_headers (member)"][1])
            print(f"rate with 8 threads, keystone / trusted_headers (the token's cost): "
                  f"{ratio:.2f}")
        finally:
            for srv in servers:
                srv.stop()
            keystone.stop()


if __name__ == "__main__":
    main()
