"""FWaaS v2 in a router's namespace: iptables (IPv4) and ip6tables (IPv6)
chains of our own in the filter table, as neutron-fwaas's L3 driver lays them
out::

    filter FORWARD -> neutrino-fw-FWD:  per firewalled interface
                        -o qr-X -j neutrino-fw-i-<group>  (ingress: into its network)
                        -i qr-X -j neutrino-fw-e-<group>  (egress: out of it)
                        then -o qr-X -j DROP, -i qr-X -j DROP (what no rule allowed)
    neutrino-fw-i-<group>, neutrino-fw-e-<group>:
                        INVALID dropped, RELATED,ESTABLISHED accepted, then the
                        policy's enabled rules in order (allow: ACCEPT, deny:
                        DROP, reject: a TCP reset or ICMP port unreachable)

A direction without a policy allows nothing new; a group whose
``admin_state_up`` is false drops all new traffic of its ports.

Each chain's first rule is a comment holding a digest of the rest, so that
what is already right is known from ``iptables-save`` alone: an agent that
restarts rewrites nothing, and a change rewrites only the chains whose
digest differs (one ``iptables-restore --noflush`` per family). The
connections a removed or changed rule let through are forgotten (conntrack),
so that an established flow lives on only if still allowed.

A group that logs (``logs``) has NFLOG twins before its rules, as the
security groups' firewall does (``firewall_log``): ACCEPT before each allow
rule, DROP before each deny or reject rule and before the drop of what no
rule allowed; the prefix names the group.
"""

from __future__ import annotations

import hashlib
import logging
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from neutrino.linux import firewall_log
from neutrino.linux.iptables import namespace_runner, saved_lines

LOG = logging.getLogger(__name__)

PREFIX = "neutrino-fw"
FORWARD = f"{PREFIX}-FWD"
FAMILIES = {4: ("iptables-save", "iptables-restore"), 6: ("ip6tables-save", "ip6tables-restore")}
#: ip6tables' name of ICMP
_PROTOCOL_V6 = {"icmp": "ipv6-icmp", "icmpv6": "ipv6-icmp"}

#: chain name -> its rules (``-A`` lines, the digest first)
Chains = dict[str, list[str]]


@dataclass(frozen=True)
class Rule:
    action: str  # allow, deny or reject
    protocol: str | None = None
    ip_version: int = 4
    source: str | None = None
    destination: str | None = None
    source_port: str | None = None  # "N" or "N:M"
    destination_port: str | None = None


@dataclass(frozen=True)
class Group:
    """A firewall group as one router enforces it: ``devices`` are its ports'
    devices on the router; a direction's rules None: no policy that way."""

    id: str
    devices: tuple[str, ...]
    ingress: tuple[Rule, ...] | None = None
    egress: tuple[Rule, ...] | None = None
    enabled: bool = True
    #: packet logging: what to log (firewall_log.ACCEPT, DROP)
    logs: frozenset[str] = frozenset()


def _cidr(address: str, version: int) -> str:
    return address if "/" in address else f"{address}/{32 if version == 4 else 128}"


def _match(rule: Rule) -> str:
    """The match part of a rule, in ``iptables-save``'s own order and spelling."""
    parts = []
    if rule.source:
        parts.append(f"-s {_cidr(rule.source, rule.ip_version)}")
    if rule.destination:
        parts.append(f"-d {_cidr(rule.destination, rule.ip_version)}")
    protocol = rule.protocol
    if protocol is not None:
        if rule.ip_version == 6:
            protocol = _PROTOCOL_V6.get(protocol, protocol)
        parts.append(f"-p {protocol}")
        if rule.source_port or rule.destination_port:
            parts.append(f"-m {protocol}")
        if rule.source_port:
            parts.append(f"--sport {rule.source_port}")
        if rule.destination_port:
            parts.append(f"--dport {rule.destination_port}")
    return " ".join(parts)


def _target(rule: Rule) -> str:
    if rule.action == "allow":
        return "-j ACCEPT"
    if rule.action == "reject":
        if rule.protocol == "tcp":
            return "-j REJECT --reject-with tcp-reset"
        unreachable = "icmp-port-unreachable" if rule.ip_version == 4 else \
            "icmp6-port-unreachable"
        return f"-j REJECT --reject-with {unreachable}"
    return "-j DROP"


def chain_name(direction: str, group_id: str) -> str:
    """``neutrino-fw-i-0f1e2d3c4b5a`` (iptables allows 28 characters)."""
    return f"{PREFIX}-{direction[0]}-{group_id.replace('-', '')[:12]}"


def _digested(chain: str, rules: list[str]) -> list[str]:
    digest = hashlib.sha1("\n".join(rules).encode()).hexdigest()[:16]
    return [f"-A {chain} -m comment --comment {digest}",
            *(f"-A {chain} {rule}" for rule in rules)]


def _rules(group: Group, rules: Sequence[Rule], version: int,
           limits: firewall_log.Limits) -> list[str]:
    """A policy's rules of one family, each after its NFLOG twin when the group
    logs what it does (ACCEPT: allow; DROP: deny and reject)."""
    found = []
    for rule in rules:
        if rule.ip_version != version:
            continue
        match = _match(rule)
        logged = firewall_log.ACCEPT if rule.action == "allow" else firewall_log.DROP
        if logged in group.logs:
            found.append(firewall_log.nflog(match, logged, group.id, limits))
        found.append(" ".join(filter(None, (match, _target(rule)))))
    return found


