"""qos: policies of Quality of Service rules (``/v2.0/qos/policies``), their
rules as sub-resources (``/v2.0/qos/policies/{policy_id}/<kind>_rules``) and by
their own id (``/v2.0/qos/alias_<kind>_rules/{id}``), and the rule types the
loaded mechanism drivers support (``/v2.0/qos/rule-types``).

Each kind of rule is a ``RuleKind``: its table's columns are the API's
parameters, and one rule of a kind per policy and direction (per policy for
DSCP marking), as in Neutron.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs, standard_attrs

PREFIX = "qos"
INGRESS, EGRESS, ANY = "ingress", "egress", "any"
DIRECTIONS = (INGRESS, EGRESS)
DIRECTIONS_AND_ANY = (ANY, INGRESS, EGRESS)
VALID_DSCP_MARKS = (0, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40,
                    44, 46, 48, 56)
#: what a rate may be (Neutron's DB_INTEGER_MAX_VALUE)
RATE_MAX = 2 ** 31 - 1

BANDWIDTH_LIMIT = "bandwidth_limit"
DSCP_MARKING = "dscp_marking"
MINIMUM_BANDWIDTH = "minimum_bandwidth"
PACKET_RATE_LIMIT = "packet_rate_limit"
MINIMUM_PACKET_RATE = "minimum_packet_rate"


class QosPolicyNotFound(exc.NotFound):
    message = "QoS policy %(policy_id)s could not be found."


class QosRuleNotFound(exc.NotFound):
    message = "QoS rule %(rule_id)s for policy %(policy_id)s could not be found."


class QosPolicyInUse(exc.InUse):
    message = "QoS Policy %(policy_id)s is used by %(object_type)s %(object_id)s."


class QosRuleNotSupported(exc.Conflict):
    message = "Rule %(rule_type)s is not supported by port %(port_id)s"


class QosRuleNotSupportedByNetwork(exc.Conflict):
    message = "Rule %(rule_type)s is not supported by network %(network_id)s"


class QoSRulesConflict(exc.Conflict):
    message = ("Rule %(new_rule_type)s conflicts with rule %(rule_id)s which already "
               "exists in QoS Policy %(policy_id)s.")


class QoSRuleParameterConflict(exc.Conflict):
    message = ("Unable to add the rule with value %(rule_value)s to the policy "
               "%(policy_id)s as the existing rule of type %(existing_rule)s has value "
               "%(existing_value)s.")


class QoSPolicyDefaultAlreadyExists(exc.Conflict):
    message = "A default QoS policy exists for project %(project_id)s."


class QosRuleTypeNotFound(exc.NotFound):
    message = "QoS rule type %(rule_type)s could not be found."


def _rate(name: str, required: bool = True) -> Attr:
    return Attr(name, allow_post=True, allow_put=True, default=REQUIRED if required else 0,
                convert=v.to_int, validate=v.integer_range(0, RATE_MAX), sort=True,
                convert_filter=v.to_int, int_range=(0, RATE_MAX))


def _direction(choices: tuple[str, ...]) -> Attr:
    return Attr("direction", allow_post=True, allow_put=True, default=EGRESS,
                validate=v.one_of(*choices), sort=True)


@dataclass(frozen=True)
class RuleKind:
    """A kind of rule: its type name, its parameters (their columns), its table's name."""

    rule_type: str
    params: dict[str, Attr]
    table: str

    @property
    def name(self) -> str:
        """``bandwidth_limit_rule``: the sub-resource's member name."""
        return f"{self.rule_type}_rule"

    @property
    def directed(self) -> bool:
        return "direction" in self.params

    def supported_parameters(self) -> list[dict[str, Any]]:
        """What the rule-type details list for it (``qos-rule-type-details``)."""
        found: list[dict[str, Any]] = []
        for name in self.params:
            if name == "direction":
                values = DIRECTIONS_AND_ANY if self.rule_type == MINIMUM_PACKET_RATE \
                    else DIRECTIONS
                found.append({"parameter_name": name, "parameter_type": "choices",
                              "parameter_values": list(values)})
            elif name == "dscp_mark":
                found.append({"parameter_name": name, "parameter_type": "choices",
                              "parameter_values": list(VALID_DSCP_MARKS)})
            else:
                found.append({"parameter_name": name, "parameter_type": "range",
                              "parameter_values": {"start": 0, "end": RATE_MAX}})
        return found


