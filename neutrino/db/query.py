"""Collection queries: filters, tag filters, sorting and keyset pagination.

The API turns a query string into a ``CollectionQuery``; plugins hand it to
``select_page`` with the table's column map and their visibility clause.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, false, or_, select, true
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql import ColumnElement, Select

from neutrino.db import models


@dataclass
class CollectionQuery:
    filters: dict[str, list[Any]] = field(default_factory=dict)
    tag_filters: dict[str, list[str]] = field(default_factory=dict)
    sorts: list[tuple[str, bool]] = field(default_factory=list)  # (attr, ascending)
    limit: int | None = None
    marker: str | None = None
    page_reverse: bool = False
    fields: list[str] | None = None

    def pop_filter(self, name: str) -> list[Any] | None:
        return self.filters.pop(name, None)


ALL = CollectionQuery()


def tag_clauses(id_column: Any, tag_filters: Mapping[str, list[str]]) -> list[ColumnElement]:
    """tags: all of; tags-any: any of; not-tags: not all of; not-tags-any: none of."""
    tags = models.tags
    clauses: list[ColumnElement] = []
    for kind, wanted in tag_filters.items():
        if not wanted:
            continue
        if kind in ("tags", "not-tags"):
            matched = and_(*[
                id_column.in_(select(tags.c.resource_id).where(tags.c.tag == tag))
                for tag in wanted])
        else:
            matched = id_column.in_(select(tags.c.resource_id).where(tags.c.tag.in_(wanted)))
        clauses.append(matched if kind in ("tags", "tags-any") else ~matched)
    return clauses


def filter_clauses(columns: Mapping[str, Any], filters: Mapping[str, list[Any]]
                   ) -> list[ColumnElement]:
    clauses: list[ColumnElement] = []
    for name, values in filters.items():
        column = columns[name]
        present = [value for value in values if value is not None]
        parts = []
        if present:
            parts.append(column.in_(present) if len(present) > 1 else column == present[0])
        if len(present) != len(values):
            parts.append(column.is_(None))
        clauses.append(or_(*parts) if len(parts) > 1 else parts[0] if parts else false())
    return clauses


def select_page(conn: Connection, table: Any, columns: Mapping[str, Any],
                query: CollectionQuery, where: list[ColumnElement] | None = None
                ) -> list[Row]:
    """Rows of ``table`` matching the query, in its order, one page if limited.

    ``columns`` maps API attribute names to columns; ``query.filters`` must
    only hold names from it (plugins pop the others first).
    """
    clauses = list(where or [])
    clauses += filter_clauses(columns, query.filters)
    clauses += tag_clauses(table.c.id, query.tag_filters)
    sorts = list(query.sorts) or [("id", True)]
    order = []
    for name, ascending in sorts:
        asc = ascending != query.page_reverse
        order.append(columns[name].asc() if asc else columns[name].desc())
    if query.marker is not None:
        clauses.append(_after_marker(conn, table, columns, sorts, query))
    stmt: Select = select(table).where(*clauses).order_by(*order)
    if query.limit is not None:
        stmt = stmt.limit(query.limit)
    rows = list(conn.execute(stmt))
    if query.page_reverse:
        rows.reverse()
    return rows


def _after_marker(conn: Connection, table: Any, columns: Mapping[str, Any],
                  sorts: list[tuple[str, bool]], query: CollectionQuery) -> ColumnElement:
    marker = conn.execute(select(*[columns[n] for n, _ in sorts]).where(
        table.c.id == query.marker)).first()
    if marker is None:
        return true()  # an unknown marker reads from the start, as Neutron's subnets do
    # (k1 > m1) or (k1 = m1 and k2 > m2) or ... with each key's own direction.
    ors = []
    for i, (name, ascending) in enumerate(sorts):
        forward = ascending != query.page_reverse
        column = columns[name]
        value = marker[i]
        step = column > value if forward else column < value
        ands = [columns[n] == marker[j] for j, (n, _) in enumerate(sorts[:i])]
        ors.append(and_(*ands, step))
    return or_(*ors)
