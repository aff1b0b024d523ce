"""The ``network_ip_availability`` service plugin: addresses there are and
addresses in use, per network and subnet, read in three statements whatever
the number of networks (the networks with their subnets, the allocation
pools, the used addresses), as Neutron counts them: a subnet's total is the
size of its allocation pools (of its CIDR when it has none), its use the
addresses ports hold in it, the gateway's router port among them."""

from __future__ import annotations

import bisect
import ipaddress
import socket
from typing import Any, ClassVar

from sqlalchemy import Select, select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery
from neutrino.definitions.network_ip_availability import DETAILS_ATTR
from neutrino.plugins.base import Plugin

N, S, POOLS, IA = models.networks, models.subnets, models.allocation_pools, models.ip_allocations
WITHIN = N.join(S, S.c.network_id == N.c.id)  # a subnet with its network, to filter on
#: filter -> the column it is on
FILTERS = {"network_id": N.c.id, "network_name": N.c.name, "project_id": N.c.project_id,
           "tenant_id": N.c.project_id, "ip_version": S.c.ip_version}


class NetworkIpAvailabilityPlugin(Plugin):
    plugin_type = "network-ip-availability"
    supported_extension_aliases = ("network-ip-availability",
                                   "network-ip-availability-details")
    # as Neutron: the subnets' IP version may be filtered on, though not shown
    extra_filters: ClassVar[dict[str, tuple[str, ...]]] = {
        "network-ip-availabilities": ("ip_version",)}

    def get_network_ip_availabilities(self, ctx: Context, query: CollectionQuery
                                      ) -> list[dict[str, Any]]:
        return self._read(lambda conn: availabilities(conn, query.filters))

    def get_network_ip_availability(self, ctx: Context, network_id: str) -> dict[str, Any]:
        found = self._read(lambda conn: availabilities(conn, {"network_id": [network_id]}))
        if not found:
            raise exc.NetworkNotFound(net_id=network_id)
        return found[0]


def _where(stmt: Select, filters: dict[str, list[Any]]) -> Select:
    for name, values in filters.items():
        if name == "ip_version":  # another number than 4 or 6 matches nothing
            values = [version for version in map(_version, values) if version in (4, 6)]
        stmt = stmt.where(FILTERS[name].in_(values))
    return stmt


def _version(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise exc.InvalidInput(error_message=f"'{value}' is not a valid IP version") from None


def _as_int(address: str) -> int:
    """An address as a number (inet_pton: several times ipaddress's speed)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    return int.from_bytes(socket.inet_pton(family, address), "big")


def _pools(conn: Connection, filters: dict[str, list[Any]]
           ) -> dict[str, list[tuple[int, int]]]:
    """Each subnet's allocation pools, as sorted ranges of numbers."""
    pools: dict[str, list[tuple[int, int]]] = {}
    for subnet_id, first, last in conn.execute(_where(
            select(POOLS.c.subnet_id, POOLS.c.first_ip, POOLS.c.last_ip)
            .select_from(WITHIN.join(POOLS, POOLS.c.subnet_id == S.c.id)), filters)):
        pools.setdefault(subnet_id, []).append((_as_int(first), _as_int(last)))
    for ranges in pools.values():
        ranges.sort()
    return pools


def _used(conn: Connection, filters: dict[str, list[Any]],
          pools: dict[str, list[tuple[int, int]]]) -> tuple[dict[str, int], dict[str, int]]:
    """Per subnet, the addresses ports hold, and those of them in its pools."""
    used: dict[str, int] = {}
    in_pools: dict[str, int] = {}
    for subnet_id, address in conn.execute(_where(
            select(IA.c.subnet_id, IA.c.ip_address)
            .select_from(WITHIN.join(IA, IA.c.subnet_id == S.c.id)), filters)):
        used[subnet_id] = used.get(subnet_id, 0) + 1
        ranges = pools.get(subnet_id)
        if ranges:
            value = _as_int(address)
            at = bisect.bisect_right(ranges, (value, 1 << 129)) - 1
            if at >= 0 and ranges[at][0] <= value <= ranges[at][1]:
                in_pools[subnet_id] = in_pools.get(subnet_id, 0) + 1
    return used, in_pools


def availabilities(conn: Connection, filters: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Each network the filters select, with its subnets' counts."""
    rows = conn.execute(_where(
        select(N.c.id, N.c.name, N.c.project_id, S.c.id.label("subnet_id"),
               S.c.name.label("subnet_name"), S.c.cidr, S.c.ip_version)
        .select_from(N.outerjoin(S, S.c.network_id == N.c.id))
        .order_by(N.c.id, S.c.created_at, S.c.id), filters)).all()
    pools = _pools(conn, filters)
    used, used_in_pools = _used(conn, filters, pools)
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        network = found.get(row.id)
        if network is None:
            network = found[row.id] = {
                "network_id": row.id, "network_name": row.name,
                "project_id": row.project_id, "tenant_id": row.project_id,
                "total_ips": 0, "used_ips": 0, "subnet_ip_availability": [],
                DETAILS_ATTR: dict.fromkeys(DETAILS, 0)}
        if row.subnet_id is None:
            continue
        subnet = _subnet(row, pools.get(row.subnet_id, []), used.get(row.subnet_id, 0),
                         used_in_pools.get(row.subnet_id, 0))
        network["subnet_ip_availability"].append(subnet)
        network["total_ips"] += subnet["total_ips"]
        network["used_ips"] += subnet["used_ips"]
        for key in DETAILS:
            network[DETAILS_ATTR][key] += subnet[DETAILS_ATTR][key]
    return list(found.values())


DETAILS = ("total_ips_in_subnet", "total_ips_in_allocation_pool", "used_ips_in_subnet",
           "used_ips_in_allocation_pool")


def _subnet(row: Any, ranges: list[tuple[int, int]], used: int, used_in_pools: int
            ) -> dict[str, Any]:
    size = ipaddress.ip_network(row.cidr).num_addresses
    in_pools = sum(last - first + 1 for first, last in ranges)
    # the whole CIDR less, in IPv4, its network and broadcast addresses
    in_subnet = max(size - 2, 0) if row.ip_version == 4 else size
    return {"subnet_id": row.subnet_id, "subnet_name": row.subnet_name, "cidr": row.cidr,
            "ip_version": row.ip_version, "total_ips": in_pools if ranges else size,
            "used_ips": used,
            DETAILS_ATTR: {"total_ips_in_subnet": in_subnet,
                           "total_ips_in_allocation_pool": in_pools,
                           "used_ips_in_subnet": used,
                           "used_ips_in_allocation_pool": used_in_pools}}