def chains(groups: Sequence[Group], version: int,
           limits: firewall_log.Limits = firewall_log.Limits()) -> Chains:
    """Our chains for ``groups`` in one family (``version``); none without groups.
    ``limits``: the packet logs' rate limit."""
    if not groups:
        return {}
    found: Chains = {}
    jumps, drops = [], []
    for group in sorted(groups, key=lambda g: g.id):
        for direction, rules, flag in (("ingress", group.ingress, "-o"),
                                       ("egress", group.egress, "-i")):
            chain = chain_name(direction, group.id)
            body = ["-m state --state INVALID -j DROP",
                    "-m state --state RELATED,ESTABLISHED -j ACCEPT"]
            if group.enabled:
                body += _rules(group, rules or (), version, limits)
            found[chain] = _digested(chain, body)
            jumps += [f"{flag} {device} -j {chain}" for device in group.devices]
            for device in group.devices:
                if firewall_log.DROP in group.logs:
                    drops.append(firewall_log.nflog(f"{flag} {device}", firewall_log.DROP,
                                                    group.id, limits))
                drops.append(f"{flag} {device} -j DROP")
    found[FORWARD] = _digested(FORWARD, jumps + drops)
    return found


def saved_chains(saved: str) -> tuple[Chains, bool]:
    """Our chains' rules in ``iptables-save`` output, and whether FORWARD jumps
    to ours."""
    found: Chains = {}
    hooked = False
    for table, line in saved_lines(saved):
        if table != "filter":
            continue
        if line.startswith(f":{PREFIX}-"):
            found.setdefault(line[1:].split()[0], [])
        elif line.startswith("-A "):
            chain = line.split()[1]
            if chain.startswith(PREFIX):
                found.setdefault(chain, []).append(line)
            elif chain == "FORWARD" and line == f"-A FORWARD -j {FORWARD}":
                hooked = True
    return found, hooked


def restore_text(wanted: Chains, present: Chains, hooked: bool) -> str | None:
    """``*-restore --noflush`` input for the chains whose digest differs
    (declared, so emptied, then refilled), the hook if missing, and the chains
    no longer wanted removed; None if all is right."""
    stale = sorted(c for c, lines in wanted.items() if present.get(c, [None])[:1] != lines[:1])
    gone = sorted(c for c in present if c not in wanted)
    hook = bool(wanted) and not hooked
    if not stale and not gone and not hook:
        return None
    lines = ["*filter"]
    lines += [f":{chain} - [0:0]" for chain in sorted({*stale, *gone})]
    if hook:
        lines.append(f"-I FORWARD 1 -j {FORWARD}")
    if not wanted and hooked:
        lines.append(f"-D FORWARD -j {FORWARD}")
    for chain in stale:
        lines += wanted[chain]
    lines += [f"-X {chain}" for chain in gone]
    lines.append("COMMIT")
    return "\n".join(lines) + "\n"


def _rules_of(chain_lines: Sequence[str]) -> set[str]:
    return {line.split(" ", 2)[2] for line in chain_lines[1:] if line.count(" ") >= 2}


def forgotten_rules(before: Mapping[str, Sequence[str]], after: Chains) -> list[str]:
    """The ACCEPT rules of group chains that are gone or changed: the
    connections they let in must be looked at again."""
    found: set[str] = set()
    for chain, lines in before.items():
        if chain == FORWARD or after.get(chain, [None])[:1] == list(lines[:1]):
            continue
        kept = _rules_of(after.get(chain, []))
        found |= {rule for rule in _rules_of(lines)
                  if rule.endswith("-j ACCEPT") and "--state" not in rule and rule not in kept}
    return sorted(found)


def conntrack_filter(rule: str, version: int) -> list[str]:
    """``conntrack -D`` arguments for the connections an ACCEPT rule matches."""
    words = rule.split()
    args = ["-f", "ipv4" if version == 4 else "ipv6"]
    flags = {"-s": "-s", "-d": "-d", "-p": "-p", "--sport": "--sport", "--dport": "--dport"}
    for flag, value in zip(words, words[1:], strict=False):
        if flag in flags:
            if flag in ("--sport", "--dport") and ":" in value:
                continue  # conntrack takes no ranges: the protocol and addresses narrow it
            args += [flags[flag], value.split("/")[0] if flag in ("-s", "-d")
                     and value.endswith(("/32", "/128")) else value]
    return args


class RouterFirewall:
    """Our chains in one router namespace, both families."""

    def __init__(self, namespace: str):
        self.namespace = namespace
        self._runner = namespace_runner(namespace, timeout=30)

    def _run(self, argv: list[str], stdin: str | None = None) -> str:
        done = self._runner(argv, stdin)
        if done.returncode != 0:
            raise OSError(f"{argv[0]} in {self.namespace}: "
                          f"{done.stderr.strip() or done.returncode}")
        return done.stdout

    def apply(self, groups: Sequence[Group],
              limits: firewall_log.Limits = firewall_log.Limits()) -> list[str]:
        """Make our chains enforce ``groups``; the chains written (none: all
        was right, only ``iptables-save`` ran)."""
        written = []
        for version, (save, restore) in FAMILIES.items():
            present, hooked = saved_chains(self._run([save, "-t", "filter"]))
            wanted = chains(groups, version, limits)
            text = restore_text(wanted, present, hooked)
            if text is None:
                continue
            self._run([restore, "--noflush"], text)
            written += [f"ipv{version} {c}" for c in sorted(wanted)
                        if present.get(c, [None])[:1] != wanted[c][:1]]
            for rule in forgotten_rules(present, wanted):
                self._forget(conntrack_filter(rule, version))
        return written

    def _forget(self, args: list[str]) -> None:
        """conntrack fails when nothing matched, which is fine."""
        done = subprocess.run(["ip", "netns", "exec", self.namespace, "conntrack", "-D",
                               *args], capture_output=True, timeout=10)
        LOG.debug("%s: conntrack -D %s: %s", self.namespace, " ".join(args),
                  done.returncode)
