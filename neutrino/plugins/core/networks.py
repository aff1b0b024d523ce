"""Networks in the database: visibility, views, create, update, delete."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, NamedTuple

from sqlalchemy import bindparam, delete, or_, select
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql import Select

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db.prepared import Prepared
from neutrino.db.query import CollectionQuery, api_columns, find_row, select_page
from neutrino.db.util import bump, check_revision, now, timestamp
from neutrino.definitions import port as port_definition
from neutrino.definitions.validators import new_uuid

N = models.networks
R = models.networkrbacs
SHARED = "access_as_shared"

COLUMNS = api_columns(N, "status", "admin_state_up", "shared", "mtu", "is_default",
                      **{"router:external": N.c.router_external})


def granted(ctx: Context) -> Select:
    """Ids of the networks an RBAC entry (either action) opens to the caller."""
    return select(R.c.object_id).where(R.c.target_project.in_(("*", ctx.project_id)))


def visible(ctx: Context):
    """Rows the caller may see: its own, and those RBAC entries open to it."""
    if ctx.is_admin:
        return None
    return or_(N.c.project_id == ctx.project_id, N.c.id.in_(granted(ctx)))


def shared_column(ctx: Context) -> Any:
    """``shared`` as the caller sees it: shared with everyone ('*', which the
    column mirrors) or with the caller's project."""
    if ctx.project_id is None:
        return N.c.shared
    mine = select(R.c.object_id).where(R.c.action == SHARED,
                                       R.c.target_project == ctx.project_id)
    return or_(N.c.shared, N.c.id.in_(mine))


def _shared_with(conn: Connection, ctx: Context) -> set[str]:
    """The networks shared with the caller's project by name (few, whatever the page)."""
    if ctx.project_id is None:
        return set()
    return set(conn.execute(select(R.c.object_id).where(
        R.c.action == SHARED, R.c.target_project == ctx.project_id)).scalars())


def _where(ctx: Context) -> list:
    clause = visible(ctx)
    return [] if clause is None else [clause]


# Every port create reads its network, as an admin or as a project.
BY_ID = select(N).where(N.c.id == bindparam("id"))
VISIBLE_BY_ID = select(N).where(N.c.id == bindparam("id"), or_(
    N.c.project_id == bindparam("project"),
    N.c.id.in_(select(R.c.object_id).where(or_(R.c.target_project == "*",
                                                 R.c.target_project == bindparam("project"))))))
_BY_ID = Prepared(BY_ID)
_VISIBLE_BY_ID = Prepared(VISIBLE_BY_ID)


def row_select(ctx: Context) -> Select | None:
    """The select of a network's row as the caller may read it (parameters of
    ``row_params``); None when only ``get_row`` can tell (neither an admin nor a
    project)."""
    if ctx.is_admin:
        return BY_ID
    return VISIBLE_BY_ID if ctx.project_id is not None else None


def row_params(ctx: Context, network_id: str) -> dict[str, Any]:
    return {"id": network_id, "project": ctx.project_id}


def get_row(conn: Connection, ctx: Context, network_id: str, for_update: bool = False) -> Row:
    if not for_update and row_select(ctx) is not None:
        row = (_BY_ID.first(conn, {"id": network_id}) if ctx.is_admin else
               _VISIBLE_BY_ID.first(conn, row_params(ctx, network_id)))
        if row is None:
            raise exc.NetworkNotFound(net_id=network_id)
        return row
    return find_row(conn, N, network_id, _where(ctx),
                    lambda: exc.NetworkNotFound(net_id=network_id), for_update)


class Subnets(NamedTuple):
    """What a network's view takes from its subnets: their ids, the address
    scope of each IP version (of the subnet pools they came from), and whether
    they are on segments (a routed network: its addresses are not all on one
    L2 domain)."""

    ids: list[str]
    scopes: dict[int, str]
    on_segments: list[bool]


NO_SUBNETS = Subnets([], {}, [])


def view(row: Row | SimpleNamespace, subnets: Subnets, tag_list: list[str],
         shared: bool = False) -> dict[str, Any]:
    """``row``: a network's row, or the values just inserted as one. ``shared``:
    shared with the caller's project (beyond '*', which the row says)."""
    found = {
        "id": row.id, "name": row.name, "tenant_id": row.project_id,
        "project_id": row.project_id, "admin_state_up": row.admin_state_up,
        "mtu": row.mtu, "status": row.status, "subnets": subnets.ids,
        "ipv4_address_scope": subnets.scopes.get(4),
        "ipv6_address_scope": subnets.scopes.get(6),
        "l2_adjacency": not any(subnets.on_segments),
        "shared": row.shared or shared, "router:external": row.router_external,
        "description": row.description, "tags": tag_list,
        "created_at": timestamp(row.created_at), "updated_at": timestamp(row.updated_at),
        "revision_number": row.revision_number,
    }
    if row.router_external:  # auto-allocated-topology's; ML2 drops it where not served
        found["is_default"] = row.is_default
    return found


