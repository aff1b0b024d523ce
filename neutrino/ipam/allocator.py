"""Choosing fixed IPs for a port inside the port's transaction.

Uniqueness is the ``ip_allocations`` primary key (subnet, address): two
transactions that pick the same address cannot both commit, and the loser is
retried from the start by ``Database.write``. Addresses are chosen at random
within the pools, so concurrent creates rarely collide.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.db import models
from neutrino.ipam import pools as P

AUTO_ADDRESS_MODES = ("slaac", "dhcpv6-stateless")
ROUTER_OWNERS = ("network:router_interface", "network:router_interface_distributed",
                 "network:ha_router_replicated_interface", "network:router_centralized_snat")
SCAN_LIMIT = 4096  # pools up to this size are scanned; larger ones are sampled


class InvalidIpForSubnet(exc.BadRequest):
    message = "IP address %(ip_address)s is not a valid IP for the specified subnet."


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

    @property
    def auto_address(self) -> bool:
        return self.ip_version == 6 and self.ipv6_address_mode in AUTO_ADDRESS_MODES


def load_subnets(conn: Connection, network_id: str) -> list[SubnetInfo]:
    s, ap = models.subnets, models.allocation_pools
    rows = list(conn.execute(select(s.c.id, s.c.network_id, s.c.ip_version, s.c.cidr,
                                    s.c.gateway_ip, s.c.ipv6_address_mode)
                             .where(s.c.network_id == network_id)
                             .order_by(s.c.created_at, s.c.id)))
    if not rows:
        return []
    ranges: dict[str, list[P.Range]] = {}
    for subnet_id, first, last in conn.execute(
            select(ap.c.subnet_id, ap.c.first_ip, ap.c.last_ip)
            .where(ap.c.subnet_id.in_([r.id for r in rows]))):
        ranges.setdefault(subnet_id, []).append(
            (int(ipaddress.ip_address(first)), int(ipaddress.ip_address(last))))
    return [SubnetInfo(r.id, r.network_id, r.ip_version, ipaddress.ip_network(r.cidr),
                       r.gateway_ip, r.ipv6_address_mode, sorted(ranges.get(r.id, [])))
            for r in rows]


def allocate(conn: Connection, network_id: str, subnets: Sequence[SubnetInfo],
             requested: list[dict[str, Any]] | None, mac: str, device_owner: str,
             max_ips: int, keep: Iterable[tuple[str, str]] = ()) -> list[dict[str, str]]:
    """Fixed IPs for a port: what was asked for, or Neutron's defaults.

    With nothing asked: one IPv4 address, one stateful IPv6 address and an
    address on every auto-address (SLAAC) subnet. ``keep`` lists (subnet,
    address) pairs the port already holds, which are not re-checked.
    """
    by_id = {s.id: s for s in subnets}
    is_router = device_owner in ROUTER_OWNERS
    kept = set(keep)
    chosen: list[dict[str, str]] = []
    taken_here: set[tuple[str, str]] = set()

    def take(subnet: SubnetInfo, address: str | None) -> None:
        if address is None:
            address = _pick(conn, subnet, taken_here)
        elif (subnet.id, address) not in kept:
            _check_specific(conn, subnet, address, is_router, taken_here)
        taken_here.add((subnet.id, address))
        chosen.append({"subnet_id": subnet.id, "ip_address": address})

    if requested is None:
        for version_match in (
                lambda s: s.ip_version == 4,
                lambda s: s.ip_version == 6 and not s.auto_address):
            candidates = [s for s in subnets if version_match(s)]
            if candidates:
                _take_first_with_room(candidates, take)
        if not is_router:
            for subnet in subnets:
                if subnet.auto_address:
                    take(subnet, P.eui64(subnet.net, mac))
        return chosen

    if not requested:
        return []  # an explicit empty list asks for a port without addresses
    if not subnets:
        raise exc.InvalidInput(error_message="IP allocation requires subnets for network")
    if len(requested) > max_ips:
        raise exc.InvalidInput(error_message="Exceeded maximum amount of fixed ips per port.")
    for item in requested:
        subnet_id, address = item.get("subnet_id"), item.get("ip_address")
        if address is not None:
            address = str(ipaddress.ip_address(address))
        if subnet_id is None:
            if address is None:
                raise exc.InvalidInput(error_message="IP allocation requires subnet_id or "
                                                     "ip_address")
            subnet = _subnet_for_address(subnets, address)
        else:
            subnet = by_id.get(subnet_id)
            if subnet is None:
                raise exc.InvalidInput(error_message=(
                    f"Failed to create port on network {network_id}, because fixed_ips "
                    f"included invalid subnet {subnet_id}"))
        if subnet.auto_address and not is_router:
            if address is not None and address != P.eui64(subnet.net, mac) and \
                    (subnet.id, address) not in kept:
                raise exc.InvalidInput(error_message=(
                    f"IPv6 address {address} cannot be directly assigned to a port on "
                    f"subnet {subnet.id} as the subnet is configured for automatic "
                    "addresses"))
            address = P.eui64(subnet.net, mac)
        if (subnet.id, address) in taken_here:
            continue
        take(subnet, address)
    if not is_router:
        mentioned = {c["subnet_id"] for c in chosen}
        for subnet in subnets:
            if subnet.auto_address and subnet.id not in mentioned:
                take(subnet, P.eui64(subnet.net, mac))
    return chosen


def _take_first_with_room(candidates: list[SubnetInfo], take) -> None:
    for subnet in candidates:
        try:
            take(subnet, None)
            return
        except exc.IpAddressGenerationFailure:
            continue
    raise exc.IpAddressGenerationFailure(net_id=candidates[0].network_id)


def _subnet_for_address(subnets: Sequence[SubnetInfo], address: str) -> SubnetInfo:
    ip = ipaddress.ip_address(address)
    for subnet in subnets:
        if ip.version == subnet.ip_version and ip in subnet.net:
            return subnet
    raise InvalidIpForNetwork(ip_address=address)


def _check_specific(conn: Connection, subnet: SubnetInfo, address: str, is_router: bool,
                    taken_here: set[tuple[str, str]]) -> None:
    ip = ipaddress.ip_address(address)
    if ip.version != subnet.ip_version or ip not in subnet.net:
        raise InvalidIpForSubnet(ip_address=address)
    net = subnet.net
    if net.version == 4 and net.prefixlen < 31 and ip in (net.network_address,
                                                          net.broadcast_address):
        raise InvalidIpForSubnet(ip_address=address)
    if net.version == 6 and ip == net.network_address and not is_router:
        raise InvalidIpForSubnet(ip_address=address)
    if (subnet.id, address) in taken_here or _in_use(conn, subnet.id, [address]):
        raise exc.IpAddressAlreadyAllocated(ip=address, subnet_id=subnet.id)


def _in_use(conn: Connection, subnet_id: str, addresses: list[str]) -> set[str]:
    ia = models.ip_allocations
    return set(conn.execute(select(ia.c.ip_address).where(
        ia.c.subnet_id == subnet_id, ia.c.ip_address.in_(addresses))).scalars())


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
    ia = models.ip_allocations
    used = {int(ipaddress.ip_address(a)) for a in conn.execute(
        select(ia.c.ip_address).where(ia.c.subnet_id == subnet.id)).scalars()}
    used |= {int(ipaddress.ip_address(a)) for s, a in taken_here if s == subnet.id}
    free = []
    for first, last in subnet.ranges:
        for value in range(first, last + 1):
            if value not in used:
                free.append(value)
                if len(free) >= 1024:
                    break
        if len(free) >= 1024:
            break
    if not free:
        raise exc.IpAddressGenerationFailure(
            f"No more IP addresses available for subnet {subnet.id}.")
    return P.to_text(version, random.choice(free))


def _nth(ranges: Sequence[P.Range], index: int) -> int:
    for first, last in ranges:
        count = last - first + 1
        if index < count:
            return first + index
        index -= count
    raise IndexError(index)
