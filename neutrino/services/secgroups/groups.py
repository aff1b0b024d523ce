"""Security groups in the database: views, visibility, create (with their first
rules), update, delete, and each project's default group."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db import rbac as shared
from neutrino.db.query import CollectionQuery, api_columns, find_row, select_page
from neutrino.db.quota import QuotaEngine
from neutrino.db.util import bump, check_revision, now, timestamp
from neutrino.definitions import securitygroup as sg
from neutrino.definitions.validators import new_uuid
from neutrino.services.secgroups import bindings, default_rules, rules, statefulness

G = models.security_groups
D = models.default_security_groups

COLUMNS = api_columns(G, "stateful")


TYPE = "security_group"


def visible(ctx: Context) -> list:
    """The project's groups and those shared with it (rbac-security-groups)."""
    return shared.visible(G, TYPE, ctx)


def get_row(conn: Connection, ctx: Context, group_id: str, for_update: bool = False) -> Row:
    return find_row(conn, G, group_id, visible(ctx),
                    lambda: sg.SecurityGroupNotFound(id=group_id), for_update)


def view(row: Any, rule_views: list[dict[str, Any]], tag_list: list[str],
         shared_with_caller: bool = False) -> dict[str, Any]:
    """``shared_with_caller``: an RBAC entry shares it with the caller's project
    or with every project."""
    return {
        "id": row.id, "name": row.name, "tenant_id": row.project_id,
        "project_id": row.project_id, "description": row.description,
        "security_group_rules": rule_views, "stateful": row.stateful,
        "shared": shared_with_caller,
        "tags": tag_list, "created_at": timestamp(row.created_at),
        "updated_at": timestamp(row.updated_at), "revision_number": row.revision_number,
    }


def get(conn: Connection, ctx: Context, group_id: str) -> dict[str, Any]:
    row = get_row(conn, ctx, group_id)
    return view(row, rules.of_groups(conn, [row.id]).get(row.id, []), tags.of(conn, row.id),
                bool(shared.shared_with(conn, TYPE, [row.id], ctx.project_id)))


def list_(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    columns = {**COLUMNS, "shared": G.c.id.in_(shared.granted(TYPE, ctx.project_id))}
    if query.marker is not None:
        get_row(conn, ctx, query.marker)
    rows = select_page(conn, G, columns, query, visible(ctx))
    ids = [r.id for r in rows]
    rule_map = rules.of_groups(conn, ids)
    tag_map = tags.load(conn, ids)
    mine = shared.shared_with(conn, TYPE, ids, ctx.project_id)
    return [view(r, rule_map.get(r.id, []), tag_map.get(r.id, []), r.id in mine)
            for r in rows]


def insert(conn: Connection, project_id: str, name: str, description: str,
           stateful: bool = True, default: bool = False) -> dict[str, Any]:
    """A new group with its first rules, as the template of default rules says
    (unchanged, it allows all egress, and a default group all ingress from its
    own members)."""
    when, group_id = now(), new_uuid()
    row = {"id": group_id, "project_id": project_id, "name": name,
           "description": description, "stateful": stateful, "created_at": when,
           "updated_at": when, "revision_number": 1}
    conn.execute(G.insert().values(**row))
    if default:  # taken first: a concurrent first use waits here, then retries
        conn.execute(D.insert().values(project_id=project_id, security_group_id=group_id))
    wanted = default_rules.for_new_group(conn, group_id, default)
    made = rules.insert(conn, [rules.row_of(group_id, project_id, r) for r in wanted],
                        in_default_group=default)
    made.sort(key=lambda r: (r["created_at"], r["id"]))  # the order reads give
    return view(SimpleNamespace(**row), made, [])


def initial_rule_count(conn: Connection, default: bool) -> int:
    return default_rules.count_for_new_group(conn, default)


def default_id(conn: Connection, project_id: str) -> str | None:
    return conn.execute(select(D.c.security_group_id).where(
        D.c.project_id == project_id)).scalar()


def ensure_default(conn: Connection, project_id: str, quota: QuotaEngine) -> str:
    """The project's default group, made now if it has none. Two first uses racing
    collide on the primary key of ``default_security_groups``: the loser's
    transaction is retried and finds the winner's group."""
    found = default_id(conn, project_id)
    if found is not None:
        return found
    quota.check(conn, project_id, "security_group_rule", initial_rule_count(conn, True))
    found = default_id(conn, project_id)  # made while we waited for the quota lock?
    if found is not None:
        return found
    return insert(conn, project_id, sg.DEFAULT_NAME, sg.DEFAULT_DESCRIPTION,
                  statefulness.default_for(conn, project_id), default=True)["id"]


def update(conn: Connection, ctx: Context, group_id: str, data: dict[str, Any],
           if_revision: int | None) -> None:
    row = get_row(conn, ctx, group_id, for_update=True)
    if row.name == sg.DEFAULT_NAME and "name" in data:
        raise sg.SecurityGroupCannotUpdateDefault()
    stateful = data.get("stateful")
    if stateful is not None and stateful != row.stateful and bindings.in_use(conn, group_id):
        raise sg.SecurityGroupInUse(id=group_id)
    values: dict[str, Any] = {k: data[k] for k in ("name", "description", "stateful")
                              if k in data}
    bump(conn, G, group_id, if_revision, values)


def delete_(conn: Connection, ctx: Context, group_id: str, if_revision: int | None
            ) -> set[str]:
    """Delete a group no port uses, its rules and the rules naming it as remote;
    the other groups that lost rules so."""
    if bindings.in_use(conn, group_id):
        raise sg.SecurityGroupInUse(id=group_id)
    row = get_row(conn, ctx, group_id, for_update=True)
    if row.name == sg.DEFAULT_NAME and not ctx.is_admin:
        raise sg.SecurityGroupCannotRemoveDefault()
    check_revision(conn, G, group_id, if_revision)
    R = rules.R
    naming = set(conn.execute(select(R.c.security_group_id).where(
        R.c.remote_group_id == group_id, R.c.security_group_id != group_id)).scalars())
    conn.execute(delete(R).where(or_(R.c.security_group_id == group_id,
                                     R.c.remote_group_id == group_id)))
    conn.execute(delete(D).where(D.c.security_group_id == group_id))
    tags.remove(conn, group_id)
    shared.forget(conn, TYPE, group_id)
    conn.execute(delete(G).where(G.c.id == group_id))
    return naming
