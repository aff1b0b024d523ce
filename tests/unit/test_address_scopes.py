"""Address scopes on a router: the marks of scopes, the router the agent
makes of ``sync_routers`` data with ``address_scopes``, and what its rules
(``nat.chains`` for IPv4, ``nat.chains6`` for IPv6) do to packets, followed
through them by a small model of netfilter (marks, connection marks, NAT of a
connection's first packet) that answers "is it dropped, which source does it
leave with?"; the IPv6 rules as ``nat.ScopeTable6`` leaves them on a fake
ip6tables host. No root."""

from __future__ import annotations

import dataclasses
import ipaddress
import subprocess
from dataclasses import dataclass

import pytest

from neutrino.agents.l3 import router_spec
from neutrino.linux import nat

EXT_SCOPE = "aaaaaaaa-0000-4000-8000-00000000000e"
OTHER_SCOPE = "bbbbbbbb-0000-4000-8000-00000000000f"
GATEWAY, SNAT, OUTSIDE = "qg-gwport00000", "203.0.113.10", "198.51.100.7"
FIP, FIXED = "203.0.113.20", "10.9.0.5"  # a floating IP of an instance in no scope
#: device -> an instance behind it (without a floating IP)
IN1, IN2, NONE, OTHER = "qr-inport00001", "qr-inport00002", "qr-noport00000", "qr-otport00000"
INSTANCE = {IN1: "10.1.0.5", IN2: "10.2.0.5", NONE: "10.9.0.6", OTHER: "10.5.0.5"}


def _port(port_id: str, address: str, prefix: int, v4: str | None, v6: str | None = None
          ) -> dict:
    return {"id": port_id, "mac_address": "fa:16:3e:00:00:01", "mtu": 1500,
            "network_id": f"net-{port_id}",
            "fixed_ips": [{"subnet_id": f"sub-{port_id}", "ip_address": address,
                           "prefixlen": prefix}],
            "subnets": [], "address_scopes": {"4": v4, "6": v6}}


def sync_data(snat: bool = True) -> dict:
    """A router whose gateway and two interfaces are in the external network's
    scope, one interface in no scope (its instance has a floating IP) and one
    in another scope."""
    return {
        "id": "r1", "routes": [], "enable_snat": snat,
        "gw_port": _port("gwport000001xyz", SNAT, 24, EXT_SCOPE),
        "_interfaces": [_port("inport00001abc", "10.1.0.1", 24, EXT_SCOPE),
                        _port("inport00002abc", "10.2.0.1", 24, EXT_SCOPE),
                        _port("noport00000abc", "10.9.0.1", 24, None),
                        _port("otport00000abc", "10.5.0.1", 24, OTHER_SCOPE),
                        # IPv6 only: in no IPv4 scope rule
                        _port("v6port00000abc", "2001:db8::1", 64, None, OTHER_SCOPE)],
        "_floatingips": [{"id": "f1", "floating_ip_address": FIP, "fixed_ip_address": FIXED,
                          "fixed_ip_address_scope": None}],
    }


def rules(snat: bool = True) -> nat.Chains:
    return nat.chains(router_spec(sync_data(snat)).nat)


# --- a small model of netfilter, for our rules --------------------------------------------

@dataclass
class Connection:
    mark: int = 0  # the connection's mark (CONNMARK)
    dnat: bool = False  # its destination translated
    first: bool = True  # the next packet is its first: NAT rules apply


@dataclass
class Packet:
    inbound: str
    outbound: str  # where routing sends it (after DNAT)
    src: str
    dst: str
    mark: int = 0


def _masked(value: str) -> tuple[int, int]:
    number, _, mask = value.partition("/")
    return int(number, 16), int(mask or "0xffffffff", 16)


