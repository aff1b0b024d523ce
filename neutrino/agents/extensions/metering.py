"""Metering on the L3 agent's routers (``[agent] extensions = ...,metering``):
what Neutron's separate metering agent does, inside the L3 agent, which owns
the routers' namespaces and hears of every router change at once.

The server sends each router's labels with its sync data
(``_metering_labels``, each with its rules) and tells the router's agent when
they change (``routers_updated``). After each router is set up, its counting
chains are made to match (``neutrino.linux.metering``: only chains that
changed are written, so a resync of an unchanged router writes nothing and
keeps the counters).

Every ``[metering] measure_interval`` seconds the counters of every router
are read (one ``iptables-save -c`` per router); every ``report_interval``
each label's traffic since the last report, summed over the routers here, is
sent as Neutron's ``l3.meter`` notification on the bus
(``neutrino.rpc.contracts.metering``). With ``prometheus_bind`` the
counters are also served as Prometheus text, one series per label and router.

The counters are iptables': never zeroed by the agent, they survive its
restart (its chains are left as they are), so the Prometheus series go on
from where they were. What has been reported is kept in
``$state_path/metering/reported.json``, so that after a restart (even a
kill) the next notification carries what was counted since the last one
sent, neither lost nor twice. A router whose chains are made anew (its
namespace rebuilt) starts again from zero.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from neutrino.agents.extensions.api import AgentHandles, L3AgentExtension
from neutrino.config import Opt, OptGroup, int_range
from neutrino.linux import interface, metering, router
from neutrino.metrics import parse_bind_address
from neutrino.rpc.contracts.l3 import METERING_LABELS
from neutrino.rpc.contracts.metering import MeteringNotifier, MeterPayload

LOG = logging.getLogger(__name__)


OPTIONS = OptGroup("metering", [
    Opt("measure_interval", int_range(1), 30,
        "Seconds between readings of the routers' metering counters (Neutron's "
        "metering agent has it in [DEFAULT])."),
    Opt("report_interval", int_range(1), 300,
        "Seconds between l3.meter notifications on the bus (topic notifications) "
        "(Neutron's metering agent's [DEFAULT] report_interval; [agent] "
        "report_interval is the heartbeat)."),
    Opt("prometheus_bind", parse_bind_address, "",
        "host:port to serve the counters on in Prometheus text format (/metrics), "
        "e.g. 127.0.0.1:9190; empty: not served."),
])


@dataclass(frozen=True)
class LabelInfo:
    id: str
    project_id: str | None
    name: str
    shared: bool


def wanted_chains(data: Mapping[str, Any]) -> metering.Chains:
    """Pure: the counting chains of a router from its sync data."""
    gw_port = data.get("gw_port")
    gateway = interface.device_name(gw_port["id"], router.EXTERNAL) if gw_port else None
    labels = []
    for label in data.get(METERING_LABELS, ()):
        rules = (metering.rule_of(r["direction"], bool(r.get("excluded")),
                                  r.get("remote_ip_prefix"), r.get("source_ip_prefix"),
                                  r.get("destination_ip_prefix"))
                 for r in label.get("rules", ()))
        labels.append(metering.Label(label["id"], tuple(r for r in rules if r is not None)))
    return metering.chains(gateway, labels)


Key = tuple[str, str]  # (router id, label id)


class MeteringExtension(L3AgentExtension):
    def __init__(self, tables: Callable[[str], metering.MeterTable] = metering.MeterTable):
        """``tables``: a router namespace's ``MeterTable`` (tests give one on a
        fake host)."""
        self._make_table = tables

    def initialize(self, handles: AgentHandles) -> None:
        self._handles = handles
        self._conf = handles.conf.group("metering")
        self._notifier = MeteringNotifier(handles.bus, handles.host)
        self._tables: dict[str, metering.MeterTable] = {}
        self._labels: dict[str, dict[str, LabelInfo]] = {}  # router -> its labels
        self.counts: dict[Key, metering.Counter] = {}  # as last read
        self._state = os.path.join(os.path.abspath(handles.conf.DEFAULT.state_path),
                                   "metering", "reported.json")
        self._reported = self._load()
        self._first: dict[str, int] = {}  # label -> first counted
        self._last_report = int(time.time())
        self._last_read = 0

    # --- the routers' chains ---------------------------------------------------------

    async def handle_router(self, data: Mapping[str, Any]) -> None:
        router_id = data["id"]
        self._labels[router_id] = {
            label["id"]: LabelInfo(label["id"], label.get("project_id"), label.get("name", ""),
                                   bool(label.get("shared")))
            for label in data.get(METERING_LABELS, ())}
        table = self._tables.get(router_id)
        if table is None:
            table = self._tables[router_id] = self._make_table(
                router.namespace_name(router_id))
        if await self._handles.run(table.apply, wanted_chains(data)):
            LOG.info("router %s: metering chains written", router_id)

    async def delete_router(self, router_id: str) -> None:
        self._tables.pop(router_id, None)
        self._labels.pop(router_id, None)
        for key in [key for key in self.counts if key[0] == router_id]:
            del self.counts[key]

    # --- reading and reporting -------------------------------------------------------

    def background(self) -> Sequence[Callable[[], Coroutine[Any, Any, None]]]:
        works: list[Callable[[], Coroutine[Any, Any, None]]] = [self._measure_loop]
        if self._conf.prometheus_bind:
            works.append(self._serve_prometheus)
        return works

    async def _measure_loop(self) -> None:
        while True:
            await asyncio.sleep(self._conf.measure_interval)
            await self.measure()
            if time.time() - self._last_report >= self._conf.report_interval:
                await self.report()

    async def measure(self) -> None:
        """Read every router's counters (a router that fails is skipped)."""
        for router_id, table in list(self._tables.items()):
            try:
                found = await self._handles.run(table.counters)
            except OSError as error:
                LOG.warning("router %s: metering counters not read: %s", router_id, error)
                continue
            now = int(time.time())
            for label_id in self._labels.get(router_id, {}):
                counter = found.get(metering.label_chain(label_id))
                if counter is not None:
                    self.counts[router_id, label_id] = counter
                    self._first.setdefault(label_id, now)
        self._last_read = int(time.time())

    def payloads(self) -> list[MeterPayload]:
        """Pure over the state: each label's traffic since what was reported."""
        sums: dict[str, list[int]] = {}
        for (router_id, label_id), counter in sorted(self.counts.items()):
            before = self._reported.get(f"{router_id}:{label_id}", (0, 0))
            if counter.packets < before[0] or counter.bytes < before[1]:
                before = (0, 0)  # the chain was made anew
            total = sums.setdefault(label_id, [0, 0])
            total[0] += counter.packets - before[0]
            total[1] += counter.bytes - before[1]
        projects = {label.id: label.project_id for labels in self._labels.values()
                    for label in labels.values()}
        return [MeterPayload(label_id=label_id, tenant_id=projects.get(label_id),
                             project_id=projects.get(label_id), pkts=pkts, bytes=size,
                             time=self._last_read - self._last_report,
                             first_update=self._first.get(label_id, self._last_read),
                             last_update=self._last_read, host=self._handles.host)
                for label_id, (pkts, size) in sorted(sums.items())]

    async def report(self) -> None:
        """Send each label's ``l3.meter``, then remember what was sent."""
        for payload in self.payloads():
            await self._notifier.meter(payload)
        self._reported = {f"{r}:{label}": (c.packets, c.bytes)
                          for (r, label), c in self.counts.items()}
        self._last_report = self._last_read
        await asyncio.to_thread(self._save)

    def _load(self) -> dict[str, tuple[int, int]]:
        try:
            with open(self._state) as stream:
                return {key: (int(value[0]), int(value[1]))
                        for key, value in json.load(stream).items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError, IndexError, AttributeError) as error:
            LOG.warning("metering: %s unreadable (%s): reporting from zero", self._state, error)
            return {}

    def _save(self) -> None:
        os.makedirs(os.path.dirname(self._state), exist_ok=True)
        temporary = f"{self._state}.tmp"
        with open(temporary, "w") as stream:
            json.dump(self._reported, stream)
        os.replace(temporary, self._state)

    # --- Prometheus ------------------------------------------------------------------

    def exposition(self) -> str:
        """Pure over the state: the counters in Prometheus' text format."""
        lines = []
        for metric, what, pick in (
                ("neutrino_metering_label_packets_total", "Packets", lambda c: c.packets),
                ("neutrino_metering_label_bytes_total", "Bytes", lambda c: c.bytes)):
            lines += [f"# HELP {metric} {what} counted by a metering label on a router.",
                      f"# TYPE {metric} counter"]
            for (router_id, label_id), counter in sorted(self.counts.items()):
                info = self._labels.get(router_id, {}).get(label_id)
                project = (info.project_id if info else None) or ""
                lines.append(f'{metric}{{label_id="{label_id}",router_id="{router_id}",'
                             f'project_id="{project}"}} {pick(counter)}')
        return "\n".join(lines) + "\n"

    async def _serve_prometheus(self) -> None:
        host, _, port = self._conf.prometheus_bind.rpartition(":")
        server = await asyncio.start_server(self._answer, host.strip("[]"), int(port))
        LOG.info("metering: Prometheus metrics on http://%s/metrics",
                 self._conf.prometheus_bind)
        async with server:
            await server.serve_forever()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                      ) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            path = request.split(b" ", 2)[1] if request.count(b" ") >= 2 else b""
            if path.split(b"?")[0] in (b"/metrics", b"/"):
                status, body = "200 OK", self.exposition().encode()
            else:
                status, body = "404 Not Found", b"not found\n"
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                         + body)
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError,
                ConnectionError):
            pass
        finally:
            writer.close()
