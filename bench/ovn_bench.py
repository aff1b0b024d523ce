"""ML2/OVN benchmark: port up, ``neutrino-ovn-db-sync``, and the API's create rate,
each beside the Open vSwitch agent's figure where there is one.

    .venv/bin/python bench/ovn_bench.py [--ports 200] [--sync-ports 5000]
        [--sync-delete 50] [--creates 1000] [--phases up,sync,api] [--profile DIR]

Root; Open vSwitch and OVN (Debian's ``openvswitch-switch``, ``ovn-central``,
``ovn-host``: private instances, ``tests/ovs.py`` and ``tests/ovn.py``),
RabbitMQ on 127.0.0.1:5672 for the agent's side of the first phase (a vhost
of its own, removed at the end). Everything it starts (namespaces, OVS and
OVN daemons, servers) is stopped and removed at the end, whatever happens.
Figures, not pass/fail; the machine's load before each phase, as it may be
shared. It prints:

* port up: for each of ``--ports`` ports in turn, the time from the API's
  port create, through the plug (binding, an instance namespace, a veth on
  br-int with ``external_ids:iface-id``: ``neutrino-instance plug --ovs-db``,
  in this process) until the API shows the port ACTIVE; p50/p99/max, split
  into create + plug and the wait for ACTIVE. Twice, plugged the same way on
  the same machine: with the Open vSwitch agent (as ``bench/ovs_bench.py``
  sets it up: a server with ML2 openvswitch and l2population, host ``h1``
  with OVS and its agent, the OpenFlow firewall, a VXLAN network) and with
  OVN (a server with ``mechanism_drivers = ovn``, OVN central, one chassis
  with ``ovn-controller``, a Geneve network; the port is ACTIVE once
  ``ovn-controller`` claimed it and ``ovn-northd`` set the Northbound
  ``Logical_Switch_Port.up``, which the driver reads every 0.25 s);
  the ratio OVN / agent;
* db-sync: a server (SQLite, ``mechanism_drivers = ovn``, OVN central, no
  chassis) filled with ``--sync-ports`` ports on one network by bulk creates
  (``POST /v2.0/ports`` with ``{"ports": [...]}``, 100 a request; the time
  of each thousand, as it grows with the ports already there), then
  stopped (its maintenance task would repair what the bench deletes); then
  ``neutrino-ovn-db-sync --mode log`` run twice, its own "checked ... in X s"
  and the command's wall time (process start, configuration and the
  Northbound DB's first read included); then ``--sync-delete`` Logical
  Switch Ports deleted with ``ovn-nbctl`` (one transaction) and ``--mode
  log`` and ``--mode repair`` timed, and a last ``--mode log`` (0 differences
  expected);
* API: two servers side by side (``api_workers = 2``, noauth, SQLite, ML2
  with port_security, a Geneve network with a /16 subnet), one with
  ``mechanism_drivers = openvswitch`` (no agent: the ports stay unbound), one
  with ``mechanism_drivers = ovn`` (OVN central running, no chassis), after 50
  creates each and the ovn server's first drift check (made once, soon after
  start), each taking ``--creates`` port creates at concurrency 1, then 8, by turns
  (agent, ovn, agent, ovn) so that the machine's drift shows; creates/s, p50
  and p99 per run, labelled with the ports the server held before it
  (``@N``: a create's cost may grow with them), with ``bench/api_bench.py``'s
  load generator and CPU accounting (the client's, the server workers' and
  the rest of the machine's), and the OVN central's CPU per create (NB and SB
  ovsdb-server, ovn-northd, each); then the ratio ovn / agent of the
  creates/s, per round.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

# ovs (the IDL, imported by neutrino.linux.ovs) probes for eventlet, which warns
warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from api_bench import (  # noqa: E402
    Profiler,
    Run,
    cpu_seconds,
    load,
    port_body,
    report,
    summarize_profile,
    wait_for_workers,
)
from ovs_bench import OVS_AGENT, SERVER_EXTRA, percentile  # noqa: E402

from neutrino.cmd.instance import Api, Ovs, instance_namespace, plug  # noqa: E402
from neutrino.plugins.ml2.drivers.ovn.maintenance import FIRST_REPAIR_AFTER  # noqa: E402
from tests.dataplane import Sandbox, sandbox, wait_until  # noqa: E402
from tests.functional.emulated_hosts import Deployment  # noqa: E402
from tests.harness import ApiClient, Server, rabbit_vhost, start_server, terminate  # noqa: E402
from tests.ovn import OvnCentral, ovn_central, ovn_chassis  # noqa: E402
from tests.ovs import ovs_host  # noqa: E402

CIDR = "10.0.0.0/20"
ENCAP_IP = "192.168.78.1"
QUOTAS = "[quotas]\nquota_port = -1\nquota_network = -1\nquota_subnet = -1\n"
#: ML2 as both servers of the API phase have it; the ovn one adds its [ovn] section
ML2 = ("[ml2]\nmechanism_drivers = {mechanism}\ntenant_network_types = geneve\n"
       "extension_drivers = port_security\n[ml2_type_geneve]\nvni_ranges = 1:1000\n")
BULK = 100
CHECKED = re.compile(r"checked .* in ([0-9.]+) s: (\d+) differences")


def phase(what: str) -> None:
    one, five, fifteen = os.getloadavg()
    print(f"\n== {what}   (load average {one:.2f} {five:.2f} {fifteen:.2f}, "
          f"{os.cpu_count()} CPUs)", flush=True)


def ovn_extra(central: OvnCentral, mechanism: str = "ovn") -> str:
    return (ML2.format(mechanism=mechanism) + QUOTAS
            + f"[ovn]\novn_nb_connection = {central.nb}\novn_sb_connection = {central.sb}\n")


def stop_server(server: Server) -> None:
    """Stopped; a traceback in its log is printed (a figure taken beside a bug)."""
    terminate(server.proc)
    text = server.log.read_text(errors="replace")
    start = text.find("Traceback")
    if start >= 0:
        print(f"!! {server.log.name} holds a traceback:\n{text[start:start + 3000]}", flush=True)


# --- port up -------------------------------------------------------------------------------

def port_up_times(client: ApiClient, net_id: str, count: int, host: str, host_netns: str,
                  ovs: Ovs, box: Sandbox, label: str) -> list[float]:
    """``count`` ports created, plugged and waited for ACTIVE one after another,
    as ``ovs_bench.port_up_times`` does; the times, and a line of figures."""
    api = Api(client.base_url, None)
    times, plugs = [], []
    for _ in range(count):
        began = time.perf_counter()
        port = client.port(net_id)
        box.adopt(instance_namespace(port["id"]))
        plug(api, port["id"], host, host_netns, dhcp=False, timeout=1, ovs=ovs)
        plugs.append(time.perf_counter() - began)
        while client.show("ports", port["id"])["status"] != "ACTIVE":
            if time.perf_counter() - began > 300:
                raise TimeoutError(f"port {port['id']} not ACTIVE after 300 s")
            time.sleep(0.01)
        times.append(time.perf_counter() - began)
    waits = [total - plugged for total, plugged in zip(times, plugs, strict=True)]
    print(f"port up      {label}, {count} one after another: p50 {percentile(times, 50):.3f} s"
          f"   p99 {percentile(times, 99):.3f} s   max {max(times):.3f} s   "
          f"mean {statistics.mean(times):.3f} s; of which create + plug p50 "
          f"{percentile(plugs, 50):.3f} s p99 {percentile(plugs, 99):.3f} s, then until "
          f"ACTIVE p50 {percentile(waits, 50):.3f} s p99 {percentile(waits, 99):.3f} s",
          flush=True)
    return times


def port_up_agent(args: argparse.Namespace, tmp: Path) -> list[float]:
    phase("port up with the Open vSwitch agent (setting up: server, h1 with OVS and "
          "its agent; VXLAN, l2population, firewall openvswitch, default group)")
    with rabbit_vhost() as url, sandbox() as box:
        deployment = Deployment(box, tmp, url, SERVER_EXTRA)
        try:
            deployment.add_host("h1", 1)
            ovs = deployment.add_ovs("h1")
            deployment.start_ovs_agent("h1")
            wait_until(lambda: deployment.agent_alive("h1", OVS_AGENT), 60,
                       "the OVS agent of h1")
            net = deployment.api.network(**{"provider:network_type": "vxlan"})
            deployment.api.subnet(net["id"], CIDR, enable_dhcp=False)
            host = deployment.hosts["h1"]
            phase(f"port up, Open vSwitch agent: {args.ports} ports")
            return port_up_times(deployment.api, net["id"], args.ports, host["host"],
                                 host["namespace"], Ovs(ovs.db), box, "OVS agent")
        finally:
            deployment.close()


def port_up_ovn(args: argparse.Namespace, tmp: Path) -> list[float]:
    phase("port up with OVN (setting up: OVN central, chassis ch1 with ovn-controller, "
          "server with mechanism_drivers = ovn; Geneve, port security, default group)")
    with sandbox() as box, ovn_central(tmp / "central") as central, \
            ovs_host(box.namespace("ch1"), tmp / "ch1", bridges=()) as ovs, \
            ovn_chassis(ovs, central, ENCAP_IP) as chassis:
        server = start_server(tmp, f"sqlite:///{tmp / 'neutrino.db'}", extra=(
            "agent_down_time = 8\n" + ovn_extra(central)))
        try:
            client = server.client(None)
            admin = server.client(None, roles=("admin",))
            wait_until(lambda: any(a["alive"] and a["host"] == chassis.name
                                   for a in admin.get("/v2.0/agents").json()["agents"]),
                       30, "the chassis alive as an agent")
            net = client.network(name="up")
            client.subnet(net["id"], CIDR, enable_dhcp=False)
            phase(f"port up, OVN: {args.ports} ports")
            return port_up_times(client, net["id"], args.ports, chassis.name, ovs.namespace,
                                 Ovs(ovs.db), box, "OVN      ")
        finally:
            stop_server(server)


def port_up(args: argparse.Namespace, tmp: Path) -> None:
    (tmp / "agent").mkdir()
    (tmp / "ovn").mkdir()
    agent = port_up_agent(args, tmp / "agent")
    ovn = port_up_ovn(args, tmp / "ovn")
    print(f"port up      OVN / OVS agent: p50 {percentile(ovn, 50) / percentile(agent, 50):.2f}"
          f"   p99 {percentile(ovn, 99) / percentile(agent, 99):.2f}", flush=True)


# --- neutrino-ovn-db-sync ----------------------------------------------------------------

def db_sync(conf: Path, mode: str, label: str) -> int:
    """One run of the command, timed; the differences it found."""
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "neutrino.cmd.ovn_db_sync", "--config-file",
                           str(conf), "--mode", mode], capture_output=True, text=True,
                          timeout=1800, cwd=conf.parent,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - began
    found = CHECKED.search(done.stdout)
    if found is None:
        print(f"db-sync      {label}: exit {done.returncode}, no 'checked' line:\n"
              f"{done.stdout[-2000:]}{done.stderr[-2000:]}", flush=True)
        return -1
    repaired = re.search(r"repaired (\d+) of (\d+)", done.stdout)
    print(f"db-sync      {label}: its own figure {float(found.group(1)):.2f} s, wall "
          f"{wall:.2f} s (process start included), {found.group(2)} differences"
          + (f", repaired {repaired.group(1)} of {repaired.group(2)}" if repaired else "")
          + f", exit {done.returncode}", flush=True)
    return int(found.group(2))


def sync_bench(args: argparse.Namespace, tmp: Path) -> None:
    phase(f"db-sync: a server (mechanism_drivers = ovn, no chassis) filled with "
          f"{args.sync_ports} ports, {BULK} a bulk create")
    with ovn_central(tmp / "central") as central:
        server = start_server(tmp, f"sqlite:///{tmp / 'neutrino.db'}", extra=ovn_extra(central))
        try:
            client = server.client("bench")
            net = client.network(name="sync")
            client.subnet(net["id"], "10.64.0.0/16", enable_dhcp=False)
            began = time.perf_counter()
            ids: list[str] = []
            steps, mark, last = [], began, 0
            for start in range(0, args.sync_ports, BULK):
                size = min(BULK, args.sync_ports - start)
                resp = client.post("/v2.0/ports", json={"ports": [
                    {"network_id": net["id"]} for _ in range(size)]})
                if resp.status_code != 201:
                    raise RuntimeError(f"bulk create: {resp.status_code} {resp.text[:500]}")
                ids += [port["id"] for port in resp.json()["ports"]]
                if len(ids) % 1000 == 0 or len(ids) == args.sync_ports:
                    now = time.perf_counter()
                    steps.append(f"{last + 1}-{len(ids)}: {now - mark:.1f} s")
                    mark, last = now, len(ids)
            elapsed = time.perf_counter() - began
            print(f"fill         {len(ids)} ports by bulk creates in {elapsed:.1f} s "
                  f"({len(ids) / elapsed:.0f} ports/s); by the thousand: {', '.join(steps)}",
                  flush=True)
        finally:
            stop_server(server)
        lsps = len(central.nbctl("--bare", "--columns=name", "find", "Logical_Switch_Port",
                                 "type=\"\"").split())
        print(f"             {lsps} Logical_Switch_Ports in the Northbound DB", flush=True)
        phase(f"db-sync --mode log over {len(ids)} ports (server stopped)")
        for run in (1, 2):
            db_sync(server.conf, "log", f"--mode log, run {run}, no drift")
        doomed = ids[::max(1, len(ids) // max(1, args.sync_delete))][:args.sync_delete]
        central.nbctl(*[arg for port_id in doomed for arg in ("--", "lsp-del", port_id)])
        phase(f"db-sync with {len(doomed)} Logical_Switch_Ports deleted by ovn-nbctl")
        db_sync(server.conf, "log", f"--mode log, {len(doomed)} deleted")
        db_sync(server.conf, "repair", f"--mode repair, {len(doomed)} deleted")
        left = db_sync(server.conf, "log", "--mode log after the repair")
        names = set(central.nbctl("--bare", "--columns=name", "list",
                                  "Logical_Switch_Port").split())
        back = len(names & set(doomed))
        print(f"             after the repair: {back} of {len(doomed)} deleted ports back in "
              f"the Northbound DB, {left} differences left", flush=True)


# --- API create rate ---------------------------------------------------------------------

def central_pids(central: OvnCentral) -> dict[str, list[int]]:
    """The OVN central daemons' pids: NB and SB ovsdb-server, ovn-northd."""
    daemons = {"NB": central.servers["nb"], "SB": central.servers["sb"],
               "northd": central.northd}
    return {name: [daemon.pid] if daemon.pid is not None else []
            for name, daemon in daemons.items()}


