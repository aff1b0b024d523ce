"""Load-balancing benchmark: the haproxy provider on a host emulated in a namespace.

    .venv/bin/python bench/lbaas_bench.py [--runs 5] [--changes 10] [--seconds 5]

Root, Debian's haproxy, RabbitMQ on 127.0.0.1:5672 (a vhost of its own,
removed at the end). Everything runs in namespaces it makes and removes, as
``tests/functional/test_lbaas_e2e.py`` builds them: one server (SQLite) with
the octavia plugin, one host with its Linux bridge and load-balancer agents,
four instances on one network, each serving HTTP (keep-alive) with its name
from this script's own small asyncio server, and a client instance. It prints:

* create: for ``--runs`` load balancers, the time from the create call until
  it is ACTIVE, and until the client's first answer through it once a
  listener, a pool and three members (one batch update) were created, each
  call made as soon as the load balancer was ACTIVE again (as clients and
  Terraform do);
* change: ``--changes`` times a member added (until ACTIVE, and until the
  client's requests reach it) and removed (until ACTIVE, and until none do);
  a listener on another port added (until ACTIVE, and until it answers) and
  removed (until ACTIVE, and until it no longer answers); the pool's
  ``lb_algorithm`` set to SOURCE_IP (until ACTIVE, and until four requests
  all reach one member) and back to ROUND_ROBIN (until they reach several);
* throughput: requests per second for ``--seconds`` from the client over 16
  keep-alive connections, to one member directly and through the load
  balancer (HAProxy, HTTP mode, round robin over three members).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.dataplane import run, sandbox, wait_until  # noqa: E402
from tests.functional.emulated_hosts import Deployment  # noqa: E402
from tests.functional.test_lbaas_e2e import (  # noqa: E402
    LBAAS,
    LBS,
    SERVER_EXTRA,
    http_get,
    made,
    settle,
)
from tests.harness import ApiClient, free_port, rabbit_vhost  # noqa: E402

L2 = "Linux bridge agent"
CIDR = "10.62.0.0/24"
PORT = 80
OTHER_PORT = 8080
CONNECTIONS = 16


# --- in a namespace: the instances' server, the client's load -----------------------------

async def _serve(name: str) -> None:
    body = name.encode()
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                writer.write(answer)
                await writer.drain()
                if b"HTTP/1.0" in head.split(b"\r\n", 1)[0]:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(one, "0.0.0.0", PORT, backlog=1024)
    async with server:
        await server.serve_forever()


async def _load(host: str, seconds: float, connections: int) -> None:
    """Keep-alive GETs for ``seconds``; prints requests per second and p50 (ms)."""
    request = f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def stream() -> None:
        reader, writer = await asyncio.open_connection(host, PORT)
        try:
            while time.perf_counter() < deadline:
                began = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                latencies.append(time.perf_counter() - began)
        finally:
            writer.close()

    began = time.perf_counter()
    await asyncio.gather(*(stream() for _ in range(connections)))
    took = time.perf_counter() - began
    print(f"{len(latencies) / took:.0f} {statistics.median(latencies) * 1000:.2f}")


# --- the benchmark ----------------------------------------------------------------------------

def serve(d: Deployment, namespace: str, name: str) -> subprocess.Popen:
    return d._spawn([sys.executable, __file__, "--serve", name], f"serve-{name}",
                    namespace=namespace)


def load(namespace: str, host: str, seconds: float) -> tuple[float, float]:
    done = run("ip", "netns", "exec", namespace, sys.executable, __file__, "--load", host,
               "--seconds", str(seconds), "--connections", str(CONNECTIONS))
    rate, p50 = done.stdout.split()
    return float(rate), float(p50)


def instance(d: Deployment, net: dict, subnet: dict, name: str) -> tuple[dict, str]:
    port = d.api.port(net["id"])
    d.plug("h1", port["id"])
    ns = f"inst-{port['id'][:11]}"
    run("ip", "addr", "add", f"{port['fixed_ips'][0]['ip_address']}/24", "dev", "eth0",
        namespace=ns)
    serve(d, ns, name)
    return port, ns


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(label: str, values: list[float]) -> None:
    print(f"  {label:<48} p50 {statistics.median(values):6.2f} s  "
          f"p99 {percentile(values, 0.99):6.2f} s  (n={len(values)})", flush=True)


def member(port: dict, subnet: dict) -> dict[str, Any]:
    return {"address": port["fixed_ips"][0]["ip_address"], "protocol_port": PORT,
            "subnet_id": subnet["id"]}


def full_lb(lb_api: ApiClient, subnet: dict, members: list[dict]) -> tuple[dict, float]:
    """A load balancer with an HTTP listener, a pool and ``members``; the seconds
    it took to be ACTIVE after its create call."""
    began = time.perf_counter()
    lb = lb_api.post(f"{LBS}/loadbalancers", json={"loadbalancer": {
        "vip_subnet_id": subnet["id"]}}).json()["loadbalancer"]
    settle(lb_api, lb["id"])
    active = time.perf_counter() - began
    listener = made(lb_api, "listeners", {"listener": {
        "loadbalancer_id": lb["id"], "protocol": "HTTP", "protocol_port": PORT}}, lb["id"])
    pool = made(lb_api, "pools", {"pool": {
        "listener_id": listener["id"], "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}},
        lb["id"])
    resp = lb_api.put(f"{LBS}/pools/{pool['id']}/members", json={"members": members})
    assert resp.status_code == 202, resp.text
    settle(lb_api, lb["id"])
    return {**lb, "pool_id": pool["id"]}, active


def answers(client: str, url: str, names: tuple[str, ...]) -> None:
    wait_until(lambda: http_get(client, url) in names, 30, f"{url} to answer")


def delete(lb_api: ApiClient, lb_id: str) -> None:
    assert lb_api.delete(f"{LBS}/loadbalancers/{lb_id}?cascade=true").status_code == 204
    wait_until(lambda: lb_api.get(f"{LBS}/loadbalancers/{lb_id}").status_code == 404, 30,
               "the load balancer to go")


def bench(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="neutrino-lbaas-bench-"))
    try:
        with rabbit_vhost() as url, sandbox() as box:
            d = Deployment(box, tmp, url, server_extra=SERVER_EXTRA, octavia_port=free_port())
            try:
                d.add_host("h1", 1)
                d.start_l2_agent("h1", firewall="noop")
                d.start_lbaas_agent("h1")
                for agent_type in (L2, LBAAS):
                    wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, agent_type)
                measure(d, args)
            finally:
                d.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(d: Deployment, args: argparse.Namespace) -> None:
    lb_api = d.server.octavia(None)
    net = d.api.network()
    subnet = d.api.subnet(net["id"], CIDR)
    names = ("alpha", "beta", "gamma", "delta")
    backends = {name: instance(d, net, subnet, name) for name in names}
    client = instance(d, net, subnet, "client")[1]
    three = [member(backends[name][0], subnet) for name in names[:3]]
    direct = backends["alpha"][0]["fixed_ips"][0]["ip_address"]
    wait_until(lambda: http_get(client, f"http://{direct}/") == "alpha", 30,
               "the instances to answer")

    actives, firsts = [], []
    for _ in range(args.runs):
        began = time.perf_counter()
        lb, active = full_lb(lb_api, subnet, three)
        answers(client, f"http://{lb['vip_address']}/", names)
        firsts.append(time.perf_counter() - began)
        actives.append(active)
        delete(lb_api, lb["id"])
    print("create:", flush=True)
    summary("load balancer create -> ACTIVE", actives)
    summary("create -> first answer (listener, pool, members)", firsts)

    lb, _ = full_lb(lb_api, subnet, three)
    vip = f"http://{lb['vip_address']}/"
    members_url = f"{LBS}/pools/{lb['pool_id']}/members"
    added_active, added_effect, removed_active, removed_effect = [], [], [], []
    for _ in range(args.changes):
        began = time.perf_counter()
        new = lb_api.post(members_url, json={"member": member(backends["delta"][0], subnet)})
        assert new.status_code == 201, new.text
        settle(lb_api, lb["id"])
        added_active.append(time.perf_counter() - began)
        wait_until(lambda: http_get(client, vip) == "delta", 30, "delta to answer")
        added_effect.append(time.perf_counter() - began)
        began = time.perf_counter()
        gone = lb_api.delete(f"{members_url}/{new.json()['member']['id']}")
        assert gone.status_code == 204, gone.text
        settle(lb_api, lb["id"])
        removed_active.append(time.perf_counter() - began)
        wait_until(lambda: "delta" not in {http_get(client, vip) for _ in range(4)}, 30,
                   "delta to be left out")
        removed_effect.append(time.perf_counter() - began)
    print("change:", flush=True)
    summary("member added -> ACTIVE", added_active)
    summary("member added -> it answers", added_effect)
    summary("member removed -> ACTIVE", removed_active)
    summary("member removed -> 4 answers without it", removed_effect)

    other = f"http://{lb['vip_address']}:{OTHER_PORT}/"
    listener_active, listener_effect, gone_active, gone_effect = [], [], [], []
    for _ in range(args.changes):
        began = time.perf_counter()
        new = lb_api.post(f"{LBS}/listeners", json={"listener": {
            "loadbalancer_id": lb["id"], "protocol": "HTTP", "protocol_port": OTHER_PORT,
            "default_pool_id": lb["pool_id"]}})
        assert new.status_code == 201, new.text
        settle(lb_api, lb["id"])
        listener_active.append(time.perf_counter() - began)
        answers(client, other, names)
        listener_effect.append(time.perf_counter() - began)
        began = time.perf_counter()
        gone = lb_api.delete(f"{LBS}/listeners/{new.json()['listener']['id']}")
        assert gone.status_code == 204, gone.text
        settle(lb_api, lb["id"])
        gone_active.append(time.perf_counter() - began)
        wait_until(lambda: http_get(client, other) == "", 30, "the listener to stop answering")
        gone_effect.append(time.perf_counter() - began)
    summary(f"listener added (port {OTHER_PORT}) -> ACTIVE", listener_active)
    summary(f"listener added (port {OTHER_PORT}) -> it answers", listener_effect)
    summary("listener removed -> ACTIVE", gone_active)
    summary("listener removed -> no answer", gone_effect)

    pool_url = f"{LBS}/pools/{lb['pool_id']}"
    timings: dict[str, tuple[list[float], list[float]]] = {
        algorithm: ([], []) for algorithm in ("SOURCE_IP", "ROUND_ROBIN")}
    for _ in range(args.changes):
        for algorithm, (active_times, effect_times) in timings.items():
            began = time.perf_counter()
            changed = lb_api.put(pool_url, json={"pool": {"lb_algorithm": algorithm}})
            assert changed.status_code == 200, changed.text
            settle(lb_api, lb["id"])
            active_times.append(time.perf_counter() - began)
            # SOURCE_IP: one client, one member; ROUND_ROBIN: 4 requests over 3
            wait_until(lambda a=algorithm: (len({http_get(client, vip) for _ in range(4)}) == 1)
                       == (a == "SOURCE_IP"), 30, f"{algorithm} to apply")
            effect_times.append(time.perf_counter() - began)
    for algorithm, (active_times, effect_times) in timings.items():
        summary(f"pool lb_algorithm -> {algorithm}: ACTIVE", active_times)
        summary(f"pool lb_algorithm -> {algorithm}: applied", effect_times)

    print(f"throughput ({CONNECTIONS} keep-alive connections, {args.seconds:g} s):",
          flush=True)
    for label, host in (("one member, directly", direct),
                        ("through HAProxy (3 members)", lb["vip_address"])):
        rate, p50 = load(client, host, args.seconds)
        print(f"  {label:<48} {rate:8.0f} req/s  p50 {p50:6.2f} ms", flush=True)


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--serve", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--load", metavar="HOST", help=argparse.SUPPRESS)
    parser.add_argument("--connections", type=int, default=CONNECTIONS, help=argparse.SUPPRESS)
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _args()
    if arguments.serve:
        asyncio.run(_serve(arguments.serve))
    elif arguments.load:
        asyncio.run(_load(arguments.load, arguments.seconds, arguments.connections))
    else:
        bench(arguments)
