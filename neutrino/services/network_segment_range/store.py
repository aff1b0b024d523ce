"""Network segment ranges in the database: rows and views, what each range
holds (its free ids, the networks that use its ids), the pools a project's
networks take their ids from, and the default ranges following the
configuration.

A range of a tunnel type has no physical network: NULL in the ranges and
the segments tables, ``NO_PHYSNET`` in the allocation table's key.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import and_, delete, func, or_, select
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql import ColumnElement

from neutrino.db import models, tags
from neutrino.db.query import api_columns, find_row
from neutrino.db.util import now, timestamp
from neutrino.definitions import network_segment_range as nsr
from neutrino.definitions.validators import new_uuid
from neutrino.plugins.hooks import IdRange, SegmentPools

R = models.network_segment_ranges
A = models.segment_allocations
SEG = models.network_segments
N = models.networks

COLUMNS = api_columns(R, "network_type", "physical_network", "minimum", "maximum",
                      "default", "shared")
#: (network type, physical network or None, first id, last id)
Span = tuple[str, str | None, int, int]


def span(row: Any) -> Span:
    return (row.network_type, row.physical_network, row.minimum, row.maximum)


# --- rows and views ---------------------------------------------------------------------

def row(conn: Connection, range_id: str, for_update: bool = False) -> Row:
    return find_row(conn, R, range_id, [],
                    lambda: nsr.NetworkSegmentRangeNotFound(range_id=range_id), for_update)


def rows_by_id(conn: Connection, range_ids: Sequence[str]) -> list[Row]:
    found = {r.id: r for r in conn.execute(select(R).where(R.c.id.in_(range_ids)))}
    return [found[i] for i in range_ids]


def views(conn: Connection, rows: Sequence[Row], usage: bool = True) -> list[dict[str, Any]]:
    """The ranges as the API shows them; ``usage``: with ``available`` and ``used``
    (two reads for all of them), else without."""
    ids = [r.id for r in rows]
    tag_map = tags.load(conn, ids)
    free = _free_ids(conn, rows) if usage else {}
    used = _used_ids(conn, rows) if usage else {}
    return [_view(r, tag_map.get(r.id, []), free.get(r.id), used.get(r.id)) for r in rows]


def _view(r: Row, tag_list: list[str], available: list[int] | None,
          used: dict[str, str | None] | None) -> dict[str, Any]:
    view = {"id": r.id, "name": r.name, "description": r.description,
            "project_id": r.project_id, "tenant_id": r.project_id,
            "default": bool(r.default), "shared": bool(r.shared),
            "network_type": r.network_type, "physical_network": r.physical_network,
            "minimum": r.minimum, "maximum": r.maximum, "tags": tag_list,
            "created_at": timestamp(r.created_at), "updated_at": timestamp(r.updated_at),
            "revision_number": r.revision_number}
    if available is not None:
        view["available"] = available
    if used is not None:
        view["used"] = used
    return view


def _segments_key(physnet: str | None) -> ColumnElement:
    column = SEG.c.physical_network
    return column.is_(None) if physnet is None else column == physnet


def _free_ids(conn: Connection, rows: Sequence[Row]) -> dict[str, list[int]]:
    """Each range's free ids: the allocation table's free rows within it."""
    spans = set(map(span, rows))
    if not spans:
        return {}
    stmt = select(A.c.network_type, A.c.physical_network, A.c.segmentation_id).where(
        ~A.c.allocated, or_(*[and_(
            A.c.network_type == t, A.c.physical_network == (p or models.NO_PHYSNET),
            A.c.segmentation_id.between(a, b)) for t, p, a, b in spans]))
    by_key: dict[tuple[str, str], list[int]] = {}
    for network_type, physnet, seg_id in conn.execute(stmt):
        by_key.setdefault((network_type, physnet), []).append(seg_id)
    for ids in by_key.values():
        ids.sort()
    found = {}
    for r in rows:
        ids = by_key.get((r.network_type, r.physical_network or models.NO_PHYSNET), [])
        found[r.id] = ids[bisect.bisect_left(ids, r.minimum):bisect.bisect_right(ids, r.maximum)]
    return found


def _used_ids(conn: Connection, rows: Sequence[Row]) -> dict[str, dict[str, str | None]]:
    """Each range's ids that networks' segments have: id -> the network's project."""
    spans = set(map(span, rows))
    if not spans:
        return {}
    stmt = select(SEG.c.network_type, SEG.c.physical_network, SEG.c.segmentation_id,
                  N.c.project_id).select_from(SEG.join(N, N.c.id == SEG.c.network_id)).where(
        or_(*[and_(SEG.c.network_type == t, _segments_key(p),
                   SEG.c.segmentation_id.between(a, b)) for t, p, a, b in spans]))
    by_key: dict[tuple[str, str | None], list[tuple[int, str | None]]] = {}
    for network_type, physnet, seg_id, project_id in conn.execute(stmt):
        by_key.setdefault((network_type, physnet), []).append((seg_id, project_id))
    found = {}
    for r in rows:
        held = by_key.get((r.network_type, r.physical_network), [])
        found[r.id] = {str(seg_id): project_id for seg_id, project_id in sorted(held, key=_first)
                       if r.minimum <= seg_id <= r.maximum}
    return found


def _first(pair: tuple[int, Any]) -> int:
    return pair[0]


