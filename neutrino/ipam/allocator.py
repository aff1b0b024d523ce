"""Choosing fixed IPs for a port inside the port's transaction.

Uniqueness is the ``ip_allocations`` primary key (subnet, address): two
transactions that pick the same address cannot both commit, and the loser is
retried from the start by ``Database.write``. Addresses are chosen at random
within the pools, so concurrent creates rarely collide.
"""

from __future__ import annotations

import functools
import ipaddress
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.addresses import eui64
from neutrino.db import models
from neutrino.db.prepared import Prepared
from neutrino.ipam import pools as P

AUTO_ADDRESS_MODES = ("slaac", "dhcpv6-stateless")
ROUTER_OWNERS = ("network:router_interface", "network:router_interface_distributed",
                 "network:ha_router_replicated_interface", "network:router_centralized_snat")
# Owners that may hold an IPv6 subnet's own (subnet-router anycast) address; ''
# is there because Neutron cannot tell whose port an ownerless one is.
ANYCAST_OWNERS = (*ROUTER_OWNERS, "network:router_gateway", "")
SCAN_LIMIT = 4096  # pools up to this size are scanned; larger ones are sampled


class InvalidIpForSubnet(exc.BadRequest):
    message = "IP address %(ip_address)s is not a valid IP for the specified subnet."


class AllocationOnAutoAddressSubnet(exc.InvalidInput):
    message = ("IPv6 address %(ip)s cannot be directly assigned to a port on subnet "
               "%(subnet_id)s as the subnet is configured for automatic addresses")


class InvalidIpForNetwork(exc.BadRequest):
    message = ("IP address %(ip_address)s is not a valid IP for any of the subnets on the "
               "specified network.")


@dataclass
class SubnetInfo:
    id: str
    network_id: str
    ip_version: int
    net: P.IPNetwork
    gateway_ip: str | None
    ipv6_address_mode: str | None
    ranges: list[P.Range]
    ipv6_ra_mode: str | None = None
    segment_id: str | None = None  # routed networks: the segment whose hosts reach it
    #: subnet-service-types: the device owners it is for (empty: for any)
    service_types: set[str] = field(default_factory=set)

    @property
    def auto_address(self) -> bool:
        return self.ip_version == 6 and is_auto_address(self.ipv6_ra_mode,
                                                        self.ipv6_address_mode)


def is_auto_address(ra_mode: str | None, address_mode: str | None) -> bool:
    """SLAAC or DHCPv6-stateless by either mode: addresses come from the MAC."""
    return address_mode in AUTO_ADDRESS_MODES or ra_mode in AUTO_ADDRESS_MODES


def valid_on_subnet(net: P.IPNetwork, address: str, device_owner: str) -> bool:
    """Whether a port may hold ``address`` on ``net`` (Neutron's check_subnet_ip)."""
    ip = ipaddress.ip_address(address)
    if ip.version != net.version or ip not in net:
        return False
    if net.version == 4:
        return ip != net.network_address and (net.prefixlen >= 31
                                              or ip != net.broadcast_address)
    return ip != net.network_address or device_owner in ANYCAST_OWNERS


def load_subnets(conn: Connection, network_id: str) -> list[SubnetInfo]:
    """The network's subnets with their pools, in creation order (one statement)."""
    subnets: dict[str, SubnetInfo] = {}
    for r in _SUBNETS_AND_POOLS.rows(conn, {"network_id": network_id}):
        subnet = subnets.get(r.id)
        if subnet is None:
            subnet = subnets[r.id] = SubnetInfo(
                r.id, r.network_id, r.ip_version, ipaddress.ip_network(r.cidr), r.gateway_ip,
                r.ipv6_address_mode, [], r.ipv6_ra_mode, r.segment_id)
        if r.first_ip is not None:
            subnet.ranges.append((int(ipaddress.ip_address(r.first_ip)),
                                  int(ipaddress.ip_address(r.last_ip))))
        if r.service_type is not None:
            subnet.service_types.add(r.service_type)
    for subnet in subnets.values():
        subnet.ranges = sorted(set(subnet.ranges))
    return list(subnets.values())


