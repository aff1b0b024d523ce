"""security-groups-default-statefulness: the ``stateful`` value a new security
group takes when its request gives none, set per project or system-wide
(``project_id`` null), as Neutron keeps it. The project's setting wins, then
the system-wide one, then true."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, select_page
from neutrino.definitions.validators import new_uuid

T = models.sg_default_statefulness
COLUMNS = {"id": T.c.id, "project_id": T.c.project_id, "tenant_id": T.c.project_id,
           "stateful": T.c.stateful}


class SecurityGroupDefaultStatefulnessNotFound(exc.NotFound):
    message = "Security group default statefulness %(id)s could not be found."


class SecurityGroupDefaultStatefulnessAlreadyExists(exc.Conflict):
    message = ("A security group default statefulness setting already exists for "
               "project '%(project_id)s'.")


def view(row: Any) -> dict[str, Any]:
    return {"id": row.id, "project_id": row.project_id, "tenant_id": row.project_id,
            "stateful": row.stateful}


def _visible(ctx: Context) -> list:
    """A project reads its own setting (the system-wide one is an admin's)."""
    if ctx.is_admin:
        return []
    return [T.c.project_id == ctx.project_id]


def get_row(conn: Connection, ctx: Context, setting_id: str) -> Row:
    row = conn.execute(select(T).where(T.c.id == setting_id, *_visible(ctx))).first()
    if row is None:
        raise SecurityGroupDefaultStatefulnessNotFound(id=setting_id)
    return row


def list_(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    return [view(row) for row in select_page(conn, T, COLUMNS, query, _visible(ctx))]


def create(conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
    project_id = data.get("project_id")
    taken = select(T.c.id).where(T.c.project_id.is_(None) if project_id is None
                                 else T.c.project_id == project_id)
    if conn.execute(taken).first() is not None:
        raise SecurityGroupDefaultStatefulnessAlreadyExists(
            project_id=project_id or "system-wide")
    row = {"id": new_uuid(), "project_id": project_id, "stateful": data.get("stateful", True)}
    conn.execute(T.insert().values(**row))
    return view(SimpleNamespace(**row))


def update_(conn: Connection, ctx: Context, setting_id: str, data: dict[str, Any]
            ) -> dict[str, Any]:
    get_row(conn, ctx, setting_id)
    if "stateful" in data:
        conn.execute(update(T).where(T.c.id == setting_id).values(stateful=data["stateful"]))
    return view(get_row(conn, ctx, setting_id))


def delete_(conn: Connection, ctx: Context, setting_id: str) -> None:
    get_row(conn, ctx, setting_id)
    conn.execute(delete(T).where(T.c.id == setting_id))


def default_for(conn: Connection, project_id: str) -> bool:
    """The stateful value of a new group of ``project_id`` that asked for none."""
    found: dict[str | None, bool] = {
        row.project_id: row.stateful for row in conn.execute(
            select(T.c.project_id, T.c.stateful).where(
                (T.c.project_id == project_id) | T.c.project_id.is_(None)))}
    return found.get(project_id, found.get(None, True))
