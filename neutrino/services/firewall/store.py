"""FWaaS v2 in the database: rows, views, and the reads the plugin and the
routers' sync data make of them (a handful of queries for any number of rows)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import and_, delete, or_, select
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, api_columns, find_row, select_page
from neutrino.db.util import chunked, now, timestamp
from neutrino.definitions import firewall as fw
from neutrino.definitions.validators import new_uuid
from neutrino.rpc.contracts.logging import LogInfo

FR = models.firewall_rules
FP = models.firewall_policies
FPR = models.firewall_policy_rules
FG = models.firewall_groups
FGP = models.firewall_group_ports
DFG = models.default_firewall_groups
LG = models.logs
#: the logging plugin's resource_type of a firewall group's logs
FIREWALL_GROUP = "firewall_group"

RULE_COLUMNS = api_columns(FR, "shared", "protocol", "ip_version", "source_ip_address",
                           "destination_ip_address", "action", "enabled")
POLICY_COLUMNS = api_columns(FP, "shared", "audited")
GROUP_COLUMNS = api_columns(FG, "admin_state_up", "status", "shared",
                            "ingress_firewall_policy_id", "egress_firewall_policy_id")


def visible(table: Any, ctx: Context) -> list:
    """An admin sees all; others their project's and the shared."""
    return [] if ctx.is_admin else [or_(table.c.project_id == ctx.project_id, table.c.shared)]


def _standard(row: Any) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "description": row.description,
            "project_id": row.project_id, "tenant_id": row.project_id,
            "created_at": timestamp(row.created_at), "updated_at": timestamp(row.updated_at),
            "revision_number": row.revision_number}


def _ports_text(low: int | None, high: int | None) -> str | None:
    if low is None:
        return None
    return str(low) if low == high else f"{low}:{high}"


def port_bounds(text: str | None) -> tuple[int | None, int | None]:
    """``"80"`` -> (80, 80), ``"80:90"`` -> (80, 90); a range backwards is refused."""
    if not text:
        return None, None
    low, _, high = text.partition(":")
    bounds = int(low), int(high or low)
    if bounds[0] > bounds[1]:
        raise fw.FirewallRuleInvalidPortValue(port=text)
    return bounds


# --- rules ------------------------------------------------------------------------------

def rule_view(row: Any, policy_ids: Sequence[str] = ()) -> dict[str, Any]:
    return {**_standard(row), "shared": row.shared, "protocol": row.protocol,
            "ip_version": row.ip_version, "source_ip_address": row.source_ip_address,
            "destination_ip_address": row.destination_ip_address,
            "source_port": _ports_text(row.source_port_min, row.source_port_max),
            "destination_port": _ports_text(row.destination_port_min,
                                            row.destination_port_max),
            "action": row.action, "enabled": row.enabled,
            "firewall_policy_id": list(policy_ids) or None}


def rule_row(conn: Connection, ctx: Context, rule_id: str, for_update: bool = False) -> Row:
    return find_row(conn, FR, rule_id, visible(FR, ctx),
                    lambda: fw.FirewallRuleNotFound(firewall_rule_id=rule_id), for_update)


