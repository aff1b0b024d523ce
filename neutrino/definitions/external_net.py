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

SUBNETS = Extension(
    alias="subnet-external-network",
    name="Subnet External Network",
    description="Subnets say (and are filtered by) whether their network is external.",
    updated="2020-09-06T10:00:00-00:00",
    attributes={"subnets": attrs(Attr("router:external", convert=v.to_boolean))},
    required=("external-net",),
)
