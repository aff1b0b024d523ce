"""``security_group`` logs: what a request may name, and which logs reach a port.

A log names a group (``resource_id``), a port (``target_id``), both (the port
must be in the group), or neither: then every port of the log's project is
logged, whatever its groups, as in Neutron.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import owned
from neutrino.definitions import logging as lg
from neutrino.plugins.base import CorePlugin
from neutrino.rpc.contracts.logging import LogInfo
from neutrino.services.logging.drivers import Binding, Drivers

SG = models.security_groups
SGB = models.security_group_port_bindings
B = models.port_bindings
L = models.logs


class SecurityGroupLogs:
    """The ``neutrino.loggable_types`` entry of ``security_group``."""

    def validate(self, conn: Connection, ctx: Context, data: Mapping[str, Any],
                 drivers: Drivers, core: CorePlugin) -> None:
        resource_id, target_id = data.get("resource_id"), data.get("target_id")
        if resource_id and conn.execute(select(SG.c.id).where(
                SG.c.id == resource_id, *owned(SG, ctx))).first() is None:
            raise lg.ResourceNotFound(resource_id=resource_id)
        if target_id:
            try:
                core.port_row_in(conn, ctx, target_id)
            except exc.NotFound:
                raise lg.TargetResourceNotFound(target_id=target_id) from None
            if not drivers.logs_port(lg.SECURITY_GROUP, binding(conn, target_id)):
                raise lg.LoggingTypeNotSupported(log_type=lg.SECURITY_GROUP,
                                                 port_id=target_id)
        if resource_id and target_id and conn.execute(select(SGB.c.port_id).where(
                SGB.c.port_id == target_id, SGB.c.security_group_id == resource_id)
                ).first() is None:
            raise lg.InvalidResourceConstraint(
                resource=lg.SECURITY_GROUP, resource_id=resource_id,
                target_resource="port", target_id=target_id)


def binding(conn: Connection, port_id: str) -> Binding:
    """The port's active binding (an unbound port's when it has none)."""
    row = conn.execute(select(B.c.vif_type, B.c.vnic_type).where(
        B.c.port_id == port_id, B.c.status == "ACTIVE")).first()
    return Binding("unbound", "normal") if row is None else Binding(row.vif_type,
                                                                     row.vnic_type)


def logs_of_ports(conn: Connection, port_ids: Iterable[str]) -> dict[str, list[LogInfo]]:
    """port id -> the enabled logs that reach it (every port asked for is a key):
    those naming it, else those naming one of its groups, else those naming
    neither, of a project that owns one of its groups (Neutron's reading)."""
    wanted = sorted(set(port_ids))
    found: dict[str, list[LogInfo]] = {port_id: [] for port_id in wanted}
    if not wanted:
        return found
    groups: dict[str, dict[str, str]] = {}  # port -> its group -> that group's project
    for port_id, group_id, project in conn.execute(
            select(SGB.c.port_id, SGB.c.security_group_id, SG.c.project_id)
            .join(SG, SG.c.id == SGB.c.security_group_id).where(SGB.c.port_id.in_(wanted))):
        groups.setdefault(port_id, {})[group_id] = project
    group_ids = sorted({g for of_port in groups.values() for g in of_port})
    projects = sorted({p for of_port in groups.values() for p in of_port.values()})
    rows = conn.execute(select(L).where(
        L.c.enabled.is_(True), L.c.resource_type == lg.SECURITY_GROUP,
        or_(L.c.target_id.in_(wanted), L.c.resource_id.in_(group_ids),
            and_(L.c.resource_id.is_(None), L.c.target_id.is_(None),
                 L.c.project_id.in_(projects)))).order_by(L.c.id)).all()
    for port_id in wanted:
        mine = groups.get(port_id, {})
        found[port_id] = [LogInfo(id=row.id, project_id=row.project_id, event=row.event)
                          for row in rows if _reaches(row, port_id, mine)]
    return found


def _reaches(row: Any, port_id: str, groups: Mapping[str, str]) -> bool:
    if row.target_id is not None:
        return bool(row.target_id == port_id)
    if row.resource_id is not None:
        return row.resource_id in groups
    return row.project_id in groups.values()


SECURITY_GROUP = SecurityGroupLogs()