RULE_KINDS: dict[str, RuleKind] = {k.rule_type: k for k in (
    RuleKind(BANDWIDTH_LIMIT, attrs(_rate("max_kbps"), _rate("max_burst_kbps", False),
                                    _direction(DIRECTIONS)), "qos_bandwidth_limit_rules"),
    RuleKind(DSCP_MARKING, attrs(Attr(
        "dscp_mark", allow_post=True, allow_put=True, default=REQUIRED, convert=v.to_int,
        validate=v.one_of(*VALID_DSCP_MARKS), sort=True, convert_filter=v.to_int)),
        "qos_dscp_marking_rules"),
    RuleKind(MINIMUM_BANDWIDTH, attrs(_rate("min_kbps"), _direction(DIRECTIONS)),
             "qos_minimum_bandwidth_rules"),
    RuleKind(PACKET_RATE_LIMIT, attrs(_rate("max_kpps"), _rate("max_burst_kpps", False),
                                      _direction(DIRECTIONS)), "qos_packet_rate_limit_rules"),
    RuleKind(MINIMUM_PACKET_RATE, attrs(_rate("min_kpps"), _direction(DIRECTIONS_AND_ANY)),
             "qos_minimum_packet_rate_rules"),
)}
RULE_TYPES = tuple(RULE_KINDS)


POLICY = Resource(
    name="policy",
    collection="policies",
    prefix=PREFIX,
    taggable=True,
    not_found=lambda policy_id: QosPolicyNotFound(policy_id=policy_id),
    attrs={
        **standard_attrs(),
        **attrs(
            Attr("shared", allow_post=True, allow_put=True, default=False,
                 convert=v.to_boolean, validate=v.boolean, sort=True,
                 convert_filter=v.to_boolean),
            Attr("rules", filter=False),
            # qos-default: the project's default policy, which its new networks take
            Attr("is_default", allow_post=True, allow_put=True, default=False,
                 convert=v.to_boolean, validate=v.boolean, convert_filter=v.to_boolean),
        ),
    },
)


def _rule_resource(kind: RuleKind) -> Resource:
    return Resource(
        name=kind.name, collection=f"{kind.name}s", parent=(POLICY.path, POLICY.name),
        not_found=lambda **ids: QosRuleNotFound(rule_id=next(iter(ids.values())),
                                                policy_id=""),
        attrs={"id": Attr("id", validate=v.uuid, sort=True), **kind.params})


def _alias_resource(kind: RuleKind) -> Resource:
    """``/v2.0/qos/alias_<kind>_rules/{id}``: a rule by its id alone (no list, no create)."""
    params = {name: Attr(a.name, allow_put=True, convert=a.convert, validate=a.validate,
                         int_range=a.int_range, sort=a.sort)
              for name, a in kind.params.items()}
    return Resource(
        name=f"alias_{kind.name}", collection=f"alias_{kind.name}s", prefix=PREFIX,
        not_found=lambda **ids: QosRuleNotFound(rule_id=next(iter(ids.values())),
                                                policy_id=""),
        attrs={"id": Attr("id", validate=v.uuid, sort=True),
               "tenant_id": Attr("tenant_id", filter=False), **params})


RULES = {rule_type: _rule_resource(kind) for rule_type, kind in RULE_KINDS.items()}
ALIASES = {rule_type: _alias_resource(kind) for rule_type, kind in RULE_KINDS.items()}

RULE_TYPE = Resource(
    name="rule_type",
    collection="rule_types",
    prefix=PREFIX,
    hyphenated=True,
    not_found=lambda rule_type_id: QosRuleTypeNotFound(rule_type=rule_type_id),
    attrs=attrs(
        Attr("type", filter=False),
        Attr("drivers", filter=False),
        # qos-rule-type-filter: query parameters, never in a view
        Attr("all_rules", convert_filter=v.to_boolean, visible=False),
        Attr("all_supported", convert_filter=v.to_boolean, visible=False),
    ),
)

QOS = Extension(
    alias="qos", name="Quality of Service",
    description="The Quality of Service extension.",
    updated="2015-06-08T10:00:00-00:00",
    resources=(POLICY, RULES[BANDWIDTH_LIMIT], RULES[DSCP_MARKING],
               RULES[MINIMUM_BANDWIDTH], RULE_TYPE),
)
BW_LIMIT_DIRECTION = Extension(
    alias="qos-bw-limit-direction", name="Direction for QoS bandwidth limit rule",
    description="Allow to configure QoS bandwidth limit rule with specific direction: "
                "ingress or egress",
    updated="2017-04-10T10:00:00-00:00", required=("qos",))
BW_MINIMUM_INGRESS = Extension(
    alias="qos-bw-minimum-ingress", name="Ingress direction for QoS minimum bandwidth rule",
    description="Allows to configure QoS minimum bandwidth rule with ingress direction.",
    updated="2018-07-09T10:00:00-00:00", required=("qos",))
PPS = Extension(
    alias="qos-pps", name="QoS Rule Type Packet per Second Extension",
    description="Add QoS Rule Type Packet per Second",
    updated="2021-05-12T10:00:00-00:00", resources=(RULES[PACKET_RATE_LIMIT],),
    required=("qos",))
