"""Tags of every taggable resource, as ``/{collection}/{id}/tags`` changes them.

Each change is one transaction that also bumps the resource's revision when
the tags really changed. The API's controller checks policy, visibility and
the request's shape; it touches no table.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from neutrino import exceptions as exc
from neutrino.db import tags as tag_store
from neutrino.db.engine import Database
from neutrino.db.util import bump
from neutrino.definitions.tagging import MAX_TAGS


def check_count(tags: Iterable[str], collection: str) -> None:
    if len(set(tags)) > MAX_TAGS:
        raise exc.BadRequest(resource=collection, msg="The number of tags exceed the "
                             f"per-resource limit of {MAX_TAGS}")


class TagService:
    def __init__(self, db: Database, tables: dict[str, Any]):
        self.db = db
        #: collection -> the table whose rows carry the revision
        self.tables = tables

    def add_all(self, collection: str, item_id: str, new: list[str]) -> None:
        """Add ``new`` to the tags the resource has (tag-creation's POST)."""
        check_count(new, collection)

        def work(conn) -> None:
            current = tag_store.of(conn, item_id)
            if set(new) - set(current):
                tag_store.replace(conn, item_id, [*current, *(
                    t for t in new if t not in current)])
                bump(conn, self.tables[collection], item_id)

        self.db.write(work)

    def replace(self, collection: str, item_id: str, new: list[str]) -> None:
        check_count(new, collection)

        def work(conn) -> None:
            if set(tag_store.of(conn, item_id)) != set(new):
                tag_store.replace(conn, item_id, new)
                bump(conn, self.tables[collection], item_id)

        self.db.write(work)

    def add(self, collection: str, item_id: str, tag: str) -> None:
        def work(conn) -> None:
            current = tag_store.of(conn, item_id)
            if tag in current:
                return
            check_count([*current, tag], collection)
            tag_store.add(conn, item_id, tag)
            bump(conn, self.tables[collection], item_id)

        self.db.write(work)

    def remove(self, collection: str, item_id: str, tag: str | None) -> None:
        """One tag (TagNotFound if it is not there), or all of them (``tag`` None)."""
        def work(conn) -> None:
            removed = tag_store.remove(conn, item_id, tag)
            if removed == 0 and tag is not None:
                raise exc.TagNotFound(tag=tag)
            if removed:
                bump(conn, self.tables[collection], item_id)

        self.db.write(work)
