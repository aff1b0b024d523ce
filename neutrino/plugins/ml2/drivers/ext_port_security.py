"""port_security: ports are filtered unless their network or they say otherwise."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.util import chunked
from neutrino.definitions.port_security import ENABLED
from neutrino.plugins.ml2.api import ExtensionDriver

PS = models.port_security


def _store(conn: Connection, resource_id: str, enabled: bool) -> None:
    conn.execute(delete(PS).where(PS.c.resource_id == resource_id))
    conn.execute(PS.insert().values(resource_id=resource_id, enabled=enabled))


def _load(conn: Connection, ids: list[str]) -> dict[str, bool]:
    found = {}
    for chunk in chunked(ids):
        found.update(conn.execute(select(PS.c.resource_id, PS.c.enabled)
                                  .where(PS.c.resource_id.in_(chunk))).all())
    return found


class PortSecurityExtensionDriver(ExtensionDriver):
    extension_alias = "port-security"

    def process_create_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        view[ENABLED] = data.get(ENABLED, True)
        _store(conn, view["id"], view[ENABLED])

    def process_update_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        if ENABLED in data:
            _store(conn, view["id"], data[ENABLED])
            view[ENABLED] = data[ENABLED]

    def process_create_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        enabled = data.get(ENABLED)
        if enabled is None:  # the network's value is the port's default
            enabled = _load(conn, [view["network_id"]]).get(view["network_id"], True)
        _store(conn, view["id"], enabled)
        view[ENABLED] = enabled

    def process_update_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        self.process_update_network(conn, data, view)

    def extend_networks(self, conn: Connection, views: list[dict[str, Any]]) -> None:
        values = _load(conn, [v["id"] for v in views])
        for view in views:
            view[ENABLED] = values.get(view["id"], True)

    def extend_ports(self, conn: Connection, views: list[dict[str, Any]]) -> None:
        self.extend_networks(conn, views)

    def filter_clauses(self, collection: str, query: Any) -> list:
        values = query.pop_filter(ENABLED)
        if values is None:
            return []
        table = models.networks if collection == "networks" else models.ports
        parts = [table.c.id.in_(select(PS.c.resource_id).where(PS.c.enabled.in_(values)))]
        if True in values:  # no row means the default, enabled
            parts.append(table.c.id.not_in(select(PS.c.resource_id)))
        return [or_(*parts)]
