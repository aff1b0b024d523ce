"""Routed networks benchmark: port creates per second on a routed network
(two segments, a subnet on each, ports given their host so that their
address comes from that host's segment) beside a plain network (one subnet,
ports given the same host), in one run.

    .venv/bin/python bench/routed_network_bench.py [--ports 500] [--backends sqlite]

It starts ``neutrino-server`` (noauth, ``service_plugins = router,segments``,
the logger mechanism driver so that no agent is needed to bind), maps a host
to one segment by an L2 agent's report (as the server does with each agent's
first report), then creates the ports one at a time, alternating networks.
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

from neutrino.plugins.hooks import Hooks  # noqa: E402
from neutrino.plugins.ml2.host_segments import AgentReports  # noqa: E402
from tests.api.agent_reports import Reporter  # noqa: E402
from tests.harness import create_database, start_server  # noqa: E402

EXTRA = ("service_plugins = router,segments\n"
         "[quotas]\nquota_port = -1\n"
         "[ml2]\ntype_drivers = flat,vxlan\ntenant_network_types = vxlan\n"
         "mechanism_drivers = logger\n"
         "[ml2_type_flat]\nflat_networks = rack1,rack2\n"
         "[ml2_type_vxlan]\nvni_ranges = 1000:1999\n")
HOST = "compute-1"


def post(http: httpx.Client, path: str, body: dict) -> dict:
    resp = http.post(path, json=body)
    assert resp.status_code == 201, resp.text
    return resp.json()


def bench(backend: str, tmp: Path, count: int) -> None:
    url, drop = create_database(backend, tmp)
    server = start_server(tmp, url, auth="noauth", extra=EXTRA)
    hooks = Hooks()
    hooks.on_agent_report.append(AgentReports())
    reporter = Reporter(url, hooks=hooks)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            routed = post(http, "/v2.0/networks", {"network": {
                "provider:network_type": "flat", "provider:physical_network": "rack1"}})
            routed_id = routed["network"]["id"]
            second = post(http, "/v2.0/segments", {"segment": {
                "network_id": routed_id, "network_type": "flat",
                "physical_network": "rack2"}})["segment"]
            segments = http.get("/v2.0/segments", params={"network_id": routed_id}).json()
            first = next(s for s in segments["segments"] if s["id"] != second["id"])
            for segment, cidr in ((first, "10.1.0.0/16"), (second, "10.2.0.0/16")):
                post(http, "/v2.0/subnets", {"subnet": {
                    "network_id": routed_id, "ip_version": 4, "cidr": cidr,
                    "segment_id": segment["id"]}})
            plain_id = post(http, "/v2.0/networks", {"network": {}})["network"]["id"]
            post(http, "/v2.0/subnets", {"subnet": {"network_id": plain_id, "ip_version": 4,
                                                    "cidr": "10.3.0.0/16"}})
            reporter.report(HOST, configurations={"bridge_mappings": {"rack2": "br-2"}},
                            start_flag=True)
            took: dict[str, list[float]] = {"plain": [], "routed": []}
            for n in range(count * 2):
                kind, network_id = (("plain", plain_id), ("routed", routed_id))[n % 2]
                started = time.perf_counter()
                made = post(http, "/v2.0/ports", {"port": {
                    "network_id": network_id, "binding:host_id": HOST}})
                took[kind].append(time.perf_counter() - started)
                if kind == "routed":
                    assert made["port"]["fixed_ips"][0]["ip_address"].startswith("10.2."), made
        for kind in ("plain", "routed"):
            times = took[kind]
            print(f"{backend:10s} {kind:6s}: {len(times) / sum(times):7.1f} ports/s  "
                  f"p50 {statistics.median(times) * 1000:6.2f} ms  (c=1, {len(times)} ports)")
    finally:
        reporter.close()
        server.stop()
        drop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", type=int, default=500, help="ports on each network")
    parser.add_argument("--backends", default="sqlite")
    args = parser.parse_args()
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            bench(backend, Path(tmp), args.ports)


if __name__ == "__main__":
    main()
