"""The server's notifications to L2 agents (``rpc.topics.L2_NOTIFICATIONS``).

The server fans each one out (every L2 agent hears it); an agent marks what
it names dirty, and its next sync looks at it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from neutrino.rpc.contracts import l2
from neutrino.rpc.contracts.l2 import L2PluginApi


class L2Notifications:
    """What an L2 agent serves on the notification topics."""

    rpc_version = l2.NOTIFICATION_VERSION

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


class L2PopulationNotifications:
    """Where other hosts' ports are (topic ``L2POPULATION``): ``ports`` maps a
    host's tunnel IP to [MAC, IP] pairs; the all-zero MAC means "flood there".
    The agent's ``fdb_changed(entries, add)`` applies them."""

    rpc_version = l2.NOTIFICATION_VERSION

    def __init__(self, agent: Any):
        self._agent = agent

    async def add_fdb_entries(self, context: dict, fdb_entries: dict, host: str | None = None
                              ) -> None:
        await self._agent.fdb_changed(fdb_entries, add=True)

    async def remove_fdb_entries(self, context: dict, fdb_entries: dict,
                                 host: str | None = None) -> None:
        await self._agent.fdb_changed(fdb_entries, add=False)

    async def update_fdb_entries(self, context: dict, fdb_entries: dict,
                                 host: str | None = None) -> None:
        """IP changes of ports (``chg_ip``): a full fetch keeps the agent right."""
        self._agent.request_full_sync()


#: network id -> {remote tunnel IP: {(MAC, IP), ...}}
Fdb = dict[str, dict[str, set[tuple[str, str]]]]


def merge_fdb(fdb: Fdb, entries: dict[str, Any], add: bool, flood_mac: str) -> list[str]:
    """Apply an add_fdb_entries / remove_fdb_entries message to ``fdb``; the
    networks it names. A remote goes when its last entry does, or its flood
    entry."""
    for network_id, value in entries.items():
        known = fdb.setdefault(network_id, {})
        for remote, found in (value.get("ports") or {}).items():
            pairs = {tuple(e) for e in found}
            if add:
                known.setdefault(remote, set()).update(pairs)
            else:
                known.get(remote, set()).difference_update(pairs)
                if not known.get(remote) or pairs >= {(flood_mac, "0.0.0.0")}:
                    known.pop(remote, None)
    return list(entries)


async def fetch_fdb(plugin: L2PluginApi, context: dict, host: str, network_ids: list[str],
                    changes: Callable[[], int]) -> Fdb:
    """The whole of what l2population knows of ``network_ids``, from the server.
    ``changes()`` counts the changes the server announced: one announced while
    the answer was on its way may be missing from it, so then it asks again."""
    for _ in range(3):
        before = changes()
        entries = await plugin.get_fdb_entries(context, network_ids=network_ids, host=host)
        if changes() == before:
            break
    return {network_id: {ip: {tuple(e) for e in found} for ip, found in (
        (entries.get(network_id) or {}).get("ports") or {}).items()}
        for network_id in network_ids}
