"""Agent processes and a server process on RabbitMQ: registration, heartbeats,
notifications, death, and a server restart the agents live through."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.harness import create_database, start_server

BIN = Path(sys.executable).parent
RABBIT = "rabbit://guest:guest@127.0.0.1:5672/"


def wait_for(check, seconds: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture
def deployment(tmp_path):
    """A server on RabbitMQ with a short agent_down_time, and a way to start agents."""
    url, drop = create_database("sqlite", tmp_path)
    # a vhost-free way to keep this test's agents apart: hosts named uniquely
    extra = f"transport_url = {RABBIT}\nagent_down_time = 3\n"
    server = start_server(tmp_path, url, auth="noauth", extra=extra)
    agents: list[subprocess.Popen] = []

    def start_agent(binary: str, host: str, more: str = "") -> subprocess.Popen:
        conf = tmp_path / f"{host}.conf"
        conf.write_text(f"[DEFAULT]\nhost = {host}\ntransport_url = {RABBIT}\n"
                        f"[agent]\nreport_interval = 1\n{more}")
        log = (tmp_path / f"{host}.log").open("wb")
        proc = subprocess.Popen([str(BIN / binary), "--config-file", str(conf)],
                                stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        agents.append(proc)
        return proc

    yield server, start_agent
    for proc in agents:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    server.stop()
    drop()


def agents_on(server, host: str) -> list[dict]:
    client = server.client(None)
    return client.get("/v2.0/agents", params={"host": host}).json()["agents"]


def test_agent_registers_is_alive_and_dies(deployment):
    server, start_agent = deployment
    host = f"e2e-{uuid.uuid4().hex[:8]}"
    proc = start_agent("neutrino-linuxbridge-agent", host,
                       "[linux_bridge]\nphysical_interface_mappings = physnet1:eth1\n")
    [agent] = wait_for(lambda: agents_on(server, host), what="the agent to register")
    assert agent["agent_type"] == "Linux bridge agent"
    assert agent["binary"] == "neutrino-linuxbridge-agent"
    assert agent["configurations"]["interface_mappings"] == {"physnet1": "eth1"}
    assert agent["alive"] is True
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_for(lambda: not agents_on(server, host)[0]["alive"], 15, "the agent to be dead")


def test_graceful_stop_on_sigterm(deployment):
    server, start_agent = deployment
    host = f"e2e-{uuid.uuid4().hex[:8]}"
    proc = start_agent("neutrino-dhcp-agent", host)
    wait_for(lambda: agents_on(server, host), what="the DHCP agent to register")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


def test_every_agent_command_registers(deployment):
    server, start_agent = deployment
    names = {"neutrino-openvswitch-agent": "Open vSwitch agent",
             "neutrino-l3-agent": "L3 agent", "neutrino-metadata-agent": "Metadata agent"}
    hosts = {}
    for binary in names:
        host = f"e2e-{uuid.uuid4().hex[:8]}"
        hosts[binary] = host
        start_agent(binary, host)
    for binary, agent_type in names.items():
        [agent] = wait_for(lambda h=hosts[binary]: agents_on(server, h), what=binary)
        assert agent["agent_type"] == agent_type


def test_port_changes_reach_an_l2_agent(deployment, tmp_path):
    """The server fans port updates and deletes out; an agent marks them dirty."""
    import asyncio

    from neutrino import config
    from neutrino.agents.base import AGENT_OPTIONS
    from neutrino.agents.l2 import LinuxBridgeAgent
    from neutrino.rpc.bus import Bus
    from neutrino.rpc.transport import get_transport

    server, _ = deployment
    client = server.client(None)
    net = client.network()
    client.subnet(net["id"], "10.0.0.0/24")
    port = client.port(net["id"])

    class Recording(LinuxBridgeAgent):
        seen: set = set()

        async def sync(self, full, dirty):
            self.seen |= dirty

    path = tmp_path / "inproc.conf"
    path.write_text(f"[DEFAULT]\nhost = inproc-{uuid.uuid4().hex[:8]}\n"
                    f"transport_url = {RABBIT}\n[agent]\nreport_interval = 1\n")
    conf = config.load([str(path)])
    conf.register((AGENT_OPTIONS, *LinuxBridgeAgent.option_groups))

    async def scenario():
        agent = Recording(conf, Bus(get_transport(RABBIT), timeout=5))
        stop = asyncio.Event()
        running = asyncio.create_task(agent.run(stop))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, lambda: wait_for(
            lambda: agents_on(server, agent.host), what="registration"))
        await loop.run_in_executor(None, lambda: client.put(
            f"/v2.0/ports/{port['id']}", json={"port": {"name": "renamed"}}))
        deadline = loop.time() + 10
        while ("port", port["id"]) not in agent.seen:
            assert loop.time() < deadline, agent.seen
            await asyncio.sleep(0.05)
        agent.seen.clear()
        await loop.run_in_executor(None, lambda: client.delete(f"/v2.0/ports/{port['id']}"))
        while ("port", port["id"]) not in agent.seen:
            assert loop.time() < deadline + 10, agent.seen
            await asyncio.sleep(0.05)
        stop.set()
        await running

    asyncio.run(scenario())