_s, _ap, _ia = models.subnets, models.allocation_pools, models.ip_allocations
_st = models.subnet_service_types
_SUBNETS_AND_POOLS = Prepared(
    select(_s.c.id, _s.c.network_id, _s.c.ip_version, _s.c.cidr, _s.c.gateway_ip,
           _s.c.ipv6_address_mode, _s.c.ipv6_ra_mode, _s.c.segment_id, _ap.c.first_ip,
           _ap.c.last_ip, _st.c.service_type)
    .outerjoin(_ap, _ap.c.subnet_id == _s.c.id)
    .outerjoin(_st, _st.c.subnet_id == _s.c.id)
    .where(_s.c.network_id == bindparam("network_id"))
    .order_by(_s.c.created_at, _s.c.id))
_USED_SELECT = select(_ia.c.ip_address).where(_ia.c.subnet_id == bindparam("subnet_id"))
_USED = Prepared(_USED_SELECT)


@functools.lru_cache(maxsize=64)
def _in_use_stmt(count: int) -> Prepared:
    """``ip_address IN (:a0, ..., :aN)``: one statement per list length."""
    return Prepared(_USED_SELECT.where(
        _ia.c.ip_address.in_([bindparam(f"a{i}") for i in range(count)])))


def allocate(conn: Connection, network_id: str, subnets: Sequence[SubnetInfo],
             requested: list[dict[str, Any]] | None, mac: str, device_owner: str,
             max_ips: int, keep: Iterable[tuple[str, str]] = ()) -> list[dict[str, str]]:
    """Fixed IPs for a port: what was asked for, or Neutron's defaults.

    With nothing asked: one IPv4 address, one stateful IPv6 address. In every
    case a port that is not a router's also gets its address on every
    auto-address (SLAAC) subnet. ``keep`` lists (subnet, address) pairs the
    port already holds, which are not re-checked.
    """
    subnets = for_owner(network_id, subnets, device_owner)
    by_id = {s.id: s for s in subnets}
    is_router = device_owner in ROUTER_OWNERS
    kept = set(keep)
    chosen: list[dict[str, str]] = []
    taken_here: set[tuple[str, str]] = set()

    def take(subnet: SubnetInfo, address: str | None) -> None:
        if address is None:
            address = _pick(conn, subnet, taken_here)
        elif (subnet.id, address) not in kept:
            _check_specific(conn, subnet, address, device_owner, taken_here)
        taken_here.add((subnet.id, address))
        chosen.append({"subnet_id": subnet.id, "ip_address": address})

    if requested is None:
        for version_match in (
                lambda s: s.ip_version == 4,
                lambda s: s.ip_version == 6 and not s.auto_address):
            candidates = [s for s in subnets if version_match(s)]
            if candidates:
                _take_first_with_room(candidates, take)
        requested = []
    if requested and not subnets:
        raise exc.InvalidInput(error_message="IP allocation requires subnets for network")
    if len(requested) > max_ips:
        raise exc.InvalidInput(error_message="Exceeded maximum amount of fixed ips per port.")
    # Named addresses first, as Neutron: an entry asking for any address of a
    # subnet must not pick one that a later entry names.
    if len(requested) > 1:
        requested = sorted(requested, key=lambda item: item.get("ip_address") is None)
    subnet: SubnetInfo | None
    for item in requested:
        subnet_id, address = item.get("subnet_id"), item.get("ip_address")
        if address is not None:
            address = str(ipaddress.ip_address(address))
        if subnet_id is None:
            if address is None:
                raise exc.InvalidInput(error_message="IP allocation requires subnet_id or "
                                                     "ip_address")
            subnet = _subnet_for_address(subnets, address, device_owner)
        else:
            subnet = by_id.get(subnet_id)
            if subnet is None:
                _check_subnet_exists(conn, subnet_id)
                raise exc.InvalidInput(error_message=(
                    f"Failed to create port on network {network_id}, because fixed_ips "
                    f"included invalid subnet {subnet_id}"))
        if subnet.auto_address and not is_router and isinstance(subnet.net, ipaddress.IPv6Network):
            eui = eui64(subnet.net, mac)
            if address is not None and address != eui and (subnet.id, address) not in kept:
                raise AllocationOnAutoAddressSubnet(ip=address, subnet_id=subnet.id)
            address = eui
        if (subnet.id, address) in taken_here:
            continue
        take(subnet, address)
    if not is_router:
        mentioned = {c["subnet_id"] for c in chosen}
        for subnet in subnets:
            if (subnet.auto_address and subnet.id not in mentioned
                    and isinstance(subnet.net, ipaddress.IPv6Network)):
                take(subnet, eui64(subnet.net, mac))
    return chosen


