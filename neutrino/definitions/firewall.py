"""fwaas_v2: firewall rules, ordered into policies, applied to router ports by
firewall groups (``/v2.0/fwaas/...``), as neutron-fwaas serves them; and
standard-attr-fwaas-v2 (timestamps, revisions, descriptions on all three)."""

from __future__ import annotations

import ipaddress
from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, Resource, attrs, standard_attrs
from neutrino.definitions.securitygroup import PROTOCOLS

PREFIX = "fwaas"
ACTIONS = ("allow", "deny", "reject")
#: protocols whose rules may name ports
PORT_PROTOCOLS = ("tcp", "udp")
DEFAULT_GROUP = "default"
DEFAULT_INGRESS_POLICY = "default ingress"
DEFAULT_EGRESS_POLICY = "default egress"
# statuses (an agent reports ACTIVE, DOWN or ERROR; the server sets the others)
ACTIVE, DOWN, INACTIVE, ERROR = "ACTIVE", "DOWN", "INACTIVE", "ERROR"
PENDING_CREATE, PENDING_UPDATE, PENDING_DELETE = (
    "PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE")
PENDING = (PENDING_CREATE, PENDING_UPDATE, PENDING_DELETE)


# --- errors (neutron-lib's names and messages) -------------------------------------------

class FirewallGroupNotFound(exc.NotFound):
    message = "Firewall group %(firewall_id)s could not be found."


class FirewallGroupInUse(exc.InUse):
    message = "Firewall group %(firewall_id)s is still active."


class FirewallGroupInPendingState(exc.Conflict):
    message = ("Operation cannot be performed since associated firewall group "
               "%(firewall_id)s is in %(pending_state)s.")


class FirewallGroupPortInvalid(exc.Conflict):
    message = "Port %(port_id)s of firewall group is invalid."


class FirewallGroupPortInUse(exc.InUse):
    message = ("Port(s) %(port_ids)s provided already associated with other firewall "
               "group(s).")


class FirewallGroupPortNotSupported(exc.Conflict):
    message = "Port %(port_id)s is not supported by firewall driver '%(driver_name)s'."


class FirewallPolicyNotFound(exc.NotFound):
    message = "Firewall policy %(firewall_policy_id)s could not be found."


class FirewallPolicyInUse(exc.InUse):
    message = "Firewall policy %(firewall_policy_id)s is being used."


class FirewallPolicyConflict(exc.NotFound):
    message = ("Operation cannot be performed since firewall policy %(firewall_policy_id)s "
               "for your project could not be found. Please confirm if the firewall policy "
               "exists and is shared.")


class FirewallRuleSharingConflict(exc.NotFound):
    message = ("Operation cannot be performed since firewall policy %(firewall_policy_id)s "
               "could not find the firewall rule %(firewall_rule_id)s. Please confirm if the "
               "firewall rule exists and is shared.")


class FirewallPolicySharingConflict(exc.Conflict):
    message = ("Operation cannot be performed. Before sharing firewall policy "
               "%(firewall_policy_id)s, share associated firewall rule %(firewall_rule_id)s.")


class FirewallRuleNotFound(exc.NotFound):
    message = "Firewall rule %(firewall_rule_id)s could not be found."


class FirewallRuleInUse(exc.InUse):
    message = "Firewall rule %(firewall_rule_id)s is being used."


class FirewallRuleNotAssociatedWithPolicy(exc.InvalidInput):
    message = ("Firewall rule %(firewall_rule_id)s is not associated with firewall policy "
               "%(firewall_policy_id)s.")


class FirewallRuleInvalidICMPParameter(exc.InvalidInput):
    message = "%(param)s are not allowed when protocol is set to ICMP."


class FirewallRuleWithPortWithoutProtocolInvalid(exc.InvalidInput):
    message = "Source/destination port requires a protocol."


class FirewallRuleInvalidPortValue(exc.InvalidInput):
    message = "Invalid value for port %(port)s."


class FirewallRuleInfoMissing(exc.InvalidInput):
    message = "Missing rule info argument for insert/remove rule operation."


class FirewallIpAddressConflict(exc.InvalidInput):
    message = "Invalid input - IP addresses do not agree with IP Version."


class FirewallRuleConflict(exc.Conflict):
    message = ("Operation cannot be performed since firewall rule %(firewall_rule_id)s is "
               "not shared and belongs to another project %(project_id)s.")


class FirewallRuleAlreadyAssociated(exc.Conflict):
    message = ("Operation cannot be performed since firewall rule %(firewall_rule_id)s is "
               "already associated with firewall policy %(firewall_policy_id)s.")


class FirewallGroupCannotRemoveDefault(exc.InUse):
    message = "Deleting default firewall group not allowed."


class FirewallDefaultParameterExists(exc.InUse):
    message = ("Operation cannot be performed since '%(name)s' is a reserved name for "
               "%(resource_type)s.")


class FirewallDefaultObjectUpdateRestricted(exc.InUse):
    message = ("Operation cannot be performed on default object '%(resource_id)s' of type "
               "%(resource_type)s.")


# --- converters and validators ----------------------------------------------------------

