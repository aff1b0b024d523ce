"""Pure address arithmetic for subnets: default pools, pool checks (EUI-64
is ``neutrino.addresses``, which the agents share).

No database here: these functions take and return plain values so they are
tested on their own.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Sequence

from neutrino import exceptions as exc

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Range = tuple[int, int]  # first, last (inclusive) as integers


class InvalidAllocationPool(exc.BadRequest):
    message = "The allocation pool %(pool)s is not valid."


class OutOfBoundsAllocationPool(exc.BadRequest):
    message = ("The allocation pool %(pool)s spans beyond the subnet cidr "
               "%(subnet_cidr)s.")


class OverlappingAllocationPools(exc.Conflict):
    message = ("Found overlapping allocation pools: %(pool_1)s %(pool_2)s for subnet "
               "%(subnet_cidr)s.")


class GatewayConflictWithAllocationPools(exc.InUse):
    message = "Gateway ip %(ip_address)s conflicts with allocation pool %(pool)s."


def host_range(net: IPNetwork) -> Range:
    """Addresses a pool may use: v4 skips network and broadcast, v6 the anycast address."""
    first, last = int(net.network_address), int(net.broadcast_address)
    if net.version == 4:
        if net.prefixlen >= 31:
            return first, last
        return first + 1, last - 1
    if net.prefixlen == 128:
        return first, last
    return first + 1, last


def default_pools(net: IPNetwork, gateway: str | None) -> list[Range]:
    first, last = host_range(net)
    pools = [(first, last)]
    if gateway is not None:
        gw = int(ipaddress.ip_address(gateway))
        pools = subtract(pools, gw)
    return [p for p in pools if p[0] <= p[1]]


def subtract(pools: Iterable[Range], address: int) -> list[Range]:
    result = []
    for first, last in pools:
        if first <= address <= last:
            if first <= address - 1:
                result.append((first, address - 1))
            if address + 1 <= last:
                result.append((address + 1, last))
        else:
            result.append((first, last))
    return result


def to_text(version: int, value: int) -> str:
    """An address's usual text; IPv4's made by the C library (several times faster
    than ``ipaddress``, and allocation makes sixteen per port)."""
    if version == 4:
        return socket.inet_ntoa(value.to_bytes(4, "big"))
    return str(ipaddress.IPv6Address(value))


def as_dicts(version: int, pools: Sequence[Range]) -> list[dict[str, str]]:
    return [{"start": to_text(version, a), "end": to_text(version, b)} for a, b in pools]


def parse_pools(net: IPNetwork, pools: Sequence[dict[str, str]], gateway: str | None
                ) -> list[Range]:
    """Validate requested pools against the subnet and the gateway; return ranges.

    Pools must lie within the addresses ``host_range`` allows, must not
    overlap one another, and must not hold the gateway.
    """
    low, high = host_range(net)
    ranges = []
    for pool in pools:
        start, end = ipaddress.ip_address(pool["start"]), ipaddress.ip_address(pool["end"])
        if start.version != end.version or int(start) > int(end):
            raise InvalidAllocationPool(pool=repr(dict(pool)))
        text = f"{start}-{end}"
        if start.version != net.version:
            raise InvalidAllocationPool(pool=text)
        if int(start) < low or int(end) > high:
            raise OutOfBoundsAllocationPool(pool=text, subnet_cidr=str(net))
        ranges.append((int(start), int(end)))
    for i, (a1, b1) in enumerate(ranges):
        for a2, b2 in ranges[i + 1:]:
            if a1 <= b2 and a2 <= b1:
                raise OverlappingAllocationPools(
                    pool_1=f"{to_text(net.version, a1)}-{to_text(net.version, b1)}",
                    pool_2=f"{to_text(net.version, a2)}-{to_text(net.version, b2)}",
                    subnet_cidr=str(net))
    if gateway is not None:
        check_gateway(net.version, ranges, gateway)
    return ranges


def check_gateway(version: int, ranges: Sequence[Range], gateway: str) -> None:
    gw = int(ipaddress.ip_address(gateway))
    for first, last in ranges:
        if first <= gw <= last:
            raise GatewayConflictWithAllocationPools(
                ip_address=gateway,
                pool=f"{to_text(version, first)}-{to_text(version, last)}")


def size(ranges: Sequence[Range]) -> int:
    return sum(last - first + 1 for first, last in ranges)