# --- changes ----------------------------------------------------------------------------

def insert(conn: Connection, values: dict[str, Any]) -> str:
    when = now()
    range_id = new_uuid()
    conn.execute(R.insert().values(
        id=range_id, project_id=values["project_id"], name=values.get("name") or "",
        description=values.get("description") or "", created_at=when, updated_at=when,
        revision_number=0, default=False, shared=values["shared"],
        network_type=values["network_type"], physical_network=values["physical_network"],
        minimum=values["minimum"], maximum=values["maximum"]))
    return range_id


def delete_(conn: Connection, range_id: str) -> None:
    tags.remove(conn, range_id)
    conn.execute(delete(R).where(R.c.id == range_id))


def overlapping(conn: Connection, wanted: Span, but: str | None = None) -> list[str]:
    """The ranges other than the defaults (and ``but``) that share an id with ``wanted``."""
    network_type, physnet, first, last = wanted
    stmt = select(R.c.id).where(
        ~R.c.default, R.c.network_type == network_type,
        R.c.physical_network.is_(None) if physnet is None else R.c.physical_network == physnet,
        R.c.minimum <= last, R.c.maximum >= first).order_by(R.c.id)
    if but is not None:
        stmt = stmt.where(R.c.id != but)
    return list(conn.execute(stmt).scalars())


def used_bounds(conn: Connection, within: Span) -> tuple[int, int] | None:
    """The lowest and highest id within the span that a network's segment has."""
    network_type, physnet, first, last = within
    lowest, highest = conn.execute(select(
        func.min(SEG.c.segmentation_id), func.max(SEG.c.segmentation_id)).where(
        SEG.c.network_type == network_type, _segments_key(physnet),
        SEG.c.segmentation_id.between(first, last))).one()
    return None if lowest is None else (lowest, highest)


# --- what the type drivers allocate from --------------------------------------------------

def ranges_of_types(conn: Connection, network_types: Iterable[str]) -> dict[str, list[IdRange]]:
    """Every range of each type, default or not."""
    found: dict[str, list[IdRange]] = {t: [] for t in network_types}
    if not found:
        return found
    for network_type, physnet, first, last in conn.execute(
            select(R.c.network_type, R.c.physical_network, R.c.minimum, R.c.maximum)
            .where(R.c.network_type.in_(list(found)))):
        found[network_type].append((physnet, first, last))
    return found


def pools(conn: Connection, project_id: str | None) -> SegmentPools:
    """Per network type: the project's own ranges, then the shared ones less the
    ranges of other projects (as Neutron: a project's range is its own)."""
    own: dict[str, list[IdRange]] = {}
    shared: dict[str, list[IdRange]] = {}
    others: dict[str, list[IdRange]] = {}
    for network_type, physnet, first, last, is_shared, owner in conn.execute(select(
            R.c.network_type, R.c.physical_network, R.c.minimum, R.c.maximum, R.c.shared,
            R.c.project_id)):
        kind = shared if is_shared else own if owner is not None and owner == project_id \
            else others
        kind.setdefault(network_type, []).append((physnet, first, last))
    return {t: [group for group in (own.get(t, []), subtract(shared.get(t, []),
                                                               others.get(t, [])))
                if group]
            for t in {*own, *shared}}


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def subtract(spans: Sequence[IdRange], holes: Sequence[IdRange]) -> list[IdRange]:
    """The ids of ``spans`` not in ``holes`` (of the same physical network), as
    ranges in order."""
    left: list[IdRange] = []
    for physnet in dict.fromkeys(p for p, _, _ in spans):
        cuts = _merged((a, b) for p, a, b in holes if p == physnet)
        for first, last in _merged((a, b) for p, a, b in spans if p == physnet):
            start = first
            for a, b in cuts:
                if b < start:
                    continue
                if a > last:
                    break
                if a > start:
                    left.append((physnet, start, a - 1))
                start = b + 1
            if start <= last:
                left.append((physnet, start, last))
    return left


def follow_config(conn: Connection, configured: dict[str, list[IdRange]]) -> None:
    """The default ranges become ``configured`` (network type -> ranges): those
    configured and there stay as they are (their ids, tags), the others go, the
    missing are made. A default made twice (two servers starting at once) goes
    at the next start."""
    wanted = list(dict.fromkeys((t, p, a, b) for t, spans in configured.items()
                                for p, a, b in spans))
    kept: set[Span] = set()
    stale = []
    for found in conn.execute(select(R.c.id, R.c.network_type, R.c.physical_network,
                                     R.c.minimum, R.c.maximum).where(R.c.default)
                              .order_by(R.c.created_at, R.c.id)):
        key = span(found)
        if key in kept or key not in wanted:
            stale.append(found.id)
        else:
            kept.add(key)
    if stale:
        conn.execute(delete(models.tags).where(models.tags.c.resource_id.in_(stale)))
        conn.execute(delete(R).where(R.c.id.in_(stale)))
    when = now()
    missing = [{"id": new_uuid(), "project_id": None, "name": "", "description": "",
                "created_at": when, "updated_at": when, "revision_number": 0,
                "default": True, "shared": True, "network_type": t, "physical_network": p,
                "minimum": a, "maximum": b} for t, p, a, b in wanted if (t, p, a, b) not in kept]
    if missing:
        conn.execute(R.insert(), missing)
