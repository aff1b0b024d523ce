"""availability_zone: the zones of the agents, and the zones networks and routers
would like to be in (network_availability_zone, router_availability_zone).

A zone is the ``availability_zone`` an agent reports: DHCP agents make zones of
the ``network`` resource, L3 agents of the ``router`` resource. A zone is
``available`` while one of its agents is administratively up, whether alive
or not, as in Neutron.
"""

from __future__ import annotations

import json
from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, Resource, attrs

AZ_HINTS = "availability_zone_hints"
AVAILABILITY_ZONES = "availability_zones"
# Hints are kept as their JSON text, which may take this many characters.
AZ_HINTS_DB_LEN = 255
AVAILABLE = "available"
UNAVAILABLE = "unavailable"


class AvailabilityZoneNotFound(exc.NotFound):
    message = "AvailabilityZone %(availability_zone)s could not be found."


def hints_text(hints: list[str]) -> str:
    """The stored form of a hint list (and what its length limit measures)."""
    return json.dumps(hints)


def az_hints(value: Any) -> str | None:
    if not isinstance(value, list):
        return f"'{value}' is not a list"
    seen: list[Any] = []
    duplicates: list[Any] = []
    for item in value:  # items may be unhashable: compare, as Neutron does
        if item in seen and item not in duplicates:
            duplicates.append(item)
        seen.append(item)
    if duplicates:
        return f"Duplicate items in the list: '{', '.join(str(d) for d in duplicates)}'"
    for item in value:
        error = v.string(None)(item)
        if error:
            return error
    if len(hints_text(value)) > AZ_HINTS_DB_LEN:
        raise exc.InvalidInput(error_message="Too many availability_zone_hints specified")
    return None


RESOURCE = Resource(
    name="availability_zone",
    collection="availability_zones",
    attrs=attrs(Attr("name"), Attr("resource"), Attr("state")),
)

EXTENSION = Extension(
    alias="availability_zone",
    name="Availability Zone",
    description="The availability zone extension.",
    updated="2015-01-01T10:00:00-00:00",
    resources=(RESOURCE,),
    attributes={"agents": attrs(Attr("availability_zone"))},
    required=("agent",),
)

FILTER = Extension(
    alias="availability_zone_filter",
    name="Availability Zone Filter Extension",
    description="Add filter parameters to AvailabilityZone resource",
    updated="2018-06-22T10:00:00-00:00",
    required=("availability_zone",),
)


def _zone_attrs() -> dict[str, Attr]:
    """The zones a resource is in (read only), and those it was asked for."""
    return attrs(
        Attr(AVAILABILITY_ZONES, filter=False),
        Attr(AZ_HINTS, allow_post=True, default=[], validate=az_hints, filter=False),
    )


NETWORK = Extension(
    alias="network_availability_zone",
    name="Network Availability Zone",
    description="Availability zone support for network.",
    updated="2015-01-01T10:00:00-00:00",
    attributes={"networks": _zone_attrs()},
    required=("availability_zone",),
)

ROUTER = Extension(
    alias="router_availability_zone",
    name="Router Availability Zone",
    description="Availability zone support for router.",
    updated="2015-01-01T10:00:00-00:00",
    attributes={"routers": _zone_attrs()},
    required=("router", "availability_zone"),
)

EXTENSIONS = (EXTENSION, FILTER, NETWORK, ROUTER)
