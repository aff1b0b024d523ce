"""Security groups in OpenFlow with conntrack, on the integration bridge.

The OVS agent's br-int pipeline when the firewall is on (``build`` writes
the firewall's part; the agent the rest). Before table 60 every packet is
untagged and carries its network's local VLAN in ``reg6``, which is also its
conntrack zone; ``reg5`` holds the OpenFlow port of the filtered port a
packet leaves or is bound for::

    0   classify: from a filtered port -> reg5, reg6, table 71; from other
        ports and patches -> reg6 (VLAN popped), table 60
    60  local delivery: to a filtered port's MAC in the packet's network ->
        reg5, table 81; anything else -> table 94 (the agent's: NORMAL)
    71  egress of a filtered port: anti-spoofing (its MACs with their
        addresses only), DHCP and neighbour discovery, then conntrack
    72  egress rules: replies and related packets pass; the rest must match
        a rule, which commits the connection (again: a no-op) -> table 60;
        what no rule allows is dropped, so a removed rule also stops the
        connections it had let through, with no conntrack entry to delete
    81  ingress of a filtered port: ARP, DHCP replies, neighbour discovery
        pass; IP goes through conntrack
    82  ingress rules, as 72 -> output to reg5

Tables are chained with ``resubmit`` (OpenFlow's goto_table only goes
forward, and 72 hands on to 60). A connection between two filtered ports of
one host passes the sender's egress and the receiver's ingress rules. Ports
without port security, and the network's own ports (DHCP, routers), are not
filtered, as in Neutron.

A port of stateless groups (rules with ``stateful: False``) skips conntrack
both ways: its untracked packets match none of the flows that pass replies,
only its rules, which commit nothing. Broadcast and multicast reach filtered
ports by NORMAL, without their ingress rules (ARP and DHCP need it; IP
broadcast is rare).
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neutrino.addresses import link_local
from neutrino.linux.ovs import cookie_of
from neutrino.linux.sg_rules import (
    ICMPV6_IN,
    ICMPV6_OUT,
    filtered,
    protocol,
    rule_version,
    stateless,
)

CLASSIFY, LOCAL, EGRESS, EGRESS_RULES, INGRESS, INGRESS_RULES, NORMAL_OUT = (
    0, 60, 71, 72, 81, 82, 94)
# priorities in tables 72 and 82: a rule's own flow, a conjunction's flows
RULE, CONJUNCTION = 70, 60
ZONE = "zone=NXM_NX_REG6[0..15]"
TO_PORT = "output:NXM_NX_REG5[]"
PROTOCOLS = {"tcp": 6, "udp": 17, "icmp": 1, "sctp": 132, "ipv6-icmp": 58, "icmpv6": 58,
             "dccp": 33, "udplite": 136}
PORTED = (6, 17, 132)  # tcp, udp, sctp: tp_dst matches their ports


@dataclass(frozen=True)
class Place:
    """Where a port is on br-int: its OpenFlow port and its network's local VLAN."""
    ofport: int
    vlan: int


def port_masks(low: int, high: int) -> list[str]:
    """The value/mask pairs that together match exactly ``low``..``high``."""
    if low <= 1 and high >= 65535:
        return []  # every port
    found, value = [], low
    while value <= high:
        size = value & -value if value else 1 << 16
        while value + size - 1 > high:
            size >>= 1
        found.append(f"{value:#x}/{0xffff ^ (size - 1):#x}" if size > 1 else f"{value:#x}")
        value += size
    return found


