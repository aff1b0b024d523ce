"""network-ip-availability: how many addresses each network's subnets hold and
how many of them ports use (an admin's view, for capacity planning), and
network-ip-availability-details: the same counted over the whole CIDR and
over the allocation pools apart."""

from __future__ import annotations

from neutrino.definitions.base import Attr, Extension, Resource, attrs

COLLECTION = "network_ip_availabilities"
DETAILS_ATTR = "ip_availability_details"

RESOURCE = Resource(
    name="network_ip_availability",
    collection=COLLECTION,
    attrs=attrs(
        Attr("network_id"), Attr("network_name"), Attr("tenant_id"), Attr("project_id"),
        Attr("total_ips", filter=False), Attr("used_ips", filter=False),
        Attr("subnet_ip_availability", filter=False)),
    hyphenated=True,
)

EXTENSION = Extension(
    alias="network-ip-availability",
    name="Network IP Availability",
    description="Per network and per subnet, the addresses there are and those in use.",
    updated="2015-09-24T00:00:00-00:00",
    resources=(RESOURCE,),
)

DETAILS = Extension(
    alias="network-ip-availability-details",
    name="Network IP Availability Details",
    description="The addresses there are and those in use, counted in the whole CIDR "
                "and in the allocation pools apart.",
    updated="2023-08-07T00:00:00-00:00",
    attributes={RESOURCE.path: attrs(Attr(DETAILS_ATTR, filter=False))},
    required=("network-ip-availability",),
)

EXTENSIONS = (EXTENSION, DETAILS)
