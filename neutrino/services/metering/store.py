"""Metering labels and rules in the database: rows, views, visibility, and
what the routers' sync data carries of them.

A label is seen by its project and, when shared, by every project; a rule by
its label's project (its project is its label's: rules store none).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, find_row, select_page
from neutrino.db.util import chunked
from neutrino.definitions import metering as mdef
from neutrino.definitions.validators import new_uuid

L = models.metering_labels
RU = models.metering_label_rules

LABEL_COLUMNS = {"id": L.c.id, "name": L.c.name, "description": L.c.description,
                 "project_id": L.c.project_id, "tenant_id": L.c.project_id,
                 "shared": L.c.shared}
_RULE_PROJECT = select(L.c.project_id).where(L.c.id == RU.c.metering_label_id
                                             ).scalar_subquery()
RULE_COLUMNS = {"id": RU.c.id, "metering_label_id": RU.c.metering_label_id,
                "direction": RU.c.direction, "excluded": RU.c.excluded,
                "remote_ip_prefix": RU.c.remote_ip_prefix,
                "source_ip_prefix": RU.c.source_ip_prefix,
                "destination_ip_prefix": RU.c.destination_ip_prefix,
                "project_id": _RULE_PROJECT, "tenant_id": _RULE_PROJECT}


# --- labels -----------------------------------------------------------------------------

def _labels_visible(ctx: Context) -> list:
    return [] if ctx.is_admin else [or_(L.c.project_id == ctx.project_id, L.c.shared)]


def label_view(row: Any) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "description": row.description,
            "shared": bool(row.shared), "project_id": row.project_id,
            "tenant_id": row.project_id}


def label_row(conn: Connection, ctx: Context, label_id: str, for_update: bool = False
              ) -> Row:
    return find_row(conn, L, label_id, _labels_visible(ctx),
                    lambda: mdef.MeteringLabelNotFound(label_id=label_id), for_update)


def labels(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    return [label_view(row) for row in select_page(conn, L, LABEL_COLUMNS, query,
                                                   _labels_visible(ctx))]


def create_label(conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
    row = {"id": new_uuid(), "project_id": data["project_id"],
           "name": data.get("name") or "", "description": data.get("description") or "",
           "shared": bool(data.get("shared", False))}
    conn.execute(L.insert().values(**row))
    return label_view(label_row(conn, Context.admin(), row["id"]))


def delete_label(conn: Connection, label_id: str) -> None:
    """The label and its rules (the foreign key cascades too, where enforced)."""
    conn.execute(delete(RU).where(RU.c.metering_label_id == label_id))
    conn.execute(delete(L).where(L.c.id == label_id))


# --- rules ------------------------------------------------------------------------------

def _rules_visible(ctx: Context) -> list:
    return [] if ctx.is_admin else [RU.c.metering_label_id.in_(
        select(L.c.id).where(L.c.project_id == ctx.project_id))]


def rule_view(row: Any, project_id: str | None) -> dict[str, Any]:
    return {"id": row.id, "metering_label_id": row.metering_label_id,
            "direction": row.direction, "excluded": bool(row.excluded),
            "remote_ip_prefix": row.remote_ip_prefix,
            "source_ip_prefix": row.source_ip_prefix,
            "destination_ip_prefix": row.destination_ip_prefix,
            "project_id": project_id, "tenant_id": project_id}


def _projects(conn: Connection, label_ids: Sequence[str]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for chunk in chunked(sorted(set(label_ids))):
        found.update(conn.execute(select(L.c.id, L.c.project_id)
                                  .where(L.c.id.in_(list(chunk)))).tuples().all())
    return found


def rule_row(conn: Connection, ctx: Context, rule_id: str) -> Row:
    return find_row(conn, RU, rule_id, _rules_visible(ctx),
                    lambda: mdef.MeteringLabelRuleNotFound(rule_id=rule_id))


def rule(conn: Connection, ctx: Context, rule_id: str) -> dict[str, Any]:
    row = rule_row(conn, ctx, rule_id)
    return rule_view(row, _projects(conn, [row.metering_label_id]).get(row.metering_label_id))


def rules(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    rows = select_page(conn, RU, RULE_COLUMNS, query, _rules_visible(ctx))
    projects = _projects(conn, [row.metering_label_id for row in rows])
    return [rule_view(row, projects.get(row.metering_label_id)) for row in rows]


def rules_of_label(conn: Connection, label_id: str, direction: str, excluded: bool
                   ) -> Sequence[Row]:
    return conn.execute(select(RU).where(RU.c.metering_label_id == label_id,
                                         RU.c.direction == direction,
                                         RU.c.excluded == excluded)).all()


def insert_rule(conn: Connection, values: dict[str, Any]) -> str:
    rule_id = new_uuid()
    conn.execute(RU.insert().values(id=rule_id, **values))
    return rule_id


def delete_rule(conn: Connection, rule_id: str) -> None:
    conn.execute(delete(RU).where(RU.c.id == rule_id))


def overlaps(a: str, b: str) -> bool:
    one, two = ipaddress.ip_network(a, strict=False), ipaddress.ip_network(b, strict=False)
    return one.version == two.version and one.overlaps(two)


# --- what routers carry -----------------------------------------------------------------

def labels_of_projects(conn: Connection, project_ids: Sequence[str]
                       ) -> dict[str | None, list[dict[str, Any]]]:
    """project id -> the labels its routers count (its own and the shared ones;
    the shared ones under the key None too), each with its rules: two queries."""
    wanted = sorted(set(project_ids))
    rows = conn.execute(select(L).where(or_(L.c.shared, L.c.project_id.in_(wanted)))
                        .order_by(L.c.id)).all()
    if not rows:
        return {}
    by_label: dict[str, list[dict[str, Any]]] = {row.id: [] for row in rows}
    for chunk in chunked(list(by_label)):
        for row in conn.execute(select(RU).where(RU.c.metering_label_id.in_(list(chunk)))
                                .order_by(RU.c.id)):
            by_label[row.metering_label_id].append(
                {key: value for key, value in rule_view(row, None).items()
                 if key not in ("project_id", "tenant_id", "metering_label_id")})
    found: dict[str | None, list[dict[str, Any]]] = {}
    for row in rows:
        label = {"id": row.id, "name": row.name, "shared": bool(row.shared),
                 "project_id": row.project_id, "rules": by_label[row.id]}
        for key in {None, *wanted} if row.shared else {row.project_id}:
            found.setdefault(key, []).append(label)
    return found
