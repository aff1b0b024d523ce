"""Packet logging of security groups on the Linux bridge agent (Neutron's
``log`` L2 agent extension, for the iptables firewall).

The extension keeps, per port here, the enabled logs that reach it (asked of
the server with ``get_sg_log_info_for_ports``: for the port being wired, and
for every port after a full sync or when the server says logs changed). The
agent's firewall asks it, purely, what to log of each port
(``firewall_logging``), so the NFLOG rules are written with the port's chains
in one ``iptables-restore``; when what a port logs changes, the extension marks
the port dirty and the agent rewrites it.

Logged packets are read from the NFLOG group in the agent's own network
namespace (where the firewall's rules are) and written one line each, as
Neutron writes them, to ``[network_log] local_output_log_base`` (or the agent's
log). The rate limit is in the kernel (``firewall_log``). The Open vSwitch agent
does not log: loaded there, the extension says so and steps aside.
"""

from __future__ import annotations

import asyncio
import logging
import logging.handlers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from neutrino.agents.extensions.api import AgentHandles, L2AgentExtension
from neutrino.config import Opt, OptGroup, int_range
from neutrino.linux import firewall_log, nflog
from neutrino.rpc import topics
from neutrino.rpc.contracts import logging as contract

LOG = logging.getLogger(__name__)
#: where the packet lines go (its own file with local_output_log_base)
PACKETS = logging.getLogger("neutrino.network_log")
AGENT_TYPE = "Linux bridge agent"

OPTIONS = OptGroup("network_log", [
    Opt("rate_limit", int_range(100), 100,
        "Packets logged a second on this host at most (the kernel's limit)."),
    Opt("burst_limit", int_range(25), 25, "Packets logged at once beyond the rate."),
    Opt("local_output_log_base", str, "",
        "The file packet lines go to (empty: the agent's log)."),
])


def packet_lines(conf: Any) -> None:
    """Send the packet lines where ``[network_log] local_output_log_base`` says
    (empty: the agent's log)."""
    if conf.local_output_log_base and not PACKETS.handlers:
        handler = logging.handlers.WatchedFileHandler(conf.local_output_log_base)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        PACKETS.addHandler(handler)
        PACKETS.propagate = False
    PACKETS.setLevel(logging.INFO)


def port_log(logs: Iterable[contract.LogInfo]) -> firewall_log.PortLog | None:
    """What a port's logs ask, together (None: nothing)."""
    events = {log["event"] for log in logs}
    if not events:
        return None
    return firewall_log.PortLog(accept=bool(events & {"ACCEPT", "ALL"}),
                                drop=bool(events & {"DROP", "ALL"}))


def line(action: str, port_id: str, logs: Sequence[contract.LogInfo],
         packet: nflog.Packet, where: str = "vm_port") -> str | None:
    """Neutron's line for a packet of the port (``where``: what the id is; a
    firewall group's for FWaaS), None when no log asks for that action any more."""
    event = "ACCEPT" if action == firewall_log.ACCEPT else "DROP"
    mine = [log for log in logs if log["event"] in (event, "ALL")]
    if not mine:
        return None
    ids = sorted(log["id"] for log in mine)
    return (f"action={event} project_id={mine[0]['project_id']} log_resource_ids={ids} "
            f"{where}={port_id} pkt={nflog.summary(packet)}")


class LogNotifications:
    """What the extension serves on ``LOG_UPDATE``."""

    rpc_version = contract.NOTIFICATION_VERSION

    def __init__(self, extension: LoggingExtension):
        self._extension = extension

    async def logs_updated(self, context: dict, log_ids: list[str], **kwargs: Any) -> None:
        await self._extension.refresh(None)


class LoggingExtension(L2AgentExtension):
    def __init__(self) -> None:
        self.logs: dict[str, list[contract.LogInfo]] = {}  # port id -> its logs
        self._full_sync = False
        self._reader: nflog.NflogSocket | None = None
        #: one refresh at a time: answers are kept in the order they were asked
        self._asking = asyncio.Lock()

    def initialize(self, handles: AgentHandles) -> None:
        if handles.agent_type != AGENT_TYPE:
            raise RuntimeError(f"packet logging is only done by the {AGENT_TYPE}'s iptables "
                               f"firewall; the {handles.agent_type} logs nothing")
        self.handles = handles
        conf = handles.conf.group("network_log")
        self.limits = firewall_log.Limits(rate=conf.rate_limit, burst=conf.burst_limit)
        self._plugin = contract.LoggingPluginApi.on(handles.bus)
        packet_lines(conf)

    def rpc_endpoints(self) -> Sequence[tuple[str, Sequence[object]]]:
        return [(topics.LOG_UPDATE, [LogNotifications(self)])]

    def firewall_logging(self) -> firewall_log.Logging:
        ports = {port_id: port_log(logs) for port_id, logs in self.logs.items()}
        return firewall_log.Logging({p: log for p, log in ports.items() if log is not None},
                                    self.limits)

    async def before_full_sync(self) -> None:
        self._full_sync = True

    async def after_full_sync(self) -> None:
        self._full_sync = False
        await self.refresh(None)

    async def handle_port(self, port: Mapping[str, Any]) -> None:
        if not self._full_sync:  # after a full sync, all at once
            await self.refresh([port["port_id"]])

    async def delete_port(self, port: Mapping[str, Any]) -> None:
        self.logs.pop(port["port_id"], None)
        self._read(bool(self.logs))  # the last logged port gone: stop reading

    async def refresh(self, port_ids: list[str] | None) -> None:
        """Ask again about ``port_ids`` (None: every port here); mark dirty the
        ports whose logging changed. Refreshes run one after another, so that
        an answer given before a log changed never overwrites a later one."""
        async with self._asking:
            await self._refresh(port_ids)

    async def _refresh(self, port_ids: list[str] | None) -> None:
        here = {port["port_id"] for port in self.handles.state.values()}
        asked = sorted(here if port_ids is None else set(port_ids) & here)
        answer = await self._plugin.get_sg_log_info_for_ports(
            dict(self.handles.context), port_ids=asked) if asked else {}
        changed = []
        for port_id in set(asked) | (set(self.logs) - here):
            logs = answer.get(port_id, []) if port_id in here else []
            if port_log(logs) != port_log(self.logs.get(port_id, [])):
                changed.append(port_id)
            if logs:
                self.logs[port_id] = logs
            else:
                self.logs.pop(port_id, None)
        self._read(bool(self.logs))
        if changed:
            self.handles.mark_dirty(*(("port", port_id) for port_id in sorted(changed)))

    def _read(self, wanted: bool) -> None:
        """Read the NFLOG group while any port here logs."""
        loop = asyncio.get_running_loop()
        if wanted and self._reader is None:
            self._reader = nflog.NflogSocket(self.limits.group, firewall_log.COPY_BYTES)
            loop.add_reader(self._reader.fileno(), self._packets)
        elif not wanted and self._reader is not None:
            loop.remove_reader(self._reader.fileno())
            self._reader.close()
            self._reader = None

    def _packets(self) -> None:
        if self._reader is None:
            return
        for packet in self._reader.read():
            found = firewall_log.parse_prefix(packet.prefix)
            if found is None:
                continue
            action, port_id = found
            text = line(action, port_id, self.logs.get(port_id, []), packet)
            if text is not None:
                PACKETS.info("%s", text)
