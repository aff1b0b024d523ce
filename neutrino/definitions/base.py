"""The vocabulary of resource definitions: attributes, resources, extensions.

Definitions are data shared by every layer: the API validates and filters
with them, plugins read defaults from them, tests walk them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v


class _Sentinel:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


REQUIRED = _Sentinel("REQUIRED")  # allow_post and no default: the caller must give it
UNSET = _Sentinel("UNSET")  # optional; the plugin decides when absent


@dataclass(frozen=True)
class Attr:
    name: str
    allow_post: bool = False
    allow_put: bool = False
    default: Any = UNSET
    convert: v.Converter | None = None
    validate: v.Validator | None = None
    visible: bool = True
    filter: bool = True
    sort: bool = False
    # Only admins may set it; ``hidden`` also keeps it out of non-admin views.
    admin_only: bool = False
    hidden: bool = False
    # How a query-string value becomes a filter value (defaults to ``convert``).
    convert_filter: v.Converter | None = None
    # What the column holds, checked for every integer given: a value beyond it is a
    # 400 on every database, not an overflow on some.
    int_range: tuple[int, int] = v.INT32
    #: what it accepts as a JSON schema, for the OpenAPI document, where its
    #: validator is one of its own and says nothing
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)

    @property
    def required(self) -> bool:
        return self.allow_post and self.default is REQUIRED

    def filter_value(self, text: str) -> Any:
        conv = self.convert_filter or self.convert
        return conv(text) if conv else text

    def checked(self, value: Any) -> Any:
        """``value`` as the API takes it for this attribute: converted and valid
        (HTTPBadRequest, or the converter's InvalidInput, if not)."""
        if self.convert is not None:
            value = self.convert(value)
        error = self.validate(value) if self.validate is not None else None
        error = error or v.storable_int(self.int_range, value)
        if error:
            raise exc.HTTPBadRequest(msg=f"Invalid input for {self.name}. Reason: {error}.")
        return value


@dataclass(frozen=True)
class Resource:
    name: str
    collection: str
    attrs: dict[str, Attr]
    # (parent collection, parent member name) for sub-resources
    parent: tuple[str, str] | None = None
    # PUT /<collection>/<id>/<action>: action -> the plugin method serving it
    member_actions: dict[str, str] = field(default_factory=dict)
    # GET /<collection>/<id>/<action>: action -> the plugin method serving it
    member_reads: dict[str, str] = field(default_factory=dict)
    taggable: bool = False
    not_found: Any = None  # the NotFound to raise, called with ``<name>_id=``
    # the URL spells the collection with hyphens (security-groups), bodies do not
    hyphenated: bool = False
    # a service's resources under a path of its own (``fwaas/firewall_rules``)
    prefix: str = ""
    # an admin's explicit ``project_id: null`` makes one of no project (a
    # system-wide setting) rather than one of the caller's project
    projectless: bool = False

    @property
    def path(self) -> str:
        """Where the API serves it: ``ports/bindings`` for a sub-resource,
        ``fwaas/firewall_groups`` for a prefixed one."""
        collection = self.collection.replace("_", "-") if self.hyphenated else self.collection
        if self.parent:
            return f"{self.parent[0]}/{collection}"
        return f"{self.prefix}/{collection}" if self.prefix else collection

    @property
    def plugin_name(self) -> str:
        """``binding`` of ``port`` is the plugin's ``..._port_binding``."""
        return f"{self.parent[1]}_{self.name}" if self.parent else self.name

    @property
    def paged(self) -> bool:
        """Pages are keyed by id: a resource without one (floating IP pools,
        availability zones) is listed whole, limit and marker ignored, as in Neutron."""
        return "id" in self.attrs

    def extended(self, extra: dict[str, Attr]) -> Resource:
        return replace(self, attrs={**self.attrs, **extra})

    def create_body(self, item: dict[str, Any]) -> dict[str, Any]:
        """A create's attributes as the API hands them to the plugin (before it
        settles the project and asks the policy): each given one checked, every
        other one a create may give at its default; an attribute a create may
        not give, or a required one missing, is a 400. A plugin that creates
        through another (auto-allocated topologies) gets a user's defaults here."""
        unknown = sorted(k for k in item if k not in self.attrs)
        if unknown:
            raise exc.HTTPBadRequest(msg=f"Unrecognized attribute(s) '{', '.join(unknown)}'")
        for key in item:
            if not self.attrs[key].allow_post:
                raise exc.HTTPBadRequest(msg=f"Attribute '{key}' not allowed in POST")
        data: dict[str, Any] = {}
        for attr in self.attrs.values():
            if not attr.allow_post:
                continue
            if attr.name in item:
                data[attr.name] = attr.checked(item[attr.name])
            elif attr.required:
                raise exc.HTTPBadRequest(msg="Failed to parse request. Required attribute "
                                             f"'{attr.name}' not specified")
            elif attr.default is not UNSET:
                data[attr.name] = attr.default
        return data


@dataclass(frozen=True)
class Extension:
    alias: str
    name: str
    description: str
    updated: str = "2026-01-01T00:00:00-00:00"
    resources: tuple[Resource, ...] = ()
    # collection -> attributes this extension adds to it
    attributes: dict[str, dict[str, Attr]] = field(default_factory=dict)
    required: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "alias": self.alias, "description": self.description,
                "updated": self.updated, "links": []}


def attrs(*items: Attr) -> dict[str, Attr]:
    return {a.name: a for a in items}


def standard_attrs(*, name: bool = True, description: bool = True,
                   tags_on_create: bool = False) -> dict[str, Attr]:
    """id, project/tenant, name, description, tags, timestamps, revision.

    Tags are set through ``/tags``; only ports take them in a create body too
    (``tags_on_create``), as in Neutron."""
    items = [
        Attr("id", validate=v.uuid, sort=True),
        Attr("project_id", allow_post=True, validate=v.project_id, sort=True,
             default=UNSET),
        Attr("tenant_id", allow_post=True, validate=v.project_id, sort=True,
             default=UNSET),
        Attr("tags", allow_post=tags_on_create, validate=v.tag_list, filter=False),
        Attr("created_at", sort=True, filter=False),
        Attr("updated_at", sort=True, filter=False),
        Attr("revision_number", sort=True, convert_filter=v.to_int),
    ]
    if name:
        items.append(Attr("name", allow_post=True, allow_put=True, default="",
                          validate=v.string(255), sort=True))
    if description:
        items.append(Attr("description", allow_post=True, allow_put=True, default="",
                          validate=v.string(255), sort=True))
    return attrs(*items)
