"""vpnaas: IPsec site-to-site VPN (``/v2.0/vpn/...``) as neutron-vpnaas serves it:
IKE and IPsec policies, VPN services on routers, endpoint groups (vpn-endpoint-groups)
and the site connections between them; vpn-aes-ctr adds the AES CTR ciphers and
vpn-flavors a ``flavor_id`` on services (no flavors plugin: only None is taken).

As in Neutron, none of these carries standard attributes (no tags, timestamps or
revision), and a connection shows its pre-shared key to whoever may read it.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs

PREFIX = "vpn"
INITIATORS = ("bi-directional", "response-only")
ENCRYPTION_ALGORITHMS = (
    "3des", "aes-128", "aes-192", "aes-256",
    *(f"aes-{bits}-{mode}-{icv}" for mode in ("ccm", "gcm") for icv in (8, 12, 16)
      for bits in (128, 192, 256)),
    "aes-128-ctr", "aes-192-ctr", "aes-256-ctr",  # vpn-aes-ctr
)
AUTH_ALGORITHMS = ("sha1", "sha256", "sha384", "sha512", "aes-xcbc", "aes-cmac")
PFS_GROUPS = tuple(f"group{n}" for n in (2, 5, *range(14, 32)))
IKE_VERSIONS = ("v1", "v2")
PHASE1_MODES = ("main", "aggressive")
TRANSFORM_PROTOCOLS = ("esp", "ah", "ah-esp")
ENCAPSULATION_MODES = ("tunnel", "transport")
LIFETIME_UNITS = ("seconds",)
DPD_ACTIONS = ("clear", "disabled", "hold", "restart", "restart-by-peer")
ENDPOINT_TYPES = ("cidr", "network", "router", "subnet", "vlan")
SUBNET_ENDPOINT, CIDR_ENDPOINT = "subnet", "cidr"
LIFETIME_DEFAULT = {"units": "seconds", "value": 3600}
DPD_DEFAULT = {"action": "hold", "interval": 30, "timeout": 120}
MIN_LIFETIME = 60
IP_MIN_MTU = {4: 68, 6: 1280}
# statuses: agents report ACTIVE, DOWN or ERROR; the server sets the pending ones
ACTIVE, DOWN, ERROR = "ACTIVE", "DOWN", "ERROR"
PENDING_CREATE, PENDING_UPDATE, PENDING_DELETE = (
    "PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE")
PENDING = (PENDING_CREATE, PENDING_UPDATE, PENDING_DELETE)
REPORTED = (ACTIVE, DOWN, ERROR)


# --- errors (neutron-lib's names and messages) -------------------------------------------

class VPNServiceNotFound(exc.NotFound):
    message = "VPNService %(vpnservice_id)s could not be found"


class IPsecSiteConnectionNotFound(exc.NotFound):
    message = "ipsec_site_connection %(ipsec_site_conn_id)s not found"


class IPsecSiteConnectionDpdIntervalValueError(exc.InvalidInput):
    message = "ipsec_site_connection %(attr)s is equal to or less than dpd_interval"


class IPsecSiteConnectionMtuError(exc.InvalidInput):
    message = "ipsec_site_connection MTU %(mtu)d is too small for ipv%(version)s"


class IKEPolicyNotFound(exc.NotFound):
    message = "IKEPolicy %(ikepolicy_id)s could not be found"


class IPsecPolicyNotFound(exc.NotFound):
    message = "IPsecPolicy %(ipsecpolicy_id)s could not be found"


class IKEPolicyInUse(exc.InUse):
    message = ("IKEPolicy %(ikepolicy_id)s is in use by existing IPsecSiteConnection and "
               "can't be updated or deleted")


class IPsecPolicyInUse(exc.InUse):
    message = ("IPsecPolicy %(ipsecpolicy_id)s is in use by existing IPsecSiteConnection "
               "and can't be updated or deleted")


class VPNServiceInUse(exc.InUse):
    message = "VPNService %(vpnservice_id)s is still in use"


class SubnetInUseByVPNService(exc.InUse):
    message = "Subnet %(subnet_id)s is used by VPNService %(vpnservice_id)s"


class SubnetInUseByEndpointGroup(exc.InUse):
    message = "Subnet %(subnet_id)s is used by endpoint group %(group_id)s"


class SubnetInUseByIPsecSiteConnection(exc.InUse):
    message = ("Subnet %(subnet_id)s is used by ipsec site connection "
               "%(ipsec_site_connection_id)s")


class VPNStateInvalidToUpdate(exc.BadRequest):
    message = "Invalid state %(state)s of vpnaas resource %(id)s for updating"


class SubnetIsNotConnectedToRouter(exc.BadRequest):
    message = "Subnet %(subnet_id)s is not connected to Router %(router_id)s"


class RouterIsNotExternal(exc.BadRequest):
    message = "Router %(router_id)s has no external network gateway set"


class VPNPeerAddressNotResolved(exc.InvalidInput):
    message = "Peer address %(peer_address)s cannot be resolved"


class ExternalNetworkHasNoSubnet(exc.BadRequest):
    message = "Router's %(router_id)s external network has no %(ip_version)s subnet"


class VPNEndpointGroupNotFound(exc.NotFound):
    message = "Endpoint group %(endpoint_group_id)s could not be found"


class InvalidEndpointInEndpointGroup(exc.InvalidInput):
    message = "Endpoint '%(endpoint)s' is invalid for group type '%(group_type)s': %(why)s"


class MissingEndpointForEndpointGroup(exc.BadRequest):
    message = "No endpoints specified for endpoint group '%(group)s'"


class NonExistingSubnetInEndpointGroup(exc.InvalidInput):
    message = "Subnet %(subnet)s in endpoint group does not exist"


class MixedIPVersionsForIPSecEndpoints(exc.BadRequest):
    message = ("Endpoints in group %(group)s do not have the same IP version, as required "
               "for IPSec site-to-site connection")


class MixedIPVersionsForPeerCidrs(exc.BadRequest):
    message = ("Peer CIDRs do not have the same IP version, as required for IPSec "
               "site-to-site connection")


class MixedIPVersionsForIPSecConnection(exc.BadRequest):
    message = "IP versions are not compatible between peer and local endpoints"


class InvalidEndpointGroup(exc.BadRequest):
    message = ("Endpoint group%(suffix)s %(which)s cannot be specified, when VPN Service "
               "has subnet specified")


class WrongEndpointGroupType(exc.BadRequest):
    message = ("Endpoint group %(which)s type is '%(group_type)s' and should be "
               "'%(expected)s'")


class PeerCidrsInvalid(exc.BadRequest):
    message = "Peer CIDRs cannot be specified, when using endpoint groups"


class MissingPeerCidrs(exc.BadRequest):
    message = "Missing peer CIDRs for IPsec site-to-site connection"


class MissingRequiredEndpointGroup(exc.BadRequest):
    message = ("Missing endpoint group%(suffix)s %(which)s for IPSec site-to-site "
               "connection")


class EndpointGroupInUse(exc.BadRequest):
    message = "Endpoint group %(group_id)s is in use and cannot be deleted"


class FlavorsPluginNotLoaded(exc.NotFound):
    message = "Flavors plugin not found"


class IpsecValidationFailure(exc.BadRequest):
    message = "IPSec does not support %(resource)s attribute %(key)s with value '%(value)s'"


class PeerCidrOverlapsLocalCidr(exc.BadRequest):
    """neutrino's own check (neutron-vpnaas has none): traffic to a peer CIDR
    that is also local would never enter the tunnel."""

    message = "Peer CIDR %(peer_cidr)s overlaps local CIDR %(local_cidr)s"


# --- converters and validators ----------------------------------------------------------

def to_list(value: Any) -> Any:
    """Neutron's convert_to_list: None is empty, a lone value a list of one."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def _int_in(value: Any, low: int, name: str) -> int:
    """An integer (or its text) from ``low`` to the column's limit."""
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int):
        raise exc.HTTPBadRequest(msg=f"Invalid input for {name}. Reason: '{value}' is not "
                                     "an integer.")
    if not low <= value <= v.INT32[1]:
        raise exc.HTTPBadRequest(msg=f"Invalid input for {name}. Reason: '{value}' is not "
                                     f"in range {low} through {v.INT32[1]}.")
    return value


