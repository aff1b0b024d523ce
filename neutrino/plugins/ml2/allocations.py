"""Segmentation id allocation, shared by the vlan, tunnel and flat type drivers.

Safe with many workers and servers: taking an id is a compare-and-set
``UPDATE ... WHERE allocated = false`` (only one transaction can win it), and
a new row for an id outside the ranges is protected by the primary key.

With the network segment ranges' plugin loaded, the free rows follow every
range (default and not), and a network takes a free id within its project's
pools (``SegmentPools``): the candidates of each pool in one statement, so an
allocation costs one statement more (the read of the pools), not one per pool.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from sqlalchemy import Select, and_, delete, literal_column, not_, or_, select, union_all, update
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.db import models
from neutrino.db.util import chunked
from neutrino.plugins.hooks import IdRange

A = models.segment_allocations
Range = tuple[int, int]
NO_PHYSNET = models.NO_PHYSNET  # tunnels have no physical network
#: free rows read per pool; concurrent callers pick among them at random
CANDIDATES = 32


def _key(network_type: str, physnet: str, seg_id: int):
    return and_(A.c.network_type == network_type, A.c.physical_network == physnet,
                A.c.segmentation_id == seg_id)


def _in_ranges(ranges: Sequence[Range]):
    return or_(*[A.c.segmentation_id.between(a, b) for a, b in ranges])


def physnet_key(physnet: str | None) -> str:
    """The allocation rows' physical network of a segment's (None: a tunnel's)."""
    return NO_PHYSNET if physnet is None else physnet


def by_physnet(ranges: Sequence[IdRange]) -> dict[str, list[Range]]:
    found: dict[str, list[Range]] = {}
    for physnet, first, last in ranges:
        found.setdefault(physnet_key(physnet), []).append((first, last))
    return found


def _clipped(span: Range, within: list[Range] | None) -> list[Range]:
    if within is None:
        return [span]
    return [(max(span[0], a), min(span[1], b)) for a, b in within
            if max(span[0], a) <= min(span[1], b)]


def sync(conn: Connection, network_type: str, ranges: dict[str, list[Range]],
         within: dict[str, list[Range]] | None = None) -> None:
    """Free ids follow ``ranges`` (physnet -> ranges); allocated ids are never lost.
    ``within``: only ids there (what a change of the ranges touched) are looked at."""
    stale = and_(A.c.network_type == network_type, not_(A.c.allocated))
    keep = [and_(A.c.physical_network == p, _in_ranges(r)) for p, r in ranges.items() if r]
    if keep:
        stale = and_(stale, not_(or_(*keep)))
    if within is not None:
        spans = [and_(A.c.physical_network == p, _in_ranges(r)) for p, r in within.items() if r]
        if not spans:
            return
        stale = and_(stale, or_(*spans))
    conn.execute(delete(A).where(stale))
    for physnet, physnet_ranges in ranges.items():
        for whole in physnet_ranges:
            for first, last in _clipped(whole, None if within is None
                                        else within.get(physnet, [])):
                _fill(conn, network_type, physnet, first, last)


def _fill(conn: Connection, network_type: str, physnet: str, first: int, last: int) -> None:
    """A row for each id from first to last that has none."""
    present = set(conn.execute(select(A.c.segmentation_id).where(
        A.c.network_type == network_type, A.c.physical_network == physnet,
        A.c.segmentation_id.between(first, last))).scalars())
    missing = [i for i in range(first, last + 1) if i not in present]
    for chunk in chunked(missing, 5000):
        conn.execute(A.insert(), [
            {"network_type": network_type, "physical_network": physnet,
             "segmentation_id": i, "allocated": False} for i in chunk])


def allocate_free(conn: Connection, network_type: str, physnets: Sequence[str] | None = None,
                  pools: Sequence[Sequence[IdRange]] | None = None
                  ) -> tuple[str, int] | None:
    """Take a free id (of any of ``physnets``), or None when there is none.
    ``pools``: only ids within them, of the first pool that has one free."""
    stmt = select(A.c.physical_network, A.c.segmentation_id).where(
        A.c.network_type == network_type, not_(A.c.allocated))
    if physnets is not None:
        stmt = stmt.where(A.c.physical_network.in_(physnets))
    groups: list[list[tuple[str, int]]]
    if pools is None:
        groups = [[(row[0], row[1]) for row in conn.execute(stmt.order_by(
            A.c.physical_network, A.c.segmentation_id).limit(CANDIDATES))]]
    else:
        groups = _pool_candidates(conn, stmt, [pool for pool in pools if pool])
    candidates = next((group for group in groups if group), None)
    if candidates is None:
        return None
    random.shuffle(candidates)  # concurrent callers rarely pick the same one
    for physnet, seg_id in candidates:
        taken = conn.execute(update(A).where(_key(network_type, physnet, seg_id),
                                             not_(A.c.allocated)).values(allocated=True))
        if taken.rowcount == 1:
            return physnet, seg_id
    raise exc.RetryRequest()  # every candidate went to someone else meanwhile


def _within(pool: Sequence[IdRange]):
    return or_(*[and_(A.c.physical_network == physnet_key(physnet),
                      A.c.segmentation_id.between(first, last))
                 for physnet, first, last in pool])


def _pool_candidates(conn: Connection, stmt: Select, pools: list[Sequence[IdRange]]
                     ) -> list[list[tuple[str, int]]]:
    """Free rows of each pool (``CANDIDATES`` at most), read in one statement."""
    if not pools:
        return []
    parts = [stmt.where(_within(pool)).order_by(A.c.physical_network, A.c.segmentation_id)
             .limit(CANDIDATES) for pool in pools]
    if len(parts) == 1:
        return [[(row[0], row[1]) for row in conn.execute(parts[0])]]
    ranked = [select(part.c.physical_network, part.c.segmentation_id,
                     literal_column(str(rank)).label("pool"))
              for rank, part in enumerate(p.subquery() for p in parts)]
    groups: list[list[tuple[str, int]]] = [[] for _ in pools]
    for physnet, seg_id, rank in conn.execute(union_all(*ranked)):
        groups[int(rank)].append((physnet, seg_id))
    return groups


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
            ranges: Sequence[Range] | None) -> None:
    """Free the id, or forget it when it lies outside the configured ranges
    (``None``: keep it free whatever they say, as the network segment ranges,
    which decide what may be taken, want)."""
    if ranges is None or any(a <= seg_id <= b for a, b in ranges):
        conn.execute(update(A).where(_key(network_type, physnet, seg_id))
                     .values(allocated=False))
    else:
        conn.execute(delete(A).where(_key(network_type, physnet, seg_id)))
