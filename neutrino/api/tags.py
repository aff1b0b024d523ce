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


def _check_body(body: dict[str, Any], collection: str) -> list[str]:
    tags = body.get("tags")
    if not isinstance(tags, list):
        raise exc.InvalidInput(error_message="Invalid tags body")
    error = v.unique_list_of(v.string(MAX_TAG_LEN))(tags)
    if error:
        raise exc.InvalidInput(error_message=error)
    if len(tags) > MAX_TAGS:
        raise exc.BadRequest(resource=collection, msg="The number of tags exceed the "
                             f"per-resource limit of {MAX_TAGS}")
    return tags


class TagsController:
    def __init__(self, db: Database, tables: dict[str, Any], policy: Policy):
        self.db = db
        self.tables = tables
        self.policy = policy

    def dispatch(self, req: Request, controller: Any, item_id: str, tag: str | None
                 ) -> Response:
        ctx = req.context
        collection = controller.resource.collection
        item = controller._get_one(ctx, item_id)  # 404 when not visible
        if req.method == "GET":
            if tag is None:
                return Response(200, {"tags": item["tags"]})
            if tag not in item["tags"]:
                raise exc.TagNotFound(tag=tag, resource=controller.resource.name,
                                      resource_id=item_id)
            return Response(204)
        if not ctx.is_admin and not self.policy.allows("update_tags", ctx, item):
            raise exc.PolicyNotAuthorized(action=f"update_{collection}_tags")
        table = self.tables[collection]
        if req.method == "PUT" and tag is None:
            new = _check_body(req.json(), collection)
            self.db.write(lambda conn: (tag_store.replace(conn, item_id, new),
                                        bump(conn, table, item_id)))
            return Response(200, {"tags": new})
        if req.method == "PUT":
            _check_tag(tag)

            def add(conn):
                if len(item["tags"]) >= MAX_TAGS and tag not in item["tags"]:
                    raise exc.BadRequest(resource=collection, msg="The number of tags exceed "
                                         f"the per-resource limit of {MAX_TAGS}")
                if tag_store.add(conn, item_id, tag):
                    bump(conn, table, item_id)

            self.db.write(add)
            return Response(201)
        if req.method == "DELETE":
            def remove(conn):
                if tag_store.remove(conn, item_id, tag) == 0 and tag is not None:
                    raise exc.TagNotFound(tag=tag, resource=controller.resource.name,
                                          resource_id=item_id)
                bump(conn, table, item_id)

            self.db.write(remove)
            return Response(204)
        raise exc.HTTPMethodNotAllowed(method=req.method)
