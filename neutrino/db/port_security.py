"""port_security's stored values: whether a network or a port is filtered.

Read by the port_security driver and by those whose attributes depend on it
(allowed address pairs, security groups), which may live in a service.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, bindparam, delete, func, select, true
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.prepared import Prepared
from neutrino.db.query import Page

NETWORKS = models.network_port_security
PORTS = models.port_port_security


def key(table: Table) -> Any:
    return table.c.network_id if table is NETWORKS else table.c.port_id


_INSERT = {table: Prepared(table.insert()) for table in (NETWORKS, PORTS)}
_ENABLED = {table: Prepared(select(table.c.enabled).where(key(table) == bindparam("id")))
            for table in (NETWORKS, PORTS)}


#: a new port's value when it gives none: its network's (on when that has none),
#: read and written in one round trip
_INSERT_NETWORKS_VALUE = Prepared(PORTS.insert().from_select(
    ["port_id", "enabled"],
    select(bindparam("port_id"), func.coalesce(
        select(NETWORKS.c.enabled).where(NETWORKS.c.network_id == bindparam("network_id"))
        .scalar_subquery(), true())),
).returning(PORTS.c.enabled))


def insert(conn: Connection, table: Table, owner_id: str, enabled: bool) -> None:
    """The value of a network or port being created (it has none yet)."""
    _INSERT[table].run(conn, {key(table).name: owner_id, "enabled": enabled})


def insert_networks_value(conn: Connection, port_id: str, network_id: str) -> bool:
    """A port being created takes its network's value; which it was."""
    return bool(_INSERT_NETWORKS_VALUE.scalar(conn, {"port_id": port_id,
                                                     "network_id": network_id}))


def store(conn: Connection, table: Table, owner_id: str, enabled: bool) -> None:
    conn.execute(delete(table).where(key(table) == owner_id))
    insert(conn, table, owner_id, enabled)


def unsecured(conn: Connection, table: Table, page: Page) -> set[str]:
    """The networks or ports of ``page`` whose value is off: almost all are
    on, so a list reads only the few rows that are not."""
    column = key(table)
    return {row[0] for row in page.read(
        conn, select(column).where(table.c.enabled.is_(False)), column)}


def _secured(conn: Connection, table: Table, owner_id: str) -> bool:
    """The stored value; no row (or no port_security driver) is on."""
    value = _ENABLED[table].scalar(conn, {"id": owner_id})
    return True if value is None else bool(value)


def network_secured(conn: Connection, network_id: str) -> bool:
    return _secured(conn, NETWORKS, network_id)


def port_secured(conn: Connection, port_id: str) -> bool:
    return _secured(conn, PORTS, port_id)
