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
answer into a ``Ruleset`` (chains, sets, and per port its addresses and the
grants of its rules), ``restore_text`` turns that and a ``Table`` (our part
of the filter table as last written) into one ``iptables-restore --noflush``
input, and ``conntrack_forgets`` compares two rulesets. ``IptablesFirewall``
only runs the tools. Every step is linear in the ports: each set's entries are
worked out once per ``build``, and ports sharing groups share their rule texts.

The agent applies the whole host after every change, often one port added, so
writing is incremental. ``IptablesFirewall`` remembers what it wrote (each
chain's lines, the jumps, each set's entries) and writes only the difference:
declaring ``:chain - [0:0]`` in ``--noflush`` input empties just that chain, so
only chains whose lines changed are declared and refilled, stale ones deleted,
and a family or the sets with nothing changed are not written at all. The tools
are read (``ip[6]tables-save``, ``ipset save``) only by the first ``apply`` of the
object, by ``remove_all``, and after a tool failed: a failure forgets what was
remembered, so the next ``apply`` reads and rewrites everything of ours.

What conntrack forgets is worked out against the previous ``apply`` of this
object (the first one after an agent restart forgets nothing), per port and
not per pair of addresses: a grant a port lost forgets that port's connections
of its kind (a lost remote-group rule: from any of the group's members of
then), and members leaving a set forget their connections with the ports whose
rules still name it. A few of those are ``conntrack -D`` each; more are matched
in Python against one ``conntrack -L`` and only the live ones deleted.

A port of stateless groups (their rules come with ``stateful: False``) has
no conntrack state rules in its chains: its rules alone decide, so a reply
passes only by a rule of its own (as in Neutron; its packets are still seen
by conntrack, which nothing here consults). Left out: conntrack zones
(entries are not split per network; only overlapping addresses on two
networks of one host would share them).
Router advertisements are let in from anyone, not only the subnet's gateway.
"""

from __future__ import annotations

import builtins
import functools
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from neutrino import metrics
from neutrino.addresses import link_local
from neutrino.linux import firewall_log, ipset
from neutrino.linux.errors import HostError
from neutrino.linux.iptables import Runner, namespace_runner, saved_lines
from neutrino.linux.sg_rules import (
    ICMPV6_IN,
    ICMPV6_OUT,
    filtered,
    protocol,
    rule_version,
    stateless,
)

#: iptables' limit on a chain name (XT_EXTENSION_MAXNAMELEN 29, with the NUL)
MAX_CHAIN = 28
#: what a port's chain names keep of its id (its tap device keeps as much)
PORT_ID_CHARS = 11
MAX_PREFIX = MAX_CHAIN - 2 - PORT_ID_CHARS - 4  # room for "-i<11>" and a margin

PORTED = frozenset({"tcp", "udp", "sctp", "dccp", "udplite"})
#: conntrack(8) names of the protocols it filters on
CONNTRACK_PROTOCOLS = {"tcp": "tcp", "udp": "udp", "icmp": "icmp", "ipv6-icmp": "icmpv6",
                       "sctp": "sctp", "dccp": "dccp", "udplite": "udplite"}
CONNTRACK_FAMILIES = {4: "ipv4", 6: "ipv6"}
#: up to this many kinds of connection to forget, one ``conntrack -D`` each;
#: beyond, one ``conntrack -L`` tells which live ones to delete
DIRECT_DELETIONS = 4
ICMPV6_DAD = (131, 135, 143)  # sent from :: before the address is usable
ICMPV6_RA = 134

STATE_RULES = ("-m state --state RELATED,ESTABLISHED -j RETURN",
               "-m state --state INVALID -j DROP")


class FirewallError(HostError):
    """A tool refused the change; the message carries what it said."""


@dataclass(frozen=True, order=True)
class Grant:
    """A kind of connection one of a port's rules lets start, kept so that
    conntrack can forget those connections once no rule allows them. It names
    no local address, so that ports sharing groups share their grants."""
    version: int
    direction: str
    protocol: str  # conntrack's name, "" for any
    ports: tuple[int, int] | None  # destination ports, None for any
    remote: str  # an address or CIDR, "" for any ...
    remote_set: str = ""  # ... or the set (remote or address group) it is in


@dataclass(frozen=True)
class Guard:
    """A filtered port as conntrack sees it: its single addresses, and what
    its rules let start."""
    addresses: frozenset[str]
    grants: frozenset[Grant]


@dataclass(frozen=True)
class Flow:
    """A conntrack entry's original direction, as ``conntrack -L`` shows it."""
    version: int
    protocol: str  # conntrack's name ("unknown" for those it has none for)
    source: str
    destination: str
    port: int | None  # destination port


