"""Dataplane benchmark: the Open vSwitch agent on OVS's userspace datapath.

    .venv/bin/python bench/ovs_bench.py [--ports 100] [--more-ports 100]
        [--resync-ports 500] [--fill auto|instances|internal] [--remote-ports 10]

Root, Open vSwitch (ovsdb-server, ovs-vswitchd: private instances, see
docs/ovs-userspace.md), RabbitMQ on 127.0.0.1:5672 (a vhost of its own,
removed at the end). Everything runs in namespaces it makes and removes
(``tests/functional/emulated_hosts``): one server (SQLite, ML2 with
openvswitch and l2population), host ``h1`` with OVS and its agent (as
``start_ovs_agent`` configures it: the OpenFlow firewall, l2population, ARP
responder), and host ``h2`` with ``--remote-ports`` ports of the same VXLAN
network, so that h1's br-tun holds a tunnel and the flows of remote ports.
Figures, not pass/fail; the machine's load before each phase, as it may be
shared. It prints:

* flows: ``OpenFlow.add`` (one bundle) of 1,000 and 10,000 distinct flows on
  a bridge of a private Open vSwitch, ``OpenFlow.replace`` of a 10,000-flow
  table with one flow changed (and with none), and ``OpenFlow.update`` of it
  with one flow changed (what the agent sends between full syncs); flows/s;
* port up: for each of ``--ports`` ports in turn (then ``--more-ports`` more),
  the time from the API's port create, through the plug (binding, namespace,
  veth on br-int, as ``neutrino-instance plug --ovs-db`` does, in this
  process) until the API shows the port ACTIVE; p50/p99/max, split into
  create + plug and the wait for ACTIVE; the agent's log during the slowest
  port's wait when it passed 5 s;
* fill: ports up to ``--resync-ports`` on h1: instances as above, or (faster,
  ``internal``) bound through the API and added to br-int at once as OVS
  internal ports with ``external_ids:iface-id``, no instance behind them;
  the time until all are ACTIVE;
* settle: before the kill, the wait until br-int's flow count stays the same
  for 10 s; the agent log's warnings and errors (the first traceback whole);
* resync: the agent killed (-9) and started again, the time of its first full
  sync (its own log line) and from its start until then; br-int's and
  br-tun's flows before the kill and after the resync, counted, and by their
  ``duration`` whether they were written again; pings (local, and across the
  tunnel) running through the kill and the restart, and how many were lost;
  then how often h1's ovs-vswitchd said its main loop was stuck.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

# ovs (the IDL, imported by neutrino.linux.ovs) probes for eventlet, which warns
warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from neutrino.cmd.instance import Api, Ovs, instance_namespace, plug, tap_name  # noqa: E402
from neutrino.linux.ovs import OpenFlow  # noqa: E402
from tests.dataplane import Sandbox, pings, run, sandbox, wait_until  # noqa: E402
from tests.functional.emulated_hosts import Deployment  # noqa: E402
from tests.harness import rabbit_vhost  # noqa: E402
from tests.ovs import OvsHost  # noqa: E402

OVS_AGENT = "Open vSwitch agent"
AGENT_LOG = "h1-neutrino-openvswitch-agent"
SERVER_EXTRA = ("[ml2]\nmechanism_drivers = openvswitch,linuxbridge,l2population\n"
                "[quotas]\nquota_port = -1\n")
CIDR = "10.0.0.0/20"
#: a fill beyond this (estimated from the port up times) plugs no instances
FILL_BUDGET = 300.0
STATS = re.compile(r"(duration|n_packets|n_bytes|idle_age|hard_age)=[^,]*,\s*")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def load(phase: str) -> None:
    one, five, fifteen = os.getloadavg()
    print(f"\n== {phase}   (load average {one:.2f} {five:.2f} {fifteen:.2f}, "
          f"{os.cpu_count()} CPUs)", flush=True)


def status(deployment: Deployment, port_id: str) -> str:
    return deployment.api.show("ports", port_id)["status"]


# --- flows per second ---------------------------------------------------------------------

def flow_rates(box: Sandbox, tmp: Path, repeat: int) -> None:
    """OpenFlow.add and .replace on a bridge of a private Open vSwitch."""
    ovs = OvsHost.start(box.namespace("of"), tmp / "of-ovs")
    try:
        ovs.add_bridge("br-bench", "fail_mode=secure")
        flows = OpenFlow("br-bench", {**os.environ, **ovs.env})

        def table(count: int, changed: int | None = None) -> list[str]:
            return [f"table=0,priority=10,ip,nw_dst=10.{i >> 16 & 255}.{i >> 8 & 255}."
                    f"{i & 255},actions={'drop' if i == changed else 'NORMAL'}"
                    for i in range(count)]

        def timed(what: str, count: int, work, reset=None) -> None:
            times = []
            for _ in range(repeat):
                if reset is not None:
                    reset()
                began = time.perf_counter()
                work()
                times.append(time.perf_counter() - began)
            best, median = min(times), statistics.median(times)
            print(f"flows        {what}: median {median:.3f} s ({count / median:,.0f} flows/s)"
                  f", best {best:.3f} s ({count / best:,.0f} flows/s), {repeat} runs",
                  flush=True)

        def empty() -> None:
            ovs.ofctl("del-flows", "br-bench")

        for count in (1000, 10000):
            timed(f"add {count:,} to an empty table (one bundle)", count,
                  lambda c=count: flows.add(table(c)), empty)
        assert len(flows.dump()) == 10000
        full, one_changed = table(10000), table(10000, changed=4321)

        def restore() -> None:
            flows.replace(full)

        timed("replace of 10,000 flows, 1 changed", 10000,
              lambda: flows.replace(one_changed), restore)
        timed("replace of 10,000 flows, none changed", 10000, lambda: flows.replace(full))
        timed("update of 10,000 flows, 1 changed (the agent's incremental write)", 10000,
              lambda: flows.update(full, one_changed), restore)
    finally:
        ovs.stop()


# --- port up --------------------------------------------------------------------------------

def port_up_times(deployment: Deployment, api: Api, net_id: str, count: int,
                  label: str) -> tuple[list[str], list[float]]:
    times, plugs, ports = [], [], []
    windows: list[tuple[float, float]] = []  # plugged, ACTIVE (wall clock)
    host = deployment.hosts["h1"]
    ovs = Ovs(host["ovs"].db)
    for _ in range(count):
        began = time.perf_counter()
        port = deployment.api.port(net_id)
        deployment.box.adopt(instance_namespace(port["id"]))
        plug(api, port["id"], host["host"], host["namespace"], dhcp=False, timeout=1, ovs=ovs)
        plugs.append(time.perf_counter() - began)
        plugged_at = time.time()
        while status(deployment, port["id"]) != "ACTIVE":
            if time.perf_counter() - began > 300:
                raise TimeoutError(f"port {port['id']} not ACTIVE after 300 s")
            time.sleep(0.01)
        times.append(time.perf_counter() - began)
        ports.append(port["id"])
        windows.append((plugged_at, time.time()))
    agent = [total - plugged for total, plugged in zip(times, plugs, strict=True)]
    print(f"port up      {label}, {count} one after another: p50 {percentile(times, 50):.3f} s"
          f"   p99 {percentile(times, 99):.3f} s   max {max(times):.3f} s   "
          f"mean {statistics.mean(times):.3f} s; of which create + plug p50 "
          f"{percentile(plugs, 50):.3f} s p99 {percentile(plugs, 99):.3f} s, then until "
          f"ACTIVE p50 {percentile(agent, 50):.3f} s p99 {percentile(agent, 99):.3f} s",
          flush=True)
    slowest = max(range(count), key=lambda i: times[i]) if count else None
    if slowest is not None and times[slowest] > 5:
        agent_log_between(deployment, *windows[slowest])
    return ports, times


def agent_log_between(deployment: Deployment, start: float, end: float) -> None:
    """h1's agent log while the slowest port waited to be ACTIVE (at most 15 lines)."""
    lines = []
    for line in deployment.log(AGENT_LOG).splitlines():
        try:
            when = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        except ValueError:
            continue
        if start - 0.5 <= when <= end:
            lines.append(line)
    print(f"             the slowest port's wait ({end - start:.1f} s), as h1's agent logged it:")
    for line in lines[:15]:
        print(f"             {line[:200]}")


