"""Security groups of the ports plugged into Linux bridges: iptables and ipset.

Bridged frames reach iptables through br_netfilter; ``-m physdev`` tells which
bridge port (the instance's ``tap`` device) a packet leaves by (to the
instance: ingress rules) or came in by (from it: egress rules). Every chain is
ours (``<prefix>-...``) and hangs off two jumps, from FORWARD and INPUT::

    FORWARD -> P-FORWARD: each port's taps, either way -> P-sg-chain
    P-sg-chain: out by tap X -> P-i<X>, in by tap X -> P-o<X>, ..., ACCEPT
    INPUT   -> P-INPUT:   in by tap X -> P-o<X> (the instance talking to the host)
    P-i<X>: ND, DHCP replies, conntrack state, the ingress rules -> RETURN; DROP
    P-o<X>: DHCP request, anti-spoofing (P-s<X>), state, the egress rules; DROP

A packet between two ports here passes the sender's egress chain and the
receiver's ingress chain, each of which RETURNs what it allows.

The core is pure: ``build`` turns the server's ``security_group_info_for_devices``
answer into a ``Ruleset`` (chains, sets, what conntrack should forget), and
``restore_text`` turns that and what ``iptables-save`` shows into one
``iptables-restore --noflush`` input. ``IptablesFirewall`` only runs the tools.

What conntrack forgets is worked out against the previous ``apply`` of this
object, so the first one after an agent restart forgets nothing.

Left out: stateless security groups (``stateful: False``; every group is
filtered statefully) and conntrack zones (entries are not split per network;
only overlapping addresses on two networks of one host would share them).
Router advertisements are let in from anyone, not only the subnet's gateway.
"""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from neutrino.linux import ipset

#: iptables' limit on a chain name (XT_EXTENSION_MAXNAMELEN 29, with the NUL)
MAX_CHAIN = 28
#: what a port's chain names keep of its id (its tap device keeps as much)
PORT_ID_CHARS = 11
MAX_PREFIX = MAX_CHAIN - 2 - PORT_ID_CHARS - 4  # room for "-i<11>" and a margin

PORTED = frozenset({"tcp", "udp", "sctp", "dccp", "udplite"})
PROTOCOL_NAMES = {"1": "icmp", "6": "tcp", "17": "udp", "33": "dccp", "58": "ipv6-icmp",
                  "132": "sctp", "136": "udplite", "icmpv6": "ipv6-icmp"}
#: conntrack(8) names of the protocols it filters on
CONNTRACK_PROTOCOLS = {"tcp": "tcp", "udp": "udp", "icmp": "icmp", "ipv6-icmp": "icmpv6",
                       "sctp": "sctp", "dccp": "dccp", "udplite": "udplite"}
# ICMPv6 that neighbour discovery and multicast listening need, whatever the rules say
ICMPV6_IN = (130, 131, 132, 134, 135, 136, 143)  # MLD, RA, NS, NA, MLDv2
ICMPV6_OUT = (130, 131, 132, 133, 135, 136, 143)  # MLD, RS, NS, NA, MLDv2
ICMPV6_DAD = (131, 135, 143)  # sent from :: before the address is usable
ICMPV6_RA = 134

STATE_RULES = ("-m state --state RELATED,ESTABLISHED -j RETURN",
               "-m state --state INVALID -j DROP")


class FirewallError(Exception):
    """A tool refused the change; the message carries what it said."""


@dataclass(frozen=True)
class Allowed:
    """A kind of connection a port's rules let start, kept so that conntrack can
    forget those connections once no rule allows them."""
    direction: str
    version: int
    local: str  # the port's address
    protocol: str | None  # conntrack's name, None for any
    port: int | None  # destination port, when the rule names exactly one
    remote: str | None  # the other end's address, None for many


@dataclass
class Ruleset:
    """The filtering of a host: our chains of each IP version (name -> rule
    specifications, in order), our sets (name -> version, entries)."""
    chains: dict[int, dict[str, list[str]]] = field(
        default_factory=lambda: {4: {}, 6: {}})
    sets: dict[str, tuple[int, list[str]]] = field(default_factory=dict)
    allowed: frozenset[Allowed] = frozenset()
    guarded: frozenset[str] = frozenset()  # the addresses of the filtered ports


# --- the pure core ----------------------------------------------------------------------


