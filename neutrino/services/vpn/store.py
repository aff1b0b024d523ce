"""VPNaaS in the database: rows, API views, and the reads the plugin makes of
them (a list is a query per table, whatever its length)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, find_row, owned, select_page
from neutrino.db.util import chunked
from neutrino.definitions import vpn
from neutrino.definitions.validators import new_uuid

IKE = models.ikepolicies
IPSEC = models.ipsecpolicies
SVC = models.vpnservices
EPG = models.vpn_endpoint_groups
EP = models.vpn_endpoints
CONN = models.ipsec_site_connections
PEER = models.ipsecpeercidrs


def columns(table: Any, *names: str, **renamed: Any) -> dict[str, Any]:
    """API attribute -> column, for filters and sorts."""
    found = {name: table.c[name] for name in ("id", "name", "description", "project_id",
                                              *names)}
    found["tenant_id"] = table.c.project_id
    found.update(renamed)
    return found


IKE_COLUMNS = columns(IKE, "auth_algorithm", "encryption_algorithm",
                      "phase1_negotiation_mode", "ike_version", "pfs")
IPSEC_COLUMNS = columns(IPSEC, "transform_protocol", "auth_algorithm",
                        "encryption_algorithm", "encapsulation_mode", "pfs")
SVC_COLUMNS = columns(SVC, "status", "admin_state_up", "external_v4_ip", "external_v6_ip",
                      "subnet_id", "router_id")
EPG_COLUMNS = columns(EPG, type=EPG.c.endpoint_type)
CONN_COLUMNS = columns(CONN, "peer_address", "peer_id", "local_id", "route_mode", "mtu",
                       "initiator", "auth_mode", "psk", "status", "admin_state_up",
                       "vpnservice_id", "ikepolicy_id", "ipsecpolicy_id",
                       "local_ep_group_id", "peer_ep_group_id")


def _base(row: Any) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "description": row.description,
            "project_id": row.project_id, "tenant_id": row.project_id}


def _rows(conn: Connection, table: Any, column_map: dict[str, Any], ctx: Context,
          query: CollectionQuery, find: Any) -> list[Row]:
    if query.marker is not None:
        find(conn, ctx, query.marker)
    return select_page(conn, table, column_map, query, owned(table, ctx))


def lifetime_values(given: dict[str, Any], row: Any = None) -> dict[str, Any]:
    """The lifetime columns of a policy: what was given over what it had (or the
    defaults, 3600 seconds)."""
    units = row.lifetime_units if row is not None else vpn.LIFETIME_DEFAULT["units"]
    value = row.lifetime_value if row is not None else vpn.LIFETIME_DEFAULT["value"]
    return {"lifetime_units": given.get("units", units),
            "lifetime_value": given.get("value", value)}


# --- IKE and IPsec policies -------------------------------------------------------------

def ike_view(row: Any) -> dict[str, Any]:
    return {**_base(row), "auth_algorithm": row.auth_algorithm,
            "encryption_algorithm": row.encryption_algorithm,
            "phase1_negotiation_mode": row.phase1_negotiation_mode,
            "lifetime": {"units": row.lifetime_units, "value": row.lifetime_value},
            "ike_version": row.ike_version, "pfs": row.pfs}


def ike_row(conn: Connection, ctx: Context, policy_id: str, for_update: bool = False) -> Row:
    return find_row(conn, IKE, policy_id, owned(IKE, ctx),
                    lambda: vpn.IKEPolicyNotFound(ikepolicy_id=policy_id), for_update)


def ike_policies(conn: Connection, ctx: Context, query: CollectionQuery
                 ) -> list[dict[str, Any]]:
    return [ike_view(row) for row in _rows(conn, IKE, IKE_COLUMNS, ctx, query, ike_row)]


def ipsec_view(row: Any) -> dict[str, Any]:
    return {**_base(row), "transform_protocol": row.transform_protocol,
            "auth_algorithm": row.auth_algorithm,
            "encryption_algorithm": row.encryption_algorithm,
            "encapsulation_mode": row.encapsulation_mode,
            "lifetime": {"units": row.lifetime_units, "value": row.lifetime_value},
            "pfs": row.pfs}


def ipsec_row(conn: Connection, ctx: Context, policy_id: str, for_update: bool = False
              ) -> Row:
    return find_row(conn, IPSEC, policy_id, owned(IPSEC, ctx),
                    lambda: vpn.IPsecPolicyNotFound(ipsecpolicy_id=policy_id), for_update)


def ipsec_policies(conn: Connection, ctx: Context, query: CollectionQuery
                   ) -> list[dict[str, Any]]:
    return [ipsec_view(row)
            for row in _rows(conn, IPSEC, IPSEC_COLUMNS, ctx, query, ipsec_row)]


def insert(conn: Connection, table: Any, values: dict[str, Any]) -> str:
    row_id = new_uuid()
    conn.execute(table.insert().values(id=row_id, **values))
    return row_id


def connection_using(conn: Connection, column: Any, row_id: str) -> str | None:
    """A connection whose ``column`` is ``row_id``, if any."""
    return conn.execute(select(CONN.c.id).where(column == row_id).limit(1)).scalar()


# --- services ---------------------------------------------------------------------------

def service_view(row: Any) -> dict[str, Any]:
    return {**_base(row), "subnet_id": row.subnet_id, "router_id": row.router_id,
            "admin_state_up": row.admin_state_up, "external_v4_ip": row.external_v4_ip,
            "external_v6_ip": row.external_v6_ip, "status": row.status, "flavor_id": None}


def service_row(conn: Connection, ctx: Context, service_id: str, for_update: bool = False
                ) -> Row:
    return find_row(conn, SVC, service_id, owned(SVC, ctx),
                    lambda: vpn.VPNServiceNotFound(vpnservice_id=service_id), for_update)


def services(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    query.pop_filter("flavor_id")
    return [service_view(row)
            for row in _rows(conn, SVC, SVC_COLUMNS, ctx, query, service_row)]


def services_of_router(conn: Connection, router_id: str) -> list[str]:
    return list(conn.execute(select(SVC.c.id).where(SVC.c.router_id == router_id)
                             .order_by(SVC.c.id)).scalars())


# --- endpoint groups --------------------------------------------------------------------

def group_view(row: Any, endpoints: Sequence[str] = ()) -> dict[str, Any]:
    return {**_base(row), "type": row.endpoint_type, "endpoints": list(endpoints)}


def group_row(conn: Connection, ctx: Context, group_id: str, for_update: bool = False
              ) -> Row:
    return find_row(conn, EPG, group_id, owned(EPG, ctx),
                    lambda: vpn.VPNEndpointGroupNotFound(endpoint_group_id=group_id),
                    for_update)


def endpoints_of(conn: Connection, group_ids: Iterable[str]) -> dict[str, list[str]]:
    """group id -> its endpoints, in order."""
    found: dict[str, list[str]] = {}
    for chunk in chunked(sorted(set(group_ids))):
        for group_id, endpoint in conn.execute(
                select(EP.c.endpoint_group_id, EP.c.endpoint)
                .where(EP.c.endpoint_group_id.in_(chunk))
                .order_by(EP.c.endpoint_group_id, EP.c.position)):
            found.setdefault(group_id, []).append(endpoint)
    return found


def groups(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    rows = _rows(conn, EPG, EPG_COLUMNS, ctx, query, group_row)
    found = endpoints_of(conn, [row.id for row in rows])
    return [group_view(row, found.get(row.id, ())) for row in rows]


def group(conn: Connection, ctx: Context, group_id: str) -> dict[str, Any]:
    row = group_row(conn, ctx, group_id)
    return group_view(row, endpoints_of(conn, [group_id]).get(group_id, ()))


def set_endpoints(conn: Connection, group_id: str, endpoints: Sequence[str]) -> None:
    if endpoints:
        conn.execute(EP.insert(), [{"endpoint_group_id": group_id, "endpoint": endpoint,
                                    "position": n} for n, endpoint in enumerate(endpoints)])


def subnet_groups_with(conn: Connection, subnet_id: str) -> str | None:
    """A subnet endpoint group holding the subnet, if any."""
    return conn.execute(
        select(EPG.c.id).join(EP, EP.c.endpoint_group_id == EPG.c.id)
        .where(EPG.c.endpoint_type == vpn.SUBNET_ENDPOINT, EP.c.endpoint == subnet_id)
        .order_by(EPG.c.id).limit(1)).scalar()


# --- site connections -------------------------------------------------------------------

def connection_view(row: Any, peer_cidrs: Sequence[str] = ()) -> dict[str, Any]:
    return {**_base(row), "peer_address": row.peer_address, "peer_id": row.peer_id,
            "local_id": row.local_id, "route_mode": row.route_mode, "mtu": row.mtu,
            "auth_mode": row.auth_mode, "psk": row.psk, "initiator": row.initiator,
            "dpd": {"action": row.dpd_action, "interval": row.dpd_interval,
                    "timeout": row.dpd_timeout},
            "admin_state_up": row.admin_state_up, "status": row.status,
            "vpnservice_id": row.vpnservice_id, "ikepolicy_id": row.ikepolicy_id,
            "ipsecpolicy_id": row.ipsecpolicy_id, "peer_cidrs": list(peer_cidrs),
            "local_ep_group_id": row.local_ep_group_id,
            "peer_ep_group_id": row.peer_ep_group_id}


def connection_row(conn: Connection, ctx: Context, connection_id: str,
                   for_update: bool = False) -> Row:
    return find_row(conn, CONN, connection_id, owned(CONN, ctx),
                    lambda: vpn.IPsecSiteConnectionNotFound(ipsec_site_conn_id=connection_id),
                    for_update)


def peer_cidrs_of(conn: Connection, connection_ids: Iterable[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for chunk in chunked(sorted(set(connection_ids))):
        for connection_id, cidr in conn.execute(
                select(PEER.c.ipsec_site_connection_id, PEER.c.cidr)
                .where(PEER.c.ipsec_site_connection_id.in_(chunk))
                .order_by(PEER.c.ipsec_site_connection_id, PEER.c.position)):
            found.setdefault(connection_id, []).append(cidr)
    return found


def connections(conn: Connection, ctx: Context, query: CollectionQuery
                ) -> list[dict[str, Any]]:
    rows = _rows(conn, CONN, CONN_COLUMNS, ctx, query, connection_row)
    found = peer_cidrs_of(conn, [row.id for row in rows])
    return [connection_view(row, found.get(row.id, ())) for row in rows]


def connection(conn: Connection, ctx: Context, connection_id: str) -> dict[str, Any]:
    row = connection_row(conn, ctx, connection_id)
    return connection_view(row, peer_cidrs_of(conn, [connection_id]).get(connection_id, ()))


def set_peer_cidrs(conn: Connection, connection_id: str, cidrs: Sequence[str]) -> None:
    conn.execute(delete(PEER).where(PEER.c.ipsec_site_connection_id == connection_id))
    if cidrs:
        conn.execute(PEER.insert(), [{"ipsec_site_connection_id": connection_id,
                                      "cidr": cidr, "position": n}
                                     for n, cidr in enumerate(cidrs)])


def connection_using_group(conn: Connection, group_id: str) -> str | None:
    return conn.execute(select(CONN.c.id).where(or_(
        CONN.c.local_ep_group_id == group_id, CONN.c.peer_ep_group_id == group_id))
        .limit(1)).scalar()


def connection_using_local_subnet(conn: Connection, router_id: str, subnet_id: str
                                  ) -> str | None:
    """A connection of the router's services whose local endpoint group holds the subnet."""
    return conn.execute(
        select(CONN.c.id)
        .join(SVC, SVC.c.id == CONN.c.vpnservice_id)
        .join(EPG, EPG.c.id == CONN.c.local_ep_group_id)
        .join(EP, EP.c.endpoint_group_id == EPG.c.id)
        .where(SVC.c.router_id == router_id, EPG.c.endpoint_type == vpn.SUBNET_ENDPOINT,
               EP.c.endpoint == subnet_id)
        .order_by(CONN.c.id).limit(1)).scalar()


def set_status(conn: Connection, table: Any, row_id: str, status: str, pending_too: bool
               ) -> None:
    """A reported status: over a pending one only when the agent says it settled
    it (``pending_too``), and never over PENDING_DELETE (the row is going)."""
    clauses = [table.c.id == row_id, table.c.status != vpn.PENDING_DELETE]
    if not pending_too:
        clauses.append(table.c.status.not_in(vpn.PENDING))
    conn.execute(table.update().where(*clauses).values(status=status))
