"""Agents live through a broker restart and a server restart.

Agent processes keep running (same pid) while the broker or the server goes
away and comes back; their reports fail meanwhile and are answered again
after, they show alive again in /v2.0/agents with a fresh heartbeat, they do a
full resync, and the server's notifications reach them again.

Each test has a bus of its own, so that no other test's server (other xdist
workers run them at the same time) answers its agents: the broker restart a
private RabbitMQ node (``rabbit_node``; the shared one on 5672 is never
restarted), the server restart a vhost of its own on the shared node.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from neutrino import config
from neutrino.agents.base import AGENT_OPTIONS
from neutrino.agents.linuxbridge import LinuxBridgeAgent
from neutrino.rpc.bus import Bus
from neutrino.rpc.server import RpcServer
from neutrino.rpc.topics import REPORTS
from neutrino.rpc.transport import get_transport
from tests.functional.rabbit_node import private_node
from tests.harness import Server, create_database, rabbit_vhost, start_server, wait_until

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
FULL_SYNC = "INFO neutrino.agents.base full sync"
REPORT_FAILED = "state report failed"
REVIVED = "the server had taken this agent for dead: full resync"
REPORTED_AGAIN = "state reported again after a failure: full resync"


def utcnow() -> datetime.datetime:
    """The server's clock as /v2.0/agents shows it: naive UTC, whole seconds."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)


def heartbeat(agent: dict) -> datetime.datetime:
    return datetime.datetime.strptime(agent["heartbeat_timestamp"], "%Y-%m-%d %H:%M:%S")


class Deployment:
    """A server process on SQLite and agent processes, on one bus; all stopped at the end."""

    def __init__(self, tmp: Path, transport_url: str, agent_down_time: int):
        self.tmp = tmp
        self.transport_url = transport_url
        self.db_url, self._drop = create_database("sqlite", tmp)
        self.extra = f"transport_url = {transport_url}\nagent_down_time = {agent_down_time}\n"
        self.server: Server | None = None
        self.agents: dict[str, subprocess.Popen] = {}  # host -> process

    def start_server(self) -> Server:
        # the same database each time: a restarted server finds its agents
        self.server = start_server(self.tmp, self.db_url, auth="noauth", extra=self.extra)
        return self.server

    def stop_server(self) -> None:
        assert self.server is not None
        self.server.stop()
        assert self.server.proc.returncode is not None

    def start_agent(self, binary: str, host: str, more: str = "") -> subprocess.Popen:
        conf = self.tmp / f"{host}.conf"
        conf.write_text(f"[DEFAULT]\nhost = {host}\ntransport_url = {self.transport_url}\n"
                        f"state_path = {self.tmp / host}\n"
                        f"[agent]\nreport_interval = 1\n{more}")
        with self.log(host).open("wb") as log:
            proc = subprocess.Popen([str(BIN / binary), "--config-file", str(conf)],
                                    stdout=log, stderr=subprocess.STDOUT,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.agents[host] = proc
        return proc

    def log(self, host: str) -> Path:
        return self.tmp / f"{host}.log"

    def lines(self, host: str) -> list[str]:
        return self.log(host).read_text(errors="replace").splitlines()

    def agent(self, host: str) -> dict | None:
        assert self.server is not None
        found = self.server.client(None).get("/v2.0/agents", params={"host": host})
        agents = found.json()["agents"] if found.status_code == 200 else []
        return agents[0] if agents else None

    def close(self) -> None:
        for proc in self.agents.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if self.server is not None:
            self.server.stop()
        self._drop()


def lines_after(lines: list[str], marker: str, start: int = 0) -> int:
    """The index of the first line from ``start`` on that has ``marker``, or -1."""
    return next((i for i in range(start, len(lines)) if marker in lines[i]), -1)


def last_line_with(lines: list[str], marker: str) -> int:
    return max((i for i, line in enumerate(lines) if marker in line), default=-1)


def resynced_after(deployment: Deployment, host: str, markers: tuple[str, ...],
                   start: int) -> bool:
    """One of ``markers`` logged at or after line ``start``, and a full sync after it."""
    lines = deployment.lines(host)
    found = [i for i in (lines_after(lines, marker, start) for marker in markers) if i >= 0]
    return bool(found) and lines_after(lines, FULL_SYNC, min(found) + 1) >= 0


# --- an L2 agent in this process, to see what it is told ---------------------------------


class Recording(LinuxBridgeAgent):
    """Records what it is told (the dirty items) and when it syncs everything."""

    def __init__(self, conf: config.Config, bus: Bus):
        super().__init__(conf, bus)
        self.seen: set = set()
        self.full_syncs: list[float] = []

    async def sync(self, full, dirty):
        if full:
            self.full_syncs.append(time.monotonic())
        self.seen |= dirty


class InProcessAgent:
    """A ``Recording`` agent run on an event loop in a thread of its own."""

    def __init__(self, tmp: Path, transport_url: str, host: str):
        path = tmp / f"{host}.conf"
        path.write_text(f"[DEFAULT]\nhost = {host}\ntransport_url = {transport_url}\n"
                        f"state_path = {tmp / host}\n[agent]\nreport_interval = 1\n")
        conf = config.load([str(path)])
        conf.register((AGENT_OPTIONS, *LinuxBridgeAgent.option_groups))
        self.agent = Recording(conf, Bus(get_transport(transport_url), timeout=5))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)
        self.error: BaseException | None = None

    def _main(self) -> None:
        async def main() -> None:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            self._started.set()
            await self.agent.run(self._stop)

        try:
            asyncio.run(main())
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error
            self._started.set()

    def start(self) -> None:
        self._thread.start()
        assert self._started.wait(10)

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)


