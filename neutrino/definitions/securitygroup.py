"""security-group: groups of filtering rules that ports belong to, and the
extensions refining them (stateful-security-group, security-groups-normalized-cidr,
security-groups-shared-filtering).

Protocols, ports and prefixes are converted here as Neutron converts them
(protocol numbers stay strings, names lower case, a bare address gains its
mask); the checks that need a whole rule live in ``services/secgroups/rules.py``.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs, standard_attrs

SECURITY_GROUPS = "security_groups"  # the port attribute
DEFAULT_NAME = "default"
DEFAULT_DESCRIPTION = "Default security group"
ETHERTYPES = ("IPv4", "IPv6")
DIRECTIONS = ("ingress", "egress")

# IP protocols by name, as Neutron accepts them (icmpv6 is the legacy ipv6-icmp).
PROTOCOLS: dict[str, int] = {
    "ah": 51, "dccp": 33, "egp": 8, "esp": 50, "gre": 47, "hopopt": 0, "icmp": 1,
    "igmp": 2, "ip": 0, "ipip": 4, "ipv6-encap": 41, "ipv6-frag": 44, "ipv6-icmp": 58,
    "icmpv6": 58, "ipv6-nonxt": 59, "ipv6-opts": 60, "ipv6-route": 43, "ospf": 89,
    "pgm": 113, "rsvp": 46, "sctp": 132, "tcp": 6, "udp": 17, "udplite": 136, "vrrp": 112,
}
# Protocols with ports, by name (their numbers follow from PROTOCOLS).
PORT_PROTOCOLS = ("dccp", "sctp", "tcp", "udp", "udplite")
#: a rule's port bound, as the OpenAPI document has it
PORT = {"type": ["integer", "null"], "minimum": 0, "maximum": 65535}
ANY_PROTOCOL = "any"  # the API reference's word for "all protocols": stored as null


# --- errors (Neutron's names and messages) ---------------------------------------------

class SecurityGroupNotFound(exc.NotFound):
    message = "Security group %(id)s does not exist"


class SecurityGroupRuleNotFound(exc.NotFound):
    message = "Security group rule %(id)s does not exist"


class SecurityGroupInUse(exc.InUse):
    message = "Security Group %(id)s in use."


class SecurityGroupCannotRemoveDefault(exc.InUse):
    message = "Insufficient rights for removing default security group."


class SecurityGroupCannotUpdateDefault(exc.InUse):
    message = "Updating default security group not allowed."


class SecurityGroupDefaultAlreadyExists(exc.InUse):
    message = "Default security group already exists."


class SecurityGroupRuleExists(exc.InUse):
    message = "Security group rule already exists. Rule id is %(rule_id)s."


class SecurityGroupConflict(exc.Conflict):
    message = "Error %(reason)s while attempting the operation."


MIXED_STATEFULNESS = ("Cannot apply both stateful and stateless security groups on the same "
                      "port at the same time")


class DuplicateSecurityGroupRuleInPost(exc.InUse):
    message = "Duplicate Security Group Rule in POST."


class SecurityGroupRuleInvalidProtocol(exc.InvalidInput):
    message = ("Security group rule protocol %(protocol)s not supported. Only protocol "
               "values %(values)s and integer representations [0 to 255] are supported.")


class SecurityGroupInvalidPortValue(exc.InvalidInput):
    message = "Invalid value for port %(port)s."


class SecurityGroupInvalidPortRange(exc.InvalidInput):
    message = "For TCP/UDP protocols, port_range_min must be <= port_range_max"


class SecurityGroupInvalidProtocolForPort(exc.InvalidInput):
    message = ("Ports cannot be specified for protocol %(protocol)s. Ports are only "
               "supported for %(valid_port_protocols)s.")


class SecurityGroupProtocolRequiredWithPorts(exc.InvalidInput):
    message = "Must also specify protocol if port range is given."


class SecurityGroupInvalidIcmpValue(exc.InvalidInput):
    message = "Invalid value for ICMP %(field)s (%(attr)s) %(value)s. It must be 0 to 255."


class SecurityGroupMissingIcmpType(exc.InvalidInput):
    message = ("ICMP code (port-range-max) %(value)s is provided but ICMP type "
               "(port-range-min) is missing.")


class SecurityGroupEthertypeConflictWithProtocol(exc.InvalidInput):
    message = "Invalid ethertype %(ethertype)s for protocol %(protocol)s."


class SecurityGroupRuleParameterConflict(exc.InvalidInput):
    message = "Conflicting value ethertype %(ethertype)s for CIDR %(cidr)s"


class SecurityGroupMultipleRemoteEntites(exc.InvalidInput):  # sic: Neutron's spelling
    message = ("Only one of remote_ip_prefix or remote_group_id or remote_address_group_id "
               "may be provided.")


class SecurityGroupNotSingleGroupRules(exc.InvalidInput):
    message = "Only allowed to update rules for one security profile at a time"


class SecurityGroupRulesNotSingleTenant(exc.InvalidInput):
    message = "Multiple tenant_ids in bulk security group rule create not allowed"


class DefaultSecurityGroupRuleNotFound(exc.NotFound):
    message = "Default Security Group rule %(id)s does not exist"


class DefaultSecurityGroupRuleExists(exc.InUse):
    message = "Default Security group rule already exists. Rule id is %(rule_id)s."


class DuplicateDefaultSgRuleInPost(exc.InUse):
    message = "Duplicate Default Security Group Rule in POST."


class InvalidCIDR(exc.BadRequest):
    message = "Invalid CIDR %(input)s given as IP prefix."


class PortSecurityAndIPRequiredForSecurityGroups(exc.InvalidInput):
    message = ("Port security must be enabled and port must have an IP address in order "
               "to use security groups.")


class PortSecurityPortHasSecurityGroup(exc.InUse):
    message = ("Port has security group associated. Cannot disable port security or IP "
               "address until security group is removed.")


# --- converters ---------------------------------------------------------------------

_SUPPORTED = [None, *PROTOCOLS]


def to_protocol(value: Any) -> str | None:
    """A name in lower case, or a number 0-255 kept as a string (as Neutron stores it)."""
    if value is None or (isinstance(value, str) and value.lower() == ANY_PROTOCOL):
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
    raise SecurityGroupRuleInvalidProtocol(protocol=value, values=_SUPPORTED)


def to_ethertype(value: Any) -> Any:
    """IPv4/IPv6 in any case; anything else is left for the validator to name."""
    if isinstance(value, str):
        for ethertype in ETHERTYPES:
            if ethertype.lower() == value.lower():
                return ethertype
    return value


def to_port(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, bool) and isinstance(value, int | str):
        try:
            port = int(value)
        except ValueError:
            port = -1
        if 0 <= port <= 65535:
            return port
    raise SecurityGroupInvalidPortValue(port=value)


def to_ip_prefix(value: Any) -> str | None:
    """An address with its mask: ``10.0.0.5`` -> ``10.0.0.5/32`` (host bits are kept,
    ``normalized_cidr`` drops them); empty means none."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or "%" in value:
        raise InvalidCIDR(input=value)
    try:
        return str(ipaddress.ip_interface(value.strip()))
    except ValueError:
        raise InvalidCIDR(input=value) from None


