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
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from neutrino.agents.extensions.api import AgentHandles, L3AgentExtension
from neutrino.linux import interface, router
from neutrino.linux.router_firewall import Group, RouterFirewall, Rule
from neutrino.rpc.contracts.firewall import (
    FIREWALL_GROUPS,
    FirewallGroupSyncData,
    FirewallPluginApi,
    FirewallRuleSyncData,
    GroupStatus,
)

LOG = logging.getLogger(__name__)
RETRY_AFTER = 5.0


def _rules(rules: list[FirewallRuleSyncData] | None) -> tuple[Rule, ...] | None:
    if rules is None:
        return None
    return tuple(Rule(action=r["action"], protocol=r["protocol"], ip_version=r["ip_version"],
                      source=r["source_ip_address"], destination=r["destination_ip_address"],
                      source_port=r["source_port"], destination_port=r["destination_port"])
                 for r in rules if r["enabled"])


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
                               enabled=group["admin_state_up"]))
    return found


class FirewallExtension(L3AgentExtension):
    def initialize(self, handles: AgentHandles) -> None:
        self.handles = handles
        self.plugin = FirewallPluginApi.on(handles.bus)
        self.tables: dict[str, RouterFirewall] = {}
        self.retry_after = RETRY_AFTER

    async def handle_router(self, data: Mapping[str, Any]) -> None:
        router_id = data["id"]
        table = self.tables.get(router_id)
        if table is None:
            table = self.tables[router_id] = RouterFirewall(router.namespace_name(router_id))
        groups = groups_of(data)
        try:
            written = await self.handles.run(table.apply, groups)
        except Exception as error:
            LOG.error("router %s: its firewall could not be applied: %s", router_id, error)
            await self._report(data, "ERROR")
            asyncio.get_running_loop().call_later(
                self.retry_after, self.handles.mark_dirty, ("router", router_id))
            return
        if written:
            LOG.info("router %s: firewall chains written: %s", router_id, ", ".join(written))
        await self._report(data, None)

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
        """Its namespace went with it: nothing to undo."""
        self.tables.pop(router_id, None)
