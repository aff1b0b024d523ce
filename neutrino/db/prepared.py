"""Statements of the hot paths, compiled once per dialect, run on the DBAPI cursor.

On SQLite a statement takes about 10 µs to run and SQLAlchemy's execution
about 25 µs more (cache key, parameter processing, result metadata, events),
and building a ``select()`` about 15 µs more again: on a port create, which
sends a dozen statements, that was most of the request's CPU. A ``Prepared``
statement is built once at import, compiled once per dialect, and each run
converts its parameters and results with the column types' own processors,
on the caller's connection (so in its transaction, with its retries: DBAPI
errors come back as SQLAlchemy's, which ``Database.write`` knows).

Only fixed statements: no ``IN`` list of varying length (an expanding
parameter is refused). Rows are named tuples, read like SQLAlchemy's rows.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement

Processor = Callable[[Any], Any] | None


@dataclass(frozen=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]  # the parameters in the order the SQL takes them
    positional: bool
    binds: tuple[tuple[str, Processor, Any], ...]  # name, processor, default value
    results: tuple[Processor, ...]  # one per column; empty when none convert
    make_row: Callable[[Any], Any] | None


def _row_type(names: tuple[str, ...]) -> Any:
    """A named tuple class for a statement's columns (made at run time); a column
    without a usable name is reached by position."""
    return collections.namedtuple("Row", names, rename=True)


class Prepared:
    def __init__(self, statement: ClauseElement):
        self.statement = statement
        self._compiled: dict[str, _Compiled] = {}

    # --- running -----------------------------------------------------------------------

    def rows(self, conn: Connection, params: Mapping[str, Any] | None = None) -> list[Any]:
        compiled, cursor = self._run(conn, params)
        try:
            found = cursor.fetchall()
        finally:
            cursor.close()
        results, make = compiled.results, compiled.make_row
        if results:
            found = [[value if fn is None or value is None else fn(value)
                      for fn, value in zip(results, row, strict=True)] for row in found]
        return [make(row) for row in found] if make is not None else found

    def first(self, conn: Connection, params: Mapping[str, Any] | None = None) -> Any:
        found = self.rows(conn, params)
        return found[0] if found else None

    def scalar(self, conn: Connection, params: Mapping[str, Any] | None = None) -> Any:
        row = self.first(conn, params)
        return None if row is None else row[0]

    def scalars(self, conn: Connection, params: Mapping[str, Any] | None = None) -> list[Any]:
        return [row[0] for row in self.rows(conn, params)]

    def run(self, conn: Connection, params: Mapping[str, Any] | None = None) -> int:
        """A statement without results (insert, update, delete): its row count."""
        _, cursor = self._run(conn, params)
        try:
            return cursor.rowcount
        finally:
            cursor.close()

    def run_many(self, conn: Connection, rows: list[Mapping[str, Any]]) -> None:
        """One statement over many rows of parameters (executemany)."""
        if rows:
            compiled = self._for(conn.dialect)
            self._execute(conn, compiled, [self._values(compiled, row) for row in rows],
                          many=True).close()

    def _run(self, conn: Connection, params: Mapping[str, Any] | None
             ) -> tuple[_Compiled, Any]:
        compiled = self._for(conn.dialect)
        return compiled, self._execute(conn, compiled, self._values(compiled, params or {}))

    @staticmethod
    def _execute(conn: Connection, compiled: _Compiled, values: Any, many: bool = False
                 ) -> Any:
        """The cursor that ran the statement; the DBAPI's error as SQLAlchemy's."""
        dbapi_conn = conn.connection.dbapi_connection
        assert dbapi_conn is not None, "a closed connection"
        cursor = dbapi_conn.cursor()
        try:
            (cursor.executemany if many else cursor.execute)(compiled.sql, values)
        except conn.dialect.loaded_dbapi.Error as error:
            cursor.close()
            raise DBAPIError.instance(compiled.sql, values, error,
                                      conn.dialect.loaded_dbapi.Error) from error
        return cursor

    @staticmethod
    def _values(compiled: _Compiled, params: Mapping[str, Any]) -> Any:
        converted = {}
        for name, processor, default in compiled.binds:
            value = params.get(name, default)
            converted[name] = value if processor is None or value is None else processor(value)
        if compiled.positional:
            return tuple(converted[name] for name in compiled.names)
        return converted

    # --- compiling ---------------------------------------------------------------------

    def _for(self, dialect: Dialect) -> _Compiled:
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            compiled = self._compiled[dialect.name] = self._compile(dialect)
        return compiled

    def _compile(self, dialect: Dialect) -> _Compiled:
        compiled = self.statement.compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler)
        if compiled.literal_execute_params or compiled.post_compile_params:
            raise ValueError("a prepared statement takes no IN list of varying length")
        binds = tuple(
            (name, bind.type.dialect_impl(dialect).bind_processor(dialect),
             None if bind.required else bind.effective_value)
            for name, bind in compiled.binds.items())
        columns = getattr(self.statement, "selected_columns", None)
        results: tuple[Processor, ...] = ()
        make_row = None
        if columns is not None and len(columns):
            results = tuple(column.type.dialect_impl(dialect).result_processor(dialect, None)
                            for column in columns)
            if all(fn is None for fn in results):
                results = ()
            make_row = _row_type(tuple(columns.keys()))._make
        positional = bool(dialect.positional)
        names = tuple(compiled.positiontup or ()) if positional else ()
        return _Compiled(compiled.string, names, positional, binds, results, make_row)