def _sub_dict(value: Any, name: str, keys: tuple[str, ...]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise exc.HTTPBadRequest(msg=f"Invalid input for {name}. Reason: '{value}' is not "
                                     "a dictionary.")
    unknown = sorted(str(k) for k in value if k not in keys)
    if unknown:
        raise exc.HTTPBadRequest(msg=f"Invalid input for {name}. Reason: Unexpected keys "
                                     f"supplied: {', '.join(unknown)}.")
    return dict(value)


def _choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise exc.HTTPBadRequest(msg=f"Invalid input for {name}. Reason: {value} is not in "
                                     f"{list(choices)}.")
    return value


def to_lifetime(value: Any) -> dict[str, Any]:
    """``{"units": "seconds", "value": N >= 60}``, either key optional."""
    found = _sub_dict(value, "lifetime", ("units", "value"))
    if "units" in found:
        found["units"] = _choice(found["units"], "lifetime", LIFETIME_UNITS)
    if "value" in found:
        found["value"] = _int_in(found["value"], MIN_LIFETIME, "lifetime")
    return found


def to_dpd(value: Any) -> dict[str, Any]:
    """``{"action", "interval", "timeout"}``, each optional (its default then)."""
    found = _sub_dict(value, "dpd", ("action", "interval", "timeout"))
    if "action" in found:
        found["action"] = _choice(found["action"], "dpd", DPD_ACTIONS)
    for key in ("interval", "timeout"):
        if key in found:
            found[key] = _int_in(found[key], 0, "dpd")
    return found


def cidr_list(value: Any) -> str | None:
    """Subnets in CIDR form, each once (host bits are cleared when stored)."""
    error = v.subnet_cidr_list(value)
    if error is None and any(len(item) > 64 for item in value):
        return "a CIDR is too long"
    return error


def canonical_cidrs(value: Any) -> Any:
    if not isinstance(value, list) or cidr_list(value) is not None:
        return value
    return [str(ipaddress.ip_network(item, strict=False)) for item in value]


def to_canonical_cidr_list(value: Any) -> Any:
    listed = to_list(value)
    return canonical_cidrs(listed)


_HOSTNAME = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?)+$")


