"""Small helpers shared by the table code."""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import update
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc

T = TypeVar("T")
CHUNK = 500


def chunked(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)


def timestamp(value: datetime.datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")


def bump(conn: Connection, table: Any, item_id: str, if_revision: int | None = None,
         values: dict[str, Any] | None = None) -> tuple[int, datetime.datetime]:
    """Apply ``values`` and bump revision and updated_at; honour If-Match.

    Returns the new revision number and time. Raises the table's NotFound
    through the caller when the row is gone (rowcount 0 and no revision).
    """
    when = now()
    stmt = update(table).where(table.c.id == item_id)
    if if_revision is not None:
        current = conn.execute(table.select().with_only_columns(table.c.revision_number)
                               .where(table.c.id == item_id)).scalar()
        if current is not None and current != if_revision:
            raise exc.RevisionNumberConstraintFailed(expected=if_revision, current=current)
    conn.execute(stmt.values(**(values or {}), updated_at=when,
                             revision_number=table.c.revision_number + 1))
    revision = conn.execute(table.select().with_only_columns(table.c.revision_number)
                            .where(table.c.id == item_id)).scalar()
    return revision, when
