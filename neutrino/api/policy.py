"""Authorisation rules in Neutron's policy language: the defaults, and a
``policy.yaml`` that overrides them (oslo.policy's file format).

Rules are strings such as ``"rule:admin_or_owner or rule:shared"``; checks
are ``rule:NAME``, ``role:NAME``, ``field:COLLECTION:ATTR=VALUE`` (``=~RE``:
a regular expression), ``KEY:%(TARGET_KEY)s`` (a context value equals a
target value), ``KEY:VALUE``, ``@`` (always) and ``!`` (never), joined by
``and``/``or``/``not`` and brackets. The plugins' queries decide what a
caller could see at all (owner, shared, RBAC); ``get_*`` rules then filter
what they return, and the other rules decide writes and attributes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import yaml

from neutrino.config import ConfigError, Opt, OptGroup, parse_bool
from neutrino.context import Context
from neutrino.definitions import qos

GROUP = OptGroup("oslo_policy", [
    Opt("policy_file", str, "policy.yaml",
        "Rules overriding the defaults (YAML or JSON); relative to the directory of the "
        "config file that names it, or of the first config file. Optional unless set."),
    Opt("enforce_scope", parse_bool, True,
        "Refuse tokens scoped to the system or a domain: every rule is for projects."),
])

# Neutron's personas (secure RBAC): a member of the target's project may write
# it, a reader may read it; admins may do anything. Keystone makes "admin"
# imply "member" and "member" imply "reader".
ADMIN = "rule:admin_only"
PROJECT_MEMBER = "role:member and project_id:%(project_id)s"
PROJECT_READER = "role:reader and project_id:%(project_id)s"
ADMIN_OR_MEMBER = f"({ADMIN}) or ({PROJECT_MEMBER})"
ADMIN_OR_READER = f"({ADMIN}) or ({PROJECT_READER})"
PROJECT_MANAGER = "role:manager and project_id:%(project_id)s"
ADMIN_OR_MANAGER = f"({ADMIN}) or ({PROJECT_MANAGER})"
NET_OWNER_MEMBER = "role:member and project_id:%(network:project_id)s"
ADMIN_OR_NET_OWNER_MEMBER = f"({ADMIN}) or ({NET_OWNER_MEMBER})"
SERVICE = "rule:service_api"


def _crud(resource: str, read: str = ADMIN_OR_READER, write: str = ADMIN_OR_MEMBER
          ) -> dict[str, str]:
    return {f"create_{resource}": write, f"get_{resource}": read,
            f"update_{resource}": write, f"delete_{resource}": write}


DEFAULT_RULES: dict[str, str] = {
    "context_is_admin": "role:admin",
    "owner": "project_id:%(project_id)s",
    "admin_or_owner": "rule:context_is_admin or rule:owner",
    "admin_only": "rule:context_is_admin",
    "context_is_advsvc": "role:advsvc",
    "service_api": "role:service",
    "regular_user": "",
    "default": "rule:admin_or_owner",
    "shared": "field:networks:shared=True",
    "external": "field:networks:router:external=True",
    "network_owner": "project_id:%(network:project_id)s",
    "admin_or_network_owner": "rule:context_is_admin or rule:network_owner",
    "admin_owner_or_network_owner": "rule:owner or rule:admin_or_network_owner",
    "network_device": "field:port:device_owner=~^network:",
    "shared_subnetpools": "field:subnetpools:shared=True",
    "shared_address_scopes": "field:address_scopes:shared=True",
    "shared_security_group": "field:security_groups:shared=True",
    "shared_metering_label": "field:metering_labels:shared=True",
    "restrict_wildcard": "(not field:rbac_policy:target_tenant=* and "
                         "not field:rbac_policy:target_project=*) or rule:admin_only",

    **_crud("network", read=f"{ADMIN_OR_READER} or rule:shared or rule:external or "
                            "rule:context_is_advsvc"),
    "create_network:shared": ADMIN,
    "create_network:router:external": ADMIN,
    "create_network:provider:network_type": ADMIN,
    "create_network:provider:physical_network": ADMIN,
    "create_network:provider:segmentation_id": ADMIN,
    "create_network:segments": ADMIN,
    "update_network:shared": ADMIN,
    "update_network:router:external": ADMIN,
    "update_network:provider:network_type": ADMIN,
    "update_network:provider:physical_network": ADMIN,
    "update_network:provider:segmentation_id": ADMIN,
    "update_network:segments": ADMIN,
    "create_network:is_default": ADMIN,
    # network_ha: Neutron has no rule for it (only its server sets it); an
    # admin's here, as making a project's HA network is
    "create_network:ha": ADMIN,
    "update_network:is_default": ADMIN,

    # a subnet belongs to its network's owner; what a non-owner may read of
    # them (shared and external networks) the database query decides
    "create_subnet": ADMIN_OR_NET_OWNER_MEMBER,
    "update_subnet": ADMIN_OR_NET_OWNER_MEMBER,
    "delete_subnet": ADMIN_OR_NET_OWNER_MEMBER,

    **_crud("subnetpool", read=f"{ADMIN_OR_READER} or rule:shared_subnetpools"),
    "create_subnetpool:shared": ADMIN,
    "create_subnetpool:is_default": ADMIN,
    "update_subnetpool:is_default": ADMIN,
    **_crud("address_scope", read=f"{ADMIN_OR_READER} or rule:shared_address_scopes"),
    "create_address_scope:shared": ADMIN,
    "update_address_scope:shared": ADMIN,

    # ports: the network's owner may also manage the ports on its network
    "create_port": f"{ADMIN_OR_MEMBER} or rule:context_is_advsvc or {SERVICE}",
    "create_port:device_owner": f"not rule:network_device or rule:context_is_advsvc or "
                                f"{SERVICE} or {ADMIN_OR_NET_OWNER_MEMBER}",
    "create_port:mac_address": f"rule:context_is_advsvc or {SERVICE} or "
                               f"{ADMIN_OR_NET_OWNER_MEMBER}",
    "create_port:fixed_ips:ip_address": f"rule:context_is_advsvc or {SERVICE} or "
                                        f"{ADMIN_OR_NET_OWNER_MEMBER}",
    "create_port:port_security_enabled": f"rule:context_is_advsvc or {SERVICE} or "
                                         f"{ADMIN_OR_NET_OWNER_MEMBER}",
    "create_port:binding:host_id": f"{ADMIN} or {SERVICE}",
    "create_port:binding:profile": f"{ADMIN} or {SERVICE}",
    "create_port:allowed_address_pairs": ADMIN_OR_NET_OWNER_MEMBER,
    "update_port": f"{ADMIN_OR_MEMBER} or rule:context_is_advsvc or {SERVICE}",
    "update_port:device_owner": f"not rule:network_device or rule:context_is_advsvc or "
                                f"{SERVICE} or {ADMIN_OR_NET_OWNER_MEMBER}",
    "update_port:mac_address": f"{ADMIN} or {SERVICE}",
    "update_port:fixed_ips:ip_address": f"rule:context_is_advsvc or {SERVICE} or "
                                        f"{ADMIN_OR_NET_OWNER_MEMBER}",
    "update_port:port_security_enabled": f"rule:context_is_advsvc or {SERVICE} or "
                                         f"{ADMIN_OR_NET_OWNER_MEMBER}",
    "update_port:binding:host_id": f"{ADMIN} or {SERVICE}",
    "update_port:binding:profile": f"{ADMIN} or {SERVICE}",
    "update_port:allowed_address_pairs": ADMIN_OR_NET_OWNER_MEMBER,
    # port-trusted-vif: an admin's mark
    "create_port:trusted": ADMIN,
    "update_port:trusted": ADMIN,
    "delete_port": f"rule:context_is_advsvc or {SERVICE} or {ADMIN_OR_NET_OWNER_MEMBER} "
                   f"or ({PROJECT_MEMBER})",

    "get_port_binding": ADMIN,
    "create_port_binding": ADMIN,
    "update_port_binding": ADMIN,
    "delete_port_binding": ADMIN,
    "activate": ADMIN,

    **_crud("segment", read=ADMIN, write=ADMIN),

    # --- security groups
    **_crud("security_group", read=f"{ADMIN_OR_READER} or rule:shared_security_group"),
    **_crud("security_group_rule"),
    # a template without a project: anyone with a role reads it, admins change it
    **_crud("default_security_group_rule", read="role:reader", write=ADMIN),
    # which groups a project sees (its own, those shared with it) the query decides
    **_crud("address_group", read="role:reader"),
    "add_addresses": ADMIN_OR_MEMBER,
    "remove_addresses": ADMIN_OR_MEMBER,

    # --- L3: routers, floating IPs, port forwardings
    **_crud("router"),
    "create_router:external_gateway_info:enable_snat": ADMIN,
    "create_router:external_gateway_info:external_fixed_ips": ADMIN,
    "update_router:external_gateway_info:enable_snat": ADMIN,
    "update_router:external_gateway_info:external_fixed_ips": ADMIN,
    "create_router:ha": ADMIN,
    "update_router:ha": ADMIN,
    "get_router:ha": ADMIN,
    "add_router_interface": ADMIN_OR_MEMBER,
    # a pool's prefixes, a pool at a time (subnetpool-prefix-ops): its owner's
    "add_prefixes": ADMIN_OR_MEMBER,
    "remove_prefixes": ADMIN_OR_MEMBER,
    "onboard_network_subnets": ADMIN_OR_MEMBER,
    # the stateful value of a project's new security groups: its manager's
    **_crud("security_groups_default_statefulness", read=ADMIN_OR_READER,
            write=ADMIN_OR_MANAGER),
    "remove_router_interface": ADMIN_OR_MEMBER,
    "add_extraroutes": ADMIN_OR_MEMBER,
    "remove_extraroutes": ADMIN_OR_MEMBER,
    **_crud("floatingip"),
    "create_floatingip:floating_ip_address": ADMIN,
    # a port forwarding's project is its floating IP's
    **_crud("floatingip_port_forwarding"),
    # a router's conntrack helpers: its owner's (the router's project is the target)
    **_crud("router_conntrack_helper"),

    # --- FWaaS v2: only admins share; readers see their project's and the shared
    "shared_firewall_rules": "field:firewall_rules:shared=True",
    "shared_firewall_policies": "field:firewall_policies:shared=True",
    "shared_firewall_groups": "field:firewall_groups:shared=True",
    **_crud("firewall_rule", read=f"{ADMIN_OR_READER} or rule:shared_firewall_rules"),
    "create_firewall_rule:shared": ADMIN,
    "update_firewall_rule:shared": ADMIN,
    **_crud("firewall_policy", read=f"{ADMIN_OR_READER} or rule:shared_firewall_policies"),
    "create_firewall_policy:shared": ADMIN,
    "update_firewall_policy:shared": ADMIN,
    "insert_rule": ADMIN_OR_MEMBER,
    "remove_rule": ADMIN_OR_MEMBER,
    **_crud("firewall_group", read=f"{ADMIN_OR_READER} or rule:shared_firewall_groups"),
    "create_firewall_group:shared": ADMIN,
    "update_firewall_group:shared": ADMIN,

    # --- VPNaaS: as neutron-vpnaas, members only, even to read (a connection
    # shows its pre-shared key)
    **_crud("ikepolicy", read=ADMIN_OR_MEMBER),
    **_crud("ipsecpolicy", read=ADMIN_OR_MEMBER),
    **_crud("vpnservice", read=ADMIN_OR_MEMBER),
    **_crud("endpoint_group", read=ADMIN_OR_MEMBER),
    **_crud("ipsec_site_connection", read=ADMIN_OR_MEMBER),

    # --- metering: only admins make labels and rules; a project reads its own
    # labels and the shared ones, and its labels' rules
    **_crud("metering_label", read=f"{ADMIN_OR_READER} or rule:shared_metering_label",
            write=ADMIN),
    **_crud("metering_label_rule", write=ADMIN),

    # --- RBAC: only admins share with everyone ('*')
    **_crud("rbac_policy"),
    "create_rbac_policy:target_tenant": "rule:restrict_wildcard",
    "update_rbac_policy:target_tenant": f"rule:restrict_wildcard and ({ADMIN_OR_MEMBER})",

    # --- agents and the availability zones they make (reads included: others see none)
    "get_agent": ADMIN,
    "update_agent": ADMIN,
    "delete_agent": ADMIN,
    "get_availability_zone": ADMIN,
    # the server's Prometheus metrics (GET /metrics): an operator's, as the agents
    "get_metrics": ADMIN,
    # how full the networks are: an admin's to know
    "get_network_ip_availability": ADMIN,
    # the segmentation ids project networks take: an admin's, tags included
    **_crud("network_segment_range", read=ADMIN, write=ADMIN),
    "create_network_segment_range:tags": ADMIN,
    "update_network_segment_range:tags": ADMIN,
    "delete_network_segment_range:tags": ADMIN,
    # a project's auto-allocated topology: its readers get it (made on first
    # request), its members delete it
    "get_auto_allocated_topology": ADMIN_OR_READER,
    "delete_auto_allocated_topology": ADMIN_OR_MEMBER,
    # service providers belong to no project: any reader may list them
    "get_service_provider": "role:reader",
    # --- NDP proxies: a project's, as Neutron's defaults
    **_crud("ndp_proxy"),
    # --- Local IPs: a project's; their port associations its owner's (the local
    # IP's project is the target), as Neutron's defaults
    **_crud("local_ip"),
    "create_local_ip_port_association": ADMIN_OR_MEMBER,
    "get_local_ip_port_association": ADMIN_OR_READER,
    "delete_local_ip_port_association": ADMIN_OR_MEMBER,
    # --- trunks: a project's, as Neutron's defaults
    **_crud("trunk"),
    "get_subports": ADMIN_OR_READER,
    "add_subports": ADMIN_OR_MEMBER,
    "remove_subports": ADMIN_OR_MEMBER,
    # --- flavors, of no project either: any reader sees the flavors, only admins
    # the service profiles; only admins change them and bind one to the other
    **_crud("flavor", read="role:reader", write=ADMIN),
    **_crud("service_profile", read=ADMIN, write=ADMIN),
    "get_flavor_service_profile": ADMIN_OR_READER,
    "create_flavor_service_profile": ADMIN,
    "delete_flavor_service_profile": ADMIN,
    # which agents host which networks and routers
    "get_dhcp-networks": ADMIN,
    "create_dhcp-network": ADMIN,
    "delete_dhcp-network": ADMIN,
    "get_dhcp-agents": ADMIN,
    "get_l3-routers": ADMIN,
    "create_l3-router": ADMIN,
    "delete_l3-router": ADMIN,
    "get_l3-agents": ADMIN,

    # --- packet logs: a project's manager (Neutron's defaults since its secure RBAC;
    # admin only before); loggable resources belong to no project: admins list them
    **_crud("log", read=ADMIN_OR_MANAGER, write=ADMIN_OR_MANAGER),
    "get_loggable_resource": ADMIN_OR_MANAGER,

    # --- QoS: a project's managers make its policies and rules (Neutron's defaults
    # since its secure RBAC; admin only before); readers see theirs and the shared
    "shared_qos_policy": "field:policies:shared=True",
    **_crud("policy", read=f"{ADMIN_OR_READER} or rule:shared_qos_policy",
            write=ADMIN_OR_MANAGER),
    **{rule: check for kind in qos.RULE_TYPES for rule, check in _crud(
        f"policy_{kind}_rule", write=ADMIN_OR_MANAGER).items()},
    # a rule by its id alone shows its policy's project as tenant_id
    **{rule: check for kind in qos.RULE_TYPES for rule, check in _crud(
        f"alias_{kind}_rule", read=f"({ADMIN}) or (role:reader and project_id:%(tenant_id)s)",
        write=f"({ADMIN}) or (role:manager and project_id:%(tenant_id)s)").items()},
    "get_rule_type": "role:reader",

    "update_tags": ADMIN_OR_MEMBER,
    "get_quota": ADMIN_OR_READER,
    "update_quota": ADMIN,
    "delete_quota": ADMIN,
}

# A check may hold "%(name)s", so brackets count as tokens only on their own.
_TOKEN = re.compile(r"\s*((?:[^\s()%]|%\([^)]*\)s|%)+|\(|\))")


class _Parser:
    """Recursive descent over ``or`` < ``and`` < ``not`` < check | (expr)."""

    def __init__(self, text: str):
        self.tokens = _TOKEN.findall(text)
        self.pos = 0

    def parse(self) -> Callable[[Policy, Context, Mapping[str, Any]], bool]:
        if not self.tokens:
            return lambda *_: True
        expr = self._or()
        if self.pos != len(self.tokens):
            raise ValueError(f"unexpected {self.tokens[self.pos]!r}")
        return expr

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _or(self):
        terms = [self._and()]
        while self._peek() == "or":
            self.pos += 1
            terms.append(self._and())
        return terms[0] if len(terms) == 1 else (
            lambda p, c, t: any(term(p, c, t) for term in terms))

    def _and(self):
        terms = [self._not()]
        while self._peek() == "and":
            self.pos += 1
            terms.append(self._not())
        return terms[0] if len(terms) == 1 else (
            lambda p, c, t: all(term(p, c, t) for term in terms))

    def _not(self):
        if self._peek() == "not":
            self.pos += 1
            inner = self._not()
            return lambda p, c, t: not inner(p, c, t)
        if self._peek() == "(":
            self.pos += 1
            inner = self._or()
            if self._peek() != ")":
                raise ValueError("missing ')'")
            self.pos += 1
            return inner
        token = self._peek()
        if token is None:
            raise ValueError("unexpected end of rule")
        self.pos += 1
        return _check(token)


def _check(token: str):
    if token == "@":
        return lambda *_: True
    if token == "!":
        return lambda *_: False
    kind, _, arg = token.partition(":")
    if kind == "rule":
        return lambda p, c, t: p.check_rule(arg, c, t)
    if kind == "role":
        return lambda p, c, t: arg.lower() in c.roles
    if kind == "field":
        _, _, spec = arg.partition(":")
        attr, _, wanted = spec.partition("=")
        return lambda p, c, t: _field_matches(t.get(attr), wanted)
    match = re.fullmatch(r"%\((.+)\)s", arg)
    if match:
        target_key = match.group(1)
        return lambda p, c, t: (getattr(c, kind, None) is not None
                                and str(getattr(c, kind)) == str(t.get(target_key)))
    return lambda p, c, t: str(getattr(c, kind, None)) == arg


def _field_matches(value: Any, wanted: str) -> bool:
    if wanted.startswith("~"):
        return isinstance(value, str) and re.search(wanted[1:], value) is not None
    return value is not None and str(value) == wanted


class Policy:
    def __init__(self, overrides: Mapping[str, str] | None = None,
                 enforce_scope: bool = True):
        self.rules = {**DEFAULT_RULES, **(overrides or {})}
        self.enforce_scope = enforce_scope
        self._compiled = lru_cache(maxsize=None)(self._compile)
        for name in self.rules:  # a broken rule fails at start, not on a request
            self._compiled(name)

    def _compile(self, name: str):
        return _Parser(self.rules.get(name, "rule:admin_only")).parse()

    def check_rule(self, name: str, ctx: Context, target: Mapping[str, Any]) -> bool:
        if name not in self.rules:
            return False
        return self._compiled(name)(self, ctx, target)

    def allows(self, action: str, ctx: Context, target: Mapping[str, Any]) -> bool:
        """Unknown actions default to allowed, as Neutron's default rule for reads.

        Every rule is for project-scoped tokens: with ``enforce_scope`` a token
        scoped to the system or a domain is refused, as Neutron does."""
        if self.enforce_scope and ctx.project_id is None and not ctx.project_from_body:
            return False
        if action not in self.rules:
            return True
        return self._compiled(action)(self, ctx, target)

    def is_admin(self, ctx: Context) -> bool:
        """``context_is_admin``, which a policy file may redefine; never for a token
        without a project when scope is enforced."""
        if self.enforce_scope and ctx.project_id is None:
            return False
        return self.check_rule("context_is_admin", ctx, {})


def read_policy_file(path: str) -> dict[str, str]:
    """Rules from a policy.yaml (or .json): a mapping of rule names to rule strings.

    Raises ValueError naming what is wrong."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as error:
        raise ValueError(f"cannot read policy file {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ValueError(f"cannot parse policy file {path}: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f"policy file {path} must map rule names to rule strings")
    for name, text in data.items():
        try:
            _Parser(text).parse()
        except ValueError as error:
            raise ValueError(f"rule {name} in policy file {path}: {error}") from None
    return data


def load(conf: Any) -> Policy:
    """The policy for ``conf``: the defaults, overridden by ``policy_file`` if found."""
    opts = conf.oslo_policy
    path = opts.policy_file
    named_in = conf.named_in("oslo_policy", "policy_file")
    if not os.path.isabs(path):
        base = named_in or (conf.files[0] if conf.files else "")
        path = os.path.join(os.path.dirname(os.path.abspath(base)) if base else ".", path)
    overrides: dict[str, str] = {}
    if named_in is not None or os.path.exists(path):
        try:
            overrides = read_policy_file(path)
        except ValueError as error:
            raise ConfigError(f"{error} (policy_file in [oslo_policy])") from None
    return Policy(overrides, enforce_scope=opts.enforce_scope)
