"""FWaaS v2 on the L3 agent's routers (Neutron's ``fwaas_v2`` L3 agent
extension, ``[agent] extensions = port_forwarding,fwaas_v2``).

The server sends each router's firewall groups with its sync data
(``_firewall_groups``) and tells the agent of changes (``routers_updated``), so
the router's chains follow each sync of the router: ``RouterFirewall``
rewrites only the chains that changed. Each group's status is reported when
it differs from what the server shows (a PENDING_* group waits for this):
ACTIVE when enforced, DOWN when administratively down, ERROR when the
chains could not be written; a router that failed is tried again after
``RETRY_AFTER`` seconds.

A group with packet logs (``service_plugins = log``, resource type
``firewall_group``) has NFLOG rules in its chains; the extension reads the
NFLOG group of each such router's namespace and writes a line a packet, as
the Linux bridge agent's ``log`` extension does, to ``[network_log]
local_output_log_base`` (or the agent's log), within ``rate_limit`` and
``burst_limit``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from neutrino.agents.extensions.api import AgentHandles, L3AgentExtension
from neutrino.agents.extensions.log import PACKETS, line, packet_lines
from neutrino.linux import firewall_log, interface, nflog, router
from neutrino.linux.router_firewall import Group, RouterFirewall, Rule
from neutrino.rpc.contracts.firewall import (
    FIREWALL_GROUPS,
    FirewallGroupSyncData,
    FirewallPluginApi,
    FirewallRuleSyncData,
    GroupStatus,
)
from neutrino.rpc.contracts.logging import LogInfo

LOG = logging.getLogger(__name__)
RETRY_AFTER = 5.0


def _rules(rules: list[FirewallRuleSyncData] | None) -> tuple[Rule, ...] | None:
    if rules is None:
        return None
    return tuple(Rule(action=r["action"], protocol=r["protocol"], ip_version=r["ip_version"],
                      source=r["source_ip_address"], destination=r["destination_ip_address"],
                      source_port=r["source_port"], destination_port=r["destination_port"])
                 for r in rules if r["enabled"])


def _logged(logs: list[LogInfo]) -> frozenset[str]:
    """What a group's logs ask it to log."""
    events = {log["event"] for log in logs}
    return frozenset(
        ([firewall_log.ACCEPT] if events & {"ACCEPT", "ALL"} else [])
        + ([firewall_log.DROP] if events & {"DROP", "ALL"} else []))


def groups_of(data: Mapping[str, Any]) -> list[Group]:
    """The groups a router enforces, from its sync data: on the ports it has."""
    present = {port["id"] for port in data.get("_interfaces", ())}
    found = []
    for group in data.get(FIREWALL_GROUPS, ()):
        devices = tuple(interface.device_name(port_id, router.INTERNAL)
                        for port_id in group["ports"] if port_id in present)
        if devices:
            found.append(Group(id=group["id"], devices=devices,
                               ingress=_rules(group["ingress_rules"]),
                               egress=_rules(group["egress_rules"]),
                               enabled=group["admin_state_up"],
                               logs=_logged(group.get("logs", []))))
    return found


class FirewallExtension(L3AgentExtension):
    def initialize(self, handles: AgentHandles) -> None:
        self.handles = handles
        self.plugin = FirewallPluginApi.on(handles.bus)
        self.tables: dict[str, RouterFirewall] = {}
        self.retry_after = RETRY_AFTER
        conf = handles.conf.group("network_log")
        self.limits = firewall_log.Limits(rate=conf.rate_limit, burst=conf.burst_limit)
        packet_lines(conf)
        #: router id -> the logs of its groups, by group id, while any logs
        self.logs: dict[str, dict[str, list[LogInfo]]] = {}
        self.readers: dict[str, nflog.NflogSocket] = {}

    async def handle_router(self, data: Mapping[str, Any]) -> None:
        router_id = data["id"]
        table = self.tables.get(router_id)
        if table is None:
            table = self.tables[router_id] = RouterFirewall(router.namespace_name(router_id))
        groups = groups_of(data)
        logs = {g["id"]: g["logs"] for g in data.get(FIREWALL_GROUPS, ()) if g.get("logs")}
        try:
            if logs:  # listening before the NFLOG rules exist: no first packet lost
                self._read(router_id, logs)
            written = await self.handles.run(table.apply, groups, self.limits)
        except Exception as error:
            LOG.error("router %s: its firewall could not be applied: %s", router_id, error)
            await self._report(data, "ERROR")
            asyncio.get_running_loop().call_later(
                self.retry_after, self.handles.mark_dirty, ("router", router_id))
            return
        if written:
            LOG.info("router %s: firewall chains written: %s", router_id, ", ".join(written))
        if not logs:  # stopped only once the rules that fed it are gone
            self._read(router_id, logs)
        await self._report(data, None)

    def _read(self, router_id: str, logs: dict[str, list[LogInfo]]) -> None:
        """Read the router's NFLOG group while any of its groups logs."""
        loop = asyncio.get_running_loop()
        reader = self.readers.get(router_id)
        if logs and reader is None:
            reader = nflog.NflogSocket(self.limits.group, firewall_log.COPY_BYTES,
                                       namespace=router.namespace_name(router_id))
            self.readers[router_id] = reader
            loop.add_reader(reader.fileno(), self._packets, router_id)
        elif not logs and reader is not None:
            loop.remove_reader(reader.fileno())
            reader.close()
            del self.readers[router_id]
        if logs:
            self.logs[router_id] = logs
        else:
            self.logs.pop(router_id, None)

    def _packets(self, router_id: str) -> None:
        reader = self.readers.get(router_id)
        if reader is None:
            return
        for packet in reader.read():
            found = firewall_log.parse_prefix(packet.prefix)
            if found is None:
                continue
            action, group_id = found
            text = line(action, group_id, self.logs.get(router_id, {}).get(group_id, []),
                        packet, where="firewall_group")
            if text is not None:
                PACKETS.info("%s", text)

    async def _report(self, data: Mapping[str, Any], failed: GroupStatus | None) -> None:
        """Each group's status, where it differs from what the server has."""
        group: FirewallGroupSyncData
        for group in data.get(FIREWALL_GROUPS, ()):
            status: GroupStatus = failed or ("ACTIVE" if group["admin_state_up"] else "DOWN")
            if group["status"] != status:
                await self.plugin.set_firewall_group_status(
                    dict(self.handles.context), fwg_id=group["id"], status=status,
                    host=self.handles.host)

    async def delete_router(self, router_id: str) -> None:
        """Its namespace went with it: nothing to undo but our reader there."""
        self.tables.pop(router_id, None)
        self._read(router_id, {})