def build(info: Mapping[str, Any], prefix: str = "neutrino") -> Ruleset:
    """The ruleset that filters exactly the ports of ``info`` (the server's
    ``security_group_info_for_devices`` answer)."""
    if not prefix or len(prefix) > MAX_PREFIX:
        raise ValueError(f"firewall prefix {prefix!r}: 1 to {MAX_PREFIX} characters")
    ruleset = Ruleset()
    names = _Names(prefix)
    groups: Mapping[str, list[dict]] = info.get("security_groups") or {}
    members = {"g": info.get("sg_member_ips") or {}, "a": info.get("address_group_ips") or {}}
    ports = sorted((info.get("devices") or {}).values(), key=lambda p: p["port_id"])
    if not ports:  # a host without ports keeps no chains and no jumps to them
        return ruleset
    allowed: set[Allowed] = set()
    guarded: set[str] = set()
    for version in (4, 6):
        chains = ruleset.chains[version]
        forward, sg_chain, to_host = [], [], []
        chains[names.fallback] = ["-j DROP"]
        for port in ports:
            tap = port["device"]
            out_of, into = _physdev("out", tap), _physdev("in", tap)
            forward += [f"{out_of} -j {names.sg_chain}", f"{into} -j {names.sg_chain}"]
            if not _filtered(port):
                continue
            i, o, s = names.port(port["port_id"])
            sg_chain += [f"{out_of} -j {i}", f"{into} -j {o}"]
            # not --physdev-is-bridged: a packet for the host is not being bridged
            to_host.append(f"-m physdev --physdev-in {tap} -j {o}")
            rules = [r for g in sorted(set(port.get("security_groups") or []))
                     for r in groups.get(g, []) if _version(r) == version]
            chains[i] = _ingress(version, rules, names)
            chains[o] = _egress(version, rules, names, s)
            chains[s] = _spoofing(version, port)
            ruleset.sets.update(_sets(version, rules, members, names))
            allowed.update(_allowed(version, port, rules, members))
            guarded.update(_locals(version, port))
        chains[names.forward] = forward
        chains[names.sg_chain] = [*sg_chain, "-j ACCEPT"]
        chains[names.input] = to_host
    ruleset.allowed, ruleset.guarded = frozenset(allowed), frozenset(guarded)
    return ruleset


def _sets(version: int, rules: Iterable[Mapping[str, Any]],
          members: Mapping[str, Mapping[str, Any]], names: _Names
          ) -> dict[str, tuple[int, list[str]]]:
    """The sets the rules' remote (address) groups match, with their addresses."""
    sets = {}
    for rule in rules:
        for kind, key in (("g", "remote_group_id"), ("a", "remote_address_group_id")):
            if rule.get(key):
                owned = (members[kind].get(rule[key]) or {}).get(f"IPv{version}", [])
                sets[names.set(version, kind, rule[key])] = (
                    version, ipset.entries(version, owned))
    return sets


def restore_text(chains: Mapping[str, list[str]], saved: str, prefix: str) -> str:
    """``iptables-restore --noflush`` input that turns the filter table of
    ``saved`` (``iptables-save`` output) into one whose chains of ``prefix`` are
    exactly ``chains``: each is declared (which empties it) and refilled, ours
    that are no longer wanted are emptied and deleted, and the two jumps from
    FORWARD and INPUT are added once. Other chains are not touched."""
    names = _Names(prefix)
    existing, jumps = _ours(saved, prefix)
    stale = sorted(existing - set(chains))
    lines = ["*filter"]
    lines += [f":{name} - [0:0]" for name in sorted(set(chains) | set(stale))]
    for builtin, top in (("FORWARD", names.forward), ("INPUT", names.input)):
        if chains and (builtin, top) not in jumps:
            lines.append(f"-I {builtin} 1 -j {top}")
        elif not chains and (builtin, top) in jumps:
            lines.append(f"-D {builtin} -j {top}")
    for name in sorted(chains):
        lines += [f"-A {name} {spec}" for spec in chains[name]]
    lines += [f"-X {name}" for name in stale]
    lines.append("COMMIT")
    return "".join(line + "\n" for line in lines)