@dataclass(frozen=True)
class Forget:
    """Connections of one local address that conntrack must forget: of that
    ``direction`` (ingress: the other end opened them), protocol ("": any) and
    destination ports, with any of ``remotes`` (addresses or CIDRs; None: any)."""
    version: int
    direction: str
    local: str
    protocol: str
    ports: tuple[int, int] | None
    remotes: frozenset[str] | None

    def argv(self) -> list[str]:
        """``conntrack -D`` arguments; broader when conntrack cannot say it
        exactly (a port range, several remotes, a CIDR)."""
        remote = next(iter(self.remotes)) if self.remotes and len(self.remotes) == 1 else None
        remote = None if remote and "/" in remote else remote
        return _delete_argv(self.version, self.direction, self.local, remote,
                            self.protocol, _single(self.ports))

    def matches(self, flow: Flow) -> bool:
        if flow.version != self.version or (self.protocol and flow.protocol != self.protocol):
            return False
        ingress = self.direction == "ingress"
        local, remote = ((flow.destination, flow.source) if ingress
                         else (flow.source, flow.destination))
        if local != self.local:
            return False
        if self.ports and (flow.port is None or not
                           self.ports[0] <= flow.port <= self.ports[1]):
            return False
        return self.remotes is None or remote in self.remotes or _within(remote, self.remotes)


@dataclass
class Ruleset:
    """The filtering of a host: our chains of each IP version (name -> rule
    specifications, in order), our sets (name -> version, entries), and each
    filtered port as conntrack sees it (port id -> guard)."""
    chains: dict[int, dict[str, list[str]]] = field(
        default_factory=lambda: {4: {}, 6: {}})
    sets: dict[str, tuple[int, list[str]]] = field(default_factory=dict)
    guards: dict[str, Guard] = field(default_factory=dict)


@dataclass
class Table:
    """Our part of one family's filter table: chain -> its rules (None: seen
    in ``iptables-save``, whose spelling differs from ours, so to be rewritten),
    and the jumps (built-in chain, our chain) from built-in chains."""
    chains: dict[str, list[str] | None] = field(default_factory=dict)
    jumps: set[tuple[str, str]] = field(default_factory=set)


# --- the pure core ----------------------------------------------------------------------


def build(info: Mapping[str, Any], prefix: str = "neutrino",
          logs: Mapping[str, firewall_log.PortLog] | None = None,
          limits: firewall_log.Limits = firewall_log.Limits()) -> Ruleset:
    """The ruleset that filters exactly the ports of ``info`` (the server's
    ``security_group_info_for_devices`` answer), logging what ``logs`` asks
    of each port (port id -> what to log; ``firewall_log``)."""
    if not prefix or len(prefix) > MAX_PREFIX:
        raise ValueError(f"firewall prefix {prefix!r}: 1 to {MAX_PREFIX} characters")
    ruleset = Ruleset()
    ports = sorted((info.get("devices") or {}).values(), key=lambda p: p["port_id"])
    if not ports:  # a host without ports keeps no chains and no jumps to them
        return ruleset
    rules = _Rules(info, _Names(prefix), logs or {}, limits)
    spoofing = {port["port_id"]: _spoofing(port) for port in ports if filtered(port)}
    for version in (4, 6):
        ruleset.chains[version] = _chains(version, ports, rules, spoofing)
    ruleset.sets = rules.sets
    ruleset.guards = {port["port_id"]: Guard(frozenset(_locals(port)), rules.grants(port))
                      for port in ports if filtered(port)}
    return ruleset


