"""extra_dhcp_opts: built into ML2, as Neutron offers it without configuration.

An update merges, as in Neutron: a listed option with a value is added or
replaced, one with a null value is removed, unlisted ones stay; an empty
list changes nothing.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.query import Page
from neutrino.definitions.extra_dhcp_opt import (
    EXTRA_DHCP_OPTS,
    NeutronDbObjectDuplicateEntry,
    storable,
)
from neutrino.plugins.extension_driver import ExtensionDriver

EDO = models.extra_dhcp_opts
Key = tuple[str, int]  # (opt_name, ip_version)
Options = dict[Key, str]  # in the port's order


def _duplicate(port_id: str, key: Key) -> NeutronDbObjectDuplicateEntry:
    return NeutronDbObjectDuplicateEntry(
        object_type="ExtraDhcpOpt", attributes=["port_id", "opt_name", "ip_version"],
        values=[port_id, *key])


def _views(options: Options) -> list[dict[str, Any]]:
    return [{"opt_name": name, "opt_value": value, "ip_version": version}
            for (name, version), value in options.items()]


def _insert(conn: Connection, port_id: str, options: Options) -> None:
    if options:
        conn.execute(EDO.insert(), [
            {"port_id": port_id, "opt_name": name, "ip_version": version,
             "opt_value": value, "position": n}
            for n, ((name, version), value) in enumerate(options.items())])


def _load(conn: Connection, page: Page) -> dict[str, Options]:
    found: dict[str, Options] = {}
    for port_id, name, version, value in page.read(
            conn, select(EDO.c.port_id, EDO.c.opt_name, EDO.c.ip_version, EDO.c.opt_value)
            .order_by(EDO.c.port_id, EDO.c.position), EDO.c.port_id):
        found.setdefault(port_id, {})[(name, version)] = value
    return found


class ExtraDhcpOptExtensionDriver(ExtensionDriver):
    extension_alias = "extra_dhcp_opt"
    port_attributes = frozenset({EXTRA_DHCP_OPTS})

    def process_create_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        options: Options = {}
        for opt in data.get(EXTRA_DHCP_OPTS) or []:
            if not storable(opt["opt_name"], opt["opt_value"]):
                continue  # a null value is no option
            key = (opt["opt_name"], opt["ip_version"])
            if key in options:
                raise _duplicate(view["id"], key)
            options[key] = opt["opt_value"]
        _insert(conn, view["id"], options)
        view[EXTRA_DHCP_OPTS] = _views(options)

    def process_update_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        wanted = data.get(EXTRA_DHCP_OPTS)
        if not wanted:
            return
        port_id = view["id"]
        current = _load(conn, Page([port_id])).get(port_id, {})
        options = dict(current)
        added: set[Key] = set()
        for opt in wanted:
            name, value = opt["opt_name"], opt["opt_value"]
            key = (name, opt["ip_version"])
            # Neutron matches each entry against the options as they were before
            # this request, so a second new entry for one option collides.
            if key in current:
                if value is None:
                    options.pop(key, None)
                elif storable(name, value):
                    options[key] = value
            elif storable(name, value):
                if key in added:
                    raise _duplicate(port_id, key)
                added.add(key)
                options[key] = value
        if list(options.items()) != list(current.items()):
            conn.execute(delete(EDO).where(EDO.c.port_id == port_id))
            _insert(conn, port_id, options)

    def extend_ports(self, conn: Connection, views: list[dict[str, Any]], page: Page) -> None:
        found = _load(conn, page)
        for view in views:
            view[EXTRA_DHCP_OPTS] = _views(found.get(view["id"], {}))