def api_rates(args: argparse.Namespace, tmp: Path) -> None:
    phase("API create rate: two servers (api_workers = 2, SQLite), ML2 openvswitch (no "
          "agent) and ML2 ovn (OVN central, no chassis)")
    with ovn_central(tmp / "central") as central:
        servers: dict[str, Server] = {}
        try:
            for name, mechanism in (("agent", "openvswitch"), ("ovn", "ovn")):
                (tmp / name).mkdir()
                servers[name] = start_server(tmp / name, f"sqlite:///{tmp / name / 'n.db'}",
                                             workers=2, extra=ovn_extra(central, mechanism))
            measure(args, servers, central)
        finally:
            for server in servers.values():
                stop_server(server)


def measure(args: argparse.Namespace, servers: dict[str, Server], central: OvnCentral) -> None:
    import httpx

    pids = {name: [server.proc.pid, *wait_for_workers(server.proc.pid, 1)]
            for name, server in servers.items()}
    bodies = {}
    for name, server in servers.items():
        with httpx.Client(base_url=server.url, headers={"X-Project-Id": "bench"},
                          timeout=60) as http:
            bodies[name] = port_body(http)
    ovn_pids = central_pids(central)
    runs: dict[tuple[str, int], list[Run]] = {}

    ports = {name: 0 for name in servers}
    started = time.monotonic()

    def creates(name: str, count: int, concurrency: int, label: str) -> Run:
        before = {daemon: cpu_seconds(daemon_pids) for daemon, daemon_pids in ovn_pids.items()}
        with Profiler(args.profile, pids[name][1:], f"{name}-c{concurrency}",
                      gil=True) as profiler:
            run = load(servers[name].url, "POST", "/v2.0/ports", bodies[name], count,
                       concurrency, f"{label} @{ports[name]}", 201, pids[name])
        ports[name] += count
        spent = {daemon: cpu_seconds(daemon_pids) - before[daemon]
                 for daemon, daemon_pids in ovn_pids.items()}
        report(run)
        if profiler.outs:
            print(summarize_profile(profiler.outs), flush=True)
        print(f"    {'':<34} OVN central cpu (within the rest of the machine) "
              f"{1000 * sum(spent.values()) / count:6.2f} ms/req: " + ", ".join(
                  f"{daemon} {1000 * cpu / count:.2f}" for daemon, cpu in spent.items()),
              flush=True)
        return run

    for name in servers:
        creates(name, 50, 8, f"{name}: warm-up")
    # the ovn server's processes each compare the two databases once soon after
    # start (a replica loaded, every port read): a start-up cost, not a create's
    time.sleep(max(0.0, FIRST_REPAIR_AFTER + 3 - (time.monotonic() - started)))
    for round_ in (1, 2):
        for name in servers:
            phase(f"API create rate, round {round_}: {name}")
            for concurrency in (1, 8):
                runs.setdefault((name, concurrency), []).append(creates(
                    name, args.creates, concurrency,
                    f"{name}: create c={concurrency}"))
    print("\n=== API port creates: creates/s (p50 ms) per round ===")
    for concurrency in (1, 8):
        line = [f"c={concurrency}"]
        for name in servers:
            line.append(f"{name}: " + ", ".join(f"{r.rate:.0f}/s ({r.p50:.1f} ms)"
                                                for r in runs[(name, concurrency)]))
        ratios = [ovn.rate / agent.rate for agent, ovn in zip(
            runs[("agent", concurrency)], runs[("ovn", concurrency)], strict=True)]
        line.append("ovn / agent " + ", ".join(f"{ratio:.2f}" for ratio in ratios))
        print("   ".join(line), flush=True)


