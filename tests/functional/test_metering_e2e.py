"""Metering end to end: the L3 agent's metering extension counts a label's
traffic through a real router namespace, leaves out excluded traffic, serves
the counts to Prometheus, reports them as ``l3.meter`` on the bus, and keeps
them across a kill -9 of the agent. Root only (namespaces)."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import uuid
from collections.abc import Iterator

import pytest

from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts.metering import EVENT, TOPIC
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport
from tests.dataplane import pings, run, sandbox, skip_unless_root, wait_until
from tests.functional.emulated_hosts import PHYSNET, Deployment
from tests.functional.test_l3_e2e import (
    EXTERNAL_CIDR,
    UPSTREAM,
    Lab,
    add_interface,
    instance,
    router_with_gateway,
    tenant_subnet,
)

pytestmark = pytest.mark.slow

OTHER = "203.0.113.2"  # a second address of the external host
PROMETHEUS = "127.0.0.1:9190"
METERING = ("extensions = port_forwarding,metering\n"
            f"[metering]\nmeasure_interval = 1\nreport_interval = 2\n"
            f"prometheus_bind = {PROMETHEUS}\n")
LABELS = "/v2.0/metering/metering-labels"
RULES = "/v2.0/metering/metering-label-rules"
ICMP = 28  # IPv4 and ICMP headers: a ping of size S is S + 28 bytes on the wire


class Listener:
    """A listener on the notifications topic, in a thread of its own."""

    rpc_version = "1.0"

    def __init__(self, url: str):
        self.got: list[dict] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(url,), daemon=True)
        self._thread.start()
        assert self._ready.wait(30), "the notification listener did not start"

    async def info(self, context: dict, publisher_id: str, event_type: str, payload: dict,
                   metadata: dict | None = None) -> None:
        self.got.append({"publisher_id": publisher_id, "event_type": event_type, **payload})

    def _run(self, url: str) -> None:
        asyncio.set_event_loop(self._loop)
        self.bus = Bus(get_transport(url), timeout=5)

        async def start() -> None:
            await self.bus.start()
            await RpcServer(self.bus, TOPIC, None, [self]).start()
            self._ready.set()
        self._loop.run_until_complete(start())
        self._loop.run_forever()

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.bus.close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def sums(self, label_id: str) -> tuple[int, int]:
        mine = [n for n in self.got if n["label_id"] == label_id]
        return sum(n["pkts"] for n in mine), sum(n["bytes"] for n in mine)


@pytest.fixture
def lab(tmp_path, rabbit_url) -> Iterator[Lab]:
    skip_unless_root("ip", "socat", "ping", "iptables")
    with sandbox() as box:
        d = Deployment(box, tmp_path, rabbit_url, server_extra=(
            "[DEFAULT]\nservice_plugins = router,port_forwarding,metering\n"))
        try:
            host = d.add_host("h1", 1)
            d.start_l2_agent("h1", firewall="noop")
            l3 = d.start_l3_agent("h1", text=METERING)
            external = d.add_external_host(f"{UPSTREAM}/24")
            run("ip", "addr", "add", f"{OTHER}/24", "dev", "eth0", namespace=external)
            ext_net = d.api.network(**{"router:external": True,
                                       "provider:network_type": "flat",
                                       "provider:physical_network": PHYSNET})
            d.api.subnet(ext_net["id"], EXTERNAL_CIDR, gateway_ip=UPSTREAM, enable_dhcp=False,
                         allocation_pools=[{"start": "203.0.113.10", "end": "203.0.113.200"}])
            for agent_type in ("Linux bridge agent", "L3 agent"):
                wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, f"the {agent_type}")
            yield Lab(d, host, external, ext_net, l3)
        finally:
            d.close()


def label(lab: Lab, *rules: dict) -> str:
    made = lab.api.post(LABELS, json={"metering_label": {"name": uuid.uuid4().hex[:8]}})
    assert made.status_code == 201, made.text
    label_id = made.json()["metering_label"]["id"]
    for rule in rules:
        resp = lab.api.post(RULES, json={"metering_label_rule": {
            "metering_label_id": label_id, **rule}})
        assert resp.status_code == 201, resp.text
    return label_id




def scrape(lab: Lab) -> dict[tuple[str, str, str], int]:
    done = subprocess.run(["ip", "netns", "exec", lab.host, "socat", "-T", "5", "-",
                           f"TCP:{PROMETHEUS}"], input="GET /metrics HTTP/1.0\r\n\r\n",
                          capture_output=True, text=True, timeout=10)
    found = {}
    for line in done.stdout.splitlines():
        if not line.startswith("neutrino_metering_label_"):
            continue
        name, _, rest = line.partition("{")
        labels, _, value = rest.rpartition("} ")
        attrs = dict(part.split("=", 1) for part in labels.split(","))
        found[name, attrs["label_id"].strip('"'), attrs["router_id"].strip('"')] = int(value)
    return found


def counts(lab: Lab, label_id: str, router_id: str) -> tuple[int, int] | None:
    found = scrape(lab)
    key = ("neutrino_metering_label_packets_total", label_id, router_id)
    if key not in found:
        return None
    return found[key], found["neutrino_metering_label_bytes_total", label_id, router_id]


def ping(namespace: str, address: str, count: int, size: int) -> None:
    done = run("ping", "-c", str(count), "-i", "0.2", "-s", str(size), "-W", "2", address,
               namespace=namespace, check=False, timeout=60)
    assert f"{count} received" in done.stdout, done.stdout


def near(got: tuple[int, int] | None, packets: int, size: int) -> bool:
    """``packets`` of ``size`` bytes counted, give or take two packets of others."""
    return got is not None and packets <= got[0] <= packets + 2 and \
        size <= got[1] <= size + 2 * 1500


def test_labels_count_through_the_router(lab: Lab, rabbit_url: str):
    router = router_with_gateway(lab)
    net, subnet = tenant_subnet(lab, "10.71.0.0/24")
    add_interface(lab, router, subnet)
    _, inst = instance(lab, net, subnet, "a")
    wait_until(lambda: pings(inst, UPSTREAM), 30, "the instance to reach the upstream")
    listener = Listener(rabbit_url)
    try:
        out = label(lab, {"direction": "egress", "remote_ip_prefix": "0.0.0.0/0"})
        back = label(lab, {"direction": "ingress", "source_ip_prefix": EXTERNAL_CIDR})
        # all to the external network but the upstream's own address
        but = label(lab, {"direction": "egress", "destination_ip_prefix": EXTERNAL_CIDR},
                    {"direction": "egress", "destination_ip_prefix": f"{UPSTREAM}/32",
                     "excluded": True})
        rid = router["id"]
        wait_until(lambda: all(counts(lab, x, rid) is not None for x in (out, back, but)),
                   30, "the labels' counters on the router")
        start = {x: counts(lab, x, rid) for x in (out, back, but)}
        assert all(got is not None and got[0] <= 2 for got in start.values()), start

        ping(inst, UPSTREAM, 10, 1000)
        ping(inst, OTHER, 5, 500)
        sent = 10 * (1000 + ICMP) + 5 * (500 + ICMP)
        wait_until(lambda: near(counts(lab, out, rid), 15, sent), 20, "egress counted")
        assert near(counts(lab, back, rid), 15, sent)
        assert near(counts(lab, but, rid), 5, 5 * (500 + ICMP))  # the excluded rule subtracts

        # the notifications add up to the counters, once they are reported
        wait_until(lambda: listener.sums(out) == counts(lab, out, rid), 20,
                   "l3.meter notifications adding up to the counters")
        note = next(n for n in listener.got if n["label_id"] == out)
        assert note["event_type"] == EVENT and note["publisher_id"].startswith("metering.")
        assert {"label_id", "tenant_id", "project_id", "pkts", "bytes", "time",
                "first_update", "last_update", "host"} <= set(note)
        assert note["tenant_id"] == router["project_id"]

        # kill -9 and restart: iptables kept the counters, the agent goes on from
        # them and reports only what it had not reported
        before = counts(lab, out, rid)
        lab.l3.kill()
        lab.l3.wait()
        ping(inst, OTHER, 4, 200)  # counted while no agent runs
        lab.l3 = lab.d.start_l3_agent("h1", text=METERING)
        wait_until(lambda: counts(lab, out, rid) is not None, 30, "the restarted agent")
        assert before is not None
        after = counts(lab, out, rid)
        assert near(after, before[0] + 4, before[1] + 4 * (200 + ICMP)), (before, after)
        ping(inst, OTHER, 3, 100)
        wait_until(lambda: near(counts(lab, out, rid), before[0] + 7,
                                before[1] + 4 * (200 + ICMP) + 3 * (100 + ICMP)), 20,
                   "counting after the restart")
        wait_until(lambda: listener.sums(out) == counts(lab, out, rid), 20,
                   "notifications adding up after the restart (nothing lost or repeated)")
        # a resync of an unchanged router rewrote nothing: the label chains were not reset
        saved = run("iptables-save", "-c", "-t", "filter", namespace=f"qrouter-{rid}").stdout
        assert "neutrino-meter-FWD" in saved
    finally:
        listener.close()
