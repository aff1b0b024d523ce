"""port_security's stored values: whether a network or a port is filtered.

Read by the port_security driver and by those whose attributes depend on it
(allowed address pairs, security groups), which may live in a service.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, delete, select
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.util import chunked

NETWORKS = models.network_port_security
PORTS = models.port_port_security


def key(table: Table) -> Any:
    return table.c.network_id if table is NETWORKS else table.c.port_id


def store(conn: Connection, table: Table, owner_id: str, enabled: bool) -> None:
    column = key(table)
    conn.execute(delete(table).where(column == owner_id))
    conn.execute(table.insert().values({column.name: owner_id, "enabled": enabled}))


def load(conn: Connection, table: Table, ids: list[str]) -> dict[str, bool]:
    column = key(table)
    found: dict[str, bool] = {}
    for chunk in chunked(ids):
        found.update(conn.execute(select(column, table.c.enabled).where(column.in_(chunk))).all())
    return found


def network_secured(conn: Connection, network_id: str) -> bool:
    """The network's stored value; no row (or no port_security driver) is on."""
    return load(conn, NETWORKS, [network_id]).get(network_id, True)


def port_secured(conn: Connection, port_id: str) -> bool:
    return load(conn, PORTS, [port_id]).get(port_id, True)