def conntrack_deletions(before: Ruleset, after: Ruleset) -> list[list[str]]:
    """``conntrack -D`` arguments forgetting the connections that ``before``
    allowed and ``after`` does not, for ports still filtered. Broader than the
    removed rule when conntrack cannot say it exactly (a port range, a CIDR):
    a connection still allowed then starts again as new (TCP is picked up
    mid-stream; one ICMP echo reply may be lost)."""
    gone = sorted((a for a in before.allowed - after.allowed if a.local in after.guarded),
                  key=repr)
    commands: list[list[str]] = []
    for a in gone:
        argv = ["-D", "-f", "ipv6" if a.version == 6 else "ipv4"]
        # conntrack's -s/-d are those of the packet that opened the connection
        source, destination = ((a.remote, a.local) if a.direction == "ingress"
                               else (a.local, a.remote))
        argv += ["-s", source] if source else []
        argv += ["-d", destination] if destination else []
        if a.protocol:
            argv += ["-p", a.protocol]
            if a.port is not None:
                argv += ["--dport", str(a.port)]
        if argv not in commands:
            commands.append(argv)
    return commands


class _Names:
    def __init__(self, prefix: str):
        self.prefix = prefix
        self.forward = f"{prefix}-FORWARD"
        self.input = f"{prefix}-INPUT"
        self.sg_chain = f"{prefix}-sg-chain"
        self.fallback = f"{prefix}-sg-fallback"

    def port(self, port_id: str) -> tuple[str, str, str]:
        """The port's ingress, egress and anti-spoofing chains."""
        short = port_id[:PORT_ID_CHARS]
        return f"{self.prefix}-i{short}", f"{self.prefix}-o{short}", f"{self.prefix}-s{short}"

    def set(self, version: int, kind: str, owner_id: str) -> str:
        return ipset.set_name(self.prefix, version, kind, owner_id)


def _ours(saved: str, prefix: str) -> tuple[set[str], set[tuple[str, str]]]:
    """Our chains in ``iptables-save`` output of the filter table, and the
    (built-in chain, our chain) jumps found there."""
    chains, jumps, table = set(), set(), None
    for line in saved.splitlines():
        if line.startswith("*"):
            table = line[1:].strip()
        if table != "filter":
            continue
        if line.startswith(f":{prefix}-"):
            chains.add(line[1:].split()[0])
        parts = line.split()
        if (len(parts) == 4 and parts[0] == "-A" and parts[2] == "-j"
                and parts[3].startswith(f"{prefix}-")):
            jumps.add((parts[1], parts[3]))
    return chains, jumps


def _filtered(port: Mapping[str, Any]) -> bool:
    """Ports without port security, and the network's own (DHCP, router) ports,
    which are trusted as in Neutron, pass unfiltered."""
    if port.get("port_security_enabled") is False:
        return False
    return not (port.get("device_owner") or "").startswith("network:")


def _physdev(way: str, tap: str) -> str:
    return f"-m physdev --physdev-{way} {tap} --physdev-is-bridged"


def _version(rule: Mapping[str, Any]) -> int:
    return 6 if rule.get("ethertype") == "IPv6" else 4


def _protocol(name: Any, version: int) -> str | None:
    """iptables' name of a rule's protocol; "" for any; None when the rule
    cannot match this IP version. ICMP in an IPv6 rule means ICMPv6."""
    if name is None or str(name).lower() in ("", "any"):
        return ""
    proto = PROTOCOL_NAMES.get(str(name).lower(), str(name).lower())
    if version == 6 and proto == "icmp":
        return "ipv6-icmp"
    if version == 4 and proto == "ipv6-icmp":
        return None
    return proto


def _port_match(proto: str, low: Any, high: Any) -> str:
    """Destination ports (``low:high``), or ICMP type (``low``) and code (``high``)."""
    if low is None:
        return ""
    if proto in PORTED:
        low, high = int(low), int(low if high is None else high)
        if (low, high) == (1, 65535):
            return ""
        return f"-m {proto} --dport {low}" + (f":{high}" if high != low else "")
    if proto in ("icmp", "ipv6-icmp"):
        kind = "-m icmp --icmp-type" if proto == "icmp" else "-m icmp6 --icmpv6-type"
        return f"{kind} {int(low)}" + (f"/{int(high)}" if high is not None else "")
    return ""


