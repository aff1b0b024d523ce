"""The L3 agent's metering extension on a fake host: sync data to chains,
counters read and reported as l3.meter, Prometheus text, and what a restart
(a new extension on the same host and state) reports."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from neutrino.agents.extensions.api import AgentHandles
from neutrino.agents.extensions.metering import MeteringExtension, wanted_chains
from neutrino.agents.l3 import L3Agent
from neutrino.linux import metering
from neutrino.metrics import parse_bind_address
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts.metering import TOPIC
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport
from tests.fakes.agent_conf import agent_conf
from tests.unit.test_linux_metering import FakeFilter

ROUTER = "11111111-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
GW_PORT = "22222222-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
LABEL = "33333333-cccc-4ccc-8ccc-cccccccccccc"
GW = f"qg-{GW_PORT[:11]}"


def sync_data(*rules: dict) -> dict:
    return {"id": ROUTER, "gw_port": {"id": GW_PORT}, "_metering_labels": [
        {"id": LABEL, "name": "out", "shared": False, "project_id": "p1",
         "rules": list(rules)}]}


EGRESS = {"direction": "egress", "excluded": False, "remote_ip_prefix": "0.0.0.0/0",
          "source_ip_prefix": None, "destination_ip_prefix": None}


class Listener:
    rpc_version = "1.0"

    def __init__(self) -> None:
        self.got: list[dict] = []

    async def info(self, context, publisher_id, event_type, payload, metadata=None) -> None:
        self.got.append(payload)


def test_wanted_chains_from_sync_data():
    chains = wanted_chains(sync_data(EGRESS, {**EGRESS, "remote_ip_prefix": "2001:db8::/64"}))
    assert chains[metering.rules_chain(LABEL)] == [
        f"-A {metering.rules_chain(LABEL)} -o {GW} -j {metering.label_chain(LABEL)}"]
    assert wanted_chains({**sync_data(EGRESS), "gw_port": None}) == {metering.TOP: []}


@pytest.mark.parametrize("text,ok", [("", True), ("127.0.0.1:9190", True), ("[::1]:9", True),
                                     ("9190", False), ("host:0", False), ("h:x", False)])
def test_parse_bind(text, ok):
    if ok:
        assert parse_bind_address(text) == text
    else:
        with pytest.raises(ValueError):
            parse_bind_address(text)


def test_counts_reported_once_across_a_restart(tmp_path):
    conf = agent_conf(tmp_path, L3Agent, "[metering]\nreport_interval = 1\n")
    host = FakeFilter()

    async def scenario() -> None:
        bus = Bus(get_transport(f"memory://{uuid.uuid4().hex}"), timeout=5)
        await bus.start()
        listener = Listener()
        await RpcServer(bus, TOPIC, None, [listener]).start()

        async def agent() -> MeteringExtension:
            extension = MeteringExtension(lambda ns: metering.MeterTable(ns, runner=host))
            extension.initialize(AgentHandles(conf=conf, bus=bus, host="h1",
                                              agent_type="L3 agent", context={},
                                              mark_dirty=lambda *a: None,
                                              request_full_sync=lambda: None))
            await extension.handle_router(sync_data(EGRESS))
            return extension

        async def delivered(count: int) -> None:
            for _ in range(100):
                if len(listener.got) >= count:
                    return
                await asyncio.sleep(0.01)
            raise AssertionError(f"{count} notifications, got {listener.got}")

        first = await agent()
        host.forward("10.0.0.5", "198.51.100.1", "qr-x", GW, 100)
        host.forward("198.51.100.1", "10.0.0.5", GW, "qr-x", 999)  # ingress: not this label
        await first.measure()
        assert first.counts == {(ROUTER, LABEL): metering.Counter(1, 100)}
        assert (f'neutrino_metering_label_bytes_total{{label_id="{LABEL}",router_id="{ROUTER}",'
                f'project_id="p1"}} 100') in first.exposition().splitlines()
        await first.report()
        await delivered(1)
        assert {k: listener.got[0][k] for k in ("label_id", "tenant_id", "pkts", "bytes",
                                                "host")} == {
            "label_id": LABEL, "tenant_id": "p1", "pkts": 1, "bytes": 100, "host": "h1"}

        host.forward("10.0.0.5", "198.51.100.1", "qr-x", GW, 50)  # before the "kill"
        restarts = host.restores
        second = await agent()  # a new agent, same host and state
        assert host.restores == restarts  # unchanged chains: nothing written
        host.forward("10.0.0.5", "198.51.100.1", "qr-x", GW, 25)
        await second.measure()
        assert second.counts == {(ROUTER, LABEL): metering.Counter(3, 175)}  # iptables' own
        await second.report()
        await delivered(2)
        assert (listener.got[1]["pkts"], listener.got[1]["bytes"]) == (2, 75)  # not again
        await bus.close()

    asyncio.run(scenario())
