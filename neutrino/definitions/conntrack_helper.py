"""l3-conntrack-helper: a router's conntrack helpers
(``/v2.0/routers/{router_id}/conntrack_helpers``): traffic to a port over a
protocol is handed to one of the kernel's helpers (ftp, tftp, sip ...), which
follows the protocol's related connections through the router's NAT;
expose-l3-conntrack-helper lists them in the router itself.

A helper's project is its router's: the attribute is taken on a create (and
checked by the policy against the router's owner) but never shown, as in Neutron.
"""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs

ALIAS = "l3-conntrack-helper"
EXPOSE_ALIAS = "expose-l3-conntrack-helper"
#: the protocol names Neutron takes (neutron-lib's IPTABLES_PROTOCOL_MAP)
PROTOCOLS = ("dccp", "icmp", "ipv6-icmp", "sctp", "tcp", "udp")
#: ``[DEFAULT] allowed_conntrack_helpers`` when unset: helper -> protocol pairs
DEFAULT_ALLOWED = (
    "amanda:tcp", "ftp:tcp", "h323:udp", "h323:tcp", "irc:tcp", "netbios-ns:udp",
    "pptp:tcp", "sane:tcp", "sip:udp", "sip:tcp", "snmp:udp", "tftp:udp",
)


class ConntrackHelperNotFound(exc.NotFound):
    message = "Conntrack Helper %(id)s could not be found."


class ConntrackHelperNotAllowed(exc.BadRequest):
    message = "Conntrack Helper %(helper)s is not allowed."


class InvalidProtocolForHelper(exc.BadRequest):
    message = ("Conntrack Helper %(helper)s does not support: %(protocol)s. Supported "
               "protocols are: %(supported_protocols)s")


def duplicate(conflicting: dict[str, Any]) -> exc.BadRequest:
    """Neutron answers a second helper of the same combination with a 400."""
    return exc.BadRequest(resource="conntrack_helper", msg=(
        "A duplicate conntrack helper entry with same attributes already exists, "
        f"conflicting values are {conflicting}"))


def to_protocol(value: Any) -> Any:
    """Neutron's converter: a protocol name in any case or a number 0-255 passes
    as given (the validator then takes only the lower-case names)."""
    if isinstance(value, str) and value.lower() in PROTOCOLS:
        return value
    if not isinstance(value, bool) and isinstance(value, int | str):
        try:
            if 0 <= int(value) <= 255:
                return value
        except ValueError:
            pass
    raise exc.InvalidInput(error_message=(
        f"IP protocol '{value}' is not supported. Only protocol names and their integer "
        "representation (0 to 255) are supported"))


def to_string(value: Any) -> Any:
    return value if value is None else str(value)


RESOURCE = Resource(
    name="conntrack_helper",
    collection="conntrack_helpers",
    parent=("routers", "router"),
    not_found=lambda conntrack_helper_id: ConntrackHelperNotFound(id=conntrack_helper_id),
    attrs=attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("project_id", allow_post=True, validate=v.project_id, visible=False,
             filter=False),
        Attr("tenant_id", allow_post=True, validate=v.project_id, visible=False,
             filter=False),
        Attr("protocol", allow_post=True, allow_put=True, default=REQUIRED,
             convert=to_protocol, validate=v.one_of(*PROTOCOLS), sort=True),
        Attr("port", allow_post=True, allow_put=True, default=REQUIRED, convert=v.to_int,
             validate=v.integer_range(1, 65535), sort=True),
        Attr("helper", allow_post=True, allow_put=True, default=REQUIRED, convert=to_string,
             validate=v.string(64), sort=True),
    ),
)

EXTENSION = Extension(
    alias=ALIAS,
    name="L3 Conntrack helper",
    description="Allow adding CT target rules for conntrack helper",
    updated="2019-04-04T10:00:00-00:00",
    resources=(RESOURCE,),
    required=("router",),
)

EXPOSE = Extension(
    alias=EXPOSE_ALIAS,
    name="Expose CT target rules for conntrack helper",
    description="Expose allow adding CT target rules for conntrack helper",
    updated="2019-04-04T10:00:00-00:00",
    attributes={"routers": attrs(Attr("conntrack_helpers", filter=False))},
    required=("router", ALIAS),
)

EXTENSIONS = (EXTENSION, EXPOSE)
