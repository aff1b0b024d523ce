"""floating-ip-port-forwarding: a floating IP's ports forwarded to internal
ports (``/v2.0/floatingips/{id}/port_forwardings``), with descriptions and
port ranges (fip-pf-description, floating-ip-port-forwarding-port-ranges), and
listed in the floating IP itself (expose-port-forwarding-in-fip)."""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs

PROTOCOLS = ("tcp", "udp")


class PortForwardingNotFound(exc.NotFound):
    message = "Port Forwarding %(id)s could not be found."


class FipInUseByPortForwarding(exc.InUse):
    message = "Floating IP %(id)s in use by Port Forwarding resources."


class PortHasBindingFloatingIP(exc.InUse):
    message = ("Cannot create port forwarding to floating IP %(floating_ip_address)s "
               "(%(fip_id)s) with port %(port_id)s using fixed IP %(fixed_ip)s, as that port "
               "already has a binding floating IP.")


def bad_port_forwarding(msg: str) -> exc.BadRequest:
    return exc.BadRequest(resource="port_forwarding", msg=msg)


def port_range(value: Any) -> str | None:
    """``"N"`` or ``"N:M"`` with 1 <= N <= M <= 65535."""
    if value is None:
        return None
    parts = str(value).split(":")
    if len(parts) > 2:
        return "Port range must be two integers separated by a colon"
    ports = []
    for part in parts:
        if not part.isdigit():
            return f"Invalid port: {part}"
        if not 1 <= int(part) <= 65535:
            return f"Invalid port: {part}, the port must be in the range [1, 65535]"
        ports.append(int(part))
    if len(ports) == 2 and ports[0] > ports[1]:
        return "First port in a port range must be lower than the second port"
    return None


def _port_or_none(value: Any) -> str | None:
    return None if value is None else v.integer_range(1, 65535)(value)


RESOURCE = Resource(
    name="port_forwarding",
    collection="port_forwardings",
    parent=("floatingips", "floatingip"),
    not_found=lambda port_forwarding_id: PortForwardingNotFound(id=port_forwarding_id),
    attrs=attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("external_port", allow_post=True, allow_put=True, default=None,
             convert=v.to_int_or_none, validate=_port_or_none, sort=True),
        Attr("internal_port", allow_post=True, allow_put=True, default=None,
             convert=v.to_int_or_none, validate=_port_or_none, sort=True),
        Attr("external_port_range", allow_post=True, allow_put=True, default=None,
             validate=port_range, sort=True),
        Attr("internal_port_range", allow_post=True, allow_put=True, default=None,
             validate=port_range, sort=True),
        Attr("internal_ip_address", allow_post=True, allow_put=True, default=REQUIRED,
             convert=v.canonical_ip, validate=v.ip_address, sort=True),
        Attr("protocol", allow_post=True, allow_put=True, default=REQUIRED,
             convert=v.to_lowercase, validate=v.one_of(*PROTOCOLS), sort=True),
        Attr("internal_port_id", allow_post=True, allow_put=True, default=REQUIRED,
             validate=v.uuid, sort=True),
        Attr("description", allow_post=True, allow_put=True, default="",
             validate=v.string(255), sort=True),
    ),
)

EXTENSION = Extension(
    alias="floating-ip-port-forwarding",
    name="Floating IP Port Forwarding",
    description="Provide Floating IP Port Forwarding",
    resources=(RESOURCE,),
    required=("router",),
)

DESCRIPTION = Extension(
    alias="floating-ip-port-forwarding-description",
    name="Floating IP Port Forwarding new attribute description",
    description="Add a description field to Port Forwarding rules",
    required=("floating-ip-port-forwarding",),
)

PORT_RANGES = Extension(
    alias="floating-ip-port-forwarding-port-ranges",
    name="Floating IP Port Forwarding support port ranges",
    description="Allows the creation of floating IP port forwarding with port ranges",
    required=("floating-ip-port-forwarding",),
)

IN_FIP = Extension(
    alias="expose-port-forwarding-in-fip",
    name="Expose port forwarding in FIP",
    description="Expose port forwardings of floating IPs",
    updated="2018-11-25T10:00:00-00:00",
    attributes={"floatingips": attrs(Attr("port_forwardings", filter=False))},
    required=("router", "floating-ip-port-forwarding"),
)

DETAIL = Extension(
    alias="floating-ip-port-forwarding-detail",
    name="Floating IP port forwarding detail",
    description="The forwardings a floating IP lists name themselves (id) and the port "
                "they forward to (internal_port_id).",
    updated="2022-05-06T10:00:00-00:00",
    required=("expose-port-forwarding-in-fip",),
)

EXTENSIONS = (EXTENSION, IN_FIP, DESCRIPTION, PORT_RANGES, DETAIL)
