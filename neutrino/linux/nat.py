"""A router's address translation and address scopes: iptables (IPv4) and,
for IPv6 address scopes only, ip6tables in its namespace.

Every rule sits in chains of our own, hung off the built-in chains by one jump
each, so that anything else writing iptables in the namespace (a metadata
proxy's redirect, say) keeps its rules::

    nat PREROUTING     -> neutrino-l3-PRE:   the instances' 169.254.169.254:80 ->
                                             the metadata proxy (9697); floating
                                             IP -> fixed IP; forwarded ports
    nat OUTPUT         -> neutrino-l3-OUT:   the same, for the router's own traffic
    nat POSTROUTING    -> neutrino-l3-POST:  internal <-> internal untouched; VPN
                                             tunnels' traffic untouched; fixed IP
                                             -> its floating IP; the rest out of
                                             the gateway -> the gateway's IP
    mangle PREROUTING  -> neutrino-l3-MARK:  what came in by the gateway marked;
                                             each packet's address scope marked
    mangle FORWARD     -> neutrino-l3-SCOPE: no forwarding between address scopes
                          (neutrino-l3-FSNAT: floating IPs across scopes)
    mangle POSTROUTING -> neutrino-l3-SAVE:  a connection out of the gateway
                                             keeps its address scope
    filter INPUT       -> neutrino-l3-IN:    the metadata proxy's port closed to
                                             all but the internal interfaces

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

Address scopes (IPv4, as Neutron's L3 agent enforces them): ``RouterNat.scopes``
gives each IPv4 device of the router the mark of its network's address scope
("no scope" is a scope of its own), in the upper 16 bits of the fwmark
(``SCOPE_MASK``; the gateway's mark above keeps the lower 16). A packet gets
the mark of the device it came in by, or, in an established connection, the
one the connection saved; one to a floating IP whose fixed IP is in another
scope than the external network gets that fixed IP's scope. Forwarded out of a
device of another scope, it is dropped: there is no routing between scopes
(in mangle FORWARD, before the filter table, where the router firewall's
ACCEPTs would come first). The gateway is the exception when the router
translates (SNAT): what leaves by it from another scope is translated. A
connection out of the gateway saves its scope, and one whose scope is the
external network's is not translated: subnets in the external network's scope
are routed, not NATed. What a floating IP of another scope sends saves its
scope and leaves, towards a device in the external network's scope, with that
scope's mark (``neutrino-l3-FSNAT``, Neutron's ``float-snat``), so that the
answers are let back in (as in Neutron, what that fixed IP starts then
reaches the external network's scope's subnets too, by their addresses). A
mark is a hash of the scope's id (``scope_marks``), not a place in a list: a
connection's saved mark means the same scope while scopes come and go on the
router. A router none of whose devices has an IPv4 address scope has none of
these rules: every device is then in "no scope", and they would change
nothing.

IPv6 address scopes (``RouterNat.scopes6``, as Neutron's L3 agent enforces
them with ip6tables), with the same marks in chains of the same names::

    ip6tables mangle PREROUTING -> neutrino-l3-MARK:  each packet's address
                                                      scope marked
    ip6tables mangle FORWARD    -> neutrino-l3-SCOPE: no forwarding between
                                                      address scopes

IPv6 is not translated, so no device is an exception: what leaves by the
gateway from another scope than the external network's is dropped like what
leaves by any device, and there are no floating IPs. Nor is a connection's
scope saved: a packet may only cross between devices of one scope, so an
answer comes in by a device of its connection's scope and gets the right mark
from it (Neutron's IPv6 chains restore a mark that nothing saves). A router
none of whose devices has an IPv6 address scope has no ip6tables chains at
all, and ip6tables is not run for it (``ScopeTable6``; but once after an agent
restart, to find what the agent wrote before).

``chains`` is pure (``RouterNat`` -> our chains' lines); ``NatTable`` writes
them with one ``iptables-restore --noflush`` per change (declaring a chain
empties it, so each write replaces our chains whole, atomically) and forgets
the conntrack entries of floating IPs that went or point elsewhere: without
that an established connection would keep its old translation. ``chains6``
and ``ScopeTable6`` (which ``NatTable`` holds) are the same for ip6tables,
but that the chains and their jumps are taken away when no device has an
IPv6 scope any more.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from neutrino.linux import metadata_proxy
from neutrino.linux.iptables import Runner, namespace_runner, saved_lines

LOG = logging.getLogger(__name__)

PREFIX = "neutrino-l3"
#: (table, built-in chain) -> our chain it jumps to
HOOKS = {("nat", "PREROUTING"): f"{PREFIX}-PRE", ("nat", "OUTPUT"): f"{PREFIX}-OUT",
         ("nat", "POSTROUTING"): f"{PREFIX}-POST", ("mangle", "PREROUTING"): f"{PREFIX}-MARK",
         ("mangle", "FORWARD"): f"{PREFIX}-SCOPE", ("mangle", "POSTROUTING"): f"{PREFIX}-SAVE",
         ("filter", "INPUT"): f"{PREFIX}-IN"}
#: the floating IPs' address scope marks on their way out (from our FORWARD chain)
FLOAT_SNAT = f"{PREFIX}-FSNAT"
#: (table, chain) of every chain of ours
CHAINS = (*((table, chain) for (table, _), chain in HOOKS.items()), ("mangle", FLOAT_SNAT))
#: ip6tables (IPv6 address scopes): (table, built-in chain) -> our chain it jumps to
HOOKS6 = {("mangle", "PREROUTING"): f"{PREFIX}-MARK", ("mangle", "FORWARD"): f"{PREFIX}-SCOPE"}
#: the mark of packets that came in by the gateway device
EXTERNAL_MARK = "0x2/0xffff"
#: the fwmark bits of the address scope marks
SCOPE_MASK = 0xFFFF0000
#: the scope mark of "no address scope"; 0 is no mark (a connection that saved none)
NO_SCOPE = 1
#: how many scope marks address scopes have (2 to 0xffff)
_SCOPE_IDS = 0xFFFF - 1
_SAVED = f"--nfmask {SCOPE_MASK:#x} --ctmask {SCOPE_MASK:#x}"

Chains = dict[tuple[str, str], list[str]]


@dataclass(frozen=True)
class FloatingIp:
    address: str
    fixed: str
    #: the scope mark of the fixed IP's address scope (with ``RouterNat.scopes``)
    scope: int | None = None


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
    #: (device, scope mark) of each device with an IPv4 address, the gateway's
    #: too (``scope_marks``); none: no address scope rules
    scopes: tuple[tuple[str, int], ...] = ()
    #: the same for the devices with an IPv6 address and their IPv6 address
    #: scopes; none: no ip6tables rules
    scopes6: tuple[tuple[str, int], ...] = ()


def scope_marks(scopes: Iterable[str | None]) -> dict[str | None, int]:
    """Each address scope id (None: no scope) -> its scope mark (16 bits):
    ``NO_SCOPE`` for None, a hash of the id for the others, so that a scope's
    mark does not depend on what other scopes the router has. Two that hash
    alike: the lower id keeps it, the other takes the next free mark (a mark
    may then change when such a twin comes or goes: one chance in 65534 for
    a pair)."""
    found: dict[str | None, int] = {None: NO_SCOPE}
    taken = {NO_SCOPE}
    for scope in sorted({scope for scope in scopes if scope}):
        digest = int.from_bytes(hashlib.sha256(scope.encode()).digest()[:8], "big")
        offset = digest % _SCOPE_IDS
        while 2 + offset in taken:
            offset = (offset + 1) % _SCOPE_IDS
        found[scope] = 2 + offset
        taken.add(2 + offset)
    return found


def _scope(mark: int) -> str:
    return f"{mark << 16:#x}/{SCOPE_MASK:#x}"


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
    found: Chains = {key: [] for key in CHAINS}
    pre, out = found["nat", f"{PREFIX}-PRE"], found["nat", f"{PREFIX}-OUT"]
    if nat.metadata:
        pre.extend(_unprefixed(metadata_proxy.redirect_rules(f"{PREFIX}-PRE")))
        found["filter", f"{PREFIX}-IN"].extend(
            _unprefixed(metadata_proxy.input_rules(f"{PREFIX}-IN")))
    gateway = nat.gateway
    if gateway is not None:
        found["mangle", f"{PREFIX}-MARK"].append(
            f"-i {gateway} -j MARK --set-xmark {EXTERNAL_MARK}")
    routed = _scope_rules(nat, found)
    if gateway is None:
        return _prefixed(found)
    post = found["nat", f"{PREFIX}-POST"]
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
        post.extend(routed)
        post.append(f"-o {gateway} -j SNAT --to-source {nat.snat_address}")
        post.append(f"-m mark ! --mark {EXTERNAL_MARK} -m conntrack --ctstate DNAT "
                    f"-j SNAT --to-source {nat.snat_address}")
    return _prefixed(found)


def _prefixed(found: Chains) -> Chains:
    return {key: [f"-A {key[1]} {rule}" for rule in rules] for key, rules in found.items()}


def _scope_rules(nat: RouterNat, found: Chains) -> list[str]:
    """The address scope rules into ``found``'s mangle chains (nothing if no
    device has a scope); returned: nat POSTROUTING's rule that leaves
    untranslated the connections in the external network's scope (to come
    after the floating IPs' SNAT, before the router's)."""
    marks = dict(nat.scopes)
    if all(mark == NO_SCOPE for mark in marks.values()):
        return []
    gateway = nat.gateway
    external = marks.get(gateway, NO_SCOPE) if gateway is not None else None
    mark, forward = found["mangle", f"{PREFIX}-MARK"], found["mangle", f"{PREFIX}-SCOPE"]
    for device, scope in sorted(marks.items()):
        mark.append(f"-i {device} -j MARK --set-xmark {_scope(scope)}")
    # an established connection: its saved scope, whatever device it came in by
    mark.append(f"-m connmark ! --mark 0x0/{SCOPE_MASK:#x} -j CONNMARK --restore-mark "
                f"{_SAVED}")
    # the floating IPs whose fixed IP is in another scope than the external network
    crossing = sorted((fip.address, fip.fixed, fip.scope) for fip in nat.floating_ips
                      if fip.scope is not None and external is not None
                      and fip.scope != external)
    for address, _, scope in crossing:  # after the restore: this mark wins
        mark.append(f"-d {address}/32 -j MARK --set-xmark {_scope(scope)}")
    for _, fixed, _ in crossing:  # before the drops: the marks it sets let it out
        forward.append(f"-s {fixed}/32 -j {FLOAT_SNAT}")
    if crossing:
        float_snat = found["mangle", FLOAT_SNAT]
        float_snat.append(f"-m connmark --mark 0x0/{SCOPE_MASK:#x} -j CONNMARK --save-mark "
                          f"{_SAVED}")
        float_snat.extend(f"-o {device} -j MARK --set-xmark {_scope(scope)}"
                          for device, scope in sorted(marks.items()) if scope == external)
    for device, scope in sorted(marks.items()):
        if device == gateway and nat.snat_address:
            continue  # what leaves by the gateway from another scope is translated
        forward.append(f"-o {device} -m mark ! --mark {_scope(scope)} -j DROP")
    if gateway is None or not nat.snat_address:
        return []
    found["mangle", f"{PREFIX}-SAVE"].append(
        f"-o {gateway} -m connmark --mark 0x0/{SCOPE_MASK:#x} -j CONNMARK --save-mark "
        f"{_SAVED}")
    if external is None or external == NO_SCOPE:
        return []
    return [f"-o {gateway} -m connmark --mark {_scope(external)} -j ACCEPT"]


def chains6(nat: RouterNat) -> Chains:
    """Our ip6tables chains' rules (``-A`` lines) for ``nat``'s IPv6 address
    scopes; none at all, not even empty chains, if no device has one."""
    marks = dict(nat.scopes6)
    if all(mark == NO_SCOPE for mark in marks.values()):
        return {}
    return {
        ("mangle", f"{PREFIX}-MARK"): [
            f"-A {PREFIX}-MARK -i {device} -j MARK --set-xmark {_scope(scope)}"
            for device, scope in sorted(marks.items())],
        # the gateway too: IPv6 is not translated
        ("mangle", f"{PREFIX}-SCOPE"): [
            f"-A {PREFIX}-SCOPE -o {device} -m mark ! --mark {_scope(scope)} -j DROP"
            for device, scope in sorted(marks.items())]}


def present_jumps(saved: str, hooks: Mapping[tuple[str, str], str] = HOOKS
                  ) -> set[tuple[str, str]]:
    """The (table, built-in chain) of ``hooks`` whose jump to our chain
    ``iptables-save`` (or ``ip6tables-save``) shows."""
    found = set()
    for table, line in saved_lines(saved):
        if line.startswith("-A "):
            parts = line.split()
            key = (table, parts[1])
            if hooks.get(key) is not None and parts[2:] == ["-j", hooks[key]]:
                found.add(key)
    return found


def restore_text(wanted: Chains, jumps: set[tuple[str, str]],
                 hooks: Mapping[tuple[str, str], str] = HOOKS) -> str:
    """``iptables-restore --noflush`` input: our chains declared (so emptied) and
    refilled, and the jumps of ``hooks`` not in ``jumps`` added."""
    lines = []
    for table in dict.fromkeys(table for table, _ in hooks):
        lines.append(f"*{table}")
        ours = sorted(chain for (t, chain) in wanted if t == table)
        lines.extend(f":{chain} - [0:0]" for chain in ours)
        lines.extend(f"-A {builtin} -j {hooks[t, builtin]}"
                     for (t, builtin) in sorted(hooks) if t == table and (t, builtin) not in jumps)
        for chain in ours:
            lines.extend(wanted[table, chain])
        lines.append("COMMIT")
    return "\n".join(lines) + "\n"


def removal_text(present: Iterable[tuple[str, str]], jumps: set[tuple[str, str]],
                 hooks: Mapping[tuple[str, str], str]) -> str:
    """``iptables-restore --noflush`` input that takes our chains ``present``
    (table, chain) away, and first the jumps of ``hooks`` in ``jumps``."""
    lines = []
    for table in dict.fromkeys(table for table, _ in hooks):
        ours = sorted(chain for (t, chain) in present if t == table)
        gone = sorted(builtin for (t, builtin) in jumps if t == table)
        if not ours and not gone:
            continue
        lines.append(f"*{table}")
        lines.extend(f":{chain} - [0:0]" for chain in ours)  # emptied ...
        lines.extend(f"-D {builtin} -j {hooks[table, builtin]}" for builtin in gone)
        lines.extend(f"-X {chain}" for chain in ours)  # ... unused, then deleted
        lines.append("COMMIT")
    return "\n".join(lines) + "\n" if lines else ""


def translations(wanted: Chains) -> dict[str, frozenset[str]]:
    """Floating address -> its DNAT rules (where it leads); not the metadata
    REDIRECT."""
    found: dict[str, set[str]] = {}
    for rule in wanted.get(("nat", f"{PREFIX}-PRE"), ()):
        parts = rule.split()
        if len(parts) > 3 and parts[2] == "-d" and "DNAT" in parts:
            found.setdefault(parts[3].removesuffix("/32"), set()).add(rule)
    return {address: frozenset(rules) for address, rules in found.items()}


def saved_chains(saved: str, empty: bool = False) -> Chains:
    """Our chains' rules in ``iptables-save`` output (which writes them as we
    do); ``empty``: our chains without rules too."""
    found: Chains = {}
    for table, line in saved_lines(saved):
        if empty and line.startswith(f":{PREFIX}"):
            found.setdefault((table, line[1:].split()[0]), [])
        elif line.startswith("-A ") and line.split()[1].startswith(PREFIX):
            found.setdefault((table, line.split()[1]), []).append(line)
    return found


def forgotten(before: dict[str, frozenset[str]], after: dict[str, frozenset[str]]
              ) -> list[str]:
    """The floating addresses whose connections must be forgotten: gone, or
    leading elsewhere now."""
    return sorted(address for address, rules in before.items() if after.get(address) != rules)


def _run(runner: Runner, namespace: str, argv: list[str], stdin: str | None = None) -> str:
    done = runner(argv, stdin)
    if done.returncode != 0:
        raise OSError(f"{argv[0]} in {namespace}: {done.stderr.strip() or done.returncode}")
    return done.stdout


class ScopeTable6:
    """Our ip6tables chains (IPv6 address scopes) in one namespace, as this
    object last wrote (or read) them: none while no device of the router is in
    an IPv6 address scope, and then ip6tables is not run."""

    def __init__(self, namespace: str, fresh: bool = False, runner: Runner | None = None):
        """``fresh``: the namespace was just made, there is nothing to read;
        ``runner``: how to run ip6tables there (a fake host in tests)."""
        self.namespace = namespace
        #: our chains there with their rules, and the jumps to them; None: not known
        self._present: Chains | None = {} if fresh else None
        self._jumps: set[tuple[str, str]] | None = set() if fresh else None
        self._runner = runner or namespace_runner(namespace, timeout=30)

    def apply(self, nat: RouterNat) -> bool:
        """Make our chains say ``nat``'s IPv6 scopes, or take them away if it
        has none; False if nothing was to change (nothing run). The first call
        on a namespace this object did not make reads it first."""
        wanted = chains6(nat)
        if self._present is None or self._jumps is None:
            self._read(bool(wanted))
        assert self._present is not None and self._jumps is not None
        jumps = set(HOOKS6) if wanted else set()
        if self._present == wanted and self._jumps == jumps:
            return False
        text = (restore_text(wanted, self._jumps, HOOKS6) if wanted
                else removal_text(self._present, self._jumps, HOOKS6))
        try:
            _run(self._runner, self.namespace, ["ip6tables-restore", "--noflush"], text)
        except OSError:
            self._present, self._jumps = None, None  # read it all again next time
            raise
        self._present, self._jumps = wanted, jumps
        return True

    def _read(self, needed: bool) -> None:
        """What of ours is there. Unreadable when no rule is wanted: taken as
        nothing (a kernel without IPv6, say, where nothing of ours can be),
        rather than failing the router."""
        try:
            saved = _run(self._runner, self.namespace, ["ip6tables-save", "-t", "mangle"])
        except OSError as error:
            if needed:
                raise
            LOG.debug("%s: taken as holding no IPv6 scope rules: %s", self.namespace, error)
            saved = ""
        self._jumps = present_jumps(saved, HOOKS6)
        self._present = {key: rules for key, rules in saved_chains(saved, empty=True).items()
                         if key[0] == "mangle"}


class NatTable:
    """Our chains in one namespace, as this object last wrote (or read) them:
    iptables', and ip6tables' (``ScopeTable6``)."""

    def __init__(self, namespace: str, fresh: bool = False, runner: Runner | None = None):
        """``fresh``: the namespace was just made, there is nothing to read;
        ``runner``: how to run iptables and ip6tables there (a fake host in tests)."""
        self.namespace = namespace
        self._jumps: set[tuple[str, str]] | None = set() if fresh else None
        self._written: Chains | None = None
        self._translations: dict[str, frozenset[str]] = {}
        self._runner = runner or namespace_runner(namespace, timeout=30)
        self.ipv6 = ScopeTable6(namespace, fresh, self._runner)

    def _run(self, argv: list[str], stdin: str | None = None) -> str:
        return _run(self._runner, self.namespace, argv, stdin)

    def apply(self, nat: RouterNat) -> bool:
        """Make our chains (iptables' and ip6tables') say ``nat``; False if
        they already did (nothing run). The first call on a namespace this
        object did not make reads it first (an agent restarted: what it wrote
        before is there)."""
        written = self._apply4(nat)
        return self.ipv6.apply(nat) or written

    def _apply4(self, nat: RouterNat) -> bool:
        if self._jumps is None:
            saved = self._run(["iptables-save"])
            self._jumps = present_jumps(saved)
            found = saved_chains(saved)
            self._translations = translations(found)
            if self._jumps == set(HOOKS):  # then what is there may be all we want
                self._written = {key: found.get(key, []) for key in CHAINS}
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
            self._runner(["conntrack", "-D", way, address], None)


def describe(nat_chains: Mapping[tuple[str, str], list[str]]) -> str:
    """Our rules, one per line (for logs and tests)."""
    return "\n".join(rule for rules in nat_chains.values() for rule in rules)
