"""Traffic counters of metering labels: iptables (IPv4) in a router's namespace.

As Neutron's iptables metering driver, counting happens in the router's
forward path, in the filter table, in chains of our own::

    FORWARD -> neutrino-meter-FWD: a jump per label to its rules chain
    neutrino-meter-r-<label[:11]>: the label's rules; excluded ones first,
        RETURN (not counted), then the others, jumping to ...
    neutrino-meter-l-<label[:11]>: one rule matching everything: its packet
        and byte counters are the label's

Ingress is what enters the router from its gateway (``-i qg-...``), egress
what leaves by it (``-o qg-...``). In FORWARD an egress packet still has its
internal source (SNAT comes after) and an ingress one its internal
destination already (DNAT came before), so ``remote_ip_prefix`` is the
outside end: the source of ingress, the destination of egress.

``chains`` is pure (labels -> our chains' lines); ``MeterTable`` writes only
the chains that changed (declaring a chain empties it and zeroes its
counters), in one ``iptables-restore --noflush``, and reads the counters of
the label chains (``iptables-save -c``). The counting chain of a label is
only ever declared once, when the label comes, so a change of its rules
keeps its counters, and so does an agent restart.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from neutrino.linux.iptables import Runner, namespace_runner, saved_lines

PREFIX = "neutrino-meter"
TOP = f"{PREFIX}-FWD"
TABLE = "filter"
BUILTIN = "FORWARD"

Chains = dict[str, list[str]]


@dataclass(frozen=True)
class Rule:
    """Which traffic of one direction a label counts (``excluded``: not)."""

    direction: str  # "ingress" | "egress"
    source: str | None = None
    destination: str | None = None
    excluded: bool = False


@dataclass(frozen=True)
class Label:
    id: str
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True)
class Counter:
    packets: int
    bytes: int


def label_chain(label_id: str) -> str:
    return f"{PREFIX}-l-{label_id[:11]}"


def rules_chain(label_id: str) -> str:
    return f"{PREFIX}-r-{label_id[:11]}"


def rule_of(direction: str, excluded: bool, remote: str | None, source: str | None,
            destination: str | None) -> Rule | None:
    """A rule from the API's fields (``remote_ip_prefix`` is the outside end);
    None for one iptables cannot count (IPv6)."""
    if remote:
        source, destination = (remote, None) if direction == "ingress" else (None, remote)
    prefixes = [p for p in (source, destination) if p]
    if any(ipaddress.ip_interface(p).version != 4 for p in prefixes):
        return None
    return Rule(direction, source, destination, excluded)


def _cidr(prefix: str | None) -> str | None:
    """As iptables-save writes it: no host bits; ``0.0.0.0/0`` not at all."""
    if not prefix:
        return None
    net = ipaddress.ip_network(prefix, strict=False)
    return None if net.prefixlen == 0 else str(net)


def _match(rule: Rule, gateway: str) -> str:
    parts = []
    source, destination = _cidr(rule.source), _cidr(rule.destination)
    if source:
        parts.append(f"-s {source}")
    if destination:
        parts.append(f"-d {destination}")
    parts.append(f"-i {gateway}" if rule.direction == "ingress" else f"-o {gateway}")
    return " ".join(parts)


def chains(gateway: str | None, labels: Sequence[Label]) -> Chains:
    """Our chains and their ``-A`` lines (iptables-save's spelling, so that what
    is read back compares equal). No gateway: no traffic to count, no chains
    but the top one, empty."""
    found: Chains = {TOP: []}
    if gateway is None:
        return found
    for label in sorted(labels, key=lambda item: item.id):
        counting, ruled = label_chain(label.id), rules_chain(label.id)
        found[TOP].append(f"-A {TOP} -j {ruled}")
        lines = found[ruled] = []
        ordered = sorted(dict.fromkeys(label.rules), key=lambda r: not r.excluded)
        for rule in ordered:
            target = "RETURN" if rule.excluded else counting
            lines.append(f"-A {ruled} {_match(rule, gateway)} -j {target}")
        found[counting] = [f"-A {counting}"]
    return found


def saved_chains(saved: str) -> tuple[Chains, bool]:
    """Our chains in ``iptables-save`` output (with or without counters), and
    whether FORWARD jumps to the top one."""
    found: Chains = {}
    jump = False
    for table, line in saved_lines(saved):
        if table != TABLE:
            continue
        line = _COUNTS.sub("", line)
        if line.startswith(f":{PREFIX}-"):
            found.setdefault(line[1:].split()[0], [])
        elif line.startswith("-A "):
            chain = line.split()[1]
            if chain.startswith(f"{PREFIX}-"):
                found.setdefault(chain, []).append(line)
            elif chain == BUILTIN and line == f"-A {BUILTIN} -j {TOP}":
                jump = True
    return found, jump


def restore_text(wanted: Chains, present: Mapping[str, list[str]], jump: bool) -> str | None:
    """``iptables-restore --noflush`` input that turns ``present`` into
    ``wanted``, touching only chains that differ; None when none does."""
    changed = sorted(chain for chain, lines in wanted.items() if present.get(chain) != lines)
    gone = sorted(chain for chain in present if chain not in wanted)
    if not changed and not gone and jump:
        return None
    lines = [f"*{TABLE}"]
    lines += [f":{chain} - [0:0]" for chain in changed]
    if not jump:
        lines.append(f"-A {BUILTIN} -j {TOP}")
    for chain in changed:
        lines += wanted[chain]
    lines += [f"-F {chain}" for chain in gone]
    lines += [f"-X {chain}" for chain in gone]
    lines.append("COMMIT")
    return "\n".join(lines) + "\n"


_COUNTS = re.compile(r"^\[(\d+):(\d+)\] ")


def counters(saved: str) -> dict[str, Counter]:
    """Label chain -> its counters, from ``iptables-save -c`` output."""
    found: dict[str, Counter] = {}
    for table, line in saved_lines(saved):
        counts = _COUNTS.match(line)
        if table != TABLE or counts is None:
            continue
        rest = line[counts.end():].split()
        if len(rest) == 2 and rest[0] == "-A" and rest[1].startswith(f"{PREFIX}-l-"):
            found[rest[1]] = Counter(int(counts.group(1)), int(counts.group(2)))
    return found


class MeterTable:
    """Our chains in one router's namespace, as this object last wrote or read them."""

    def __init__(self, namespace: str, runner: Runner | None = None):
        self.namespace = namespace
        self._run_tool = runner or namespace_runner(namespace, timeout=30)
        self._present: Chains | None = None  # None: read the namespace first
        self._jump = False

    def _run(self, argv: list[str], stdin: str | None = None) -> str:
        done = self._run_tool(argv, stdin)
        if done.returncode != 0:
            raise OSError(f"{argv[0]} in {self.namespace}: "
                          f"{done.stderr.strip() or done.returncode}")
        return done.stdout

    def apply(self, wanted: Chains) -> bool:
        """Make our chains ``wanted``; False when they were already (nothing run)."""
        if self._present is None:
            self._present, self._jump = saved_chains(self._run(["iptables-save", "-t", TABLE]))
        text = restore_text(wanted, self._present, self._jump)
        if text is None:
            return False
        try:
            self._run(["iptables-restore", "--noflush"], text)
        except OSError:
            self._present = None  # read it all again next time
            raise
        self._present, self._jump = {chain: list(lines) for chain, lines in wanted.items()}, True
        return True

    def counters(self) -> dict[str, Counter]:
        """Label chain -> packets and bytes counted since the chain was made."""
        return counters(self._run(["iptables-save", "-c", "-t", TABLE]))