def fill_internal(deployment: Deployment, api: Api, net_id: str, count: int,
                  batch: int = 50) -> list[str]:
    """``count`` ports bound to h1 through the API, then put on br-int as OVS
    internal ports (``batch`` per ovs-vsctl transaction), no instance behind
    them; returns when all are ACTIVE."""
    host = deployment.hosts["h1"]
    began = time.perf_counter()
    ports = [api.call("POST", "/v2.0/ports", {"port": {
        "network_id": net_id, "binding:host_id": host["host"]}})["port"]
        for _ in range(count)]
    created = time.perf_counter()
    for start in range(0, count, batch):
        args: list[str] = []
        for port in ports[start:start + batch]:
            tap = tap_name(port["id"])
            args += ["--", "--may-exist", "add-port", "br-int", tap, "--", "set",
                     "Interface", tap, "type=internal",
                     f"external_ids:iface-id={port['id']}",
                     f"external_ids:attached-mac={port['mac_address']}",
                     "external_ids:iface-status=active"]
        host["ovs"].vsctl("--no-wait", *args)  # the agent waits for ovs-vswitchd
    plugged = time.perf_counter()
    ids = {port["id"] for port in ports}
    wait_until(lambda: ids <= active(deployment, net_id), 900,
               f"{count} internal ports ACTIVE")
    print(f"fill         {count} ports as OVS internal ports on br-int (no instances): "
          f"API creates {created - began:.1f} s, ovs-vsctl {plugged - created:.1f} s, then "
          f"all ACTIVE after {time.perf_counter() - plugged:.1f} s", flush=True)
    return list(ids)


