"""port_security: ports are filtered unless their network or they say otherwise."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, or_, select
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.port_security import (
    NETWORKS,
    PORTS,
    insert,
    insert_networks_value,
    key,
    store,
    unsecured,
)
from neutrino.db.query import Page
from neutrino.definitions.port_security import ENABLED
from neutrino.plugins.extension_driver import ExtensionDriver


class PortSecurityExtensionDriver(ExtensionDriver):
    extension_alias = "port-security"
    port_attributes = frozenset({ENABLED})

    def process_create_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        view[ENABLED] = data.get(ENABLED, True)
        insert(conn, NETWORKS, view["id"], view[ENABLED])

    def process_update_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        if ENABLED in data:
            store(conn, NETWORKS, view["id"], data[ENABLED])
            view[ENABLED] = data[ENABLED]

    def process_create_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        enabled = data.get(ENABLED)
        if enabled is None:  # the network's value is the port's default
            view[ENABLED] = insert_networks_value(conn, view["id"], view["network_id"])
        else:
            insert(conn, PORTS, view["id"], enabled)
            view[ENABLED] = enabled

    def process_update_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        if ENABLED in data:
            store(conn, PORTS, view["id"], data[ENABLED])
            view[ENABLED] = data[ENABLED]

    def extend_networks(self, conn: Connection, views: list[dict[str, Any]], page: Page
                        ) -> None:
        self._extend(conn, NETWORKS, views, page)

    def extend_ports(self, conn: Connection, views: list[dict[str, Any]], page: Page) -> None:
        self._extend(conn, PORTS, views, page)

    @staticmethod
    def _extend(conn: Connection, table: Table, views: list[dict[str, Any]], page: Page
                ) -> None:
        off = unsecured(conn, table, page)
        for view in views:
            view[ENABLED] = view["id"] not in off

    def filter_clauses(self, collection: str, query: Any) -> list:
        values = query.pop_filter(ENABLED)
        if values is None:
            return []
        owners, table = ((models.networks, NETWORKS) if collection == "networks"
                         else (models.ports, PORTS))
        column = key(table)
        parts = [owners.c.id.in_(select(column).where(table.c.enabled.in_(values)))]
        if True in values:  # no row means the default, enabled
            parts.append(owners.c.id.not_in(select(column)))
        return [or_(*parts)]
