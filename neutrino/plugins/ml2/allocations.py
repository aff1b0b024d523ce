"""Segmentation id allocation, shared by the vlan, tunnel and flat type drivers.

Safe with many workers and servers: taking an id is a compare-and-set
``UPDATE ... WHERE allocated = false`` (only one transaction can win it), and
a new row for an id outside the ranges is protected by the primary key.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from sqlalchemy import and_, delete, not_, or_, select, update
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.db import models
from neutrino.db.util import chunked

A = models.segment_allocations
Range = tuple[int, int]
NO_PHYSNET = ""  # tunnels have no physical network; the key column cannot be NULL


def _key(network_type: str, physnet: str, seg_id: int):
    return and_(A.c.network_type == network_type, A.c.physical_network == physnet,
                A.c.segmentation_id == seg_id)


def _in_ranges(ranges: Sequence[Range]):
    return or_(*[A.c.segmentation_id.between(a, b) for a, b in ranges])


def sync(conn: Connection, network_type: str, ranges: dict[str, list[Range]]) -> None:
    """Free ids follow ``ranges`` (physnet -> ranges); allocated ids are never lost."""
    stale = and_(A.c.network_type == network_type, not_(A.c.allocated))
    keep = [and_(A.c.physical_network == p, _in_ranges(r)) for p, r in ranges.items() if r]
    if keep:
        stale = and_(stale, not_(or_(*keep)))
    conn.execute(delete(A).where(stale))
    for physnet, physnet_ranges in ranges.items():
        for first, last in physnet_ranges:
            present = set(conn.execute(select(A.c.segmentation_id).where(
                A.c.network_type == network_type, A.c.physical_network == physnet,
                A.c.segmentation_id.between(first, last))).scalars())
            missing = [i for i in range(first, last + 1) if i not in present]
            for chunk in chunked(missing, 5000):
                conn.execute(A.insert(), [
                    {"network_type": network_type, "physical_network": physnet,
                     "segmentation_id": i, "allocated": False} for i in chunk])


def allocate_free(conn: Connection, network_type: str, physnets: Sequence[str] | None = None
                  ) -> tuple[str, int] | None:
    """Take a free id (of any of ``physnets``), or None when there is none."""
    stmt = select(A.c.physical_network, A.c.segmentation_id).where(
        A.c.network_type == network_type, not_(A.c.allocated))
    if physnets is not None:
        stmt = stmt.where(A.c.physical_network.in_(physnets))
    candidates = list(conn.execute(stmt.order_by(A.c.physical_network,
                                                 A.c.segmentation_id).limit(32)))
    if not candidates:
        return None
    random.shuffle(candidates)  # concurrent callers rarely pick the same one
    for physnet, seg_id in candidates:
        taken = conn.execute(update(A).where(_key(network_type, physnet, seg_id),
                                             not_(A.c.allocated)).values(allocated=True))
        if taken.rowcount == 1:
            return physnet, seg_id
    raise exc.RetryRequest()  # every candidate went to someone else meanwhile


def reserve(conn: Connection, network_type: str, physnet: str, seg_id: int) -> bool:
    """Take this id; False when it is already taken."""
    taken = conn.execute(update(A).where(_key(network_type, physnet, seg_id),
                                         not_(A.c.allocated)).values(allocated=True))
    if taken.rowcount == 1:
        return True
    if conn.execute(select(A.c.allocated).where(_key(network_type, physnet, seg_id))).first():
        return False
    conn.execute(A.insert().values(network_type=network_type, physical_network=physnet,
                                   segmentation_id=seg_id, allocated=True))
    return True


def release(conn: Connection, network_type: str, physnet: str, seg_id: int,
            ranges: Sequence[Range]) -> None:
    """Free the id, or forget it when it lies outside the configured ranges."""
    if any(a <= seg_id <= b for a, b in ranges):
        conn.execute(update(A).where(_key(network_type, physnet, seg_id))
                     .values(allocated=False))
    else:
        conn.execute(delete(A).where(_key(network_type, physnet, seg_id)))
