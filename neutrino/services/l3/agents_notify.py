"""Telling the L3 agents that routers changed, from plugins beside the router
plugin (port forwarding, firewall): each host hears once, of its routers only."""

from __future__ import annotations

from collections.abc import Iterable

from neutrino.db.engine import Database
from neutrino.rpc.contracts.l3 import L3AgentNotifier
from neutrino.services.agents import scheduling


def routers_updated(db: Database, notifier: L3AgentNotifier,
                    router_ids: Iterable[str | None]) -> None:
    """``routers_updated`` to the agents hosting the routers (after the commit)."""
    wanted = sorted({router_id for router_id in router_ids if router_id})
    if not wanted:
        return
    with db.reader() as conn:
        by_host = scheduling.hosts_serving(conn, scheduling.L3, wanted)
    for host, ids in sorted(by_host.items()):
        notifier.routers_updated([host], ids)