def is_hostname(value: str) -> bool:
    return bool(_HOSTNAME.match(value)) and not value.replace(".", "").isdigit()


def _text(max_len: int, printable: bool) -> v.Validator:
    """A string a strongSwan configuration can carry: no control characters and,
    for identities and keys, no double quote (the agent quotes them)."""
    base = v.string(max_len)

    def check(value: Any) -> str | None:
        error = base(value)
        if error is None and printable and (
                any(ord(c) < 32 or ord(c) == 127 for c in value) or '"' in value):
            return f"'{value!r}' contains a control character or a double quote"
        return error

    return check


def psk(value: Any) -> str | None:
    error = _text(255, True)(value)
    if error is None and not value:
        return "the pre-shared key is empty"
    return error


def endpoints(value: Any) -> str | None:
    if not isinstance(value, list):
        return f"'{value}' is not a list"
    for item in value:
        error = v.string(255)(item)
        if error:
            return error
    return None


def _name() -> Attr:
    return Attr("name", allow_post=True, allow_put=True, default="", validate=v.string(255),
                sort=True)


def _common() -> dict[str, Attr]:
    return attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("project_id", allow_post=True, validate=v.project_id, sort=True),
        Attr("tenant_id", allow_post=True, validate=v.project_id, sort=True),
        _name(),
        Attr("description", allow_post=True, allow_put=True, default="",
             validate=v.string(255), sort=True),
    )


def _values(name: str, choices: tuple[str, ...], default: str) -> Attr:
    return Attr(name, allow_post=True, allow_put=True, default=default,
                validate=v.one_of(*choices), sort=True)


def _lifetime() -> Attr:
    return Attr("lifetime", allow_post=True, allow_put=True, default={}, convert=to_lifetime,
                filter=False)


IKE_POLICY = Resource(
    name="ikepolicy",
    collection="ikepolicies",
    prefix=PREFIX,
    not_found=lambda ikepolicy_id: IKEPolicyNotFound(ikepolicy_id=ikepolicy_id),
    attrs={**_common(), **attrs(
        _values("auth_algorithm", AUTH_ALGORITHMS, "sha1"),
        _values("encryption_algorithm", ENCRYPTION_ALGORITHMS, "aes-128"),
        _values("phase1_negotiation_mode", PHASE1_MODES, "main"),
        _lifetime(),
        _values("ike_version", IKE_VERSIONS, "v1"),
        _values("pfs", PFS_GROUPS, "group5"),
    )},
)

IPSEC_POLICY = Resource(
    name="ipsecpolicy",
    collection="ipsecpolicies",
    prefix=PREFIX,
    not_found=lambda ipsecpolicy_id: IPsecPolicyNotFound(ipsecpolicy_id=ipsecpolicy_id),
    attrs={**_common(), **attrs(
        _values("transform_protocol", TRANSFORM_PROTOCOLS, "esp"),
        _values("auth_algorithm", AUTH_ALGORITHMS, "sha1"),
        _values("encryption_algorithm", ENCRYPTION_ALGORITHMS, "aes-128"),
        _values("encapsulation_mode", ENCAPSULATION_MODES, "tunnel"),
        _lifetime(),
        _values("pfs", PFS_GROUPS, "group5"),
    )},
)

