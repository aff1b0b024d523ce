"""Which hosts reach which segments (routed networks): the segments on the
physical networks that a host's L2 agent reports in its mappings
(``bridge_mappings``, ``interface_mappings``), as Neutron's segments plugin
keeps them. Tunnel segments have no physical network and map to no host.

A host's mappings are written again when its agent starts (and at its first
report to this server); a new segment on a physical network maps to the hosts
whose agents report that network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from neutrino.db import models

M, SEG, A = models.segment_host_mappings, models.network_segments, models.agents
MAPPING_KEYS = ("bridge_mappings", "interface_mappings")


def physnets(configurations: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    for key in MAPPING_KEYS:
        mappings = configurations.get(key)
        if isinstance(mappings, dict):
            found.update(str(name) for name in mappings)
    return found


def map_host(conn: Connection, host: str, configurations: Mapping[str, Any]) -> None:
    """The host reaches the segments on the physical networks it reports, only those."""
    networks = physnets(configurations)
    conn.execute(delete(M).where(M.c.host == host))
    if networks:
        segment_ids = conn.execute(select(SEG.c.id).where(
            SEG.c.physical_network.in_(sorted(networks)))).scalars().all()
        if segment_ids:
            conn.execute(M.insert(), [{"segment_id": s, "host": host} for s in segment_ids])


def map_segments(conn: Connection, segments: Sequence[Mapping[str, Any]]) -> None:
    """New segments reach the hosts whose agents report their physical network."""
    wanted = {s["id"]: s["physical_network"] for s in segments if s.get("physical_network")}
    if not wanted:
        return
    rows = []
    for host, configurations in conn.execute(select(A.c.host, A.c.configurations)):
        reached = physnets(configurations or {})
        rows += [{"segment_id": segment_id, "host": host}
                 for segment_id, physnet in wanted.items() if physnet in reached]
    unique = {(r["segment_id"], r["host"]): r for r in rows}
    if unique:
        conn.execute(M.insert(), list(unique.values()))


class AgentReports:
    """Follows the L2 agents' reports: a host's mappings are written when its
    agent starts, or at its first report since this server started."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, conn: Connection, state: Mapping[str, Any]) -> None:
        configurations = state.get("configurations")
        if not isinstance(configurations, dict) or not any(
                key in configurations for key in MAPPING_KEYS):
            return
        host = state["host"]
        if host in self.seen and not state.get("start_flag"):
            return
        map_host(conn, host, configurations)
        self.seen.add(host)