class IpAddressGenerationFailureNoMatchingSubnet(exc.Conflict):
    message = ("No valid service subnet for the given device owner, network %(network_id)s, "
               "service type %(service_type)s.")


def for_owner(network_id: str, subnets: Sequence[SubnetInfo], device_owner: str
              ) -> list[SubnetInfo]:
    """The subnets whose addresses a port of ``device_owner`` may take
    (subnet-service-types): those for its owner first, then those for anyone."""
    if not any(subnet.service_types for subnet in subnets):
        return list(subnets)
    mine = [s for s in subnets if device_owner and device_owner in s.service_types]
    anyone = [s for s in subnets if not s.service_types]
    if not mine and not anyone:
        raise IpAddressGenerationFailureNoMatchingSubnet(network_id=network_id,
                                                         service_type=device_owner)
    return mine + anyone


def _check_subnet_exists(conn: Connection, subnet_id: str) -> None:
    s = models.subnets
    if conn.execute(select(s.c.id).where(s.c.id == subnet_id)).first() is None:
        raise exc.SubnetNotFound(subnet_id=subnet_id)


def _take_first_with_room(candidates: list[SubnetInfo], take) -> None:
    for subnet in candidates:
        try:
            take(subnet, None)
            return
        except exc.IpAddressGenerationFailure:
            continue
    raise exc.IpAddressGenerationFailure(net_id=candidates[0].network_id)


def _subnet_for_address(subnets: Sequence[SubnetInfo], address: str,
                        device_owner: str) -> SubnetInfo:
    for subnet in subnets:
        if valid_on_subnet(subnet.net, address, device_owner):
            return subnet
    raise InvalidIpForNetwork(ip_address=address)


def _check_specific(conn: Connection, subnet: SubnetInfo, address: str, device_owner: str,
                    taken_here: set[tuple[str, str]]) -> None:
    if not valid_on_subnet(subnet.net, address, device_owner):
        raise InvalidIpForSubnet(ip_address=address)
    if (subnet.id, address) in taken_here or _in_use(conn, subnet.id, [address]):
        raise exc.IpAddressAlreadyAllocated(ip=address, subnet_id=subnet.id)


def _in_use(conn: Connection, subnet_id: str, addresses: list[str]) -> set[str]:
    if not addresses:
        return set()
    params = {f"a{i}": address for i, address in enumerate(addresses)}
    return set(_in_use_stmt(len(addresses)).scalars(conn, {"subnet_id": subnet_id, **params}))


def _pick(conn: Connection, subnet: SubnetInfo, taken_here: set[tuple[str, str]]) -> str:
    total = P.size(subnet.ranges)
    version = subnet.ip_version
    if total > SCAN_LIMIT:
        for _ in range(4):
            candidates = {P.to_text(version, _nth(subnet.ranges, random.randrange(total)))
                          for _ in range(16)}
            candidates -= {a for s, a in taken_here if s == subnet.id}
            free = candidates - _in_use(conn, subnet.id, list(candidates))
            if free:
                return random.choice(sorted(free))
    used = {int(ipaddress.ip_address(a)) for a in _USED.scalars(conn, {"subnet_id": subnet.id})}
    used |= {int(ipaddress.ip_address(a)) for s, a in taken_here if s == subnet.id}
    spare: list[int] = []
    for first, last in subnet.ranges:
        for value in range(first, last + 1):
            if value not in used:
                spare.append(value)
                if len(spare) >= 1024:
                    break
        if len(spare) >= 1024:
            break
    if not spare:
        raise exc.IpAddressGenerationFailure(
            f"No more IP addresses available for subnet {subnet.id}.")
    return P.to_text(version, random.choice(spare))


def _nth(ranges: Sequence[P.Range], index: int) -> int:
    for first, last in ranges:
        count = last - first + 1
        if index < count:
            return first + index
        index -= count
    raise IndexError(index)