def to_protocol(value: Any) -> str | None:
    """A protocol name (lower case) or a number 0-255 as given; None: any."""
    if value is None:
        return None
    if isinstance(value, str) and value.lower() in PROTOCOLS:
        return value.lower()
    if not isinstance(value, bool) and isinstance(value, int | str):
        try:
            number = int(value)
        except ValueError:
            number = -1
        if 0 <= number <= 255:
            return str(number)
    raise exc.InvalidInput(error_message=(
        f"IP protocol '{value}' is not supported. Only protocol names and their integer "
        "representation (0 to 255) are supported"))


def to_string_or_none(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def port_range(value: Any) -> str | None:
    """``"N"`` or ``"N:M"``, each 0-65535 (order is checked with the rule)."""
    if value is None:
        return None
    if not isinstance(value, str):
        return f"Invalid port: {value}"
    for part in value.split(":") if value.count(":") <= 1 else [value]:
        if not part.isascii() or not part.isdigit() or not 0 <= int(part) <= 65535:
            return f"Invalid port: {part}"
    return None


def ip_or_subnet(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and "/" in value:
        return v.subnet_cidr(value)
    error = v.ip_address(value)
    return None if error is None else f"'{value}' is neither a valid IP address, nor is it a " \
        "valid IP subnet"


def ip_version_of(value: str) -> int:
    return ipaddress.ip_network(value, strict=False).version


def _shared() -> Attr:
    return Attr("shared", allow_post=True, allow_put=True, default=False,
                convert=v.to_boolean, sort=True)


RULE = Resource(
    name="firewall_rule",
    collection="firewall_rules",
    prefix=PREFIX,
    not_found=lambda firewall_rule_id: FirewallRuleNotFound(firewall_rule_id=firewall_rule_id),
    attrs={
        **standard_attrs(),
        **attrs(
            Attr("firewall_policy_id", filter=False),
            _shared(),
            Attr("protocol", allow_post=True, allow_put=True, default=None,
                 convert=to_protocol, sort=True),
            Attr("ip_version", allow_post=True, allow_put=True, default=4, convert=v.to_int,
                 validate=v.one_of(4, 6), sort=True),
            Attr("source_ip_address", allow_post=True, allow_put=True, default=None,
                 validate=ip_or_subnet, sort=True),
            Attr("destination_ip_address", allow_post=True, allow_put=True, default=None,
                 validate=ip_or_subnet, sort=True),
            Attr("source_port", allow_post=True, allow_put=True, default=None,
                 convert=to_string_or_none, validate=port_range, filter=False),
            Attr("destination_port", allow_post=True, allow_put=True, default=None,
                 convert=to_string_or_none, validate=port_range, filter=False),
            Attr("action", allow_post=True, allow_put=True, default="deny",
                 convert=v.to_lowercase, validate=v.one_of(*ACTIONS), sort=True),
            Attr("enabled", allow_post=True, allow_put=True, default=True,
                 convert=v.to_boolean, sort=True),
        ),
    },
)

POLICY = Resource(
    name="firewall_policy",
    collection="firewall_policies",
    prefix=PREFIX,
    not_found=lambda firewall_policy_id: FirewallPolicyNotFound(
        firewall_policy_id=firewall_policy_id),
    member_actions={"insert_rule": "insert_rule", "remove_rule": "remove_rule"},
    attrs={
        **standard_attrs(),
        **attrs(
            _shared(),
            Attr("firewall_rules", allow_post=True, allow_put=True, default=[],
                 convert=v.none_to_empty_list, validate=v.uuid_list),
            Attr("audited", allow_post=True, allow_put=True, default=False,
                 convert=v.to_boolean, sort=True),
        ),
    },
)

GROUP = Resource(
    name="firewall_group",
    collection="firewall_groups",
    prefix=PREFIX,
    not_found=lambda firewall_group_id: FirewallGroupNotFound(firewall_id=firewall_group_id),
    attrs={
        **standard_attrs(),
        **attrs(
            Attr("admin_state_up", allow_post=True, allow_put=True, default=True,
                 convert=v.to_boolean, sort=True),
            Attr("status", sort=True),
            _shared(),
            Attr("ports", allow_post=True, allow_put=True, default=[],
                 convert=v.none_to_empty_list, validate=v.uuid_list),
            Attr("ingress_firewall_policy_id", allow_post=True, allow_put=True, default=None,
                 validate=v.uuid_or_none, sort=True),
            Attr("egress_firewall_policy_id", allow_post=True, allow_put=True, default=None,
                 validate=v.uuid_or_none, sort=True),
        ),
    },
)

FWAAS_V2 = Extension(
    alias="fwaas_v2",
    name="FWaaS v2",
    description="Provides support for firewall-as-a-service version 2",
    updated="2016-10-06T10:00:00-00:00",
    resources=(RULE, POLICY, GROUP),
)

STANDARD_ATTRS = Extension(
    alias="standard-attr-fwaas-v2",
    name="Standard Attribute FWaaS v2 Extension",
    description="Add standard attributes to FWaaS v2 resources",
    updated="2023-04-27T01:00:00-00:00",
    required=("fwaas_v2",),
)

EXTENSIONS = (FWAAS_V2, STANDARD_ATTRS)
