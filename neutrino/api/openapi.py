"""The OpenAPI 3.1 document of the Networking API as this server is configured.

It is made from what serves the requests: the resource definitions of the
loaded plugins (their attributes, validators and defaults), the operations
their plugins offer, the extensions claimed and the other controllers the
router holds; so it cannot drift from the API. Served at
``/v2.0/openapi.json``, built once on first ask.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from neutrino import exceptions as exc
from neutrino.api.controller import ResourceController
from neutrino.api.request import Request, Response
from neutrino.definitions import auto_allocated_topology
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, UNSET, Attr

if TYPE_CHECKING:
    from neutrino.api.router import Router

Schema = dict[str, Any]
VERSION = "2.0"
ERROR = {"$ref": "#/components/responses/Error"}
UUID: Schema = {"type": "string", "format": "uuid"}
STRING: Schema = {"type": "string"}
STRINGS: Schema = {"type": "array", "items": STRING}
ANY_OBJECT: Schema = {"type": "object"}

#: what the validators that are plain functions accept
NAMED: dict[Callable[..., Any], Schema] = {
    v.uuid: UUID,
    v.uuid_or_none: {"anyOf": [UUID, {"type": "null"}]},
    v.uuid_list: {"type": "array", "items": UUID, "uniqueItems": True},
    v.project_id: {"type": "string", "maxLength": 255},
    v.boolean: {"type": "boolean"},
    v.non_negative: {"type": "integer", "minimum": 0},
    v.non_negative_or_none: {"type": ["integer", "null"], "minimum": 0},
    v.ip_address: STRING,
    v.ip_address_or_none: {"type": ["string", "null"]},
    v.subnet_cidr: STRING,
    v.subnet_cidr_or_none: {"type": ["string", "null"]},
    v.subnet_cidr_list: {"type": "array", "items": STRING, "uniqueItems": True},
    v.route_cidr: STRING,
    v.mac_address: STRING,
    v.dict_or_none: {"type": ["object", "null"]},
    v.tag_list: {"type": "array", "items": {"type": "string", "maxLength": 255},
                 "maxItems": v.MAX_TAGS, "uniqueItems": True},
    v.nameservers: STRINGS,
    v.ip_pools: {"type": "array", "items": {
        "type": "object", "properties": {"start": STRING, "end": STRING},
        "required": ["start", "end"]}},
    v.hostroutes: {"type": "array", "items": {
        "type": "object", "properties": {"destination": STRING, "nexthop": STRING},
        "required": ["destination", "nexthop"]}},
    v.fixed_ips: {"type": "array", "items": {
        "type": "object", "properties": {"subnet_id": UUID, "ip_address": STRING}}},
}
#: what a converter alone says of a value's type
CONVERTED: dict[Callable[..., Any], Schema] = {
    v.to_boolean: {"type": "boolean"},
    v.to_int: {"type": "integer"},
    v.to_int_or_none: {"type": ["integer", "null"]},
}
#: attributes no client sets, by name: the standard ones every resource has
READ_ONLY: dict[str, Schema] = {
    "created_at": {"type": "string", "format": "date-time"},
    "updated_at": {"type": "string", "format": "date-time"},
    "revision_number": {"type": "integer"},
    "tags": STRINGS,
    "status": STRING,
}
DEFAULT_TYPES = {bool: "boolean", int: "integer", str: "string", list: "array",
                 dict: "object"}


def value_schema(attr: Attr) -> Schema:
    """What ``attr`` accepts, as far as its validator, converter, name or
    default say; ``{}`` (anything) where they say nothing."""
    check = attr.validate
    if attr.schema is not None:
        return dict(attr.schema)
    if isinstance(check, v.Described):
        return dict(check.schema)
    if check in NAMED:
        return dict(NAMED[check])
    if attr.convert in CONVERTED:
        return dict(CONVERTED[attr.convert])
    if attr.name in READ_ONLY:
        return dict(READ_ONLY[attr.name])
    kind = DEFAULT_TYPES.get(type(attr.default))
    return {"type": kind} if kind else {}


def nullable(schema: Schema) -> Schema:
    """``schema`` or null: what a response may hold where the plugin has no value."""
    kind = schema.get("type")
    if not schema or {"type": "null"} in schema.get("anyOf", ()) or (
            isinstance(kind, list) and "null" in kind):
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def _described(schema: Schema, attr: Attr) -> Schema:
    notes = []
    if attr.admin_only:
        notes.append("only an admin may set it")
    if attr.hidden:
        notes.append("only an admin sees it")
    if attr.default is not UNSET and attr.default is not REQUIRED \
            and _json_value(attr.default):
        schema["default"] = attr.default
    if notes:
        schema["description"] = "; ".join(notes).capitalize() + "."
    if attr.admin_only:
        schema["x-admin-only"] = True
    return schema


def _json_value(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, str, list, dict))


class DocumentBuilder:
    """Walks what the router serves into an OpenAPI document."""

    def __init__(self, router: Router, auth_strategy: str):
        self.router = router
        self.auth_strategy = auth_strategy
        self.paths: dict[str, dict[str, Any]] = {}
        self.schemas: dict[str, Schema] = {}

    def build(self) -> dict[str, Any]:
        router = self.router
        self._versions()
        for path, controller in sorted(router.controllers.items()):
            self._resource(path, controller)
        self._extensions()
        if router.quotas is not None:
            self._quotas()
        for (parent, name), (url, _) in (router.scheduler.routes.items()
                                         if router.scheduler else ()):
            self._scheduled(parent, name, url.collection, url.writes is not None)
        if auto_allocated_topology.PATH in router.paths:
            self._auto_allocated()
        document: dict[str, Any] = {
            "openapi": "3.1.0",
            "info": {"title": "OpenStack Networking API (neutrino)", "version": VERSION,
                     "description": "The Networking API v2.0 as this server is configured: "
                                    "its loaded plugins and extensions."},
            "paths": self.paths,
            "components": {
                "schemas": {"NeutronError": _ERROR_SCHEMA, **self.schemas},
                "responses": {"Error": {
                    "description": "The request failed; the body names the problem.",
                    "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/NeutronError"}}}}},
                "parameters": _LIST_PARAMETERS,
            },
        }
        if self.auth_strategy == "keystone":
            document["components"]["securitySchemes"] = {"keystone": {
                "type": "apiKey", "in": "header", "name": "X-Auth-Token",
                "description": "A keystone token."}}
            document["security"] = [{"keystone": []}]
        return document

    # --- the resources ---------------------------------------------------------------

    def _resource(self, path: str, controller: ResourceController) -> None:
        resource = controller.resource
        name = _schema_name(resource.path)
        self.schemas[name] = self._view(controller)
        item_ref = {"$ref": f"#/components/schemas/{name}"}
        collection = resource.collection
        prefix = f"/v2.0/{path}"
        parameters = []
        if resource.parent:
            parent_path, tail = path.rsplit("/", 1)
            member = resource.parent[1]
            prefix = f"/v2.0/{parent_path}/{{{member}_id}}/{tail}"
            parameters = [_path_parameter(f"{member}_id")]
        operations: dict[str, Any] = {"get": {
            "operationId": f"list_{_op(path)}", "summary": f"List {collection}",
            "parameters": [*self._filters(controller), *_LIST_REFS],
            "responses": _responses("200", {
                "type": "object", "required": [collection],
                "properties": {collection: {"type": "array", "items": item_ref},
                               f"{collection}_links": _LINKS}})}}
        if controller._create is not None:
            one = self._body(controller, "create")
            request: Schema = {"type": "object", "required": [resource.name],
                               "properties": {resource.name: one}}
            if controller._create_bulk is not None:
                request = {"anyOf": [request, {
                    "type": "object", "required": [collection],
                    "properties": {collection: {"type": "array", "items": one,
                                                "minItems": 1}}}]}
            many = {"type": "array", "items": item_ref}
            created = ({resource.name: {"anyOf": [item_ref, many]}}
                       if collection == resource.name  # one word for both: either
                       else {resource.name: item_ref, collection: many})
            operations["post"] = {
                "operationId": f"create_{_op(path)}", "summary": f"Create a {resource.name}",
                "requestBody": _json_body(request),
                "responses": _responses("201", {"type": "object", "properties": created})}
        self.paths[prefix] = {"parameters": parameters, **operations} if parameters \
            else operations
        if "id" not in resource.attrs:
            return  # listed whole, never one by one (floating IP pools)
        item_path = f"{prefix}/{{id}}"
        item: dict[str, Any] = {"parameters": [*parameters, _path_parameter("id")], "get": {
            "operationId": f"show_{_op(path)}", "summary": f"Show a {resource.name}",
            "parameters": [_FIELDS_REF],
            "responses": _responses("200", _wrapped(resource.name, item_ref))}}
        if controller._update is not None:
            item["put"] = {
                "operationId": f"update_{_op(path)}", "summary": f"Update a {resource.name}",
                "parameters": [_IF_MATCH],
                "requestBody": _json_body({"type": "object", "required": [resource.name],
                                           "properties": {resource.name: self._body(
                                               controller, "update")}}),
                "responses": _responses("200", _wrapped(resource.name, item_ref), "412")}
        if controller._delete is not None:
            item["delete"] = {
                "operationId": f"delete_{_op(path)}", "summary": f"Delete a {resource.name}",
                "parameters": [_IF_MATCH], "responses": _responses("204", None, "412")}
        self.paths[item_path] = item
        for action in resource.member_actions:
            self.paths[f"{item_path}/{action}"] = {
                "parameters": item["parameters"], "put": {
                    "operationId": f"{action}_{_op(path)}",
                    "summary": f"{action.replace('_', ' ').capitalize()} ({resource.name})",
                    "requestBody": _json_body(ANY_OBJECT),
                    "responses": _responses("200", ANY_OBJECT)}}
        for action in resource.member_reads:
            self.paths[f"{item_path}/{action}"] = {
                "parameters": item["parameters"], "get": {
                    "operationId": f"{action}_{_op(path)}",
                    "summary": f"{action.replace('_', ' ').capitalize()} ({resource.name})",
                    "responses": _responses("200", ANY_OBJECT)}}
        if resource.taggable and self.router.tags is not None:
            self._tags(item_path, path)
        if "post" in operations:
            self._link(operations["post"], item_path, resource.name, parameters)

    def _link(self, create: dict[str, Any], item_path: str, name: str,
              parameters: list[Schema]) -> None:
        """What a create's answer leads to (its item, actions and tags), as
        OpenAPI links: a client or a fuzzer can follow the id it made."""
        given = {"id": f"$response.body#/{name}/id"}
        for parameter in parameters:  # the parent's id, as the create's path had it
            given[parameter["name"]] = f"$request.path.{parameter['name']}"
        links = {}
        for path, operations in self.paths.items():
            if path != item_path and not path.startswith(f"{item_path}/") or "{tag}" in path:
                continue
            for method, operation in operations.items():
                if method != "parameters":
                    links[operation["operationId"]] = {
                        "operationId": operation["operationId"], "parameters": given}
        create["responses"]["201"]["links"] = links

    def _view(self, controller: ResourceController) -> Schema:
        """A resource as answers show it: every visible attribute, none
        required (``fields`` picks), typed, null where no value was set."""
        properties = {}
        for attr in controller.resource.attrs.values():
            if not attr.visible:
                continue
            schema = value_schema(attr)
            if attr.name != "id":
                schema = nullable(schema)
            if not (attr.allow_post or attr.allow_put):
                schema = {**schema, "readOnly": True}
            properties[attr.name] = _described(schema, attr)
        return {"type": "object", "properties": properties, "additionalProperties": False}

    @staticmethod
    def _body(controller: ResourceController, action: str) -> Schema:
        """The attributes a create or an update may give."""
        attrs = controller.resource.attrs.values()
        given = [a for a in attrs if (a.allow_post if action == "create" else a.allow_put)]
        body: Schema = {"type": "object", "additionalProperties": False,
                        "properties": {a.name: _described(value_schema(a), a) for a in given}}
        required = [a.name for a in given if action == "create" and a.required]
        if required:
            body["required"] = required
        return body

    @staticmethod
    def _filters(controller: ResourceController) -> list[Schema]:
        found = []
        for attr in controller.resource.attrs.values():
            if not attr.filter or not attr.visible:
                continue
            found.append({"name": attr.name, "in": "query", "required": False,
                          "style": "form", "explode": True,
                          "description": "Only the items with one of these values.",
                          "schema": {"type": "array", "items": STRING}})
        for name in sorted(controller.extra_filters - {f["name"] for f in found}):
            found.append({"name": name, "in": "query", "required": False,
                          "schema": {"type": "array", "items": STRING}})
        return found

    def _tags(self, item_path: str, path: str) -> None:
        tags = {"type": "object", "required": ["tags"], "properties": {"tags": NAMED[
            v.tag_list]}}
        parameters = self.paths[item_path]["parameters"]
        self.paths[f"{item_path}/tags"] = {
            "parameters": parameters,
            "get": {"operationId": f"list_tags_{_op(path)}", "summary": "Its tags",
                    "responses": _responses("200", tags)},
            "put": {"operationId": f"replace_tags_{_op(path)}", "summary": "Replace its tags",
                    "requestBody": _json_body(tags), "responses": _responses("200", tags)},
            "post": {"operationId": f"add_tags_{_op(path)}", "summary": "Add tags",
                     "requestBody": _json_body(tags), "responses": _responses("200", tags)},
            "delete": {"operationId": f"remove_tags_{_op(path)}", "summary": "Remove its tags",
                       "responses": _responses("204", None)}}
        tag = {"name": "tag", "in": "path", "required": True,
               "schema": {"type": "string", "maxLength": 255}}
        self.paths[f"{item_path}/tags/{{tag}}"] = {
            "parameters": [*parameters, tag],
            "get": {"operationId": f"check_tag_{_op(path)}", "summary": "Whether it has a tag",
                    "responses": _responses("204", None)},
            "put": {"operationId": f"add_tag_{_op(path)}", "summary": "Add a tag",
                    "responses": _responses("201", None)},
            "delete": {"operationId": f"remove_tag_{_op(path)}", "summary": "Remove a tag",
                       "responses": _responses("204", None)}}

    # --- the rest of the URL map -----------------------------------------------------

    def _versions(self) -> None:
        version = {"type": "object", "properties": {
            "id": STRING, "status": STRING, "links": _LINKS}}
        self.paths["/"] = {"get": {
            "operationId": "list_versions", "summary": "The API's versions", "security": [],
            "responses": {"200": _content("The versions", {
                "type": "object", "required": ["versions"],
                "properties": {"versions": {"type": "array", "items": version}}})}}}
        self.paths["/v2.0/"] = {"get": {
            "operationId": "list_resources", "summary": "The core resources",
            "responses": _responses("200", {"type": "object", "properties": {
                "resources": {"type": "array", "items": ANY_OBJECT}}})}}

    def _extensions(self) -> None:
        extension = {"type": "object", "required": ["alias", "name"], "properties": {
            "alias": STRING, "name": STRING, "description": STRING, "updated": STRING,
            "links": {"type": "array"}}}
        aliases = sorted(self.router.extensions)
        self.paths["/v2.0/extensions"] = {"get": {
            "operationId": "list_extensions", "summary": "The extensions served",
            "responses": _responses("200", {"type": "object", "properties": {
                "extensions": {"type": "array", "items": extension}}})}}
        self.paths["/v2.0/extensions/{alias}"] = {
            "parameters": [{"name": "alias", "in": "path", "required": True,
                            "schema": {"type": "string", "examples": aliases[:3]}}],
            "get": {"operationId": "show_extension", "summary": "One extension",
                    "responses": _responses("200", _wrapped("extension", extension))}}

    def _quotas(self) -> None:
        limits = {"type": "object", "additionalProperties": {"type": "integer"}}
        project = [_path_parameter("project_id", STRING)]
        quota = _wrapped("quota", limits)
        self.paths["/v2.0/quotas"] = {
            "get": {"operationId": "list_quotas", "summary": "Every project's quotas set",
                    "responses": _responses("200", {"type": "object", "properties": {
                        "quotas": {"type": "array", "items": ANY_OBJECT}}})},
            # Neutron's answer to a create of quotas: none are made, they are set
            "post": {"operationId": "create_quota", "summary": "Not offered (as in Neutron)",
                     "responses": {"501": ERROR, **{code: ERROR for code in COMMON_ERRORS}}}}
        self.paths["/v2.0/quotas/{project_id}"] = {
            "parameters": project,
            "get": {"operationId": "show_quota", "summary": "A project's quotas",
                    "responses": _responses("200", quota)},
            "put": {"operationId": "update_quota", "summary": "Set a project's quotas",
                    "requestBody": _json_body(_wrapped("quota", {
                        "type": "object", "additionalProperties": {"type": "integer"}})),
                    "responses": _responses("200", quota)},
            "delete": {"operationId": "delete_quota", "summary": "Back to the defaults",
                       "responses": _responses("204", None)}}
        for tail, summary in (("default", "The default quotas"),
                              ("details", "Used, reserved and limit")):
            self.paths[f"/v2.0/quotas/{{project_id}}/{tail}"] = {
                "parameters": project, "get": {
                    "operationId": f"show_quota_{tail}", "summary": summary,
                    "responses": _responses("200", _wrapped("quota", ANY_OBJECT))}}

    def _scheduled(self, parent: str, name: str, collection: str, writes: bool) -> None:
        base = f"/v2.0/{parent}/{{id}}/{name}"
        listed = {"type": "object", "properties": {
            collection: {"type": "array", "items": ANY_OBJECT}}}
        operations: dict[str, Any] = {
            "parameters": [_path_parameter("id")],
            "get": {"operationId": f"list_{_op(name)}_of_{parent}",
                    "summary": f"The {collection} of one of the {parent}",
                    "parameters": [_FIELDS_REF], "responses": _responses("200", listed)}}
        if writes:
            operations["post"] = {
                "operationId": f"add_to_{_op(name)}_of_{parent}",
                "summary": f"Schedule to one of the {parent}",
                "requestBody": _json_body(ANY_OBJECT),
                "responses": _responses("201", {"type": "null"})}
            self.paths[f"{base}/{{member_id}}"] = {
                "parameters": [_path_parameter("id"), _path_parameter("member_id")],
                "delete": {"operationId": f"remove_from_{_op(name)}_of_{parent}",
                           "summary": f"Unschedule from one of the {parent}",
                           "responses": _responses("204", None)}}
        self.paths[base] = operations

    def _auto_allocated(self) -> None:
        self.paths[f"/v2.0/{auto_allocated_topology.PATH}/{{project_id}}"] = {
            "parameters": [_path_parameter("project_id")],
            "get": {"operationId": "show_auto_allocated_topology",
                    "summary": "The project's topology, made if it has none",
                    "responses": _responses("200", _wrapped(
                        auto_allocated_topology.NAME, ANY_OBJECT))},
            "delete": {"operationId": "delete_auto_allocated_topology",
                       "summary": "Take the project's topology apart",
                       "responses": _responses("204", None)}}


def _op(path: str) -> str:
    return path.replace("/", "_").replace("-", "_")


def _schema_name(path: str) -> str:
    return "".join(part.capitalize() for part in _op(path).split("_"))


def _wrapped(key: str, schema: Schema) -> Schema:
    return {"type": "object", "required": [key], "properties": {key: schema}}


def _path_parameter(name: str, schema: Schema = STRING) -> Schema:
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _json_body(schema: Schema) -> Schema:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _content(description: str, schema: Schema) -> Schema:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


#: the errors any request may meet: a bad request, no or a bad token, a policy
#: that says no, a missing resource or one not visible, a conflict, a wrong method
COMMON_ERRORS = ("400", "401", "403", "404", "405", "409")


def _responses(status: str, schema: Schema | None, *errors: str) -> dict[str, Any]:
    ok = ({"description": "Done, nothing to say."} if schema is None
          else _content("Done.", schema))
    return {status: ok, **{code: ERROR for code in (*COMMON_ERRORS, *errors)}}


_ERROR_SCHEMA: Schema = {
    "type": "object", "required": ["NeutronError"],
    "properties": {"NeutronError": {
        "type": "object", "required": ["type", "message"],
        "properties": {"type": STRING, "message": STRING, "detail": STRING}}}}
_LINKS: Schema = {"type": "array", "items": {
    "type": "object", "properties": {"rel": STRING, "href": STRING}}}
_LIST_PARAMETERS: dict[str, Schema] = {
    "fields": {"name": "fields", "in": "query", "required": False, "style": "form",
               "explode": True, "description": "Only these attributes in the answer.",
               "schema": {"type": "array", "items": STRING}},
    "sort_key": {"name": "sort_key", "in": "query", "required": False, "style": "form",
                 "explode": True, "schema": {"type": "array", "items": STRING}},
    "sort_dir": {"name": "sort_dir", "in": "query", "required": False, "style": "form",
                 "explode": True,
                 "schema": {"type": "array", "items": {"enum": ["asc", "desc"]}}},
    "limit": {"name": "limit", "in": "query", "required": False,
              "schema": {"type": "integer"}},
    "marker": {"name": "marker", "in": "query", "required": False, "schema": UUID},
    "page_reverse": {"name": "page_reverse", "in": "query", "required": False,
                     "schema": {"type": "boolean"}},
}
_LIST_REFS = [{"$ref": f"#/components/parameters/{name}"} for name in _LIST_PARAMETERS]
_FIELDS_REF = {"$ref": "#/components/parameters/fields"}
_IF_MATCH: Schema = {"name": "If-Match", "in": "header", "required": False,
                     "description": "revision_number=<n>: only if the resource is at it.",
                     "schema": {"type": "string"}}


class OpenApiController:
    """``GET /v2.0/openapi.json``: the document, made on first ask (the router
    strips ``.json``)."""

    def __init__(self, build: Callable[[], dict[str, Any]]):
        self.build = build
        self.document: dict[str, Any] | None = None

    def dispatch(self, req: Request, rest: list[str]) -> Response:
        if rest:
            raise exc.HTTPNotFound()
        if req.method != "GET":
            raise exc.HTTPMethodNotAllowed()
        if self.document is None:
            self.document = self.build()
        return Response(200, self.document)
