"""Metering benchmark: packets per second through a router namespace, with
no metering chains and with 50 metering rules.

    .venv/bin/python bench/metering_bench.py [--seconds 5] [--runs 2] [--size 64]

Root and iperf3 (Debian's ``iperf3``). Three namespaces it makes and removes:
a client (10.1.0.2) and a server (198.51.100.2) on either side of a router
namespace whose gateway device is ``qg-bench``, as an L3 agent's router.
iperf3 sends UDP datagrams of ``--size`` bytes as fast as it can from the
client to the server; the figure is what the server received per second.
The metering chains are written by ``neutrino.linux.metering`` as the L3
agent's metering extension writes them: 10 labels of 5 egress rules each,
49 that do not match and, last, one that counts everything, so that every
packet walks all 50 rules.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from neutrino.linux import metering  # noqa: E402
from tests.dataplane import run, sandbox  # noqa: E402

GATEWAY = "qg-bench"


def veth(a: str, a_dev: str, b: str, b_dev: str) -> None:
    run("ip", "link", "add", a_dev, "type", "veth", "peer", "name", b_dev, namespace=a)
    run("ip", "link", "set", b_dev, "netns", b, namespace=a)
    run("ip", "link", "set", a_dev, "up", namespace=a)
    run("ip", "link", "set", b_dev, "up", namespace=b)


def labels() -> list[metering.Label]:
    found = []
    for n in range(10):
        rules = [metering.Rule("egress", destination=f"10.{200 + n}.{k}.0/24")
                 for k in range(5)]
        if n == 9:
            rules[-1] = metering.Rule("egress", destination="0.0.0.0/0")
        found.append(metering.Label(f"{n:08d}-0000-4000-8000-000000000000", tuple(rules)))
    return found


def blast(client: str, seconds: int, size: int) -> float:
    done = run("iperf3", "-c", "198.51.100.2", "-u", "-b", "0", "-l", str(size), "-t",
               str(seconds), "-J", namespace=client, timeout=seconds + 30)
    result = json.loads(done.stdout)["end"]["sum"]
    received = result["packets"] - result["lost_packets"]
    return received / result["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    args = parser.parse_args()
    if shutil.which("iperf3") is None:
        sys.exit("needs iperf3 (Debian package iperf3)")
    with sandbox() as box:
        client, router, server = (box.namespace(n) for n in ("client", "router", "server"))
        veth(client, "eth0", router, "qr-bench")
        veth(router, GATEWAY, server, "eth0")
        run("ip", "addr", "add", "10.1.0.2/24", "dev", "eth0", namespace=client)
        run("ip", "addr", "add", "10.1.0.1/24", "dev", "qr-bench", namespace=router)
        run("ip", "addr", "add", "198.51.100.1/24", "dev", GATEWAY, namespace=router)
        run("ip", "addr", "add", "198.51.100.2/24", "dev", "eth0", namespace=server)
        run("ip", "route", "add", "default", "via", "10.1.0.1", namespace=client)
        run("ip", "route", "add", "default", "via", "198.51.100.1", namespace=server)
        run("sysctl", "-q", "-w", "net.ipv4.ip_forward=1", namespace=router)
        iperf = subprocess.Popen(["ip", "netns", "exec", server, "iperf3", "-s"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            run("sleep", "1")
            table = metering.MeterTable(router)
            figures: dict[str, list[float]] = {"no metering": [], "50 rules": []}
            for _ in range(args.runs):
                table.apply(metering.chains(GATEWAY, []))
                figures["no metering"].append(blast(client, args.seconds, args.size))
                table.apply(metering.chains(GATEWAY, labels()))
                figures["50 rules"].append(blast(client, args.seconds, args.size))
            counted = table.counters()[metering.label_chain(labels()[-1].id)]
        finally:
            iperf.terminate()
            iperf.wait()
    print(f"UDP {args.size}-byte datagrams through a router namespace, "
          f"{args.runs} x {args.seconds} s each:")
    base = statistics.median(figures["no metering"])
    for name, values in figures.items():
        median = statistics.median(values)
        print(f"  {name:12s} {median:12,.0f} packets/s received (median; runs: "
              f"{', '.join(f'{v:,.0f}' for v in values)}) {median / base:6.1%}")
    print(f"  the counting label saw {counted.packets:,} packets, {counted.bytes:,} bytes "
          "in its last run")


if __name__ == "__main__":
    main()
