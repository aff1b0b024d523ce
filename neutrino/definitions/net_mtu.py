"""net-mtu: the MTU a network can carry; net-mtu-writable lets owners lower it.

Any non-negative MTU is accepted (0 means the most the segments carry); the
subnets decide what is too small: 68 for IPv4, 1280 for IPv6, as in Neutron.
"""

from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, attrs

EXTENSION = Extension(
    alias="net-mtu",
    name="Network MTU",
    description="Provides MTU attribute for a network resource.",
    attributes={"networks": attrs(Attr("mtu", sort=True, convert_filter=v.to_int))},
)

WRITABLE = Extension(
    alias="net-mtu-writable",
    name="Network MTU (writable)",
    description="Provides a writable MTU attribute for a network resource.",
    required=("net-mtu",),
    attributes={"networks": attrs(Attr(
        "mtu", allow_post=True, allow_put=True, convert=v.to_int,
        validate=v.non_negative, sort=True, convert_filter=v.to_int))},
)
