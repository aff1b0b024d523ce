"""Ports: attachment points on a network, with MAC and fixed IPs."""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs, standard_attrs

#: the network's own ports, deleted with it (and their addresses with a
#: subnet) rather than holding it: DHCP ports and OVN's metadata ports, as Neutron
AUTO_DELETE_OWNERS = ("network:dhcp", "network:distributed")

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


def _mac_or_none(value: object) -> str | None:
    return None if value is None else v.mac_address(value)


MAC_REGENERATE = Extension(
    alias="port-mac-address-regenerate",
    name="Neutron Port MAC address regenerate",
    description="A port given mac_address null gets a new MAC (one not bound to a host).",
    updated="2018-05-03T10:00:00-00:00",
    attributes={"ports": attrs(
        Attr("mac_address", allow_post=True, allow_put=True, convert=v.canonical_mac,
             validate=_mac_or_none, sort=True, schema={"type": ["string", "null"]}))},
)
