"""The Linux bridge agent's ``log`` extension, without a host: which ports it
asks the server about and when, which ports it marks dirty (only those whose
NFLOG rules change), and that it reads NFLOG only while a port here logs. The
server is a fake of ``get_sg_log_info_for_ports``; the NFLOG socket a socket
pair."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from neutrino import config
from neutrino.agents.extensions import log
from neutrino.agents.extensions.api import AgentHandles
from neutrino.linux import firewall_log, nflog
from neutrino.rpc.contracts import logging as contract

A, B, C = "port-a", "port-b", "port-c"


def info(log_id: str, event: contract.Event) -> contract.LogInfo:
    return contract.LogInfo(id=log_id, project_id="p", event=event)


class Server:
    """``get_sg_log_info_for_ports`` answered from ``logs`` (port -> its logs)."""

    def __init__(self) -> None:
        self.logs: dict[str, list[contract.LogInfo]] = {}
        self.asked: list[list[str]] = []

    async def get_sg_log_info_for_ports(self, ctx: dict, port_ids: list[str]
                                        ) -> dict[str, list[contract.LogInfo]]:
        self.asked.append(port_ids)
        return {port_id: list(self.logs.get(port_id, [])) for port_id in port_ids}


class FakeReader:
    """An NFLOG socket that is one end of a socket pair (the loop can watch it)."""

    opened: list[FakeReader] = []

    def __init__(self, group: int, copy_range: int) -> None:
        self.group = group
        self._sock, self.peer = socket.socketpair()
        self.closed = False
        FakeReader.opened.append(self)

    def fileno(self) -> int:
        return self._sock.fileno()

    def read(self) -> list[nflog.Packet]:
        return []

    def close(self) -> None:
        self.closed = True
        self._sock.close()
        self.peer.close()


class Host:
    """The extension as the agent holds it: its ports here, what it marked dirty."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 agent_type: str = log.AGENT_TYPE) -> None:
        path = tmp_path / "agent.ini"
        path.write_text("[network_log]\nrate_limit = 200\nburst_limit = 40\n")
        conf = config.load([str(path)])
        conf.register((log.OPTIONS,))
        self.server = Server()
        monkeypatch.setattr(contract.LoggingPluginApi, "on",
                            classmethod(lambda cls, bus: self.server))
        FakeReader.opened = []
        monkeypatch.setattr(nflog, "NflogSocket", FakeReader)
        self.ports: dict[str, dict[str, Any]] = {}
        self.dirty: list[tuple[str, str]] = []
        self.extension = log.LoggingExtension()
        self.extension.initialize(AgentHandles(
            conf=conf, bus=None, host="h1", agent_type=agent_type,  # type: ignore[arg-type]
            context={}, mark_dirty=lambda *items: self.dirty.extend(items),
            request_full_sync=lambda: None, state=self.ports))

    def plug(self, *port_ids: str) -> None:
        for port_id in port_ids:
            self.ports[f"tap{port_id}"] = {"port_id": port_id}

    def drained(self) -> list[tuple[str, str]]:
        dirty, self.dirty = self.dirty, []
        return dirty