def _matches(words: list[str], packet: Packet, conn: Connection) -> bool:
    module, negate, i = "", False, 0
    while i < len(words):
        word = words[i]
        if word == "!":
            negate, i = True, i + 1
            continue
        if word == "-m":
            module, i = words[i + 1], i + 2
            continue
        value = words[i + 1]
        if word in ("-i", "-o"):
            device = packet.inbound if word == "-i" else packet.outbound
            hit = device.startswith(value[:-1]) if value.endswith("+") else device == value
        elif word in ("-s", "-d"):
            address = packet.src if word == "-s" else packet.dst
            hit = ipaddress.ip_address(address) in ipaddress.ip_network(value)
        elif word == "--mark":
            number, mask = _masked(value)
            hit = ((packet.mark if module == "mark" else conn.mark) & mask) == number
        elif word == "--ctstate":
            assert value == "DNAT"
            hit = conn.dnat
        elif word == "-p":
            hit = False  # packets here carry no ports: no forwarding rule is theirs
        else:
            raise AssertionError(f"the model knows no {word}")
        if hit == negate:
            return False
        negate, i = False, i + 2
    return True


def _walk(chains: nat.Chains, table: str, chain: str, packet: Packet, conn: Connection
          ) -> list[str] | None:
    """The terminal target (DROP, ACCEPT, SNAT ...) met in ``chain``, if any."""
    for line in chains[table, chain]:
        words = line.split()[2:]
        at = words.index("-j")
        if not _matches(words[:at], packet, conn):
            continue
        target, args = words[at + 1], words[at + 2:]
        if target == "MARK":
            value, mask = _masked(args[1])
            packet.mark = (packet.mark & ~mask) ^ value
        elif target == "CONNMARK":
            nfmask, ctmask = int(args[2], 16), int(args[4], 16)
            assert nfmask == ctmask
            if args[0] == "--restore-mark":
                packet.mark = (packet.mark & ~nfmask) ^ (conn.mark & ctmask)
            else:
                conn.mark = (conn.mark & ~ctmask) ^ (packet.mark & nfmask)
        elif target.startswith(nat.PREFIX):
            verdict = _walk(chains, table, target, packet, conn)
            if verdict is not None:
                return verdict
        else:
            return [target, *args]
    return None


def forward(chains: nat.Chains, inbound: str, outbound: str, src: str, dst: str,
            conn: Connection | None = None) -> str | None:
    """A packet forwarded by the router: None if dropped, else the source it
    leaves with. ``conn``: its connection (a new one if not given), as the
    packet leaves it."""
    conn = conn if conn is not None else Connection()
    packet = Packet(inbound, outbound, src, dst)
    _walk(chains, "mangle", f"{nat.PREFIX}-MARK", packet, conn)
    if conn.first:
        verdict = _walk(chains, "nat", f"{nat.PREFIX}-PRE", packet, conn)
        if verdict and verdict[0] == "DNAT":
            packet.dst, conn.dnat = verdict[2], True
    if _walk(chains, "mangle", f"{nat.PREFIX}-SCOPE", packet, conn) == ["DROP"]:
        return None
    _walk(chains, "mangle", f"{nat.PREFIX}-SAVE", packet, conn)
    if conn.first:
        verdict = _walk(chains, "nat", f"{nat.PREFIX}-POST", packet, conn)
        if verdict and verdict[0] == "SNAT":
            packet.src = verdict[2]
    conn.first = False
    return packet.src


def exchange(chains: nat.Chains, a: str, b: str, src: str, dst: str) -> tuple[str | None, bool]:
    """A connection's first packet from device ``a`` to device ``b``, and its
    answer back: the source the first leaves with (None: dropped), and
    whether the answer got through."""
    conn = Connection()
    out = forward(chains, a, b, src, dst, conn)
    if out is None:
        return None, False
    # the answer comes from where the first packet went (after DNAT), to
    # where it came from (before de-SNAT)
    answering = _dnat_of(chains, dst) if conn.dnat else dst
    return out, forward(chains, b, a, answering, out, conn) is not None


def _dnat_of(chains: nat.Chains, address: str) -> str:
    for line in chains["nat", f"{nat.PREFIX}-PRE"]:
        if f"-d {address}/32 " in line:
            return line.split()[-1]
    raise AssertionError(address)


# --- the marks ------------------------------------------------------------------------------

def test_a_scope_keeps_its_mark_whatever_the_others():
    alone = nat.scope_marks([EXT_SCOPE])
    assert alone[None] == nat.NO_SCOPE and 2 <= alone[EXT_SCOPE] <= 0xFFFF
    assert nat.scope_marks([OTHER_SCOPE, EXT_SCOPE, None])[EXT_SCOPE] == alone[EXT_SCOPE]
    assert nat.scope_marks([EXT_SCOPE]) == alone  # no state: the same every time