def normalized_cidr(prefix: str | None) -> str | None:
    return None if prefix is None else str(ipaddress.ip_interface(prefix).network)


def group_ids(value: Any) -> str | None:
    """A port's groups: UUIDs, each once (Neutron's uuid_list); null means "not given"."""
    return None if value is None else v.uuid_list(value)


def name_not_default(value: Any) -> str | None:
    error = v.string(255)(value)
    if error:
        return error
    if value.lower() == DEFAULT_NAME:
        raise SecurityGroupDefaultAlreadyExists()
    return None


def _identity(value: str) -> str:
    return value


# --- resources -------------------------------------------------------------------------

GROUP = Resource(
    hyphenated=True,
    name="security_group",
    collection="security_groups",
    taggable=True,
    not_found=lambda security_group_id: SecurityGroupNotFound(id=security_group_id),
    attrs={
        **standard_attrs(),
        **attrs(
            Attr("name", allow_post=True, allow_put=True, default="",
                 validate=name_not_default, sort=True,
                 schema={"type": "string", "maxLength": 255}),
            Attr("security_group_rules", filter=False),
            # none given: the project's or system-wide default statefulness
            Attr("stateful", allow_post=True, allow_put=True, convert=v.to_boolean,
                 sort=True),
            Attr("shared", convert_filter=v.to_boolean),
        ),
    },
)

# One resource whose single and plural names are the same, as Neutron's.
DEFAULT_STATEFULNESS = Resource(
    name="security_groups_default_statefulness",
    collection="security_groups_default_statefulness",
    hyphenated=True,
    projectless=True,  # project_id null: the system-wide setting
    attrs=attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("project_id", allow_post=True, default=None, validate=v.string_or_none(255),
             sort=True),
        Attr("tenant_id", sort=True),
        Attr("stateful", allow_post=True, allow_put=True, default=True,
             convert=v.to_boolean, sort=True),
    ),
)

#: a default rule's remote_group_id meaning the group the rule is made for
PARENT = "PARENT"

