"""Which security groups each port belongs to (the ports' ``security_groups``)."""

from __future__ import annotations

from sqlalchemy import bindparam, delete, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement

from neutrino.db import models
from neutrino.db import rbac as shared
from neutrino.db.prepared import Prepared
from neutrino.db.query import Page
from neutrino.definitions import securitygroup as sg

B = models.security_group_port_bindings
G = models.security_groups
D = models.default_security_groups

def of_ports(conn: Connection, page: Page) -> dict[str, list[str]]:
    """The groups of the page's ports, sorted."""
    found: dict[str, list[str]] = {}
    for port_id, group_id in page.read(conn, select(B.c.port_id, B.c.security_group_id)
                                       .order_by(B.c.security_group_id), B.c.port_id):
        found.setdefault(port_id, []).append(group_id)
    return found


def usable(conn: Connection, group_ids: list[str], project_id: str) -> list[str]:
    """``group_ids`` if each is a group of ``project_id`` or shared with it;
    else SecurityGroupNotFound naming the others. Stateful and stateless groups
    do not mix on one port."""
    if not group_ids:
        return []
    owned = {group_id: stateful for group_id, stateful in conn.execute(
        select(G.c.id, G.c.stateful).where(G.c.id.in_(group_ids), or_(
            G.c.project_id == project_id,
            G.c.id.in_(shared.granted("security_group", project_id)))))}
    missing = [g for g in group_ids if g not in owned]
    if missing:
        raise sg.SecurityGroupNotFound(id=", ".join(missing))
    if len(set(owned.values())) > 1:
        raise sg.SecurityGroupConflict(reason=sg.MIXED_STATEFULNESS)
    return sorted(group_ids)


_ADD = Prepared(B.insert())
# A new port joins its project's default group in one statement, when the
# project has one: the group it joined, or nothing.
_ADD_TO_DEFAULT = Prepared(B.insert().from_select(
    ["port_id", "security_group_id"],
    select(bindparam("port_id", type_=B.c.port_id.type), D.c.security_group_id)
    .where(D.c.project_id == bindparam("project_id"))).returning(B.c.security_group_id))


def add(conn: Connection, port_id: str, group_ids: list[str]) -> None:
    """A port being created joins ``group_ids``."""
    _ADD.run_many(conn, [{"port_id": port_id, "security_group_id": g} for g in group_ids])


def add_to_default(conn: Connection, port_id: str, project_id: str) -> str | None:
    """A port being created joins its project's default group; None when the
    project has none yet."""
    return _ADD_TO_DEFAULT.scalar(conn, {"port_id": port_id, "project_id": project_id})


def replace(conn: Connection, port_id: str, group_ids: list[str]) -> None:
    conn.execute(delete(B).where(B.c.port_id == port_id))
    add(conn, port_id, group_ids)


def in_use(conn: Connection, group_id: str) -> bool:
    return conn.execute(select(B.c.port_id).where(
        B.c.security_group_id == group_id).limit(1)).first() is not None


def ports_in(group_ids: list[str]) -> ColumnElement:
    """Ports in any of ``group_ids``: the ``security_groups`` filter of port lists."""
    storable = [g for g in group_ids if "\x00" not in g]  # PostgreSQL cannot compare NUL
    return models.ports.c.id.in_(select(B.c.port_id).where(
        B.c.security_group_id.in_(storable)))
