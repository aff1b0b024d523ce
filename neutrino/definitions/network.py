"""Networks: the core L2 resource."""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Resource, attrs, standard_attrs

RESOURCE = Resource(
    name="network",
    collection="networks",
    taggable=True,
    not_found=lambda network_id: exc.NetworkNotFound(net_id=network_id),
    attrs={
        **standard_attrs(),
        **attrs(
            Attr("admin_state_up", allow_post=True, allow_put=True, default=True,
                 convert=v.to_boolean, sort=True),
            Attr("status", sort=True),
            Attr("subnets", filter=False),
            Attr("shared", allow_post=True, allow_put=True, default=False,
                 convert=v.to_boolean, admin_only=True, sort=True),
        ),
    },
)
