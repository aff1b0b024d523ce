"""Port forwardings in the database: rows, views, and the queries the router
plugin asks of them (a floating IP in use, an interface still needed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection, Row

from neutrino.db import models
from neutrino.db.util import chunked
from neutrino.definitions.port_forwarding import PortForwardingNotFound

PF = models.port_forwardings


def _range(start: int, end: int) -> str:
    return f"{start}:{end}"


def view(row: Any) -> dict[str, Any]:
    single = row.external_port_start == row.external_port_end
    return {
        "id": row.id, "internal_port_id": row.internal_port_id,
        "internal_ip_address": row.internal_ip_address, "protocol": row.protocol,
        "external_port": row.external_port_start if single else None,
        "internal_port": row.internal_port_start if single else None,
        "external_port_range": _range(row.external_port_start, row.external_port_end),
        "internal_port_range": _range(row.internal_port_start, row.internal_port_end),
        "description": row.description,
    }


def brief(row: Any) -> dict[str, Any]:
    """A forwarding as its floating IP lists it (expose-port-forwarding-in-fip):
    the single ports only when they are not ranges, as Neutron shows them."""
    found = {"id": row.id, "internal_ip_address": row.internal_ip_address,
             "protocol": row.protocol, "internal_port_id": row.internal_port_id}
    if row.internal_port_start == row.internal_port_end:
        found["internal_port"] = row.internal_port_start
    if row.external_port_start == row.external_port_end:
        found["external_port"] = row.external_port_start
    return found


def of_floatingips(conn: Connection, fip_ids: list[str]) -> dict[str, list[Row]]:
    """fip id -> its forwardings, for many floating IPs in one read per chunk."""
    found: dict[str, list[Row]] = {}
    for chunk in chunked(fip_ids):
        for row in conn.execute(select(PF).where(PF.c.floatingip_id.in_(list(chunk)))
                                .order_by(PF.c.id)):
            found.setdefault(row.floatingip_id, []).append(row)
    return found


def of_floatingip(conn: Connection, fip_id: str) -> Sequence[Row]:
    return conn.execute(select(PF).where(PF.c.floatingip_id == fip_id)
                        .order_by(PF.c.id)).all()


def get_row(conn: Connection, fip_id: str, pf_id: str) -> Row:
    row = conn.execute(select(PF).where(PF.c.id == pf_id,
                                        PF.c.floatingip_id == fip_id)).first()
    if row is None:
        raise PortForwardingNotFound(id=pf_id)
    return row


def on_internal(conn: Connection, port_id: str, protocol: str, address: str
                ) -> Sequence[Row]:
    return conn.execute(select(PF).where(
        PF.c.internal_port_id == port_id, PF.c.protocol == protocol,
        PF.c.internal_ip_address == address)).all()


def through_router(conn: Connection, router_id: str) -> list[str]:
    """Internal addresses forwarded to through ``router_id``'s floating IPs."""
    f = models.floatingips
    return list(conn.execute(select(PF.c.internal_ip_address).join(
        f, f.c.id == PF.c.floatingip_id).where(f.c.router_id == router_id)).scalars())


def exists_for(conn: Connection, fip_id: str) -> bool:
    return conn.execute(select(PF.c.id).where(PF.c.floatingip_id == fip_id)
                        .limit(1)).first() is not None


def insert(conn: Connection, values: dict[str, Any]) -> None:
    conn.execute(PF.insert().values(**values))


def delete_row(conn: Connection, pf_id: str) -> None:
    conn.execute(delete(PF).where(PF.c.id == pf_id))


def floatingips_of_port(conn: Connection, port_id: str) -> list[str]:
    return list(conn.execute(select(PF.c.floatingip_id).where(
        PF.c.internal_port_id == port_id).distinct()).scalars())


def delete_of_port(conn: Connection, port_id: str) -> None:
    conn.execute(delete(PF).where(PF.c.internal_port_id == port_id))
