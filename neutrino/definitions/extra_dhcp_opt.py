"""extra_dhcp_opt: DHCP options a port's DHCP server hands out beside the usual ones.

An option is (opt_name, ip_version) with a value. Neutron checks an entry
against two key specs: options that may be blank (``router``,
``classless-static-route``) and all others (one line, not blank). ``opt_value``
null means "no value": not stored on create, "remove" on update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, attrs

EXTRA_DHCP_OPTS = "extra_dhcp_opts"
NAME_MAX_LEN = 64
VALUE_MAX_LEN = 255
BLANK_ALLOWED = ("router", "classless-static-route")
IP_VERSIONS = (4, 6)


class NeutronDbObjectDuplicateEntry(exc.Conflict):
    """Two values for one option of one port: Neutron's database refuses the second."""

    message = ("Failed to create a duplicate %(object_type)s: for attribute(s) "
               "%(attributes)s with value(s) %(values)s")


def storable(name: str, value: str | None) -> bool:
    """Whether an option has a value to keep: blank only for the options that allow it."""
    return value is not None if name in BLANK_ALLOWED else bool(value)


def _one_line(max_len: int) -> Callable[[Any], str | None]:
    not_blank = v.not_empty_string(max_len)

    def check(value: Any) -> str | None:
        error = not_blank(value)
        if error is None and len(value.splitlines()) > 1:
            return f"Multi-line string is not allowed: '{value}'"
        return error

    return check


def _or_none(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    return lambda value: None if value is None else check(value)


def _to_int(value: Any) -> int:
    try:
        return int(value)
    except (ValueError, TypeError, OverflowError):
        raise exc.InvalidInput(error_message=f"'{value}' is not an integer") from None


# (checks of opt_name, of opt_value) for each key spec, in Neutron's order
_SPECS = (
    (v.one_of(*BLANK_ALLOWED), _or_none(v.string(VALUE_MAX_LEN))),
    (_one_line(NAME_MAX_LEN), _or_none(_one_line(VALUE_MAX_LEN))),
)


def _matches(item: dict[str, Any], check_name: Callable, check_value: Callable) -> bool:
    """One key spec; converts ``ip_version`` in place once reached, as Neutron does."""
    if not {"opt_name", "opt_value"} <= set(item):
        return False
    if any(key not in ("opt_name", "opt_value", "ip_version") for key in item):
        return False
    if check_name(item["opt_name"]) or check_value(item["opt_value"]):
        return False
    if "ip_version" in item:
        item["ip_version"] = _to_int(item["ip_version"])
        return item["ip_version"] in IP_VERSIONS
    return True


def to_extra_dhcp_opts(value: Any) -> list[dict[str, Any]] | None:
    """Check the list as Neutron does and return it with ``ip_version`` filled in."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise exc.InvalidInput(error_message=f"'{value}' is not a list")
    duplicates = [item for n, item in enumerate(value) if item in value[:n]]
    if duplicates:
        shown = []
        for item in duplicates:
            if item not in shown:
                shown.append(item)
        raise exc.InvalidInput(error_message="Duplicate items in the list: "
                               f"'{', '.join(str(d) for d in shown)}'")
    opts = []
    for item in value:
        copy = dict(item) if isinstance(item, dict) else item
        if not (isinstance(copy, dict) and any(_matches(copy, *spec) for spec in _SPECS)):
            raise exc.InvalidInput(error_message=f"No valid key specs matched for: {copy}")
        opts.append({"opt_name": copy["opt_name"], "opt_value": copy["opt_value"],
                     "ip_version": copy.get("ip_version", 4)})
    return opts


EXTENSION = Extension(
    alias="extra_dhcp_opt",
    name="Neutron Extra DHCP options",
    description=("Extra options configuration for DHCP. For example PXE boot options to "
                 "DHCP clients can be specified (e.g. tftp-server, server-ip-address, "
                 "bootfile-name)"),
    updated="2013-03-17T12:00:00-00:00",
    attributes={"ports": attrs(
        Attr(EXTRA_DHCP_OPTS, allow_post=True, allow_put=True, default=None,
             convert=to_extra_dhcp_opts, filter=False, schema={"type": "array", "items": {
                 "type": "object", "properties": {
                     "opt_name": {"type": "string"}, "opt_value": {"type": ["string", "null"]},
                     "ip_version": {"type": ["integer", "string", "null"]}}}}),
    )},
)
