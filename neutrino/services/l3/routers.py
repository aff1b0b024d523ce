"""Routers in the database: rows, views with gateway and routes, interfaces."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db.query import CollectionQuery, api_columns, find_row, owned, select_page
from neutrino.db.util import now, timestamp
from neutrino.definitions.availability_zone import AVAILABILITY_ZONES, AZ_HINTS
from neutrino.definitions.l3 import ROUTER_INTERFACE, RouterNotFound
from neutrino.definitions.validators import new_uuid
from neutrino.services.agents import db as agents_db
from neutrino.services.agents import scheduling

R = models.routers
RP = models.router_ports
RR = models.router_routes
P = models.ports
IA = models.ip_allocations

COLUMNS = api_columns(R, "admin_state_up", "status")


def _where(ctx: Context) -> list:
    return owned(R, ctx)


def get_row(conn: Connection, ctx: Context, router_id: str, for_update: bool = False) -> Row:
    return find_row(conn, R, router_id, _where(ctx),
                    lambda: RouterNotFound(router_id=router_id), for_update)


def view(row: Any, gateway: dict[str, Any] | None, routes: list[dict[str, str]],
         tag_list: list[str]) -> dict[str, Any]:
    return {
        "id": row.id, "name": row.name, "description": row.description,
        "project_id": row.project_id, "tenant_id": row.project_id,
        "admin_state_up": row.admin_state_up, "status": row.status,
        "external_gateway_info": gateway, "routes": routes, "tags": tag_list,
        "created_at": timestamp(row.created_at), "updated_at": timestamp(row.updated_at),
        "revision_number": row.revision_number,
    }


def _gateways(conn: Connection, rows: Sequence[Row]) -> dict[str, dict[str, Any]]:
    by_port = {row.gw_port_id: row for row in rows if row.gw_port_id}
    if not by_port:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for port_id, network_id in conn.execute(select(P.c.id, P.c.network_id).where(
            P.c.id.in_(list(by_port)))):
        row = by_port[port_id]
        found[row.id] = {"network_id": network_id, "enable_snat": row.enable_snat,
                         "external_fixed_ips": []}
    for port_id, subnet_id, address in conn.execute(
            select(IA.c.port_id, IA.c.subnet_id, IA.c.ip_address)
            .where(IA.c.port_id.in_(list(by_port))).order_by(IA.c.subnet_id)):
        found[by_port[port_id].id]["external_fixed_ips"].append(
            {"subnet_id": subnet_id, "ip_address": address})
    return found


def routes_of(conn: Connection, router_ids: list[str]) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {}
    if not router_ids:
        return found
    for router_id, destination, nexthop in conn.execute(
            select(RR.c.router_id, RR.c.destination, RR.c.nexthop)
            .where(RR.c.router_id.in_(router_ids))
            .order_by(RR.c.destination, RR.c.nexthop)):
        found.setdefault(router_id, []).append({"destination": destination,
                                                "nexthop": nexthop})
    return found


def views(conn: Connection, rows: Sequence[Row]) -> list[dict[str, Any]]:
    ids = [row.id for row in rows]
    gateways = _gateways(conn, rows)
    routes = routes_of(conn, ids)
    tag_map = tags.load(conn, ids) if ids else {}
    hints = agents_db.load_hints(conn, models.router_availability_zone_hints, ids)
    zones = scheduling.zones_of(conn, scheduling.L3, ids)
    found = [view(row, gateways.get(row.id), routes.get(row.id, []), tag_map.get(row.id, []))
             for row in rows]
    for item in found:
        item[AZ_HINTS] = hints.get(item["id"], [])
        item[AVAILABILITY_ZONES] = zones[item["id"]]  # of the L3 agents hosting it
    return found


def get(conn: Connection, ctx: Context, router_id: str) -> dict[str, Any]:
    return views(conn, [get_row(conn, ctx, router_id)])[0]


def list_(conn: Connection, ctx: Context, query: CollectionQuery,
          extra: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """``extra``: filters services add (attribute -> expression over the table)."""
    if query.marker is not None:
        get_row(conn, ctx, query.marker)
    columns = {**COLUMNS, **extra} if extra else COLUMNS
    return views(conn, select_page(conn, R, columns, query, _where(ctx)))


def insert(conn: Connection, data: dict[str, Any], enable_snat: bool) -> str:
    when = now()
    router_id = new_uuid()
    conn.execute(R.insert().values(
        id=router_id, project_id=data["project_id"], name=data.get("name", ""),
        description=data.get("description", ""),
        admin_state_up=data.get("admin_state_up", True), status="ACTIVE", gw_port_id=None,
        enable_snat=enable_snat, created_at=when, updated_at=when, revision_number=1))
    return router_id


def delete_row(conn: Connection, router_id: str) -> None:
    conn.execute(delete(RR).where(RR.c.router_id == router_id))
    conn.execute(delete(models.tags).where(models.tags.c.resource_id == router_id))
    conn.execute(delete(R).where(R.c.id == router_id))


# --- interfaces ------------------------------------------------------------------------

def interface_ports(conn: Connection, router_id: str) -> list[str]:
    return list(conn.execute(select(RP.c.port_id).where(
        RP.c.router_id == router_id, RP.c.port_type == ROUTER_INTERFACE)
        .order_by(RP.c.port_id)).scalars())


def interface_ips(conn: Connection, router_id: str) -> Sequence[Row]:
    """(port_id, subnet_id, ip_address, cidr) of every interface address."""
    s = models.subnets
    return conn.execute(
        select(IA.c.port_id, IA.c.subnet_id, IA.c.ip_address, s.c.cidr)
        .join(RP, RP.c.port_id == IA.c.port_id).join(s, s.c.id == IA.c.subnet_id)
        .where(RP.c.router_id == router_id, RP.c.port_type == ROUTER_INTERFACE)).all()


def attach(conn: Connection, router_id: str, port_id: str, port_type: str) -> None:
    conn.execute(RP.insert().values(router_id=router_id, port_id=port_id,
                                    port_type=port_type))


def owner_of(conn: Connection, port_id: str) -> str | None:
    """The router owning ``port_id`` (interface or gateway), if any."""
    return conn.execute(select(RP.c.router_id).where(RP.c.port_id == port_id)).scalar()


def on_network(conn: Connection, network_id: str) -> list[str]:
    """The routers with a port (an interface or their gateway) on the network."""
    return list(conn.execute(select(RP.c.router_id).distinct().join(
        P, P.c.id == RP.c.port_id).where(P.c.network_id == network_id)
        .order_by(RP.c.router_id)).scalars())


def with_gateway_on(conn: Connection, network_id: str) -> list[str]:
    return list(conn.execute(select(R.c.id).join(P, P.c.id == R.c.gw_port_id).where(
        P.c.network_id == network_id)).scalars())


def serving_subnet(conn: Connection, subnet_id: str, router_ids: list[str]) -> str | None:
    """Of ``router_ids``, one with an interface on ``subnet_id``: the one holding
    the subnet's gateway IP first."""
    if not router_ids:
        return None
    s = models.subnets
    found = conn.execute(
        select(RP.c.router_id, IA.c.ip_address == s.c.gateway_ip)
        .join(IA, IA.c.port_id == RP.c.port_id).join(s, s.c.id == IA.c.subnet_id)
        .where(IA.c.subnet_id == subnet_id, RP.c.port_type == ROUTER_INTERFACE,
               RP.c.router_id.in_(router_ids))).all()
    if not found:
        return None
    return sorted(found, key=lambda row: (not row[1], row[0]))[0][0]


def set_routes(conn: Connection, router_id: str, routes: list[dict[str, str]]) -> None:
    conn.execute(delete(RR).where(RR.c.router_id == router_id))
    unique = {(r["destination"], r["nexthop"]) for r in routes}
    if unique:
        conn.execute(RR.insert(), [{"router_id": router_id, "destination": d, "nexthop": n}
                                   for d, n in sorted(unique)])

