"""RBAC entries of security groups, subnet pools, address scopes and address
groups through the API (``access_as_shared`` only); the rules they follow are
``neutrino.db.rbac``'s."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import rbac as shared
from neutrino.definitions import rbac as r

E = shared.E


def create(conn: Connection, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
    kind = shared.TYPES[data["object_type"]]
    if data["action"] != shared.SHARED:
        raise r.InvalidActionForType(action=data["action"], object_type=kind.object_type,
                                     valid_actions=(shared.SHARED,))
    obj = shared.locked(conn, kind, data["object_id"])
    if not ctx.is_admin and obj.project_id != ctx.project_id:
        if not shared.accessible(conn, kind.object_type, obj, ctx.project_id):
            raise kind.not_found(obj.id)
        raise exc.InvalidInput(
            error_message="Only admins can manipulate policies on objects they do not own")
    return shared.insert(conn, kind.object_type, obj.id, data["project_id"], data["target_tenant"])


def update_target(conn: Connection, entry: Row, target: str) -> None:
    kind = shared.TYPES[entry.object_type]
    obj = shared.locked(conn, kind, entry.object_id)
    shared.check_removal(conn, kind, obj, entry.target_project, target)
    if target in shared.targets(conn, kind, obj.id, None):
        raise r.DuplicateRbacPolicy()
    if kind.object_type == "subnetpool":
        shared.check_scope_reaches(conn, obj.id, target)
    conn.execute(update(E).where(E.c.id == entry.id).values(target_project=target))
    shared.mirror(conn, kind, obj.id)


def delete_(conn: Connection, entry: Row) -> None:
    kind = shared.TYPES[entry.object_type]
    obj = shared.locked(conn, kind, entry.object_id)
    shared.check_removal(conn, kind, obj, entry.target_project)
    conn.execute(E.delete().where(E.c.id == entry.id))
    shared.mirror(conn, kind, obj.id)
