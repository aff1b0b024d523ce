"""Addresses on routed networks: which subnets a port may take its addresses
from, given the host it is bound to (Neutron's segments plugin, ip_allocation).

A routed network's subnets are each on a segment, and a segment is reached by
some hosts only (``segment_host_mappings``). A port gets its address once its
host is known: created without one (and without fixed IPs) its allocation is
``deferred``, and its first binding to a host takes an address from a subnet
of a segment of that host. A port created with ``fixed_ips: []`` has none
(``none``); the others ``immediate``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.db import models
from neutrino.ipam.allocator import SubnetInfo

IMMEDIATE, DEFERRED, NONE = "immediate", "deferred", "none"

M = models.segment_host_mappings


class HostNotConnectedToAnySegment(exc.Conflict):
    message = ("Host %(host)s is not connected to any segments on routed provider network "
               "'%(network_id)s'.  It should be connected to one.")


class HostNotCompatibleWithFixedIps(exc.Conflict):
    message = ("Host %(host)s is not connected to a segment where the existing fixed_ips on "
               "port %(port_id)s will function given the routed network topology.")


class FixedIpsSubnetsNotOnSameSegment(exc.BadRequest):
    message = "Cannot allocate addresses from different segments."


def is_routed(subnets: Sequence[SubnetInfo]) -> bool:
    return any(subnet.segment_id for subnet in subnets)


def host_segments(conn: Connection, host: str) -> set[str]:
    return set(conn.execute(select(M.c.segment_id).where(M.c.host == host)).scalars())


def _requested_segments(subnets: Sequence[SubnetInfo], requested: list[dict[str, Any]]
                        ) -> set[str | None]:
    """The segments of the subnets ``requested`` names or whose addresses it
    names (what names nothing known is left to the allocator to refuse)."""
    found: set[str | None] = set()
    by_id = {subnet.id: subnet for subnet in subnets}
    for item in requested:
        subnet = by_id.get(item.get("subnet_id") or "")
        if subnet is None and item.get("ip_address"):
            address = ipaddress.ip_address(item["ip_address"])
            subnet = next((s for s in subnets if address in s.net), None)
        if subnet is not None:
            found.add(subnet.segment_id)
    return found


def eligible(conn: Connection, network_id: str, subnets: list[SubnetInfo],
             requested: list[dict[str, Any]] | None, host: str | None
             ) -> tuple[list[SubnetInfo], str]:
    """The subnets a new port may take addresses from, and its ``ip_allocation``.
    Without a host and fixed IPs on a routed network there are none: the
    allocation waits for the port's binding."""
    if requested is not None and not requested:
        return subnets, NONE
    if not is_routed(subnets):
        return subnets, IMMEDIATE
    if requested:
        if len(_requested_segments(subnets, requested)) > 1:
            raise FixedIpsSubnetsNotOnSameSegment()
        return subnets, IMMEDIATE
    if not host:
        return [], DEFERRED
    reached = host_segments(conn, host)
    on_host = [subnet for subnet in subnets if subnet.segment_id in reached]
    if not on_host:
        raise HostNotConnectedToAnySegment(host=host, network_id=network_id)
    return on_host, IMMEDIATE


def check_host(conn: Connection, port_id: str, subnets: list[SubnetInfo],
               fixed_ips: list[dict[str, Any]], host: str) -> None:
    """A port with addresses moves to a host only if that host reaches their segment."""
    segments = _requested_segments(subnets, fixed_ips) - {None}
    if segments and not segments <= host_segments(conn, host):
        raise HostNotCompatibleWithFixedIps(host=host, port_id=port_id)