def test_scopes_that_hash_alike_get_marks_of_their_own():
    first: dict[int, str] = {}
    for n in range(5000):
        scope = f"scope-{n}"
        mark = nat.scope_marks([scope])[scope]
        if mark in first:
            twin = first[mark]
            break
        first[mark] = scope
    else:
        raise AssertionError("no two scope ids hash alike in 5000")
    both = nat.scope_marks([scope, twin])
    assert both[min(scope, twin)] == mark  # the lower id keeps it
    assert len({both[scope], both[twin], nat.NO_SCOPE}) == 3


# --- the agent's router ---------------------------------------------------------------------

def test_the_devices_with_an_ipv4_address_and_their_scopes():
    spec = router_spec(sync_data())
    marks = nat.scope_marks([EXT_SCOPE, OTHER_SCOPE])
    assert spec.nat.scopes == (
        (GATEWAY, marks[EXT_SCOPE]), (IN1, marks[EXT_SCOPE]), (IN2, marks[EXT_SCOPE]),
        (NONE, nat.NO_SCOPE), (OTHER, marks[OTHER_SCOPE]))
    assert spec.nat.floating_ips == (nat.FloatingIp(FIP, FIXED, nat.NO_SCOPE),)


def test_no_ipv4_scope_no_rules():
    """A router with no device in an IPv4 scope: not one iptables rule more
    than before address scopes (an IPv6 scope alone is ip6tables' business)."""
    data = sync_data()
    for port in [data["gw_port"], *data["_interfaces"]]:
        port["address_scopes"]["4"] = None
    spec = router_spec(data)
    assert spec.nat.scopes == () and spec.nat.floating_ips[0].scope is None
    assert [device for device, _ in spec.nat.scopes6] == ["qr-v6port00000"]
    for port in [data["gw_port"], *data["_interfaces"]]:
        del port["address_scopes"]
    data["_floatingips"][0].pop("fixed_ip_address_scope")
    assert router_spec(data).nat == dataclasses.replace(spec.nat, scopes6=())
    chains = nat.chains(spec.nat)
    assert not any(chains[key] for key in [
        ("mangle", f"{nat.PREFIX}-SCOPE"), ("mangle", f"{nat.PREFIX}-SAVE"),
        ("mangle", nat.FLOAT_SNAT)])
    assert chains["mangle", f"{nat.PREFIX}-MARK"] == [
        f"-A {nat.PREFIX}-MARK -i {GATEWAY} -j MARK --set-xmark 0x2/0xffff"]
    # the same said by the marks themselves: every device in no scope
    no_scope = tuple((device, nat.NO_SCOPE) for device, _ in router_spec(sync_data()).nat.scopes)
    assert nat.chains(nat.RouterNat(gateway=GATEWAY, snat_address=SNAT,
                                    scopes=no_scope)) == nat.chains(
        nat.RouterNat(gateway=GATEWAY, snat_address=SNAT))


# --- what the rules do ----------------------------------------------------------------------

def test_the_external_networks_scope_is_routed_not_translated():
    chains = rules()
    # out and back, with the instance's own address
    assert exchange(chains, IN1, GATEWAY, INSTANCE[IN1], OUTSIDE) == (INSTANCE[IN1], True)
    # the outside reaches the instance by its address (a route through the gateway)
    assert exchange(chains, GATEWAY, IN1, OUTSIDE, INSTANCE[IN1]) == (OUTSIDE, True)
    # and its subnets route to each other
    assert exchange(chains, IN1, IN2, INSTANCE[IN1], INSTANCE[IN2]) == (INSTANCE[IN1], True)


def test_other_scopes_go_out_translated_and_come_back():
    chains = rules()
    for device in (NONE, OTHER):
        source = INSTANCE[device]
        assert exchange(chains, device, GATEWAY, source, OUTSIDE) == (SNAT, True)
        # not reached from outside by their own address
        assert forward(chains, GATEWAY, device, OUTSIDE, source) is None


