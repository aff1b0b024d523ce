"""Which agents host which resources: DHCP agents host networks, L3 agents
routers, load-balancer agents the haproxy provider's load balancers. The
bindings, and the choice of agents for a resource.

The choice is the same for every kind, Neutron's defaults: among the alive,
enabled agents of the kind that may take the resource, those in the zones
the resource hints at (when it has hints), spread over zones, the least
loaded first (fewest resources bound), ties broken at random so that servers
choosing at once spread out.
"""

from __future__ import annotations

import datetime
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, delete, func, select
from sqlalchemy.engine import Connection, Row

from neutrino.db import models
from neutrino.db.util import chunked
from neutrino.definitions.agent import AGENT_TYPE_DHCP, AGENT_TYPE_L3

AG = models.agents


@dataclass(frozen=True)
class Hosting:
    """One kind of hosting: its agents' type, the bindings table and its columns."""

    agent_type: str
    table: Table
    resource_key: str
    agent_key: str
    hints: Table | None  # the resources' availability zone hints, if they have any

    @property
    def resource(self) -> Any:
        return self.table.c[self.resource_key]

    @property
    def agent(self) -> Any:
        return self.table.c[self.agent_key]


DHCP = Hosting(AGENT_TYPE_DHCP, models.network_dhcp_agent_bindings, "network_id",
               "dhcp_agent_id", models.network_availability_zone_hints)
L3 = Hosting(AGENT_TYPE_L3, models.router_l3_agent_bindings, "router_id", "l3_agent_id",
             models.router_availability_zone_hints)


# --- reading the bindings ----------------------------------------------------------------

def agents_hosting(conn: Connection, kind: Hosting, resource_ids: Sequence[str]
                   ) -> dict[str, list[Row]]:
    """resource id -> the agent rows hosting it (every id is a key)."""
    found: dict[str, list[Row]] = {rid: [] for rid in resource_ids}
    for chunk in chunked(list(resource_ids)):
        rows = conn.execute(
            select(kind.resource.label("resource_id"), AG)
            .join(AG, AG.c.id == kind.agent)
            .where(kind.resource.in_(chunk))
            .order_by(kind.resource, kind.table.c.binding_index))
        for row in rows:
            found[row.resource_id].append(row)
    return found


def hosts_serving(conn: Connection, kind: Hosting, resource_ids: Sequence[str]
                  ) -> dict[str, list[str]]:
    """host -> the resources of ``resource_ids`` that its enabled agents host:
    whom to tell of a change of them."""
    by_host: dict[str, list[str]] = {}
    for resource_id, rows in agents_hosting(conn, kind, sorted(set(resource_ids))).items():
        for row in rows:
            if row.admin_state_up:
                by_host.setdefault(row.host, []).append(resource_id)
    return by_host


def hosted_by(conn: Connection, kind: Hosting, agent_id: str) -> list[str]:
    """The ids of the resources ``agent_id`` hosts."""
    return list(conn.execute(select(kind.resource).where(kind.agent == agent_id)
                             .order_by(kind.resource)).scalars())


def zones_of(conn: Connection, kind: Hosting, resource_ids: Sequence[str]
             ) -> dict[str, list[str]]:
    """resource id -> the sorted zones of the agents hosting it (every id is a key)."""
    found: dict[str, set[str]] = {rid: set() for rid in resource_ids}
    for chunk in chunked(list(resource_ids)):
        for resource_id, zone in conn.execute(
                select(kind.resource, AG.c.availability_zone)
                .join(AG, AG.c.id == kind.agent).where(kind.resource.in_(chunk))):
            if zone:
                found[resource_id].add(zone)
    return {rid: sorted(zones) for rid, zones in found.items()}


def loads(conn: Connection, kind: Hosting, agent_ids: Sequence[str]) -> dict[str, int]:
    """agent id -> how many resources it hosts."""
    if not agent_ids:
        return {}
    found = dict.fromkeys(agent_ids, 0)
    for chunk in chunked(list(agent_ids)):
        found.update(conn.execute(select(kind.agent, func.count())
                                  .where(kind.agent.in_(chunk)).group_by(kind.agent)).all())
    return found