_RULE_BODY = (
    Attr("direction", allow_post=True, default=REQUIRED, validate=v.one_of(*DIRECTIONS),
         sort=True),
    Attr("ethertype", allow_post=True, default="IPv4", convert=to_ethertype,
         validate=v.one_of(*ETHERTYPES), sort=True),
    Attr("protocol", allow_post=True, default=None, convert=to_protocol, sort=True,
         schema={"type": ["string", "integer", "null"]}),
    Attr("port_range_min", allow_post=True, default=None, convert=to_port, sort=True,
         schema=PORT),
    Attr("port_range_max", allow_post=True, default=None, convert=to_port, sort=True,
         schema=PORT),
    Attr("remote_ip_prefix", allow_post=True, default=None, convert=to_ip_prefix, sort=True,
         schema={"type": ["string", "null"]}),
    Attr("remote_group_id", allow_post=True, default=None, validate=v.string_or_none(255),
         sort=True),
    Attr("remote_address_group_id", allow_post=True, default=None,
         validate=v.string_or_none(255), sort=True),
)

_RULE_STANDARD = {k: a for k, a in standard_attrs(name=False).items() if k != "tags"}

RULE = Resource(
    hyphenated=True,
    name="security_group_rule",
    collection="security_group_rules",
    not_found=lambda security_group_rule_id: SecurityGroupRuleNotFound(
        id=security_group_rule_id),
    attrs={
        **_RULE_STANDARD,
        **attrs(
            Attr("security_group_id", allow_post=True, default=REQUIRED,
                 validate=v.string(255), sort=True),
            *_RULE_BODY,
            Attr("normalized_cidr", sort=True),
        ),
    },
)

# No project, no update, no standard attributes beyond a description: a template
# the admin keeps (as Neutron's); the remote groups it names are not checked.
DEFAULT_RULE = Resource(
    hyphenated=True,
    name="default_security_group_rule",
    collection="default_security_group_rules",
    not_found=lambda default_security_group_rule_id: DefaultSecurityGroupRuleNotFound(
        id=default_security_group_rule_id),
    attrs=attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("description", allow_post=True, default="", validate=v.string(255), sort=True),
        *_RULE_BODY,
        Attr("used_in_default_sg", allow_post=True, default=False, convert=v.to_boolean,
             validate=v.boolean, sort=True),
        Attr("used_in_non_default_sg", allow_post=True, default=True, convert=v.to_boolean,
             validate=v.boolean, sort=True),
    ),
)

PORT_ATTRS = attrs(Attr(SECURITY_GROUPS, allow_post=True, allow_put=True,
                        validate=group_ids, convert_filter=_identity,
                        schema={"type": "array", "items": {"type": "string"}}))

EXTENSION = Extension(
    alias="security-group",
    name="security-group",
    description="The security groups extension.",
    updated="2012-10-05T10:00:00-00:00",
    resources=(GROUP, RULE),
    attributes={"ports": PORT_ATTRS},
)

EXTENSIONS = (
    EXTENSION,
    Extension("stateful-security-group", "Stateful security group",
              "Indicates if the security group is stateful or not",
              updated="2019-11-26T09:00:00-00:00", required=("security-group",)),
    Extension("security-groups-normalized-cidr",
              "Normalized CIDR field for security group rules",
              "Add new field with normalized remote_ip_prefix cidr in SG rule",
              updated="2020-07-28T10:00:00-00:00", required=("security-group",)),
    Extension("security-groups-shared-filtering", "Security group filtering on the shared "
              "field", "Support filtering security groups on the shared field",
              updated="2021-01-26T10:00:00-00:00", required=("security-group",)),
    Extension("port-security-groups-filtering", "Port filtering on security groups",
              "Ports may be listed by the security groups they are in.",
              updated="2022-01-01T10:00:00-00:00", required=("security-group",)),
    Extension("security-groups-default-rules", "Default rules for security groups",
              "Configure set of security group rules used as default rules for every new "
              "security group", updated="2022-12-19T10:00:00-00:00",
              resources=(DEFAULT_RULE,),
              required=("security-group", "standard-attr-description")),
    Extension("security-groups-default-statefulness",
              "Security Groups Default Statefulness",
              "The stateful value of new security groups, set per project or for all.",
              updated="2026-04-13T00:00:00-00:00", resources=(DEFAULT_STATEFULNESS,),
              required=("security-group", "stateful-security-group")),
    Extension("security-groups-rules-belongs-to-default-sg",
              "Security group rule belongs to the project's default security group",
              "Flag to determine if the security group rule belongs to the project's "
              "default security group", updated="2023-05-01T00:00:00-00:00",
              attributes={"security-group-rules": attrs(
                  Attr("belongs_to_default_sg", convert_filter=v.to_boolean))},
              required=("security-group",)),
)