def test_no_routing_between_scopes():
    chains = rules()
    for a, b in [(NONE, IN1), (IN1, NONE), (OTHER, IN2), (IN2, OTHER), (NONE, OTHER)]:
        assert forward(chains, a, b, INSTANCE[a], INSTANCE[b]) is None, (a, b)
    # without the scope rules (no scopes), the same packets went through
    data = sync_data()
    for port in [data["gw_port"], *data["_interfaces"]]:
        port["address_scopes"]["4"] = None
    plain = nat.chains(router_spec(data).nat)
    assert forward(plain, NONE, IN1, INSTANCE[NONE], INSTANCE[IN1]) == INSTANCE[NONE]


def test_a_router_without_gateway_keeps_scopes_apart_too():
    data = sync_data()
    del data["gw_port"]
    chains = nat.chains(router_spec(data).nat)
    assert forward(chains, IN1, IN2, INSTANCE[IN1], INSTANCE[IN2]) == INSTANCE[IN1]
    assert forward(chains, IN1, NONE, INSTANCE[IN1], INSTANCE[NONE]) is None
    assert not chains["nat", f"{nat.PREFIX}-POST"]


def test_a_floating_ip_across_scopes():
    """The fixed IP in no scope, the external network in one: in by the
    floating IP and back, out as the floating IP and back; with SNAT and
    without (then the gateway lets out only the external network's scope)."""
    for snat in (True, False):
        chains = rules(snat)
        assert exchange(chains, GATEWAY, NONE, OUTSIDE, FIP) == (OUTSIDE, True), snat
        assert exchange(chains, NONE, GATEWAY, FIXED, OUTSIDE) == (FIP, True), snat
        # an instance of the external network's scope to the floating IP ("hairpin")
        assert exchange(chains, IN1, NONE, INSTANCE[IN1], FIP)[1], snat
        assert forward(chains, GATEWAY, NONE, OUTSIDE, FIXED) is None  # not by its own
    # as in Neutron (its float-snat chain), what the fixed IP sends leaves for
    # any device of the external network's scope with that scope's mark: it
    # reaches the instances there, by their own address
    assert exchange(rules(), NONE, IN1, FIXED, INSTANCE[IN1]) == (FIXED, True)
    assert forward(rules(), NONE, OTHER, FIXED, INSTANCE[OTHER]) is None
    # without SNAT, what is not translated does not leave for another scope
    assert forward(rules(False), OTHER, GATEWAY, INSTANCE[OTHER], OUTSIDE) is None


def test_a_connections_scope_outlives_its_first_packet():
    """An established connection's packets take its saved scope: an answer
    from outside to an instance in no scope comes in with the external
    network's mark and would be dropped without it."""
    chains = rules()
    conn = Connection()
    assert forward(chains, OTHER, GATEWAY, INSTANCE[OTHER], OUTSIDE, conn) == SNAT
    assert conn.mark >> 16 == dict(router_spec(sync_data()).nat.scopes)[OTHER]
    assert forward(chains, GATEWAY, OTHER, OUTSIDE, SNAT, conn) == OUTSIDE
    fresh = Connection(first=False)  # the same answer, without a saved scope
    assert forward(chains, GATEWAY, OTHER, OUTSIDE, SNAT, fresh) is None


def test_the_gateways_mark_and_the_scope_mark_side_by_side():
    """Set with masks, neither clobbers the other: in by the gateway, a
    packet keeps the gateway's mark (the hairpin SNAT tells by it) and gets
    its scope's."""
    chains = rules()
    packet = Packet(GATEWAY, IN1, OUTSIDE, INSTANCE[IN1])
    _walk(chains, "mangle", f"{nat.PREFIX}-MARK", packet, Connection())
    ext = dict(router_spec(sync_data()).nat.scopes)[GATEWAY]
    assert packet.mark == (ext << 16) | 0x2