def _chains(version: int, ports: list[Mapping[str, Any]], rules: _Rules,
            spoofing: Mapping[str, dict[int, list[str]]]) -> dict[str, list[str]]:
    """One family's chains for ``ports`` (sorted by id)."""
    names = rules.names
    chains = {names.fallback: ["-j DROP"]}
    forward, sg_chain, to_host = [], [], []
    for port in ports:
        tap = port["device"]
        out_of, into = _physdev("out", tap), _physdev("in", tap)
        forward += [f"{out_of} -j {names.sg_chain}", f"{into} -j {names.sg_chain}"]
        if not filtered(port):
            continue
        i, o, s = names.port(port["port_id"])
        sg_chain += [f"{out_of} -j {i}", f"{into} -j {o}"]
        # not --physdev-is-bridged: a packet for the host is not being bridged
        to_host.append(f"-m physdev --physdev-in {tap} -j {o}")
        ingress, egress = rules.specs(port, version)
        state = () if rules.stateless(port) else STATE_RULES
        port_id, log = port["port_id"], rules.logs.get(port["port_id"])
        accepting = functools.partial(firewall_log.accepting, port_id=port_id, log=log,
                                      limits=rules.limits)
        chains[i] = firewall_log.dropping(_ingress(version, accepting(ingress), names, state),
                                          port_id, log, rules.limits)
        chains[o] = firewall_log.dropping(
            _egress(version, accepting(egress), names, s, state), port_id, log, rules.limits)
        chains[s] = spoofing[port["port_id"]][version]
    chains[names.forward] = forward
    chains[names.sg_chain] = [*sg_chain, "-j ACCEPT"]
    chains[names.input] = to_host
    return chains


class _Rules:
    """The rules of ``info``'s groups, worked out once per group combination and
    IP version however many ports share it; and the sets they match, each
    filled once. Lives for one ``build``."""

    def __init__(self, info: Mapping[str, Any], names: _Names,
                 logs: Mapping[str, firewall_log.PortLog], limits: firewall_log.Limits):
        self.names = names
        self.logs = logs
        self.limits = limits
        self.groups: Mapping[str, list[dict]] = info.get("security_groups") or {}
        self.members = {"g": info.get("sg_member_ips") or {},
                        "a": info.get("address_group_ips") or {}}
        self.sets: dict[str, tuple[int, list[str]]] = {}
        self._specs: dict[tuple, tuple[list[str], list[str]]] = {}
        self._grants: dict[tuple, frozenset[Grant]] = {}

    def of(self, port: Mapping[str, Any], version: int) -> list[Mapping[str, Any]]:
        return [r for g in _group_ids(port) for r in self.groups.get(g, [])
                if rule_version(r) == version]

    def stateless(self, port: Mapping[str, Any]) -> bool:
        return stateless(r for g in _group_ids(port) for r in self.groups.get(g, []))

    def specs(self, port: Mapping[str, Any], version: int) -> tuple[list[str], list[str]]:
        """The port's ingress and egress rule specifications (its sets filled)."""
        key = (_group_ids(port), version)
        if key not in self._specs:
            rules = self.of(port, version)
            for rule in rules:
                self._fill(rule, version)
            self._specs[key] = (_rule_specs(rules, "ingress", version, self.names),
                                _rule_specs(rules, "egress", version, self.names))
        return self._specs[key]

    def grants(self, port: Mapping[str, Any]) -> frozenset[Grant]:
        key = _group_ids(port)
        if key not in self._grants:
            self._grants[key] = frozenset(
                grant for version in (4, 6) for rule in self.of(port, version)
                for grant in _grant(rule, version, self.names))
        return self._grants[key]

    def _fill(self, rule: Mapping[str, Any], version: int) -> None:
        """The set a rule's remote (address) group matches, with its addresses."""
        for kind, key in (("g", "remote_group_id"), ("a", "remote_address_group_id")):
            owner = rule.get(key)
            name = owner and self.names.set(version, kind, owner)
            if name and name not in self.sets:
                owned = (self.members[kind].get(owner) or {}).get(f"IPv{version}", [])
                self.sets[name] = (version, ipset.entries(version, owned))


