"""How both security group drivers (``iptables_firewall``, ``ovs_firewall``)
read the server's security group info: which ports are filtered and which
statelessly, a rule's IP version and protocol, and the ICMPv6 that must pass
whatever the rules say.

Pure: the drivers turn these answers into their own rules or flows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: protocol numbers and aliases -> the names iptables and Neutron use
PROTOCOL_NAMES = {"1": "icmp", "6": "tcp", "17": "udp", "33": "dccp", "58": "ipv6-icmp",
                  "132": "sctp", "136": "udplite", "icmpv6": "ipv6-icmp"}
# ICMPv6 that neighbour discovery and multicast listening need, whatever the rules say
ICMPV6_IN = (130, 131, 132, 134, 135, 136, 143)  # MLD, RA, NS, NA, MLDv2
ICMPV6_OUT = (130, 131, 132, 133, 135, 136, 143)  # MLD, RS, NS, NA, MLDv2


def filtered(port: Mapping[str, Any]) -> bool:
    """Ports without port security, and the network's own (DHCP, router) ports,
    which are trusted as in Neutron, pass unfiltered."""
    if port.get("port_security_enabled") is False:
        return False
    return not (port.get("device_owner") or "").startswith("network:")


def stateless(rules: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a port's rules are filtered without conntrack: its groups are
    stateless (the server keeps stateful and stateless groups off one port), so
    replies pass only by a rule of their own."""
    return any(rule.get("stateful") is False for rule in rules)


def rule_version(rule: Mapping[str, Any]) -> int:
    """The IP version a rule is for (its ``ethertype``)."""
    return 6 if rule.get("ethertype") == "IPv6" else 4


def protocol(name: Any, version: int) -> str | None:
    """The name of a rule's protocol (a number with no name stays a number);
    "" for any; None when the rule cannot match this IP version. ICMP in an
    IPv6 rule means ICMPv6."""
    if name is None or str(name).lower() in ("", "any"):
        return ""
    proto = PROTOCOL_NAMES.get(str(name).lower(), str(name).lower())
    if version == 6 and proto == "icmp":
        return "ipv6-icmp"
    if version == 4 and proto == "ipv6-icmp":
        return None
    return proto