def build(info: Mapping[str, Any], places: Mapping[str, Place]) -> list[str]:
    """The firewall's flows for the filtered ports of ``info`` (the server's
    ``security_group_info_for_devices`` answer) that have a ``places`` entry."""
    flows = [
        f"table={LOCAL},priority=0,actions=resubmit(,{NORMAL_OUT})",
        f"table={EGRESS},priority=0,actions=drop",
        f"table={EGRESS_RULES},priority=100,ct_state=+inv+trk,actions=drop",
        f"table={EGRESS_RULES},priority=90,ct_state=+est+rpl+trk,actions=resubmit(,{LOCAL})",
        f"table={EGRESS_RULES},priority=90,ct_state=-new+rel+trk,actions=resubmit(,{LOCAL})",
        f"table={EGRESS_RULES},priority=0,actions=drop",
        f"table={INGRESS},priority=95,arp,actions={TO_PORT}",
        f"table={INGRESS},priority=95,udp,tp_src=67,tp_dst=68,actions={TO_PORT}",
        f"table={INGRESS},priority=95,udp6,tp_src=547,tp_dst=546,actions={TO_PORT}",
        *(f"table={INGRESS},priority=95,icmp6,icmp_type={t},actions={TO_PORT}"
          for t in ICMPV6_IN),
        f"table={INGRESS},priority=90,ip,actions=ct(table={INGRESS_RULES},{ZONE})",
        f"table={INGRESS},priority=90,ipv6,actions=ct(table={INGRESS_RULES},{ZONE})",
        f"table={INGRESS},priority=0,actions=drop",
        f"table={INGRESS_RULES},priority=100,ct_state=+inv+trk,actions=drop",
        f"table={INGRESS_RULES},priority=90,ct_state=+est+rpl+trk,actions={TO_PORT}",
        f"table={INGRESS_RULES},priority=90,ct_state=-new+rel+trk,actions={TO_PORT}",
        f"table={INGRESS_RULES},priority=0,actions=drop",
    ]
    groups = info.get("security_groups") or {}
    remotes = Remotes(info.get("sg_member_ips") or {}, info.get("address_group_ips") or {})
    conjunctions = Conjunctions()
    for port_id, port in sorted((info.get("devices") or {}).items()):
        place = places.get(port_id)
        if place is None or not filtered(port):
            continue
        cookie = f"cookie={cookie_of(port_id):#x}"
        rules = [rule for group in sorted(set(port.get("security_groups") or ()))
                 for rule in groups.get(group, [])]
        tracked = not stateless(rules)
        flows += [f"{cookie},{line}" for line in _port_flows(port, place, tracked)]
        for rule in rules:
            table, verdict = _verdict(rule["direction"], tracked)
            at = f"table={table},reg5={place.ofport}"
            remote = remotes.named_by(rule)
            if remote is None:  # any address, or a prefix
                flows += [f"{cookie},{at},priority={RULE},{match},actions={verdict}"
                          for match in _rule_matches(rule, remotes.addresses(rule))]
            elif remotes.addresses(rule):
                # the port's clause of a conjunction whose other clause is the members
                key = (*remote, rule["direction"], rule_version(rule), tracked)
                conjunctions.add(key, 1, [f"{cookie},{at},priority={CONJUNCTION},{match}"
                                          for match in _rule_matches(rule, [""])])
    for key, conj_id in conjunctions.ids.items():
        kind, remote_id, direction, version, tracked = key
        table, verdict = _verdict(direction, tracked)
        ip, side = ("ipv6" if version == 6 else "ip"), _side(direction, version)
        at = f"table={table},priority={CONJUNCTION}"
        # a member's address is one flow whichever conjunctions name it: no own cookie
        conjunctions.add(key, 2, [f"{at},{ip},{side}={address}" if address else f"{at},{ip}"
                                  for address in remotes.members(kind, remote_id, version)])
        flows.append(f"cookie={cookie_of(remote_id):#x},{at},conj_id={conj_id},{ip},"
                     f"actions={verdict}")
    return flows + conjunctions.flows()


