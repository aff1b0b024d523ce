"""The one generic controller: body checks, policy, plugin call, view.

A request becomes a call on the plugin method ``<action>_<resource>``
(``create_network``, ``get_ports``, ``update_subnet``, ``delete_port``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from neutrino import exceptions as exc
from neutrino.api.policy import Policy
from neutrino.api.query import parse_collection_query
from neutrino.api.request import Request, Response
from neutrino.context import Context
from neutrino.db.query import CollectionQuery
from neutrino.definitions.base import Resource

_IF_MATCH = re.compile(r"^\s*revision_number=(\d+)\s*$")


def bad(msg: str) -> exc.HTTPBadRequest:
    return exc.HTTPBadRequest(msg=msg)


def method_not_allowed(*_: Any) -> exc.HTTPMethodNotAllowed:
    return exc.HTTPMethodNotAllowed()


class ResourceController:
    def __init__(self, resource: Resource, plugin: Any, policy: Policy,
                 max_limit: int | None = None, network_lookup: Callable | None = None,
                 parent_lookup: Callable[[Context, str], dict] | None = None):
        self.resource = resource
        self.plugin = plugin
        self.policy = policy
        self.max_limit = max_limit
        self.network_lookup = network_lookup
        # a sub-resource's parent, read as the caller: 404 when they can't see it
        self.parent_lookup = parent_lookup
        name, collection = resource.plugin_name, resource.collection
        if resource.parent:
            collection = f"{resource.parent[1]}_{collection}"
        self._get_one = getattr(plugin, f"get_{name}")
        self._get_many = getattr(plugin, f"get_{collection}")
        self._create = getattr(plugin, f"create_{name}", None)
        self._create_bulk = getattr(plugin, f"create_{name}_bulk", None)
        self._update = getattr(plugin, f"update_{name}", None)
        self._delete = getattr(plugin, f"delete_{name}", None)
        self.extra_filters = frozenset(getattr(plugin, "extra_filters", {}).get(
            resource.path, ()))
        self.visible = frozenset(a.name for a in resource.attrs.values() if a.visible)
        self.hidden = frozenset(a.name for a in resource.attrs.values() if a.hidden)

    # --- views ---------------------------------------------------------------

    def view(self, item: dict[str, Any], ctx: Context, fields: list[str] | None
             ) -> dict[str, Any]:
        return self.views([item], ctx, fields)[0]

    def views(self, items: list[dict[str, Any]], ctx: Context, fields: list[str] | None
              ) -> list[dict[str, Any]]:
        """What the caller may see of ``items``, which it may change (a plugin's
        views are made for the one answer): a list of thousands copies none."""
        if fields:
            allowed = self.visible if ctx.is_admin else self.visible - self.hidden
            shown = [f for f in dict.fromkeys(fields) if f in allowed]
            return [{f: item[f] for f in shown if f in item} for item in items]
        if not ctx.is_admin:
            for item in items:
                for name in self.hidden:
                    item.pop(name, None)
        return items

    # --- handlers ------------------------------------------------------------

    def _parent(self, ctx: Context, parent: str | None) -> tuple[tuple[str, ...], dict]:
        """The plugin's leading arguments, and the policy target of the parent."""
        if parent is None:
            return (), {}
        owner = self.parent_lookup(ctx, parent) if self.parent_lookup else {}
        return (parent,), {"project_id": owner.get("project_id"),
                           "tenant_id": owner.get("project_id")}

    def _readable(self, ctx: Context, target: dict[str, Any]) -> bool:
        return ctx.is_admin or self.policy.allows(
            f"get_{self.resource.plugin_name}", ctx, target)

    def index(self, req: Request, parent: str | None = None) -> Response:
        ctx = req.context
        args, owner = self._parent(ctx, parent)
        query = parse_collection_query(self.resource, req.query, self.extra_filters,
                                       self.max_limit)
        items = [] if parent and not self._readable(ctx, owner) else self._get_many(
            ctx, *args, query)
        if not ctx.is_admin:  # the get_ rule, item by item, as Neutron filters lists
            items = [item for item in items
                     if self._readable(ctx, {**item, **owner} if owner else item)]
        body: dict[str, Any] = {self.resource.collection: self.views(items, ctx, query.fields)}
        if query.limit is not None:
            body[f"{self.resource.collection}_links"] = self._links(
                req, query, [item["id"] for item in items])
        return Response(200, body)

    @staticmethod
    def _links(req: Request, query: CollectionQuery, ids: list[str]) -> list[dict[str, str]]:
        """Neutron's links: ``next`` unless a short forward page, ``previous``
        unless a short reverse page; the marker always goes last."""
        kept = [(k, val) for k, val in req.query if k != "marker"]
        short = len(ids) < (query.limit or 0)
        links = []
        if not (short and not query.page_reverse):
            params = [(k, val) for k, val in kept if k != "page_reverse"]
            links.append({"rel": "next", "href": req.url(
                req.path, params + ([("marker", ids[-1])] if ids else []))})
        if not (short and query.page_reverse):
            params = [(k, val) for k, val in kept if k != "page_reverse"]
            params += [("marker", ids[0])] if ids else []
            links.append({"rel": "previous", "href": req.url(
                req.path, [*params, ("page_reverse", "True")])})
        return links

    def show(self, req: Request, item_id: str, parent: str | None = None) -> Response:
        ctx = req.context
        args, owner = self._parent(ctx, parent)
        item = self._get_one(ctx, *args, item_id)
        if not self._readable(ctx, {**item, **owner}):
            raise self._not_found(item_id)
        return Response(200, {self.resource.name: self.view(item, req.context, req.fields())})

    def create(self, req: Request, parent: str | None = None) -> Response:
        ctx = req.context
        args, owner = self._parent(ctx, parent)
        if self._create is None:
            raise method_not_allowed()
        body = req.json()
        name, collection = self.resource.name, self.resource.collection
        if self._bulk(body):  # Neutron looks for a bulk body first
            items = body[collection]
            if not items:
                raise bad("Resources required")
            if not isinstance(items, list):
                raise bad("Body contains invalid data")
            if self._create_bulk is None:
                raise bad("Bulk operation not supported")
            # each item may be bare or wrapped: [{"name": ..}] or [{"network": {..}}]
            prepared = [self.prepare_create(ctx, item[name] if isinstance(item, dict)
                                            and name in item else item, owner)
                        for item in items]
            created = self._create_bulk(ctx, *args, prepared)
            return Response(201, {collection: [self.view(c, ctx, req.fields())
                                               for c in created]})
        if name not in body:
            raise bad(f"Unable to find '{name}' in request body")
        created = self._create(ctx, *args, self.prepare_create(ctx, body[name], owner))
        return Response(201, {name: self.view(created, ctx, req.fields())})

    def no_item(self, req: Request) -> Exception:
        """PUT or DELETE on the collection: Neutron checks the body as an update's,
        then looks for the item the URL does not name: the resource's 404."""
        if req.method == "PUT" and req.body:
            body = req.json()
            if isinstance(body, dict) and self.resource.collection in body:
                raise bad("Bulk operation not supported")
            if isinstance(body, dict) and self.resource.name in body:
                self.prepare_update(body[self.resource.name])
        return self._not_found(None)

    def _bulk(self, body: Any) -> bool:
        """A body of many items: under the plural name (a list, where the
        resource's single and plural names are one word)."""
        collection = self.resource.collection
        return isinstance(body, dict) and collection in body and (
            collection != self.resource.name or isinstance(body[collection], list))

    def _update_body(self, req: Request) -> dict[str, Any]:
        body = req.json()
        name = self.resource.name
        if self._bulk(body):
            raise bad("Bulk operation not supported")
        if name not in body:
            raise bad(f"Unable to find '{name}' in request body")
        return self.prepare_update(body[name])

    def update(self, req: Request, item_id: str, parent: str | None = None) -> Response:
        ctx = req.context
        args, owner = self._parent(ctx, parent)
        if self._update is None:
            # Neutron checks the body and finds the item (a 404) before it finds
            # that nothing updates it; then it fails with a 500, here a 405.
            self._update_body(req)
            self._get_one(ctx, *args, item_id)
            raise method_not_allowed()
        data = self._update_body(req)
        name = self.resource.name
        revision = if_match_revision(req)
        if not ctx.is_admin:
            current = {**self._get_one(ctx, *args, item_id), **owner}
            self.authorize("update", ctx, {**current, **data}, data, current)
        updated = self._update(ctx, *args, item_id, data, if_revision=revision)
        return Response(200, {name: self.view(updated, ctx, req.fields())})

    def delete(self, req: Request, item_id: str, parent: str | None = None) -> Response:
        ctx = req.context
        args, owner = self._parent(ctx, parent)
        if self._delete is None:
            raise method_not_allowed()
        if req.body:
            raise bad("Request body is not supported in DELETE.")
        if not ctx.is_admin:
            current = {**self._get_one(ctx, *args, item_id), **owner}
            self.authorize("delete", ctx, current, {}, current)
        self._delete(ctx, *args, item_id, if_revision=if_match_revision(req))
        return Response(204)

    def action(self, req: Request, item_id: str, action: str,
               parent: str | None = None) -> Response:
        """``PUT /<collection>/<id>/<action>``: the body goes to the plugin as it is;
        ``GET /<collection>/<id>/<action>`` (a member read) takes none."""
        ctx = req.context
        args, owner = self._parent(ctx, parent)
        reads = self.resource.member_reads
        body = req.json() if req.body and action not in reads else {}
        if not isinstance(body, dict):
            raise bad("Body contains invalid data")
        if not ctx.is_admin:
            current = {**self._get_one(ctx, *args, item_id), **owner}
            if not self.policy.allows(action, ctx, current):
                raise exc.PolicyNotAuthorized(action=action)
        if action in reads:
            result = getattr(self.plugin, reads[action])(ctx, *args, item_id)
        else:
            method = getattr(self.plugin, self.resource.member_actions[action])
            result = method(ctx, *args, item_id, body)
        return Response(200, result)

    def _not_found(self, item_id: str | None) -> Exception:
        if self.resource.not_found is not None:
            return self.resource.not_found(**{f"{self.resource.name}_id": item_id})
        return exc.HTTPNotFound()

    # --- body preparation ----------------------------------------------------

    def prepare_create(self, ctx: Context, item: Any, owner: dict[str, Any] | None = None
                       ) -> dict[str, Any]:
        if not isinstance(item, dict):
            raise bad(f"Object '{self.resource.name}' contains invalid data")
        data = self.resource.create_body(item)
        if self.resource.projectless and ctx.is_admin and "project_id" in item \
                and item["project_id"] is None and item.get("tenant_id") is None:
            data.pop("tenant_id", None)
            data["project_id"] = None
        else:
            self._fill_project(ctx, data)
        self.authorize("create", ctx, {**data, **(owner or {})}, item, None)
        return data

    def _fill_project(self, ctx: Context, data: dict[str, Any]) -> None:
        if "project_id" not in self.resource.attrs:
            return
        project = data.pop("project_id", None)
        tenant = data.pop("tenant_id", None)
        if project is not None and tenant is not None and project != tenant:
            raise bad("'project_id' and 'tenant_id' do not match")
        given = project if project is not None else tenant
        if given is not None and given != ctx.project_id and not ctx.is_admin:
            raise bad("Specifying 'project_id' other than the authenticated project in "
                      "request is not allowed for the current user.")
        owner = given if given is not None else ctx.project_id
        if owner is None:
            raise bad("Running without keystone AuthN requires that project_id is specified")
        data["project_id"] = owner

    def prepare_update(self, item: Any) -> dict[str, Any]:
        if not isinstance(item, dict):
            raise bad(f"Object '{self.resource.name}' contains invalid data")
        attrs = self.resource.attrs
        unknown = sorted(k for k in item if k not in attrs)
        if unknown:
            raise bad(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
        data = {}
        for key, value in item.items():
            attr = attrs[key]
            if not attr.allow_put:
                raise bad(f"Cannot update read-only attribute {key}")
            data[key] = attr.checked(value)
        return data

    # --- policy --------------------------------------------------------------

    def authorize(self, action: str, ctx: Context, target: dict[str, Any],
                  given: dict[str, Any], current: dict[str, Any] | None) -> None:
        """Check ``<action>_<resource>`` and a rule per attribute the caller set."""
        if ctx.is_admin:
            return
        target = dict(target)
        if self.network_lookup and target.get("network_id"):
            # Read as admin, like Neutron's owner check: a missing network is a
            # 404, another project's private one a 403.
            network = self.network_lookup(target["network_id"])
            target["network:project_id"] = network["project_id"]
            target["network:tenant_id"] = network["project_id"]
        rule = f"{action}_{self.resource.plugin_name}"
        if not self.policy.allows(rule, ctx, target):
            raise exc.PolicyNotAuthorized(action=rule)
        for key, value in given.items():
            field_rule = f"{rule}:{key}"
            if key == "fixed_ips" and isinstance(value, list):
                if any(isinstance(f, dict) and "ip_address" in f for f in value):
                    field_rule = f"{rule}:fixed_ips:ip_address"
            if field_rule == rule or field_rule not in self.policy.rules:
                continue
            if current is not None and current.get(key) == target.get(key):
                continue  # unchanged values need no right to change them
            attr = self.resource.attrs.get(key)
            if current is None and attr is not None and target.get(key) == attr.default:
                continue  # as Neutron: an explicit default is not "set" on create
            if not self.policy.allows(field_rule, ctx, target):
                raise exc.PolicyNotAuthorized(action=field_rule)
        for key, value in given.items():  # rules on keys inside a dict attribute
            for sub in value if isinstance(value, dict) else ():
                sub_rule = f"{rule}:{key}:{sub}"
                if sub_rule in self.policy.rules and not self.policy.allows(
                        sub_rule, ctx, target):
                    raise exc.PolicyNotAuthorized(action=sub_rule)


def if_match_revision(req: Request) -> int | None:
    """The ``revision_number=N`` constraint of an If-Match header; other etags are ignored."""
    header = req.headers.get("if-match")
    if header is None:
        return None
    tags = [t.strip().strip('"') for t in header.split(",")]
    wanted = [t for t in tags if t.startswith("revision_number=")]
    if not wanted:
        return None
    if len(wanted) > 1:
        raise exc.BadRequest(resource="if-match",
                             msg="Multiple revision_number etags are not supported.")
    match = _IF_MATCH.match(wanted[0])
    if not match:
        raise exc.BadRequest(resource="if-match", msg="Revision number etag must be in the "
                                                      "format of revision_number=<int>")
    return int(match.group(1))