def run(work: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """``work`` in a running loop (the reader is watched by it)."""
    asyncio.run(work())


@pytest.fixture
def host(tmp_path, monkeypatch) -> Host:
    return Host(tmp_path, monkeypatch)


def test_a_wired_port_is_asked_about_and_dirty_only_when_its_rules_change(host):
    host.plug(A, B)
    host.server.logs = {A: [info("l1", "DROP")]}

    async def work() -> None:
        await host.extension.handle_port({"port_id": B})  # no log: nothing to rewrite
        assert host.drained() == []
        await host.extension.handle_port({"port_id": A})
        assert host.drained() == [("port", A)]
        await host.extension.handle_port({"port_id": A})  # the same again: nothing
        assert host.drained() == []
        # another DROP log: the same rules (the lines name it), not dirty
        host.server.logs[A] = [info("l1", "DROP"), info("l2", "DROP")]
        await host.extension.refresh(None)
        assert host.drained() == []
        assert [entry["id"] for entry in host.extension.logs[A]] == ["l1", "l2"]
        host.server.logs[A] = [info("l1", "ALL")]  # ACCEPT too: new rules
        await host.extension.refresh(None)
        assert host.drained() == [("port", A)]

    run(work)
    assert host.server.asked == [[B], [A], [A], [A, B], [A, B]]
    assert host.extension.firewall_logging() == firewall_log.Logging(
        {A: firewall_log.PortLog(accept=True, drop=True)},
        firewall_log.Limits(rate=200, burst=40))


def test_a_full_sync_asks_once_for_every_port_after_it(host):
    host.plug(A, B, C)
    host.server.logs = {A: [info("l1", "ACCEPT")], C: [info("l2", "DROP")]}

    async def work() -> None:
        await host.extension.before_full_sync()
        for port_id in (A, B, C):
            await host.extension.handle_port({"port_id": port_id})
        assert host.server.asked == []
        await host.extension.after_full_sync()

    run(work)
    assert host.server.asked == [[A, B, C]]
    assert host.drained() == [("port", A), ("port", C)]


def test_logs_updated_asks_again_and_a_port_whose_logs_went_is_dirty(host):
    host.plug(A, B)
    host.server.logs = {A: [info("l1", "DROP")], B: [info("l1", "DROP")]}
    notifications = log.LogNotifications(host.extension)

    async def work() -> None:
        await notifications.logs_updated({}, log_ids=["l1"])
        assert host.drained() == [("port", A), ("port", B)]
        host.server.logs = {B: [info("l1", "DROP")]}  # the log now names b only
        await notifications.logs_updated({}, log_ids=["l1"])
        assert host.drained() == [("port", A)]
        del host.ports[f"tap{B}"]  # b left before its delete_port: forgotten, dirty
        host.server.logs = {}
        await notifications.logs_updated({}, log_ids=["l1"])
        assert host.drained() == [("port", B)]

    run(work)
    assert host.server.asked == [[A, B], [A, B], [A]]
    assert host.extension.logs == {}


def test_nflog_is_read_while_a_port_here_logs(host):
    host.plug(A, B)
    host.server.logs = {A: [info("l1", "DROP")], B: [info("l2", "ACCEPT")]}

    async def work() -> None:
        await host.extension.refresh([A])
        await host.extension.refresh([A, B])
        assert len(FakeReader.opened) == 1 and not FakeReader.opened[0].closed
        assert FakeReader.opened[0].group == firewall_log.NFLOG_GROUP
        await host.extension.delete_port({"port_id": A})
        assert not FakeReader.opened[0].closed  # b still logs
        await host.extension.delete_port({"port_id": B})
        assert FakeReader.opened[0].closed
        host.server.logs = {A: [info("l1", "DROP")]}
        await host.extension.refresh(None)  # opened again

    run(work)
    assert len(FakeReader.opened) == 2 and not FakeReader.opened[1].closed
    FakeReader.opened[1].close()


def test_no_port_here_no_call(host):
    run(lambda: host.extension.refresh(None))
    run(lambda: host.extension.refresh(["elsewhere"]))
    assert host.server.asked == [] and host.drained() == []


def test_the_open_vswitch_agent_is_told_it_logs_nothing(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError, match="the Open vSwitch agent logs nothing"):
        Host(tmp_path, monkeypatch, agent_type="Open vSwitch agent")


def test_an_answer_given_before_a_change_does_not_overwrite_a_later_one(host):
    """A notification's refresh still waiting for its answer (given before the
    log was made) and a wired port's refresh asked after: the later answer is
    the one kept."""
    host.plug(A)
    gate = asyncio.Event()
    asking = host.server.get_sg_log_info_for_ports

    async def slow_first(ctx: dict, port_ids: list[str]) -> dict[str, list[contract.LogInfo]]:
        answer = await asking(ctx, port_ids)
        if len(host.server.asked) == 1:
            await gate.wait()
        return answer

    host.server.get_sg_log_info_for_ports = slow_first

    async def work() -> None:
        first = asyncio.create_task(host.extension.refresh(None))  # answered: no log
        await asyncio.sleep(0)
        host.server.logs = {A: [info("l1", "DROP")]}
        second = asyncio.create_task(host.extension.handle_port({"port_id": A}))
        await asyncio.sleep(0)
        gate.set()
        await asyncio.gather(first, second)

    run(work)
    assert host.extension.logs == {A: [info("l1", "DROP")]}
    assert host.drained() == [("port", A)]
    FakeReader.opened[0].close()
