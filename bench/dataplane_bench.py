"""Dataplane benchmark: the Linux bridge agent on a host emulated in a namespace.

    .venv/bin/python bench/dataplane_bench.py [--ports 100] [--resync-ports 200]

Root, RabbitMQ on 127.0.0.1:5672 (a vhost of its own, removed at the end).
Everything runs in namespaces it makes and removes (``tests/functional/
emulated_hosts``): one server (SQLite), one host with its L2 agent (iptables
firewall, l2population). It prints:

* port up: for each of ``--ports`` ports in turn, the time from the API's port
  create, through the plug (binding, namespace and veth, as
  ``neutrino-instance plug`` does, in this process) until the API shows the
  port ACTIVE; p50/p99/max;
* resync: the agent killed (-9) and started again with ``--resync-ports``
  ports plugged, the time of its first full sync (its own log line) and from
  its start until then;
* security group: with every port in the default group, the time from the API
  call that adds an ICMP rule until the rule is in the host's iptables for
  every port.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from neutrino.cmd.instance import Api, plug  # noqa: E402
from tests.dataplane import run, sandbox, wait_until  # noqa: E402
from tests.functional.emulated_hosts import Deployment  # noqa: E402
from tests.harness import rabbit_vhost  # noqa: E402

LB = "Linux bridge agent"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def status(deployment: Deployment, port_id: str) -> str:
    return deployment.api.show("ports", port_id)["status"]


def port_up_times(deployment: Deployment, api: Api, net_id: str, count: int) -> list[str]:
    times, ports = [], []
    host = deployment.hosts["h1"]
    for _ in range(count):
        began = time.perf_counter()
        port = deployment.api.port(net_id)
        deployment.box.adopt(f"inst-{port['id'][:11]}")
        plug(api, port["id"], host["host"], host["namespace"], dhcp=False, timeout=1)
        while status(deployment, port["id"]) != "ACTIVE":
            time.sleep(0.01)
        times.append(time.perf_counter() - began)
        ports.append(port["id"])
    print(f"port up      {count} ports one after another: p50 {percentile(times, 50):.3f} s"
          f"   p99 {percentile(times, 99):.3f} s   max {max(times):.3f} s   "
          f"mean {statistics.mean(times):.3f} s")
    return ports


def resync(deployment: Deployment, agent, firewall: str) -> None:
    agent.send_signal(signal.SIGKILL)
    agent.wait()
    log = deployment.tmp / "h1-neutrino-linuxbridge-agent.log"
    began = time.perf_counter()
    deployment.start_l2_agent("h1", firewall=firewall)
    done = wait_until(lambda: re.search(r"full sync done in ([0-9.]+) s", log.read_text()),
                      300, "the full sync after the restart")
    elapsed = time.perf_counter() - began
    print(f"resync       {len(deployment.api.get('/v2.0/ports').json()['ports'])} ports: "
          f"full sync {float(done.group(1)):.3f} s; from the agent's start {elapsed:.3f} s "
          "(process start, connecting and registering included)")


def rule_change(deployment: Deployment, group_id: str, count: int) -> None:
    namespace = deployment.hosts["h1"]["namespace"]

    def icmp_rules() -> int:
        saved = run("iptables-save", "-t", "filter", namespace=namespace).stdout
        return sum(1 for line in saved.splitlines() if " -p icmp" in line and "-i" in line)

    before = icmp_rules()
    began = time.perf_counter()
    made = deployment.api.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": group_id, "direction": "ingress", "protocol": "icmp"}})
    assert made.status_code == 201, made.text
    wait_until(lambda: icmp_rules() >= before + count, 120, "the ICMP rule on every port")
    print(f"sg rule      an ICMP rule on a group of {count} ports in the host's iptables "
          f"after {time.perf_counter() - began:.3f} s")


def bench(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="neutrino-dataplane-bench-"))
    try:
        with rabbit_vhost() as url, sandbox() as box:
            deployment = Deployment(box, tmp, url)
            try:
                deployment.add_host("h1", 1)
                agent = deployment.start_l2_agent("h1", firewall=args.firewall)
                wait_until(lambda: deployment.agent_alive("h1", LB), 30, "the agent")
                net = deployment.api.network()
                deployment.api.subnet(net["id"], "10.0.0.0/20")
                api = Api(deployment.server.url, None)
                ports = port_up_times(deployment, api, net["id"], args.ports)
                more = max(0, args.resync_ports - len(ports))
                ports += port_up_times(deployment, api, net["id"], more) if more else []
                resync(deployment, agent, args.firewall)
                if args.firewall != "noop":
                    group = deployment.api.show("ports", ports[0])["security_groups"][0]
                    rule_change(deployment, group, len(ports))
            finally:
                deployment.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", type=int, default=100)
    parser.add_argument("--resync-ports", type=int, default=200)
    parser.add_argument("--firewall", default="iptables", help="the agent's firewall_driver")
    return parser.parse_args()


if __name__ == "__main__":
    bench(_args())
