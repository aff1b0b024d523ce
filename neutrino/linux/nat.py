"""A router's address translation: iptables (IPv4) in its namespace.

Every rule sits in chains of our own, hung off the built-in chains by one jump
each, so that anything else writing iptables in the namespace (a metadata
proxy's redirect, say) keeps its rules::

    nat PREROUTING  -> neutrino-l3-PRE:  the instances' 169.254.169.254:80 -> the
                                         metadata proxy (9697); floating IP ->
                                         fixed IP; forwarded ports
    nat OUTPUT      -> neutrino-l3-OUT:  the same, for the router's own traffic
    nat POSTROUTING -> neutrino-l3-POST: internal <-> internal untouched;
                                         VPN tunnels' traffic untouched;
                                         fixed IP -> its floating IP; the rest
                                         out of the gateway -> the gateway's IP
    mangle PREROUTING -> neutrino-l3-MARK: what came in by the gateway is marked
    filter INPUT    -> neutrino-l3-IN:   the metadata proxy's port closed to all
                                         but the internal interfaces

``RouterNat.exempt`` (local CIDR, peer CIDR) pairs are the router's VPN
tunnels (the vpnaas extension): what goes between them keeps its addresses,
or the far end's traffic selectors would not match it (kernel IPsec picks the
SA after POSTROUTING) and the answers would come back by the Internet.

The metadata rules (``RouterNat.metadata``: the router runs a metadata proxy,
``neutrino.linux.metadata_proxy``) do not depend on a gateway.

The mark tells, after DNAT, a connection from outside (left alone) from one
from an internal network to a floating IP of the router ("hairpin"): that one
is given the gateway's address as source, or the answer would go straight
back, untranslated, to an instance that never spoke to it.

``chains`` is pure (``RouterNat`` -> our chains' lines); ``NatTable`` writes
them with one ``iptables-restore --noflush`` per change (declaring a chain
empties it, so each write replaces our chains whole, atomically) and forgets
the conntrack entries of floating IPs that went or point elsewhere: without
that an established connection would keep its old translation.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from neutrino.linux import metadata_proxy
from neutrino.linux.iptables import namespace_runner, saved_lines

LOG = logging.getLogger(__name__)

PREFIX = "neutrino-l3"
#: (table, built-in chain) -> our chain it jumps to
HOOKS = {("nat", "PREROUTING"): f"{PREFIX}-PRE", ("nat", "OUTPUT"): f"{PREFIX}-OUT",
         ("nat", "POSTROUTING"): f"{PREFIX}-POST", ("mangle", "PREROUTING"): f"{PREFIX}-MARK",
         ("filter", "INPUT"): f"{PREFIX}-IN"}
TABLES = ("nat", "mangle", "filter")
#: the mark of packets that came in by the gateway device
EXTERNAL_MARK = "0x2/0xffff"

Chains = dict[tuple[str, str], list[str]]


@dataclass(frozen=True)
class FloatingIp:
    address: str
    fixed: str


@dataclass(frozen=True)
class Forwarding:
    """``address``:``external`` ports (a range) to ``internal_ip``:``internal``."""

    address: str
    protocol: str
    external: tuple[int, int]
    internal_ip: str
    internal: tuple[int, int]


@dataclass(frozen=True)
class RouterNat:
    """What a router translates. No ``gateway``: no address translation (an
    internal-only router). ``metadata``: the instances' metadata requests go to
    the router's metadata proxy."""

    gateway: str | None = None  # the gateway device
    snat_address: str | None = None  # None: no SNAT (enable_snat false)
    floating_ips: tuple[FloatingIp, ...] = ()
    forwardings: tuple[Forwarding, ...] = ()
    metadata: bool = False
    #: (source, destination) CIDRs whose traffic is not translated (IPsec tunnels)
    exempt: tuple[tuple[str, str], ...] = ()