class Remotes:
    """The addresses of remote groups and address groups, from the server's answer."""

    def __init__(self, members: Mapping[str, Any], address_groups: Mapping[str, Any]):
        self._of = {"remote_group_id": members, "remote_address_group_id": address_groups}
        self._parsed: dict[tuple[str, str, int], list[str]] = {}  # once per group, not per port

    @staticmethod
    def named_by(rule: Mapping[str, Any]) -> tuple[str, str] | None:
        """(kind, id) when the rule's remote is a group of addresses."""
        for kind in ("remote_group_id", "remote_address_group_id"):
            if rule.get(kind):
                return kind, rule[kind]
        return None

    def members(self, kind: str, remote_id: str, version: int) -> list[str]:
        """A group's addresses of one IP version, as matches ("" for any)."""
        key = (kind, remote_id, version)
        if key not in self._parsed:
            found = (self._of[kind].get(remote_id) or {}).get(f"IPv{version}") or []
            self._parsed[key] = _addresses(found, version)
        return self._parsed[key]

    def addresses(self, rule: Mapping[str, Any]) -> list[str]:
        """The remote addresses a rule names ("" for any)."""
        remote = self.named_by(rule)
        if remote is not None:
            return self.members(*remote, rule_version(rule))
        if rule.get("remote_ip_prefix"):
            return _addresses([rule["remote_ip_prefix"]], rule_version(rule))
        return [""]


class Conjunctions:
    """Rules whose remote is a group, as OpenFlow conjunctions.

    A rule naming a group would take a flow per port per member, quadratic
    in a group's size; as a conjunction it takes a flow per port (clause 1:
    the port and the protocol) and a flow per member (clause 2: the address),
    shared by every port whose rules name that group. One conjunction per
    (group, direction, IP version); its id is a hash of those, so that it
    stays the same across syncs and restarts and unchanged flows are left alone.
    """

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self._taken: set[int] = set()
        self._actions: dict[str, set[str]] = {}  # a match -> its conjunction actions

    def add(self, key: tuple, clause: int, matches: list[str]) -> None:
        conj_id = self._id(key)
        for match in matches:
            self._actions.setdefault(match, set()).add(f"conjunction({conj_id},{clause}/2)")

    def flows(self) -> list[str]:
        """One flow per match, with every conjunction it is a clause of."""
        return [f"{match},actions={','.join(sorted(actions))}"
                for match, actions in self._actions.items()]

    def _id(self, key: tuple) -> int:
        if key not in self.ids:
            conj_id = int.from_bytes(hashlib.sha256(repr(key).encode()).digest()[:4], "big")
            while conj_id in self._taken:  # a collision: the next free one
                conj_id = (conj_id + 1) % 2**32
            self.ids[key] = conj_id
            self._taken.add(conj_id)
        return self.ids[key]


def _verdict(direction: str, tracked: bool) -> tuple[int, str]:
    """The table of a rule's direction, and what a packet it allows gets (a
    stateless port's packets were not sent through conntrack: nothing to commit)."""
    commit = f"ct(commit,{ZONE})," if tracked else ""
    if direction == "egress":
        return EGRESS_RULES, f"{commit}resubmit(,{LOCAL})"
    return INGRESS_RULES, f"{commit}{TO_PORT}"


def _side(direction: str, version: int) -> str:
    """The field that holds the remote address: the destination of what leaves."""
    if direction == "egress":
        return "nw_dst" if version == 4 else "ipv6_dst"
    return "nw_src" if version == 4 else "ipv6_src"


