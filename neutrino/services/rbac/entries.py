"""RBAC entries of every object type read as one collection: the network
entries (``networkrbacs``) and the others (``rbac_entries``) under one union,
so that filters, sorting and pages work across them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import literal, select, union_all
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, owned, select_page
from neutrino.definitions import rbac as r

R, E = models.networkrbacs, models.rbac_entries

ALL = union_all(
    select(R.c.id, R.c.project_id, literal("network").label("object_type"), R.c.object_id,
           R.c.target_project, R.c.action),
    select(E.c.id, E.c.project_id, E.c.object_type, E.c.object_id, E.c.target_project,
           E.c.action),
).subquery("rbac_policies")

COLUMNS = {"id": ALL.c.id, "project_id": ALL.c.project_id, "tenant_id": ALL.c.project_id,
           "object_type": ALL.c.object_type, "object_id": ALL.c.object_id,
           "target_tenant": ALL.c.target_project, "action": ALL.c.action}


def find(conn: Connection, ctx: Context, policy_id: str) -> Row:
    """The entry, if the caller may see it (its owner's business, and the
    admins'); the 404 names its type when it exists."""
    row = conn.execute(select(ALL).where(ALL.c.id == policy_id)).first()
    if row is None:
        raise r.RbacPolicyNotFound(object_type="unknown", id=policy_id)
    if not ctx.is_admin and row.project_id != ctx.project_id:
        raise r.RbacPolicyNotFound(object_type=row.object_type, id=policy_id)
    return row


def list_(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    if query.marker is not None:
        find(conn, ctx, query.marker)
    return [r.view(row) for row in select_page(conn, ALL, COLUMNS, query, owned(ALL, ctx))]