def fill_instances(deployment: Deployment, api: Api, net_id: str, count: int) -> list[str]:
    began = time.perf_counter()
    ports, _ = port_up_times(deployment, api, net_id, count, "fill (instances)")
    print(f"fill         {count} instances plugged in {time.perf_counter() - began:.1f} s",
          flush=True)
    return ports


def flow_count(deployment: Deployment) -> None:
    ovs: OvsHost = deployment.hosts["h1"]["ovs"]
    counts = [f"{bridge} {ovs.ofctl('dump-aggregate', bridge).split('flow_count=')[1]}"
              for bridge in ("br-int", "br-tun")]
    print(f"flows        on h1 now: {', '.join(counts)}", flush=True)


def settle(deployment: Deployment, quiet: float = 10, limit: float = 900) -> None:
    """Wait until h1's br-int flow count has not changed for ``quiet`` s: the
    agent reports a port up before it writes the port's flows (and the other
    ports' firewall flows that name its address)."""
    ovs: OvsHost = deployment.hosts["h1"]["ovs"]
    began = time.perf_counter()
    last, since = None, began
    while time.perf_counter() - since < quiet:
        count = ovs.ofctl("dump-aggregate", "br-int").split("flow_count=")[1].strip()
        if count != last:
            last, since = count, time.perf_counter()
        if time.perf_counter() - began > limit:
            raise TimeoutError(f"br-int's flows still changing after {limit} s")
        time.sleep(1)
    print(f"settle       br-int's flows stopped changing {since - began:.1f} s after the "
          f"last port was ACTIVE: {last} flows", flush=True)


def active(deployment: Deployment, net_id: str) -> set[str]:
    found = deployment.api.get("/v2.0/ports", params={"network_id": net_id,
                                                      "status": "ACTIVE"})
    return {port["id"] for port in found.json()["ports"]}


# --- resync -----------------------------------------------------------------------------------

def flow_table(ovs: OvsHost, bridge: str) -> dict[str, float]:
    """The bridge's flows (without their statistics) -> their age (s)."""
    table = {}
    for line in ovs.ofctl("dump-flows", bridge).splitlines():
        if "duration=" not in line:
            continue
        age = float(line.split("duration=")[1].split("s,")[0])
        table[STATS.sub("", line.strip())] = age
    return table


def compare(bridge: str, before: dict[str, float], after: dict[str, float],
            between: float) -> None:
    """Flows in both dumps are rewritten if younger than ``between`` s (the time
    between the two dumps) older, less a margin."""
    kept = [flow for flow in before if flow in after]
    rewritten = [flow for flow in kept if after[flow] < before[flow] + between - 0.5]
    gone, new = len(before) - len(kept), len(set(after) - set(before))
    print(f"flows        {bridge}: {len(before)} before the kill, {len(after)} after the "
          f"resync; {len(kept) - len(rewritten)} untouched (aged by the {between:.1f} s "
          f"between), {len(rewritten)} written again, {gone} gone, {new} new", flush=True)
    for flow in rewritten[:3]:
        print(f"             written again: {flow[:150]}")


