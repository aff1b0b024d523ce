"""The Networking API's metrics: the labels of a request, and ``GET /metrics``.

A request is labelled by the collection it is about (``ports``,
``fwaas/firewall_groups``, ``routers/conntrack_helpers``), its action
(``list``, ``show``, ``create``, ``update``, ``delete``, a member action's
name, ``tags``) and its status. Both are read from the path against what the
Router serves, so the ids, projects and names a path carries never become a
label: what the Router does not know is ``other``.
"""

from __future__ import annotations

from time import perf_counter

from neutrino import exceptions as exc
from neutrino import metrics
from neutrino.api.controller import method_not_allowed
from neutrino.api.policy import Policy
from neutrino.api.request import Request, Response
from neutrino.api.router import Router
from neutrino.config import Opt, OptGroup, parse_bool

PAGE = "metrics"
OTHER = metrics.OTHER
GROUP = OptGroup("DEFAULT", [
    Opt("enable_metrics", parse_bool, True,
        "Serve Prometheus metrics at /metrics (admins only, as the policy rule "
        "get_metrics says) and record the API's requests for it."),
])

#: the action of a request on a collection (no id) and on one item, by method
ON_COLLECTION = {"GET": "list", "POST": "create"}
ON_ITEM = {"GET": "show", "PUT": "update", "DELETE": "delete"}


class RequestLabels:
    """``(resource, action)`` of a request, from the collections ``router`` serves."""

    def __init__(self, router: Router):
        self.collections = set(router.controllers) | set(router.paths)
        self.collections.add("quotas")
        self.pages = set(router.pages)
        #: service prefix -> collection name -> its label (``fwaas`` -> ``firewall_groups``)
        self.prefixed: dict[str, dict[str, str]] = {}
        #: collection -> what follows an id -> its label (sub-resources, scheduling)
        self.below: dict[str, dict[str, str]] = {}
        #: collection -> the member actions and reads of its items
        self.members: dict[str, frozenset[str]] = {}
        for path, controller in router.controllers.items():
            resource = controller.resource
            self.members[path] = frozenset((*resource.member_actions, *resource.member_reads))
            if resource.taggable:
                self.below.setdefault(path, {})["tags"] = path
            prefix = next((p for p in router.prefixes if path.startswith(p + "/")), None)
            if prefix is not None and path.count("/") == 1:
                self.prefixed.setdefault(prefix, {})[path[len(prefix) + 1:]] = path
        for path in router.controllers:
            parent, _, name = path.rpartition("/")
            if parent in router.controllers:
                self.below.setdefault(parent, {})[name] = path
        for parent, name in getattr(router.scheduler, "routes", {}):
            self.below.setdefault(parent, {})[name] = f"{parent}/{name}"

    def __call__(self, method: str, path: str) -> tuple[str, str]:
        parts = path.strip("/").split("/")
        if "" in parts:  # the root, or a path with "//" (which the Router reads as "/")
            parts = [part for part in parts if part]
            if not parts:
                return "versions", "show"
        if parts[-1].endswith(".json"):
            parts[-1] = parts[-1][:-5]
        head = parts[0]
        if head in self.pages:
            return head, ON_ITEM.get(method, OTHER) if len(parts) == 1 else OTHER
        if head != "v2.0":
            return OTHER, OTHER
        if len(parts) == 1:
            return "resources", ON_COLLECTION.get(method, OTHER)
        collection, rest = parts[1], parts[2:]
        if collection == "extensions":
            return collection, _action(method, rest)
        prefixed = self.prefixed.get(collection)
        if prefixed is not None and rest:
            found = prefixed.get(rest[0])
            if found is None:
                return OTHER, OTHER
            collection, rest = found, rest[1:]
        elif collection not in self.collections:
            return OTHER, OTHER
        if len(rest) >= 2:
            below = self.below.get(collection, {}).get(rest[1])
            if below == collection:
                return collection, "tags"
            if below is not None:
                return below, _action(method, rest[2:])
            if len(rest) == 2 and rest[1] in self.members.get(collection, ()):
                return collection, rest[1]
            return collection, OTHER
        return collection, _action(method, rest)


def _action(method: str, rest: list[str]) -> str:
    if not rest:
        return ON_COLLECTION.get(method, OTHER)
    if len(rest) == 1:
        return ON_ITEM.get(method, OTHER)
    return OTHER


class RequestMetrics:
    """What ``ApiApp`` records each request with."""

    def __init__(self, router: Router):
        self.labels = RequestLabels(router)
        self.recorder = metrics.RequestRecorder()

    def record(self, method: str, path: str, status: int, started: float) -> None:
        resource, action = self.labels(method, path)
        self.recorder.record(resource, action, status, perf_counter() - started)


class MetricsPage:
    """``GET /metrics``: the Prometheus text of every process of this server,
    for those the policy rule ``get_metrics`` lets in (admins by default)."""

    def __init__(self, policy: Policy):
        self.policy = policy

    def dispatch(self, req: Request, rest: list[str]) -> Response:
        if rest:
            raise exc.HTTPNotFound()
        if req.method != "GET":
            raise method_not_allowed(req)
        if not self.policy.allows("get_metrics", req.context, {}):
            raise exc.PolicyNotAuthorized(action="get_metrics")
        body, content_type = metrics.exposition()
        return Response(200, body, headers={"content-type": content_type})
