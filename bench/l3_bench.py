"""L3 benchmark: the L3 agent on a host emulated in a namespace.

    .venv/bin/python bench/l3_bench.py [--samples 5] [--routers 100]

Root, RabbitMQ on 127.0.0.1:5672 (a vhost of its own, removed at the end).
Everything runs in namespaces it makes and removes (``tests/functional/
emulated_hosts``): one server (SQLite), one host with its Linux bridge and L3
agents, an external host on a flat external network. It prints:

* interface: for each of ``--samples`` networks, the time from the API's
  ``add_router_interface`` until an instance already plugged on the network
  pings the external host through the router (SNAT) (its ARP cache flushed
  before each try: the kernel's ARP retransmission timer, 1 s, is not ours);
* floating IP: for each of ``--samples`` instances, the time from the API call
  associating a floating IP until the external host pings it;
* resync: with ``--routers`` routers (a gateway and an interface each), the
  agent killed (-9) and started again, the time of its first full sync (its
  own log line, "full sync done in X s") with every router already in place;
  then again with the routers' namespaces gone (a host starting afresh).
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

from tests.dataplane import kill_namespace, pings, run, sandbox, wait_until  # noqa: E402
from tests.functional.emulated_hosts import PHYSNET, Deployment  # noqa: E402
from tests.harness import rabbit_vhost  # noqa: E402

LB, L3 = "Linux bridge agent", "L3 agent"
UPSTREAM = "203.0.113.1"
AGENT_LOG = "h1-neutrino-l3-agent"


def summary(name: str, times: list[float]) -> None:
    print(f"{name:<14} p50 {statistics.median(times):.3f} s   max {max(times):.3f} s   "
          f"mean {statistics.mean(times):.3f} s   ({len(times)} samples)", flush=True)


def until(check, seconds: float = 60) -> float:
    """Seconds until ``check()`` is true, polled as fast as it runs."""
    began = time.perf_counter()
    while not check():
        if time.perf_counter() - began > seconds:
            raise TimeoutError("gave up waiting")
    return time.perf_counter() - began


def instance(d: Deployment, network_id: str, subnet: dict) -> tuple[dict, str]:
    port = d.api.port(network_id)
    d.plug("h1", port["id"])
    ns = f"inst-{port['id'][:11]}"
    prefix = subnet["cidr"].split("/")[1]
    run("ip", "addr", "add", f"{port['fixed_ips'][0]['ip_address']}/{prefix}", "dev", "eth0",
        namespace=ns)
    run("ip", "route", "add", "default", "via", subnet["gateway_ip"], namespace=ns)
    return port, ns


def fresh_ping(namespace: str, address: str) -> bool:
    """A ping that asks ARP anew: an unanswered ARP request would make the
    next ones wait for the kernel's retransmission (1 s), not for the router."""
    run("ip", "neigh", "flush", "dev", "eth0", namespace=namespace, check=False)
    return pings(namespace, address, wait=0.2)


def interface_times(d: Deployment, router: dict, samples: int) -> list[dict]:
    times, ports = [], []
    for index in range(samples):
        net = d.api.network()
        subnet = d.api.subnet(net["id"], f"10.{100 + index}.0.0/24")
        port, ns = instance(d, net["id"], subnet)
        wait_until(lambda p=port: d.api.show("ports", p["id"])["status"] == "ACTIVE", 20,
                   "the instance's port")
        began = time.perf_counter()
        resp = d.api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                         json={"subnet_id": subnet["id"]})
        assert resp.status_code == 200, resp.text
        until(lambda n=ns: fresh_ping(n, UPSTREAM))
        times.append(time.perf_counter() - began)
        ports.append(port)
    summary("interface", times)
    return ports


def floating_ip_times(d: Deployment, external: str, ext_net: dict, ports: list[dict]
                      ) -> None:
    times = []
    for port in ports:
        fip = d.api.create("floatingips", floating_network_id=ext_net["id"])
        began = time.perf_counter()
        resp = d.api.put(f"/v2.0/floatingips/{fip['id']}",
                         json={"floatingip": {"port_id": port["id"]}})
        assert resp.status_code == 200, resp.text
        until(lambda a=fip["floating_ip_address"]: pings(external, a, wait=0.2))
        times.append(time.perf_counter() - began)
    summary("floating IP", times)


def many_routers(d: Deployment, ext_net: dict, count: int) -> list[str]:
    ids = []
    for index in range(count):
        net = d.api.network()
        subnet = d.api.subnet(net["id"], f"10.{index // 256}.{index % 256}.0/24")
        router = d.api.create("routers", name=f"r{index}", external_gateway_info={
            "network_id": ext_net["id"]})
        resp = d.api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                         json={"subnet_id": subnet["id"]})
        assert resp.status_code == 200, resp.text
        ids.append(router["id"])
    return ids


def first_full_sync(d: Deployment) -> float | None:
    """The first full sync in the agent's log (a started agent writes it anew)."""
    found = re.findall(r"full sync done in ([0-9.]+) s", d.log(AGENT_LOG))
    return float(found[0]) if found else None


def resync(d: Deployment, agent, label: str, before_start=None):
    agent.kill()
    agent.wait()
    if before_start is not None:
        before_start()
    began = time.perf_counter()
    agent = d.start_l3_agent("h1")
    took = wait_until(lambda: first_full_sync(d), 600, "the full sync")
    print(f"resync {label}: full sync done in {took:.3f} s "
          f"({time.perf_counter() - began:.3f} s after the start)", flush=True)
    return agent


def bench(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="neutrino-l3-bench-"))
    try:
        with rabbit_vhost() as url, sandbox() as box:
            d = Deployment(box, tmp, url, server_extra=(
                "[quotas]\nquota_router = -1\nquota_network = -1\nquota_subnet = -1\n"
                "quota_port = -1\nquota_floatingip = -1\n"))
            try:
                d.add_host("h1", 1)
                d.start_l2_agent("h1", firewall="noop")
                agent = d.start_l3_agent("h1")
                external = d.add_external_host(f"{UPSTREAM}/16")
                ext_net = d.api.network(**{"router:external": True,
                                           "provider:network_type": "flat",
                                           "provider:physical_network": PHYSNET})
                d.api.subnet(ext_net["id"], "203.0.0.0/16", gateway_ip=UPSTREAM,
                             enable_dhcp=False)
                for agent_type in (LB, L3):
                    wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, agent_type)
                router = d.api.create("routers", name="bench", external_gateway_info={
                    "network_id": ext_net["id"]})
                ports = interface_times(d, router, args.samples)
                floating_ip_times(d, external, ext_net, ports)
                ids = many_routers(d, ext_net, args.routers)
                wait_until(lambda: all(f"qrouter-{r}" in run("ip", "netns", "list").stdout
                                       for r in ids), 300, "every router's namespace")
                agent = resync(d, agent, f"{len(ids) + 1} routers in place")

                def wipe() -> None:
                    for router_id in [router["id"], *ids]:
                        kill_namespace(f"qrouter-{router_id}")
                    shutil.rmtree(tmp / "h1" / "l3", ignore_errors=True)
                agent = resync(d, agent, f"{len(ids) + 1} routers made afresh", wipe)
            finally:
                d.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--routers", type=int, default=100)
    return parser.parse_args()


if __name__ == "__main__":
    bench(_args())