def _ports(low: int, high: int, separator: str) -> str:
    return str(low) if low == high else f"{low}{separator}{high}"


def _forwarding_rule(forward: Forwarding) -> str:
    """N->N ranges keep each port's offset (``/base``), 1->N go to one port."""
    ext_low, ext_high = forward.external
    int_low, int_high = forward.internal
    target = f"{forward.internal_ip}:{_ports(int_low, int_high, '-')}"
    if int_low != int_high:
        target += f"/{ext_low}"
    return (f"-d {forward.address}/32 -p {forward.protocol} -m {forward.protocol} "
            f"--dport {_ports(ext_low, ext_high, ':')} -j DNAT --to-destination {target}")


def _unprefixed(rules: list[str]) -> list[str]:
    """``-A <chain> rule`` lines without their ``-A <chain>``."""
    return [rule.split(" ", 2)[2] for rule in rules]


def chains(nat: RouterNat) -> Chains:
    """Our chains' rules (``-A`` lines) for ``nat``; every chain, even empty."""
    found: Chains = {(table, chain): [] for (table, _), chain in HOOKS.items()}
    pre, out = found["nat", f"{PREFIX}-PRE"], found["nat", f"{PREFIX}-OUT"]
    if nat.metadata:
        pre.extend(_unprefixed(metadata_proxy.redirect_rules(f"{PREFIX}-PRE")))
        found["filter", f"{PREFIX}-IN"].extend(
            _unprefixed(metadata_proxy.input_rules(f"{PREFIX}-IN")))
    if nat.gateway is None:
        return {key: [f"-A {key[1]} {rule}" for rule in rules] for key, rules in found.items()}
    post, mark = found["nat", f"{PREFIX}-POST"], found["mangle", f"{PREFIX}-MARK"]
    gateway = nat.gateway
    mark.append(f"-i {gateway} -j MARK --set-xmark {EXTERNAL_MARK}")
    post.append(f"! -i {gateway} ! -o {gateway} -m conntrack ! --ctstate DNAT -j ACCEPT")
    for source, destination in sorted(set(nat.exempt)):
        post.append(f"-s {source} -d {destination} -j ACCEPT")
    for fip in sorted(nat.floating_ips, key=lambda f: f.address):
        dnat = f"-d {fip.address}/32 -j DNAT --to-destination {fip.fixed}"
        pre.append(dnat)
        out.append(dnat)
        post.append(f"-s {fip.fixed}/32 -j SNAT --to-source {fip.address}")
    for forward in sorted(nat.forwardings, key=lambda f: (f.address, f.protocol, f.external)):
        pre.append(_forwarding_rule(forward))
        out.append(_forwarding_rule(forward))
    if nat.snat_address:
        post.append(f"-o {gateway} -j SNAT --to-source {nat.snat_address}")
        post.append(f"-m mark ! --mark {EXTERNAL_MARK} -m conntrack --ctstate DNAT "
                    f"-j SNAT --to-source {nat.snat_address}")
    return {key: [f"-A {key[1]} {rule}" for rule in rules] for key, rules in found.items()}


def present_jumps(saved: str) -> set[tuple[str, str]]:
    """The (table, built-in chain) whose jump to our chain ``iptables-save`` shows."""
    found = set()
    for table, line in saved_lines(saved):
        if line.startswith("-A "):
            parts = line.split()
            key = (table, parts[1])
            if HOOKS.get(key) is not None and parts[2:] == ["-j", HOOKS[key]]:
                found.add(key)
    return found


def restore_text(wanted: Chains, jumps: set[tuple[str, str]]) -> str:
    """``iptables-restore --noflush`` input: our chains declared (so emptied) and
    refilled, and the jumps not in ``jumps`` added."""
    lines = []
    for table in TABLES:
        lines.append(f"*{table}")
        ours = sorted(chain for (t, chain) in wanted if t == table)
        lines.extend(f":{chain} - [0:0]" for chain in ours)
        lines.extend(f"-A {builtin} -j {HOOKS[t, builtin]}"
                     for (t, builtin) in sorted(HOOKS) if t == table and (t, builtin) not in jumps)
        for chain in ours:
            lines.extend(wanted[table, chain])
        lines.append("COMMIT")
    return "\n".join(lines) + "\n"