def _port_flows(port: Mapping[str, Any], place: Place, tracked: bool) -> list[str]:
    """Classification, local delivery and anti-spoofing of one filtered port;
    its IP goes to the rules through conntrack unless the port is stateless."""
    n, vlan = place.ofport, place.vlan
    to_egress_rules = (f"ct(table={EGRESS_RULES},{ZONE})" if tracked
                       else f"resubmit(,{EGRESS_RULES})")
    mac = port["mac_address"].lower()
    pairs = [(mac, ip["ip_address"]) for ip in port.get("fixed_ips") or []]
    pairs += [((p.get("mac_address") or mac).lower(), p["ip_address"])
              for p in port.get("allowed_address_pairs") or []]
    macs = sorted({m for m, _ in pairs} | {mac})
    flows = [f"table={CLASSIFY},priority=100,in_port={n},actions=set_field:{n}->reg5,"
             f"set_field:{vlan}->reg6,resubmit(,{EGRESS})"]
    flows += [f"table={LOCAL},priority=100,reg6={vlan},dl_dst={m},"
              f"actions=set_field:{n}->reg5,resubmit(,{INGRESS})" for m in macs]
    egress = f"table={EGRESS},reg5={n}"
    flows += [f"{egress},priority=95,udp,tp_src=67,actions=drop",  # no DHCP server
              f"{egress},priority=95,udp6,tp_src=547,actions=drop",
              f"{egress},priority=95,icmp6,icmp_type=134,actions=drop"]  # no router
    for m in macs:
        flows += [f"{egress},priority=90,udp,dl_src={m},tp_src=68,tp_dst=67,"
                  f"actions=resubmit(,{LOCAL})",
                  f"{egress},priority=90,udp6,dl_src={m},tp_src=546,tp_dst=547,"
                  f"actions=resubmit(,{LOCAL})"]
        flows += [f"{egress},priority=90,icmp6,dl_src={m},icmp_type={t},"
                  f"actions=resubmit(,{LOCAL})" for t in ICMPV6_OUT]
        flows.append(f"{egress},priority=80,ipv6,dl_src={m},ipv6_src={link_local(m)},"
                     f"actions={to_egress_rules}")
    for m, address in sorted(set(pairs)):
        net = ipaddress.ip_network(address, strict=False)
        if net.version == 4:
            flows += [f"{egress},priority=80,ip,dl_src={m},nw_src={_text(net)},"
                      f"actions={to_egress_rules}",
                      f"{egress},priority=80,arp,dl_src={m},arp_sha={m},"
                      f"arp_spa={_text(net)},actions=resubmit(,{LOCAL})"]
        else:
            flows.append(f"{egress},priority=80,ipv6,dl_src={m},ipv6_src={_text(net)},"
                         f"actions={to_egress_rules}")
    if not tracked:  # before the shared flows that send IP through conntrack
        flows += [f"table={INGRESS},priority=91,reg5={n},{ip},actions=resubmit(,{INGRESS_RULES})"
                  for ip in ("ip", "ipv6")]
    return flows


def _text(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> str:
    return str(net.network_address) if net.prefixlen == net.max_prefixlen else str(net)


def _rule_matches(rule: Mapping[str, Any], remotes: list[str]) -> list[str]:
    """The OpenFlow matches of one rule: one per remote address, per port mask."""
    version = rule_version(rule)
    protocol = _protocol_number(rule.get("protocol"), version)
    if protocol is None:
        return []
    base = "ipv6" if version == 6 else "ip"
    if protocol:
        base += f",nw_proto={protocol}"
    details = [""]
    low, high = rule.get("port_range_min"), rule.get("port_range_max")
    if protocol in PORTED and low is not None:
        masks = port_masks(int(low), int(high if high is not None else low))
        details = [f",tp_dst={mask}" for mask in masks] or [""]
    elif protocol in (1, 58) and low is not None:
        details = [f",icmp_type={int(low)}" + (f",icmp_code={int(high)}"
                                                if high is not None else "")]
    side = _side(rule["direction"], version)
    return [f"{base}{detail}" + (f",{side}={remote}" if remote else "")
            for remote in remotes for detail in details]


def _protocol_number(name: Any, version: int) -> int | None:
    """0 for any protocol; None when the rule cannot match this IP version (or
    names a protocol OpenFlow is not given here)."""
    text = protocol(name, version)
    if text is None or text == "":
        return None if text is None else 0
    return PROTOCOLS[text] if text in PROTOCOLS else int(text) if text.isdigit() else None


def _addresses(found: list[str], version: int) -> list[str]:
    """Addresses and prefixes of one IP version as matches; "" for any address."""
    addresses = set()
    for text in found:
        net = ipaddress.ip_network(text, strict=False)
        if net.version == version:
            addresses.add("" if net.prefixlen == 0 else _text(net))
    return sorted(addresses)
