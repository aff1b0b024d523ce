"""neutron-vpnaas's checks of VPN services and site connections, against the
database (routers, their gateways and interfaces, subnets, endpoint groups).

Each check raises the NeutronException Neutron raises, in Neutron's order, so
the first problem of a request is the one reported.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, owned
from neutrino.definitions import l3, vpn
from neutrino.definitions import validators as v
from neutrino.definitions.l3 import ROUTER_INTERFACE
from neutrino.services.vpn import store

R, RP, IPA, S = models.routers, models.router_ports, models.ip_allocations, models.subnets


def router_row(conn: Connection, ctx: Context, router_id: str) -> Row:
    row = conn.execute(select(R).where(R.c.id == router_id, *owned(R, ctx))).first()
    if row is None:
        raise l3.RouterNotFound(router_id=router_id)
    return row


def gateway_ips(conn: Connection, router: Row) -> dict[int, str]:
    """IP version -> the first address of that version on the router's gateway."""
    if router.gw_port_id is None:
        return {}
    found: dict[int, str] = {}
    for address in sorted(conn.execute(select(IPA.c.ip_address).where(
            IPA.c.port_id == router.gw_port_id)).scalars()):
        found.setdefault(ipaddress.ip_address(address).version, address)
    return found


def subnets_on_router(conn: Connection, router_id: str) -> set[str]:
    return set(conn.execute(
        select(IPA.c.subnet_id).join(RP, RP.c.port_id == IPA.c.port_id)
        .where(RP.c.router_id == router_id, RP.c.port_type == ROUTER_INTERFACE)).scalars())


def check_service(conn: Connection, ctx: Context, data: dict[str, Any]) -> Row:
    """A service's router has a gateway, and its subnet (if any) an interface on it."""
    if data.get("flavor_id") is not None:
        raise vpn.FlavorsPluginNotLoaded()
    router = router_row(conn, ctx, data["router_id"])
    if router.gw_port_id is None:
        raise vpn.RouterIsNotExternal(router_id=router.id)
    subnet_id = data.get("subnet_id")
    if subnet_id is not None and subnet_id not in subnets_on_router(conn, router.id):
        raise vpn.SubnetIsNotConnectedToRouter(subnet_id=subnet_id, router_id=router.id)
    return router


def checked_endpoints(conn: Connection, ctx: Context, core: Any, data: dict[str, Any]
                      ) -> list[str]:
    """A new group's endpoints: some, each once, CIDRs (stored canonical) or
    subnets the caller can see, by type."""
    endpoints, kind = data.get("endpoints") or [], data["type"]
    if not endpoints:
        raise vpn.MissingEndpointForEndpointGroup(group=data.get("name", ""))
    seen: set[str] = set()
    for endpoint in endpoints:
        if endpoint in seen:
            raise vpn.InvalidEndpointInEndpointGroup(
                group_type=kind, endpoint=endpoint, why="Endpoints have to be unique")
        seen.add(endpoint)
    if kind == vpn.CIDR_ENDPOINT:
        for endpoint in endpoints:
            if v.subnet_cidr(endpoint):
                raise vpn.InvalidEndpointInEndpointGroup(group_type=kind, endpoint=endpoint,
                                                         why="Invalid CIDR")
        return [str(ipaddress.ip_network(e, strict=False)) for e in endpoints]
    if kind == vpn.SUBNET_ENDPOINT:
        for endpoint in endpoints:
            if not v.is_uuid(endpoint):
                raise vpn.InvalidEndpointInEndpointGroup(group_type=kind, endpoint=endpoint,
                                                         why="Invalid UUID")
        visible = {s["id"] for s in core.subnets_in(conn, ctx, CollectionQuery(
            filters={"id": list(endpoints)}))}
        for endpoint in endpoints:
            if endpoint not in visible:
                raise vpn.NonExistingSubnetInEndpointGroup(subnet=endpoint)
    return list(endpoints)


def _versions(cidrs: list[str]) -> set[int]:
    return {ipaddress.ip_network(c, strict=False).version for c in cidrs}


def _optional_args(item: dict[str, Any], has_subnet: bool) -> None:
    """A service with a subnet takes peer CIDRs; one without, both endpoint groups."""
    local, peer = item.get("local_ep_group_id"), item.get("peer_ep_group_id")
    if has_subnet:
        if not item.get("peer_cidrs"):
            raise vpn.MissingPeerCidrs()
        wrong = [name for name, given in (("local", local), ("peer", peer)) if given]
        if wrong:
            raise vpn.InvalidEndpointGroup(which=" and ".join(wrong),
                                           suffix="s" if len(wrong) > 1 else "")
        return
    if item.get("peer_cidrs"):
        raise vpn.PeerCidrsInvalid()
    missing = [name for name, given in (("local", local), ("peer", peer)) if not given]
    if missing:
        raise vpn.MissingRequiredEndpointGroup(which=" and ".join(missing),
                                               suffix="s" if len(missing) > 1 else "")