def test_the_order_of_the_rules():
    """What the packets above cannot all tell apart: the restored scope comes
    after the device's and before the floating IP's; the floating IP's marks
    before the drops; its SNAT before the untranslated scope, before SNAT."""
    chains = rules()
    mark = chains["mangle", f"{nat.PREFIX}-MARK"]
    restore = next(n for n, rule in enumerate(mark) if "--restore-mark" in rule)
    assert all(n < restore for n, rule in enumerate(mark) if " -i qr-" in rule)
    assert mark[-1] == (f"-A {nat.PREFIX}-MARK -d {FIP}/32 -j MARK "
                        f"--set-xmark {nat.NO_SCOPE << 16:#x}/0xffff0000")
    assert restore == len(mark) - 2
    scope = chains["mangle", f"{nat.PREFIX}-SCOPE"]
    assert scope[0] == f"-A {nat.PREFIX}-SCOPE -s {FIXED}/32 -j {nat.FLOAT_SNAT}"
    assert all("DROP" in rule for rule in scope[1:]) and len(scope) == 5  # not the gateway
    post = [rule.split(f"{nat.PREFIX}-POST ")[1] for rule in chains["nat", f"{nat.PREFIX}-POST"]]
    ext = dict(router_spec(sync_data()).nat.scopes)[GATEWAY]
    assert post[1:4] == [f"-s {FIXED}/32 -j SNAT --to-source {FIP}",
                         f"-o {GATEWAY} -m connmark --mark {ext << 16:#x}/0xffff0000 -j ACCEPT",
                         f"-o {GATEWAY} -j SNAT --to-source {SNAT}"]
    float_snat = chains["mangle", nat.FLOAT_SNAT]
    assert "--save-mark" in float_snat[0]
    assert sorted(rule.split()[3] for rule in float_snat[1:]) == [GATEWAY, IN1, IN2]


def test_an_external_network_in_no_scope_translates_everything():
    data = sync_data()
    data["gw_port"]["address_scopes"]["4"] = None
    chains = nat.chains(router_spec(data).nat)
    assert exchange(chains, IN1, GATEWAY, INSTANCE[IN1], OUTSIDE) == (SNAT, True)
    assert not any("ACCEPT" in rule and "connmark" in rule
                   for rule in chains["nat", f"{nat.PREFIX}-POST"])
    # the floating IP's fixed IP is in the external network's scope (none): no marks
    assert not chains["mangle", nat.FLOAT_SNAT]
    assert exchange(chains, GATEWAY, NONE, OUTSIDE, FIP) == (OUTSIDE, True)


def test_restore_round_trip_with_scopes():
    wanted = rules()
    text = nat.restore_text(wanted, set())
    assert nat.present_jumps(text) == set(nat.HOOKS)
    assert nat.saved_chains(text) == {key: lines for key, lines in wanted.items() if lines}
    assert f":{nat.FLOAT_SNAT} - [0:0]" in text


# --- IPv6 ------------------------------------------------------------------------------------

EXT6, OTHER6 = "cccccccc-0000-4000-8000-00000000006e", "dddddddd-0000-4000-8000-00000000006f"
#: device -> an instance behind it (the gateway: a host outside)
A6, B6, C6, N6, V4 = ("qr-a6port00000", "qr-b6port00000", "qr-c6port00000", "qr-n6port00000",
                      "qr-v4port00000")
HOST6 = {A6: "2001:db8:a::5", B6: "2001:db8:b::5", C6: "2001:db8:c::5", N6: "2001:db8:9::5",
         GATEWAY: "2001:db8:ffff::7"}


def sync_data6() -> dict:
    """A router whose gateway (dual stack) and two interfaces are in the
    external network's IPv6 scope, one interface in another IPv6 scope, one
    in none, and one IPv4 only."""
    gateway = _port("gwport000001xyz", SNAT, 24, EXT_SCOPE, EXT6)
    gateway["fixed_ips"].append({"subnet_id": "sub-gw6", "ip_address": "2001:db8:ffff::10",
                                 "prefixlen": 64})
    return {
        "id": "r6", "routes": [], "enable_snat": True, "gw_port": gateway,
        "_interfaces": [_port("a6port00000abc", "2001:db8:a::1", 64, None, EXT6),
                        _port("b6port00000abc", "2001:db8:b::1", 64, None, EXT6),
                        _port("c6port00000abc", "2001:db8:c::1", 64, None, OTHER6),
                        _port("n6port00000abc", "2001:db8:9::1", 64, None, None),
                        _port("v4port00000abc", "10.1.0.1", 24, EXT_SCOPE, OTHER6)],
        "_floatingips": [],
    }


