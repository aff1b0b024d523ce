"""``/{collection}/{id}/tags[/{tag}]`` for every taggable resource."""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.api.policy import Policy
from neutrino.api.request import Request, Response
from neutrino.db import tags as tag_store
from neutrino.db.engine import Database
from neutrino.db.util import bump
from neutrino.definitions import validators as v
from neutrino.definitions.tagging import MAX_TAG_LEN, MAX_TAGS


def _check_tag(tag: Any) -> str:
    error = v.string(MAX_TAG_LEN)(tag)
    if error:
        raise exc.InvalidInput(error_message=error)
    return tag


def _check_body(body: dict[str, Any]) -> list[str]:
    """A list of unique strings of at most 255 characters; duplicates are named first."""
    if "tags" not in body:
        raise exc.InvalidInput(error_message="Invalid tags body")
    tags = body["tags"]
    if not isinstance(tags, list):
        raise exc.InvalidInput(error_message=f"'{tags}' is not a list")
    dups: list[Any] = []
    for i, tag in enumerate(tags):
        if tag in tags[:i] and tag not in dups:
            dups.append(tag)
    if dups:
        raise exc.InvalidInput(error_message="Duplicate items in the list: "
                                             f"'{', '.join(str(d) for d in dups)}'")
    for tag in tags:
        _check_tag(tag)
    return tags


def _check_count(tags: Any, collection: str) -> None:
    if len(set(tags)) > MAX_TAGS:
        raise exc.BadRequest(resource=collection, msg="The number of tags exceed the "
                             f"per-resource limit of {MAX_TAGS}")


class TagsController:
    def __init__(self, db: Database, tables: dict[str, Any], policy: Policy):
        self.db = db
        self.tables = tables
        self.policy = policy

    def dispatch(self, req: Request, controller: Any, item_id: str, tag: str | None
                 ) -> Response:
        ctx = req.context
        resource = controller.resource
        collection = resource.collection
        if tag is not None:
            _check_tag(tag)
        if req.method == "POST" and tag is not None:
            raise exc.HTTPMethodNotAllowed()
        new = (_check_body(req.json()) if req.method in ("PUT", "POST") and tag is None
               else None)
        item = controller._get_one(ctx, item_id)  # 404 when not visible
        if req.method == "GET":
            if tag is None:
                return Response(200, {"tags": item["tags"]})
            if tag not in item["tags"]:
                raise exc.TagNotFound(tag=tag)
            return Response(204)
        if req.method not in ("PUT", "DELETE", "POST"):
            raise exc.HTTPMethodNotAllowed()
        verb = {"PUT": "update", "POST": "create"}.get(req.method, "delete")
        action = f"{verb}_{resource.name}:tags"
        rule = action if action in self.policy.rules else "update_tags"
        if not ctx.is_admin and not self.policy.allows(rule, ctx, item):
            raise exc.PolicyNotAuthorized(action=action)
        table = self.tables[collection]
        if new is not None and req.method == "POST":
            # tag-creation: the tags are added to those the resource has; Neutron
            # answers 200 with the body it was given.
            _check_count(new, collection)

            def add_all(conn):
                current = tag_store.of(conn, item_id)
                if set(new) - set(current):
                    tag_store.replace(conn, item_id, [*current, *(
                        t for t in new if t not in current)])
                    bump(conn, table, item_id)

            self.db.write(add_all)
            return Response(200, {"tags": new})
        if new is not None:
            _check_count(new, collection)

            def replace(conn):
                if set(tag_store.of(conn, item_id)) != set(new):
                    tag_store.replace(conn, item_id, new)
                    bump(conn, table, item_id)

            self.db.write(replace)
            return Response(200, {"tags": new})
        if req.method == "PUT":
            def add(conn):
                current = tag_store.of(conn, item_id)
                if tag in current:
                    return
                _check_count([*current, tag], collection)
                tag_store.add(conn, item_id, tag)
                bump(conn, table, item_id)

            self.db.write(add)
            return Response(201)

        def remove(conn):
            removed = tag_store.remove(conn, item_id, tag)
            if removed == 0 and tag is not None:
                raise exc.TagNotFound(tag=tag)
            if removed:
                bump(conn, table, item_id)

        self.db.write(remove)
        return Response(204)
