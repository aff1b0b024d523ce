"""Address scopes in the database, and the rules that bind subnet pools to them.

A scope's ``shared`` is its '*' RBAC entry (``services/rbac/objects.py``
writes both); once shared it cannot be unshared through the attribute, as in
Neutron (the entry can go, while no other project's pool is in the scope).
"""

from __future__ import annotations

import ipaddress
from types import SimpleNamespace
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db import rbac as shared
from neutrino.db.query import CollectionQuery, find_row, select_page
from neutrino.definitions import address_scope as a
from neutrino.definitions.validators import new_uuid

AS = models.address_scopes
SP, SPP, S = models.subnetpools, models.subnetpool_prefixes, models.subnets
TYPE = "address_scope"
COLUMNS = {"id": AS.c.id, "name": AS.c.name, "project_id": AS.c.project_id,
           "tenant_id": AS.c.project_id, "shared": AS.c.shared, "ip_version": AS.c.ip_version}


def visible(ctx: Context) -> list:
    return shared.visible(AS, TYPE, ctx)


def get_row(conn: Connection, ctx: Context, scope_id: str, for_update: bool = False) -> Row:
    return find_row(conn, AS, scope_id, visible(ctx),
                    lambda: exc.AddressScopeNotFound(address_scope_id=scope_id), for_update)


def view(row: Any, shared_with_caller: bool = False) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "project_id": row.project_id,
            "tenant_id": row.project_id, "shared": row.shared or shared_with_caller,
            "ip_version": row.ip_version}


def get(conn: Connection, ctx: Context, scope_id: str) -> dict[str, Any]:
    row = get_row(conn, ctx, scope_id)
    return view(row, bool(shared.shared_with(conn, TYPE, [row.id], ctx.project_id)))


def list_(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    if query.marker is not None:
        get_row(conn, ctx, query.marker)
    rows = select_page(conn, AS, COLUMNS, query, visible(ctx))
    mine = shared.shared_with(conn, TYPE, [r.id for r in rows], ctx.project_id)
    return [view(r, r.id in mine) for r in rows]


def create(conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
    row = {"id": new_uuid(), "project_id": data["project_id"], "name": data.get("name", ""),
           "shared": False, "ip_version": data["ip_version"]}
    conn.execute(AS.insert().values(**row))
    if data.get("shared"):
        shared.set_shared(conn, TYPE, SimpleNamespace(**row), True)
        row["shared"] = True
    return view(SimpleNamespace(**row))


def update(conn: Connection, ctx: Context, scope_id: str, data: dict[str, Any]) -> None:
    row = get_row(conn, ctx, scope_id, for_update=True)
    if row.shared and data.get("shared") is False:
        raise a.AddressScopeUpdateError(address_scope_id=scope_id,
                                        reason="Shared address scope can't be unshared")
    if "name" in data:
        conn.execute(AS.update().where(AS.c.id == scope_id).values(name=data["name"]))
    if data.get("shared") and not row.shared:
        shared.set_shared(conn, TYPE, row, True)


def delete_(conn: Connection, ctx: Context, scope_id: str) -> None:
    get_row(conn, ctx, scope_id, for_update=True)
    if conn.execute(select(SP.c.id).where(SP.c.address_scope_id == scope_id)
                    .limit(1)).first() is not None:
        raise a.AddressScopeInUse(address_scope_id=scope_id)
    shared.forget(conn, TYPE, scope_id)
    conn.execute(AS.delete().where(AS.c.id == scope_id))


# --- subnet pools in scopes ------------------------------------------------------------


def check_pool_update_allowed(conn: Connection, ctx: Context, pool: Row) -> None:
    """A pool in a scope that is only shared with the caller is not the
    caller's to change (the scope's owner decides what is in it)."""
    if pool.address_scope_id is None or ctx.is_admin:
        return
    owner = conn.execute(select(AS.c.project_id).where(
        AS.c.id == pool.address_scope_id)).scalar()
    if owner is not None and owner != ctx.project_id:
        raise a.IllegalSubnetPoolUpdate(reason=(
            f"subnetpool {pool.id} cannot be updated when associated with shared address "
            f"scope {pool.address_scope_id}"))


def check_pool_association(conn: Connection, ctx: Context, pool_id: str, scope_id: str | None,
                           version: int, prefixes: list[str], rescoped: bool) -> None:
    """Whether the pool ``pool_id`` (of ``version``, with ``prefixes``) may be
    in scope ``scope_id``: the caller sees it and owns it or has it shared, the
    IP versions match, no other pool of the scope overlaps, and (``rescoped``:
    an existing pool moving, into a scope or out of one) no network is left
    with subnets in two scopes (Neutron checks that only when a pool moves
    into a scope)."""
    if rescoped:
        _check_network_affinity(conn, pool_id, version)
    if scope_id is None:
        return
    scope = get_row(conn, ctx, scope_id)
    if not ctx.is_admin and not shared.accessible(conn, TYPE, scope, ctx.project_id):
        raise a.IllegalSubnetPoolAssociationToAddressScope(subnetpool_id=pool_id,
                                                           address_scope_id=scope_id)
    if scope.ip_version != version:
        raise a.IllegalSubnetPoolIpVersionAssociationToAddressScope(
            subnetpool_id=pool_id, address_scope_id=scope_id, ip_version=scope.ip_version)
    mine = [ipaddress.ip_network(p) for p in prefixes]
    others = conn.execute(select(SPP.c.cidr).join(SP, SP.c.id == SPP.c.subnetpool_id).where(
        SP.c.address_scope_id == scope_id, SP.c.id != pool_id)).scalars()
    if any(ipaddress.ip_network(c).overlaps(m) for c in others for m in mine):
        raise a.AddressScopePrefixConflict()


def _check_network_affinity(conn: Connection, pool_id: str, version: int) -> None:
    """Moving a pool moves its subnets: their networks' other subnets of the
    version would stay behind, in another scope."""
    mine = S.alias("pool_subnets")
    networks = select(mine.c.network_id).where(mine.c.subnetpool_id == pool_id)
    behind = conn.execute(select(S.c.id).where(
        S.c.network_id.in_(networks), S.c.ip_version == version,
        S.c.subnetpool_id.is_distinct_from(pool_id)).limit(1)).first()
    if behind is not None:
        raise a.NetworkAddressScopeAffinityError()
