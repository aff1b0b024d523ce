"""net-mtu: the MTU a network can carry, computed by the core plugin."""

from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, attrs

EXTENSION = Extension(
    alias="net-mtu",
    name="Network MTU",
    description="Provides MTU attribute for a network resource.",
    attributes={"networks": attrs(Attr("mtu", sort=True, convert_filter=v.to_int))},
)
