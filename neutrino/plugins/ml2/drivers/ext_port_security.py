"""port_security: ports are filtered unless their network or they say otherwise."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, delete, or_, select
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.util import chunked
from neutrino.definitions.port_security import ENABLED
from neutrino.plugins.ml2.api import ExtensionDriver

NETWORKS = models.network_port_security
PORTS = models.port_port_security


def _key(table: Table) -> Any:
    return table.c.network_id if table is NETWORKS else table.c.port_id


def _store(conn: Connection, table: Table, owner_id: str, enabled: bool) -> None:
    key = _key(table)
    conn.execute(delete(table).where(key == owner_id))
    conn.execute(table.insert().values({key.name: owner_id, "enabled": enabled}))


def _load(conn: Connection, table: Table, ids: list[str]) -> dict[str, bool]:
    key = _key(table)
    found: dict[str, bool] = {}
    for chunk in chunked(ids):
        found.update(conn.execute(select(key, table.c.enabled).where(key.in_(chunk))).all())
    return found


def network_secured(conn: Connection, network_id: str) -> bool:
    """The network's stored value; no row (or no port_security driver) is on."""
    return _load(conn, NETWORKS, [network_id]).get(network_id, True)


def port_secured(conn: Connection, port_id: str) -> bool:
    return _load(conn, PORTS, [port_id]).get(port_id, True)


class PortSecurityExtensionDriver(ExtensionDriver):
    extension_alias = "port-security"

    def process_create_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        view[ENABLED] = data.get(ENABLED, True)
        _store(conn, NETWORKS, view["id"], view[ENABLED])

    def process_update_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        if ENABLED in data:
            _store(conn, NETWORKS, view["id"], data[ENABLED])
            view[ENABLED] = data[ENABLED]

    def process_create_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        enabled = data.get(ENABLED)
        if enabled is None:  # the network's value is the port's default
            enabled = network_secured(conn, view["network_id"])
        _store(conn, PORTS, view["id"], enabled)
        view[ENABLED] = enabled

    def process_update_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        if ENABLED in data:
            _store(conn, PORTS, view["id"], data[ENABLED])
            view[ENABLED] = data[ENABLED]

    def extend_networks(self, conn: Connection, views: list[dict[str, Any]]) -> None:
        self._extend(conn, NETWORKS, views)

    def extend_ports(self, conn: Connection, views: list[dict[str, Any]]) -> None:
        self._extend(conn, PORTS, views)

    @staticmethod
    def _extend(conn: Connection, table: Table, views: list[dict[str, Any]]) -> None:
        values = _load(conn, table, [v["id"] for v in views])
        for view in views:
            view[ENABLED] = values.get(view["id"], True)

    def filter_clauses(self, collection: str, query: Any) -> list:
        values = query.pop_filter(ENABLED)
        if values is None:
            return []
        owners, table = ((models.networks, NETWORKS) if collection == "networks"
                         else (models.ports, PORTS))
        key = _key(table)
        parts = [owners.c.id.in_(select(key).where(table.c.enabled.in_(values)))]
        if True in values:  # no row means the default, enabled
            parts.append(owners.c.id.not_in(select(key)))
        return [or_(*parts)]
