"""Converters and validators for attribute values.

A converter turns the wire value into the stored one and raises
``InvalidInput`` when it cannot; a validator returns ``None`` when the value
is good and otherwise a sentence saying what is wrong (the controller wraps it
in "Invalid input for <attr>. Reason: <sentence>.").
"""

from __future__ import annotations

import ipaddress
import re
import uuid as uuidlib
from collections.abc import Callable, Sequence
from typing import Any

from neutrino.exceptions import InvalidInput

Validator = Callable[[Any], str | None]
Converter = Callable[[Any], Any]

_MAC_RE = re.compile(r"^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$")
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                      r"[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")

# What an Integer column holds on PostgreSQL and MariaDB (SQLite holds more).
INT32 = (-(2 ** 31), 2 ** 31 - 1)
# segmentation ids (GRE keys) need all 32 bits: their columns are BigInteger.
UINT32 = (0, 2 ** 32 - 1)

# --- converters ------------------------------------------------------------


def to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
    raise InvalidInput(error_message=f"'{value}' cannot be converted to boolean")


def to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise InvalidInput(error_message=f"'{value}' is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise InvalidInput(error_message=f"'{value}' is not an integer")


def to_int_or_none(value: Any) -> int | None:
    return None if value is None else to_int(value)


def none_to_empty_list(value: Any) -> Any:
    return [] if value is None else value


def to_lowercase(value: Any) -> Any:
    if isinstance(value, str):
        return value.lower()
    raise InvalidInput(error_message=f"'{value}' cannot be converted to lowercase string")


def canonical_mac(value: Any) -> Any:
    """A MAC in lower case with colons; anything else unchanged, for the validator."""
    if isinstance(value, str) and _MAC_RE.match(value):
        return value.lower().replace("-", ":")
    return value


def canonical_ip(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            return value
    return value


# --- validators ------------------------------------------------------------


class Described:
    """A validator made by a factory below, with what it accepts as a JSON
    schema: the API's OpenAPI document reads it (a closure would say nothing)."""

    __slots__ = ("check", "schema")

    def __init__(self, check: Validator, schema: dict[str, Any]):
        self.check = check
        self.schema = schema

    def __call__(self, value: Any) -> str | None:
        return self.check(value)


def or_none(inner: Validator) -> Validator:
    """``inner``, or None; the schema says null too."""
    schema = inner.schema if isinstance(inner, Described) else {}
    return Described(lambda value: None if value is None else inner(value),
                     {"anyOf": [schema, {"type": "null"}]} if schema else {})


def string(max_len: int | None = 255) -> Validator:
    def check(value: Any) -> str | None:
        if not isinstance(value, str):
            return f"'{value}' is not a valid string"
        if max_len is not None and len(value) > max_len:
            return f"'{value}' exceeds maximum length of {max_len}"
        if "\x00" in value:  # no database can store it everywhere
            return f"'{value!r}' contains a null character"
        return None

    schema: dict[str, Any] = {"type": "string"}
    if max_len is not None:
        schema["maxLength"] = max_len
    return Described(check, schema)


def string_or_none(max_len: int | None = 255) -> Validator:
    return or_none(string(max_len))


def is_uuid(value: Any) -> bool:
    return isinstance(value, str) and bool(_UUID_RE.match(value))


def uuid(value: Any) -> str | None:
    return None if is_uuid(value) else f"'{value}' is not a valid UUID"


def uuid_or_none(value: Any) -> str | None:
    return None if value is None else uuid(value)


def uuid_list(value: Any) -> str | None:
    """A list of UUIDs, each once: duplicates are named before a malformed item."""
    if not isinstance(value, list):
        return f"'{value}' is not a list"
    duplicates = _duplicates(value)
    if duplicates:
        return f"Duplicate items in the list: '{', '.join(str(d) for d in duplicates)}'"
    for item in value:
        error = uuid(item)
        if error:
            return error
    return None


def project_id(value: Any) -> str | None:
    return string(255)(value)


def boolean(value: Any) -> str | None:
    try:
        to_boolean(value)
    except InvalidInput:
        return f"'{value}' is not a valid boolean value"
    return None


def _duplicates(items: list[Any]) -> list[Any]:
    seen: list[Any] = []
    found: list[Any] = []
    for item in items:
        if item in seen and item not in found:
            found.append(item)
        seen.append(item)
    return found


def not_empty_string(max_len: int | None = 255) -> Validator:
    inner = string(max_len)

    def check(value: Any) -> str | None:
        error = inner(value)
        if error:
            return error
        if not value.strip():
            return f"'{value}' Blank strings are not permitted"
        return None

    schema = inner.schema if isinstance(inner, Described) else {}
    return Described(check, {**schema, "minLength": 1})


def non_negative(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"'{value}' is not an integer"
    if value < 0:
        return f"'{value}' should be non-negative"
    return None


def non_negative_or_none(value: Any) -> str | None:
    return None if value is None else non_negative(value)


def storable_int(bounds: tuple[int, int], value: Any) -> str | None:
    """Whether an integer value fits its column; other values are not this check's."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    low, high = bounds
    if value < low:
        return f"'{value}' is too small - must be at least '{low}'"
    if value > high:
        return f"'{value}' is too large - must be no larger than '{high}'"
    return None


def integer_range(low: int | None, high: int | None) -> Validator:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"'{value}' is not an integer"
        if low is not None and value < low:
            return f"'{value}' is too small - must be at least '{low}'"
        if high is not None and value > high:
            return f"'{value}' is too large - must be no larger than '{high}'"
        return None

    schema: dict[str, Any] = {"type": "integer"}
    if low is not None:
        schema["minimum"] = low
    if high is not None:
        schema["maximum"] = high
    return Described(check, schema)


def one_of(*choices: Any) -> Validator:
    def check(value: Any) -> str | None:
        if value not in choices:
            return f"{value} is not in {list(choices)}"
        return None

    return Described(check, {"enum": list(choices)})


def one_of_or_none(*choices: Any) -> Validator:
    return or_none(one_of(*choices))


def ip_address(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"'{value}' is not a valid IP address"
    if ":" not in value:
        # Neutron refuses the short forms inet_aton would take ('1.1.1') and
        # recommends the plain form of zero-padded octets ('010.0.0.1').
        octets = value.split(".")
        if len(octets) != 4 or not all(o.isascii() and o.isdigit() and int(o) <= 255
                                       for o in octets):
            return f"'{value}' is not a valid IP address"
        plain = ".".join(str(int(o)) for o in octets)
        if plain != value:
            return f"'{value}' is not an accepted IP address, '{plain}' is recommended"
        return None
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return f"'{value}' is not a valid IP address"
    if "%" in value:  # a scoped address names an interface, not a host
        return f"'{value}' is not a valid IP address"
    return None


def ip_address_or_none(value: Any) -> str | None:
    return None if value is None else ip_address(value)


def subnet_cidr(value: Any) -> str | None:
    if not isinstance(value, str) or "/" not in value:
        return f"'{value}' is not a valid IP subnet"
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError:
        return f"'{value}' is not a valid IP subnet"
    # Host bits are allowed (the subnet is normalised later); an abbreviated
    # IPv4 address ('10.0/8') is not, as in Neutron.
    address = value.partition("/")[0]
    if net.version == 4 and str(ipaddress.ip_address(address)) != address:
        return f"'{value}' isn't a recognized IP subnet cidr, '{net}' is recommended"
    return None


def subnet_cidr_or_none(value: Any) -> str | None:
    return None if value is None else subnet_cidr(value)


def subnet_cidr_list(value: Any) -> str | None:
    if not isinstance(value, list):
        return f"'{value}' is not a list"
    duplicates = _duplicates(value)
    if duplicates:
        return f"Duplicate items in the list: '{', '.join(str(d) for d in duplicates)}'"
    for item in value:
        error = subnet_cidr(item)
        if error:
            return error
    return None


def route_cidr(value: Any) -> str | None:
    """A route destination: a network address with its prefix, not loopback."""
    if not isinstance(value, str) or "/" not in value:
        return f"'{value}' is not a valid CIDR"
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError:
        return f"'{value}' is not a valid CIDR"
    if net.is_loopback:
        return f"'{value}' is not a routable CIDR"
    return None


def mac_address(value: Any) -> str | None:
    if not isinstance(value, str) or not _MAC_RE.match(value):
        return f"'{value}' is not a valid MAC address"
    if value.replace("-", ":").lower() == "00:00:00:00:00:00":
        return f"'{value}' is not a valid MAC address"
    return None


def dict_or_none(value: Any) -> str | None:
    if value is None or isinstance(value, dict):
        return None
    return f"'{value}' is not a dictionary"


def dict_keys(expected: Sequence[str], item: Any) -> str | None:
    """Neutron's strict key check: exactly ``expected``, in any order."""
    if not isinstance(item, dict):
        return f"Invalid input. '{item}' must be a dictionary with keys: {list(expected)}"
    if set(item) != set(expected):
        return (f"Validation of dictionary's keys failed. Expected keys: {set(expected)} "
                f"Provided keys: {set(item)}")
    return None


def ip_pools(value: Any) -> str | None:
    if not isinstance(value, list):
        return f"Invalid data format for IP pool: '{value}'"
    for pool in value:
        error = dict_keys(("start", "end"), pool)
        if error:
            return error
        for key in ("start", "end"):
            error = ip_address(pool[key])
            if error:
                return error
    return None


def nameservers(value: Any) -> str | None:
    if not isinstance(value, list):
        return f"Invalid data format for nameserver: '{value}'"
    seen: list[Any] = []
    for host in value:
        error = ip_address(host)
        if error:
            return f"'{host}' is not a valid nameserver. {error}"
        if host in seen:
            return f"Duplicate nameserver '{host}'"
        seen.append(host)
    return None


def hostroutes(value: Any) -> str | None:
    if not isinstance(value, list):
        return f"Invalid data format for hostroute: '{value}'"
    seen: list[Any] = []
    for route in value:
        error = (dict_keys(("destination", "nexthop"), route)
                 or route_cidr(route["destination"]) or ip_address(route["nexthop"]))
        if error:
            return error
        if route in seen:
            return f"Duplicate hostroute '{route}'"
        seen.append(route)
    return None


def fixed_ips(value: Any) -> str | None:
    """Entries name a subnet, an address or both; an address appears once."""
    if not isinstance(value, list):
        return f"Invalid data format for fixed IP: '{value}'"
    addresses: list[Any] = []
    for item in value:
        if not isinstance(item, dict):
            return f"Invalid data format for fixed IP: '{item}'"
        if "ip_address" in item:
            address = item["ip_address"]
            if address in addresses:
                return f"Duplicate IP address '{address}'"
            error = ip_address(address)
            if error:
                return error
            addresses.append(address)
        if "subnet_id" in item:
            error = uuid(item["subnet_id"])
            if error:
                return error
    return None


def canonical_pools(value: Any) -> Any:
    """IPv6 pool bounds in their compressed form; ``None`` is no pools."""
    if value is None:
        return []
    if not isinstance(value, list):
        return value
    return [{k: canonical_ip(a) for k, a in pool.items()} if isinstance(pool, dict) else pool
            for pool in value]


def unique_list_of(item_validator: Validator) -> Validator:
    def check(value: Any) -> str | None:
        if not isinstance(value, list):
            return f"'{value}' is not a list"
        for item in value:
            error = item_validator(item)
            if error:
                return error
        seen = set()
        for item in value:
            key = repr(item)
            if key in seen:
                return f"Duplicate items in the list: '{item}'"
            seen.add(key)
        return None

    schema = item_validator.schema if isinstance(item_validator, Described) else {}
    return Described(check, {"type": "array", "items": schema, "uniqueItems": True})


def to_canonical_cidr(value: Any) -> Any:
    """Neutron's CIDR converter: refuse what is not a CIDR, compress IPv6."""
    if not isinstance(value, str):
        return value
    address, sep, prefix = value.partition("/")
    try:
        ip = ipaddress.ip_address(address)
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise InvalidInput(error_message=f"{value} is not in a CIDR format") from None
    return f"{ip}/{int(prefix)}" if ip.version == 6 and sep else value


MAX_TAGS = 50


def tag_list(value: Any) -> str | None:
    error = unique_list_of(string(255))(value)
    if error is None and len(value) > MAX_TAGS:
        return f"The number of tags exceed the per-resource limit of {MAX_TAGS}"
    return error


def new_uuid() -> str:
    return str(uuidlib.uuid4())
