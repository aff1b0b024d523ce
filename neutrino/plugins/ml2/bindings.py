"""Port bindings in the database, and the agents a binding may use."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, or_, select, update
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.query import Page
from neutrino.db.util import now
from neutrino.definitions.portbindings import (
    HOST_ID,
    PROFILE,
    VIF_DETAILS,
    VIF_TYPE,
    VIF_TYPE_UNBOUND,
    VNIC_TYPE,
)
from neutrino.definitions.portbindings_extended import (
    ACTIVE,
    INACTIVE,
    PortBindingAlreadyActive,
    PortBindingAlreadyExists,
    PortBindingNotFound,
)

B = models.port_bindings
AG = models.agents
BINDING_KEYS = (HOST_ID, VNIC_TYPE, PROFILE)
#: what ``view`` gives a port
VIEW_KEYS = (HOST_ID, VNIC_TYPE, PROFILE, VIF_TYPE, VIF_DETAILS)


def view(row: Any | None) -> dict[str, Any]:
    if row is None:
        return {HOST_ID: "", VNIC_TYPE: "normal", PROFILE: {}, VIF_TYPE: VIF_TYPE_UNBOUND,
                VIF_DETAILS: {}}
    return {HOST_ID: row.host, VNIC_TYPE: row.vnic_type, PROFILE: row.profile,
            VIF_TYPE: row.vif_type, VIF_DETAILS: row.vif_details}


def of_ports(conn: Connection, page: Page) -> dict[str, Any]:
    """port id -> its active binding row."""
    return {row.port_id: row
            for row in page.read(conn, select(B).where(B.c.status == ACTIVE), B.c.port_id)}


def request(conn: Connection, port_id: str, current: dict[str, Any],
            data: dict[str, Any]) -> dict[str, Any] | None:
    """Record the binding ``data`` asks for; its (unbound) view, or None if unchanged."""
    if not any(key in data for key in BINDING_KEYS):
        return None
    wanted = {key: data.get(key, current.get(key)) for key in BINDING_KEYS}
    wanted = {HOST_ID: wanted[HOST_ID] or "", VNIC_TYPE: wanted[VNIC_TYPE] or "normal",
              PROFILE: wanted[PROFILE] or {}}
    if all(wanted[k] == current.get(k) for k in BINDING_KEYS):
        return None
    conn.execute(delete(B).where(B.c.port_id == port_id, or_(
        B.c.status == ACTIVE, B.c.host == wanted[HOST_ID])))
    conn.execute(B.insert().values(port_id=port_id, host=wanted[HOST_ID],
                                   vnic_type=wanted[VNIC_TYPE], profile=wanted[PROFILE],
                                   vif_type=VIF_TYPE_UNBOUND, vif_details={}, status=ACTIVE))
    return {**wanted, VIF_TYPE: VIF_TYPE_UNBOUND, VIF_DETAILS: {}}


# --- every binding of a port (binding-extended) -----------------------------------

def extended_view(row: Any) -> dict[str, Any]:
    return {"host": row.host, "vnic_type": row.vnic_type, "profile": row.profile,
            "vif_type": row.vif_type, "vif_details": row.vif_details, "status": row.status}


def all_of_port(conn: Connection, port_id: str) -> Sequence[Any]:
    return conn.execute(select(B).where(B.c.port_id == port_id).order_by(B.c.host)).all()


def one(conn: Connection, port_id: str, host: str) -> Any:
    row = conn.execute(select(B).where(B.c.port_id == port_id, B.c.host == host)).first()
    if row is None:
        raise PortBindingNotFound(port_id=port_id, host=host)
    return row


def add(conn: Connection, port_id: str, host: str, vnic_type: str,
        profile: dict[str, Any]) -> str:
    """Add a binding on ``host``: the active one if the port is unbound, else
    an inactive one. Its status."""
    rows = all_of_port(conn, port_id)
    if any(row.host == host for row in rows):
        raise PortBindingAlreadyExists(port_id=port_id, host=host)
    unbound = [row for row in rows if row.status == ACTIVE and not row.host]
    status = ACTIVE if unbound or not any(row.status == ACTIVE for row in rows) else INACTIVE
    if unbound:
        conn.execute(delete(B).where(B.c.port_id == port_id, B.c.host == ""))
    conn.execute(B.insert().values(port_id=port_id, host=host, vnic_type=vnic_type,
                                   profile=profile, vif_type=VIF_TYPE_UNBOUND,
                                   vif_details={}, status=status))
    return status


def change(conn: Connection, port_id: str, host: str, data: dict[str, Any]) -> None:
    one(conn, port_id, host)
    values = {k: data[k] for k in ("vnic_type", "profile") if k in data}
    if values:
        conn.execute(update(B).where(B.c.port_id == port_id, B.c.host == host)
                     .values(**values, vif_type=VIF_TYPE_UNBOUND, vif_details={}))


def activate(conn: Connection, port_id: str, host: str) -> None:
    """Make the binding on ``host`` the active one; the active one goes inactive."""
    if one(conn, port_id, host).status == ACTIVE:
        raise PortBindingAlreadyActive(port_id=port_id, host=host)
    conn.execute(update(B).where(B.c.port_id == port_id, B.c.status == ACTIVE)
                 .values(status=INACTIVE))
    conn.execute(update(B).where(B.c.port_id == port_id, B.c.host == host)
                 .values(status=ACTIVE))


def remove(conn: Connection, port_id: str, host: str) -> None:
    one(conn, port_id, host)
    conn.execute(delete(B).where(B.c.port_id == port_id, B.c.host == host))


def store(conn: Connection, port_id: str, host: str, vif_type: str,
          vif_details: dict[str, Any], segment_id: str | None) -> None:
    """Save a binding result, unless the port has been re-bound elsewhere meanwhile."""
    conn.execute(update(B).where(B.c.port_id == port_id, B.c.host == host)
                 .values(vif_type=vif_type, vif_details=vif_details, segment_id=segment_id))


def agents_on(conn: Connection, host: str, down_time: int) -> list[dict[str, Any]]:
    limit = now() - datetime.timedelta(seconds=down_time)
    return [{"id": row.id, "agent_type": row.agent_type, "host": row.host,
             "admin_state_up": row.admin_state_up, "configurations": row.configurations,
             "alive": row.heartbeat_timestamp >= limit}
            for row in conn.execute(select(AG).where(AG.c.host == host))]


_FILTERS = {HOST_ID: (B.c.host, ""), VNIC_TYPE: (B.c.vnic_type, "normal"),
            VIF_TYPE: (B.c.vif_type, VIF_TYPE_UNBOUND)}


def filter_clauses(query: Any) -> list:
    """Port filters on binding attributes, taken out of ``query``; a port without
    a binding matches the unbound values ("" host, normal, unbound)."""
    ports = models.ports
    clauses = []
    for key, (column, unbound) in _FILTERS.items():
        values = query.pop_filter(key)
        if values is None:
            continue
        active = select(B.c.port_id).where(B.c.status == ACTIVE)
        parts = [ports.c.id.in_(active.where(column.in_(values)))]
        if unbound in values:
            parts.append(ports.c.id.not_in(active))
        clauses.append(or_(*parts))
    return clauses