PPS_MINIMUM = Extension(
    alias="qos-pps-minimum", name="QoS minimum packet rate rule",
    description="Support for QoS minimum packet rate rule",
    updated="2021-07-14T10:00:00-00:00", resources=(RULES[MINIMUM_PACKET_RATE],),
    required=("qos",))
RULES_ALIAS = Extension(
    alias="qos-rules-alias", name="QoS rules alias API",
    description="API to enable GET, PUT and DELETE operations on QoS policy rules "
                "without specifying policy ID",
    updated="2018-10-07T10:00:00-00:00",
    resources=(ALIASES[BANDWIDTH_LIMIT], ALIASES[DSCP_MARKING], ALIASES[MINIMUM_BANDWIDTH]),
    required=("qos", "qos-bw-limit-direction"))
PPS_MINIMUM_ALIAS = Extension(
    alias="qos-pps-minimum-rule-alias", name="QoS minimum packet rate rule alias",
    description="API to enable GET, PUT and DELETE operations on QoS minimum packet "
                "rate rule without specifying policy ID",
    updated="2021-10-22T10:00:00-00:00", resources=(ALIASES[MINIMUM_PACKET_RATE],),
    required=("qos", "qos-pps-minimum"))
DEFAULT = Extension(
    alias="qos-default", name="QoS default policy",
    description="Expose the QoS default policy per project",
    updated="2017-04-06T10:00:00-00:00", required=("qos",))
RULE_TYPE_DETAILS = Extension(
    alias="qos-rule-type-details", name="Details of QoS rule types",
    description="Expose details about QoS rule types supported by loaded backend drivers",
    updated="2017-06-22T10:00:00-00:00", required=("qos",))
RULE_TYPE_FILTER = Extension(
    alias="qos-rule-type-filter", name="QoS rule type filter",
    description='Add the QoS rule type filter: "all_rules" lists all implemented QoS rule '
                'types, "all_supported" all supported by the loaded mechanism drivers',
    updated="2022-02-02T10:00:00-00:00", required=("qos",))

EXTENSIONS = (QOS, BW_LIMIT_DIRECTION, BW_MINIMUM_INGRESS, PPS, PPS_MINIMUM, RULES_ALIAS,
              PPS_MINIMUM_ALIAS, DEFAULT, RULE_TYPE_DETAILS, RULE_TYPE_FILTER)

#: ``qos_policy_id`` on networks and ports (the ``qos`` ML2 extension driver), and
#: on ports the policy of their network (``qos_network_policy_id``)
POLICY_ID, NETWORK_POLICY_ID = "qos_policy_id", "qos_network_policy_id"


def _policy_id() -> Attr:
    return Attr(POLICY_ID, allow_post=True, allow_put=True, default=None,
                validate=v.uuid_or_none)


PORT_NETWORK_POLICY = Extension(
    alias="qos-port-network-policy", name="QoS port network policy extension",
    description="Adds the QoS policy of networks and ports (qos_policy_id), and of a "
                "port's network (qos_network_policy_id)",
    updated="2019-11-01T10:00:00-00:00",
    attributes={"networks": attrs(_policy_id()),
                "ports": attrs(_policy_id(), Attr(NETWORK_POLICY_ID, filter=False))},
    required=("qos",))

#: ``qos_policy_id`` on floating IPs (the qos plugin, through the L3 plugin's hooks)
FIP = Extension(
    alias="qos-fip", name="Floating IP QoS",
    description="The floating IP Quality of Service extension",
    updated="2017-07-20T00:00:00-00:00",
    attributes={"floatingips": attrs(Attr(POLICY_ID, allow_post=True, allow_put=True,
                                          default=None, validate=v.uuid_or_none,
                                          filter=False))},
    required=("qos", "router"))

#: ``qos_policy_id`` in routers' ``external_gateway_info`` (the qos plugin,
#: through the L3 plugin's hooks)
GATEWAY_IP = Extension(
    alias="qos-gateway-ip", name="Router gateway IP QoS",
    description="The router gateway IP Quality of Service extension",
    updated="2018-02-24T00:00:00-00:00", required=("qos", "router"))

#: a port's ``resource_request`` (the qos ML2 extension driver): for Nova's
#: scheduling of minimum bandwidth and packet rate, in the request groups format
RESOURCE_REQUEST = Extension(
    alias="port-resource-request", name="Port Resource Request",
    description="Expose resource request to Port",
    updated="2018-05-08T10:00:00-00:00",
    attributes={"ports": attrs(Attr("resource_request", hidden=True, filter=False))},
    required=("qos",))
RESOURCE_REQUEST_GROUPS = Extension(
    alias="port-resource-request-groups", name="Port Resource Request Groups",
    description="Expose resource request groups to Port (request_groups, same_subtree)",
    updated="2021-08-02T10:00:00-00:00", required=("port-resource-request",))
