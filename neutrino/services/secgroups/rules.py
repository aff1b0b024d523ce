"""Security group rules in the database: views, visibility, insert with the
duplicate check, delete. A rule belongs to its group's project."""

from __future__ import annotations

from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

from sqlalchemy import bindparam, delete, exists, select
from sqlalchemy.engine import Connection

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, owned, select_page
from neutrino.db.util import check_revision, chunked, now, timestamp
from neutrino.definitions import securitygroup as sg
from neutrino.definitions.validators import new_uuid
from neutrino.services.secgroups import checks

R = models.security_group_rules
D = models.default_security_groups

_FIELDS = ("id", "project_id", "security_group_id", "direction", "ethertype", "protocol",
           "port_range_min", "port_range_max", "remote_ip_prefix", "normalized_cidr",
           "remote_group_id", "remote_address_group_id", "description", "created_at",
           "updated_at", "revision_number")
#: whether the rule's group is its project's default group (read with each rule)
IN_DEFAULT_GROUP = exists().where(D.c.security_group_id == R.c.security_group_id).label(
    "belongs_to_default_sg")
COLUMNS = ({name: R.c[name] for name in _FIELDS}
           | {"tenant_id": R.c.project_id, "belongs_to_default_sg": IN_DEFAULT_GROUP})


def visible(ctx: Context) -> list:
    return owned(R, ctx)


def view(row: Any) -> dict[str, Any]:
    return {
        "id": row.id, "project_id": row.project_id, "tenant_id": row.project_id,
        "security_group_id": row.security_group_id, "direction": row.direction,
        "ethertype": row.ethertype, "protocol": row.protocol,
        "port_range_min": row.port_range_min, "port_range_max": row.port_range_max,
        "remote_ip_prefix": row.remote_ip_prefix, "normalized_cidr": row.normalized_cidr,
        "remote_group_id": row.remote_group_id,
        "remote_address_group_id": row.remote_address_group_id,
        "description": row.description, "created_at": timestamp(row.created_at),
        "updated_at": timestamp(row.updated_at), "revision_number": row.revision_number,
        "belongs_to_default_sg": bool(row.belongs_to_default_sg),
    }


_OF_GROUPS = select(R, IN_DEFAULT_GROUP).where(R.c.security_group_id.in_(
    bindparam("ids", expanding=True))).order_by(R.c.created_at, R.c.id)


def of_groups(conn: Connection, group_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The rules of many groups with one query (per 500 groups)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for chunk in chunked(group_ids):
        for row in conn.execute(_OF_GROUPS, {"ids": list(chunk)}):
            found.setdefault(row.security_group_id, []).append(view(row))
    return found


def get(conn: Connection, ctx: Context, rule_id: str) -> dict[str, Any]:
    row = conn.execute(select(R, IN_DEFAULT_GROUP).where(R.c.id == rule_id,
                                                         *visible(ctx))).first()
    if row is None:
        raise sg.SecurityGroupRuleNotFound(id=rule_id)
    return view(row)


def list_(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    return [view(row) for row in select_page(conn, R, COLUMNS, query, visible(ctx),
                                             [R, IN_DEFAULT_GROUP])]


def row_of(group_id: str, project_id: str | None, rule: dict[str, Any]) -> dict[str, Any]:
    """The table row of a canonical, checked rule."""
    when = now()
    prefix = rule.get("remote_ip_prefix")
    return {
        "id": new_uuid(), "project_id": project_id, "security_group_id": group_id,
        "direction": rule["direction"], "ethertype": rule["ethertype"],
        "protocol": rule.get("protocol"), "port_range_min": rule.get("port_range_min"),
        "port_range_max": rule.get("port_range_max"), "remote_ip_prefix": prefix,
        "normalized_cidr": sg.normalized_cidr(prefix),
        "remote_group_id": rule.get("remote_group_id"),
        "remote_address_group_id": rule.get("remote_address_group_id"),
        "description": rule.get("description", ""), "created_at": when, "updated_at": when,
        "revision_number": 0,
    }


def insert(conn: Connection, rows: list[dict[str, Any]], in_default_group: bool
           ) -> list[dict[str, Any]]:
    if rows:
        conn.execute(R.insert(), rows)
    return [view(SimpleNamespace(**row, belongs_to_default_sg=in_default_group))
            for row in rows]


def add(conn: Connection, group_id: str, project_id: str | None,
        rules: Iterable[dict[str, Any]], in_default_group: bool) -> list[dict[str, Any]]:
    """Insert rules unless one repeats another, new or stored (the caller holds the
    group's row lock, so concurrent adds to a group are checked one after the other)."""
    rows = [row_of(group_id, project_id, rule) for rule in rules]
    new_keys = set()
    for row in rows:
        rule_key = checks.key(row)
        if rule_key in new_keys:
            raise sg.DuplicateSecurityGroupRuleInPost()
        new_keys.add(rule_key)
    for stored in conn.execute(select(R).where(R.c.security_group_id == group_id)):
        if checks.key(stored._asdict()) in new_keys:
            raise sg.SecurityGroupRuleExists(rule_id=stored.id)
    return insert(conn, rows, in_default_group)


def delete_(conn: Connection, ctx: Context, rule_id: str, if_revision: int | None) -> str:
    """Delete the rule; return its group's id."""
    rule = get(conn, ctx, rule_id)
    check_revision(conn, R, rule_id, if_revision)
    conn.execute(delete(R).where(R.c.id == rule_id))
    return rule["security_group_id"]