def _rule_spec(rule: Mapping[str, Any], version: int, names: _Names) -> str | None:
    """A security group rule as iptables match + RETURN, None if it cannot match."""
    ingress = rule.get("direction") == "ingress"
    parts: list[str] = []
    prefix = rule.get("remote_ip_prefix")
    if prefix:
        net = ipaddress.ip_network(prefix, strict=False)
        if net.version != version:
            return None
        if net.prefixlen:
            parts += ["-s" if ingress else "-d", str(net)]
    for kind, key in (("g", "remote_group_id"), ("a", "remote_address_group_id")):
        if rule.get(key):
            parts += ["-m set --match-set", names.set(version, kind, rule[key]),
                      "src" if ingress else "dst"]
    proto = _protocol(rule.get("protocol"), version)
    if proto is None:
        return None
    if proto:
        parts += ["-p", proto]
        ports = _port_match(proto, rule.get("port_range_min"), rule.get("port_range_max"))
        if ports:
            parts.append(ports)
    return " ".join([*parts, "-j RETURN"])


def _rule_specs(rules: Iterable[Mapping[str, Any]], direction: str, version: int,
                names: _Names) -> list[str]:
    """The rules of one direction: all RETURN, so their order does not matter;
    sorted and without duplicates, so that the text is the same however the
    server ordered them."""
    specs = {_rule_spec(r, version, names) for r in rules if r.get("direction") == direction}
    return sorted(s for s in specs if s)


def _icmpv6(types: Iterable[int], target: str, match: str = "") -> list[str]:
    lead = f"{match} " if match else ""
    return [f"{lead}-p ipv6-icmp -m icmp6 --icmpv6-type {t} -j {target}" for t in types]


def _ingress(version: int, rules: list[dict], names: _Names) -> list[str]:
    if version == 4:
        fixed = ["-p udp -m udp --sport 67 --dport 68 -j RETURN"]  # DHCP replies
    else:
        fixed = [*_icmpv6(ICMPV6_IN, "RETURN"),
                 "-p udp -m udp --sport 547 --dport 546 -j RETURN"]  # DHCPv6 replies
    return [*fixed, *STATE_RULES, *_rule_specs(rules, "ingress", version, names),
            f"-j {names.fallback}"]


def _egress(version: int, rules: list[dict], names: _Names, spoofing: str) -> list[str]:
    if version == 4:
        before = ["-s 0.0.0.0/32 -d 255.255.255.255/32 -p udp -m udp --sport 68 --dport 67 "
                  "-j RETURN"]  # DHCP discover, before the instance has an address
        after = ["-p udp -m udp --sport 68 --dport 67 -j RETURN",
                 "-p udp -m udp --sport 67 --dport 68 -j DROP"]  # no DHCP server
    else:
        before = [*_icmpv6(ICMPV6_DAD, "RETURN", "-s ::/128 -d ff02::/16"),
                  *_icmpv6([ICMPV6_RA], "DROP")]  # no router advertisements
        after = [*_icmpv6(ICMPV6_OUT, "RETURN"),
                 "-p udp -m udp --sport 546 --dport 547 -j RETURN",
                 "-p udp -m udp --sport 547 --dport 546 -j DROP"]  # no DHCPv6 server
    return [*before, f"-j {spoofing}", *after, *STATE_RULES,
            *_rule_specs(rules, "egress", version, names), f"-j {names.fallback}"]


def _spoofing(version: int, port: Mapping[str, Any]) -> list[str]:
    """Only the port's MAC with its addresses, and the allowed address pairs with
    theirs, may send; an IPv6 MAC also owns its EUI-64 link-local address. A port
    without addresses of this version is held to its MAC only, as in Neutron."""
    mac = port["mac_address"]
    pairs = [(mac, ip["ip_address"]) for ip in port.get("fixed_ips") or []]
    pairs += [(p.get("mac_address") or mac, p["ip_address"])
              for p in port.get("allowed_address_pairs") or []]
    macs = sorted({m.lower() for m, _ in pairs} | {mac.lower()})
    nets = {(m.lower(), ipaddress.ip_network(a, strict=False)) for m, a in pairs}
    if version == 6:
        nets |= {(m, ipaddress.ip_network(_link_local(m))) for m in macs}
    ours = sorted((m, n) for m, n in nets if n.version == version)
    specs = [f"-s {n} -m mac --mac-source {m.upper()} -j RETURN" for m, n in ours]
    if not ours:
        specs = [f"-m mac --mac-source {mac.upper()} -j RETURN"]
    return [*specs, "-j DROP"]


def _link_local(mac: str) -> str:
    octets = [int(x, 16) for x in mac.split(":")]
    eui = [octets[0] ^ 0x02, *octets[1:3], 0xFF, 0xFE, *octets[3:]]
    return str(ipaddress.IPv6Address(bytes([0xFE, 0x80] + [0] * 6 + eui)))