class FakeIp6tables:
    """``ip6tables-save -t mangle`` and ``ip6tables-restore --noflush`` on one
    mangle table, as strict as the tools: a restore is all or nothing, and
    fails on a rule or chain it cannot find, on a chain deleted while in use
    or not empty; the other tools a ``NatTable`` runs succeed, unrecorded
    but for their names. ``no_ipv6``: ip6tables fails (a kernel without IPv6)."""

    BUILT_IN = ("PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING")

    def __init__(self, no_ipv6: bool = False) -> None:
        self.mangle: dict[str, list[str]] = {name: [] for name in self.BUILT_IN}
        self.no_ipv6 = no_ipv6
        self.runs: list[str] = []
        self.fail_next = False

    def __call__(self, argv: list[str], stdin: str | None) -> subprocess.CompletedProcess:
        self.runs.append(argv[0])
        failed = subprocess.CompletedProcess(argv, 1, "", f"{argv[0]}: refused")
        if argv[0].startswith("ip6tables") and (self.no_ipv6 or self.fail_next):
            self.fail_next = False
            return failed
        if argv == ["ip6tables-save", "-t", "mangle"]:
            return subprocess.CompletedProcess(argv, 0, self.save(), "")
        if argv == ["ip6tables-restore", "--noflush"]:
            assert stdin is not None
            try:
                self.mangle = self._restored(stdin)
            except (KeyError, ValueError):
                return failed
        else:
            assert not argv[0].startswith("ip6tables"), argv
        return subprocess.CompletedProcess(argv, 0, "", "")

    def ip6tables_runs(self) -> list[str]:
        return [tool for tool in self.runs if tool.startswith("ip6tables")]

    def save(self) -> str:
        return "\n".join([
            "# Generated by a fake", "*mangle",
            *(f":{name} {'ACCEPT' if name in self.BUILT_IN else '-'} [0:0]"
              for name in self.mangle),
            *(line for lines in self.mangle.values() for line in lines),
            "COMMIT", "# Completed"]) + "\n"

    def _restored(self, text: str) -> dict[str, list[str]]:
        table = {name: lines[:] for name, lines in self.mangle.items()}
        lines = text.splitlines()
        if lines[0] != "*mangle" or lines[-1] != "COMMIT":
            raise ValueError(text)
        for line in lines[1:-1]:
            op, _, rest = line.partition(" ")
            if op.startswith(":"):
                table[op[1:]] = []
                continue
            name, _, spec = rest.partition(" ")
            if op == "-A":
                table[name].append(line)
            elif op == "-D":
                table[name].remove(f"-A {name} {spec}")  # ValueError if not there
            elif op == "-X":
                used = any(line.endswith(f"-j {name}") for lines in table.values()
                           for line in lines)
                if used or table.pop(name) or name in self.BUILT_IN:
                    raise ValueError(f"chain {name} in use, not empty or built in")
            else:
                raise ValueError(line)
        return table

    def chains(self) -> nat.Chains:
        return {("mangle", name): lines for name, lines in self.mangle.items()}

    def state(self) -> tuple:
        return tuple((name, tuple(lines)) for name, lines in sorted(self.mangle.items()))


def hosted(nat_: nat.RouterNat) -> FakeIp6tables:
    """A fresh router namespace's ip6tables once ``nat_`` is applied."""
    host = FakeIp6tables()
    nat.ScopeTable6("ns", fresh=True, runner=host).apply(nat_)
    return host


def passes6(host: FakeIp6tables, inbound: str, outbound: str) -> bool:
    """Whether the router forwards an IPv6 packet from the instance (or host
    outside) behind ``inbound`` to the one behind ``outbound``: mangle
    PREROUTING, then mangle FORWARD (their policy ACCEPT)."""
    packet = Packet(inbound, outbound, HOST6[inbound], HOST6[outbound])
    chains, conn = host.chains(), Connection()
    _walk(chains, "mangle", "PREROUTING", packet, conn)
    return _walk(chains, "mangle", "FORWARD", packet, conn) != ["DROP"]


