"""VPN benchmark: two sites joined by IPsec on a host emulated in a namespace.

    .venv/bin/python bench/vpn_bench.py [--runs 10] [--seconds 5]

Root, strongSwan (Debian's charon-systemd, strongswan-swanctl,
libcharon-extra-plugins), iperf3, RabbitMQ on 127.0.0.1:5672 (a vhost of its
own, removed at the end). Everything runs in namespaces it makes and removes,
as ``tests/functional/test_vpn_e2e.py`` builds them: one server (SQLite), one
host with its Linux bridge agent and its L3 agent running the ``vpnaas``
extension, two routers on one external network with an instance behind
each. It prints:

* connect: for ``--runs`` runs, the time from the API calls making both site
  connections until the first ping from one instance to the other crosses;
* restart: the L3 agent killed (-9) and started again with the tunnel up:
  whether pings went on meanwhile, and its first full sync;
* throughput: iperf3 (TCP, ``--seconds``) from one instance to the other
  across the tunnel, and along the same routers without it (a route to the
  other site's subnet through its gateway).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.dataplane import pings, run, sandbox, wait_until  # noqa: E402
from tests.functional.emulated_hosts import PHYSNET, Deployment  # noqa: E402
from tests.functional.test_l3_e2e import LB, Lab, address  # noqa: E402
from tests.functional.test_vpn_e2e import EXTENSIONS, L3, VPN, connect, made, shown, site  # noqa: E402,E501
from tests.harness import rabbit_vhost  # noqa: E402

AGENT_LOG = "h1-neutrino-l3-agent"


def crosses(left: dict, right: dict) -> bool:
    return pings(left["inst"], address(right["port"]), wait=0.2)


def connect_times(lab: Lab, left: dict, right: dict, runs: int) -> list[dict]:
    ike, ipsec = made(lab, "ikepolicies"), made(lab, "ipsecpolicies")
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        made_now = [connect(lab, left, right, ike, ipsec), connect(lab, right, left, ike, ipsec)]
        wait_until(lambda: crosses(left, right), 60, "a ping across the tunnel")
        times.append(time.perf_counter() - began)
        if len(times) < runs:
            for connection in made_now:
                lab.api.delete(f"{VPN}/ipsec-site-connections/{connection['id']}")
            wait_until(lambda: not crosses(left, right), 60, "the tunnel to go")
    print(f"connect        p50 {statistics.median(times):.2f} s   max {max(times):.2f} s   "
          f"({len(times)} runs)", flush=True)
    return made_now


def restart(lab: Lab, left: dict, right: dict) -> None:
    pinger = subprocess.Popen(["ip", "netns", "exec", left["inst"], "ping", "-i", "0.2",
                               "-W", "1", address(right["port"])],
                              stdout=subprocess.PIPE, text=True)
    try:
        lab.l3.kill()
        lab.l3.wait()
        began = time.perf_counter()
        lab.l3 = lab.d.start_l3_agent("h1", text=EXTENSIONS)
        wait_until(lambda: "full sync done in" in lab.d.log(AGENT_LOG), 120, "the full sync")
        took = float(re.findall(r"full sync done in ([0-9.]+) s", lab.d.log(AGENT_LOG))[0])
        time.sleep(2)
    finally:
        pinger.terminate()
        out, _ = pinger.communicate(timeout=5)
    sent = [int(part.split("=")[1]) for line in out.splitlines()
            for part in line.split() if part.startswith("icmp_seq=")]
    replies = sum(1 for line in out.splitlines() if "bytes from" in line)
    print(f"restart        full sync done in {took:.2f} s "
          f"({time.perf_counter() - began:.2f} s after the start); pings every 0.2 s "
          f"meanwhile: {replies} answered of {max(sent, default=0)}", flush=True)


def iperf(left: dict, right: dict, seconds: int) -> float:
    """Megabits a second received, left's instance to right's."""
    server = subprocess.Popen(["ip", "netns", "exec", right["inst"], "iperf3", "-s", "-1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        done = run("ip", "netns", "exec", left["inst"], "iperf3", "-c",
                   address(right["port"]), "-t", str(seconds), "-J")
        report = json.loads(done.stdout)
        return report["end"]["sum_received"]["bits_per_second"] / 1e6
    finally:
        server.kill()
        server.wait()


def throughput(lab: Lab, left: dict, right: dict, connections: list[dict],
               seconds: int) -> None:
    tunnel = iperf(left, right, seconds)
    for connection in connections:
        lab.api.delete(f"{VPN}/ipsec-site-connections/{connection['id']}")
    wait_until(lambda: not crosses(left, right), 60, "the tunnel to go")
    for here, there in ((left, right), (right, left)):
        gateway = shown(lab, "vpnservices", there["service"]["id"])["external_v4_ip"]
        resp = lab.api.put(f"/v2.0/routers/{here['router']['id']}", json={"router": {
            "routes": [{"destination": there["subnet"]["cidr"], "nexthop": gateway}]}})
        assert resp.status_code == 200, resp.text
    wait_until(lambda: crosses(left, right), 30, "the routed path")
    plain = iperf(left, right, seconds)
    print(f"throughput     across the tunnel {tunnel:.0f} Mbit/s; the same routers without "
          f"it {plain:.0f} Mbit/s ({seconds} s each)", flush=True)


def bench(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="neutrino-vpn-bench-"))
    try:
        with rabbit_vhost() as url, sandbox() as box:
            d = Deployment(box, tmp, url, server_extra=(
                "[DEFAULT]\nservice_plugins = router,vpnaas\n"))
            try:
                host = d.add_host("h1", 1)
                d.start_l2_agent("h1", firewall="noop")
                l3 = d.start_l3_agent("h1", text=EXTENSIONS)
                ext_net = d.api.network(**{"router:external": True,
                                           "provider:network_type": "flat",
                                           "provider:physical_network": PHYSNET})
                d.api.subnet(ext_net["id"], "203.0.113.0/24", gateway_ip="203.0.113.1",
                             enable_dhcp=False)
                for agent_type in (LB, L3):
                    wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, agent_type)
                lab = Lab(d, host, "", ext_net, l3)
                left, right = site(lab, "left", "10.95.0.0/24"), site(lab, "right",
                                                                      "10.96.0.0/24")
                connections = connect_times(lab, left, right, args.runs)
                restart(lab, left, right)
                throughput(lab, left, right, connections, args.seconds)
            finally:
                d.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=5)
    return parser.parse_args()


if __name__ == "__main__":
    bench(_args())
