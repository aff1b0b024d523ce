"""Query strings of collection requests -> ``CollectionQuery``."""

from __future__ import annotations

from collections.abc import Iterable

from neutrino import exceptions as exc
from neutrino.db.query import CollectionQuery
from neutrino.definitions.base import Resource
from neutrino.definitions.tagging import TAG_FILTERS

RESERVED = {"fields", "sort_key", "sort_dir", "limit", "marker", "page_reverse"}


def _bad(msg: str) -> exc.HTTPBadRequest:
    return exc.HTTPBadRequest(msg=msg)


def parse_collection_query(resource: Resource, params: Iterable[tuple[str, str]],
                           extra_filters: frozenset[str] = frozenset(),
                           max_limit: int | None = None) -> CollectionQuery:
    """Parse and check every parameter; anything unknown is a 400 (filter-validation).

    ``extra_filters`` are names a plugin accepts beyond the resource's
    attributes (``fixed_ips`` on ports, say); their raw strings pass through.
    """
    query = CollectionQuery()
    sort_keys: list[str] = []
    sort_dirs: list[str] = []
    fields: list[str] = []
    limit_text = None
    for key, value in params:
        if key == "fields":
            if value:
                fields.append(value)
        elif key == "sort_key":
            sort_keys.append(value)
        elif key == "sort_dir":
            sort_dirs.append(value)
        elif key == "limit":
            limit_text = value
        elif key == "marker":
            query.marker = value
        elif key == "page_reverse":
            query.page_reverse = value.lower() == "true"
        elif key in TAG_FILTERS and resource.taggable:
            query.tag_filters.setdefault(key, []).extend(t for t in value.split(",") if t)
        elif key in extra_filters:
            query.filters.setdefault(key, []).append(value)
        else:
            attr = resource.attrs.get(key)
            if attr is None or not attr.filter or not attr.visible:
                raise _bad(f"{[key]} is invalid attribute for filtering")
            query.filters.setdefault(key, []).append(attr.filter_value(value))
    if fields:
        query.fields = fields
    query.sorts = _sorts(resource, sort_keys, sort_dirs)
    if all(name != "id" for name, _ in query.sorts):
        query.sorts.append(("id", True))  # Neutron's order: id breaks ties, and is the default
    query.limit = _limit(limit_text, max_limit)
    return query


def _sorts(resource: Resource, keys: list[str], dirs: list[str]) -> list[tuple[str, bool]]:
    if dirs and len(dirs) != len(keys):
        raise _bad("The number of sort_keys and sort_dirs must be same")
    sorts = []
    for i, key in enumerate(keys):
        attr = resource.attrs.get(key)
        if attr is None or not attr.sort:
            raise _bad(f"{[key]} is invalid attribute for sort_keys")
        direction = dirs[i] if dirs else "asc"
        if direction not in ("asc", "desc"):
            raise _bad(f"{[direction]} is invalid value for sort_dirs, valid value is "
                       "'asc' and 'desc'")
        sorts.append((key, direction == "asc"))
    return sorts


def _limit(text: str | None, max_limit: int | None) -> int | None:
    if text is None:
        return max_limit
    error = exc.BadRequest(resource="limit",
                           msg=f"Limit must be an integer 0 or greater and not '{text}'")
    try:
        limit = int(text)
    except ValueError:
        raise error from None
    if limit < 0:
        raise error
    if limit == 0:
        return max_limit
    return min(limit, max_limit) if max_limit else limit
