"""external-net: networks a router gateway may attach to (``router:external``)."""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, attrs


class ExternalNetworkInUse(exc.InUse):
    message = ("External network %(net_id)s cannot be updated to be made non-external, since "
               "it has existing gateway ports.")


EXTENSION = Extension(
    alias="external-net",
    name="Neutron external network",
    description="Adds external network attribute to network resource.",
    attributes={"networks": attrs(
        Attr("router:external", allow_post=True, allow_put=True, default=False,
             convert=v.to_boolean, admin_only=True, sort=True),
    )},
)
