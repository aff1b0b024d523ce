"""l3-ndp-proxy: an instance's IPv6 address published on its router's external
network (``/v2.0/ndp_proxies``), routed there without NAT; l3-ext-ndp-proxy:
the router's ``enable_ndp_proxy``, without which it publishes none."""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import (
    REQUIRED,
    UNSET,
    Attr,
    Extension,
    Resource,
    attrs,
    standard_attrs,
)

ENABLE = "enable_ndp_proxy"


class NDPProxyNotFound(exc.NotFound):
    message = "Ndp proxy %(id)s could not be found."


class RouterGatewayInUseByNDPProxy(exc.Conflict):
    message = ("Unable to unset external gateway of router %(router_id)s, There are one or "
               "more ndp proxies still in use on the router.")


class RouterInterfaceInUseByNDPProxy(exc.Conflict):
    message = ("Unable to remove subnet %(subnet_id)s from router %(router_id)s, There are "
               "one or more ndp proxies still in use on the subnet.")


class AddressScopeConflict(exc.Conflict):
    message = ("The IPv6 address scope %(ext_address_scope)s of external network conflict "
               "with internal network's IPv6 address scope %(internal_address_scope)s.")


class RouterGatewayNotValid(exc.Conflict):
    message = "Can not enable ndp proxy on router %(router_id)s, %(reason)s."


class RouterNDPProxyNotEnable(exc.Conflict):
    message = ("The enable_ndp_proxy parameter of router %(router_id)s must be set as True "
               "while create ndp proxy entry on it.")


class PortUnreachableRouter(exc.Conflict):
    message = "The port %(port_id)s cannot reach the router %(router_id)s by IPv6 subnet."


class InvalidAddress(exc.BadRequest):
    message = "The address %(address)s is invalid, reason: %(reason)s."


class RouterIPv6GatewayInUse(exc.Conflict):
    message = ("Can't remove the IPv6 subnet from external gateway of router %(router_id)s, "
               "the IPv6 subnet in use by the router's ndp proxy.")


class DuplicateNDPProxy(exc.Conflict):
    """What Neutron's unique key (router, address) answers a second proxy with."""

    message = ("Failed to create a duplicate NDPProxy: for attribute(s) ['router_id', "
               "'ip_address'] with value(s) %(router_id)s, %(ip_address)s")


def _boolean_or_none(value: Any) -> bool | None:
    return None if value is None else v.to_boolean(value)


RESOURCE = Resource(
    name="ndp_proxy",
    collection="ndp_proxies",
    not_found=lambda ndp_proxy_id: NDPProxyNotFound(id=ndp_proxy_id),
    taggable=True,  # standard attributes, so tags too, as in Neutron
    attrs={
        **standard_attrs(),
        **attrs(
            Attr("router_id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
            Attr("port_id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
            Attr("ip_address", allow_post=True, default=None, convert=v.canonical_ip,
                 validate=v.ip_address_or_none, sort=True),
        ),
    },
)

EXTENSION = Extension(
    alias="l3-ndp-proxy", name="L3 NDP Proxy",
    description="Router support for L3 NDP proxy.",
    updated="2021-06-29T10:00:00-00:00",
    resources=(RESOURCE,),
    required=("router",),
)

ROUTER_ATTRIBUTE = Extension(
    alias="l3-ext-ndp-proxy", name="Router support to enable NDP proxy",
    description="Router extension to enable ndp proxy",
    updated="2020-08-25T00:00:00-00:00",
    attributes={"routers": attrs(Attr(ENABLE, allow_post=True, allow_put=True, default=UNSET,
                                      convert=_boolean_or_none, validate=None))},
    required=("router", "ext-gw-mode"),
)

EXTENSIONS = (EXTENSION, ROUTER_ATTRIBUTE)