def translations(wanted: Chains) -> dict[str, frozenset[str]]:
    """Floating address -> its DNAT rules (where it leads); not the metadata
    REDIRECT."""
    found: dict[str, set[str]] = {}
    for rule in wanted.get(("nat", f"{PREFIX}-PRE"), ()):
        parts = rule.split()
        if len(parts) > 3 and parts[2] == "-d" and "DNAT" in parts:
            found.setdefault(parts[3].removesuffix("/32"), set()).add(rule)
    return {address: frozenset(rules) for address, rules in found.items()}


def saved_chains(saved: str) -> Chains:
    """Our chains' rules in ``iptables-save`` output (which writes them as we do)."""
    found: Chains = {}
    for table, line in saved_lines(saved):
        if line.startswith("-A ") and line.split()[1].startswith(PREFIX):
            found.setdefault((table, line.split()[1]), []).append(line)
    return found


def forgotten(before: dict[str, frozenset[str]], after: dict[str, frozenset[str]]
              ) -> list[str]:
    """The floating addresses whose connections must be forgotten: gone, or
    leading elsewhere now."""
    return sorted(address for address, rules in before.items() if after.get(address) != rules)


class NatTable:
    """Our chains in one namespace, as this object last wrote (or read) them."""

    def __init__(self, namespace: str, fresh: bool = False):
        """``fresh``: the namespace was just made, there is nothing to read."""
        self.namespace = namespace
        self._jumps: set[tuple[str, str]] | None = set() if fresh else None
        self._written: Chains | None = None
        self._translations: dict[str, frozenset[str]] = {}
        self._runner = namespace_runner(namespace, timeout=30)

    def _run(self, argv: list[str], stdin: str | None = None) -> str:
        done = self._runner(argv, stdin)
        if done.returncode != 0:
            raise OSError(f"{argv[0]} in {self.namespace}: "
                          f"{done.stderr.strip() or done.returncode}")
        return done.stdout

    def apply(self, nat: RouterNat) -> bool:
        """Make our chains say ``nat``; False if they already did (nothing run).
        The first call on a namespace this object did not make reads it first
        (an agent restarted: what it wrote before is there)."""
        if self._jumps is None:
            saved = self._run(["iptables-save"])
            self._jumps = present_jumps(saved)
            found = saved_chains(saved)
            self._translations = translations(found)
            if self._jumps == set(HOOKS):  # then what is there may be all we want
                self._written = {(table, chain): found.get((table, chain), [])
                                 for (table, _), chain in HOOKS.items()}
        wanted = chains(nat)
        if wanted == self._written:
            return False
        try:
            self._run(["iptables-restore", "--noflush"], restore_text(wanted, self._jumps))
        except OSError:
            self._jumps, self._written = None, None  # read it all again next time
            raise
        self._jumps, self._written = set(HOOKS), wanted
        after = translations(wanted)
        for address in forgotten(self._translations, after):
            self.forget(address)
        self._translations = after
        return True

    def forget(self, address: str) -> None:
        """Drop the connections to (DNAT) or translated to (SNAT) ``address``;
        conntrack fails when there are none, which is fine."""
        for way in ("--orig-dst", "--reply-dst"):
            subprocess.run(["ip", "netns", "exec", self.namespace, "conntrack", "-D", way,
                            address], capture_output=True, timeout=10)


def describe(nat_chains: Mapping[tuple[str, str], list[str]]) -> str:
    """Our rules, one per line (for logs and tests)."""
    return "\n".join(rule for rules in nat_chains.values() for rule in rules)
