"""Authorisation rules in Neutron's policy language, all in one table.

Rules are strings such as ``"rule:admin_or_owner or rule:shared"``; checks
are ``rule:NAME``, ``role:NAME``, ``field:COLLECTION:ATTR=VALUE``,
``KEY:%(TARGET_KEY)s`` (a context value equals a target value), ``@``
(always) and ``!`` (never), joined by ``and``/``or``/``not`` and brackets.
Visibility of reads is applied by the plugins' queries (a resource you may
not see is 404); these rules decide writes and admin-only attributes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from neutrino.context import Context

DEFAULT_RULES: dict[str, str] = {
    "context_is_admin": "role:admin",
    "owner": "project_id:%(project_id)s",
    "admin_or_owner": "rule:context_is_admin or rule:owner",
    "admin_only": "rule:context_is_admin",
    "regular_user": "",
    "shared": "field:networks:shared=True",
    "external": "field:networks:router:external=True",
    "network_owner": "project_id:%(network:project_id)s",
    "admin_or_network_owner": "rule:context_is_admin or rule:network_owner",
    "admin_owner_or_network_owner": "rule:owner or rule:admin_or_network_owner",
    "shared_subnetpools": "field:subnetpools:shared=True",
    "not_reader": "not role:reader or role:member or role:admin",

    "create_network": "rule:not_reader",
    "create_network:shared": "rule:admin_only",
    "create_network:router:external": "rule:admin_only",
    "update_network": "rule:admin_or_owner and rule:not_reader",
    "update_network:shared": "rule:admin_only",
    "update_network:router:external": "rule:admin_only",
    "create_network:provider:network_type": "rule:admin_only",
    "create_network:provider:physical_network": "rule:admin_only",
    "create_network:provider:segmentation_id": "rule:admin_only",
    "create_network:segments": "rule:admin_only",
    "update_network:provider:network_type": "rule:admin_only",
    "update_network:provider:physical_network": "rule:admin_only",
    "update_network:provider:segmentation_id": "rule:admin_only",
    "update_network:segments": "rule:admin_only",
    "delete_network": "rule:admin_or_owner and rule:not_reader",

    "create_subnet": "rule:admin_or_network_owner and rule:not_reader",
    "update_subnet": "rule:admin_or_network_owner and rule:not_reader",
    "delete_subnet": "rule:admin_or_network_owner and rule:not_reader",

    "create_subnetpool": "rule:not_reader",
    "create_subnetpool:shared": "rule:admin_only",
    "create_subnetpool:is_default": "rule:admin_only",
    "update_subnetpool": "rule:admin_or_owner and rule:not_reader",
    "update_subnetpool:is_default": "rule:admin_only",
    "delete_subnetpool": "rule:admin_or_owner and rule:not_reader",

    "create_port": "rule:not_reader",
    "create_port:device_owner": "not field:ports:device_owner=network:* or "
                                "rule:admin_or_network_owner",
    "create_port:mac_address": "rule:admin_or_network_owner",
    "create_port:fixed_ips:ip_address": "rule:admin_or_network_owner",
    "update_port": "rule:admin_or_owner and rule:not_reader",
    "update_port:device_owner": "not field:ports:device_owner=network:* or "
                                "rule:admin_or_network_owner",
    "update_port:mac_address": "rule:admin_only",
    "create_port:binding:host_id": "rule:admin_only",
    "create_port:binding:profile": "rule:admin_only",
    "update_port:binding:host_id": "rule:admin_only",
    "update_port:binding:profile": "rule:admin_only",
    "update_port:fixed_ips:ip_address": "rule:admin_or_network_owner",
    "delete_port": "rule:admin_owner_or_network_owner and rule:not_reader",

    "get_port_binding": "rule:admin_only",
    "create_port_binding": "rule:admin_only",
    "update_port_binding": "rule:admin_only",
    "delete_port_binding": "rule:admin_only",
    "activate": "rule:admin_only",

    "create_segment": "rule:admin_only",
    "update_segment": "rule:admin_only",
    "delete_segment": "rule:admin_only",

    # --- security groups
    "create_security_group": "rule:not_reader",
    "update_security_group": "rule:admin_or_owner and rule:not_reader",
    "delete_security_group": "rule:admin_or_owner and rule:not_reader",
    "create_security_group_rule": "rule:admin_or_owner and rule:not_reader",
    "delete_security_group_rule": "rule:admin_or_owner and rule:not_reader",
    "create_address_group": "rule:not_reader",
    "update_address_group": "rule:admin_or_owner and rule:not_reader",
    "delete_address_group": "rule:admin_or_owner and rule:not_reader",
    "add_addresses": "rule:admin_or_owner and rule:not_reader",
    "remove_addresses": "rule:admin_or_owner and rule:not_reader",

    # --- L3: routers, floating IPs, port forwardings
    "create_router": "rule:not_reader",
    "create_router:external_gateway_info:enable_snat": "rule:admin_only",
    "create_router:external_gateway_info:external_fixed_ips": "rule:admin_only",
    "update_router": "rule:admin_or_owner and rule:not_reader",
    "update_router:external_gateway_info:enable_snat": "rule:admin_only",
    "update_router:external_gateway_info:external_fixed_ips": "rule:admin_only",
    "delete_router": "rule:admin_or_owner and rule:not_reader",
    "add_router_interface": "rule:admin_or_owner and rule:not_reader",
    "remove_router_interface": "rule:admin_or_owner and rule:not_reader",
    "add_extraroutes": "rule:admin_or_owner and rule:not_reader",
    "remove_extraroutes": "rule:admin_or_owner and rule:not_reader",
    "create_floatingip": "rule:not_reader",
    "create_floatingip:floating_ip_address": "rule:admin_only",
    "update_floatingip": "rule:admin_or_owner and rule:not_reader",
    "delete_floatingip": "rule:admin_or_owner and rule:not_reader",
    # a port forwarding's project is its floating IP's
    "create_floatingip_port_forwarding": "rule:admin_or_owner and rule:not_reader",
    "update_floatingip_port_forwarding": "rule:admin_or_owner and rule:not_reader",
    "delete_floatingip_port_forwarding": "rule:admin_or_owner and rule:not_reader",

    # --- port extras: allowed address pairs, extra DHCP options, DNS
    "create_port:allowed_address_pairs": "rule:admin_or_network_owner",
    "update_port:allowed_address_pairs": "rule:admin_or_network_owner",

    # --- agents and the availability zones they make (reads included: others see none)
    "get_agent": "rule:admin_only",
    "update_agent": "rule:admin_only",
    "delete_agent": "rule:admin_only",
    "get_availability_zone": "rule:admin_only",
    # which agents host which networks and routers
    "get_dhcp-networks": "rule:admin_only",
    "create_dhcp-network": "rule:admin_only",
    "delete_dhcp-network": "rule:admin_only",
    "get_dhcp-agents": "rule:admin_only",
    "get_l3-routers": "rule:admin_only",
    "create_l3-router": "rule:admin_only",
    "delete_l3-router": "rule:admin_only",
    "get_l3-agents": "rule:admin_only",

    "update_tags": "rule:admin_or_owner and rule:not_reader",
    "get_quota": "rule:admin_or_owner",
    "update_quota": "rule:admin_only",
    "delete_quota": "rule:admin_only",
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
    if wanted.endswith("*"):
        return isinstance(value, str) and value.startswith(wanted[:-1])
    if isinstance(value, bool):
        return str(value) == wanted
    return str(value) == wanted


class Policy:
    def __init__(self, overrides: Mapping[str, str] | None = None):
        self.rules = {**DEFAULT_RULES, **(overrides or {})}
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
        """Unknown actions default to allowed, as Neutron's default rule for reads."""
        if action not in self.rules:
            return True
        return self._compiled(action)(self, ctx, target)
