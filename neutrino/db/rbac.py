"""Objects that RBAC entries share (``rbac_entries``: security groups, subnet
pools, address scopes, address groups, QoS policies; networks keep their own
table), and who sees them.

An entry ``access_as_shared`` for a project ("*": every project) lets it see
and use an object it does not own; changing or deleting it stays its owner's.
As in Neutron, an entry cannot go while a project that it lets in uses the
object (a port in the group, a subnet from the pool, a pool in the scope, a
rule naming the address group, a network, port, floating IP or router with
the QoS policy) and no other entry lets that project in; the owner never
needs one. Where the object has a ``shared`` column (subnet pools, address
scopes, QoS policies), it mirrors "a '*' entry exists". A pool in an address
scope is shared only with projects that the scope is shared with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql import ColumnElement, Select

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.util import bump
from neutrino.definitions import address_group as ag
from neutrino.definitions import qos
from neutrino.definitions import rbac as r
from neutrino.definitions import securitygroup as sg
from neutrino.definitions.validators import new_uuid

E = models.rbac_entries
P, S, SP = models.ports, models.subnets, models.subnetpools
SHARED = "access_as_shared"
WILDCARD = "*"


def granted(object_type: str, project_id: str | None) -> Select:
    """Ids of the objects of ``object_type`` shared with ``project_id``."""
    return select(E.c.object_id).where(
        E.c.object_type == object_type, E.c.action == SHARED,
        E.c.target_project.in_((WILDCARD, project_id)))


def visible(table: Any, object_type: str, ctx: Context) -> list[ColumnElement]:
    """The visibility clause: every row for an admin; for anyone else the
    project's own rows and those shared with it."""
    if ctx.is_admin:
        return []
    return [or_(table.c.project_id == ctx.project_id,
                table.c.id.in_(granted(object_type, ctx.project_id)))]


def shared_with(conn: Connection, object_type: str, ids: Iterable[str],
                project_id: str | None) -> set[str]:
    """Those of ``ids`` shared with ``project_id`` (or with every project)."""
    ids = list(ids)
    if not ids:
        return set()
    return set(conn.execute(granted(object_type, project_id)
                            .where(E.c.object_id.in_(ids))).scalars())


def accessible(conn: Connection, object_type: str, row: Any, project_id: str | None
               ) -> bool:
    """Whether ``project_id`` owns ``row`` or has it shared with it."""
    return row.project_id == project_id or bool(
        shared_with(conn, object_type, [row.id], project_id))


def forget(conn: Connection, object_type: str, object_id: str) -> None:
    """Drop the entries of an object being deleted."""
    conn.execute(E.delete().where(E.c.object_type == object_type,
                                  E.c.object_id == object_id))


@dataclass(frozen=True)
class Shareable:
    """An object type that entries share."""

    object_type: str
    table: Any
    not_found: Callable[[str], Exception]
    #: the projects using an object (whatever lets them)
    users: Callable[[Connection, str], set[str]]
    #: the table's ``shared`` column mirrors a '*' entry
    shared_column: bool = False
    #: revision_number bumped by a change of its entries
    revised: bool = True


def _projects(conn: Connection, stmt: Any) -> set[str]:
    return {p for p in conn.execute(stmt).scalars() if p is not None}


def _qos_policy_users(conn: Connection, policy_id: str) -> set[str]:
    """The projects of the networks, ports, floating IPs and routers bound to a policy."""
    found: set[str] = set()
    for table, owners, column in (
            (models.qos_network_policy_bindings, models.networks, "network_id"),
            (models.qos_port_policy_bindings, P, "port_id"),
            (models.qos_fip_policy_bindings, models.floatingips, "fip_id"),
            (models.qos_router_gw_policy_bindings, models.routers, "router_id")):
        found |= _projects(conn, select(owners.c.project_id).distinct().join(
            table, table.c[column] == owners.c.id).where(table.c.policy_id == policy_id))
    return found


