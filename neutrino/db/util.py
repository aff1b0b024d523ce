"""Small helpers shared by the table code."""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import select, update
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
    """Neutrino's time format, 2026-12-02T14:42:58Z (isoformat: lists format thousands)."""
    return None if value is None else _formatted(value)


@functools.lru_cache(maxsize=4096)
def _formatted(value: datetime.datetime) -> str:
    """A list formats each row's two times, often one second (created_at is
    updated_at until the first update, and rows made together share theirs)."""
    return value.isoformat(timespec="seconds") + "Z"


def check_revision(conn: Connection, table: Any, item_id: str, if_revision: int | None
                   ) -> None:
    """If-Match: lock the row and compare, so the check holds until commit."""
    if if_revision is None:
        return
    stmt = select(table.c.revision_number).where(table.c.id == item_id)
    if conn.dialect.name != "sqlite":  # SQLite's write transaction already excludes others
        stmt = stmt.with_for_update()
    current = conn.execute(stmt).scalar()
    if current is not None and current != if_revision:
        raise exc.RevisionNumberConstraintFailed(expected=if_revision, current=current)


def bump(conn: Connection, table: Any, item_id: str, if_revision: int | None = None,
         values: dict[str, Any] | None = None) -> None:
    """Apply ``values``, bump revision_number and updated_at; honour If-Match."""
    check_revision(conn, table, item_id, if_revision)
    conn.execute(update(table).where(table.c.id == item_id).values(
        **(values or {}), updated_at=now(), revision_number=table.c.revision_number + 1))