def ping_through(source: str, address: str) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", source, "ping", "-n", "-i", "0.2", "-W",
                             "1", address], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def ping_result(proc: subprocess.Popen) -> str:
    proc.send_signal(2)  # SIGINT: ping prints its summary
    out, _ = proc.communicate(timeout=10)
    found = re.search(r"(\d+) packets transmitted, (\d+) received", out)
    return f"{found.group(2)}/{found.group(1)} answered" if found else out.strip()[-200:]


def resync(deployment: Deployment, agent: subprocess.Popen,
           pingers: dict[str, tuple[str, str]]) -> None:
    ovs: OvsHost = deployment.hosts["h1"]["ovs"]
    running = {what: ping_through(source, address)
               for what, (source, address) in pingers.items()}
    time.sleep(1)
    before = {bridge: flow_table(ovs, bridge) for bridge in ("br-int", "br-tun")}
    dumped = time.monotonic()
    ports = len(ovs.vsctl("list-ports", "br-int").split())
    agent.kill()
    agent.wait()
    log = deployment.tmp / f"{AGENT_LOG}.log"
    began = time.perf_counter()
    deployment.start_ovs_agent("h1")
    done = wait_until(lambda: re.search(r"full sync done in ([0-9.]+) s",
                                        log.read_text(errors="replace")),
                      900, "the full sync after the restart")
    elapsed = time.perf_counter() - began
    print(f"resync       {ports} ports on br-int (patch-tun, int-br-phys included): full sync "
          f"{float(done.group(1)):.3f} s; from the agent's start {elapsed:.3f} s (process "
          "start, connecting and registering included)", flush=True)
    time.sleep(1)
    after = {bridge: flow_table(ovs, bridge) for bridge in ("br-int", "br-tun")}
    between = time.monotonic() - dumped
    for bridge in before:
        compare(bridge, before[bridge], after[bridge], between)
    for what, proc in running.items():
        print(f"traffic      ping {what}, every 0.2 s through the kill and the resync: "
              f"{ping_result(proc)}", flush=True)


def address(deployment: Deployment, port_id: str) -> tuple[str, str]:
    """The instance of ``port_id`` with its fixed IP set by hand: (namespace, IP)."""
    ip = deployment.api.show("ports", port_id)["fixed_ips"][0]["ip_address"]
    ns = instance_namespace(port_id)
    run("ip", "addr", "add", f"{ip}/{CIDR.split('/')[1]}", "dev", "eth0", namespace=ns)
    return ns, ip


def agent_log_findings(deployment: Deployment, when: str) -> None:
    """Warnings and errors in h1's agent log (each start of the agent begins a new log)."""
    text = deployment.log(AGENT_LOG)
    bad = [line for line in text.splitlines()
           if re.search(r"\b(ERROR|WARNING|Traceback|CRITICAL)\b", line)]
    syncs = re.findall(r"full sync done in ([0-9.]+) s", text)
    print(f"agent log    ({when}) {len(bad)} warning/error lines; "
          f"full syncs {', '.join(syncs) or 'none'} s")
    for line in bad[:10]:
        print(f"             {line[:200]}")
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if "Traceback" in line), None)
    if first is not None:  # the first traceback in full: what went wrong
        end = next((i for i in range(first + 1, len(lines))
                    if re.match(r"\d{4}-\d\d-\d\d ", lines[i])), len(lines))
        print("\n".join(f"             {line[:200]}" for line in lines[first - 1:end]))


# --- the whole -------------------------------------------------------------------------------

def bench(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="neutrino-ovs-bench-"))
    try:
        with rabbit_vhost() as url, sandbox() as box:
            load("flows per second (ovs-ofctl --bundle, private Open vSwitch)")
            flow_rates(box, tmp, args.repeat)
            deployment = Deployment(box, tmp, url, SERVER_EXTRA)
            try:
                run_deployment(deployment, args)
            finally:
                deployment.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


