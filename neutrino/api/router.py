"""The URL map: ``/`` versions, ``/v2.0`` the API, resources by collection name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from neutrino import exceptions as exc
from neutrino.api.controller import ResourceController, method_not_allowed
from neutrino.api.request import Request, Response
from neutrino.definitions.base import Extension

Handler = Callable[..., Response]
CORE_COLLECTIONS = ("networks", "subnets", "subnetpools", "ports")


class PathController(Protocol):
    """What serves a path of its own (``/v2.0/<path>/...``), outside the
    generic controller: the rest of the path is its to read."""

    def dispatch(self, req: Request, rest: list[str]) -> Response: ...


class Router:
    def __init__(self, controllers: dict[str, ResourceController],
                 extensions: list[Extension], tags: Any, quotas: Any | None,
                 scheduler: Any | None = None,
                 paths: Mapping[str, PathController] | None = None,
                 pages: Mapping[str, PathController] | None = None):
        self.controllers = controllers
        #: the paths services put their resources under (``fwaas``, ``metering``)
        self.prefixes = {c.resource.prefix for c in controllers.values() if c.resource.prefix}
        self.scheduler = scheduler
        self.extensions = {e.alias: e for e in extensions}
        self.tags = tags
        self.quotas = quotas
        #: ``auto-allocated-topology`` -> its controller
        self.paths = dict(paths or {})
        #: what is served beside ``/v2.0``: ``metrics`` -> its controller
        self.pages = dict(pages or {})

    def dispatch(self, req: Request) -> Response:
        path = req.path
        if path.endswith(".json"):
            path = path[:-5]
        if "\x00" in path:
            raise exc.HTTPNotFound()  # no resource has such a name, and PostgreSQL can't ask
        parts = [p for p in path.split("/") if p]
        if not parts:
            return self._only(req, "GET", self.versions)
        if parts[0] in self.pages:
            return self.pages[parts[0]].dispatch(req, parts[1:])
        if parts[0] != "v2.0":
            raise exc.HTTPNotFound()
        if len(parts) == 1:
            if not req.path.endswith("/"):
                raise exc.HTTPNotFound()  # Neutron serves the resource list at /v2.0/ only
            return self._only(req, "GET", self.resources)
        collection, rest = parts[1], parts[2:]
        if collection == "extensions":
            return self._extensions(req, rest)
        if collection == "quotas" and self.quotas is not None:
            return self.quotas.dispatch(req, rest)
        if collection in self.paths:
            return self.paths[collection].dispatch(req, rest)
        if collection in self.prefixes and rest:
            collection, rest = f"{collection}/{rest[0]}", rest[1:]
        controller = self.controllers.get(collection)
        if controller is None:
            raise exc.HTTPNotFound()
        if len(rest) >= 2 and rest[1] == "tags" and controller.resource.taggable:
            if len(rest) > 3:
                raise exc.HTTPNotFound()
            return self.tags.dispatch(req, controller, rest[0], rest[2] if len(rest) == 3
                                      else None)
        if len(rest) >= 2 and self.scheduler and self.scheduler.serves(collection, rest[1]):
            return self.scheduler.dispatch(req, collection, rest[0], rest[1], rest[2:])
        if len(rest) >= 2 and f"{collection}/{rest[1]}" in self.controllers:
            sub = self.controllers[f"{collection}/{rest[1]}"]
            return self._resource(req, sub, rest[2:], parent=rest[0])
        return self._resource(req, controller, rest)

    @staticmethod
    def _resource(req: Request, controller: ResourceController, rest: list[str],
                  parent: str | None = None) -> Response:
        """``[]`` the collection, ``[id]`` one item, ``[id, action]`` a member action."""
        method = req.method
        if not rest:
            if method == "GET":
                return controller.index(req, parent)
            if method == "POST":
                return controller.create(req, parent)
            if method in ("PUT", "DELETE"):
                raise controller.no_item(req)
            raise method_not_allowed(req)
        item_id = rest[0]
        if len(rest) == 1:
            if method == "GET":
                return controller.show(req, item_id, parent)
            if method == "PUT":
                return controller.update(req, item_id, parent)
            if method == "DELETE":
                return controller.delete(req, item_id, parent)
            raise method_not_allowed(req)
        if len(rest) == 2 and rest[1] in controller.resource.member_actions:
            if method != "PUT":
                raise method_not_allowed(req)
            return controller.action(req, item_id, rest[1], parent)
        if len(rest) == 2 and rest[1] in controller.resource.member_reads:
            if method != "GET":
                raise method_not_allowed(req)
            return controller.action(req, item_id, rest[1], parent)
        raise exc.HTTPNotFound()

    @staticmethod
    def _only(req: Request, method: str, handler: Callable[[Request], Response]) -> Response:
        if req.method != method:
            raise method_not_allowed(req)
        return handler(req)

    def versions(self, req: Request) -> Response:
        return Response(200, {"versions": [{
            "id": "v2.0", "status": "CURRENT",
            "links": [{"rel": "self", "href": f"{req.base_url}/v2.0/"}]}]})

    def resources(self, req: Request) -> Response:
        """The core resources, in Neutron's order; extensions are not listed here."""
        return Response(200, {"resources": [
            {"name": self.controllers[name].resource.name, "collection": name,
             "links": [{"rel": "self", "href": f"{req.base_url}/v2.0/{name}"}]}
            for name in CORE_COLLECTIONS if name in self.controllers]})

    def _extensions(self, req: Request, rest: list[str]) -> Response:
        if req.method != "GET":
            raise exc.HTTPNotFound()
        if not rest:
            return Response(200, {"extensions": [e.as_dict() for e in self.extensions.values()]})
        ext = self.extensions.get(rest[0])
        if ext is None or len(rest) > 1:
            raise exc.HTTPNotFound(message=f"Extension with alias {rest[0]} does not exist")
        return Response(200, {"extension": ext.as_dict()})
