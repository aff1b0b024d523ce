"""Subnets: address blocks of a network, with IPAM attributes."""

from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs, standard_attrs

IPV6_MODES = ("slaac", "dhcpv6-stateful", "dhcpv6-stateless")

RESOURCE = Resource(
    name="subnet",
    collection="subnets",
    taggable=True,
    not_found=exc.SubnetNotFound,
    attrs={
        **standard_attrs(),
        **attrs(
            Attr("network_id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
            Attr("ip_version", allow_post=True, default=REQUIRED, convert=v.to_int,
                 validate=v.one_of(4, 6), sort=True),
            Attr("cidr", allow_post=True, convert=v.to_canonical_cidr,
                 validate=v.subnet_cidr_or_none, sort=True),
            # filter-only: subnets of shared networks
            Attr("shared", visible=False, convert=v.to_boolean),
            Attr("prefixlen", allow_post=True, convert=v.to_int_or_none,
                 validate=v.non_negative_or_none,
                 visible=False, filter=False),
            Attr("gateway_ip", allow_post=True, allow_put=True,
                 convert=v.canonical_ip, validate=v.ip_address_or_none, sort=True),
            Attr("allocation_pools", allow_post=True, allow_put=True, filter=False,
                 convert=v.canonical_pools, validate=v.ip_pools),
            Attr("dns_nameservers", allow_post=True, allow_put=True, filter=False,
                 convert=v.none_to_empty_list, validate=v.nameservers),
            Attr("host_routes", allow_post=True, allow_put=True, convert=v.none_to_empty_list,
                 validate=v.hostroutes, filter=False),
            Attr("enable_dhcp", allow_post=True, allow_put=True, default=True,
                 convert=v.to_boolean, sort=True),
            Attr("ipv6_ra_mode", allow_post=True,
                 validate=v.one_of_or_none(*IPV6_MODES), sort=True),
            Attr("ipv6_address_mode", allow_post=True,
                 validate=v.one_of_or_none(*IPV6_MODES), sort=True),
            Attr("subnetpool_id", allow_post=True, validate=v.uuid_or_none, sort=True),
            Attr("use_default_subnetpool", allow_post=True, default=False,
                 convert=v.to_boolean, visible=False, filter=False),
        ),
    },
)


class InvalidSubnetServiceType(exc.InvalidInput):
    message = "Subnet service type %(service_type)s does not correspond to a valid device owner."


class InvalidInputSubnetServiceType(exc.InvalidInput):
    message = "Subnet service type %(service_type)s is not a string."


#: what a service type starts with: a device owner's prefix
SERVICE_TYPE_PREFIXES = ("network:", "neutron:", "compute:")


def service_types(value: Any) -> list[str]:
    """Device owners (``compute:nova``, ``network:floatingip`` ...), each once."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise exc.HTTPBadRequest(msg="Subnet service types must be a list.")
    for item in value:
        if not isinstance(item, str):
            raise InvalidInputSubnetServiceType(service_type=item)
        if not item.startswith(SERVICE_TYPE_PREFIXES) or len(item) > 255:
            raise InvalidSubnetServiceType(service_type=item)
    return list(dict.fromkeys(value))


SERVICE_TYPES = Extension(
    alias="subnet-service-types",
    name="Subnet service types",
    description="A subnet gives its addresses to the ports of chosen device owners.",
    updated="2016-03-15T18:00:00-00:00",
    attributes={"subnets": attrs(Attr("service_types", allow_post=True, allow_put=True,
                                      default=[], convert=service_types, filter=False))},
)