# --- the broker restarts -------------------------------------------------------------------


@pytest.fixture
def on_private_broker(tmp_path) -> Iterator[tuple[Deployment, object]]:
    with private_node() as node:
        deployment = Deployment(tmp_path, node.url, agent_down_time=4)
        try:
            yield deployment, node
        finally:
            deployment.close()


def test_agents_live_through_a_broker_restart(on_private_broker, tmp_path):
    """``rabbitmqctl stop_app`` / ``start_app`` on the private node: the server
    and agent processes reconnect by themselves, the agents resync, heartbeats
    resume, and a notification sent after the restart reaches an agent."""
    deployment, node = on_private_broker
    server = deployment.start_server()
    # aiormq logs the broker's shutdown with a traceback of its own reader
    server.tracebacks_expected = True
    client = server.client(None)
    net = client.network()
    client.subnet(net["id"], "10.0.0.0/24")
    port = client.port(net["id"])

    tag = uuid.uuid4().hex[:8]
    hosts = {f"restart-lb-{tag}": "neutrino-linuxbridge-agent",
             f"restart-dhcp-{tag}": "neutrino-dhcp-agent"}
    procs = {host: deployment.start_agent(binary, host) for host, binary in hosts.items()}
    inproc = InProcessAgent(tmp_path, node.url, f"restart-inproc-{tag}")
    inproc.start()
    try:
        everyone = [*hosts, inproc.agent.host]
        for host in everyone:
            wait_until(lambda h=host: (deployment.agent(h) or {}).get("alive"),
                     what=f"{host} to register")
        pids = {host: proc.pid for host, proc in procs.items()}

        node.run_ctl("stop_app")
        for host in hosts:  # the agents notice, and their reports fail
            wait_until(lambda h=host: lines_after(deployment.lines(h), REPORT_FAILED) >= 0,
                     10, f"{host} to fail a report")
        node.run_ctl("start_app")
        back, back_at = utcnow(), time.monotonic()

        for host in hosts:
            wait_until(lambda h=host: lines_after(deployment.lines(h), "reconnected to") >= 0,
                     20, f"{host} to reconnect")
        for host in everyone:
            # alive, with a heartbeat the server recorded after the broker came back
            wait_until(lambda h=host: (agent := deployment.agent(h)) and agent["alive"]
                     and heartbeat(agent) >= back, 20, f"{host}'s heartbeats to resume")
        for host, proc in procs.items():
            assert proc.poll() is None and proc.pid == pids[host], f"{host} was restarted"
            lines = deployment.lines(host)
            assert lines_after(lines, "lost the connection to") >= 0, lines
            # a full resync after the reconnection, asked for by the first report
            # answered after the last failed one ("revived" if the outage outlasted
            # agent_down_time); the one the loss itself asks for runs at once,
            # while the broker is still away. Not anchored on "reconnected to":
            # aio-pika logs that after restoring channels, and a report can get
            # through before it.
            wait_until(lambda h=host: resynced_after(
                deployment, h, (REPORTED_AGAIN, REVIVED),
                last_line_with(deployment.lines(h), REPORT_FAILED)),
                10, lambda h=host: f"{h} to resync after reconnecting; it logged:\n"
                + "\n".join(deployment.lines(h)[-30:]))

        # the server's fanouts reach the agents again
        assert ("port", port["id"]) not in inproc.agent.seen
        resp = client.put(f"/v2.0/ports/{port['id']}", json={"port": {"name": "after"}})
        assert resp.status_code == 200, resp.text
        wait_until(lambda: ("port", port["id"]) in inproc.agent.seen, 15,
                 "the port update to reach the agent")
        wait_until(lambda: inproc.agent.full_syncs[-1] > back_at, 10,
                 "the in-process agent to resync after the restart")
        assert server.proc.poll() is None  # the server lived through it too
    finally:
        inproc.stop()
    assert inproc.error is None, inproc.error


