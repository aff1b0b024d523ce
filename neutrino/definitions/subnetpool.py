"""Subnet pools: prefixes that subnets are carved from."""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs, standard_attrs

#: a prefix length as a create or update gives it, and as Neutron shows it: a
#: string (an integer only in the answer to an update)
PREFIX_LENGTH = {"type": ["integer", "string", "null"]}

RESOURCE = Resource(
    name="subnetpool",
    collection="subnetpools",
    taggable=True,
    # subnetpool-prefix-ops: PUT /subnetpools/{id}/add_prefixes, remove_prefixes
    member_actions={"add_prefixes": "add_subnetpool_prefixes",
                    "remove_prefixes": "remove_subnetpool_prefixes",
                    # subnet_onboard
                    "onboard_network_subnets": "onboard_network_subnets"},
    not_found=exc.SubnetPoolNotFound,
    attrs={
        **standard_attrs(),
        **attrs(
            Attr("name", allow_post=True, allow_put=True, default=REQUIRED,
                 validate=v.not_empty_string(255), sort=True),
            Attr("prefixes", allow_post=True, allow_put=True, default=REQUIRED,
                 validate=v.subnet_cidr_list, filter=False),
            Attr("ip_version", sort=True, convert_filter=v.to_int),
            Attr("default_prefixlen", allow_post=True, allow_put=True,
                 convert=v.to_int_or_none, validate=v.non_negative_or_none, sort=True,
                 schema=PREFIX_LENGTH),
            Attr("min_prefixlen", allow_post=True, allow_put=True,
                 convert=v.to_int_or_none, validate=v.non_negative_or_none, sort=True,
                 schema=PREFIX_LENGTH),
            Attr("max_prefixlen", allow_post=True, allow_put=True,
                 convert=v.to_int_or_none, validate=v.non_negative_or_none, sort=True,
                 schema=PREFIX_LENGTH),
            Attr("default_quota", allow_post=True, allow_put=True, default=None,
                 convert=v.to_int_or_none, validate=v.non_negative_or_none, sort=True),
            Attr("shared", allow_post=True, default=False, convert=v.to_boolean,
                 admin_only=True, sort=True),
            Attr("is_default", allow_post=True, allow_put=True, default=False,
                 convert=v.to_boolean, admin_only=True, sort=True),
            Attr("address_scope_id", allow_post=True, allow_put=True, default=None,
                 validate=v.uuid_or_none, sort=True),
        ),
    },
)

PREFIX_OPS = Extension(
    alias="subnetpool-prefix-ops",
    name="Subnet Pool Prefix Operations",
    description="Prefixes join a subnet pool, or leave it when no subnet uses them, "
                "without the whole list being given again.",
    updated="2019-06-07T00:00:00-00:00",
)

ONBOARD = Extension(
    alias="subnet_onboard",
    name="Subnet Onboard",
    description="A network's subnets join a subnet pool, their prefixes with them.",
    updated="2018-12-18T09:00:00-00:00",
    required=("subnet_allocation",),
)