def test_the_devices_with_an_ipv6_address_and_their_scopes():
    spec = router_spec(sync_data6())
    marks = nat.scope_marks([EXT6, OTHER6])
    assert spec.nat.scopes6 == ((GATEWAY, marks[EXT6]), (A6, marks[EXT6]), (B6, marks[EXT6]),
                                (C6, marks[OTHER6]), (N6, nat.NO_SCOPE))
    # the IPv4 devices keep the marks of their IPv4 scopes: a family's own
    marks4 = nat.scope_marks([EXT_SCOPE])
    assert spec.nat.scopes == ((GATEWAY, marks4[EXT_SCOPE]), (V4, marks4[EXT_SCOPE]))


def test_no_ipv6_scope_no_ip6tables_rules():
    data = sync_data6()
    for port in [data["gw_port"], *data["_interfaces"]]:
        port["address_scopes"]["6"] = None
    spec = router_spec(data)
    assert spec.nat.scopes6 == () and nat.chains6(spec.nat) == {}
    # "no scope" marks alone are no scope either
    assert nat.chains6(nat.RouterNat(scopes6=((A6, nat.NO_SCOPE), (B6, nat.NO_SCOPE)))) == {}
    # and an IPv6 scope adds no iptables (IPv4) rule
    with_v6 = router_spec(sync_data6()).nat
    assert nat.chains(with_v6) == nat.chains(dataclasses.replace(with_v6, scopes6=()))


def test_ipv6_scopes_kept_apart():
    host = hosted(router_spec(sync_data6()).nat)
    for a, b in [(A6, B6), (A6, GATEWAY), (B6, GATEWAY)]:  # the external network's scope
        assert passes6(host, a, b) and passes6(host, b, a), (a, b)
    for a, b in [(A6, C6), (A6, N6), (C6, N6), (C6, GATEWAY), (N6, GATEWAY)]:
        assert not passes6(host, a, b) and not passes6(host, b, a), (a, b)


def test_no_translation_no_exception_for_the_gateway():
    """Unlike IPv4 with SNAT, nothing leaves by the gateway from another
    scope, and nothing saves a connection's scope: an answer is marked by
    the device it comes in by, of the same scope as its question's."""
    chains = nat.chains6(router_spec(sync_data6()).nat)
    assert f"-A {nat.PREFIX}-SCOPE -o {GATEWAY} -m mark ! --mark " in "\n".join(
        chains["mangle", f"{nat.PREFIX}-SCOPE"])
    assert not any("CONNMARK" in rule for rules in chains.values() for rule in rules)
    assert set(chains) == {("mangle", f"{nat.PREFIX}-MARK"), ("mangle", f"{nat.PREFIX}-SCOPE")}


def test_a_router_without_gateway_keeps_ipv6_scopes_apart_too():
    data = sync_data6()
    del data["gw_port"]
    host = hosted(router_spec(data).nat)
    assert passes6(host, A6, B6) and not passes6(host, A6, C6) and not passes6(host, N6, B6)


def test_a_gateway_in_no_ipv6_scope():
    """Then only the interfaces in no IPv6 scope reach the outside."""
    data = sync_data6()
    data["gw_port"]["address_scopes"]["6"] = None
    host = hosted(router_spec(data).nat)
    assert passes6(host, N6, GATEWAY) and passes6(host, GATEWAY, N6)
    assert not passes6(host, A6, GATEWAY) and not passes6(host, GATEWAY, C6)


def test_the_ipv6_table_writes_only_what_changed():
    host = FakeIp6tables()
    table = nat.ScopeTable6("ns", fresh=True, runner=host)
    spec = router_spec(sync_data6()).nat
    assert table.apply(spec) and host.ip6tables_runs() == ["ip6tables-restore"]
    assert not table.apply(spec) and len(host.runs) == 1
    # a device joins another scope: one write, and the packets follow
    data = sync_data6()
    data["_interfaces"][2]["address_scopes"]["6"] = EXT6
    assert table.apply(router_spec(data).nat) and len(host.runs) == 2
    assert passes6(host, A6, C6)
    assert host.chains()["mangle", "PREROUTING"] == [f"-A PREROUTING -j {nat.PREFIX}-MARK"]