# --- the server restarts -------------------------------------------------------------------


@pytest.fixture
def on_own_vhost(request, tmp_path) -> Iterator[Deployment]:
    with rabbit_vhost() as url:
        deployment = Deployment(tmp_path, url, agent_down_time=request.param)
        try:
            yield deployment
        finally:
            deployment.close()


@pytest.mark.parametrize(("on_own_vhost", "outage"), [
    # the server is back before agent_down_time: it answers "alive", and the
    # agent resyncs because its reports had failed
    pytest.param(60, "short", id="back-before-agent_down_time"),
    # back after agent_down_time: it answers "revived", which also resyncs
    pytest.param(3, "long", id="back-after-agent_down_time"),
], indirect=["on_own_vhost"])
def test_agents_live_through_a_server_restart(on_own_vhost, outage):
    deployment = on_own_vhost
    deployment.start_server()
    tag = uuid.uuid4().hex[:8]
    hosts = {f"srv-restart-lb-{tag}": "neutrino-linuxbridge-agent",
             f"srv-restart-dhcp-{tag}": "neutrino-dhcp-agent"}
    procs = {host: deployment.start_agent(binary, host) for host, binary in hosts.items()}
    for host in hosts:
        wait_until(lambda h=host: (deployment.agent(h) or {}).get("alive"),
                 what=f"{host} to register")
    pids = {host: proc.pid for host, proc in procs.items()}
    before = {host: heartbeat(deployment.agent(host)) for host in hosts}
    logged = {host: len(deployment.lines(host)) for host in hosts}

    deployment.stop_server()
    stopped = time.monotonic()
    for host in hosts:  # nobody answers their reports now
        wait_until(lambda h=host: lines_after(deployment.lines(h), REPORT_FAILED, logged[h]) >= 0,
                 10, f"{host} to fail a report")
    if outage == "long":  # past agent_down_time (3 s) since the last heartbeat
        time.sleep(max(0.0, stopped + 4.5 - time.monotonic()))
    restarting = utcnow()
    deployment.start_server()

    for host in hosts:
        wait_until(lambda h=host: (agent := deployment.agent(h)) and agent["alive"]
                 and heartbeat(agent) >= restarting and heartbeat(agent) > before[h],
                 20, f"{host} to be alive again")
    expected, other = (REPORTED_AGAIN, REVIVED) if outage == "short" else (REVIVED,
                                                                           REPORTED_AGAIN)
    for host, proc in procs.items():
        assert proc.poll() is None and proc.pid == pids[host], f"{host} was restarted"
        failed = lines_after(deployment.lines(host), REPORT_FAILED, logged[host])
        wait_until(lambda h=host, f=failed: resynced_after(deployment, h, (expected,), f),
                 10, f"{host} to resync after the server came back")
        assert lines_after(deployment.lines(host), other, logged[host]) < 0


