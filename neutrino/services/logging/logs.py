"""Logs in the database: what to log (a resource, a port, or all of a
project's), which event, and whether it is on."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, api_columns, find_row, owned, select_page
from neutrino.db.util import bump, check_revision, now, timestamp
from neutrino.definitions import logging as lg
from neutrino.definitions.validators import new_uuid

L = models.logs
COLUMNS = api_columns(L, "resource_type", "resource_id", "target_id", "event", "enabled")


def get_row(conn: Connection, ctx: Context, log_id: str, for_update: bool = False) -> Row:
    return find_row(conn, L, log_id, owned(L, ctx),
                    lambda: lg.LogResourceNotFound(log_id=log_id), for_update)


def view(row: Any) -> dict[str, Any]:
    return {
        "id": row.id, "name": row.name, "description": row.description,
        "project_id": row.project_id, "tenant_id": row.project_id,
        "resource_type": row.resource_type, "resource_id": row.resource_id,
        "target_id": row.target_id, "event": row.event, "enabled": bool(row.enabled),
        "created_at": timestamp(row.created_at), "updated_at": timestamp(row.updated_at),
        "revision_number": row.revision_number,
    }


def get(conn: Connection, ctx: Context, log_id: str) -> dict[str, Any]:
    return view(get_row(conn, ctx, log_id))


def list_(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    if query.marker is not None:
        get_row(conn, ctx, query.marker)
    return [view(r) for r in select_page(conn, L, COLUMNS, query, owned(L, ctx))]


def create(conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
    when = now()
    row = {"id": new_uuid(), "project_id": data["project_id"], "name": data.get("name", ""),
           "description": data.get("description", ""), "created_at": when,
           "updated_at": when, "revision_number": 0,
           "resource_type": data["resource_type"], "resource_id": data.get("resource_id"),
           "target_id": data.get("target_id"), "event": data.get("event", "ALL"),
           "enabled": bool(data.get("enabled", True))}
    conn.execute(L.insert().values(**row))
    return view(SimpleNamespace(**row))


def update(conn: Connection, ctx: Context, log_id: str, data: dict[str, Any],
           if_revision: int | None) -> Row:
    """The row as it was before."""
    before = get_row(conn, ctx, log_id, for_update=True)
    values: dict[str, Any] = {k: data[k] for k in ("name", "description", "enabled")
                              if k in data}
    bump(conn, L, log_id, if_revision, values)
    return before


def delete_(conn: Connection, ctx: Context, log_id: str, if_revision: int | None) -> Row:
    """The row deleted."""
    row = get_row(conn, ctx, log_id, for_update=True)
    check_revision(conn, L, log_id, if_revision)
    conn.execute(delete(L).where(L.c.id == log_id))
    return row


def delete_of_resource(conn: Connection, resource_type: str, resource_id: str) -> list[str]:
    """Delete the logs of one resource (its plugin deletes it); their ids."""
    found = list(conn.execute(select(L.c.id).where(
        L.c.resource_type == resource_type, L.c.resource_id == resource_id)).scalars())
    if found:
        conn.execute(delete(L).where(L.c.id.in_(found)))
    return found