def test_no_ipv6_scope_runs_no_ip6tables():
    """A router none of whose devices has an IPv6 scope: not one ip6tables
    run, from its namespace's birth on, IPv4 scopes and NAT or not."""
    data = sync_data6()
    for port in [data["gw_port"], *data["_interfaces"]]:
        port["address_scopes"]["6"] = None
    host = FakeIp6tables()
    table = nat.NatTable("ns", fresh=True, runner=host)
    assert table.apply(router_spec(data).nat)  # iptables' chains
    assert not table.apply(router_spec(data).nat)
    assert host.runs == ["iptables-restore"] and host.ip6tables_runs() == []


def test_ipv6_scopes_come_and_go_leaving_nothing():
    """Scopes, then none: our chains and their jumps are taken away, the
    table as it was before (round trip); and again."""
    host = FakeIp6tables()
    before = host.state()
    table = nat.ScopeTable6("ns", fresh=True, runner=host)
    with_scopes = router_spec(sync_data6()).nat
    without = nat.RouterNat()
    for _ in range(2):
        assert table.apply(with_scopes) and host.state() != before
        assert table.apply(without) and host.state() == before
    runs = len(host.runs)
    assert not table.apply(without) and len(host.runs) == runs


def test_an_agent_restart_reads_the_ipv6_rules_once():
    host = FakeIp6tables()
    spec = router_spec(sync_data6()).nat
    nat.ScopeTable6("ns", fresh=True, runner=host).apply(spec)
    # restarted, the router unchanged: one read, no write
    again = nat.ScopeTable6("ns", runner=host)
    runs = len(host.runs)
    assert not again.apply(spec) and host.runs[runs:] == ["ip6tables-save"]
    assert not again.apply(spec) and len(host.runs) == runs + 1
    # restarted after the router lost its IPv6 scopes: what was left is taken away
    state = host.state()
    restarted = nat.ScopeTable6("ns", runner=host)
    assert restarted.apply(nat.RouterNat())
    assert host.state() != state and host.state() == FakeIp6tables().state()
    # restarted on a router that never had any: one read, nothing written
    runs = len(host.runs)
    assert not nat.ScopeTable6("ns", runner=host).apply(nat.RouterNat())
    assert host.runs[runs:] == ["ip6tables-save"]


def test_half_written_ipv6_rules_are_completed():
    """A jump missing (someone took it away): the next agent puts it back."""
    host = hosted(router_spec(sync_data6()).nat)
    host.mangle["FORWARD"].clear()
    assert nat.ScopeTable6("ns", runner=host).apply(router_spec(sync_data6()).nat)
    assert host.state() == hosted(router_spec(sync_data6()).nat).state()


def test_a_host_without_ipv6():
    """ip6tables unusable (no IPv6 in the kernel): a router without IPv6
    scopes is served; one with them fails, and is read afresh next time."""
    host = FakeIp6tables(no_ipv6=True)
    assert not nat.ScopeTable6("ns", runner=host).apply(nat.RouterNat())
    table = nat.ScopeTable6("ns", runner=host)
    with pytest.raises(OSError, match="ip6tables-save in ns"):
        table.apply(router_spec(sync_data6()).nat)
    host.no_ipv6 = False
    assert table.apply(router_spec(sync_data6()).nat)
    assert host.runs[-2:] == ["ip6tables-save", "ip6tables-restore"]


def test_a_failed_ipv6_write_is_done_again_whole():
    host = FakeIp6tables()
    table = nat.ScopeTable6("ns", fresh=True, runner=host)
    spec = router_spec(sync_data6()).nat
    host.fail_next = True
    with pytest.raises(OSError, match="ip6tables-restore in ns"):
        table.apply(spec)
    assert table.apply(spec) and host.runs[-2:] == ["ip6tables-save", "ip6tables-restore"]
    assert host.state() == hosted(spec).state()


def test_ipv6_restore_round_trip():
    """What ip6tables-save shows of what we wrote reads as what we want."""
    spec = router_spec(sync_data6()).nat
    saved = hosted(spec).save()
    assert nat.present_jumps(saved, nat.HOOKS6) == set(nat.HOOKS6)
    assert nat.saved_chains(saved, empty=True) == nat.chains6(spec)
    assert nat.removal_text({}, set(), nat.HOOKS6) == ""
