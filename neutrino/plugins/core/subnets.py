"""Subnets in the database: validation of IPAM attributes, views, life cycle."""

from __future__ import annotations

import ipaddress
from types import SimpleNamespace
from typing import Any

from sqlalchemy import String, bindparam, cast, delete, literal, null, or_, select, union_all
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.addresses import eui64
from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db.prepared import Prepared
from neutrino.db.query import CollectionQuery, api_columns, select_page
from neutrino.db.util import bump, check_revision, chunked, now, timestamp
from neutrino.definitions import port as port_definition
from neutrino.definitions.validators import new_uuid
from neutrino.ipam import allocator
from neutrino.ipam import pools as P
from neutrino.plugins.core import networks, segment_subnets, subnetpools

S = models.subnets
AP = models.allocation_pools
DNS = models.dns_nameservers
HR = models.host_routes
ST = models.subnet_service_types
IA = models.ip_allocations

COLUMNS = api_columns(S, "network_id", "ip_version", "cidr", "gateway_ip", "enable_dhcp",
                      "ipv6_ra_mode", "ipv6_address_mode", "subnetpool_id", "segment_id")


def _invalid(msg: str) -> exc.InvalidInput:
    return exc.InvalidInput(error_message=msg)


def visible(ctx: Context) -> list:
    """Own subnets, and the subnets of networks RBAC entries open to the caller."""
    if ctx.is_admin:
        return []
    return [or_(S.c.project_id == ctx.project_id,
                S.c.network_id.in_(networks.granted(ctx)))]


#: whether the subnet's network is external (subnet-external-network), read with it
_EXTERNAL = (select(models.networks.c.router_external)
             .where(models.networks.c.id == S.c.network_id)
             .scalar_subquery().label("router_external"))


def get_row(conn: Connection, ctx: Context, subnet_id: str) -> Row:
    row = conn.execute(select(S, _EXTERNAL).where(S.c.id == subnet_id, *visible(ctx))).first()
    if row is None:
        raise exc.SubnetNotFound(subnet_id=subnet_id)
    return row


_FACTS = Prepared(select(S.c.id, S.c.cidr, S.c.ip_version, S.c.enable_dhcp)
                  .where(S.c.id == bindparam("id")))


def facts(conn: Connection, subnet_ids: list[str]) -> dict[str, dict[str, Any]]:
    """``cidr``, ``ip_version`` and ``enable_dhcp`` of each subnet, by id: what a
    backend writing a port needs, for a fraction of a full view's cost."""
    found = {}
    for subnet_id in set(subnet_ids):
        for row in _FACTS.rows(conn, {"id": subnet_id}):
            found[row.id] = {"id": row.id, "cidr": row.cidr, "ip_version": row.ip_version,
                             "enable_dhcp": row.enable_dhcp}
    return found


def view(row: Any, details: dict[str, Any], tag_list: list[str]) -> dict[str, Any]:
    return {
        "id": row.id, "name": row.name, "network_id": row.network_id,
        "tenant_id": row.project_id, "project_id": row.project_id,
        "ip_version": row.ip_version, "subnetpool_id": row.subnetpool_id,
        "enable_dhcp": row.enable_dhcp, "ipv6_ra_mode": row.ipv6_ra_mode,
        "ipv6_address_mode": row.ipv6_address_mode, "gateway_ip": row.gateway_ip,
        "cidr": row.cidr, "segment_id": row.segment_id,
        "router:external": bool(row.router_external),
        "allocation_pools": details.get("allocation_pools", []),
        "host_routes": details.get("host_routes", []),
        "service_types": details.get("service_types", []),
        "dns_nameservers": details.get("dns_nameservers", []),
        "description": row.description, "tags": tag_list,
        "created_at": timestamp(row.created_at), "updated_at": timestamp(row.updated_at),
        "revision_number": row.revision_number,
    }


def _details_of(chunk: list[str]) -> Any:
    """Pools, host routes, DNS servers and service types of the subnets in one
    read: (subnet, kind, first, second, position) rows."""
    text, none = String(), null()
    return union_all(
        select(AP.c.subnet_id, literal("pool", text), AP.c.first_ip, AP.c.last_ip,
               literal(0)).where(AP.c.subnet_id.in_(chunk)),
        select(HR.c.subnet_id, literal("route", text), HR.c.destination, HR.c.nexthop,
               literal(0)).where(HR.c.subnet_id.in_(chunk)),
        select(DNS.c.subnet_id, literal("dns", text), DNS.c.address, cast(none, text),
               DNS.c.position).where(DNS.c.subnet_id.in_(chunk)),
        select(ST.c.subnet_id, literal("type", text), ST.c.service_type, cast(none, text),
               literal(0)).where(ST.c.subnet_id.in_(chunk)))