def _group_of(conn: Connection, ctx: Context, group_id: str, expected: str) -> list[str]:
    row = store.group_row(conn, ctx, group_id)
    if row.endpoint_type != expected:
        raise vpn.WrongEndpointGroupType(group_type=row.endpoint_type, which=group_id,
                                         expected=expected)
    return store.endpoints_of(conn, [group_id]).get(group_id, [])


def _one_version(cidrs: list[str], error: Exception) -> int:
    versions = _versions(cidrs)
    if len(versions) > 1:
        raise error
    return versions.pop()


def local_and_peer(conn: Connection, ctx: Context, item: dict[str, Any], service: Row
                   ) -> tuple[list[str], list[str]]:
    """The connection's local and peer CIDRs, their IP versions checked."""
    if service.subnet_id is not None:
        subnet = conn.execute(select(S.c.cidr).where(S.c.id == service.subnet_id)).scalar()
        local = [subnet] if subnet else []
        peer = list(item["peer_cidrs"])
        peer_version = _one_version(peer, vpn.MixedIPVersionsForPeerCidrs())
    else:
        subnet_ids = _group_of(conn, ctx, item["local_ep_group_id"], vpn.SUBNET_ENDPOINT)
        on_router = subnets_on_router(conn, service.router_id)
        for subnet_id in subnet_ids:
            if subnet_id not in on_router:
                raise vpn.SubnetIsNotConnectedToRouter(subnet_id=subnet_id,
                                                       router_id=service.router_id)
        cidrs = dict(conn.execute(select(S.c.id, S.c.cidr).where(S.c.id.in_(subnet_ids))).all())
        local = [cidrs[s] for s in subnet_ids if s in cidrs]
        _one_version(local, vpn.MixedIPVersionsForIPSecEndpoints(
            group=item["local_ep_group_id"]))
        peer = _group_of(conn, ctx, item["peer_ep_group_id"], vpn.CIDR_ENDPOINT)
        peer_version = _one_version(peer, vpn.MixedIPVersionsForIPSecEndpoints(
            group=item["peer_ep_group_id"]))
    if local and _versions(local) != {peer_version}:
        raise vpn.MixedIPVersionsForIPSecConnection()
    return local, peer


def _overlap(a: Any, b: Any) -> bool:
    return a.version == b.version and a.overlaps(b)


def resolve_peer(address: str) -> str:
    """An IP address as given; a host name looked up (Neutron resolves it once,
    at create or update, and stores the address)."""
    if v.ip_address(address) is None:
        return address
    if not vpn.is_hostname(address):
        raise vpn.VPNPeerAddressNotResolved(peer_address=address)
    try:
        return str(socket.getaddrinfo(address, None)[0][4][0])
    except (OSError, UnicodeError, IndexError):
        raise vpn.VPNPeerAddressNotResolved(peer_address=address) from None


def check_connection(conn: Connection, ctx: Context, item: dict[str, Any], service: Row,
                     ipsec_policy: Row) -> None:
    """The whole connection as it would be stored (``item`` has flat ``dpd_*``)."""
    _optional_args(item, service.subnet_id is not None)
    local, peer = local_and_peer(conn, ctx, item, service)
    if item["dpd_timeout"] <= item["dpd_interval"]:
        raise vpn.IPsecSiteConnectionDpdIntervalValueError(attr="dpd_timeout")
    version = _versions(local).pop() if local else 4
    if item.get("mtu") and item["mtu"] < vpn.IP_MIN_MTU[version]:
        raise vpn.IPsecSiteConnectionMtuError(mtu=item["mtu"], version=version)
    for peer_cidr in peer:
        peer_net = ipaddress.ip_network(peer_cidr, strict=False)
        for local_cidr in local:
            if _overlap(peer_net, ipaddress.ip_network(local_cidr, strict=False)):
                raise vpn.PeerCidrOverlapsLocalCidr(peer_cidr=peer_cidr, local_cidr=local_cidr)
    if ipsec_policy.transform_protocol == "ah-esp":  # not with *Swan, as Neutron's driver
        raise vpn.IpsecValidationFailure(resource="IPsec Policy", key="transform_protocol",
                                         value="ah-esp")


def check_peer_address(conn: Connection, item: dict[str, Any], service: Row) -> None:
    """The peer's address resolved, and the router has a gateway of its IP version."""
    item["peer_address"] = resolve_peer(item["peer_address"])
    version = ipaddress.ip_address(item["peer_address"]).version
    router = conn.execute(select(R).where(R.c.id == service.router_id)).first()
    if router is None or version not in gateway_ips(conn, router):
        raise vpn.ExternalNetworkHasNoSubnet(router_id=service.router_id,
                                             ip_version=f"IPv{version}")
