"""Trunk benchmark: a trunk of many subports set up and torn down on an Open
vSwitch host (userspace datapath).

    .venv/bin/python bench/trunk_bench.py [--subports 50] [--repeat 3]

Root, Open vSwitch, RabbitMQ on 127.0.0.1:5672 (a vhost of its own, removed at
the end); everything runs in namespaces it makes and removes
(``tests/functional/emulated_hosts``): one server (SQLite, ML2 with
openvswitch, the trunk plugin) and host ``h1`` with OVS and its agent. The
subports are on ``--subports`` VXLAN networks of their own (VLANs 101...).
Each run times, from the client's side:

* create: the API's trunk create with every subport;
* up: the parent plugged as Nova plugs it (bound, its tap on the trunk
  bridge; no instance namespaces behind it, unlike ``neutrino-instance``)
  until the trunk is ACTIVE and every subport ACTIVE (the agent's patches,
  the subports' bindings, their wiring);
* down: the parent unplugged until the trunk bridge and br-int's trunk
  patches are gone and every subport DOWN;
* delete: the API's trunk delete;
* live add / remove: with the parent plugged and a trunk of no subports
  ACTIVE, ``add_subports`` of all of them until the trunk and they are
  ACTIVE, then ``remove_subports`` of all until their patches are gone.

Figures, not pass/fail; the median and the worst of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from neutrino.cmd.instance import Api, Ovs, plug_changes, unplug_changes  # noqa: E402
from neutrino.linux.ip import IpNetns  # noqa: E402
from neutrino.linux.names import tap_name  # noqa: E402
from tests.dataplane import sandbox, wait_until  # noqa: E402
from tests.functional.emulated_hosts import Deployment  # noqa: E402
from tests.harness import rabbit_vhost  # noqa: E402
from tests.ovs import OvsHost  # noqa: E402

SERVER_EXTRA = ("[DEFAULT]\nservice_plugins = trunk\n"
                "[ml2]\nmechanism_drivers = openvswitch,l2population\n"
                "[quotas]\nquota_port = -1\nquota_network = -1\n")
LIMIT = 300.0


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


class Bench:
    def __init__(self, deployment: Deployment, subports: int):
        self.deployment = deployment
        self.api = deployment.api
        self.ovs: OvsHost = deployment.hosts["h1"]["ovs"]
        self.client = Api(deployment.server.url, None)
        self.host = deployment.hosts["h1"]
        self.networks = [self.api.network()["id"] for _ in range(subports)]

    def until(self, check: Callable[[], bool], what: str) -> None:
        if not wait_until(check, LIMIT, what):
            log = self.deployment.log("h1-neutrino-openvswitch-agent")[-3000:]
            raise SystemExit(f"timed out: {what}\n{log}")

    def subports(self) -> list[dict]:
        ports = [self.api.port(net) for net in self.networks]
        return [{"port_id": p["id"], "segmentation_type": "vlan", "segmentation_id": 101 + i}
                for i, p in enumerate(ports)]

    def statuses(self, port_ids: list[str]) -> set[str]:
        """The statuses of these ports (all of them found, or a "missing")."""
        found = self.api.get("/v2.0/ports", params={"id": port_ids, "fields": ["id", "status"]}
                             ).json()["ports"]
        return {p["status"] for p in found} | ({"missing"} if len(found) < len(port_ids)
                                                else set())

    def trunk_status(self, trunk_id: str) -> str:
        return self.api.show("trunks", trunk_id)["status"]

    def plugged(self, port_id: str) -> None:
        """What Nova does: the port bound, its tap on the trunk bridge (a veth
        whose other end stays in the host: no instance behind it to make)."""
        port = self.client.call("GET", f"/v2.0/ports/{port_id}")["port"]
        port = self.client.call("PUT", f"/v2.0/ports/{port_id}", {
            "port": plug_changes(port, self.host["host"], "nova")})["port"]
        with IpNetns(self.host["namespace"]) as outside:
            outside.add_veth(tap_name(port_id), f"vmt-{port_id[:11]}")
            for name in (tap_name(port_id), f"vmt-{port_id[:11]}"):
                outside.set(name, up=True)
        Ovs(self.ovs.db).attach(port)

    def unplugged(self, port_id: str) -> None:
        Ovs(self.ovs.db).detach(port_id)
        with IpNetns(self.host["namespace"]) as outside:
            outside.delete(tap_name(port_id))
        port = self.client.call("GET", f"/v2.0/ports/{port_id}")["port"]
        self.client.call("PUT", f"/v2.0/ports/{port_id}", {"port": unplug_changes(port)})

    def patches(self) -> list[str]:
        return [p for p in self.ovs.vsctl("list-ports", "br-int").split()
                if p.startswith(("tpi-", "spi-"))]

    def one_run(self) -> dict[str, float]:
        figures = {}
        subports = self.subports()
        ids = [s["port_id"] for s in subports]
        parent = self.api.port(self.api.network()["id"])
        trunk: dict = {}
        figures["create"] = timed(lambda: trunk.update(self.api.create(
            "trunks", port_id=parent["id"], sub_ports=subports)))
        trunk_id = trunk["id"]

        def up() -> None:
            self.plugged(parent["id"])
            self.until(lambda: self.trunk_status(trunk_id) == "ACTIVE"
                       and self.statuses(ids) == {"ACTIVE"}, "the trunk and subports ACTIVE")

        def down() -> None:
            self.unplugged(parent["id"])
            self.until(lambda: not self.patches()
                       and f"tbr-{trunk_id[:11]}" not in self.ovs.vsctl("list-br").split()
                       and self.statuses(ids) == {"DOWN"}, "the trunk bridge gone")

        figures["up"] = timed(up)
        assert len(self.patches()) == len(ids) + 1, self.patches()
        figures["down"] = timed(down)
        figures["delete"] = timed(lambda: self.api.delete(f"/v2.0/trunks/{trunk_id}"))

        # the same subports on a live trunk
        trunk = self.api.create("trunks", port_id=parent["id"], sub_ports=[])
        trunk_id = trunk["id"]
        self.plugged(parent["id"])
        self.until(lambda: self.trunk_status(trunk_id) == "ACTIVE", "the empty trunk ACTIVE")

        def add() -> None:
            done = self.api.put(f"/v2.0/trunks/{trunk_id}/add_subports",
                                json={"sub_ports": subports})
            assert done.status_code == 200, done.text
            self.until(lambda: self.trunk_status(trunk_id) == "ACTIVE"
                       and self.statuses(ids) == {"ACTIVE"}, "the added subports ACTIVE")

        def remove() -> None:
            done = self.api.put(f"/v2.0/trunks/{trunk_id}/remove_subports",
                                json={"sub_ports": [{"port_id": i} for i in ids]})
            assert done.status_code == 200, done.text
            self.until(lambda: [p for p in self.patches() if p.startswith("spi-")] == [],
                       "the removed subports' patches gone")

        figures["live add"] = timed(add)
        figures["live remove"] = timed(remove)
        self.unplugged(parent["id"])
        self.until(lambda: not self.patches(), "the trunk bridge gone")
        self.api.delete(f"/v2.0/trunks/{trunk_id}")
        for port_id in [*ids, parent["id"]]:
            self.api.delete(f"/v2.0/ports/{port_id}")
        return figures


def bench(args: argparse.Namespace) -> None:
    if os.geteuid() != 0:
        raise SystemExit("trunk_bench needs root (namespaces, Open vSwitch)")
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="neutrino-trunk-bench-"))
    try:
        with rabbit_vhost() as url, sandbox() as box:
            deployment = Deployment(box, tmp, url, SERVER_EXTRA)
            try:
                deployment.add_host("h1", 1)
                deployment.add_ovs("h1")
                deployment.start_ovs_agent("h1")
                wait_until(lambda: deployment.agent_alive("h1", "Open vSwitch agent"), 60,
                           "the OVS agent")
                bench_ = Bench(deployment, args.subports)
                runs = []
                for run in range(1, args.repeat + 1):
                    figures = bench_.one_run()
                    runs.append(figures)
                    print(f"run {run}: " + ", ".join(f"{k} {v:.2f} s"
                                                      for k, v in figures.items()), flush=True)
                print(f"\na trunk of {args.subports} subports, {args.repeat} runs "
                      "(median / worst):")
                for key in runs[0]:
                    values = [r[key] for r in runs]
                    print(f"  {key:12} {statistics.median(values):6.2f} s / "
                          f"{max(values):6.2f} s")
            finally:
                deployment.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subports", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    return parser.parse_args()


if __name__ == "__main__":
    bench(_args())
