"""address-scope: the address spaces that subnet pools belong to. Addresses of
one scope are routed among themselves without NAT, and never to another scope.

A subnet pool names its scope (``address_scope_id``, one of the same IP
version); a network shows the scope of each IP version its subnets come from
(``ipv4_address_scope``, ``ipv6_address_scope``).
"""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs


class AddressScopeInUse(exc.InUse):
    message = ("Unable to complete operation on address scope %(address_scope_id)s. There "
               "are one or more subnet pools in use on the address scope.")


class AddressScopeUpdateError(exc.BadRequest):
    message = "Unable to update address scope %(address_scope_id)s : %(reason)s."


class NetworkAddressScopeAffinityError(exc.BadRequest):
    message = ("Subnets of the same address family hosted on the same network must all "
               "participate in the same address scope.")


class AddressScopePrefixConflict(exc.Conflict):
    message = ("Failed to associate address scope: subnetpools within an address scope "
               "must have unique prefixes.")


class IllegalSubnetPoolAssociationToAddressScope(exc.BadRequest):
    message = ("Illegal subnetpool association: subnetpool %(subnetpool_id)s cannot be "
               "associated with address scope %(address_scope_id)s.")


class IllegalSubnetPoolIpVersionAssociationToAddressScope(exc.BadRequest):
    message = ("Illegal subnetpool association: subnetpool %(subnetpool_id)s cannot "
               "associate with address scope %(address_scope_id)s because subnetpool "
               "ip_version is not %(ip_version)s.")


class IllegalSubnetPoolUpdate(exc.BadRequest):
    message = "Illegal subnetpool update : %(reason)s."


RESOURCE = Resource(
    hyphenated=True,
    name="address_scope",
    collection="address_scopes",
    not_found=exc.AddressScopeNotFound,
    attrs=attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("name", allow_post=True, allow_put=True, default="", validate=v.string(255),
             sort=True),
        Attr("project_id", allow_post=True, validate=v.project_id, sort=True),
        Attr("tenant_id", allow_post=True, validate=v.project_id, sort=True),
        Attr("shared", allow_post=True, allow_put=True, default=False, convert=v.to_boolean,
             sort=True),
        Attr("ip_version", allow_post=True, default=REQUIRED, convert=v.to_int,
             validate=v.one_of(4, 6), sort=True),
    ),
)

EXTENSION = Extension(
    alias="address-scope",
    name="Address scope",
    description="Address spaces of subnet pools: routed within, never between.",
    updated="2015-07-26T10:00:00-00:00",
    resources=(RESOURCE,),
    attributes={"networks": attrs(Attr("ipv4_address_scope", filter=False),
                                  Attr("ipv6_address_scope", filter=False))},
)
