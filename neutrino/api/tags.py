"""``/{collection}/{id}/tags[/{tag}]`` for every taggable resource."""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.api.policy import Policy
from neutrino.api.request import Request, Response
from neutrino.definitions import validators as v
from neutrino.definitions.tagging import MAX_TAG_LEN
from neutrino.plugins.tagging import TagService


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


class TagsController:
    def __init__(self, service: TagService, policy: Policy):
        self.service = service
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
        if new is not None and req.method == "POST":
            # tag-creation: the tags are added to those the resource has; Neutron
            # answers 200 with the body it was given.
            self.service.add_all(collection, item_id, new)
            return Response(200, {"tags": new})
        if new is not None:
            self.service.replace(collection, item_id, new)
            return Response(200, {"tags": new})
        if req.method == "PUT":
            assert tag is not None
            self.service.add(collection, item_id, tag)
            return Response(201)
        self.service.remove(collection, item_id, tag)
        return Response(204)