VPNSERVICE = Resource(
    name="vpnservice",
    collection="vpnservices",
    prefix=PREFIX,
    not_found=lambda vpnservice_id: VPNServiceNotFound(vpnservice_id=vpnservice_id),
    attrs={**_common(), **attrs(
        Attr("subnet_id", allow_post=True, default=None, validate=v.uuid_or_none, sort=True),
        Attr("router_id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
        Attr("admin_state_up", allow_post=True, allow_put=True, default=True,
             convert=v.to_boolean, sort=True),
        Attr("external_v4_ip", sort=True),
        Attr("external_v6_ip", sort=True),
        Attr("status", sort=True),
        # vpn-flavors
        Attr("flavor_id", allow_post=True, default=None, validate=v.uuid_or_none, sort=True),
    )},
)

ENDPOINT_GROUP = Resource(
    name="endpoint_group",
    collection="endpoint_groups",
    prefix=PREFIX,
    hyphenated=True,
    not_found=lambda endpoint_group_id: VPNEndpointGroupNotFound(
        endpoint_group_id=endpoint_group_id),
    attrs={**_common(), **attrs(
        Attr("type", allow_post=True, default=REQUIRED, validate=v.one_of(*ENDPOINT_TYPES),
             sort=True),
        Attr("endpoints", allow_post=True, default=[], convert=to_list, validate=endpoints,
             filter=False),
    )},
)

SITE_CONNECTION = Resource(
    name="ipsec_site_connection",
    collection="ipsec_site_connections",
    prefix=PREFIX,
    hyphenated=True,
    not_found=lambda ipsec_site_connection_id: IPsecSiteConnectionNotFound(
        ipsec_site_conn_id=ipsec_site_connection_id),
    attrs={**_common(), **attrs(
        Attr("local_id", allow_post=True, allow_put=True, default="",
             validate=_text(255, True), sort=True),
        Attr("peer_address", allow_post=True, allow_put=True, default=REQUIRED,
             validate=_text(255, True), sort=True),
        Attr("peer_id", allow_post=True, allow_put=True, default=REQUIRED,
             validate=_text(255, True), sort=True),
        Attr("peer_cidrs", allow_post=True, allow_put=True, default=[],
             convert=to_canonical_cidr_list, validate=cidr_list, filter=False),
        Attr("local_ep_group_id", allow_post=True, allow_put=True, default=None,
             validate=v.uuid_or_none, sort=True),
        Attr("peer_ep_group_id", allow_post=True, allow_put=True, default=None,
             validate=v.uuid_or_none, sort=True),
        Attr("route_mode", sort=True),
        Attr("mtu", allow_post=True, allow_put=True, default=1500, convert=v.to_int,
             validate=v.non_negative, sort=True),
        _values("initiator", INITIATORS, "bi-directional"),
        Attr("auth_mode", sort=True),
        Attr("psk", allow_post=True, allow_put=True, default=REQUIRED, validate=psk,
             sort=True),
        Attr("dpd", allow_post=True, allow_put=True, default={}, convert=to_dpd,
             filter=False),
        Attr("admin_state_up", allow_post=True, allow_put=True, default=True,
             convert=v.to_boolean, sort=True),
        Attr("status", sort=True),
        Attr("vpnservice_id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
        Attr("ikepolicy_id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
        Attr("ipsecpolicy_id", allow_post=True, default=REQUIRED, validate=v.uuid,
             sort=True),
    )},
)

VPNAAS = Extension(
    alias="vpnaas",
    name="VPN service",
    description="Extension for VPN service",
    updated="2013-05-29T10:00:00-00:00",
    resources=(VPNSERVICE, SITE_CONNECTION, IPSEC_POLICY, IKE_POLICY),
    required=("router",),
)

ENDPOINT_GROUPS = Extension(
    alias="vpn-endpoint-groups",
    name="VPN Endpoint Groups",
    description="VPN endpoint groups support",
    updated="2015-08-04T10:00:00-00:00",
    resources=(ENDPOINT_GROUP,),
    required=("vpnaas",),
)

AES_CTR = Extension(
    alias="vpn-aes-ctr",
    name="VPN support for AES CTR mode",
    description="Add AES CTR choices for encryption algorithm",
    updated="2024-01-09T09:00:00-00:00",
    required=("vpnaas",),
)

FLAVORS = Extension(
    alias="vpn-flavors",
    name="VPN Service Flavor Extension",
    description="Flavor support for vpnservices.",
    updated="2017-04-19T00:00:00-00:00",
    required=("vpnaas",),
)

EXTENSIONS = (VPNAAS, ENDPOINT_GROUPS, AES_CTR, FLAVORS)
