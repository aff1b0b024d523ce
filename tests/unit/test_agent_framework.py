"""The agent base on the in-process bus: reports, notifications, reconciling."""

from __future__ import annotations

import asyncio
import logging
import uuid

from neutrino import config
from neutrino.agents.base import AGENT_OPTIONS
from neutrino.agents.l2 import parse_mappings
from neutrino.agents.linuxbridge import LinuxBridgeAgent
from neutrino.linux.ovs import OvsError
from neutrino.rpc.bus import Bus
from neutrino.rpc.client import RpcClient
from neutrino.rpc.errors import TransportError
from neutrino.rpc.server import RpcServer
from neutrino.rpc.topics import PORT_UPDATE, REPORTS
from neutrino.rpc.transport import get_transport

CTX = {"request_id": "r"}


class Reports:
    """Stands in for the server's report_state endpoint."""

    rpc_version = "1.2"

    def __init__(self):
        self.states: list[dict] = []
        self.answer = "alive"

    async def report_state(self, context, agent_state, time):
        self.states.append(agent_state["agent_state"])
        return self.answer


class RecordingAgent(LinuxBridgeAgent):
    def __init__(self, conf, bus):
        super().__init__(conf, bus)
        self.syncs: list[tuple[bool, set]] = []

    async def sync(self, full, dirty):
        self.syncs.append((full, set(dirty)))


def make_conf(tmp_path) -> config.Config:
    path = tmp_path / "agent.conf"
    path.write_text("[DEFAULT]\nhost = host-1\n[agent]\nreport_interval = 1\n"
                    "[linux_bridge]\nphysical_interface_mappings = physnet1:eth1\n")
    conf = config.load([str(path)])
    conf.register((AGENT_OPTIONS, *LinuxBridgeAgent.option_groups))
    return conf


async def until(check, seconds=5.0):
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_agent_reports_hears_notifications_and_resyncs(tmp_path):
    async def scenario():
        url = f"memory://{uuid.uuid4().hex}"
        server_bus = Bus(get_transport(url), timeout=2)
        await server_bus.start()
        reports = Reports()
        await RpcServer(server_bus, REPORTS, "server", [reports]).start()
        agent = RecordingAgent(make_conf(tmp_path), Bus(get_transport(url), timeout=2))
        stop = asyncio.Event()
        running = asyncio.create_task(agent.run(stop))

        await until(lambda: agent.syncs)
        assert agent.syncs[0] == (True, set())  # a full sync first
        await until(lambda: reports.states)
        first = reports.states[0]
        assert first["start_flag"] is True and first["host"] == "host-1"
        assert first["agent_type"] == "Linux bridge agent"
        assert first["configurations"]["interface_mappings"] == {"physnet1": "eth1"}
        await until(lambda: len(reports.states) >= 2, seconds=3)
        assert "start_flag" not in reports.states[1]
        assert reports.states[1]["resources_synced"] is True

        await RpcClient(server_bus, PORT_UPDATE).fanout(CTX, "port_update",
                                                        port={"id": "p1"})
        await until(lambda: (False, {("port", "p1")}) in agent.syncs)

        reports.answer = "revived"  # the server had taken the agent for dead
        count = len([s for s in agent.syncs if s[0]])
        await until(lambda: len([s for s in agent.syncs if s[0]]) > count, seconds=3)

        stop.set()
        await asyncio.wait_for(running, 5)
        await server_bus.close()

    asyncio.run(scenario())


def test_parse_mappings():
    assert parse_mappings("physnet1:eth1, physnet2:br-ex") == {"physnet1": "eth1",
                                                               "physnet2": "br-ex"}
    for bad in ("physnet1", ":eth1", "physnet1:"):
        try:
            parse_mappings(bad)
        except ValueError:
            continue
        raise AssertionError(bad)


class FailingAgent(LinuxBridgeAgent):
    """Its syncs fail with each of ``errors`` in turn."""

    def __init__(self, conf, bus, errors):
        super().__init__(conf, bus)
        self.errors = list(errors)

    async def sync(self, full, dirty):
        if self.errors:
            raise self.errors.pop(0)


def test_a_host_refusal_is_one_line_a_bug_a_traceback(tmp_path, caplog):
    """A failed sync retries in full either way; what the host or the bus said is
    logged in its own words, anything else with the traceback that finds the bug."""
    async def scenario():
        url = f"memory://{uuid.uuid4().hex}"
        server_bus = Bus(get_transport(url), timeout=2)
        await server_bus.start()
        await RpcServer(server_bus, REPORTS, "server", [Reports()]).start()
        errors = [OvsError("ovs-vsctl: no database"), TransportError("broker gone"),
                  KeyError("bug")]
        agent = FailingAgent(make_conf(tmp_path), Bus(get_transport(url), timeout=2), errors)
        stop = asyncio.Event()
        running = asyncio.create_task(agent.run(stop))
        await until(lambda: not agent.errors and agent.resources_synced, seconds=30)
        stop.set()
        await asyncio.wait_for(running, 5)
        await server_bus.close()

    with caplog.at_level(logging.ERROR, logger="neutrino.agents.base"):
        asyncio.run(scenario())
    failed = [r for r in caplog.records if r.getMessage().startswith("sync failed")]
    assert [(r.getMessage(), r.exc_info is not None) for r in failed] == [
        ("sync failed: ovs-vsctl: no database; a full resync follows", False),
        ("sync failed: broker gone; a full resync follows", False),
        ("sync failed; a full resync follows", True)]