def _details(conn: Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {i: {"allocation_pools": [], "host_routes": [],
                                            "dns_nameservers": [], "service_types": []}
                                        for i in ids}
    for chunk in chunked(ids):
        rows = conn.execute(_details_of(list(chunk))).all()
        for sid, kind, first, second, _ in sorted(rows, key=_detail_order):
            item = found[sid]
            if kind == "pool":
                item["allocation_pools"].append({"start": first, "end": second})
            elif kind == "route":
                item["host_routes"].append({"destination": first, "nexthop": second})
            elif kind == "dns":
                item["dns_nameservers"].append(first)
            else:
                item["service_types"].append(first)
    return found


def _detail_order(row: Any) -> tuple:
    """Pools by their first address, DNS servers in their order, the rest by text."""
    sid, kind, first, second, position = row
    key: Any = int(ipaddress.ip_address(first)) if kind == "pool" else first
    return (sid, kind, position, key, second or "")


def get(conn: Connection, ctx: Context, subnet_id: str) -> dict[str, Any]:
    row = get_row(conn, ctx, subnet_id)
    return view(row, _details(conn, [row.id])[row.id], tags.of(conn, row.id))


def list_(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    where = visible(ctx)
    shared = query.pop_filter("shared")
    if shared is not None:
        N = models.networks
        where.append(S.c.network_id.in_(select(N.c.id).where(
            networks.shared_column(ctx).in_(shared))))
    external = query.pop_filter("router:external")
    if external is not None:
        N = models.networks
        where.append(S.c.network_id.in_(select(N.c.id).where(
            N.c.router_external.in_(external))))
    rows = select_page(conn, S, COLUMNS, query, where, (S, _EXTERNAL))
    ids = [r.id for r in rows]
    details = _details(conn, ids)
    tag_map = tags.load(conn, ids)
    return [view(r, details[r.id], tag_map.get(r.id, [])) for r in rows]


# --- validation ----------------------------------------------------------------


class DNSNameServersExhausted(exc.BadRequest):
    message = ("Unable to complete operation for %(subnet_id)s. The number of DNS "
               "nameservers exceeds the limit %(quota)s.")


class HostRoutesExhausted(exc.BadRequest):
    message = ("Unable to complete operation for %(subnet_id)s. The number of host routes "
               "exceeds the limit %(quota)s.")


def _check_ipv6_modes(version: int, ra_mode: str | None, addr_mode: str | None,
                      net: P.IPNetwork | None, enable_dhcp: bool) -> None:
    if version == 4:
        for name, mode in (("ipv6_ra_mode", ra_mode), ("ipv6_address_mode", addr_mode)):
            if mode:
                raise _invalid(f"{name} is not valid when ip_version is 4")
    if (ra_mode or addr_mode) and not enable_dhcp:
        raise _invalid("ipv6_ra_mode or ipv6_address_mode cannot be set when enable_dhcp "
                       "is set to False")
    if ra_mode and addr_mode and ra_mode != addr_mode:
        raise _invalid(f"ipv6_ra_mode set to '{ra_mode}' with ipv6_address_mode set to "
                       f"'{addr_mode}' is not valid. If both attributes are set, they must "
                       "be the same value")
    if net is not None and net.version == 6 and net.prefixlen != 64 and (
            addr_mode in allocator.AUTO_ADDRESS_MODES or ra_mode in allocator.AUTO_ADDRESS_MODES):
        raise _invalid(f"Invalid CIDR {net} for IPv6 address mode. OpenStack uses the EUI-64 "
                       "address format, which requires the prefix to be /64")


def _check_version(version: int, value: str, name: str) -> None:
    if ipaddress.ip_network(value, strict=False).version != version:
        raise _invalid(f"{name} '{value}' does not match the ip_version '{version}'")


def _check_gateway(net: P.IPNetwork, gateway: str) -> None:
    _check_version(net.version, gateway, "gateway_ip")
    ip = ipaddress.ip_address(gateway)
    if net.version == 4 and ip in net and ip in (net.network_address, net.broadcast_address):
        raise _invalid("Gateway is not valid on subnet")


def _check_lists(data: dict[str, Any], version: int, subnet_id: str, max_dns: int,
                 max_routes: int) -> None:
    servers = data.get("dns_nameservers") or []
    if len(servers) > max_dns:
        raise DNSNameServersExhausted(subnet_id=subnet_id, quota=max_dns)
    for server in servers:
        _check_version(version, server, "dns_nameserver")
    routes = data.get("host_routes") or []
    if len(routes) > max_routes:
        raise HostRoutesExhausted(subnet_id=subnet_id, quota=max_routes)
    for route in routes:
        _check_version(version, route["nexthop"], "nexthop")
        _check_version(version, route["destination"], "destination")


def _check_cidr(net: P.IPNetwork, enable_dhcp: bool) -> None:
    """What Neutron checks of a new cidr before it looks at the network."""
    if net.version == 6 and net.network_address == ipaddress.IPv6Address("::"):
        raise _invalid("IPv6 subnet '::' is not supported")
    if not enable_dhcp:
        return
    if net.prefixlen > (30 if net.version == 4 else 126):
        raise _invalid("Subnet has a prefix length that is incompatible with DHCP service "
                       "enabled")
    if net.is_multicast:
        raise _invalid("Multicast IP subnet is not supported if enable_dhcp is True")
    if net.is_loopback:
        raise _invalid("Loopback IP subnet is not supported if enable_dhcp is True")
    if net.version == 4 and int(net.network_address) == 0:
        raise _invalid("First IP '0.0.0.0' of network is not supported if enable_dhcp is "
                       "True.")


def _check_overlap(conn: Connection, net: P.IPNetwork, network_id: str,
                   allow_overlapping: bool) -> None:
    if net.prefixlen == 0:
        raise _invalid("0 is not allowed as CIDR prefix length")
    stmt = select(S.c.cidr, S.c.network_id).where(S.c.ip_version == net.version)
    if allow_overlapping:
        stmt = stmt.where(S.c.network_id == network_id)
    for cidr, _ in conn.execute(stmt):
        if ipaddress.ip_network(cidr).overlaps(net):
            raise _invalid(f"Requested subnet with cidr: {net} for network: {network_id} "
                           "overlaps with another subnet")


# --- life cycle ------------------------------------------------------------------


def routed_networks(settings: Any) -> bool:
    """Whether subnets may be on segments (the segments service plugin is loaded)."""
    return "segments" in settings.service_plugins


def create(conn: Connection, ctx: Context, data: dict[str, Any], settings: Any
           ) -> dict[str, Any]:
    network = networks.get_row(conn, ctx, data["network_id"])
    version = data["ip_version"]
    segment_subnets.check(conn, network.id, data.get("segment_id"), routed_networks(settings))
    if data.get("cidr") is not None:
        given = ipaddress.ip_network(data["cidr"], strict=False)
        if given.version != version:
            raise _invalid(f"cidr '{data['cidr']}' does not match the ip_version '{version}'")
    if data.get("gateway_ip") is not None:
        _check_version(version, data["gateway_ip"], "gateway_ip")
    cidr, pool_id = subnetpools.cidr_for_subnet(conn, ctx, data, version, network.id)
    net = ipaddress.ip_network(cidr)
    ra_mode, addr_mode = data.get("ipv6_ra_mode"), data.get("ipv6_address_mode")
    enable_dhcp = data.get("enable_dhcp", True)
    _check_cidr(net, enable_dhcp)
    if "gateway_ip" in data:
        gateway = data["gateway_ip"]
        if gateway is not None:
            _check_gateway(net, gateway)
    elif version == 6 and data.get("cidr") is not None:
        # Neutron gives an IPv6 subnet whose cidr was asked for its subnet-router
        # anycast address (RFC 4291), the prefix itself ...
        gateway = str(net.network_address)
    else:
        # ... and the address after it to IPv4, and to a prefix a pool chose.
        after = int(net.network_address) + 1
        gateway = P.to_text(version, after) if after < 2 ** net.max_prefixlen else None
    _check_lists(data, version, "new subnet", settings.max_dns_nameservers,
                 settings.max_subnet_host_routes)
    _check_ipv6_modes(version, ra_mode, addr_mode, net, enable_dhcp)
    if network.mtu:
        networks.check_mtu_for_subnets(network.id, network.mtu, {version})
    if data.get("allocation_pools") is not None:
        ranges = P.parse_pools(net, data["allocation_pools"], gateway)
    else:
        ranges = P.default_pools(net, gateway)
    _check_overlap(conn, net, network.id, settings.allow_overlapping_ips)
    subnet_id = new_uuid()
    when = now()
    row = {
        "id": subnet_id, "project_id": data["project_id"], "name": data.get("name", ""),
        "description": data.get("description", ""), "network_id": network.id,
        "ip_version": version, "cidr": str(net), "gateway_ip": gateway,
        "enable_dhcp": enable_dhcp, "ipv6_ra_mode": ra_mode, "ipv6_address_mode": addr_mode,
        "subnetpool_id": pool_id, "segment_id": data.get("segment_id"),
        "created_at": when, "updated_at": when, "revision_number": 0,
    }
    conn.execute(S.insert().values(**row))
    _write_pools(conn, subnet_id, version, ranges)
    _write_dns(conn, subnet_id, data.get("dns_nameservers") or [])
    _write_routes(conn, subnet_id, data.get("host_routes") or [])
    _write_service_types(conn, subnet_id, data.get("service_types") or [])
    if row["segment_id"] is not None:
        for peer in segment_subnets.update_peer_routes(conn, network.id):
            if peer != subnet_id:
                bump(conn, S, peer)
        data = {**data, "host_routes": _details(conn, [subnet_id])[subnet_id]["host_routes"]}
    bump(conn, models.networks, network.id)
    if isinstance(net, ipaddress.IPv6Network) and allocator.is_auto_address(ra_mode, addr_mode):
        _address_existing_ports(conn, subnet_id, network.id, net)
    details = {"allocation_pools": P.as_dicts(version, ranges),
               "dns_nameservers": list(data.get("dns_nameservers") or []),
               "host_routes": [{"destination": r["destination"], "nexthop": r["nexthop"]}
                               for r in data.get("host_routes") or []],
               "service_types": sorted(data.get("service_types") or [])}
    return view(SimpleNamespace(**row, router_external=network.router_external), details, [])


def _write_pools(conn: Connection, subnet_id: str, version: int, ranges: list[P.Range]) -> None:
    if ranges:
        conn.execute(AP.insert(), [{"subnet_id": subnet_id, "first_ip": P.to_text(version, a),
                                    "last_ip": P.to_text(version, b)} for a, b in ranges])


def _write_dns(conn: Connection, subnet_id: str, servers: list[str]) -> None:
    if servers:
        conn.execute(DNS.insert(), [{"subnet_id": subnet_id, "address": a, "position": i}
                                    for i, a in enumerate(servers)])


def _write_routes(conn: Connection, subnet_id: str, routes: list[dict[str, str]]) -> None:
    unique = {(r["destination"], r["nexthop"]) for r in routes}
    if unique:
        conn.execute(HR.insert(), [{"subnet_id": subnet_id, "destination": d, "nexthop": h}
                                   for d, h in sorted(unique)])


def _write_service_types(conn: Connection, subnet_id: str, service_types: list[str]) -> None:
    if service_types:
        conn.execute(ST.insert(), [{"subnet_id": subnet_id, "service_type": t}
                                   for t in sorted(set(service_types))])


def _address_existing_ports(conn: Connection, subnet_id: str, network_id: str,
                            net: ipaddress.IPv6Network) -> None:
    """A new SLAAC subnet gives every non-router port of the network its address."""
    p = models.ports
    rows = conn.execute(select(p.c.id, p.c.mac_address).where(
        p.c.network_id == network_id,
        p.c.device_owner.not_in(allocator.ROUTER_OWNERS)))
    allocations = [{"subnet_id": subnet_id, "ip_address": eui64(net, mac), "port_id": pid,
                    "network_id": network_id} for pid, mac in rows]
    if allocations:
        conn.execute(IA.insert(), allocations)


def update(conn: Connection, ctx: Context, subnet_id: str, data: dict[str, Any],
           if_revision: int | None, settings: Any) -> None:
    row = get_row(conn, ctx, subnet_id)
    if "segment_id" in data:
        segment_subnets.check_change(conn, row, data["segment_id"], routed_networks(settings))
    net = ipaddress.ip_network(row.cidr)
    gateway = data.get("gateway_ip", row.gateway_ip)
    if "gateway_ip" in data:
        if gateway is not None:
            _check_gateway(net, gateway)
        if gateway != row.gateway_ip and row.gateway_ip is not None:
            _check_gateway_free(conn, subnet_id, row.gateway_ip)
    _check_lists(data, row.ip_version, subnet_id, settings.max_dns_nameservers,
                 settings.max_subnet_host_routes)
    if data.get("enable_dhcp") is False and (row.ipv6_ra_mode or row.ipv6_address_mode):
        raise _invalid("Cannot disable enable_dhcp with ipv6 attributes set")
    if data.get("allocation_pools") is not None:
        ranges = P.parse_pools(net, data["allocation_pools"], gateway)
        conn.execute(delete(AP).where(AP.c.subnet_id == subnet_id))
        _write_pools(conn, subnet_id, row.ip_version, ranges)
    elif gateway is not None and gateway != row.gateway_ip:
        current = [(int(ipaddress.ip_address(a)), int(ipaddress.ip_address(b)))
                   for a, b in conn.execute(select(AP.c.first_ip, AP.c.last_ip).where(
                       AP.c.subnet_id == subnet_id))]
        P.check_gateway(row.ip_version, current, gateway)
    if "dns_nameservers" in data:
        conn.execute(delete(DNS).where(DNS.c.subnet_id == subnet_id))
        _write_dns(conn, subnet_id, data["dns_nameservers"])
    if "host_routes" in data:
        conn.execute(delete(HR).where(HR.c.subnet_id == subnet_id))
        _write_routes(conn, subnet_id, data["host_routes"])
    if "service_types" in data:
        conn.execute(delete(ST).where(ST.c.subnet_id == subnet_id))
        _write_service_types(conn, subnet_id, data["service_types"])
    values: dict[str, Any] = {k: data[k] for k in ("name", "description", "enable_dhcp",
                                                   "gateway_ip", "segment_id")
              if k in data}
    bump(conn, S, subnet_id, if_revision, values)
    if data.get("segment_id") is not None and data["segment_id"] != row.segment_id:
        for peer in segment_subnets.update_peer_routes(conn, row.network_id):
            if peer != subnet_id:
                bump(conn, S, peer)


def _check_gateway_free(conn: Connection, subnet_id: str, gateway: str) -> None:
    """A gateway a router holds may not move away under it."""
    p = models.ports
    holder = conn.execute(select(IA.c.port_id).join(p, p.c.id == IA.c.port_id).where(
        IA.c.subnet_id == subnet_id, IA.c.ip_address == gateway,
        p.c.device_owner.in_((*allocator.ROUTER_OWNERS, "network:router_gateway")))).first()
    if holder is not None:
        raise exc.GatewayIpInUse(ip_address=gateway, port_id=holder.port_id)


def delete_(conn: Connection, ctx: Context, subnet_id: str, if_revision: int | None) -> None:
    row = get_row(conn, ctx, subnet_id)
    check_revision(conn, S, row.id, if_revision)
    p = models.ports
    auto = allocator.is_auto_address(row.ipv6_ra_mode, row.ipv6_address_mode)
    users = select(IA.c.port_id).join(p, p.c.id == IA.c.port_id).where(
        IA.c.subnet_id == subnet_id, p.c.device_owner.not_in(port_definition.AUTO_DELETE_OWNERS))
    if auto:
        users = users.where(p.c.device_owner.in_(allocator.ROUTER_OWNERS))
    if conn.execute(users.limit(1)).first() is not None:
        raise exc.SubnetInUse(subnet_id=subnet_id, reason="One or more ports have an IP "
                              "allocation from this subnet")
    conn.execute(delete(IA).where(IA.c.subnet_id == subnet_id))
    conn.execute(delete(models.tags).where(models.tags.c.resource_id == subnet_id))
    conn.execute(delete(S).where(S.c.id == subnet_id))
    bump(conn, models.networks, row.network_id)
    if row.segment_id is not None:
        for peer in segment_subnets.update_peer_routes(conn, row.network_id, gone=row):
            bump(conn, S, peer)
