"""One security group rule as a whole: its canonical form, Neutron's checks, and
the key by which two rules are the same rule.

Pure functions over the converted request (see ``definitions/securitygroup.py``);
what needs the database (groups exist, duplicates) is in ``rules.py``.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from neutrino.definitions import securitygroup as sg

Rule = dict[str, Any]

ICMP_NUMBERS = (1, 58)
PORT_NUMBERS = tuple(sg.PROTOCOLS[name] for name in sg.PORT_PROTOCOLS)
VALID_PORT_PROTOCOLS = ", ".join(name.upper() for name in sg.PORT_PROTOCOLS)
# Protocols that only exist over IPv6, by name and by number.
IPV6_ONLY = ("ipv6-encap", "ipv6-frag", "ipv6-icmp", "icmpv6", "ipv6-nonxt", "ipv6-opts",
             "ipv6-route", "41", "44", "58", "59", "60", "43")
_ANY_PREFIXES = ("0.0.0.0/0", "::/0")


def protocol_number(protocol: str | None) -> int | None:
    if protocol is None:
        return None
    return sg.PROTOCOLS[protocol] if protocol in sg.PROTOCOLS else int(protocol)


def canonical(rule: Rule) -> Rule:
    """IPv6 ICMP is always ``ipv6-icmp`` (or 58); a port rule over all ports has none."""
    rule = dict(rule)
    if rule["ethertype"] == "IPv6":
        if rule["protocol"] in ("icmp", "icmpv6"):
            rule["protocol"] = "ipv6-icmp"
        elif rule["protocol"] == "1":
            rule["protocol"] = "58"
    if (protocol_number(rule["protocol"]) in PORT_NUMBERS
            and (rule["port_range_min"], rule["port_range_max"]) == (1, 65535)):
        rule["port_range_min"] = rule["port_range_max"] = None
    return rule


def check(rule: Rule) -> None:
    """Raise Neutron's error for the first thing wrong with a canonical rule."""
    _check_ports(rule)
    _check_prefix(rule)
    if rule["protocol"] in IPV6_ONLY and rule["ethertype"] == "IPv4":
        raise sg.SecurityGroupEthertypeConflictWithProtocol(ethertype=rule["ethertype"],
                                                            protocol=rule["protocol"])
    remotes = [rule.get(k) for k in ("remote_ip_prefix", "remote_group_id",
                                     "remote_address_group_id")]
    if sum(r is not None for r in remotes) > 1:
        raise sg.SecurityGroupMultipleRemoteEntites()


def _check_ports(rule: Rule) -> None:
    low, high = rule["port_range_min"], rule["port_range_max"]
    if low is None and high is None:
        return
    if not rule["protocol"]:
        raise sg.SecurityGroupProtocolRequiredWithPorts()
    number = protocol_number(rule["protocol"])
    if number in PORT_NUMBERS:
        if low == 0 or high == 0:
            raise sg.SecurityGroupInvalidPortValue(port=0)
        if low is None or high is None or low > high:
            raise sg.SecurityGroupInvalidPortRange()
    elif number in ICMP_NUMBERS:
        for attr, field, value in (("port_range_min", "type", low),
                                   ("port_range_max", "code", high)):
            if value is not None and not 0 <= value <= 255:
                raise sg.SecurityGroupInvalidIcmpValue(field=field, attr=attr, value=value)
        if low is None:
            raise sg.SecurityGroupMissingIcmpType(value=high)
    else:
        raise sg.SecurityGroupInvalidProtocolForPort(
            protocol=number, valid_port_protocols=VALID_PORT_PROTOCOLS)


def _check_prefix(rule: Rule) -> None:
    prefix = rule.get("remote_ip_prefix")
    if prefix is None:
        return
    version = ipaddress.ip_interface(prefix).version
    if rule["ethertype"] != f"IPv{version}":
        raise sg.SecurityGroupRuleParameterConflict(ethertype=rule["ethertype"], cidr=prefix)


def key(rule: Rule) -> tuple:
    """Rules with equal keys filter the same traffic: a protocol by name or number,
    a prefix with or without host bits, and "anywhere" with or without a prefix."""
    prefix = sg.normalized_cidr(rule.get("remote_ip_prefix"))
    return (rule["security_group_id"], rule["direction"], rule["ethertype"],
            protocol_number(rule.get("protocol")), rule.get("port_range_min"),
            rule.get("port_range_max"), rule.get("remote_group_id"),
            rule.get("remote_address_group_id"),
            None if prefix in _ANY_PREFIXES else prefix)
