"""Subnets: address blocks of a network, with IPAM attributes."""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Resource, attrs, standard_attrs

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