def run_deployment(deployment: Deployment, args: argparse.Namespace) -> None:
    load("setting up: server, h1 and h2 with OVS and the OVS agent")
    names = ("h1", "h2") if args.remote_ports else ("h1",)
    agents = {}
    for index, name in enumerate(names, start=1):
        deployment.add_host(name, index)
        deployment.add_ovs(name)
        agents[name] = deployment.start_ovs_agent(name)
    for name in names:
        wait_until(lambda n=name: deployment.agent_alive(n, OVS_AGENT), 60,
                   f"the OVS agent of {name}")
    net = deployment.api.network(**{"provider:network_type": "vxlan"})
    deployment.api.subnet(net["id"], CIDR, enable_dhcp=False)
    api = Api(deployment.server.url, None)
    remote = []
    for _ in range(args.remote_ports):
        port = deployment.api.port(net["id"])
        deployment.plug("h2", port["id"])
        remote.append(port["id"])
    if remote:
        wait_until(lambda: set(remote) <= active(deployment, net["id"]), 120,
                   "h2's ports ACTIVE")

    load(f"port up on h1 (VXLAN, l2population, firewall openvswitch, default group; "
         f"{len(remote)} ports on h2)")
    ports, times = port_up_times(deployment, api, net["id"], args.ports,
                                 f"ports 1-{args.ports}")
    flow_count(deployment)
    if args.more_ports:
        load(f"port up, ports {args.ports + 1}-{args.ports + args.more_ports}")
        more, times = port_up_times(deployment, api, net["id"], args.more_ports,
                                    f"ports {args.ports + 1}-{args.ports + args.more_ports}")
        ports += more
        flow_count(deployment)
    missing = max(0, args.resync_ports - len(ports))
    if missing:
        fill = args.fill
        # from the last ports timed (port up time grows with the ports on the host)
        estimate = statistics.mean(times[-20:]) * missing
        if fill == "auto":
            fill = "instances" if estimate <= FILL_BUDGET else "internal"
        load(f"fill to {args.resync_ports} ports on h1: {missing} more as {fill} (instances "
             f"estimated at {estimate:.0f} s from the port up times; budget {FILL_BUDGET:.0f} s)")
        filler = fill_instances if fill == "instances" else fill_internal
        filler(deployment, api, net["id"], missing)
        flow_count(deployment)

    settle(deployment)
    load(f"resync of h1's agent (kill -9, start) with {args.resync_ports} ports")
    source, _ = address(deployment, ports[0])
    pingers = {"h1 to h1": (source, address(deployment, ports[1])[1])}
    if remote:
        pingers["h1 to h2 (VXLAN)"] = (source, address(deployment, remote[0])[1])
    for what, (source, target) in pingers.items():
        if not any(pings(source, target) for _ in range(20)):
            print(f"traffic      ping {what} fails before the kill", flush=True)
    agent_log_findings(deployment, "before the kill")
    resync(deployment, agents["h1"], pingers)
    agent_log_findings(deployment, "after the restart")
    vswitchd_stalls(deployment.hosts["h1"]["ovs"])


def vswitchd_stalls(ovs: OvsHost) -> None:
    """How often h1's ovs-vswitchd said its main loop was stuck, and for how long at most."""
    stalls = [int(ms) for ms in re.findall(r"Unreasonably long (\d+)ms poll interval",
                                            ovs.log(lines=1_000_000))]
    print(f"vswitchd     h1's main loop stuck (its own 'Unreasonably long poll interval' "
          f"lines): {len(stalls)} times" + (f", longest {max(stalls) / 1000:.1f} s"
                                             if stalls else ""), flush=True)


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", type=int, default=100)
    parser.add_argument("--more-ports", type=int, default=100,
                        help="ports timed after the first --ports (0: none)")
    parser.add_argument("--resync-ports", type=int, default=500)
    parser.add_argument("--fill", choices=("auto", "instances", "internal"), default="auto",
                        help="how ports beyond the timed ones are plugged for the resync")
    parser.add_argument("--remote-ports", type=int, default=10,
                        help="ports on a second host h2 (0: no h2)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each flow timing")
    return parser.parse_args()


if __name__ == "__main__":
    bench(_args())
