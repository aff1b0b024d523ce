"""Network segments in the database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.db import models
from neutrino.db.util import chunked, now, timestamp
from neutrino.definitions.provider_net import (
    NETWORK_TYPE,
    PHYSICAL_NETWORK,
    PROVIDER_KEYS,
    SEGMENTATION_ID,
)
from neutrino.definitions.segment import SegmentNotFound
from neutrino.definitions.validators import new_uuid
from neutrino.plugins.ml2.api import Segment

SEG = models.network_segments


def add(conn: Connection, network_id: str, segments: Sequence[Segment]) -> list[Segment]:
    when = now()
    rows = [{"id": new_uuid(), "network_id": network_id,
             "network_type": s["network_type"], "physical_network": s.get("physical_network"),
             "segmentation_id": s.get("segmentation_id"), "segment_index": i,
             "name": None, "description": "", "created_at": when, "updated_at": when,
             "revision_number": 0} for i, s in enumerate(segments)]
    if rows:
        conn.execute(SEG.insert(), rows)
    return [view(r) for r in rows]


def view(row: Any) -> Segment:
    get = row.get if isinstance(row, dict) else row._mapping.get
    return {"id": get("id"), "network_id": get("network_id"), "name": get("name"),
            "description": get("description"), "network_type": get("network_type"),
            "physical_network": get("physical_network"),
            "segmentation_id": get("segmentation_id"),
            "created_at": timestamp(get("created_at")),
            "updated_at": timestamp(get("updated_at")),
            "revision_number": get("revision_number")}


def of_networks(conn: Connection, network_ids: Sequence[str] | None) -> dict[str, list[Segment]]:
    """network id -> its segments in order; ``None`` reads every network's."""
    found: dict[str, list[Segment]] = {}
    stmt = select(SEG).order_by(SEG.c.network_id, SEG.c.segment_index)
    chunks = [None] if network_ids is None else list(chunked(list(network_ids)))
    for chunk in chunks:
        query = stmt if chunk is None else stmt.where(SEG.c.network_id.in_(chunk))
        for row in conn.execute(query):
            found.setdefault(row.network_id, []).append(view(row))
    return found


def requested(data: dict[str, Any]) -> list[Segment] | None:
    """The segments a create asks for (provider or multi-provider attributes);
    None when it asks for none. ``data`` is left as it is: a retried
    transaction reads it again."""
    provider = {key: data[key] for key in PROVIDER_KEYS if data.get(key) is not None}
    multi = data.get("segments")
    if provider and multi:
        raise exc.InvalidInput(error_message="Segments and provider values cannot both be "
                                             "set.")
    wanted = multi or ([provider] if provider else None)
    if wanted is None:
        return None
    segs = [{"network_type": s.get(NETWORK_TYPE), "physical_network": s.get(PHYSICAL_NETWORK),
             "segmentation_id": s.get(SEGMENTATION_ID)} for s in wanted]
    keys = [(s["network_type"], s["physical_network"], s["segmentation_id"]) for s in segs]
    if len(set(keys)) != len(keys):
        raise exc.InvalidInput(error_message="Duplicate segment entry in request.")
    return segs


def provider_view(segs: Sequence[Segment]) -> dict[str, Any]:
    """One segment shows as provider attributes, several as ``segments``."""
    if len(segs) > 1:
        return {"segments": [{NETWORK_TYPE: s["network_type"],
                              PHYSICAL_NETWORK: s["physical_network"],
                              SEGMENTATION_ID: s["segmentation_id"]} for s in segs]}
    first = segs[0] if segs else {}
    return {NETWORK_TYPE: first.get("network_type"),
            PHYSICAL_NETWORK: first.get("physical_network"),
            SEGMENTATION_ID: first.get("segmentation_id")}


_FILTER_COLUMNS = {NETWORK_TYPE: SEG.c.network_type, PHYSICAL_NETWORK: SEG.c.physical_network,
                   SEGMENTATION_ID: SEG.c.segmentation_id}


def filter_clauses(query: Any) -> list:
    """Network filters on provider attributes, taken out of ``query``."""
    clauses = []
    for key, column in _FILTER_COLUMNS.items():
        values = query.pop_filter(key)
        if values is not None:
            clauses.append(models.networks.c.id.in_(
                select(SEG.c.network_id).where(column.in_(values))))
    return clauses


COLUMNS = {name: SEG.c[name] for name in (
    "id", "network_id", "name", "description", "network_type", "physical_network",
    "segmentation_id", "created_at", "updated_at", "revision_number")}


class SegmentInUse(exc.InUse):
    message = "Segment '%(segment_id)s' cannot be deleted: %(reason)s."


def get_row(conn: Connection, segment_id: str) -> Any:
    row = conn.execute(select(SEG).where(SEG.c.id == segment_id)).first()
    if row is None:
        raise SegmentNotFound(segment_id=segment_id)
    return row


def append(conn: Connection, network_id: str, segment: Segment, name: str | None,
           description: str) -> Segment:
    """Add one more segment to a network (after those it has)."""
    last = conn.execute(select(SEG.c.segment_index).where(SEG.c.network_id == network_id)
                        .order_by(SEG.c.segment_index.desc()).limit(1)).scalar()
    when = now()
    row = {"id": new_uuid(), "network_id": network_id,
           "network_type": segment["network_type"],
           "physical_network": segment.get("physical_network"),
           "segmentation_id": segment.get("segmentation_id"),
           "segment_index": 0 if last is None else last + 1, "name": name,
           "description": description, "created_at": when, "updated_at": when,
           "revision_number": 0}
    conn.execute(SEG.insert().values(**row))
    return view(row)


def of_subnets(conn: Connection, subnet_ids: list[str]) -> set[str]:
    """The segments the subnets are on (routed networks)."""
    return {segment_id for segment_id in conn.execute(select(models.subnets.c.segment_id).where(
        models.subnets.c.id.in_(subnet_ids))).scalars() if segment_id is not None}


def remove(conn: Connection, row: Any) -> None:
    others = conn.execute(select(SEG.c.id).where(SEG.c.network_id == row.network_id,
                                                 SEG.c.id != row.id).limit(1)).first()
    if others is None:
        raise SegmentInUse(segment_id=row.id, reason="it is the network's only segment")
    bound = conn.execute(select(models.port_bindings.c.port_id).where(
        models.port_bindings.c.segment_id == row.id).limit(1)).first()
    if bound is not None:
        raise SegmentInUse(segment_id=row.id, reason="ports are bound to it")
    on_it = conn.execute(select(models.subnets.c.id).where(
        models.subnets.c.segment_id == row.id).limit(1)).first()
    if on_it is not None:
        raise SegmentInUse(segment_id=row.id, reason="subnets are associated with it")
    conn.execute(SEG.delete().where(SEG.c.id == row.id))
