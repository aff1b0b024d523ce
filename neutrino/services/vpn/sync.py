"""What the L3 agents' vpnaas extension is sent of each router (``_vpnservices``,
``rpc.contracts.vpn``): three reads for a whole chunk of routers — the services
with their connections and policies, the peer CIDRs, the endpoint groups'
endpoints with their subnets' CIDRs."""

from __future__ import annotations

import ipaddress
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.util import chunked
from neutrino.rpc.contracts.vpn import (
    IkePolicySyncData,
    IpsecPolicySyncData,
    SiteConnectionSyncData,
    VpnServiceSyncData,
)
from neutrino.services.vpn.store import CONN, EP, IKE, IPSEC, SVC, peer_cidrs_of

SUBNETS = models.subnets


def _version(address: str) -> int:
    return ipaddress.ip_address(address).version


def gateway_addresses(view: dict[str, Any]) -> dict[int, str]:
    """IP version -> the first gateway address of that version of a router's sync data."""
    found: dict[int, str] = {}
    for fixed in (view.get("gw_port") or {}).get("fixed_ips") or ():
        found.setdefault(_version(fixed["ip_address"]), fixed["ip_address"])
    return found


def _rows(conn: Connection, router_ids: list[str]) -> list[Any]:
    subnet = SUBNETS.alias("service_subnet")
    stmt = (select(SVC.c.id.label("svc_id"), SVC.c.status.label("svc_status"),
                   SVC.c.admin_state_up.label("svc_up"), SVC.c.router_id,
                   SVC.c.external_v4_ip, SVC.c.external_v6_ip,
                   subnet.c.cidr.label("service_cidr"), CONN,
                   *(c.label(f"ike_{c.name}") for c in IKE.c),
                   *(c.label(f"ipsec_{c.name}") for c in IPSEC.c))
            .select_from(SVC)
            .outerjoin(subnet, subnet.c.id == SVC.c.subnet_id)
            .outerjoin(CONN, CONN.c.vpnservice_id == SVC.c.id)
            .outerjoin(IKE, IKE.c.id == CONN.c.ikepolicy_id)
            .outerjoin(IPSEC, IPSEC.c.id == CONN.c.ipsecpolicy_id)
            .where(SVC.c.router_id.in_(router_ids))
            .order_by(SVC.c.id, CONN.c.id))
    return list(conn.execute(stmt))


def _endpoints(conn: Connection, group_ids: set[str]) -> dict[str, list[str]]:
    """group id -> its endpoints, subnet ids read as their CIDRs."""
    found: dict[str, list[str]] = {}
    for chunk in chunked(sorted(group_ids)):
        for group_id, endpoint, cidr in conn.execute(
                select(EP.c.endpoint_group_id, EP.c.endpoint, SUBNETS.c.cidr)
                .outerjoin(SUBNETS, SUBNETS.c.id == EP.c.endpoint)
                .where(EP.c.endpoint_group_id.in_(chunk))
                .order_by(EP.c.endpoint_group_id, EP.c.position)):
            found.setdefault(group_id, []).append(cidr or endpoint)
    return found


def _ike(row: Any) -> IkePolicySyncData:
    return {"auth_algorithm": row.ike_auth_algorithm,
            "encryption_algorithm": row.ike_encryption_algorithm,
            "ike_version": row.ike_ike_version, "lifetime_value": row.ike_lifetime_value,
            "pfs": row.ike_pfs, "phase1_negotiation_mode": row.ike_phase1_negotiation_mode}


def _ipsec(row: Any) -> IpsecPolicySyncData:
    return {"transform_protocol": row.ipsec_transform_protocol,
            "auth_algorithm": row.ipsec_auth_algorithm,
            "encryption_algorithm": row.ipsec_encryption_algorithm,
            "encapsulation_mode": row.ipsec_encapsulation_mode,
            "lifetime_value": row.ipsec_lifetime_value, "pfs": row.ipsec_pfs}


def _connection(row: Any, peer: dict[str, list[str]], groups: dict[str, list[str]]
                ) -> SiteConnectionSyncData:
    if row.service_cidr is not None:
        local, peers = [row.service_cidr], peer.get(row.id, [])
    else:
        local = groups.get(row.local_ep_group_id or "", [])
        peers = groups.get(row.peer_ep_group_id or "", [])
    return {"id": row.id, "status": row.status, "admin_state_up": row.admin_state_up,
            "peer_address": row.peer_address, "peer_id": row.peer_id,
            "local_id": row.local_id or "", "psk": row.psk, "initiator": row.initiator,
            "mtu": row.mtu, "dpd": {"action": row.dpd_action, "interval": row.dpd_interval,
                                    "timeout": row.dpd_timeout},
            "local_cidrs": local, "peer_cidrs": peers, "ikepolicy": _ike(row),
            "ipsecpolicy": _ipsec(row)}


def _external_ip(service: VpnServiceSyncData, gateway: dict[int, str],
                 stored: dict[int, str | None]) -> str | None:
    """The gateway address of the peers' IP version (IPv4 unless they are all
    IPv6), as Neutron picks it; the one stored at create if the port has none."""
    peers = [c["peer_address"] for c in service["ipsec_site_connections"]]
    version = 6 if peers and all(_version(p) == 6 for p in peers if _is_ip(p)) and any(
        _is_ip(p) for p in peers) else 4
    other = 10 - version  # 4 <-> 6
    return (gateway.get(version) or stored.get(version) or gateway.get(other)
            or stored.get(other))


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def routers_services(conn: Connection, views: list[dict[str, Any]]
                     ) -> dict[str, list[VpnServiceSyncData]]:
    """router id -> its VPN services as the agents are sent them."""
    rows = _rows(conn, [view["id"] for view in views])
    if not rows:
        return {}
    connection_ids = [row.id for row in rows if row.id is not None]
    peer = peer_cidrs_of(conn, connection_ids)
    groups = _endpoints(conn, {g for row in rows if row.id is not None
                               for g in (row.local_ep_group_id, row.peer_ep_group_id) if g})
    by_service: dict[str, VpnServiceSyncData] = {}
    stored: dict[str, dict[int, str | None]] = {}
    for row in rows:
        service = by_service.get(row.svc_id)
        if service is None:
            service = by_service[row.svc_id] = {
                "id": row.svc_id, "status": row.svc_status, "admin_state_up": row.svc_up,
                "router_id": row.router_id, "external_ip": None,
                "ipsec_site_connections": []}
            stored[row.svc_id] = {4: row.external_v4_ip, 6: row.external_v6_ip}
        if row.id is not None:
            service["ipsec_site_connections"].append(_connection(row, peer, groups))
    gateways = {view["id"]: gateway_addresses(view) for view in views}
    found: dict[str, list[VpnServiceSyncData]] = {}
    for service_id, service in by_service.items():
        service["external_ip"] = _external_ip(service, gateways.get(service["router_id"], {}),
                                              stored[service_id])
        found.setdefault(service["router_id"], []).append(service)
    return found
