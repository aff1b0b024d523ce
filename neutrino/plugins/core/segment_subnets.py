"""Subnets on segments (routed networks, Neutron's segments plugin): which
segment a subnet may be on, and the routes between a network's segments.

A network's subnets are all on segments or none is. A subnet joins a segment
of its network when made, or later (subnet-segmentid-writable) when its
network has only one segment; it never moves. Each subnet on a segment is
given host routes, through its gateway, to the subnets of the same IP version
on the network's other segments (segments-peer-subnet-host-routes), so that
instances reach the other segments through their own router.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.db import models
from neutrino.definitions.segment import SegmentNotFound

S, SEG, HR = models.subnets, models.network_segments, models.host_routes


class NoUpdateSubnetWhenMultipleSegmentsOnNetwork(exc.BadRequest):
    message = ("The network '%(network_id)s' has multiple segments, it is only possible to "
               "associate an existing subnet with a segment on networks with a single "
               "segment.")


class SubnetsNotAllAssociatedWithSegments(exc.BadRequest):
    message = ("All of the subnets on network '%(network_id)s' must either all be "
               "associated with segments or all not associated with any segment.")


class SubnetSegmentAssociationChangeNotAllowed(exc.BadRequest):
    message = ("A subnet that is already associated with a segment cannot have its segment "
               "association changed.")


class NetworkIdsDontMatch(exc.BadRequest):
    message = ("The subnet's network id, '%(subnet_network)s', doesn't match the network_id "
               "of segment '%(segment_id)s'")


class RoutedNetworksNotEnabled(exc.InvalidInput):
    message = ("Invalid input for operation: subnets are put on segments only with the "
               "segments service plugin (service_plugins = segments).")


def check(conn: Connection, network_id: str, segment_id: str | None, enabled: bool,
          subnet_id: str | None = None) -> None:
    """Whether a subnet (``subnet_id``: one being updated) may be on ``segment_id``
    (None: on no segment) of ``network_id``. Without routed networks (not
    ``enabled``) no subnet is on a segment: nothing to read."""
    if segment_id is None and not enabled:
        return
    if segment_id is not None:
        if not enabled:
            raise RoutedNetworksNotEnabled()
        owner = conn.execute(select(SEG.c.network_id).where(SEG.c.id == segment_id)).scalar()
        if owner is None:
            raise SegmentNotFound(segment_id=segment_id)
        if owner != network_id:
            raise NetworkIdsDontMatch(subnet_network=network_id, segment_id=segment_id)
    others = set(conn.execute(select(S.c.segment_id.is_(None)).distinct().where(
        S.c.network_id == network_id, S.c.id != (subnet_id or ""))).scalars())
    if others and others != {segment_id is None}:
        raise SubnetsNotAllAssociatedWithSegments(network_id=network_id)


def check_change(conn: Connection, row: Any, segment_id: str | None, enabled: bool) -> None:
    """An existing subnet joining a segment: only from none, only to the one
    segment of its network."""
    if segment_id == row.segment_id:
        return
    if row.segment_id is not None:
        raise SubnetSegmentAssociationChangeNotAllowed()
    count = conn.execute(select(func.count()).select_from(SEG).where(
        SEG.c.network_id == row.network_id)).scalar()
    if (count or 0) > 1:
        raise NoUpdateSubnetWhenMultipleSegmentsOnNetwork(network_id=row.network_id)
    check(conn, row.network_id, segment_id, enabled, row.id)


def update_peer_routes(conn: Connection, network_id: str, gone: Any = None) -> list[str]:
    """Give each subnet on a segment its routes to the other segments' subnets
    (and take away those to ``gone``, a subnet row being deleted); the ids of
    the subnets whose routes changed."""
    rows = [r for r in conn.execute(select(
        S.c.id, S.c.cidr, S.c.gateway_ip, S.c.segment_id, S.c.ip_version).where(
        S.c.network_id == network_id)) if r.segment_id is not None]
    if not rows:
        return []
    current: dict[str, set[tuple[str, str]]] = {r.id: set() for r in rows}
    for subnet_id, destination, nexthop in conn.execute(select(
            HR.c.subnet_id, HR.c.destination, HR.c.nexthop).where(
            HR.c.subnet_id.in_(list(current)))):
        current[subnet_id].add((destination, nexthop))
    changed = []
    for row in rows:
        if not row.gateway_ip:
            continue
        wanted = {(other.cidr, row.gateway_ip) for other in rows
                  if other.ip_version == row.ip_version and other.segment_id != row.segment_id}
        stale = set()
        if gone is not None and gone.segment_id not in (None, row.segment_id):
            stale = {(gone.cidr, row.gateway_ip)} & current[row.id]
        adding = wanted - current[row.id]
        if stale:
            conn.execute(delete(HR).where(HR.c.subnet_id == row.id,
                                          HR.c.destination == gone.cidr,
                                          HR.c.nexthop == row.gateway_ip))
        if adding:
            conn.execute(HR.insert(), [{"subnet_id": row.id, "destination": d, "nexthop": h}
                                       for d, h in sorted(adding)])
        if stale or adding:
            changed.append(row.id)
    return changed
