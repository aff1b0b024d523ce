"""HA router benchmark: how long a floating IP goes unanswered when the
active host of its router dies, and what keepalived costs per router.

    .venv/bin/python bench/ha_bench.py [--failovers 10] [--advert-int 1] [--routers 50]

Root, keepalived, RabbitMQ on 127.0.0.1:5672 (a vhost of its own, removed at
the end); everything runs in namespaces it makes and removes, as the HA end
to end test does (``tests/functional/test_l3_ha_e2e.py``): two network hosts
with their own namespace registries (Linux bridge and L3 agents), a compute
host with the instance, the external host pinging the floating IP every
0.1 s. Each failover kills the active host (its L3 agent, keepalived, the
router namespace's links), measures from the last reply before to the first
after, then brings the host back (a standby). Then ``--routers`` HA routers
(50) are made at once and, after both hosts' agents are killed with all they
ran, served by a fresh agent set: the time until each router has exactly one
master, read on the hosts. Figures, not pass/fail.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.dataplane import run, sandbox, wait_until  # noqa: E402
from tests.functional.emulated_hosts import Deployment  # noqa: E402
from tests.functional.test_l3_ha_e2e import L3, LB, UPSTREAM, ha_topology  # noqa: E402
from tests.harness import rabbit_vhost  # noqa: E402

HOSTS = ("h1", "h2")
SERVER = ("[DEFAULT]\nservice_plugins = router\nmax_l3_agents_per_router = 2\n"
          "[quotas]\nquota_router = -1\nquota_network = -1\nquota_subnet = -1\n"
          "quota_port = -1\n")


class Pinger:
    """ping every 0.1 s from the external host; the times of the replies."""

    def __init__(self, namespace: str, address: str):
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", namespace, "ping", "-D", "-n", "-i", "0.1", "-W", "0.1",
             address], stdout=subprocess.PIPE, text=True)

    def replies(self) -> list[float]:
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=10)
        return [float(line[1:line.index("]")]) for line in out.splitlines()
                if line.startswith("[") and "bytes from" in line]


def bench(args: argparse.Namespace) -> None:
    if os.geteuid() != 0:
        raise SystemExit("ha_bench needs root (namespaces, keepalived)")
    if shutil.which("keepalived") is None:
        raise SystemExit("ha_bench needs keepalived (Debian package keepalived)")
    agent_conf = f"ha_vrrp_advert_int = {args.advert_int}\n"
    tmp = Path(tempfile.mkdtemp(prefix="neutrino-ha-bench-"))
    started = time.perf_counter()
    try:
        with rabbit_vhost() as url, sandbox() as box:
            d = Deployment(box, tmp, url, SERVER)
            try:
                agents = {}
                for index, name in enumerate(HOSTS, start=1):
                    d.add_host(name, index, own_namespaces=True)
                    d.start_l2_agent(name, firewall="noop")
                    agents[name] = d.start_l3_agent(name, default=agent_conf)
                d.add_host("c1", len(HOSTS) + 1)
                d.start_l2_agent("c1", firewall="noop")
                for name in HOSTS:
                    for kind in (LB, L3):
                        wait_until(lambda n=name, k=kind: d.agent_alive(n, k), 60, kind)
                external = d.add_external_host(f"{UPSTREAM}/24")
                router, _, _, address = ha_topology(d)
                router_id = router["id"]
                gaps = []
                for number in range(1, args.failovers + 1):
                    gap = failover(d, agents, external, address, router_id, agent_conf)
                    gaps.append(gap)
                    print(f"failover {number}: {gap:.2f} s without replies", flush=True)
                gaps.sort()
                if gaps:
                    print(f"\n{len(gaps)} failovers at ha_vrrp_advert_int {args.advert_int}: p50 "
                          f"{statistics.median(gaps):.2f} s, p99 "
                          f"{gaps[math.ceil(len(gaps) * 0.99) - 1]:.2f} s, worst {gaps[-1]:.2f} s")
                print(f"keepalived per router: {keepalived_kib(d)} KiB resident (its two "
                      "processes, on one host)")
                if args.routers:
                    many_routers(d, agents, agent_conf, args.routers)
            finally:
                d.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"total {time.perf_counter() - started:.0f} s")


def roles(d: Deployment, router_id: str) -> dict[str, str]:
    hosts = {d.hosts[name]["host"]: name for name in HOSTS}
    found = d.api.get(f"/v2.0/routers/{router_id}/l3-agents").json()["agents"]
    return {hosts[agent["host"]]: agent["ha_state"] for agent in found}


def failover(d: Deployment, agents: dict, external: str, address: str, router_id: str,
             agent_conf: str) -> float:
    """The active host killed and brought back; the longest gap between replies."""
    wait_until(lambda: list(roles(d, router_id).values()).count("active") == 1
               and run("ping", "-c1", "-W1", address, namespace=external,
                       check=False).returncode == 0, 90, "one active router, reachable")
    dead = next(name for name, role in roles(d, router_id).items() if role == "active")
    pinger = Pinger(external, address)
    time.sleep(1)
    agents[dead].kill()
    agents[dead].wait()
    namespace = f"qrouter-{router_id}"
    anchor = str(d.hosts[dead]["anchor"].pid)
    pids = subprocess.run(["nsenter", "-t", anchor, "-m", "ip", "netns", "pids", namespace],
                          capture_output=True, text=True).stdout.split()
    run("kill", "-9", *pids)
    for link in d.inside(dead, namespace, "ip", "-o", "link").stdout.splitlines():
        device = link.split(": ")[1].split("@")[0]
        if device != "lo":
            d.inside(dead, namespace, "ip", "link", "set", device, "down")
    survivor = next(name for name in HOSTS if name != dead)
    wait_until(lambda: roles(d, router_id).get(survivor) == "active", 60, "the takeover")
    time.sleep(1)
    replies = pinger.replies()
    gap = max(b - a for a, b in zip(replies, replies[1:], strict=False))
    agents[dead] = d.start_l3_agent(dead, default=agent_conf)
    wait_until(lambda: roles(d, router_id).get(dead) == "standby", 60, "the host back")
    return gap


def masters(d: Deployment, router_ids: list[str]) -> dict[str, int]:
    """router id -> how many hosts hold its HA address (keepalived's masters),
    read on the hosts themselves (the server's roles may be stale)."""
    held = dict.fromkeys(router_ids, 0)
    for name in HOSTS:
        anchor = str(d.hosts[name]["anchor"].pid)
        out = subprocess.run(["nsenter", "-t", anchor, "-m", "ip", "-all", "netns", "exec",
                              "ip", "-br", "-4", "addr", "show"],
                             capture_output=True, text=True).stdout
        router = None
        for line in out.splitlines():
            if line.startswith("netns: qrouter-"):
                router = line.split("qrouter-", 1)[1].strip()
            elif router in held and line.startswith("ha-") and " 169.254.0." in line:
                held[router] += 1
    return held


def many_routers(d: Deployment, agents: dict, agent_conf: str, count: int) -> None:
    """``count`` HA routers, each with an interface: made at once, then served
    again by a fresh agent set (both hosts' L3 agents and what they ran
    killed, their namespaces gone, the agents started again); the time until
    each router has exactly one master, and the agents' memory."""
    api = d.api
    router_ids = []
    made = time.perf_counter()
    for n in range(count):
        router = api.create("routers", name=f"ha-{n}", ha=True)
        net = api.network()
        subnet = api.subnet(net["id"], f"10.{100 + n // 200}.{n % 200}.0/24")
        api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                json={"subnet_id": subnet["id"]})
        router_ids.append(router["id"])
    api_done = time.perf_counter() - made

    def settled() -> bool:
        return all(held == 1 for held in masters(d, router_ids).values())

    wait_until(settled, 600, f"{count} routers each with one master")
    print(f"{count} HA routers made through the API in {api_done:.1f} s; each with one "
          f"master {time.perf_counter() - made:.1f} s after the first create")
    for name in HOSTS:
        agents[name].kill()
        agents[name].wait()
        d.remove_own_namespaces(name)
    fresh = time.perf_counter()
    for name in HOSTS:
        agents[name] = d.start_l3_agent(name, default=agent_conf)
    wait_until(settled, 600, f"{count} routers each with one master again")
    print(f"a fresh agent set: each of the {count} routers with one master "
          f"{time.perf_counter() - fresh:.1f} s after the agents started")
    for name in HOSTS:
        rss = next(int(line.split()[1]) for line in Path(
            f"/proc/{agents[name].pid}/status").read_text().splitlines()
            if line.startswith("VmRSS:"))
        print(f"L3 agent on {name}: {rss // 1024} MiB resident with {count + 1} HA routers")


def keepalived_kib(d: Deployment) -> int:
    """The resident memory of one host's keepalived processes (one router)."""
    found = subprocess.run(["pgrep", "-f", f"keepalived --vrrp -f {d.tmp}/h1"],
                           capture_output=True, text=True).stdout.split()
    total = 0
    for pid in found:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failovers", type=int, default=10)
    parser.add_argument("--advert-int", type=int, default=1)
    parser.add_argument("--routers", type=int, default=50,
                        help="HA routers for the fresh-agent-set phase (0: skip it)")
    return parser.parse_args()


if __name__ == "__main__":
    bench(_args())
