"""security_group: the ports' ``security_groups``, as Neutron's ML2 keeps them.

A port joins its project's default group unless the request names groups (an
empty list is none); ports of the network itself (``network:*`` owners) join
none. With port security off a port may have no group. A network created in a
project also makes the project's default group, as in Neutron.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from neutrino.config import Config
from neutrino.db import models
from neutrino.db.port_security import network_secured, port_secured
from neutrino.db.query import Page
from neutrino.db.quota import QuotaEngine
from neutrino.definitions import securitygroup as sg
from neutrino.definitions.port_security import ENABLED
from neutrino.plugins.extension_driver import ExtensionDriver
from neutrino.services.secgroups import bindings, groups, rules

GROUPS = sg.SECURITY_GROUPS
NETWORK_OWNER = "network:"


class SecurityGroupExtensionDriver(ExtensionDriver):
    # The security-group extension is claimed by the plugin serving its resources.
    extension_alias = ""
    port_attributes = frozenset({GROUPS})

    def __init__(self, conf: Config):
        super().__init__(conf)
        # Quotas read from the same options and tables as the API's: the default
        # group's rules count against the project's security_group_rule quota.
        self.quota = QuotaEngine(conf.quotas)
        self.quota.register("security_group_rule", rules.R)
        self.port_security = "port_security" in conf.ml2.extension_drivers

    def process_create_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        if data.get("project_id"):
            groups.ensure_default(conn, data["project_id"], self.quota)

    def process_create_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        requested = data.get(GROUPS)
        if not self._secured(conn, data, view):
            if requested:
                raise sg.PortSecurityAndIPRequiredForSecurityGroups()
            view[GROUPS] = []
        elif view["device_owner"].startswith(NETWORK_OWNER):
            view[GROUPS] = []
        elif requested is None:
            view[GROUPS] = [self._join_default(conn, view)]
        else:
            view[GROUPS] = bindings.usable(conn, requested, view["project_id"])
            bindings.add(conn, view["id"], view[GROUPS])

    def _join_default(self, conn: Connection, view: dict[str, Any]) -> str:
        """The port joins its project's default group (made now for the first port)."""
        joined = bindings.add_to_default(conn, view["id"], view["project_id"])
        if joined is None:
            joined = groups.ensure_default(conn, view["project_id"], self.quota)
            bindings.add(conn, view["id"], [joined])
        return joined

    def process_update_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        port_id = view["id"]
        if GROUPS not in data and (not self.port_security or ENABLED not in data):
            return
        if self.port_security and ENABLED in data:
            secured = bool(data[ENABLED])
        else:
            secured = not self.port_security or port_secured(conn, port_id)
        if GROUPS in data:
            requested = data[GROUPS] or []
            if not secured and requested:
                raise sg.PortSecurityAndIPRequiredForSecurityGroups()
            owner = data.get("device_owner") or ""
            chosen = [] if owner.startswith(NETWORK_OWNER) else bindings.usable(
                conn, requested, _project_of(conn, port_id))
            bindings.replace(conn, port_id, chosen)
        elif not secured and bindings.of_ports(conn, Page([port_id])).get(port_id):
            raise sg.PortSecurityPortHasSecurityGroup()

    def extend_ports(self, conn: Connection, views: list[dict[str, Any]], page: Page) -> None:
        found = bindings.of_ports(conn, page)
        for view in views:
            view[GROUPS] = found.get(view["id"], [])

    def filter_clauses(self, collection: str, query: Any) -> list:
        wanted = query.pop_filter(GROUPS) if collection == "ports" else None
        return [] if wanted is None else [bindings.ports_in(wanted)]

    # --- port security, when its driver is loaded ---------------------------------------

    def _secured(self, conn: Connection, data: dict[str, Any], view: dict[str, Any]) -> bool:
        if not self.port_security:
            return True
        if ENABLED in view:  # the port_security driver has decided already
            return bool(view[ENABLED])
        if data.get(ENABLED) is not None:
            return bool(data[ENABLED])
        return not self.port_security or network_secured(conn, view["network_id"])


def _project_of(conn: Connection, port_id: str) -> str:
    P = models.ports
    return conn.execute(select(P.c.project_id).where(P.c.id == port_id)).scalar_one()
