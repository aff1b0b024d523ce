"""State-report benchmark: what many agents' heartbeats cost the server.

    .venv/bin/python bench/report_state_bench.py [--agents 200] [--interval 2]
        [--duration 40] [--clients 2] [--workers 1] [--database sqlite|postgresql|mysql]
        [--transport rabbit://guest:guest@127.0.0.1:5672/] [--no-own-vhost]

It starts a real ``neutrino-server`` (noauth, ``api_workers = --workers``) on a
fresh database (``tests/harness.create_database``: a SQLite file, or a new
database on the test suite's PostgreSQL or MariaDB) and on the RabbitMQ of
the local RabbitMQ, on a vhost of its own (``rabbitmqctl add_vhost``, deleted
at the end) so that no other server on the same broker (a test run, say)
takes a share of the reports; or on ``--transport`` as given with
``--no-own-vhost``. The memory transport cannot be used: the agents are other
processes.

Then ``--agents`` simulated agents, each a distinct host with its own bus
(its own connection and reply queue, as real agents have), spread over
``--clients`` load processes, call ``report_state`` every ``--interval``
seconds, as ``neutrino.agents.base.Agent.report`` does (same arguments, the
first report with ``start_flag``, a call timeout of one interval), their
phases spread evenly over the interval as agents started at different times
would be. The agent types cycle through L2, DHCP, L3 and metadata agents.

After a warm-up (every agent registered, two intervals), over ``--duration``
seconds it measures:

* reports/s the server answered, and the failures (timeouts, errors);
* the server process's CPU (utime + stime from /proc/<pid>/stat, summed over
  its uvicorn workers when ``--workers`` > 1) as a percentage of one CPU, and
  per report; and its CPU at rest (no agents) for a few seconds before;
* report-call latency p50/p99/max as the agents see it (the broker's round
  trip included);
* the load processes' CPU, and what the rest of the machine (the broker, the
  database server, anything else) kept busy meanwhile: on a busy machine the
  figures are not figures.

Neutron's default ``report_interval`` is 30 s: the same agents then send
``interval / 30`` times the load measured here. The CPU figure for 30 s is
that scaled linearly (the per-report cost times the lower rate, plus the
server's CPU at rest), which assumes the cost per report does not depend on
the rate: batching effects aside, it does not.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
NEUTRON_INTERVAL = 30

AGENT_KINDS = (
    ("Linux bridge agent", "neutrino-linuxbridge-agent", "N/A",
     {"interface_mappings": {"physnet1": "eth1"}, "bridge_mappings": {},
      "tunnel_types": ["vxlan"], "l2_population": False, "devices": 0}),
    ("DHCP agent", "neutrino-dhcp-agent", "dhcp_agent",
     {"dhcp_driver": "dnsmasq", "networks": 0, "subnets": 0, "ports": 0,
      "enable_isolated_metadata": False}),
    ("L3 agent", "neutrino-l3-agent", "l3_agent",
     {"agent_mode": "legacy", "routers": 0, "ex_gw_ports": 0, "interfaces": 0,
      "floating_ips": 0, "handle_internal_only_routers": True}),
    ("Metadata agent", "neutrino-metadata-agent", "N/A", {}),
)


# --- measuring -------------------------------------------------------------------------

def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def busy_seconds() -> float:
    """CPU seconds all CPUs of the machine have been busy since boot (/proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def server_pids(proc: subprocess.Popen, workers: int) -> list[int]:
    """The process that serves: the server itself, or its uvicorn workers."""
    if workers == 1:
        return [proc.pid]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = [int(c) for task in Path(f"/proc/{proc.pid}/task").iterdir()
                    for c in (task / "children").read_text().split()]
        found = [c for c in children
                 if b"resource_tracker" not in Path(f"/proc/{c}/cmdline").read_bytes()]
        if len(found) >= workers:
            return [proc.pid, *found]
        time.sleep(0.1)
    raise RuntimeError(f"expected {workers} workers under {proc.pid}")


# --- the simulated agents (in the load processes) ---------------------------------------

async def _agents(url: str, hosts: list[tuple[int, str]], agents: int, interval: float,
                  start: float, end: float, ready) -> tuple[list[tuple[float, float]], int]:
    """Report for every host until ``end`` (wall clock): (sent at, latency) of the
    answered calls, and the count of failed ones."""
    from neutrino.rpc.bus import Bus
    from neutrino.rpc.client import RpcClient
    from neutrino.rpc.errors import RpcError
    from neutrino.rpc.topics import REPORTS
    from neutrino.rpc.transport import get_transport

    buses = []
    for _ in hosts:
        bus = Bus(get_transport(url), timeout=interval)
        await bus.start()
        buses.append(bus)
    ready.set()
    answered: list[tuple[float, float]] = []
    failed = [0]
    context = {"request_id": None, "project_id": None, "is_admin": True}

    async def agent(index: int, host: str, bus) -> None:
        agent_type, binary, topic, configurations = AGENT_KINDS[index % len(AGENT_KINDS)]
        client = RpcClient(bus, REPORTS, "1.0")
        state = {"agent_type": agent_type, "binary": binary, "host": host, "topic": topic,
                 "configurations": configurations, "resources_synced": True,
                 "availability_zone": "nova", "start_flag": True}
        beat = start + interval * index / agents  # phases spread over the interval
        while beat < end:
            await asyncio.sleep(max(0.0, beat - time.time()))
            now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
            sent = time.time()
            began = time.perf_counter()
            try:
                await client.call(context, "report_state", agent_state={"agent_state": state},
                                  time=now, timeout=interval)
                answered.append((sent, time.perf_counter() - began))
                state.pop("start_flag", None)
            except RpcError:
                failed[0] += 1
            beat += interval

    await asyncio.gather(*(agent(i, h, b) for (i, h), b in zip(hosts, buses, strict=True)))
    for bus in buses:
        await bus.close()
    return answered, failed[0]


def load_process(url: str, hosts: list[tuple[int, str]], agents: int, interval: float,
                 start: float, end: float, ready, results) -> None:
    results.put(asyncio.run(_agents(url, hosts, agents, interval, start, end, ready)))


# --- the run ---------------------------------------------------------------------------

def bench(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.harness import rabbit_vhost

    if urlsplit(args.transport).scheme not in ("rabbit", "amqp"):
        sys.exit("--transport must be a rabbit:// URL: the agents are other processes")
    with rabbit_vhost() if args.own_vhost else contextlib.nullcontext(args.transport) as url:
        run(args, url)


def run(args: argparse.Namespace, url: str) -> None:
    from tests.harness import create_database, start_server

    tmp = Path(tempfile.mkdtemp(prefix="neutrino-report-bench-"))
    db_url, drop = create_database(args.database, tmp)
    server = None
    try:
        down_time = max(75, int(3 * args.interval))  # Neutron's default, or more
        server = start_server(tmp, db_url, auth="noauth", workers=args.workers,
                              extra=f"transport_url = {url}\nagent_down_time = {down_time}\n")
        pids = server_pids(server.proc, args.workers)
        time.sleep(2)  # settle: the RPC servers start after the API answers
        print(f"server: {args.database}, RabbitMQ on {urlsplit(url).hostname} vhost "
              f"{urlsplit(url).path[1:] or '/'}, {args.workers} API worker(s), "
              f"pid {', '.join(map(str, pids))}")

        rest0, rest_at = cpu_seconds(pids), time.monotonic()
        time.sleep(args.rest)
        at_rest = (cpu_seconds(pids) - rest0) / (time.monotonic() - rest_at)

        run_id = uuid.uuid4().hex[:6]
        hosts = [(i, f"bench-{run_id}-{i:04d}") for i in range(args.agents)]
        context = multiprocessing.get_context("spawn")
        results = context.Queue()
        readies = [context.Event() for _ in range(args.clients)]
        procs = []
        # the schedule is fixed before the processes start: far enough ahead for
        # them to connect (about 20 ms a bus), checked below
        connect = 5 + 0.03 * args.agents
        start = time.time() + connect
        window_start = start + args.warmup * args.interval
        end = window_start + args.duration
        for n in range(args.clients):
            mine = hosts[n::args.clients]
            proc = context.Process(target=load_process, args=(
                url, mine, args.agents, args.interval, start, end, readies[n], results))
            proc.start()
            procs.append(proc)
        for ready in readies:
            if not ready.wait(max(1.0, start - time.time())):
                print("(the load processes connected late: the first reports bunch up)")
                break
        print(f"{args.agents} agents in {args.clients} load process(es), one report each every "
              f"{args.interval:g} s = {args.agents / args.interval:.1f} reports/s offered; "
              f"warm-up {args.warmup * args.interval:g} s, measuring {args.duration:g} s")

        time.sleep(max(0.0, window_start - time.time()))
        cpu0, busy0 = cpu_seconds(pids), busy_seconds()
        load0 = cpu_seconds([p.pid for p in procs])
        t0 = time.monotonic()
        time.sleep(max(0.0, end - time.time()))
        seconds = time.monotonic() - t0
        server_cpu = cpu_seconds(pids) - cpu0
        load_cpu = cpu_seconds([p.pid for p in procs]) - load0
        other = max(0.0, busy_seconds() - busy0 - server_cpu - load_cpu) / seconds

        answered: list[tuple[float, float]] = []
        failed = 0
        for _ in procs:
            got, lost = results.get(timeout=60 + 2 * args.interval)
            answered += got
            failed += lost
        for proc in procs:
            proc.join(30)
        latencies = [lat for sent, lat in answered if window_start <= sent < end]
        offered = args.agents / args.interval
        rate = len(latencies) / seconds
        cpu_pct = 100 * server_cpu / seconds
        per_report = server_cpu / max(1, len(latencies))
        print(f"answered     {rate:8.1f} reports/s   ({len(latencies)} in {seconds:.1f} s; "
              f"{failed} failed in the whole run, warm-up included)")
        if latencies:
            print(f"latency      p50 {percentile(latencies, 50) * 1e3:7.2f} ms   "
                  f"p99 {percentile(latencies, 99) * 1e3:7.2f} ms   "
                  f"max {max(latencies) * 1e3:7.2f} ms")
        print(f"server CPU   {cpu_pct:8.1f} % of one CPU   ({per_report * 1e3:.2f} ms per report;"
              f" {100 * at_rest:.1f} % at rest)")
        print(f"load CPU     {100 * load_cpu / seconds:8.1f} % ({args.clients} process(es));  "
              f"rest of the machine {100 * other:.1f} % (broker, database, others)")
        scale = args.interval / NEUTRON_INTERVAL
        linear = cpu_pct * scale
        rest_aware = 100 * at_rest + (cpu_pct - 100 * at_rest) * scale
        print(f"at Neutron's report_interval = {NEUTRON_INTERVAL} s: {offered * scale:.1f} "
              f"reports/s from {args.agents} agents -> server CPU ~{linear:.2f} % of one CPU "
              f"(measured CPU scaled linearly by {args.interval:g}/{NEUTRON_INTERVAL}; "
              f"~{rest_aware:.2f} % counting the {100 * at_rest:.1f} % at rest as fixed)")
    finally:
        if server is not None:
            server.stop()
        drop()
        shutil.rmtree(tmp, ignore_errors=True)


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--interval", type=float, default=2.0,
                        help="seconds between one agent's reports (Neutron's default: 30)")
    parser.add_argument("--duration", type=float, default=40.0, help="measured seconds")
    parser.add_argument("--warmup", type=int, default=2, help="intervals before measuring")
    parser.add_argument("--rest", type=float, default=5.0,
                        help="seconds to measure the server at rest before the agents")
    parser.add_argument("--clients", type=int, default=2, help="load processes")
    parser.add_argument("--workers", type=int, default=1, help="the server's api_workers")
    parser.add_argument("--database", choices=("sqlite", "postgresql", "mysql"),
                        default="sqlite")
    parser.add_argument("--transport", default="rabbit://guest:guest@127.0.0.1:5672/")
    parser.add_argument("--no-own-vhost", dest="own_vhost", action="store_false",
                        help="use --transport as given; by default a new vhost on the "
                             "local broker (guest)")
    return parser.parse_args()


if __name__ == "__main__":
    bench(_args())