TYPES: dict[str, Shareable] = {t.object_type: t for t in (
    Shareable("security_group", models.security_groups,
              lambda i: sg.SecurityGroupNotFound(id=i),
              lambda conn, i: _projects(conn, select(P.c.project_id).distinct().join(
                  models.security_group_port_bindings,
                  models.security_group_port_bindings.c.port_id == P.c.id).where(
                  models.security_group_port_bindings.c.security_group_id == i))),
    Shareable("subnetpool", SP, lambda i: exc.SubnetPoolNotFound(subnetpool_id=i),
              lambda conn, i: _projects(conn, select(S.c.project_id).distinct().where(
                  S.c.subnetpool_id == i)), shared_column=True),
    Shareable("address_scope", models.address_scopes,
              lambda i: exc.AddressScopeNotFound(address_scope_id=i),
              lambda conn, i: _projects(conn, select(SP.c.project_id).distinct().where(
                  SP.c.address_scope_id == i)), shared_column=True, revised=False),
    Shareable("address_group", models.address_groups,
              lambda i: ag.AddressGroupNotFound(address_group_id=i),
              lambda conn, i: _projects(conn, select(
                  models.security_group_rules.c.project_id).distinct().where(
                  models.security_group_rules.c.remote_address_group_id == i))),
    Shareable("qos_policy", models.qos_policies,
              lambda i: qos.QosPolicyNotFound(policy_id=i),
              lambda conn, i: _qos_policy_users(conn, i), shared_column=True, revised=False),
)}


def locked(conn: Connection, kind: Shareable, object_id: str) -> Row:
    """Read as admin, locked: entries of one object change one at a time."""
    stmt = select(kind.table).where(kind.table.c.id == object_id)
    if conn.dialect.name != "sqlite":
        stmt = stmt.with_for_update()
    row = conn.execute(stmt).first()
    if row is None:
        raise kind.not_found(object_id)
    return row


def targets(conn: Connection, kind: Shareable, object_id: str, but: str | None) -> set[str]:
    """The projects the object's entries (all but the one for ``but``) share it with."""
    return set(conn.execute(select(E.c.target_project).where(
        E.c.object_type == kind.object_type, E.c.object_id == object_id,
        E.c.target_project != but)).scalars())


def check_removal(conn: Connection, kind: Shareable, obj: Row, target: str,
                   new_target: str | None = None) -> None:
    """RbacPolicyInUse if taking ``target``'s entry away (or moving it to
    ``new_target``) would leave a project using the object without access."""
    if target in (obj.project_id, new_target):
        return
    kept = targets(conn, kind, obj.id, target) | {obj.project_id}
    if new_target is not None:
        kept.add(new_target)
    if WILDCARD in kept:
        return
    users = kind.users(conn, obj.id)
    losing = sorted(users - kept) if target == WILDCARD else (
        [target] if target in users else [])
    if losing:
        raise r.RbacPolicyInUse(object_id=obj.id, details=f"project_id={losing[0]}")


def mirror(conn: Connection, kind: Shareable, object_id: str) -> None:
    """``shared`` follows the '*' entry; the object's revision counts the change."""
    if kind.shared_column:
        wildcard = WILDCARD in targets(conn, kind, object_id, None)
        conn.execute(update(kind.table).where(kind.table.c.id == object_id)
                     .values(shared=wildcard))
    if kind.revised:
        bump(conn, kind.table, object_id)


def insert(conn: Connection, object_type: str, object_id: str, project_id: str | None,
           target: str) -> dict[str, Any]:
    """Add an entry (a duplicate is a 409; one committed meanwhile fails the
    unique key and the write retries into the 409)."""
    kind = TYPES[object_type]
    if target in targets(conn, kind, object_id, None):
        raise r.DuplicateRbacPolicy()
    row = {"id": new_uuid(), "project_id": project_id, "object_type": object_type,
           "object_id": object_id, "target_project": target, "action": SHARED}
    if object_type == "subnetpool":
        check_scope_reaches(conn, object_id, target)
    conn.execute(E.insert().values(**row))
    mirror(conn, kind, object_id)
    return r.view(SimpleNamespace(**row))


def set_shared(conn: Connection, object_type: str, obj: Any, wanted: bool) -> None:
    """An object's ``shared`` written as its '*' entry (owned by its project)."""
    kind = TYPES[object_type]
    has = WILDCARD in targets(conn, kind, obj.id, None)
    if wanted and not has:
        insert(conn, object_type, obj.id, obj.project_id, WILDCARD)
    elif has and not wanted:
        check_removal(conn, kind, obj, WILDCARD)
        conn.execute(E.delete().where(
            E.c.object_type == object_type, E.c.object_id == obj.id,
            E.c.target_project == WILDCARD))
        mirror(conn, kind, obj.id)


def check_scope_reaches(conn: Connection, pool_id: str, target: str) -> None:
    scope_id = conn.execute(select(SP.c.address_scope_id).where(SP.c.id == pool_id)).scalar()
    if scope_id is None:
        return
    if not shared_with(conn, "address_scope", [scope_id], target):
        raise r.RbacPolicyInitError(
            object_id=pool_id,
            reason="target project doesn't have access to associated address scope")
