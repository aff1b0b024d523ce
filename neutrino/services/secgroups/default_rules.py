"""The template of new security groups' rules (security-groups-default-rules):
views, list, create with Neutron's duplicate checks, delete, and the rules a new
group gets from it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.query import CollectionQuery, find_row, select_page
from neutrino.definitions import securitygroup as sg
from neutrino.definitions.validators import new_uuid
from neutrino.services.secgroups import checks

T = models.security_group_default_rules

_FIELDS = ("id", "description", "direction", "ethertype", "protocol", "port_range_min",
           "port_range_max", "remote_ip_prefix", "remote_group_id",
           "remote_address_group_id", "used_in_default_sg", "used_in_non_default_sg")
COLUMNS = {name: T.c[name] for name in _FIELDS}
#: the template's flag for each kind of new group
_FLAG = {True: T.c.used_in_default_sg, False: T.c.used_in_non_default_sg}


def view(row: Any) -> dict[str, Any]:
    return {name: getattr(row, name) for name in _FIELDS}


def get(conn: Connection, rule_id: str) -> dict[str, Any]:
    return view(find_row(conn, T, rule_id, [],
                         lambda: sg.DefaultSecurityGroupRuleNotFound(id=rule_id)))


def list_(conn: Connection, query: CollectionQuery) -> list[dict[str, Any]]:
    return [view(row) for row in select_page(conn, T, COLUMNS, query)]


def _key(rule: dict[str, Any]) -> tuple:
    """The template rule's identity as a group rule's (the group left out)."""
    return checks.key({**rule, "security_group_id": None})


def add(conn: Connection, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Insert checked, canonical template rules unless one repeats another among
    those used for the same kind of group (new or stored)."""
    for default in (True, False):
        used = [item for item in items if item[_FLAG[default].name]]
        keys = set()
        for item in used:
            if _key(item) in keys:
                raise sg.DuplicateDefaultSgRuleInPost()
            keys.add(_key(item))
        if not keys:
            continue
        for stored in conn.execute(select(T).where(_FLAG[default].is_(True))):
            if _key(stored._asdict()) in keys:
                raise sg.DefaultSecurityGroupRuleExists(rule_id=stored.id)
    rows = [{"id": new_uuid(), **{name: item.get(name) for name in _FIELDS if name != "id"}}
            for item in items]
    for row in rows:
        row["description"] = row["description"] or ""
    conn.execute(T.insert(), rows)
    return [view(SimpleNamespace(**row)) for row in rows]


def delete_(conn: Connection, rule_id: str) -> None:
    get(conn, rule_id)
    conn.execute(delete(T).where(T.c.id == rule_id))


def for_new_group(conn: Connection, group_id: str, default: bool) -> list[dict[str, Any]]:
    """The rules a new group starts with (PARENT naming the group itself), in
    the template's order; without the template's descriptions, as Neutron."""
    made = []
    for row in conn.execute(select(T).where(_FLAG[default].is_(True)).order_by(T.c.id)):
        rule = {name: getattr(row, name) for name in _FIELDS
                if name not in ("id", "description", "used_in_default_sg",
                                "used_in_non_default_sg")}
        if rule["remote_group_id"] == sg.PARENT:
            rule["remote_group_id"] = group_id
        made.append(rule)
    return made


def count_for_new_group(conn: Connection, default: bool) -> int:
    """How many rules a new group gets: what the rules' quota must leave room for."""
    return conn.execute(select(func.count()).where(_FLAG[default].is_(True))).scalar_one()