def _allowed(version: int, port: Mapping[str, Any], rules: list[dict],
             members: Mapping[str, Mapping[str, Any]]) -> set[Allowed]:
    locals_ = _locals(version, port)
    out: set[Allowed] = set()
    for rule in rules:
        proto = _protocol(rule.get("protocol"), version)
        if proto is None:
            continue
        low, high = rule.get("port_range_min"), rule.get("port_range_max")
        port_no = int(low) if proto in PORTED and low is not None and high in (None, low) else None
        for remote in _remotes(rule, version, members):
            for local in locals_:
                out.add(Allowed(rule["direction"], version, local,
                                CONNTRACK_PROTOCOLS.get(proto), port_no, remote))
    return out


def _locals(version: int, port: Mapping[str, Any]) -> list[str]:
    """The port's own single addresses of this version (address pairs' CIDRs aside)."""
    addresses = ([ip["ip_address"] for ip in port.get("fixed_ips") or []]
                 + [p["ip_address"] for p in port.get("allowed_address_pairs") or []])
    return sorted({a for a in addresses
                   if "/" not in a and ipaddress.ip_address(a).version == version})


def _remotes(rule: Mapping[str, Any], version: int,
             members: Mapping[str, Mapping[str, Any]]) -> list[str | None]:
    """The single addresses a rule lets talk (None: more than one can say)."""
    for kind, key in (("g", "remote_group_id"), ("a", "remote_address_group_id")):
        if rule.get(key):
            owned = (members[kind].get(rule[key]) or {}).get(f"IPv{version}", [])
            return [a if "/" not in a else None for a in ipset.entries(version, owned)]
    prefix = rule.get("remote_ip_prefix")
    if prefix:
        net = ipaddress.ip_network(prefix, strict=False)
        if net.version != version:
            return []
        if net.prefixlen == net.max_prefixlen:
            return [str(net.network_address)]
    return [None]


# --- the host ---------------------------------------------------------------------------


class IptablesFirewall:
    """Applies rulesets to the host (``namespace``: run the tools there; None:
    this one). Each ``apply`` reads ``ipset save`` and ``ip[6]tables-save``, then
    writes with one ``ipset restore`` (the sets whose members changed), one
    ``iptables-restore`` and one ``ip6tables-restore``; then one more ``ipset
    restore`` destroys the sets no rule uses any more, and one ``conntrack -D``
    runs per kind of connection no longer allowed."""

    def __init__(self, namespace: str | None = None, prefix: str = "neutrino"):
        if not prefix or len(prefix) > MAX_PREFIX:
            raise ValueError(f"firewall prefix {prefix!r}: 1 to {MAX_PREFIX} characters")
        self.namespace = namespace
        self.prefix = prefix
        self._applied = Ruleset()

    def apply(self, info: Mapping[str, Any]) -> None:
        """Make the host's filtering exactly what ``info`` describes, atomically
        per IP version: ports absent from it lose their chains."""
        wanted = build(info, self.prefix)
        self._write(wanted)
        for argv in conntrack_deletions(self._applied, wanted):
            self._run(["conntrack", *argv], check=False)
        self._applied = wanted

    def remove_all(self) -> None:
        """Remove every chain, jump and set of ours."""
        self._write(Ruleset())
        self._applied = Ruleset()

    def _write(self, wanted: Ruleset) -> None:
        present = ipset.parse_save(self._run(["ipset", "save"]))
        changed = {name: spec for name, spec in wanted.sets.items()
                   if present.get(name) != set(spec[1])}
        if changed:
            self._run(["ipset", "restore"], ipset.restore_script(changed))
        for version, tool in ((4, "iptables"), (6, "ip6tables")):
            saved = self._run([f"{tool}-save", "-t", "filter"])
            text = restore_text(wanted.chains[version], saved, self.prefix)
            self._run([f"{tool}-restore", "--noflush"], text)
        stale = [n for n in present if ipset.is_ours(n, self.prefix) and n not in wanted.sets]
        if stale:
            self._run(["ipset", "restore"], ipset.destroy_script(stale))

    def _run(self, argv: list[str], stdin: str | None = None, check: bool = True) -> str:
        full = ["ip", "netns", "exec", self.namespace, *argv] if self.namespace else argv
        done = subprocess.run(full, input=stdin, capture_output=True, text=True, timeout=60)
        if check and done.returncode != 0:
            raise FirewallError(f"{' '.join(argv)} in {self.namespace or 'this namespace'} "
                                f"failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout
