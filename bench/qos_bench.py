"""QoS benchmark: how close the enforced rates are to the limits, and how long
a rule's change takes to reach every port.

    .venv/bin/python bench/qos_bench.py [--ports 100] [--seconds 5] [--burst 0.1]

Root, iperf3, Open vSwitch, RabbitMQ on 127.0.0.1:5672 (a vhost of its own,
removed at the end); everything runs in namespaces it makes and removes
(``tests/functional/emulated_hosts``): one server (SQLite, ML2 with the qos
extension driver, the qos plugin), a Linux bridge host and an Open vSwitch
host, each agent with ``extensions = qos``.

* accuracy: two instances on each host; a policy on one with a limit of 1,
  10 and 100 Mbit/s both ways, with a burst of ``--burst`` seconds' worth
  (0: the API's 0, Neutron's default of 0.8 s, which adds to what a short
  run measures); iperf3 over TCP for ``--seconds``; the rate received
  against the limit.
* update to enforcement: ``--ports`` ports bound to the Linux bridge host (taps
  as Nova plugs them, no instance behind), following their network's policy;
  the policy's limit changed through the API; for each port, the time from
  the API's answer until its tap's token bucket has the new rate (tc read
  every 20 ms). p50, p99 and the last.

Figures, not pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from neutrino.cmd.instance import Api, plug_changes  # noqa: E402
from neutrino.linux.ip import IpNetns  # noqa: E402
from neutrino.linux.names import tap_name  # noqa: E402
from tests.dataplane import run, sandbox, wait_until  # noqa: E402
from tests.functional.emulated_hosts import Deployment  # noqa: E402
from tests.functional.test_ovs_e2e import SERVER_EXTRA as OVS_EXTRA  # noqa: E402
from tests.functional.test_qos_e2e import mbits  # noqa: E402
from tests.harness import rabbit_vhost  # noqa: E402

SERVER_EXTRA = ("[DEFAULT]\nservice_plugins = qos\n" + OVS_EXTRA
                + "[quotas]\nquota_port = -1\nquota_network = -1\n")
AGENT = "[agent]\nextensions = qos\n"
RATES = (1_000, 10_000, 100_000)  # kbit/s


class Bench:
    def __init__(self, deployment: Deployment, seconds: int, burst: float):
        self.d = deployment
        self.api = deployment.api
        self.seconds = seconds
        self.burst = burst

    def policy(self, kbps: int) -> dict:
        resp = self.api.post("/v2.0/qos/policies", json={"policy": {"name": f"p{kbps}"}})
        assert resp.status_code == 201, resp.text
        made = resp.json()["policy"]
        for direction in ("egress", "ingress"):
            resp = self.api.post(f"/v2.0/qos/policies/{made['id']}/bandwidth_limit_rules",
                                 json={"bandwidth_limit_rule": {
                                     "max_kbps": kbps, "max_burst_kbps": int(kbps * self.burst),
                                     "direction": direction}})
            assert resp.status_code == 201, resp.text
        return made

    def instances(self, host: str) -> list[tuple[dict, str, str]]:
        net = self.api.network()
        self.api.subnet(net["id"], "10.50.0.0/24", enable_dhcp=False)
        found = []
        for _ in range(2):
            port = self.api.port(net["id"], port_security_enabled=False, security_groups=[])
            address = port["fixed_ips"][0]["ip_address"]
            ns = f"inst-{port['id'][:11]}"
            self.d.plug(host, port["id"])
            run("ip", "addr", "add", f"{address}/24", "dev", "eth0", namespace=ns)
            found.append((port, ns, address))
        for port, _, _ in found:
            wait_until(lambda p=port: self.api.show("ports", p["id"])["status"] == "ACTIVE",
                       60, "ACTIVE")
        return found

    def applied(self, host: str, kbps: int) -> bool:
        """Whether the host enforces ``kbps`` (its last limit) both ways."""
        if host == "ovs":
            ovs = self.d.hosts[host]["ovs"]
            return (f"rate={kbps} " in ovs.ofctl("-O", "OpenFlow13", "dump-meters", "br-int")
                    and "meter:" in ovs.ofctl("-O", "OpenFlow13", "dump-flows", "br-int")
                    and f'"{kbps * 1000}"' in ovs.vsctl("list", "queue"))
        shown = run("tc", "-j", "qdisc", "show", namespace=self.d.hosts[host]["namespace"])
        buckets = [q for q in json.loads(shown.stdout or "[]") if q.get("kind") == "tbf"]
        return len([q for q in buckets if q["options"]["rate"] == kbps * 125]) == 2

    def accuracy(self, host: str) -> None:
        (a, ns_a, ip_a), (_, ns_b, ip_b) = self.instances(host)
        for kbps in RATES:
            made = self.policy(kbps)
            self.api.put(f"/v2.0/ports/{a['id']}", json={"port": {"qos_policy_id": made["id"]}})
            wait_until(lambda k=kbps: self.applied(host, k), 30, f"the limit of {kbps} kbit/s")
            sent = mbits(ns_a, ns_b, ip_b, self.seconds)
            got = mbits(ns_b, ns_a, ip_a, self.seconds)
            limit = kbps / 1000
            print(f"  {host} {limit:6.0f} Mbit/s: egress {sent:7.2f} ({sent / limit:5.1%}), "
                  f"ingress {got:7.2f} ({got / limit:5.1%})", flush=True)

    def update_to_enforcement(self, ports: int) -> None:
        host = self.d.hosts["lb"]
        client = Api(self.d.server.url, None)
        made = self.policy(5_000)
        net = self.api.network(qos_policy_id=made["id"])
        ids = []
        with IpNetns(host["namespace"]) as outside:
            for _ in range(ports):
                port = self.api.port(net["id"], port_security_enabled=False,
                                     security_groups=[])
                client.call("PUT", f"/v2.0/ports/{port['id']}", {
                    "port": plug_changes(port, host["host"], "nova")})
                outside.add_veth(tap_name(port["id"]), f"vmt-{port['id'][:11]}")
                for name in (tap_name(port["id"]), f"vmt-{port['id'][:11]}"):
                    outside.set(name, up=True)
                ids.append(port["id"])
        taps = {tap_name(i) for i in ids}

        def rates() -> dict[str, int]:
            shown = json.loads(run("tc", "-j", "qdisc", "show",
                                   namespace=host["namespace"]).stdout or "[]")
            return {q["dev"]: q["options"]["rate"] * 8 // 1000 for q in shown
                    if q.get("kind") == "tbf" and q.get("dev") in taps}

        started = time.perf_counter()
        wait_until(lambda: len([r for r in rates().values() if r == 5_000]) == ports, 300,
                   "every port limited")
        print(f"  {ports} ports wired and limited in {time.perf_counter() - started:.1f} s")
        rules = self.api.get(f"/v2.0/qos/policies/{made['id']}").json()["policy"]["rules"]
        rule = next(r for r in rules if r["direction"] == "ingress")
        times: dict[str, float] = {}
        resp = self.api.put(f"/v2.0/qos/policies/{made['id']}/bandwidth_limit_rules/"
                            f"{rule['id']}", json={"bandwidth_limit_rule": {"max_kbps": 7_000}})
        assert resp.status_code == 200, resp.text
        answered = time.perf_counter()
        while len(times) < ports and time.perf_counter() - answered < 300:
            now = time.perf_counter()
            for tap, rate in rates().items():
                if rate == 7_000 and tap not in times:
                    times[tap] = now - answered
            time.sleep(0.02)
        values = sorted(times.values())
        if len(values) < ports:
            raise SystemExit(f"only {len(values)} of {ports} ports changed")
        print(f"  rule update to enforcement over {ports} ports: p50 "
              f"{statistics.median(values) * 1000:.0f} ms, p99 "
              f"{values[int(len(values) * 0.99) - 1] * 1000:.0f} ms, last "
              f"{values[-1] * 1000:.0f} ms")


def bench(args: argparse.Namespace) -> None:
    if os.geteuid() != 0:
        raise SystemExit("qos_bench needs root (namespaces, tc, Open vSwitch)")
    if shutil.which("iperf3") is None:
        raise SystemExit("qos_bench needs iperf3 (Debian package iperf3)")
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="neutrino-qos-bench-"))
    try:
        with rabbit_vhost() as url, sandbox() as box:
            deployment = Deployment(box, tmp, url, SERVER_EXTRA,
                                    extension_drivers="port_security,qos")
            try:
                deployment.add_host("lb", 1)
                deployment.start_l2_agent("lb", firewall="noop", text=AGENT)
                deployment.add_host("ovs", 2)
                deployment.add_ovs("ovs")
                deployment.start_ovs_agent("ovs", text=AGENT)
                for name, kind in (("lb", "Linux bridge agent"), ("ovs", "Open vSwitch agent")):
                    wait_until(lambda n=name, k=kind: deployment.agent_alive(n, k), 60, kind)
                bench_ = Bench(deployment, args.seconds, args.burst)
                print("rate accuracy (received over TCP, against the limit):")
                bench_.accuracy("lb")
                bench_.accuracy("ovs")
                print("rule update to enforcement (Linux bridge host):")
                bench_.update_to_enforcement(args.ports)
            finally:
                deployment.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", type=int, default=100)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--burst", type=float, default=0.1)
    return parser.parse_args()


if __name__ == "__main__":
    bench(_args())
