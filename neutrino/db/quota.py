"""Quota limits and their enforcement inside the creating transaction.

A create counts the project's rows after taking the (project, resource)
lock row, so concurrent creates in one project are counted one after the
other on every database; SQLite already serialises writers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import bindparam, case, delete, func, select
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.db import models, tags
from neutrino.db.prepared import Prepared

# Every create asks for its limit, and how many the project has.
_LIMIT_SELECT = select(models.quotas.c.hard_limit).where(
    models.quotas.c.project_id == bindparam("project_id"),
    models.quotas.c.resource == bindparam("resource"))
_LIMIT = Prepared(_LIMIT_SELECT)


def _used_select(table: Any) -> Any:
    return select(func.count()).select_from(table).where(
        table.c.project_id == bindparam("project_id"))


class QuotaEngine:
    def __init__(self, quota_conf: Any):
        self.quota_conf = quota_conf  # the [quotas] options
        self.defaults: dict[str, int] = {}  # resource -> default limit
        self.tables: dict[str, Any] = {}  # resource -> table with a project_id column
        self._used: dict[str, Prepared] = {}
        # SQLite, whose write transaction already excludes other writers: the
        # limit and the count in one statement
        self._limit_and_used: dict[str, Prepared] = {}

    def register(self, resource: str, table: Any) -> None:
        """Count ``table`` rows as ``resource``; the default is ``quota_<resource>``."""
        self.tables[resource] = table
        self._used[resource] = Prepared(_used_select(table))
        # the project's rows are counted only when it has a limit: an unlimited
        # project of thousands of ports would count them all at every create
        limit = func.coalesce(_LIMIT_SELECT.scalar_subquery(), bindparam("default"))
        self._limit_and_used[resource] = Prepared(select(
            limit, case((limit >= 0, _used_select(table).scalar_subquery()), else_=0)))
        self.defaults[resource] = getattr(self.quota_conf, f"quota_{resource}",
                                          self.quota_conf.default_quota)

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
        params = {"project_id": project_id, "resource": resource,
                  "default": self.defaults.get(resource, -1)}
        if conn.dialect.name == "sqlite":
            limit, used = self._limit_and_used[resource].first(conn, params)
            if 0 <= limit < used + adding:
                raise exc.OverQuota([resource])
            return
        limit = self.limit(conn, project_id, resource)
        if limit < 0:
            return
        if adding > limit:
            raise exc.OverQuota([resource])
        _lock(conn, project_id, resource)
        if self.used(conn, project_id, resource) + adding > limit:
            raise exc.OverQuota([resource])

    def create(self, conn: Connection, resource: str, item: dict[str, Any],
               make: Callable[[Connection, dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """Make one ``resource`` of ``item``'s project (``make`` inserts it and
        returns its view) once the quota allows it, tagged with the tags the
        request gave; call inside the creating transaction."""
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


def _lock(conn: Connection, project_id: str, resource: str) -> None:
    locks = models.quota_locks
    dialect = conn.dialect.name
    values = {"project_id": project_id, "resource": resource}
    if dialect == "postgresql":
        conn.execute(postgresql.insert(locks).values(**values).on_conflict_do_update(
            index_elements=["project_id", "resource"], set_={"resource": resource}))
    elif dialect in ("mysql", "mariadb"):
        conn.execute(mysql.insert(locks).values(**values).on_duplicate_key_update(
            resource=resource))
    # SQLite: the write transaction (BEGIN IMMEDIATE) already excludes others.
