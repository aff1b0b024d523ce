"""external-net: networks a router gateway may attach to (``router:external``)."""

from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, attrs

EXTENSION = Extension(
    alias="external-net",
    name="Neutron external network",
    description="Adds external network attribute to network resource.",
    attributes={"networks": attrs(
        Attr("router:external", allow_post=True, allow_put=True, default=False,
             convert=v.to_boolean, admin_only=True, sort=True),
    )},
)