def _group_ids(port: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(sorted(set(port.get("security_groups") or [])))


def _grant(rule: Mapping[str, Any], version: int, names: _Names) -> list[Grant]:
    """What the rule lets start, as conntrack sees it (nothing if it cannot match)."""
    proto = protocol(rule.get("protocol"), version)
    remote = _remote(rule, version)
    if proto is None or remote is None:
        return []
    low, high = rule.get("port_range_min"), rule.get("port_range_max")
    ports = None
    if proto in PORTED and low is not None:
        ports = (int(low), int(low if high is None else high))
        ports = None if ports == (1, 65535) else ports
    remote_set = ""
    for kind, key in (("g", "remote_group_id"), ("a", "remote_address_group_id")):
        if rule.get(key):
            remote_set = names.set(version, kind, rule[key])
    return [Grant(version, rule["direction"], CONNTRACK_PROTOCOLS.get(proto, ""), ports,
                  remote, remote_set)]


def _remote(rule: Mapping[str, Any], version: int) -> str | None:
    """The rule's remote prefix ("" for any; None if of the other IP version)."""
    prefix = rule.get("remote_ip_prefix")
    if not prefix:
        return ""
    net = ipaddress.ip_network(prefix, strict=False)
    if net.version != version:
        return None
    if net.prefixlen == net.max_prefixlen:
        return str(net.network_address)
    return str(net) if net.prefixlen else ""


def read_table(saved: str, prefix: str) -> Table:
    """Our chains in ``iptables-save`` output of the filter table (their rules
    unknown), and the (built-in chain, our chain) jumps found there."""
    table = Table()
    for current, line in saved_lines(saved):
        if current != "filter":
            continue
        if line.startswith(f":{prefix}-"):
            table.chains[line[1:].split()[0]] = None
        parts = line.split()
        if (len(parts) == 4 and parts[0] == "-A" and parts[2] == "-j"
                and parts[3].startswith(f"{prefix}-")):
            table.jumps.add((parts[1], parts[3]))
    return table


def restore_text(chains: Mapping[str, list[str]], present: Table, prefix: str) -> str:
    """``iptables-restore --noflush`` input that turns our part of a filter table,
    ``present``, into exactly ``chains``, touching only what differs: a chain
    whose few rules changed is edited in place (deletions, then insertions, by
    position), others that differ are declared (which empties them) and
    refilled; ours that are no longer wanted are emptied and deleted, and the
    two jumps from FORWARD and INPUT are added once (removed with the last
    chain). Other chains are not touched. "" when nothing differs."""
    edits: list[str] = []
    refill: list[str] = []
    for name in sorted(chains):
        before = present.chains.get(name)
        if before == chains[name]:
            continue
        edit = _edit(name, before, chains[name]) if before is not None else None
        if edit is None:
            refill.append(name)
        else:
            edits += edit
    stale = sorted(set(present.chains) - set(chains))
    hooks = _hook_changes(bool(chains), present.jumps, _Names(prefix))
    if not (edits or refill or stale or hooks):
        return ""
    lines = ["*filter", *(f":{name} - [0:0]" for name in sorted({*refill, *stale})), *hooks]
    for name in refill:
        lines += [f"-A {name} {spec}" for spec in chains[name]]
    lines += [*edits, *(f"-X {name}" for name in stale), "COMMIT"]
    return "".join(line + "\n" for line in lines)


def _edit(name: str, before: list[str], after: list[str]) -> list[str] | None:
    """Deletions then insertions, by position, that turn the rules ``before`` into
    ``after``; None when refilling the chain is simpler (repeated rules, the
    kept ones reordered, or about as many changes as rules)."""
    old, new = set(before), set(after)
    if len(old) != len(before) or len(new) != len(after):
        return None
    if [line for line in before if line in new] != [line for line in after if line in old]:
        return None
    gone = [n for n, line in enumerate(before, 1) if line not in new]
    added = [(n, line) for n, line in enumerate(after, 1) if line not in old]
    if len(gone) + len(added) >= max(len(after) // 2, 1):
        return None
    return ([f"-D {name} {n}" for n in reversed(gone)]
            + [f"-I {name} {n} {line}" for n, line in added])


def written(chains: Mapping[str, list[str]], present: Table, prefix: str) -> Table:
    """``present`` once ``restore_text(chains, present, prefix)`` is restored."""
    hooks = _Names(prefix).hooks()
    jumps = (present.jumps - hooks) | (hooks if chains else set())
    return Table({name: list(lines) for name, lines in chains.items()}, jumps)


def _hook_changes(wanted: bool, jumps: set[tuple[str, str]], names: _Names) -> list[str]:
    """The jumps from FORWARD and INPUT to add (chains wanted) or delete (none)."""
    lines = []
    for builtin, top in sorted(names.hooks(), reverse=True):  # FORWARD, then INPUT
        if wanted and (builtin, top) not in jumps:
            lines.append(f"-I {builtin} 1 -j {top}")
        elif not wanted and (builtin, top) in jumps:
            lines.append(f"-D {builtin} -j {top}")
    return lines


def conntrack_forgets(before: Ruleset, after: Ruleset) -> list[Forget]:
    """The connections that ``before`` allowed and ``after`` does not, of ports
    filtered in both, at the addresses they kept: per grant a port lost, and per
    set a port's grant still names, per member gone from it. Linear in the ports."""
    gone = {name: frozenset(entries) - frozenset(after.sets[name][1])
            for name, (_, entries) in before.sets.items() if name in after.sets}
    lost: dict[Grant, frozenset[str] | None] = {}  # shared by the ports: linear
    forgets: set[Forget] = set()
    for port_id, now in after.guards.items():
        was = before.guards.get(port_id)
        kept = was.addresses & now.addresses if was is not None else frozenset()
        if was is None or not kept:
            continue
        for grant in was.grants - now.grants:
            if grant not in lost:
                lost[grant] = _remotes(grant, before.sets)
            forgets.update(_forgets(grant, kept, lost[grant]))
        for grant in was.grants & now.grants:
            if gone.get(grant.remote_set):
                forgets.update(_forgets(grant, kept, gone[grant.remote_set]))
    return sorted(forgets, key=_order)


def _remotes(grant: Grant, sets: Mapping[str, tuple[int, list[str]]]) -> frozenset[str] | None:
    """The other ends a grant let talk (None: any)."""
    if grant.remote_set:
        return frozenset(sets.get(grant.remote_set, (0, []))[1])
    return frozenset([grant.remote]) if grant.remote else None


def _forgets(grant: Grant, addresses: Iterable[str], remotes: frozenset[str] | None
             ) -> list[Forget]:
    if remotes is not None and not remotes:
        return []  # a group without members let nothing in
    return [Forget(grant.version, grant.direction, local, grant.protocol, grant.ports, remotes)
            for local in addresses if (":" in local) == (grant.version == 6)]


def _order(forget: Forget) -> tuple:
    return (forget.version, forget.local, forget.direction, forget.protocol,
            forget.ports or (0, 0), sorted(forget.remotes or ()))


def conntrack_deletions(forgets: Iterable[Forget], listed: str | None = None) -> list[list[str]]:
    """``conntrack -D`` arguments for ``forgets``: one each, or, given ``listed``
    (``conntrack -L -o extended`` output), only for the live connections they
    match, whichever takes fewer commands."""
    broad = _unique(forget.argv() for forget in forgets)
    if listed is None:
        return broad
    by_local: dict[tuple[int, str], list[Forget]] = {}
    for forget in forgets:
        by_local.setdefault((forget.version, forget.local), []).append(forget)
    exact = []
    for flow in parse_flows(listed):
        candidates = (by_local.get((flow.version, flow.source), [])
                      + by_local.get((flow.version, flow.destination), []))
        if any(forget.matches(flow) for forget in candidates):
            exact.append(_delete_argv(
                flow.version, "egress", flow.source, flow.destination,
                flow.protocol if flow.protocol in CONNTRACK_PROTOCOLS.values() else "",
                flow.port))
    exact = _unique(exact)
    return exact if len(exact) <= len(broad) else broad


def parse_flows(listed: str) -> list[Flow]:
    """The entries of ``conntrack -L -o extended`` output (original direction)."""
    flows = []
    for line in listed.splitlines():
        words = line.split()
        if len(words) < 4 or words[0] not in ("ipv4", "ipv6"):
            continue
        fields: dict[str, str] = {}
        for word in words[4:]:
            key, _, value = word.partition("=")
            fields.setdefault(key, value)
        if "src" in fields and "dst" in fields:
            port = fields.get("dport")
            flows.append(Flow(6 if words[0] == "ipv6" else 4, words[2], fields["src"],
                              fields["dst"], int(port) if port else None))
    return flows


def _delete_argv(version: int, direction: str, local: str, remote: str | None,
                 protocol: str, port: int | None) -> list[str]:
    argv = ["-D", "-f", CONNTRACK_FAMILIES[version]]
    # conntrack's -s/-d are those of the packet that opened the connection
    source, destination = (remote, local) if direction == "ingress" else (local, remote)
    argv += ["-s", source] if source else []
    argv += ["-d", destination] if destination else []
    if protocol:
        argv += ["-p", protocol]
        if port is not None and protocol in PORTED:
            argv += ["--dport", str(port)]
    return argv


def _single(ports: tuple[int, int] | None) -> int | None:
    return ports[0] if ports and ports[0] == ports[1] else None


@functools.lru_cache(maxsize=256)
def _networks(remotes: frozenset[str]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(r, strict=False) for r in remotes if "/" in r)


def _within(address: str, remotes: frozenset[str]) -> bool:
    """Whether ``address`` is in one of the CIDRs of ``remotes``."""
    networks = _networks(remotes)
    if not networks:
        return False
    ip = ipaddress.ip_address(address)
    return any(ip in net for net in networks)


def _unique(commands: Iterable[list[str]]) -> list[list[str]]:
    seen: dict[tuple[str, ...], list[str]] = {}
    for argv in commands:
        seen.setdefault(tuple(argv), argv)
    return list(seen.values())


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

    def hooks(self) -> builtins.set[tuple[str, str]]:
        """The jumps from built-in chains that everything of ours hangs off."""
        return {("FORWARD", self.forward), ("INPUT", self.input)}


def _physdev(way: str, tap: str) -> str:
    return f"-m physdev --physdev-{way} {tap} --physdev-is-bridged"


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
    proto = protocol(rule.get("protocol"), version)
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


def _ingress(version: int, specs: list[str], names: _Names, state: Iterable[str]
             ) -> list[str]:
    if version == 4:
        fixed = ["-p udp -m udp --sport 67 --dport 68 -j RETURN"]  # DHCP replies
    else:
        fixed = [*_icmpv6(ICMPV6_IN, "RETURN"),
                 "-p udp -m udp --sport 547 --dport 546 -j RETURN"]  # DHCPv6 replies
    return [*fixed, *state, *specs, f"-j {names.fallback}"]


def _egress(version: int, specs: list[str], names: _Names, spoofing: str,
            state: Iterable[str]) -> list[str]:
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
    return [*before, f"-j {spoofing}", *after, *state, *specs, f"-j {names.fallback}"]


def _spoofing(port: Mapping[str, Any]) -> dict[int, list[str]]:
    """Only the port's MAC with its addresses, and the allowed address pairs with
    theirs, may send; an IPv6 MAC also owns its EUI-64 link-local address. A port
    without addresses of a version is held to its MAC only, as in Neutron. Both
    versions at once: each address is parsed once."""
    mac = port["mac_address"]
    pairs = [(mac, ip["ip_address"]) for ip in port.get("fixed_ips") or []]
    pairs += [(p.get("mac_address") or mac, p["ip_address"])
              for p in port.get("allowed_address_pairs") or []]
    macs = sorted({m.lower() for m, _ in pairs} | {mac.lower()})
    nets = {(m.lower(), *_net(a)) for m, a in pairs} | {(m, *_link_local(m)) for m in macs}
    chains = {}
    for version in (4, 6):
        ours = sorted((m, key, length, text) for m, v, key, length, text in nets if v == version)
        specs = [f"-s {text} -m mac --mac-source {m.upper()} -j RETURN"
                 for m, _, _, text in ours]
        if not ours:
            specs = [f"-m mac --mac-source {mac.upper()} -j RETURN"]
        chains[version] = [*specs, "-j DROP"]
    return chains


def _net(address: str) -> tuple[int, int, int, str]:
    """(version, first address, prefix length, text) of an address or a CIDR."""
    if "/" not in address:  # most are: ip_address is much cheaper than ip_network
        ip = ipaddress.ip_address(address)
        return ip.version, int(ip), ip.max_prefixlen, f"{ip}/{ip.max_prefixlen}"
    net = ipaddress.ip_network(address, strict=False)
    return net.version, int(net.network_address), net.prefixlen, str(net)


def _link_local(mac: str) -> tuple[int, int, int, str]:
    ip = link_local(mac)
    return 6, int(ip), 128, f"{ip}/128"


def _locals(port: Mapping[str, Any]) -> list[str]:
    """The port's own single addresses (address pairs' CIDRs aside)."""
    addresses = ([ip["ip_address"] for ip in port.get("fixed_ips") or []]
                 + [p["ip_address"] for p in port.get("allowed_address_pairs") or []])
    return sorted({str(ipaddress.ip_address(a)) for a in addresses if "/" not in a})


# --- the host ---------------------------------------------------------------------------

class IptablesFirewall:
    """Applies rulesets to the host (``namespace``: run the tools there; None:
    this one; ``runner``: run them some other way, a fake host in tests).

    The first ``apply`` reads ``ipset save`` and ``ip[6]tables-save``; every
    ``apply`` then writes only what changed since the last one: one ``ipset
    restore`` (the sets whose members changed), one ``iptables-restore`` and one
    ``ip6tables-restore`` (the chains whose rules changed), one more ``ipset
    restore`` destroying the sets no rule uses any more, each only if needed;
    then the ``conntrack`` runs that forget what is no longer allowed."""

    def __init__(self, namespace: str | None = None, prefix: str = "neutrino",
                 runner: Runner | None = None):
        if not prefix or len(prefix) > MAX_PREFIX:
            raise ValueError(f"firewall prefix {prefix!r}: 1 to {MAX_PREFIX} characters")
        self.namespace = namespace
        self.prefix = prefix
        self._runner = runner or namespace_runner(namespace, timeout=60)
        self._applied = Ruleset()
        # what the host holds of ours, as last read or written; None: read it first
        self._tables: dict[int, Table] | None = None
        self._sets: dict[str, set[str]] | None = None

    def apply(self, info: Mapping[str, Any],
              logs: Mapping[str, firewall_log.PortLog] | None = None,
              limits: firewall_log.Limits = firewall_log.Limits()) -> None:
        """Make the host's filtering exactly what ``info`` describes (and the
        packet logging ``logs`` asks), atomically per IP version: ports absent
        from it lose their chains."""
        wanted = build(info, self.prefix, logs, limits)
        with metrics.programming("iptables"):
            self._write(wanted)
            self._forget(conntrack_forgets(self._applied, wanted))
        self._applied = wanted

    def remove_all(self) -> None:
        """Remove every chain, jump and set of ours (read afresh, not remembered)."""
        self._tables = self._sets = None
        self._write(Ruleset())
        self._applied = Ruleset()

    def _write(self, wanted: Ruleset) -> None:
        """Write the difference; on failure forget what the host holds, so that
        the next write reads it again and rewrites everything of ours."""
        try:
            self._write_difference(wanted)
        except FirewallError:
            self._tables = self._sets = None
            raise

    def _write_difference(self, wanted: Ruleset) -> None:
        present = self._present_sets()
        changed = {name: spec for name, spec in wanted.sets.items()
                   if present.get(name) != set(spec[1])}
        if changed:  # before the rules that match them
            self._run(["ipset", "restore"], ipset.restore_script(changed))
        tables = self._present_tables()
        for version, tool in ((4, "iptables"), (6, "ip6tables")):
            text = restore_text(wanted.chains[version], tables[version], self.prefix)
            if text:
                self._run([f"{tool}-restore", "--noflush"], text)
                tables[version] = written(wanted.chains[version], tables[version], self.prefix)
        stale = [name for name in present if name not in wanted.sets]
        if stale:  # after the rules that matched them
            self._run(["ipset", "restore"], ipset.destroy_script(stale))
        self._sets = {name: set(entries) for name, (_, entries) in wanted.sets.items()}

    def _present_sets(self) -> dict[str, set[str]]:
        if self._sets is None:
            saved = ipset.parse_save(self._run(["ipset", "save"]))
            self._sets = {name: entries for name, entries in saved.items()
                          if ipset.is_ours(name, self.prefix)}
        return self._sets

    def _present_tables(self) -> dict[int, Table]:
        if self._tables is None:
            self._tables = {version: read_table(self._run([f"{tool}-save", "-t", "filter"]),
                                                self.prefix)
                            for version, tool in ((4, "iptables"), (6, "ip6tables"))}
        return self._tables

    def _forget(self, forgets: list[Forget]) -> None:
        """A few kinds of connection: one ``conntrack -D`` each; more: list the
        live ones once and delete only those (or the kinds, if fewer)."""
        listed = None
        if len(forgets) > DIRECT_DELETIONS:
            done = self._runner(["conntrack", "-L", "-o", "extended"], None)
            listed = done.stdout if done.returncode == 0 else None
        for argv in conntrack_deletions(forgets, listed):
            self._run(["conntrack", *argv], check=False)

    def _run(self, argv: list[str], stdin: str | None = None, check: bool = True) -> str:
        done = self._runner(argv, stdin)
        if check and done.returncode != 0:
            raise FirewallError(f"{' '.join(argv)} in {self.namespace or 'this namespace'} "
                                f"failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout
