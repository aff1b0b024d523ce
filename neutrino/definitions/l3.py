"""router: routers between networks, with a gateway to an external network,
and floating IPs from that network; plus the extensions refining them
(ext-gw-mode, extraroute, extraroute-atomic, fip-port-details, floatingip-pools)."""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import (
    REQUIRED,
    Attr,
    Extension,
    Resource,
    attrs,
    standard_attrs,
)

ROUTER_INTERFACE = "network:router_interface"
ROUTER_GATEWAY = "network:router_gateway"
FLOATINGIP = "network:floatingip"
DHCP = "network:dhcp"


# --- errors ------------------------------------------------------------------------

class RouterNotFound(exc.NotFound):
    message = "Router %(router_id)s could not be found."


class FloatingIPNotFound(exc.NotFound):
    message = "Floating IP %(floatingip_id)s could not be found"


class RouterInUse(exc.InUse):
    message = "Router %(router_id)s %(reason)s"


class RouterInterfaceNotFound(exc.NotFound):
    message = "Router %(router_id)s does not have an interface with id %(port_id)s"


class RouterInterfaceNotFoundForSubnet(exc.NotFound):
    message = "Router %(router_id)s has no interface on subnet %(subnet_id)s"


class SubnetMismatchForPort(exc.BadRequest):
    message = "Subnet on port %(port_id)s does not match the requested subnet %(subnet_id)s."


class RouterInterfaceInUseByFloatingIP(exc.InUse):
    message = ("Router interface for subnet %(subnet_id)s on router %(router_id)s cannot be "
               "deleted, as it is required by one or more floating IPs.")


class RouterInterfaceInUseByRoute(exc.InUse):
    message = ("Router interface for subnet %(subnet_id)s on router %(router_id)s cannot be "
               "deleted, as it is required by one or more routes.")


class RouterExternalGatewayInUseByFloatingIp(exc.InUse):
    message = ("Gateway cannot be updated for router %(router_id)s, since a gateway to "
               "external network %(net_id)s is required by one or more floating IPs.")


class ExternalGatewayForFloatingIPNotFound(exc.NotFound):
    message = ("External network %(external_network_id)s is not reachable from subnet "
               "%(subnet_id)s.  Therefore, cannot associate Port %(port_id)s with a "
               "Floating IP.")


class FloatingIPPortAlreadyAssociated(exc.InUse):
    message = ("Cannot associate floating IP %(floating_ip_address)s (%(fip_id)s) with port "
               "%(port_id)s using fixed IP %(fixed_ip)s, as that fixed IP already has a "
               "floating IP on external network %(net_id)s.")


class IPAddressChangeNotAllowed(exc.BadRequest):
    message = "IP updates for port %(port_id)s are not allowed"


class ServicePortInUse(exc.InUse):
    message = "Port %(port_id)s cannot be deleted directly via the port API: %(reason)s."


class InvalidRoutes(exc.BadRequest):
    message = "Invalid format for routes: %(routes)s, %(reason)s"


class RoutesExhausted(exc.BadRequest):
    message = ("Unable to complete operation for %(router_id)s. The number of routes exceeds "
               "the maximum %(quota)s.")


def bad_router(msg: str) -> exc.BadRequest:
    return exc.BadRequest(resource="router", msg=msg)


def bad_floatingip(msg: str) -> exc.BadRequest:
    return exc.BadRequest(resource="floatingip", msg=msg)


# --- validators ----------------------------------------------------------------------

def _gateway_info(value: Any) -> str | None:
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        return f"'{value}' is not a dictionary"
    unknown = sorted(set(value) - {"network_id", "enable_snat", "external_fixed_ips",
                                   "qos_policy_id"})
    if unknown:
        return f"Unexpected keys supplied: {', '.join(unknown)}"
    if "network_id" not in value:
        return "Validation of dictionary's keys failed. Expected keys: {'network_id'}"
    error = v.uuid(value["network_id"])
    if error:
        return error
    if "enable_snat" in value and v.boolean(value["enable_snat"]):
        return v.boolean(value["enable_snat"])
    if "qos_policy_id" in value and v.uuid_or_none(value["qos_policy_id"]):
        return v.uuid_or_none(value["qos_policy_id"])
    fixed = value.get("external_fixed_ips")
    if fixed is not None:
        return v.fixed_ips(fixed)
    return None


def _gateway_convert(value: Any) -> Any:
    if isinstance(value, dict) and "enable_snat" in value:
        try:
            return {**value, "enable_snat": v.to_boolean(value["enable_snat"])}
        except exc.InvalidInput:
            return value
    return value


def _route(item: Any) -> str | None:
    error = v.dict_keys(("destination", "nexthop"), item)
    if error:
        return error
    return v.route_cidr(item["destination"]) or v.ip_address(item["nexthop"])


def routes(value: Any) -> str | None:
    if not isinstance(value, list):
        return f"'{value}' is not a list"
    for item in value:
        error = _route(item)
        if error:
            return error
    return None


def canonical_routes(value: Any) -> Any:
    """Compressed IPv6 forms, so equal routes compare equal; null is no routes,
    as Neutron converts it."""
    if value is None:
        return []
    if not isinstance(value, list):
        return value
    return [{"destination": v.to_canonical_cidr(r["destination"]),
             "nexthop": v.canonical_ip(r["nexthop"])}
            if isinstance(r, dict) and set(r) == {"destination", "nexthop"} else r
            for r in value]


# --- resources -----------------------------------------------------------------------

ROUTER = Resource(
    name="router",
    collection="routers",
    taggable=True,
    not_found=RouterNotFound,
    member_actions={"add_router_interface": "add_router_interface",
                    "remove_router_interface": "remove_router_interface",
                    "add_extraroutes": "add_extraroutes",
                    "remove_extraroutes": "remove_extraroutes"},
    attrs={
        **standard_attrs(),
        **attrs(
            Attr("admin_state_up", allow_post=True, allow_put=True, default=True,
                 convert=v.to_boolean, sort=True),
            Attr("status", sort=True),
            Attr("external_gateway_info", allow_post=True, allow_put=True, default=None,
                 convert=_gateway_convert, validate=_gateway_info, filter=False,
                 schema={"type": ["object", "null"], "properties": {
                     "network_id": {"type": "string"}, "enable_snat": {"type": "boolean"},
                     "external_fixed_ips": {"type": "array", "items": {"type": "object"}}}}),
        ),
    },
)

FLOATINGIP_RESOURCE = Resource(
    name="floatingip",
    collection="floatingips",
    taggable=True,
    not_found=FloatingIPNotFound,
    attrs={
        **standard_attrs(name=False),
        **attrs(
            Attr("floating_ip_address", allow_post=True, validate=v.ip_address_or_none,
                 convert=v.canonical_ip, sort=True),
            Attr("subnet_id", allow_post=True, default=None, validate=v.uuid_or_none,
                 visible=False),
            Attr("floating_network_id", allow_post=True, default=REQUIRED, validate=v.uuid,
                 sort=True),
            Attr("router_id", sort=True),
            Attr("port_id", allow_post=True, allow_put=True, default=None,
                 validate=v.uuid_or_none, sort=True),
            Attr("fixed_ip_address", allow_post=True, allow_put=True, default=None,
                 validate=v.ip_address_or_none, convert=v.canonical_ip, sort=True),
            Attr("status", sort=True),
        ),
    },
)

ROUTER_EXTENSION = Extension(
    alias="router",
    name="Neutron L3 Router",
    description="Router abstraction for basic L3 forwarding between L2 Neutron networks "
                "and access to external networks via a NAT gateway.",
    resources=(ROUTER, FLOATINGIP_RESOURCE),
    required=("external-net",),
)

EXT_GW_MODE = Extension(
    alias="ext-gw-mode",
    name="Neutron L3 Configurable external gateway mode",
    description="Extension of the router abstraction for specifying whether SNAT should "
                "occur on the external gateway",
    required=("router",),
)

EXTRAROUTE = Extension(
    alias="extraroute",
    name="Neutron Extra Route",
    description="Extra routes configuration for L3 router",
    attributes={"routers": attrs(
        Attr("routes", allow_post=False, allow_put=True, convert=canonical_routes,
             validate=routes, filter=False, schema={"type": "array", "items": {
                 "type": "object", "required": ["destination", "nexthop"], "properties": {
                     "destination": {"type": "string"}, "nexthop": {"type": "string"}}}}),
    )},
    required=("router",),
)

EXTRAROUTE_ATOMIC = Extension(
    alias="extraroute-atomic",
    name="Atomically add/remove extra routes",
    description="Edit extra routes of a router on server side by atomically adding/removing "
                "extra routes",
    required=("extraroute",),
)

FIP_PORT_DETAILS = Extension(
    alias="fip-port-details",
    name="Floating IP Port Details Extension",
    description="Add port_details attribute to Floating IP resource",
    attributes={"floatingips": attrs(Attr("port_details", filter=False))},
    required=("router",),
)

FLOATINGIP_POOL = Resource(
    hyphenated=True,  # /v2.0/floatingip-pools, as Neutron serves it (and only so)
    name="floatingip_pool",
    collection="floatingip_pools",
    attrs=attrs(
        Attr("subnet_id", sort=True), Attr("subnet_name", sort=True),
        Attr("network_id", sort=True), Attr("cidr", sort=True),
        Attr("project_id", sort=True), Attr("tenant_id", sort=True),
    ),
)

FLOATINGIP_POOLS = Extension(
    alias="floatingip-pools",
    name="Floating IP Pools Extension",
    description="Provides a floating IP pools API.",
    resources=(FLOATINGIP_POOL,),
    required=("router",),
)

PORT_IP_CHANGE_NOT_ALLOWED = Extension(
    alias="l3-port-ip-change-not-allowed",
    name="Prevent L3 router ports IP address change extension",
    description="A router interface's IPv4 addresses change with the router's "
                "interfaces only, not by an update of its port.",
    updated="2018-10-09T10:00:00-00:00",
    required=("router",),
)

#: ``ha`` on routers (the router plugin, with keepalived on the L3 agents):
#: an admin's to set and to see, as in Neutron's policy
L3_HA = Extension(
    alias="l3-ha",
    name="HA Router extension",
    description="Adds HA capability to routers.",
    attributes={"routers": attrs(
        Attr("ha", allow_post=True, allow_put=True, convert=v.to_boolean, admin_only=True,
             hidden=True, filter=False),
    )},
    required=("router",),
)

#: ``ha`` on networks (neutron-lib's ``network_ha``; the router plugin): given at
#: create, never shown; a network made with it true is its project's HA network,
#: where the project's HA routers speak VRRP. Neutron sets it on the HA networks
#: it makes; here only an admin may (Neutron has no policy rule for it)
NETWORK_HA = Extension(
    alias="network_ha",
    name="Network HA creation flag",
    description="Network high availability creation flag.",
    updated="2023-04-27T10:00:00-00:00",
    attributes={"networks": attrs(
        Attr("ha", allow_post=True, default=False, convert=v.to_boolean, visible=False,
             filter=False, admin_only=True),
    )},
)

#: ``flavor_id`` on routers (the router plugin, with the flavors plugin): given
#: at create only; the flavor's provider makes the router HA or not. Any string
#: is taken, as in Neutron: one that names no flavor is FlavorNotFound.
L3_FLAVORS = Extension(
    alias="l3-flavors",
    name="Router Flavor Extension",
    description="Flavor support for routers.",
    updated="2016-05-17T00:00:00-00:00",
    attributes={"routers": attrs(
        Attr("flavor_id", allow_post=True, default=None, validate=v.string_or_none(None),
             sort=True),
    )},
    required=("flavors", "router"),
)

EXTENSIONS = (ROUTER_EXTENSION, EXT_GW_MODE, EXTRAROUTE, EXTRAROUTE_ATOMIC, FIP_PORT_DETAILS,
              FLOATINGIP_POOLS, PORT_IP_CHANGE_NOT_ALLOWED, L3_HA, NETWORK_HA, L3_FLAVORS)
