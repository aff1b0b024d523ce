"""Query strings of collection requests -> ``CollectionQuery``."""

from __future__ import annotations

from collections.abc import Iterable

from neutrino import exceptions as exc
from neutrino.db.query import CollectionQuery
from neutrino.definitions.base import Resource
from neutrino.definitions.tagging import TAG_FILTERS

RESERVED = {"fields", "sort_key", "sort_dir", "limit", "marker", "page_reverse"}

# The widest integer any database here compares without overflowing (SQLite's).
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


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
    invalid: list[str] = []
    for key, value in params:
        if "\x00" in key or "\x00" in value:  # PostgreSQL cannot even compare one
            raise exc.InvalidInput(error_message=f"query parameter {key!r} holds a null "
                                                 "character")
        if key == "fields":
            if value:
                fields.append(value)
        elif key == "sort_key":
            if value:
                sort_keys.append(value)
        elif key == "sort_dir":
            if value:
                sort_dirs.append(value)
        elif key == "limit":
            limit_text = value  # the last one counts, as with webob's GET
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
            if attr is None or not attr.filter:
                if key not in invalid:
                    invalid.append(key)
                continue
            query.filters.setdefault(key, []).append(_in_range(key, attr.filter_value(value)))
    if invalid:
        raise _bad(f"{invalid} is invalid attribute for filtering")
    if fields:
        query.fields = fields
    query.limit = _limit(limit_text, max_limit)
    if not resource.paged:
        query.limit, query.page_reverse = None, False
    if query.limit is None:
        query.marker = None  # without a page there is nothing to start after
    query.sorts = _sorts(resource, sort_keys, sort_dirs)
    if resource.paged and all(name != "id" for name, _ in query.sorts):
        query.sorts.append(("id", True))  # Neutron's order: id breaks ties, and is the default
    return query


def _in_range(key: str, value: object) -> object:
    """Integer filters beyond what a database compares are refused here, for every
    plugin's filter path alike."""
    if isinstance(value, int) and not isinstance(value, bool) and not (
            INT64_MIN <= value <= INT64_MAX):
        raise exc.InvalidInput(error_message=f"filter {key}={value} is out of range")
    return value


def _sorts(resource: Resource, keys: list[str], dirs: list[str]) -> list[tuple[str, bool]]:
    """Keys and directions pair up by position; Neutron wants as many of each."""
    if len(dirs) != len(keys):
        raise _bad("The number of sort_keys and sort_dirs must be same")
    absent = [key for key in keys if not getattr(resource.attrs.get(key), "sort", False)]
    if absent:
        raise _bad(f"{absent} is invalid attribute for sort_keys")
    wrong = [d for d in dirs if d not in ("asc", "desc")]
    if wrong:
        raise _bad(f"{wrong} is invalid value for sort_dirs, valid value is "
                   "'asc' and 'desc'")
    return [(key, direction == "asc") for key, direction in zip(keys, dirs, strict=True)]


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
