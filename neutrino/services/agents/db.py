"""Agents, availability zones and availability zone hints in the database.

An agent is one row per (agent_type, host), made or refreshed by its state
reports. Its ``alive`` is derived: a heartbeat no older than
``agent_down_time`` seconds. Zones are derived from the agents too.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection, Row

from neutrino.db import models
from neutrino.db.query import CollectionQuery, select_page
from neutrino.db.util import chunked
from neutrino.definitions.agent import (
    AGENT_ALIVE,
    AGENT_NEW,
    AGENT_REVIVED,
    AGENT_TYPE_DHCP,
    AGENT_TYPE_L3,
    AgentNotFound,
)
from neutrino.definitions.availability_zone import (
    AVAILABLE,
    UNAVAILABLE,
    AvailabilityZoneNotFound,
    hints_text,
)
from neutrino.definitions.validators import new_uuid

AG = models.agents

# The kind of resource whose zones an agent type makes.
ZONE_RESOURCES = {AGENT_TYPE_DHCP: "network", AGENT_TYPE_L3: "router"}
AGENT_TYPES = {resource: agent_type for agent_type, resource in ZONE_RESOURCES.items()}

# What a state report sets on the row (the rest is the server's or the admin's).
REPORTED = ("agent_type", "binary", "host", "topic")


# --- liveness --------------------------------------------------------------------------

def cutoff(when: datetime.datetime, down_time: int) -> datetime.datetime:
    """The oldest heartbeat of an agent still alive at ``when``."""
    return when - datetime.timedelta(seconds=down_time)


def _time(value: datetime.datetime) -> str:
    """Neutron shows agents' times as ``2017-09-12 19:39:56``."""
    return value.strftime("%Y-%m-%d %H:%M:%S")


def view(row: Row, alive_since: datetime.datetime) -> dict[str, Any]:
    return {
        "id": row.id, "agent_type": row.agent_type, "binary": row.binary,
        "topic": row.topic, "host": row.host, "admin_state_up": row.admin_state_up,
        "description": row.description, "configurations": row.configurations,
        "availability_zone": row.availability_zone,
        "resources_synced": row.resources_synced,
        "created_at": _time(row.created_at), "started_at": _time(row.started_at),
        "heartbeat_timestamp": _time(row.heartbeat_timestamp),
        "alive": row.heartbeat_timestamp >= alive_since,
    }


def columns(alive_since: datetime.datetime) -> dict[str, Any]:
    """API attribute -> column or expression, for filters and sort keys."""
    found: dict[str, Any] = {name: AG.c[name] for name in (
        "id", "agent_type", "binary", "topic", "host", "admin_state_up", "description",
        "availability_zone", "created_at", "started_at", "heartbeat_timestamp")}
    found["alive"] = AG.c.heartbeat_timestamp >= alive_since
    return found


# --- the API's reads and writes ----------------------------------------------------------

def get_row(conn: Connection, agent_id: str) -> Row:
    row = conn.execute(select(AG).where(AG.c.id == agent_id)).first()
    if row is None:
        raise AgentNotFound(agent_id=agent_id)
    return row


def list_(conn: Connection, query: CollectionQuery, alive_since: datetime.datetime
          ) -> list[dict[str, Any]]:
    rows = select_page(conn, AG, columns(alive_since), query)
    return [view(row, alive_since) for row in rows]


def update_(conn: Connection, agent_id: str, data: Mapping[str, Any]) -> Row:
    """The agent's row as it was before the change."""
    before = get_row(conn, agent_id)
    values = {k: data[k] for k in ("admin_state_up", "description") if k in data}
    if values:
        conn.execute(update(AG).where(AG.c.id == agent_id).values(**values))
    return before


def delete_(conn: Connection, agent_id: str) -> None:
    get_row(conn, agent_id)
    conn.execute(delete(AG).where(AG.c.id == agent_id))


# --- state reports -----------------------------------------------------------------------

def report(conn: Connection, state: Mapping[str, Any], when: datetime.datetime,
           down_time: int, enable_new_agents: bool) -> str:
    """Record one state report; the agent's status as the server sees it.

    Two first reports of one agent may race: both insert, the unique
    (agent_type, host) lets one in, and the other's transaction is retried
    (``Database.write``) and finds the row."""
    values: dict[str, Any] = {key: state[key] for key in REPORTED}
    values["configurations"] = state.get("configurations") or {}
    for key in ("availability_zone", "resources_synced"):
        if key in state:
            values[key] = state[key]
    stmt = select(AG.c.id, AG.c.heartbeat_timestamp).where(
        AG.c.agent_type == values["agent_type"], AG.c.host == values["host"])
    if conn.dialect.name != "sqlite":  # SQLite's write transaction already excludes others
        stmt = stmt.with_for_update()
    row = conn.execute(stmt).first()
    if row is None:
        conn.execute(AG.insert().values(
            id=new_uuid(), admin_state_up=enable_new_agents, description=None,
            created_at=when, started_at=when, heartbeat_timestamp=when, **values))
        return AGENT_NEW
    alive = row.heartbeat_timestamp >= cutoff(when, down_time)
    values["heartbeat_timestamp"] = when
    if state.get("start_flag"):
        values["started_at"] = when
    conn.execute(update(AG).where(AG.c.id == row.id).values(**values))
    return AGENT_ALIVE if alive else AGENT_REVIVED


# --- availability zones ------------------------------------------------------------------

def zones(conn: Connection) -> dict[tuple[str, str], str]:
    """(zone name, resource) -> available | unavailable: available while one of
    its agents is administratively up. Names compare exactly, whatever the
    database's collation."""
    found: dict[tuple[str, str], str] = {}
    for name, agent_type, up in conn.execute(
            select(AG.c.availability_zone, AG.c.agent_type, AG.c.admin_state_up)
            .where(AG.c.agent_type.in_(list(ZONE_RESOURCES)))):
        if not name:
            continue
        key = (name, ZONE_RESOURCES[agent_type])
        if up or found.get(key) != AVAILABLE:
            found[key] = AVAILABLE if up else UNAVAILABLE
    return found


def check_zones(conn: Connection, resource: str, names: Sequence[str]) -> None:
    """Every zone in ``names`` is one of ``resource``'s, or AvailabilityZoneNotFound."""
    if not names:
        return
    known = set(conn.execute(
        select(AG.c.availability_zone).where(
            AG.c.agent_type == AGENT_TYPES[resource],
            AG.c.availability_zone.in_(list(names)))).scalars())
    for name in names:
        if name not in known:
            raise AvailabilityZoneNotFound(availability_zone=name)


# --- availability zone hints of networks and routers -------------------------------------

def add_hints(conn: Connection, table: Any, item_id: str, hints: Sequence[str]) -> None:
    """Keep the hints of a network or router being made (no row when there are none);
    they are set only at create."""
    if hints:
        key = table.primary_key.columns.values()[0]
        conn.execute(table.insert().values({key.name: item_id,
                                            "hints": hints_text(list(hints))}))


def load_hints(conn: Connection, table: Any, ids: Sequence[str]) -> dict[str, list[str]]:
    key = table.primary_key.columns.values()[0]
    found: dict[str, list[str]] = {}
    for chunk in chunked(list(ids)):
        for item_id, text in conn.execute(select(key, table.c.hints).where(key.in_(chunk))):
            found[item_id] = json.loads(text)
    return found
