"""What every agent shares: its RPC server, its heartbeat, its reconcile loop.

An agent is an idempotent reconciler (DESIGN.md): the server's database is the
desired state, the host is the applied state. ``sync(full, dirty)`` makes the
host match: everything when ``full`` (at start, after the bus reconnects, when
the server says the agent was taken for dead, and every ``resync_interval``),
else only the ``dirty`` items that notifications or host events marked. A lost
notification therefore costs latency, never correctness.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ClassVar

from neutrino import config, metrics
from neutrino.agents.extensions.api import AgentHandles
from neutrino.agents.extensions.manager import Extensions, load
from neutrino.config import Opt, OptGroup, int_range
from neutrino.linux.errors import HostError
from neutrino.linux.host_check import Needs
from neutrino.linux.ip import NoSuchDevice
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts.reports import StateReportApi
from neutrino.rpc.errors import RpcError
from neutrino.rpc.server import RpcServer

LOG = logging.getLogger(__name__)

AGENT_OPTIONS = OptGroup("agent", [
    Opt("report_interval", int_range(1), 30,
        "Seconds between the agent's state reports (heartbeats)."),
    Opt("resync_interval", int_range(1), 300,
        "Seconds between full resyncs with the server."),
    Opt("availability_zone", str, "nova", "The availability zone this agent is in."),
    Opt("polling_interval", int_range(1), 2,
        "Seconds between an L2 agent's scans for devices that came or went."),
    Opt("metrics_bind_address", metrics.parse_bind_address, "",
        "host:port to serve the agent's Prometheus metrics on (/metrics), e.g. "
        "127.0.0.1:9601; empty: not served."),
])


def named(dirty: set[Any], kind: str) -> set[str]:
    """The ids of the ``(kind, id)`` items among ``dirty``."""
    return {item[1] for item in dirty if isinstance(item, tuple) and item[0] == kind}


class NotConverged(Exception):
    """Items of a sync failed, each logged already; the sync logs this at ``level``."""

    def __init__(self, message: str, level: int):
        super().__init__(message)
        self.level = level


async def converge_each(ids: list[str], limit: asyncio.Semaphore,
                        work: Callable[[str], Awaitable[None]], kind: str) -> None:
    """``work(id)`` for each of ``ids``, ``limit`` at a time; one failing does not
    stop the others, but fails the whole (so that a full sync follows).

    How a failure is logged says what it is: a device that went meanwhile
    (another agent took it away: the Linux bridge agent unplugging a tap the
    L3 agent was removing, say) is expected, a warning; what the host or the
    bus refused is an error in their own words; anything else is a bug, with
    its traceback."""
    async def one(item: str) -> None:
        async with limit:
            await work(item)

    results = await asyncio.gather(*(one(item) for item in ids), return_exceptions=True)
    failed = [(item, r) for item, r in zip(ids, results, strict=True)
              if isinstance(r, BaseException)]
    for item, error in failed:
        if isinstance(error, NoSuchDevice):
            LOG.warning("%s %s: %s; it is done again", kind, item, error)
        elif isinstance(error, HostError | RpcError):
            LOG.error("%s %s not converged: %s", kind, item, error)
        else:
            LOG.error("%s %s not converged: %s", kind, item, error, exc_info=error)
    if failed:
        gone = all(isinstance(error, NoSuchDevice) for _, error in failed)
        raise NotConverged(f"{len(failed)} {kind}(s) not converged",
                           logging.WARNING if gone else logging.ERROR)


class Agent:
    agent_type: ClassVar[str] = ""
    binary: ClassVar[str] = ""
    #: the topic this agent's own RPC server listens on (``topic`` and ``topic.host``)
    topic: ClassVar[str] = ""
    #: notification topics it also listens to (fanouts from the server)
    notification_topics: ClassVar[tuple[str, ...]] = ()
    option_groups: ClassVar[tuple[OptGroup, ...]] = ()
    #: False for an agent that neither serves nor reports over the message bus
    #: (the OVN metadata agent, which reports through OVN's Southbound database)
    uses_bus: ClassVar[bool] = True
    #: which agent extensions it runs ("l2", "dhcp", "l3"; empty: none)
    extension_kind: ClassVar[str] = ""
    #: the extensions it runs when ``[agent] extensions`` is unset
    default_extensions: ClassVar[tuple[str, ...]] = ()

    def __init__(self, conf: config.Config, bus: Bus):
        self.conf = conf
        self.bus = bus
        self.host = config.host_name(conf)
        self.context = {"request_id": None, "project_id": None, "is_admin": True}
        self._reports = StateReportApi.on(bus)
        self._first_report = True
        self._report_failed = False
        self._full = True
        self._dirty: set[Any] = set()
        self._wakeup = asyncio.Event()
        self.resources_synced = False
        #: ``last_sync`` and ``last_full_sync``: when a sync last succeeded (UTC),
        #: reported in ``configurations`` so that an operator sees a stuck agent
        self.synced_at: dict[str, str] = {}
        #: ``ExtensionNotFound`` (a ValueError, one line) for a name found nowhere
        self.extensions: Extensions[Any] = Extensions(
            load(conf, self.extension_kind, self.default_extensions)
            if self.extension_kind else ())
        self._extensions_started = False
        bus.transport.on_connection_lost(lambda error: self.request_full_sync())

    # --- what a concrete agent says and does -------------------------------------------

    def configurations(self) -> dict[str, Any]:
        """What the agent reports about itself (mappings, tunnel types, ...)."""
        return {}

    def endpoints(self) -> list[Any]:
        """Objects whose public methods the server calls on this agent."""
        return []

    def background(self) -> list[Callable[[], Coroutine[Any, Any, None]]]:
        """More work to run beside the loop (watching the host, say)."""
        return []

    async def sync(self, full: bool, dirty: set[Any]) -> None:
        """Make the host match the server's desired state (see the module docstring)."""

    def extension_handles(self) -> AgentHandles:
        """What the extensions are given; agents add their dataplane and state."""
        return AgentHandles(conf=self.conf, bus=self.bus, host=self.host,
                            agent_type=self.agent_type, context=self.context,
                            mark_dirty=self.mark_dirty,
                            request_full_sync=self.request_full_sync)

    def start_extensions(self) -> None:
        """Initialize the extensions, once, before the first sync."""
        if not self._extensions_started:
            self._extensions_started = True
            self.extensions.initialize(self.extension_handles())

    async def sync_with_extensions(self, full: bool, dirty: set[Any]) -> None:
        """``sync``, with the extensions' full-sync hooks around a full one; its
        time and the resources handled after it go to the metrics."""
        started = time.perf_counter()
        failed = True
        if full:
            await self.extensions.each("before_full_sync",
                                       lambda e: e.before_full_sync())
        try:
            await self.sync(full, dirty)
            failed = False
        finally:
            try:
                if full:
                    await self.extensions.each("after_full_sync",
                                               lambda e: e.after_full_sync())
            finally:
                metrics.agent_sync(self.agent_type, full, time.perf_counter() - started,
                                   failed)
                metrics.agent_resources(self.agent_type, self.configurations())

    def host_needs(self) -> Needs:
        """What the agent, as configured, will use on the host (tools, devices,
        directories), each with the setting that wants it; read, not checked."""
        return Needs()

    def connect(self) -> None:
        """Before the agent starts, once the host is checked: reach what it works
        with beyond the bus (HostError, one line, when it cannot)."""

    def check_host(self) -> None:
        """Before the agent starts: ``HostCheckError`` (one line) for the first
        need the host does not meet, the extensions' needs included."""
        needs = self.host_needs()
        for extension in self.extensions:
            extension.host_needs(self.conf, needs)
        needs.check()

    # --- events --------------------------------------------------------------------------

    def mark_dirty(self, *items: Any) -> None:
        self._dirty.update(items)
        self._wakeup.set()

    def request_full_sync(self) -> None:
        self._full = True
        self._wakeup.set()

    def synced(self, full: bool) -> None:
        """Note a sync that succeeded, for the next state report."""
        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
        self.synced_at["last_sync"] = when
        if full:
            self.synced_at["last_full_sync"] = when

    # --- heartbeat -----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        state = {"agent_type": self.agent_type, "binary": self.binary, "host": self.host,
                 "topic": self.topic or "N/A",
                 "configurations": {**self.configurations(), **self.synced_at},
                 "resources_synced": self.resources_synced,
                 "availability_zone": self.conf.agent.availability_zone}
        if self._first_report:
            state["start_flag"] = True
        return state

    async def report(self) -> None:
        """One heartbeat; a full resync when the server had taken us for dead, or
        answers again after failed reports (it, or the bus, was away: what it sent
        or meant to send meanwhile may be lost, even if it never took us for dead)."""
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
        try:
            status = await self._reports.report_state(
                self.context, self.state(), time=now, timeout=self.conf.agent.report_interval)
        except RpcError as error:
            LOG.warning("state report failed: %s", error)
            self._report_failed = True
            return
        self._first_report = False
        if status is None:
            return  # sent before the server (re)started: dropped, not recorded
        failed, self._report_failed = self._report_failed, False
        if status == "revived":
            LOG.info("the server had taken this agent for dead: full resync")
            self.request_full_sync()
        elif failed:
            LOG.info("state reported again after a failure: full resync")
            self.request_full_sync()

    async def _heartbeat(self) -> None:
        while True:
            await self.report()
            await asyncio.sleep(self.conf.agent.report_interval)

    # --- the loop ------------------------------------------------------------------------

    async def _periodic_resync(self) -> None:
        while True:
            await asyncio.sleep(self.conf.agent.resync_interval)
            self.request_full_sync()

    async def _reconcile(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            full, self._full = self._full, False
            dirty, self._dirty = self._dirty, set()
            if full:
                LOG.info("full sync")
            started = time.monotonic()
            try:
                await self.sync_with_extensions(full, dirty)
                self.synced(full)
                if full:
                    self.resources_synced = True
                    LOG.info("full sync done in %.3f s", time.monotonic() - started)
            except Exception as error:
                if isinstance(error, NotConverged):  # each item told already
                    LOG.log(error.level, "sync failed: %s; a full resync follows", error)
                elif isinstance(error, HostError | RpcError):  # told in their own words
                    LOG.error("sync failed: %s; a full resync follows", error)
                else:
                    LOG.exception("sync failed; a full resync follows")
                self.resources_synced = False
                self._full = True
                await asyncio.sleep(1)
                self._wakeup.set()

    def _serve_metrics(self) -> str:
        """Serve the metrics where ``metrics_bind_address`` says; the address, or
        empty when not served. An address that cannot be listened on is logged:
        the agent's work matters more than its metrics."""
        address = self.conf.agent.metrics_bind_address
        if not address:
            return ""
        try:
            metrics.serve(address)
        except OSError as error:
            LOG.error("metrics not served: cannot listen on %s (metrics_bind_address "
                      "in [agent]): %s", address, error.strerror or error)
            return ""
        LOG.info("metrics on http://%s/metrics", address)
        return address

    async def run(self, stop: asyncio.Event) -> None:
        """Serve, report and reconcile until ``stop`` is set."""
        await self.bus.start()
        self.start_extensions()
        metrics_address = self._serve_metrics()
        objects = [*self.endpoints(), AgentUpdates(self)]
        for topic in (self.topic, *self.notification_topics):
            if topic and objects:
                await RpcServer(self.bus, topic, self.host, objects).start()
        for topic, served in self.extensions.rpc_endpoints().items():
            await RpcServer(self.bus, topic, self.host, served).start()
        self._wakeup.set()  # the first, full sync
        tasks: list[asyncio.Task[None]] = [asyncio.create_task(work()) for work in (
            self._heartbeat, self._reconcile, self._periodic_resync, *self.background(),
            *self.extensions.background())]
        LOG.info("%s on %s started", self.agent_type, self.host)
        try:
            await stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if metrics_address:
                metrics.unserve(metrics_address)
            await self.bus.close()
            LOG.info("%s on %s stopped", self.agent_type, self.host)


class AgentUpdates:
    """What the server says of the agent itself (``agent_updated``): an admin
    enabled or disabled it, which changes its work (a disabled agent is given
    none), so it reads all of it again at once."""

    rpc_version = "1.0"

    def __init__(self, agent: Agent):
        self._agent = agent

    async def agent_updated(self, context: dict, payload: dict[str, Any]) -> None:
        LOG.info("%s %s by an admin: full resync", self._agent.agent_type,
                 "enabled" if payload.get("admin_state_up") else "disabled")
        self._agent.request_full_sync()
