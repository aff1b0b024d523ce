"""Tags of any resource, kept in one table keyed by resource id."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.query import Page

T = models.tags


def load(conn: Connection, page: Page | Iterable[str]) -> dict[str, list[str]]:
    """The tags of each resource of ``page`` (or of ids), sorted."""
    if not isinstance(page, Page):
        page = Page.of(list(page))
    found: dict[str, list[str]] = {}
    for rid, tag in page.read(conn, select(T.c.resource_id, T.c.tag).order_by(T.c.tag),
                              T.c.resource_id):
        found.setdefault(rid, []).append(tag)
    return found


def of(conn: Connection, resource_id: str) -> list[str]:
    return list(conn.execute(select(T.c.tag).where(T.c.resource_id == resource_id)
                             .order_by(T.c.tag)).scalars())


def replace(conn: Connection, resource_id: str, tags: Iterable[str]) -> None:
    conn.execute(delete(T).where(T.c.resource_id == resource_id))
    rows = [{"resource_id": resource_id, "tag": tag} for tag in sorted(set(tags))]
    if rows:
        conn.execute(T.insert(), rows)


def add(conn: Connection, resource_id: str, tag: str) -> bool:
    if tag in of(conn, resource_id):
        return False
    conn.execute(T.insert().values(resource_id=resource_id, tag=tag))
    return True


def remove(conn: Connection, resource_id: str, tag: str | None = None) -> int:
    stmt = delete(T).where(T.c.resource_id == resource_id)
    if tag is not None:
        stmt = stmt.where(T.c.tag == tag)
    return conn.execute(stmt).rowcount
