"""FWaaS benchmark: firewall groups on routers of one L3 agent, on a host
emulated in a namespace.

    .venv/bin/python bench/fwaas_bench.py [--routers 100] [--changes 100]

Root, RabbitMQ on 127.0.0.1:5672 (a vhost of its own, removed at the end).
Everything runs in namespaces it makes and removes (``tests/functional/
emulated_hosts``): one server (SQLite), one host with its Linux bridge agent
and its L3 agent running the ``fwaas_v2`` extension, ``--routers`` routers
with an interface each, and on each interface a firewall group whose
ingress policy holds one rule of its own. It prints:

* set-up: the time until every group is ACTIVE once made;
* rule change: for ``--changes`` changes (of the rule of router 0, 1, 2, ...),
  the time from the API call changing its destination port until the
  router's namespace holds the new rule (``iptables-save`` polled);
* resync: the agent killed (-9) and started again, its first full sync
  (its own log line) with every group in place, and how many chains it
  wrote (an unchanged host: none).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.dataplane import run, sandbox, wait_until  # noqa: E402
from tests.functional.emulated_hosts import Deployment  # noqa: E402
from tests.harness import rabbit_vhost  # noqa: E402

LB, L3 = "Linux bridge agent", "L3 agent"
AGENT_LOG = "h1-neutrino-l3-agent"
EXTENSIONS = "extensions = fwaas_v2\n"
FW = "/v2.0/fwaas"
UNLIMITED = ("[quotas]\nquota_router = -1\nquota_network = -1\nquota_subnet = -1\n"
             "quota_port = -1\nquota_firewall_group = -1\nquota_firewall_policy = -1\n"
             "quota_firewall_rule = -1\n")


def percentile(times: list[float], fraction: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def created(d: Deployment, kind: str, **attrs) -> dict:
    name = "firewall_policy" if kind == "firewall_policies" else kind[:-1]
    resp = d.api.post(f"{FW}/{kind}", json={name: attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()[name]


def firewalled_routers(d: Deployment, count: int) -> list[tuple[str, str, str]]:
    """(router id, its rule's id, its group's id) for ``count`` new routers."""
    made = []
    for index in range(count):
        net = d.api.network()
        subnet = d.api.subnet(net["id"], f"10.{index // 256}.{index % 256}.0/24")
        router = d.api.create("routers", name=f"r{index}")
        resp = d.api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                         json={"subnet_id": subnet["id"]})
        assert resp.status_code == 200, resp.text
        rule = created(d, "firewall_rules", protocol="tcp", destination_port="1000",
                       action="allow")
        policy = created(d, "firewall_policies", firewall_rules=[rule["id"]])
        group = created(d, "firewall_groups", ports=[resp.json()["port_id"]],
                        ingress_firewall_policy_id=policy["id"])
        made.append((router["id"], rule["id"], group["id"]))
    return made


def statuses(d: Deployment) -> list[str]:
    groups = d.api.get(f"{FW}/firewall_groups").json()["firewall_groups"]
    return [g["status"] for g in groups if g["name"] != "default"]


def holds(router_id: str, port: int) -> bool:
    saved = run("iptables-save", "-t", "filter", namespace=f"qrouter-{router_id}").stdout
    return f"--dport {port} -j ACCEPT" in saved


def rule_changes(d: Deployment, routers: list[tuple[str, str, str]], changes: int) -> None:
    times = []
    for n in range(changes):
        router_id, rule_id, group_id = routers[n % len(routers)]
        wait_until(lambda g=group_id: d.api.get(f"{FW}/firewall_groups/{g}").json()[
            "firewall_group"]["status"] == "ACTIVE", 30, "the group to be ACTIVE")
        port = 2000 + n
        began = time.perf_counter()
        resp = d.api.put(f"{FW}/firewall_rules/{rule_id}",
                         json={"firewall_rule": {"destination_port": str(port)}})
        assert resp.status_code == 200, resp.text
        while not holds(router_id, port):
            if time.perf_counter() - began > 30:
                raise TimeoutError(f"router {router_id} never held port {port}")
        times.append(time.perf_counter() - began)
    slowest = ", ".join(f"#{n} {t:.2f} s" for t, n in sorted(
        (t, n) for n, t in enumerate(times))[-3:])
    print(f"rule change    p50 {statistics.median(times):.3f} s   "
          f"p99 {percentile(times, 0.99):.3f} s   max {max(times):.3f} s   "
          f"({len(times)} changes; slowest: {slowest})", flush=True)


def resync(d: Deployment, agent):
    agent.kill()
    agent.wait()
    began = time.perf_counter()
    agent = d.start_l3_agent("h1", text=EXTENSIONS)
    wait_until(lambda: "full sync done in" in d.log(AGENT_LOG), 600, "the full sync")
    log = d.log(AGENT_LOG)
    took = float(re.findall(r"full sync done in ([0-9.]+) s", log)[0])
    written = len(re.findall(r"firewall chains written", log))
    print(f"resync         full sync done in {took:.3f} s "
          f"({time.perf_counter() - began:.3f} s after the start), routers whose chains "
          f"were written: {written}", flush=True)
    return agent


def bench(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="neutrino-firewall-bench-"))
    try:
        with rabbit_vhost() as url, sandbox() as box:
            d = Deployment(box, tmp, url, server_extra=(
                f"[DEFAULT]\nservice_plugins = router,firewall_v2\n{UNLIMITED}"))
            try:
                d.add_host("h1", 1)
                d.start_l2_agent("h1", firewall="noop")
                agent = d.start_l3_agent("h1", text=EXTENSIONS)
                for agent_type in (LB, L3):
                    wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, agent_type)
                began = time.perf_counter()
                routers = firewalled_routers(d, args.routers)
                wait_until(lambda: set(statuses(d)) == {"ACTIVE"}, 600, "every group ACTIVE")
                print(f"set-up         {len(routers)} routers with a group each, all ACTIVE "
                      f"{time.perf_counter() - began:.1f} s after the first was made",
                      flush=True)
                rule_changes(d, routers, args.changes)
                agent = resync(d, agent)
            finally:
                d.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routers", type=int, default=100)
    parser.add_argument("--changes", type=int, default=100)
    return parser.parse_args()


if __name__ == "__main__":
    bench(_args())