# --- writing them ------------------------------------------------------------------------

def bind(conn: Connection, kind: Hosting, resource_id: str, agent_id: str,
         limit: int | None = None) -> bool:
    """Bind with the lowest free binding index up to ``limit`` (False when all are
    taken), or after the last one when there is no limit (an admin's choice)."""
    taken = set(conn.execute(select(kind.table.c.binding_index)
                             .where(kind.resource == resource_id)).scalars())
    free = [i for i in range(1, (limit or len(taken) + 1) + 1) if i not in taken]
    if not free:
        return False
    conn.execute(kind.table.insert().values({kind.resource_key: resource_id,
                                             kind.agent_key: agent_id,
                                             "binding_index": free[0]}))
    return True


def unbind(conn: Connection, kind: Hosting, resource_id: str, agent_id: str) -> bool:
    """False when ``agent_id`` did not host ``resource_id``."""
    return conn.execute(delete(kind.table).where(
        kind.resource == resource_id, kind.agent == agent_id)).rowcount > 0


def dead_bindings(conn: Connection, kind: Hosting, dead_since: datetime.datetime
                  ) -> list[Row]:
    """(resource_id, agent id, host) of every binding to an agent silent since
    before ``dead_since``."""
    return list(conn.execute(
        select(kind.resource.label("resource_id"), AG.c.id, AG.c.host)
        .join(AG, AG.c.id == kind.agent)
        .where(AG.c.heartbeat_timestamp < dead_since)
        .order_by(kind.resource)))


# --- choosing agents ---------------------------------------------------------------------

def hints_of(conn: Connection, kind: Hosting, resource_id: str) -> list[str]:
    if kind.hints is None:
        return []
    key = kind.hints.primary_key.columns.values()[0]
    text = conn.execute(select(kind.hints.c.hints).where(key == resource_id)).scalar()
    return json.loads(text) if text else []


def usable_agents(conn: Connection, kind: Hosting, alive_since: datetime.datetime
                  ) -> list[Row]:
    """The agents of the kind that may take new resources: alive and enabled."""
    return list(conn.execute(select(AG).where(
        AG.c.agent_type == kind.agent_type, AG.c.admin_state_up.is_(True),
        AG.c.heartbeat_timestamp >= alive_since)))


def choose(conn: Connection, kind: Hosting, resource_id: str, wanted: int,
           alive_since: datetime.datetime,
           eligible: Callable[[Row], bool] | None = None) -> list[Row]:
    """Up to ``wanted`` agents not hosting ``resource_id`` yet, best first."""
    hosting = agents_hosting(conn, kind, [resource_id])[resource_id]
    if len(hosting) >= wanted:
        return []
    taken = {row.id for row in hosting}
    pool = [row for row in usable_agents(conn, kind, alive_since)
            if row.id not in taken and (eligible is None or eligible(row))]
    hints = hints_of(conn, kind, resource_id)
    if hints:
        pool = [row for row in pool if row.availability_zone in hints]
    load = loads(conn, kind, [row.id for row in pool])
    random.shuffle(pool)
    pool.sort(key=lambda row: load[row.id])
    used_zones = {row.availability_zone for row in hosting}
    chosen: list[Row] = []
    for _ in range(wanted - len(hosting)):
        if not pool:
            break
        # the least loaded agent of a zone the resource is not in yet, if any
        fresh = [row for row in pool if row.availability_zone not in used_zones]
        pick = (fresh or pool)[0]
        pool.remove(pick)
        used_zones.add(pick.availability_zone)
        chosen.append(pick)
    return chosen


def schedule(conn: Connection, kind: Hosting, resource_id: str, wanted: int,
             alive_since: datetime.datetime,
             eligible: Callable[[Row], bool] | None = None) -> list[Row]:
    """Bind ``resource_id`` to more agents until it has ``wanted``; the new ones."""
    added = []
    for row in choose(conn, kind, resource_id, wanted, alive_since, eligible):
        if bind(conn, kind, resource_id, row.id, limit=wanted):
            added.append(row)
    return added
