"""Quota limits and their enforcement inside the creating transaction.

A create counts the project's rows after taking the (project, resource)
lock row, so concurrent creates in one project are counted one after the
other on every database; SQLite already serialises writers. The lock is
taken only when the project has a limit. On PostgreSQL the count comes in a
statement after the lock's (a statement reads what was committed when it
began, before its lock was granted); on MariaDB the lock is a statement of
its own, before the count.

A create that reads other rows anyway (a port its network) reads them in the
statement that checks the quota (``QuotaEngine.reading``): the check costs it
no round trip on SQLite and MariaDB, and one on PostgreSQL when the project
has a limit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import ColumnElement, bindparam, case, delete, func, select
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.sql import Select

from neutrino import exceptions as exc
from neutrino.db import models, tags
from neutrino.db.prepared import Prepared

# Every create asks for its limit, and how many the project has.
_LIMIT_SELECT = select(models.quotas.c.hard_limit).where(
    models.quotas.c.project_id == bindparam("project_id"),
    models.quotas.c.resource == bindparam("resource"))
_LIMIT = Prepared(_LIMIT_SELECT)
_MARIADB = ("mysql", "mariadb")


def _used_select(table: Any) -> Any:
    return select(func.count()).select_from(table).where(
        table.c.project_id == bindparam("project_id"))


def _limit_or_default() -> ColumnElement:
    return func.coalesce(_LIMIT_SELECT.scalar_subquery(), bindparam("default"))


# The (project, resource) lock row, upserted when the project has a limit.
_LOCKS = models.quota_locks
_LOCK_KEY = ["project_id", "resource"]
_LIMITED = select(bindparam("project_id", type_=_LOCKS.c.project_id.type),
                  bindparam("resource", type_=_LOCKS.c.resource.type)).where(
    _limit_or_default() >= 0)
_pg_lock = postgresql.insert(_LOCKS).from_select(_LOCK_KEY, _LIMITED)
# PostgreSQL: a part of the statement that reads the limit
_PG_LOCK = _pg_lock.on_conflict_do_update(
    index_elements=_LOCK_KEY, set_={"resource": _pg_lock.excluded.resource}).cte("quota_lock")
_mariadb_lock = mysql.insert(_LOCKS).from_select(_LOCK_KEY, _LIMITED)
# MariaDB (no statement in a WITH writes): a statement of its own, before the read
_MARIADB_LOCK = Prepared(_mariadb_lock.on_duplicate_key_update(
    resource=_mariadb_lock.inserted.resource))


class QuotaRead:
    """A select of rows a create reads anyway (its ``along``), run as the
    statement that checks the quota of one resource: ``QuotaEngine.reading``."""

    def __init__(self, engine: QuotaEngine, resource: str, along: Select):
        self.engine = engine
        self.resource = resource
        self.along = along
        self._statements: dict[str, Prepared] = {}  # by dialect

    def rows(self, conn: Connection, project_id: str, params: Mapping[str, Any],
             adding: int = 1) -> list[Any]:
        """``along``'s rows (of ``params``), once the project's quota allows
        ``adding`` more (OverQuota); inside the creating transaction. With no
        rows the quota is checked all the same (over quota is said first)."""
        engine, resource, dialect = self.engine, self.resource, conn.dialect.name
        quota_params = engine.params(project_id, resource)
        if dialect in _MARIADB:
            _MARIADB_LOCK.run(conn, quota_params)
        rows = self._statement(dialect).rows(conn, {**params, **quota_params})
        if not rows:  # (a plain check's statement has its one row)
            engine.check(conn, project_id, resource, adding)
            return rows
        limit = rows[0].quota_limit
        if dialect == "postgresql":  # counted after the lock, the statement just taken
            used = engine.used(conn, project_id, resource) if limit >= 0 else 0
        else:
            used = rows[0].quota_used
        if 0 <= limit < used + adding:
            raise exc.OverQuota([resource])
        return rows

    def _statement(self, dialect: str) -> Prepared:
        if dialect not in self._statements:
            limit, used = self.engine.counted(self.resource)
            self._statements[dialect] = Prepared(
                self.along.add_columns(limit).add_cte(_PG_LOCK) if dialect == "postgresql"
                else self.along.add_columns(limit, used))
        return self._statements[dialect]


class QuotaEngine:
    def __init__(self, quota_conf: Any):
        self.quota_conf = quota_conf  # the [quotas] options
        self.defaults: dict[str, int] = {}  # resource -> default limit
        self.tables: dict[str, Any] = {}  # resource -> table with a project_id column
        self._used: dict[str, Prepared] = {}
        # the limit and (when there is one) the count, as columns
        self._counted: dict[str, tuple[ColumnElement, ColumnElement]] = {}
        self._checks: dict[str, QuotaRead] = {}  # reading nothing else

    def register(self, resource: str, table: Any) -> None:
        """Count ``table`` rows as ``resource``; the default is ``quota_<resource>``."""
        self.tables[resource] = table
        self._used[resource] = Prepared(_used_select(table))
        # the project's rows are counted only when it has a limit: an unlimited
        # project of thousands of ports would count them all at every create
        limit = _limit_or_default()
        self._counted[resource] = (limit.label("quota_limit"), case(
            (limit >= 0, _used_select(table).scalar_subquery()), else_=0).label("quota_used"))
        self._checks[resource] = self.reading(resource, select())
        self.defaults[resource] = getattr(self.quota_conf, f"quota_{resource}",
                                          self.quota_conf.default_quota)

    def reading(self, resource: str, along: Select) -> QuotaRead:
        """The check of ``resource``'s quota in the statement that reads ``along``
        (made once, as a statement is: its parameters must not be named
        project_id, resource or default)."""
        return QuotaRead(self, resource, along)

    def counted(self, resource: str) -> tuple[ColumnElement, ColumnElement]:
        """The project's limit of ``resource`` and how many it has (0 when it has
        no limit), as columns ``quota_limit`` and ``quota_used``."""
        return self._counted[resource]

    def params(self, project_id: str, resource: str) -> dict[str, Any]:
        return {"project_id": project_id, "resource": resource,
                "default": self.defaults.get(resource, -1)}

    @property
    def resources(self) -> list[str]:
        return sorted(self.defaults)

    def limits(self, conn: Connection, project_id: str) -> dict[str, int]:
        q = models.quotas
        limits = dict(self.defaults)
        for resource, value in conn.execute(
                select(q.c.resource, q.c.hard_limit).where(q.c.project_id == project_id)):
            if resource in limits:
                limits[resource] = value
        return limits

    def limit(self, conn: Connection, project_id: str, resource: str) -> int:
        value = _LIMIT.scalar(conn, {"project_id": project_id, "resource": resource})
        return self._or_default(resource, value)

    def _or_default(self, resource: str, value: int | None) -> int:
        return self.defaults.get(resource, -1) if value is None else value

    def used(self, conn: Connection, project_id: str, resource: str) -> int:
        return self._used[resource].scalar(conn, {"project_id": project_id})

    def check(self, conn: Connection, project_id: str, resource: str, adding: int = 1) -> None:
        """Raise OverQuota if ``adding`` more would pass the limit; call inside the txn."""
        self._checks[resource].rows(conn, project_id, {}, adding)

    def create(self, conn: Connection, resource: str, item: dict[str, Any],
               make: Callable[[Connection, dict[str, Any]], dict[str, Any]],
               checked: bool = False) -> dict[str, Any]:
        """Make one ``resource`` of ``item``'s project (``make`` inserts it and
        returns its view) once the quota allows it, tagged with the tags the
        request gave; call inside the creating transaction. ``checked``: ``make``
        checks the quota itself, with a statement it sends anyway."""
        if not checked:
            self.check(conn, item["project_id"], resource)
        view = make(conn, item)
        if item.get("tags"):
            tags.replace(conn, view["id"], item["tags"])
            view["tags"] = sorted(set(item["tags"]))
        return view

    def set_limits(self, conn: Connection, project_id: str, values: Mapping[str, int]) -> None:
        q = models.quotas
        for resource, value in values.items():
            conn.execute(delete(q).where(q.c.project_id == project_id,
                                         q.c.resource == resource))
            conn.execute(q.insert().values(project_id=project_id, resource=resource,
                                           hard_limit=value))

    def reset(self, conn: Connection, project_id: str) -> None:
        removed = conn.execute(delete(models.quotas).where(
            models.quotas.c.project_id == project_id)).rowcount
        if not removed:
            raise exc.TenantQuotaNotFound(project_id=project_id)

    def projects_with_limits(self, conn: Connection) -> list[str]:
        q = models.quotas
        return list(conn.execute(select(q.c.project_id).distinct()).scalars())