def _subnets(conn: Connection, network_ids: list[str] | None) -> dict[str, Subnets]:
    """Each network's ``Subnets``, in one query (a network's subnets of one IP
    version all share their pools' scope: subnets.py sees to that)."""
    s, sp = models.subnets, models.subnetpools
    stmt = (select(s.c.network_id, s.c.id, s.c.ip_version, sp.c.address_scope_id,
                   s.c.segment_id.is_not(None))
            .outerjoin(sp, sp.c.id == s.c.subnetpool_id).order_by(s.c.created_at, s.c.id))
    if network_ids is not None:
        if not network_ids:
            return {}
        stmt = stmt.where(s.c.network_id.in_(network_ids))
    found: dict[str, Subnets] = {}
    for net_id, subnet_id, version, scope, on_segment in conn.execute(stmt):
        subnets = found.setdefault(net_id, Subnets([], {}, []))
        subnets.ids.append(subnet_id)
        subnets.on_segments.append(bool(on_segment))
        if scope is not None:
            subnets.scopes[version] = scope
    return found


def get(conn: Connection, ctx: Context, network_id: str) -> dict[str, Any]:
    row = get_row(conn, ctx, network_id)
    return view(row, _subnets(conn, [row.id]).get(row.id, NO_SUBNETS), tags.of(conn, row.id),
                row.id in _shared_with(conn, ctx))


def list_(conn: Connection, ctx: Context, query: CollectionQuery, where: Sequence = ()
          ) -> list[dict[str, Any]]:
    """``where``: the core plugin's own clauses, for attributes of its extensions."""
    if query.marker is not None:
        get_row(conn, ctx, query.marker)
    columns = {**COLUMNS, "shared": shared_column(ctx)}
    rows = select_page(conn, N, columns, query, [*_where(ctx), *where])
    ids = [r.id for r in rows]
    many = len(ids) > 200
    subnet_map = _subnets(conn, None if many else ids)
    tag_map = tags.load(conn, ids) if ids else {}
    mine = _shared_with(conn, ctx) if rows else set()
    return [view(r, subnet_map.get(r.id, NO_SUBNETS), tag_map.get(r.id, []), r.id in mine)
            for r in rows]


def create(conn: Connection, data: dict[str, Any], mtu: int) -> dict[str, Any]:
    when = now()
    row = {
        "id": new_uuid(), "project_id": data["project_id"], "name": data.get("name", ""),
        "description": data.get("description", ""), "status": "ACTIVE",
        "admin_state_up": data.get("admin_state_up", True),
        "shared": data.get("shared", False),
        "router_external": data.get("router:external", False), "mtu": mtu,
        # only an external network is the default one (auto-allocated-topology)
        "is_default": bool(data.get("is_default") and data.get("router:external")),
        "created_at": when, "updated_at": when, "revision_number": 1,
    }
    conn.execute(N.insert().values(**row))
    return view(SimpleNamespace(**row), NO_SUBNETS, [])


IPV4_MIN_MTU = 68
IPV6_MIN_MTU = 1280


def check_mtu_for_subnets(network_id: str, mtu: int, versions: set[int]) -> None:
    """Neutron's floor for an MTU with subnets of ``versions``: 68 with any subnet
    (IPv4's minimum), 1280 with an IPv6 one; 0 (the segments' maximum) counts as set."""
    if mtu >= IPV6_MIN_MTU or not versions:
        return
    if mtu < IPV4_MIN_MTU:
        raise exc.NetworkMTUSubnetConflict(net_id=network_id, mtu=IPV4_MIN_MTU)
    if 6 in versions:
        raise exc.NetworkMTUSubnetConflict(net_id=network_id, mtu=IPV6_MIN_MTU)


def subnet_versions(conn: Connection, network_id: str) -> set[int]:
    s = models.subnets
    return set(conn.execute(select(s.c.ip_version).distinct().where(
        s.c.network_id == network_id)).scalars())


# ``shared`` and ``router:external`` are written through RBAC entries, by the
# core plugin (services/rbac/db.py: network_flags), in the same transaction.
_UPDATABLE = {"name": "name", "description": "description", "admin_state_up": "admin_state_up",
              "mtu": "mtu"}


def update(conn: Connection, ctx: Context, network_id: str, data: dict[str, Any],
           if_revision: int | None) -> None:
    row = get_row(conn, ctx, network_id, for_update=True)
    values = {_UPDATABLE[k]: v for k, v in data.items() if k in _UPDATABLE}
    if "is_default" in data:  # only an external network is the default, as in Neutron
        values["is_default"] = bool(
            data["is_default"] and data.get("router:external", row.router_external))
    bump(conn, N, network_id, if_revision, values)


def delete_(conn: Connection, ctx: Context, network_id: str, if_revision: int | None) -> None:
    row = get_row(conn, ctx, network_id, for_update=True)
    check_revision(conn, N, row.id, if_revision)
    p, s = models.ports, models.subnets
    in_use = list(conn.execute(select(p.c.id).where(
        p.c.network_id == network_id,
        p.c.device_owner.not_in(port_definition.AUTO_DELETE_OWNERS))).scalars())
    if in_use:
        raise exc.NetworkInUse(net_id=network_id, reason=(
            "There are one or more ports still in use on the network, id for these ports "
            f"is: {','.join(sorted(in_use))}"))
    port_ids = list(conn.execute(select(p.c.id).where(p.c.network_id == network_id)).scalars())
    subnet_ids = list(conn.execute(select(s.c.id).where(s.c.network_id == network_id)).scalars())
    for ids in (port_ids, subnet_ids, [network_id]):
        if ids:
            conn.execute(delete(models.tags).where(models.tags.c.resource_id.in_(ids)))
    if port_ids:
        conn.execute(delete(p).where(p.c.id.in_(port_ids)))
    if subnet_ids:
        conn.execute(delete(s).where(s.c.id.in_(subnet_ids)))
    conn.execute(delete(N).where(N.c.id == network_id))
