"""Ports: attachment points on a network, with MAC and fixed IPs."""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Resource, attrs, standard_attrs

RESOURCE = Resource(
    name="port",
    collection="ports",
    taggable=True,
    not_found=exc.PortNotFound,
    attrs={
        **standard_attrs(tags_on_create=True),
        **attrs(
            Attr("network_id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
            Attr("admin_state_up", allow_post=True, allow_put=True, default=True,
                 convert=v.to_boolean, sort=True),
            Attr("mac_address", allow_post=True, allow_put=True, convert=v.canonical_mac,
                 validate=v.mac_address, sort=True),
            Attr("fixed_ips", allow_post=True, allow_put=True, convert=v.none_to_empty_list,
                 validate=v.fixed_ips),
            Attr("device_id", allow_post=True, allow_put=True, default="",
                 validate=v.string(255), sort=True),
            Attr("device_owner", allow_post=True, allow_put=True, default="",
                 validate=v.string(255), sort=True),
            Attr("status", sort=True),
        ),
    },
)