# --- the whole ---------------------------------------------------------------------------

PHASES: dict[str, Callable[[argparse.Namespace, Path], None]] = {
    "up": port_up, "sync": sync_bench, "api": api_rates}


def bench(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    print(f"machine: {os.cpu_count()} CPUs; python {sys.version.split()[0]}; "
          f"{ovn_version()}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="neutrino-ovn-bench-"))
    try:
        for name in args.phases.split(","):
            (tmp / name).mkdir()
            PHASES[name](args, tmp / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


def ovn_version() -> str:
    done = subprocess.run(["ovn-northd", "--version"], capture_output=True, text=True)
    return (done.stdout.splitlines() or ["ovn-northd: ?"])[0]


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", type=int, default=200, help="ports timed to ACTIVE, each")
    parser.add_argument("--sync-ports", type=int, default=5000)
    parser.add_argument("--sync-delete", type=int, default=50,
                        help="Logical_Switch_Ports deleted before the repair")
    parser.add_argument("--creates", type=int, default=1000,
                        help="port creates per run of the API phase")
    parser.add_argument("--profile", type=Path, default=None,
                        help="the API phase: py-spy the server workers into DIR (slower)")
    parser.add_argument("--phases", default="up,sync,api",
                        help=f"comma list of {', '.join(PHASES)}")
    args = parser.parse_args()
    unknown = set(args.phases.split(",")) - set(PHASES)
    if unknown:
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    return args


if __name__ == "__main__":
    bench(_args())
