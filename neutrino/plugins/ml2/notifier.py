"""Port, network and security group changes fanned out to the L2 agents, once
committed."""

from __future__ import annotations

from typing import Any

from neutrino.rpc import topics
from neutrino.rpc.notifier import Notifier


class AgentNotifier:
    def __init__(self, notifier: Notifier):
        self._fanout = notifier.fanout

    def port_update(self, port: dict[str, Any], segment: dict[str, Any] | None) -> None:
        segment = segment or {}
        self._fanout(topics.PORT_UPDATE, "port_update", port=port,
                     network_type=segment.get("network_type"),
                     segmentation_id=segment.get("segmentation_id"),
                     physical_network=segment.get("physical_network"))

    def port_delete(self, port_id: str, network_id: str) -> None:
        self._fanout(topics.PORT_DELETE, "port_delete", port_id=port_id, network_id=network_id)

    def network_update(self, network: dict[str, Any]) -> None:
        self._fanout(topics.NETWORK_UPDATE, "network_update", network=network)

    def network_delete(self, network_id: str) -> None:
        self._fanout(topics.NETWORK_DELETE, "network_delete", network_id=network_id)

    def security_groups_rule_updated(self, group_ids: set[str]) -> None:
        """The rules of these groups changed (or what they mean: ``stateful``)."""
        if group_ids:
            self._fanout(topics.SECURITY_GROUP_UPDATE, "security_groups_rule_updated",
                         security_groups=sorted(group_ids))

    def security_groups_member_updated(self, group_ids: set[str]) -> None:
        """Ports joined or left these groups, or their addresses changed: rules
        whose remote group is one of them mean other addresses now."""
        if group_ids:
            self._fanout(topics.SECURITY_GROUP_UPDATE, "security_groups_member_updated",
                         security_groups=sorted(group_ids))
