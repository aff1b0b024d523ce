"""allowed-address-pairs: more (MAC, IP or CIDR) a port may send from past port security.

Addresses and MACs are kept exactly as written, as Neutron keeps them
(``10.0.0.1/32`` stays ``10.0.0.1/32``, ``10.0.0.1`` stays ``10.0.0.1``).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, attrs

ADDRESS_PAIRS = "allowed_address_pairs"
KEYS = ("ip_address", "mac_address")


class AllowedAddressPairsMissingIP(exc.InvalidInput):
    message = "AllowedAddressPair must contain ip_address"


class DuplicateAddressPairInRequest(exc.InvalidInput):
    message = ("Request contains duplicate address pair: mac_address %(mac_address)s "
               "ip_address %(ip_address)s.")


class AllowedAddressPairExhausted(exc.BadRequest):
    message = "The number of allowed address pair exceeds the maximum %(quota)s."


class AddressPairAndPortSecurityRequired(exc.Conflict):
    message = ("Port Security must be enabled in order to have allowed address pairs "
               "on a port.")


def _address_error(address: Any) -> str | None:
    if isinstance(address, str) and "/" in address:
        return v.subnet_cidr(address)
    return v.ip_address(address)


#: the multicast ranges an address pair may not reach into (aap-reject-multicast)
_MULTICAST = {4: ipaddress.ip_network("224.0.0.0/4"), 6: ipaddress.ip_network("ff00::/8")}


def _multicast_error(address: str) -> str | None:
    """A multicast address, or a prefix overlapping the multicast range (a
    default route aside), would let the port send as a whole group."""
    if "/" not in address:
        if ipaddress.ip_address(address).is_multicast:
            return f"IP {address} is a multicast address, which is not supported."
        return None
    net = ipaddress.ip_network(address, strict=False)
    if net.prefixlen == 0 and net.version == 4:
        return None
    group = _MULTICAST[net.version]
    if net.overlaps(group):
        return (f"Subnet {address} overlaps with multicast range {group}, which is not "
                "supported.")
    return None


def _multicast_mac_error(mac: str) -> str | None:
    if int(mac.replace("-", ":").split(":")[0], 16) & 1:
        return f"MAC address {mac} is a multicast address, which is not supported."
    return None


def check_pairs(value: Any) -> str | None:
    """Neutron's checks in Neutron's order; most failures have a type of their own,
    so they are raised rather than returned. The count limit is configuration and
    is checked by the driver."""
    if not isinstance(value, list):
        raise exc.HTTPBadRequest(msg="Allowed address pairs must be a list.")
    seen: list[tuple[Any, Any]] = []
    for pair in value:
        if not isinstance(pair, dict):
            return f"'{pair}' is not a dictionary"
        if "mac_address" in pair:
            error = v.mac_address(pair["mac_address"])
            if error:
                raise exc.HTTPBadRequest(msg=error)
        if "ip_address" not in pair:
            raise AllowedAddressPairsMissingIP()
        key = (pair.get("mac_address"), pair["ip_address"])
        if key in seen:
            raise DuplicateAddressPairInRequest(mac_address=key[0], ip_address=key[1])
        seen.append(key)
        unknown = sorted(set(pair) - set(KEYS))
        if unknown:
            raise exc.HTTPBadRequest(msg=f"Unrecognized attribute(s) '{', '.join(unknown)}'")
        error = _address_error(pair["ip_address"]) or _multicast_error(pair["ip_address"])
        if not error and pair.get("mac_address") is not None:
            error = _multicast_mac_error(pair["mac_address"])
        if error:
            raise exc.HTTPBadRequest(msg=error)
    return None


EXTENSION = Extension(
    alias="allowed-address-pairs",
    name="Allowed Address Pairs",
    description="Provides allowed address pairs",
    updated="2013-07-23T10:00:00-00:00",
    attributes={"ports": attrs(
        Attr(ADDRESS_PAIRS, allow_post=True, allow_put=True, convert=v.none_to_empty_list,
             validate=check_pairs, filter=False, schema={"type": "array", "items": {
                 "type": "object", "required": ["ip_address"], "properties": {
                     "ip_address": {"type": "string"}, "mac_address": {"type": "string"}}}}),
    )},
)

REJECT_MULTICAST = Extension(
    alias="aap-reject-multicast",
    name="Allowed address pairs reject multicast",
    description="Address pairs may not name multicast addresses, ranges or MACs.",
    updated="2024-01-10T10:00:00-00:00",
    required=("allowed-address-pairs",),
)