# --- the rule itself, on the in-process bus --------------------------------------------------


class Reports:
    """The server's report_state; fails while told to, as when the server is away."""

    rpc_version = "1.2"

    def __init__(self) -> None:
        self.away = False
        self.answered = self.failed = 0

    def report_state(self, context, agent_state, time):
        if self.away:
            self.failed += 1
            raise RuntimeError("away")
        self.answered += 1
        return "alive"


def test_reports_answered_again_after_failures_ask_for_a_full_sync(tmp_path):
    async def scenario():
        url = f"memory://{uuid.uuid4().hex}"
        server_bus = Bus(get_transport(url), timeout=2)
        await server_bus.start()
        reports = Reports()
        await RpcServer(server_bus, REPORTS, "server", [reports]).start()
        agent = InProcessAgent(tmp_path, url, f"rule-{uuid.uuid4().hex[:8]}").agent
        stop = asyncio.Event()
        running = asyncio.create_task(agent.run(stop))
        loop = asyncio.get_running_loop()

        async def until(check, seconds=10.0):
            deadline = loop.time() + seconds
            while not check():
                assert loop.time() < deadline, "timed out"
                await asyncio.sleep(0.02)

        await until(lambda: reports.answered >= 2 and agent.full_syncs)
        syncs, answered = len(agent.full_syncs), reports.answered
        await until(lambda: reports.answered >= answered + 2)
        assert len(agent.full_syncs) == syncs  # "alive" answers alone: no resync

        reports.away = True
        await until(lambda: reports.failed >= 2)
        assert len(agent.full_syncs) == syncs  # failing reports do not resync
        reports.away = False
        answered = reports.answered
        await until(lambda: reports.answered > answered)
        await until(lambda: len(agent.full_syncs) == syncs + 1)
        await until(lambda: reports.answered >= answered + 3)
        assert len(agent.full_syncs) == syncs + 1  # once

        stop.set()
        await asyncio.wait_for(running, 5)
        await server_bus.close()

    asyncio.run(scenario())


class ReportsThatStop:
    """Answers a report and has the agent told to stop as that answer lands."""

    rpc_version = "1.2"

    def __init__(self, stop: asyncio.Event) -> None:
        self.stop = stop
        self.answered = 0

    async def report_state(self, context, agent_state, time):
        self.answered += 1
        if self.answered == 2:  # the first sync is past: a report like any other
            asyncio.get_running_loop().call_soon(self.stop.set)
        return "alive"


def test_a_stop_that_comes_as_a_report_is_answered_stops_the_agent(tmp_path):
    """The heartbeat is cancelled between its answer landing and its waking up:
    it must still stop. (With ``asyncio.wait_for`` in the bus's calls, Python
    3.11 returned the answer and lost the cancellation; the heartbeat beat on
    and ``Agent.run()`` never returned: the test above timed out that way once.)"""
    async def scenario():
        url = f"memory://{uuid.uuid4().hex}"
        server_bus = Bus(get_transport(url), timeout=2)
        await server_bus.start()
        stop = asyncio.Event()
        reports = ReportsThatStop(stop)
        await RpcServer(server_bus, REPORTS, "server", [reports]).start()
        agent = InProcessAgent(tmp_path, url, f"stop-{uuid.uuid4().hex[:8]}").agent
        running = asyncio.create_task(agent.run(stop))
        await stop.wait()
        done, _ = await asyncio.wait([running], timeout=5)
        answered = reports.answered
        if not done:
            running.cancel()
        await server_bus.close()
        assert done, f"Agent.run() still running 5 s after stop ({answered} reports)"

    asyncio.run(scenario())
