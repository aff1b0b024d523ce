"""L3 agents' firewall extension <-> server (FWaaS v2).

The groups on a router's ports come with the router's sync data
(``_firewall_groups``: ``FirewallGroupSyncData``), and a change of a group,
its policies or their rules reaches the agents as ``routers_updated`` for the
routers concerned, so the agents need no other call to learn them. They
report what they made of each group on ``q-firewall-plugin`` (version 1.0,
Neutron's ``set_firewall_group_status``).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from neutrino.rpc import topics
from neutrino.rpc.contracts.base import Api
from neutrino.rpc.contracts.logging import LogInfo

TOPIC = topics.FIREWALL_PLUGIN
VERSION = "1.0"
#: the key of a router's firewall groups in its sync data
FIREWALL_GROUPS = "_firewall_groups"

GroupStatus = Literal["ACTIVE", "DOWN", "ERROR"]


class FirewallRuleSyncData(TypedDict):
    id: str
    enabled: bool
    action: str  # allow, deny or reject
    protocol: str | None  # a name or a number; None: any
    ip_version: int
    source_ip_address: str | None
    destination_ip_address: str | None
    source_port: str | None  # "N" or "N:M"
    destination_port: str | None


class FirewallGroupSyncData(TypedDict):
    id: str
    status: str
    admin_state_up: bool
    ports: list[str]  # the group's ports on this router
    ingress_rules: list[FirewallRuleSyncData] | None  # None: no ingress policy
    egress_rules: list[FirewallRuleSyncData] | None
    logs: list[LogInfo]  # the packet logs (service_plugins = log) that reach it


class FirewallPluginApi(Api):
    """The agent's end of ``q-firewall-plugin``."""

    topic = TOPIC
    version = VERSION

    async def set_firewall_group_status(self, ctx: dict[str, Any], fwg_id: str,
                                        status: GroupStatus, host: str) -> bool:
        return await self.caller.call(ctx, "set_firewall_group_status", fwg_id=fwg_id,
                                      status=status, host=host)