def policies_of_rules(conn: Connection, rule_ids: Sequence[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for chunk in chunked(list(rule_ids)):
        for rule_id, policy_id in conn.execute(
                select(FPR.c.firewall_rule_id, FPR.c.firewall_policy_id)
                .where(FPR.c.firewall_rule_id.in_(chunk)).order_by(FPR.c.firewall_policy_id)):
            found.setdefault(rule_id, []).append(policy_id)
    return found


def rules(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    if query.marker is not None:
        rule_row(conn, ctx, query.marker)
    rows = select_page(conn, FR, RULE_COLUMNS, query, visible(FR, ctx))
    policies = policies_of_rules(conn, [row.id for row in rows])
    return [rule_view(row, policies.get(row.id, ())) for row in rows]


def rule(conn: Connection, ctx: Context, rule_id: str) -> dict[str, Any]:
    row = rule_row(conn, ctx, rule_id)
    return rule_view(row, policies_of_rules(conn, [rule_id]).get(rule_id, ()))


def rule_values(data: dict[str, Any]) -> dict[str, Any]:
    """The columns of a rule's API attributes (those given)."""
    values: dict[str, Any] = {key: data[key] for key in (
        "name", "description", "shared", "protocol", "ip_version", "source_ip_address",
        "destination_ip_address", "action", "enabled") if key in data}
    for side in ("source", "destination"):
        if f"{side}_port" in data:
            values[f"{side}_port_min"], values[f"{side}_port_max"] = port_bounds(
                data[f"{side}_port"])
    return values


def insert_rule_row(conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
    when = now()
    row = {"id": new_uuid(), "project_id": data["project_id"], "created_at": when,
           "updated_at": when, "revision_number": 0, "name": "", "description": "",
           "shared": False, "protocol": None, "ip_version": 4, "source_ip_address": None,
           "destination_ip_address": None, "source_port_min": None, "source_port_max": None,
           "destination_port_min": None, "destination_port_max": None, "action": "deny",
           "enabled": True, **rule_values(data)}
    conn.execute(FR.insert().values(**row))
    return rule_view(_Row(row))


class _Row:
    """A dict read as a row (a view of what was just inserted)."""

    def __init__(self, values: dict[str, Any]):
        self.__dict__.update(values)


# --- policies ---------------------------------------------------------------------------

def policy_view(row: Any, rule_ids: Sequence[str] = ()) -> dict[str, Any]:
    return {**_standard(row), "shared": row.shared, "audited": row.audited,
            "firewall_rules": list(rule_ids)}


def policy_row(conn: Connection, ctx: Context, policy_id: str, for_update: bool = False
               ) -> Row:
    return find_row(conn, FP, policy_id, visible(FP, ctx),
                    lambda: fw.FirewallPolicyNotFound(firewall_policy_id=policy_id), for_update)


def rules_of_policies(conn: Connection, policy_ids: Iterable[str]) -> dict[str, list[str]]:
    """policy id -> its rule ids, in order."""
    found: dict[str, list[str]] = {}
    for chunk in chunked(sorted(set(policy_ids))):
        for policy_id, rule_id in conn.execute(
                select(FPR.c.firewall_policy_id, FPR.c.firewall_rule_id)
                .where(FPR.c.firewall_policy_id.in_(chunk))
                .order_by(FPR.c.firewall_policy_id, FPR.c.position)):
            found.setdefault(policy_id, []).append(rule_id)
    return found


def policies(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    if query.marker is not None:
        policy_row(conn, ctx, query.marker)
    where = visible(FP, ctx)
    with_rules = query.pop_filter("firewall_rules")
    if with_rules:
        where.append(FP.c.id.in_(select(FPR.c.firewall_policy_id).where(
            FPR.c.firewall_rule_id.in_(with_rules))))
    rows = select_page(conn, FP, POLICY_COLUMNS, query, where)
    found = rules_of_policies(conn, [row.id for row in rows])
    return [policy_view(row, found.get(row.id, ())) for row in rows]


def policy(conn: Connection, ctx: Context, policy_id: str) -> dict[str, Any]:
    row = policy_row(conn, ctx, policy_id)
    return policy_view(row, rules_of_policies(conn, [policy_id]).get(policy_id, ()))


def insert_policy_row(conn: Connection, data: dict[str, Any]) -> str:
    when = now()
    policy_id = new_uuid()
    conn.execute(FP.insert().values(
        id=policy_id, project_id=data["project_id"], name=data.get("name", ""),
        description=data.get("description", ""), created_at=when, updated_at=when,
        revision_number=0, shared=data.get("shared", False),
        audited=data.get("audited", False)))
    return policy_id


def set_policy_rules(conn: Connection, policy_id: str, rule_ids: Sequence[str]) -> None:
    """The policy's rules, in this order, replacing those it had."""
    conn.execute(delete(FPR).where(FPR.c.firewall_policy_id == policy_id))
    if rule_ids:
        conn.execute(FPR.insert(), [
            {"firewall_policy_id": policy_id, "firewall_rule_id": rule_id, "position": n}
            for n, rule_id in enumerate(rule_ids, start=1)])


def groups_using_policies(conn: Connection, policy_ids: Iterable[str]) -> list[Row]:
    wanted = sorted(set(policy_ids))
    if not wanted:
        return []
    return list(conn.execute(select(FG).where(or_(
        FG.c.ingress_firewall_policy_id.in_(wanted),
        FG.c.egress_firewall_policy_id.in_(wanted))).order_by(FG.c.id)))


# --- groups -----------------------------------------------------------------------------

def group_view(row: Any, port_ids: Sequence[str] = ()) -> dict[str, Any]:
    return {**_standard(row), "admin_state_up": row.admin_state_up, "status": row.status,
            "shared": row.shared, "ports": list(port_ids),
            "ingress_firewall_policy_id": row.ingress_firewall_policy_id,
            "egress_firewall_policy_id": row.egress_firewall_policy_id}


def group_row(conn: Connection, ctx: Context, group_id: str, for_update: bool = False) -> Row:
    return find_row(conn, FG, group_id, visible(FG, ctx),
                    lambda: fw.FirewallGroupNotFound(firewall_id=group_id), for_update)


def ports_of_groups(conn: Connection, group_ids: Iterable[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for chunk in chunked(sorted(set(group_ids))):
        for group_id, port_id in conn.execute(
                select(FGP.c.firewall_group_id, FGP.c.port_id)
                .where(FGP.c.firewall_group_id.in_(chunk)).order_by(FGP.c.port_id)):
            found.setdefault(group_id, []).append(port_id)
    return found


def groups(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    if query.marker is not None:
        group_row(conn, ctx, query.marker)
    where = visible(FG, ctx)
    with_ports = query.pop_filter("ports")
    if with_ports:
        where.append(FG.c.id.in_(select(FGP.c.firewall_group_id).where(
            FGP.c.port_id.in_(with_ports))))
    rows = select_page(conn, FG, GROUP_COLUMNS, query, where)
    found = ports_of_groups(conn, [row.id for row in rows])
    return [group_view(row, found.get(row.id, ())) for row in rows]


def group(conn: Connection, ctx: Context, group_id: str) -> dict[str, Any]:
    row = group_row(conn, ctx, group_id)
    return group_view(row, ports_of_groups(conn, [group_id]).get(group_id, ()))


def insert_group_row(conn: Connection, data: dict[str, Any], status: str) -> str:
    when = now()
    group_id = new_uuid()
    conn.execute(FG.insert().values(
        id=group_id, project_id=data["project_id"], name=data.get("name", ""),
        description=data.get("description", ""), created_at=when, updated_at=when,
        revision_number=0, admin_state_up=data.get("admin_state_up", True), status=status,
        shared=data.get("shared", False),
        ingress_firewall_policy_id=data.get("ingress_firewall_policy_id"),
        egress_firewall_policy_id=data.get("egress_firewall_policy_id")))
    return group_id


def groups_of_ports(conn: Connection, port_ids: Sequence[str]) -> dict[str, str]:
    """port id -> the group it is in, for those in one."""
    found: dict[str, str] = {}
    for chunk in chunked(list(port_ids)):
        for port_id, group_id in conn.execute(select(FGP.c.port_id, FGP.c.firewall_group_id)
                                              .where(FGP.c.port_id.in_(chunk))):
            found[port_id] = group_id
    return found


def set_group_ports(conn: Connection, group_id: str, port_ids: Sequence[str]) -> None:
    conn.execute(delete(FGP).where(FGP.c.firewall_group_id == group_id))
    if port_ids:
        conn.execute(FGP.insert(), [{"firewall_group_id": group_id, "port_id": port_id}
                                    for port_id in port_ids])


def default_group_id(conn: Connection, project_id: str) -> str | None:
    return conn.execute(select(DFG.c.firewall_group_id).where(
        DFG.c.project_id == project_id)).scalar()


def set_status(conn: Connection, group_id: str, status: str) -> bool:
    """The group's status, unless it is being deleted; whether it was set."""
    done = conn.execute(FG.update().where(FG.c.id == group_id,
                                          FG.c.status != fw.PENDING_DELETE)
                        .values(status=status))
    return bool(done.rowcount)


def logs_of_groups(conn: Connection, groups: Mapping[str, tuple[str | None, Iterable[str]]]
                   ) -> dict[str, list[LogInfo]]:
    """group id -> the enabled logs that reach it, for ``groups`` (id -> its
    project and ports), in one read."""
    if not groups:
        return {}
    ports = {group_id: set(port_ids) for group_id, (_, port_ids) in groups.items()}
    projects = sorted({project for project, _ in groups.values() if project})
    rows = conn.execute(select(LG).where(
        LG.c.enabled.is_(True), LG.c.resource_type == FIREWALL_GROUP,
        or_(LG.c.resource_id.in_(sorted(groups)),
            and_(LG.c.resource_id.is_(None), LG.c.project_id.in_(projects))))
        .order_by(LG.c.id)).all()
    found: dict[str, list[LogInfo]] = {}
    for group_id, (project, _) in groups.items():
        for row in rows:
            named = row.resource_id == group_id or (
                row.resource_id is None and row.project_id == project)
            if named and (row.target_id is None or row.target_id in ports[group_id]):
                found.setdefault(group_id, []).append(
                    LogInfo(id=row.id, project_id=row.project_id, event=row.event))
    return found


# --- what the L3 agents are sent --------------------------------------------------------

def _agent_rule(row: Any) -> dict[str, Any]:
    return {"id": row.id, "enabled": row.enabled, "action": row.action,
            "protocol": row.protocol, "ip_version": row.ip_version,
            "source_ip_address": row.source_ip_address,
            "destination_ip_address": row.destination_ip_address,
            "source_port": _ports_text(row.source_port_min, row.source_port_max),
            "destination_port": _ports_text(row.destination_port_min,
                                            row.destination_port_max)}


def routers_groups(conn: Connection, interfaces: dict[str, list[str]]
                   ) -> dict[str, list[dict[str, Any]]]:
    """router id -> the firewall groups on its interface ports (``interfaces``:
    router id -> port ids), each with its rules in order (None: no policy that way)."""
    of_port = groups_of_ports(conn, [p for ports in interfaces.values() for p in ports])
    if not of_port:
        return {}
    rows: dict[str, Row] = {}
    for chunk in chunked(sorted(set(of_port.values()))):
        rows.update((row.id, row) for row in conn.execute(select(FG).where(FG.c.id.in_(chunk))))
    policy_ids = {p for row in rows.values()
                  for p in (row.ingress_firewall_policy_id, row.egress_firewall_policy_id) if p}
    ordered = rules_of_policies(conn, policy_ids)
    rule_rows: dict[str, Row] = {}
    for chunk in chunked(sorted({r for ids in ordered.values() for r in ids})):
        rule_rows.update((row.id, row) for row in conn.execute(
            select(FR).where(FR.c.id.in_(chunk))))

    def rules_of(policy_id: str | None) -> list[dict[str, Any]] | None:
        if policy_id is None:
            return None
        return [_agent_rule(rule_rows[r]) for r in ordered.get(policy_id, ()) if r in rule_rows]

    logged = logs_of_groups(conn, {group_id: (row.project_id, [
        p for p, g in of_port.items() if g == group_id]) for group_id, row in rows.items()})
    found: dict[str, list[dict[str, Any]]] = {}
    for router_id, port_ids in interfaces.items():
        on_router: dict[str, list[str]] = {}
        for port_id in port_ids:
            if port_id in of_port:
                on_router.setdefault(of_port[port_id], []).append(port_id)
        for group_id, ports in sorted(on_router.items()):
            row = rows[group_id]
            found.setdefault(router_id, []).append({
                "id": group_id, "status": row.status, "admin_state_up": row.admin_state_up,
                "ports": ports, "ingress_rules": rules_of(row.ingress_firewall_policy_id),
                "egress_rules": rules_of(row.egress_firewall_policy_id),
                "logs": logged.get(group_id, [])})
    return found
