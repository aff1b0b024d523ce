"""``firewall_group`` packet logs (the logging plugin's seam, for FWaaS): what a
log of a firewall group may name, the driver that logs them (the L3 agents'
``fwaas_v2`` extension, when ``firewall_v2`` is loaded), and which logs reach
the groups a router enforces.

A log names a group (``resource_id``), a port of one (``target_id``; both:
the port must be in the group), or neither: every group of the log's
project. What a log asks applies to the whole group it reaches (its lines
name the group), as the routers' chains are the group's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.config import Config
from neutrino.context import Context
from neutrino.db import models
from neutrino.definitions import logging as lg
from neutrino.plugins.base import CorePlugin
from neutrino.services.firewall import store
from neutrino.services.logging.drivers import Drivers, LogDriver

FIREWALL_GROUP = store.FIREWALL_GROUP
L = models.logs


class FirewallGroupLogs:
    """The ``neutrino.loggable_types`` entry of ``firewall_group``."""

    def validate(self, conn: Connection, ctx: Context, data: Mapping[str, Any],
                 drivers: Drivers, core: CorePlugin) -> None:
        resource_id, target_id = data.get("resource_id"), data.get("target_id")
        if resource_id:
            try:
                store.group_row(conn, ctx, resource_id)
            except exc.NotFound:
                raise lg.ResourceNotFound(resource_id=resource_id) from None
        if target_id:
            try:
                core.port_row_in(conn, ctx, target_id)
            except exc.NotFound:
                raise lg.TargetResourceNotFound(target_id=target_id) from None
        if resource_id and target_id and store.groups_of_ports(
                conn, [target_id]).get(target_id) != resource_id:
            raise lg.InvalidResourceConstraint(
                resource=FIREWALL_GROUP, resource_id=resource_id, target_resource="port",
                target_id=target_id)


class FirewallLogDriver(LogDriver):
    """The L3 agents' ``fwaas_v2`` extension: NFLOG in the routers' firewall chains."""

    name = "fwaas_v2"
    resource_types = (FIREWALL_GROUP,)

    @classmethod
    def enabled(cls, conf: Config) -> bool:
        return "firewall_v2" in (conf.DEFAULT.service_plugins or ())


def groups_named(conn: Connection, logs: Iterable[Mapping[str, Any]]) -> list[str]:
    """The groups that firewall_group logs reach (their enforcement changes)."""
    ids: set[str] = set()
    for log in logs:
        if log["resource_type"] != FIREWALL_GROUP:
            continue
        if log["resource_id"]:
            ids.add(log["resource_id"])
        else:
            ids.update(conn.execute(select(store.FG.c.id).where(
                store.FG.c.project_id == log["project_id"])).scalars())
    return sorted(ids)


def delete_of_group(conn: Connection, group_id: str) -> None:
    """A group's logs go with it."""
    conn.execute(delete(L).where(L.c.resource_type == FIREWALL_GROUP,
                                 L.c.resource_id == group_id))


FIREWALL_GROUP_LOGS = FirewallGroupLogs()
