"""The server's notifications to L2 agents (``rpc.topics.L2_NOTIFICATIONS``).

The server fans each one out (every L2 agent hears it); an agent marks what
it names dirty, and its next sync looks at it.
"""

from __future__ import annotations

from typing import Any


class L2Notifications:
    """What an L2 agent serves on the notification topics."""

    rpc_version = "1.0"

    def __init__(self, agent: Any):
        self._agent = agent

    async def port_update(self, context: dict, port: dict, **segment: Any) -> None:
        self._agent.mark_dirty(("port", port["id"]))

    async def port_delete(self, context: dict, port_id: str, **kwargs: Any) -> None:
        self._agent.mark_dirty(("port", port_id))

    async def network_update(self, context: dict, network: dict) -> None:
        self._agent.mark_dirty(("network", network["id"]))

    async def network_delete(self, context: dict, network_id: str) -> None:
        self._agent.mark_dirty(("network", network_id))

    async def security_groups_rule_updated(self, context: dict, security_groups: list[str]
                                           ) -> None:
        self._agent.mark_dirty(*(("security_group", g) for g in security_groups))

    async def security_groups_member_updated(self, context: dict,
                                             security_groups: list[str]) -> None:
        self._agent.mark_dirty(*(("security_group", g) for g in security_groups))
