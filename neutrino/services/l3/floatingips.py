"""Floating IPs in the database: rows, views with port details, association."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db.query import CollectionQuery, api_columns, find_row, owned, select_page
from neutrino.db.util import now, timestamp
from neutrino.definitions.l3 import FloatingIPNotFound

F = models.floatingips
P = models.ports

COLUMNS = api_columns(F, "floating_ip_address", "floating_network_id", "router_id",
                      "fixed_ip_address", "status", port_id=F.c.fixed_port_id)
_DETAIL_KEYS = ("name", "network_id", "mac_address", "admin_state_up", "status",
                "device_id", "device_owner")


def _where(ctx: Context) -> list:
    return owned(F, ctx)


def get_row(conn: Connection, ctx: Context, fip_id: str, for_update: bool = False) -> Row:
    return find_row(conn, F, fip_id, _where(ctx),
                    lambda: FloatingIPNotFound(floatingip_id=fip_id), for_update)


def view(row: Any, details: dict[str, Any] | None, tag_list: list[str]) -> dict[str, Any]:
    return {
        "id": row.id, "description": row.description,
        "project_id": row.project_id, "tenant_id": row.project_id,
        "floating_ip_address": row.floating_ip_address,
        "floating_network_id": row.floating_network_id, "router_id": row.router_id,
        "port_id": row.fixed_port_id, "fixed_ip_address": row.fixed_ip_address,
        "status": row.status, "port_details": details, "tags": tag_list,
        "created_at": timestamp(row.created_at), "updated_at": timestamp(row.updated_at),
        "revision_number": row.revision_number,
    }


def views(conn: Connection, rows: Sequence[Row]) -> list[dict[str, Any]]:
    ids = [row.id for row in rows]
    port_ids = list({row.fixed_port_id for row in rows if row.fixed_port_id})
    details = {}
    if port_ids:
        for port in conn.execute(select(P).where(P.c.id.in_(port_ids))):
            details[port.id] = {key: getattr(port, key) for key in _DETAIL_KEYS}
    tag_map = tags.load(conn, ids) if ids else {}
    return [view(row, details.get(row.fixed_port_id), tag_map.get(row.id, []))
            for row in rows]


def get(conn: Connection, ctx: Context, fip_id: str) -> dict[str, Any]:
    return views(conn, [get_row(conn, ctx, fip_id)])[0]


def list_(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    if query.marker is not None:
        get_row(conn, ctx, query.marker)
    return views(conn, select_page(conn, F, COLUMNS, query, _where(ctx)))


def insert(conn: Connection, fip_id: str, data: dict[str, Any], address: str,
           port_id: str) -> None:
    when = now()
    conn.execute(F.insert().values(
        id=fip_id, project_id=data["project_id"], name="",
        description=data.get("description", ""), floating_ip_address=address,
        floating_network_id=data["floating_network_id"], floating_port_id=port_id,
        fixed_port_id=None, fixed_ip_address=None, router_id=None, status="DOWN",
        created_at=when, updated_at=when, revision_number=0))


def set_values(conn: Connection, fip_id: str, values: dict[str, Any]) -> None:
    """Columns of a row made in this transaction: no revision of its own."""
    conn.execute(update(F).where(F.c.id == fip_id).values(**values))


def holder_of(conn: Connection, network_id: str, port_id: str, address: str) -> Row | None:
    """The floating IP on ``network_id`` already given to this fixed IP, if any."""
    return conn.execute(select(F).where(
        F.c.floating_network_id == network_id, F.c.fixed_port_id == port_id,
        F.c.fixed_ip_address == address)).first()


def on_port(conn: Connection, port_id: str) -> Sequence[Row]:
    return conn.execute(select(F).where(F.c.fixed_port_id == port_id)).all()


def of_floating_port(conn: Connection, port_id: str) -> Row | None:
    return conn.execute(select(F).where(F.c.floating_port_id == port_id)).first()


def idle_on(conn: Connection, network_id: str) -> Sequence[Row]:
    """Floating IPs of the network with neither a port nor a router (port
    forwardings give one a router)."""
    return conn.execute(select(F).where(
        F.c.floating_network_id == network_id, F.c.fixed_port_id.is_(None),
        F.c.router_id.is_(None)).order_by(F.c.id)).all()


def through_router(conn: Connection, router_id: str, network_id: str | None = None
                   ) -> Sequence[Row]:
    stmt = select(F).where(F.c.router_id == router_id)
    if network_id is not None:
        stmt = stmt.where(F.c.floating_network_id == network_id)
    return conn.execute(stmt).all()


def disassociate_port(conn: Connection, port_id: str) -> None:
    conn.execute(update(F).where(F.c.fixed_port_id == port_id).values(
        fixed_port_id=None, fixed_ip_address=None, router_id=None, updated_at=now(),
        revision_number=F.c.revision_number + 1))


def delete_row(conn: Connection, fip_id: str) -> None:
    conn.execute(delete(models.tags).where(models.tags.c.resource_id == fip_id))
    conn.execute(delete(F).where(F.c.id == fip_id))
