"""Collection queries: filters, tag filters, sorting and keyset pagination.

The API turns a query string into a ``CollectionQuery``; plugins hand it to
``select_page`` with the table's column map and their visibility clause.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, case, false, or_, select, true
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql import ColumnElement, Select

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.util import chunked


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

#: a page of more rows than this is completed by the list's own condition
FEW = 100


@dataclass(frozen=True)
class Page:
    """The rows a read returns, for the reads that complete their views (fixed
    IPs, tags, each extension's table): by their ids when they are few, else by
    the condition that found them, so that a list of thousands sends no ``IN``
    list of thousands (SQLAlchemy's expanding parameters cost more than the
    statement) and the number of statements does not grow with the rows. A
    long page of every row of its table is completed by reading each table
    whole: cheaper than any restriction (SQLite, without statistics, probes an
    index once per id of an ``IN`` subquery)."""

    ids: list[str]
    found_by: Select | None = None  # a select of the same ids, for a long page
    every: bool = False  # the long page holds every row of its table

    @classmethod
    def of(cls, ids: list[str], found_by: Select | None = None, every: bool = False) -> Page:
        if len(ids) <= FEW:
            return cls(ids)
        return cls(ids, found_by, every and found_by is not None)

    def read(self, conn: Connection, stmt: Select, column: Any) -> list[Row]:
        """``stmt``'s rows whose ``column`` is one of the page's ids."""
        rows: list[Row] = []
        for clause in self.clauses(column):
            rows += conn.execute(stmt.where(clause)).all()
        return rows

    def clauses(self, column: Any) -> Iterator[ColumnElement]:
        """``column`` is one of the page's ids: one condition, or one per 500 ids
        of a long page known by its ids alone; none for an empty page."""
        if self.every:
            yield true()
            return
        if self.found_by is not None:
            yield column.in_(self.found_by)
            return
        for chunk in chunked(self.ids):
            yield column.in_(chunk)


def api_columns(table: Any, *names: str, **renamed: Any) -> dict[str, Any]:
    """API attribute -> column: the standard attributes, then ``names`` (columns
    of the same name) and ``renamed`` (attribute -> column, e.g. router:external)."""
    columns = {name: table.c[name] for name in (
        "id", "name", "description", "project_id", "created_at", "updated_at",
        "revision_number", *names)}
    columns["tenant_id"] = table.c.project_id
    columns.update(renamed)
    return columns


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


# The largest LIMIT sent to the database; a bigger page is the same page.
_MAX_SQL_LIMIT = 2 ** 31 - 1


def filter_clauses(columns: Mapping[str, Any], filters: Mapping[str, list[Any]]
                   ) -> list[ColumnElement]:
    """Each filter ORs its values (None matches NULL); filters are ANDed. The API
    has refused values no database can compare (NUL, integers beyond 64 bits)."""
    clauses: list[ColumnElement] = []
    for name, values in filters.items():
        column = columns[name]
        present = [value for value in values if value is not None]
        parts = []
        if present:
            parts.append(column.in_(present) if len(present) > 1 else column == present[0])
        if any(value is None for value in values):
            parts.append(column.is_(None))
        clauses.append(or_(*parts) if len(parts) > 1 else parts[0] if parts else false())
    return clauses


def select_page(conn: Connection, table: Any, columns: Mapping[str, Any],
                query: CollectionQuery, where: list[ColumnElement] | None = None,
                selected: Sequence[Any] = ()) -> list[Row]:
    """Rows of ``table`` matching the query, in its order, one page if limited.

    ``columns`` maps API attribute names to columns; ``query.filters`` must
    only hold names from it (plugins pop the others first). NULL sorts
    before any value on every database, so pages join up on all of them.
    ``selected``: the columns to read, when not all of them are wanted.
    """
    unknown = [name for name in query.filters if name not in columns]
    if unknown:
        raise exc.HTTPBadRequest(msg=f"{unknown} is invalid attribute for filtering")
    for name, _ in query.sorts:
        if name not in columns:
            raise exc.BadRequest(resource=table.name,
                                 msg=f"'{name}' is an invalid attribute for sort key")
    clauses = list(where or [])
    clauses += filter_clauses(columns, query.filters)
    clauses += tag_clauses(table.c.id, query.tag_filters)
    sorts = list(query.sorts) or [("id", True)]
    order = []
    for name, ascending in sorts:
        column = columns[name]
        keys = [_null_rank(column), column] if _nullable(column) else [column]
        forward = ascending != query.page_reverse
        order += [key.asc() if forward else key.desc() for key in keys]
    if query.marker is not None:
        clauses.append(_after_marker(conn, table, columns, sorts, query))
    stmt: Select = select(*selected or [table]).where(*clauses).order_by(*order)
    if query.limit is not None:
        stmt = stmt.limit(min(query.limit, _MAX_SQL_LIMIT))
    rows = list(conn.execute(stmt).all())
    if query.page_reverse:
        rows.reverse()
    return rows


def read_page(conn: Connection, table: Any, columns: Mapping[str, Any],
              query: CollectionQuery, where: list[ColumnElement] | None = None,
              selected: Sequence[Any] = ()) -> tuple[list[Row], Page]:
    """``select_page``'s rows, and their ``Page``: found again by the same
    condition when unlimited (a limited page is as long as its limit at most)."""
    rows = select_page(conn, table, columns, query, where, selected)
    at = rows[0]._fields.index("id") if rows else 0
    ids = [row[at] for row in rows]  # by position: a row's attributes cost more
    if query.limit is not None:
        return rows, Page.of(ids)
    condition = [*(where or []), *filter_clauses(columns, query.filters),
                 *tag_clauses(table.c.id, query.tag_filters)]
    return rows, Page.of(ids, select(table.c.id).where(*condition),
                         every=not condition and query.marker is None)


def _nullable(column: Any) -> bool:
    return getattr(column, "nullable", True)


def _null_rank(column: Any) -> ColumnElement:
    """0 for NULL, 1 otherwise: orders NULL first the same way on every database."""
    return case((column.is_(None), 0), else_=1)


def _after_marker(conn: Connection, table: Any, columns: Mapping[str, Any],
                  sorts: list[tuple[str, bool]], query: CollectionQuery) -> ColumnElement:
    marker = conn.execute(select(*[columns[n] for n, _ in sorts]).where(
        table.c.id == query.marker)).first()
    if marker is None:
        return true()  # an unknown marker reads from the start, as Neutron's subnets do
    # (k1 after m1) or (k1 = m1 and k2 after m2) or ... with each key's own direction.
    ors = []
    equal_so_far: list[ColumnElement] = []
    for i, (name, ascending) in enumerate(sorts):
        column = columns[name]
        forward = ascending != query.page_reverse
        ors.append(and_(*equal_so_far, _beyond(column, marker[i], forward)))
        equal_so_far.append(column.is_(None) if marker[i] is None else column == marker[i])
    return or_(*ors)


def _beyond(column: Any, value: Any, forward: bool) -> ColumnElement:
    """Rows strictly after ``value`` in the column's order (NULL is the smallest)."""
    if value is None:
        return column.is_not(None) if forward else false()
    if isinstance(value, bool):  # booleans have no < on every backend: False < True
        if forward:
            return column == true() if value is False else false()
        after = column == false() if value is True else false()
    else:
        after = column > value if forward else column < value
    if not forward and _nullable(column):
        after = or_(after, column.is_(None))
    return after


def owned(table: Any, ctx: Context) -> list[ColumnElement]:
    """The visibility clause of a table whose rows are their project's business:
    every row for an admin, the caller's project's for anyone else."""
    return [] if ctx.is_admin else [table.c.project_id == ctx.project_id]


def find_row(conn: Connection, table: Any, row_id: str, visible: Sequence[ColumnElement],
             not_found: Callable[[], Exception], for_update: bool = False) -> Row:
    """The row ``row_id`` of ``table`` if ``visible`` lets the caller see it,
    else ``not_found()`` raised; locked until commit with ``for_update``
    (SQLite's write transaction already excludes others)."""
    stmt = select(table).where(table.c.id == row_id, *visible)
    if for_update and conn.dialect.name != "sqlite":
        stmt = stmt.with_for_update()
    row = conn.execute(stmt).first()
    if row is None:
        raise not_found()
    return row
