"""The firewall's pure core: the ruleset built from the server's answer, the
``iptables-restore`` text, the ipset scripts and what conntrack must forget."""

from __future__ import annotations

import pytest

from neutrino.linux import ipset
from neutrino.linux.iptables_firewall import (
    FirewallError,
    IptablesFirewall,
    build,
    conntrack_deletions,
    conntrack_forgets,
    read_table,
    restore_text,
)
from tests.fakes.iptables import FakeIptables

GROUP = "11111111-2222-3333-4444-555555555555"
OTHER = "99999999-8888-7777-6666-555555555555"
PORT = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
PEER = "bbbbbbbb-cccc-dddd-eeee-ffffffffffff"
INGRESS, EGRESS, SPOOF = (f"neutrino-{c}{PORT[:11]}" for c in "ios")


def port(port_id: str = PORT, ip: str = "10.0.0.1", **extra) -> dict:
    return {"device": f"tap{port_id[:11]}", "port_id": port_id,
            "mac_address": "fa:16:3e:00:00:01", "fixed_ips": [{"subnet_id": "s", "ip_address": ip}],
            "allowed_address_pairs": [], "port_security_enabled": True,
            "security_groups": [GROUP], "device_owner": "compute:nova", **extra}


def rule(direction: str = "ingress", protocol: str | None = None, low: int | None = None,
         high: int | None = None, ethertype: str = "IPv4", prefix: str | None = None,
         remote_group: str | None = None, **extra) -> dict:
    return {"direction": direction, "ethertype": ethertype, "protocol": protocol,
            "port_range_min": low, "port_range_max": high, "remote_ip_prefix": prefix,
            "remote_group_id": remote_group, "security_group_id": GROUP, **extra}


def info(*rules: dict, ports: list[dict] | None = None, members: dict | None = None) -> dict:
    ports = ports if ports is not None else [port()]
    return {"devices": {p["port_id"]: p for p in ports}, "security_groups": {GROUP: list(rules)},
            "sg_member_ips": members or {}}


def deletions(before, after) -> list[list[str]]:
    return conntrack_deletions(conntrack_forgets(before, after))


def chain(info_: dict, name: str, version: int = 4) -> list[str]:
    return build(info_).chains[version][name]


@pytest.mark.parametrize(("made", "spec"), [
    (rule(protocol="tcp", low=22, high=22), "-p tcp -m tcp --dport 22 -j RETURN"),
    (rule(protocol="6", low=8000, high=8100), "-p tcp -m tcp --dport 8000:8100 -j RETURN"),
    (rule(protocol="udp", low=1, high=65535), "-p udp -j RETURN"),
    (rule(protocol="icmp", low=8, high=0), "-p icmp -m icmp --icmp-type 8/0 -j RETURN"),
    (rule(protocol="icmp", low=8), "-p icmp -m icmp --icmp-type 8 -j RETURN"),
    (rule(protocol="112"), "-p 112 -j RETURN"),
    (rule(prefix="192.0.2.7/24"), "-s 192.0.2.0/24 -j RETURN"),
    (rule(prefix="0.0.0.0/0", protocol="icmp"), "-p icmp -j RETURN"),
])
def test_an_ingress_rule_becomes_a_return_in_the_ports_ingress_chain(made, spec):
    assert spec in chain(info(made), INGRESS)
    assert spec not in chain(info(made), EGRESS)


def test_egress_rules_match_the_destination():
    assert "-d 192.0.2.0/24 -p udp -m udp --dport 53 -j RETURN" in chain(
        info(rule("egress", "udp", 53, 53, prefix="192.0.2.0/24")), EGRESS)


def test_icmp_in_an_ipv6_rule_is_icmpv6_and_families_do_not_mix():
    rules = info(rule(protocol="icmp", low=128, ethertype="IPv6"),
                 rule(protocol="ipv6-icmp", ethertype="IPv4"),
                 rule(prefix="2001:db8::/64", ethertype="IPv4"))
    assert "-p ipv6-icmp -m icmp6 --icmpv6-type 128 -j RETURN" in chain(rules, INGRESS, 6)
    v4 = chain(rules, INGRESS, 4)
    assert not any("ipv6-icmp" in s or "2001:db8" in s for s in v4[v4.index(
        "-m state --state INVALID -j DROP"):])


def test_a_port_chain_orders_fixed_rules_state_rules_then_default_drop():
    ingress = chain(info(rule(protocol="tcp", low=22, high=22)), INGRESS)
    assert ingress[0] == "-p udp -m udp --sport 67 --dport 68 -j RETURN"  # DHCP replies
    assert ingress.index("-m state --state RELATED,ESTABLISHED -j RETURN") < ingress.index(
        "-p tcp -m tcp --dport 22 -j RETURN")
    assert ingress[-1] == "-j neutrino-sg-fallback"
    egress = chain(info(), EGRESS)
    assert egress.index(f"-j {SPOOF}") < egress.index("-p udp -m udp --sport 67 --dport 68 -j DROP")
    assert "-p ipv6-icmp -m icmp6 --icmpv6-type 134 -j DROP" in chain(info(), EGRESS, 6)


def test_remote_group_rules_match_a_set_of_the_members():
    built = build(info(rule(remote_group=OTHER), rule("egress", remote_group=OTHER),
                       members={OTHER: {"IPv4": ["10.0.0.9", "10.0.0.8/32", "10.1.0.0/16"]}}))
    name = ipset.set_name("neutrino", 4, "g", OTHER)
    assert f"-m set --match-set {name} src -j RETURN" in built.chains[4][INGRESS]
    assert f"-m set --match-set {name} dst -j RETURN" in built.chains[4][EGRESS]
    assert built.sets == {name: (4, ["10.0.0.8", "10.0.0.9", "10.1.0.0/16"])}
    assert len(name + ipset.TEMP_SUFFIX) <= ipset.MAX_NAME


def test_address_group_rules_match_a_set_of_its_cidrs():
    made = rule(remote_address_group_id=OTHER)
    built = build({**info(made), "address_group_ips": {OTHER: {"IPv4": ["0.0.0.0/0"]}}})
    name = ipset.set_name("neutrino", 4, "a", OTHER)
    assert built.sets[name] == (4, ["0.0.0.0/1", "128.0.0.0/1"])


def test_only_the_ports_addresses_and_pairs_may_send():
    pairs = [{"ip_address": "10.0.9.0/24", "mac_address": "fa:16:3e:00:00:09"}]
    made = info(ports=[port(allowed_address_pairs=pairs)])
    assert chain(made, SPOOF) == [
        "-s 10.0.0.1/32 -m mac --mac-source FA:16:3E:00:00:01 -j RETURN",
        "-s 10.0.9.0/24 -m mac --mac-source FA:16:3E:00:00:09 -j RETURN", "-j DROP"]
    v6 = chain(made, SPOOF, 6)
    assert "-s fe80::f816:3eff:fe00:1/128 -m mac --mac-source FA:16:3E:00:00:01 -j RETURN" in v6


def test_unprotected_and_network_ports_pass_but_are_still_dispatched():
    ports = [port(port_security_enabled=False),
             port(PEER, "10.0.0.2", device_owner="network:dhcp")]
    built = build(info(ports=ports))
    assert not any(name.startswith(("neutrino-i", "neutrino-o")) for name in built.chains[4])
    assert built.chains[4]["neutrino-sg-chain"] == ["-j ACCEPT"]
    assert len(built.chains[4]["neutrino-FORWARD"]) == 4


def test_rule_order_from_the_server_does_not_change_the_text():
    rules = [rule(protocol="tcp", low=22, high=22), rule(protocol="icmp"), rule("egress")]
    assert build(info(*rules)) == build(info(*reversed(rules), *rules))


def test_restore_text_hooks_once_and_deletes_stale_chains_only_of_ours():
    chains = build(info()).chains[4]
    first = restore_text(chains, read_table("", "neutrino"), "neutrino")
    assert "-I FORWARD 1 -j neutrino-FORWARD" in first and "-I INPUT 1 -j neutrino-INPUT" in first
    saved = ("*filter\n:FORWARD ACCEPT [0:0]\n:neutrino-FORWARD - [0:0]\n"
             ":neutrino-ozzzzzzzzzzz - [0:0]\n:other-chain - [0:0]\n"
             "-A FORWARD -j neutrino-FORWARD\n-A INPUT -j neutrino-INPUT\nCOMMIT\n")
    again = restore_text(chains, read_table(saved, "neutrino"), "neutrino")
    assert "-I FORWARD" not in again and "-I INPUT" not in again
    assert "-X neutrino-ozzzzzzzzzzz" in again and "other-chain" not in again
    gone = restore_text({}, read_table(saved, "neutrino"), "neutrino")
    assert "-D FORWARD -j neutrino-FORWARD" in gone and "-X neutrino-FORWARD" in gone


def test_conntrack_forgets_what_a_removed_rule_or_member_allowed():
    before = build(info(rule(protocol="tcp", low=22, high=22), rule(remote_group=OTHER),
                        members={OTHER: {"IPv4": ["10.0.0.7", "10.0.0.8"]}}))
    after = build(info(rule(remote_group=OTHER), members={OTHER: {"IPv4": ["10.0.0.8"]}}))
    assert sorted(deletions(before, after)) == [
        ["-D", "-f", "ipv4", "-d", "10.0.0.1", "-p", "tcp", "--dport", "22"],
        ["-D", "-f", "ipv4", "-s", "10.0.0.7", "-d", "10.0.0.1"]]
    assert deletions(after, before) == []
    assert deletions(before, build(info(ports=[]))) == []  # the port is gone


def test_ipset_restore_swaps_a_filled_twin():
    script = ipset.restore_script({"neutrino4g-x": (4, ["10.0.0.1"])})
    assert script.splitlines() == [
        "create neutrino4g-x hash:net family inet -exist",
        "create neutrino4g-xT hash:net family inet -exist", "flush neutrino4g-xT",
        "add neutrino4g-xT 10.0.0.1 -exist", "swap neutrino4g-xT neutrino4g-x",
        "destroy neutrino4g-xT"]
    assert ipset.parse_save(script) == {"neutrino4g-x": set(), "neutrino4g-xT": {"10.0.0.1"}}
    assert ipset.is_ours("neutrino6g-abc", "neutrino") and not ipset.is_ours("other", "neutrino")


def test_no_ports_no_chains():
    assert build(info(ports=[])).chains == {4: {}, 6: {}}


def test_a_prefix_too_long_for_chain_names_is_refused():
    with pytest.raises(ValueError):
        build(info(), prefix="x" * 20)


# --- the incremental writer, against a fake host ------------------------------------------


def many(count: int, group: str = GROUP) -> dict:
    """``count`` ports in the default group (members reach each other)."""
    ports = [port(f"{n:08x}-0000-0000-0000-000000000000", f"10.0.{n // 250}.{n % 250 + 1}",
                  security_groups=[group]) for n in range(count)]
    made = info(rule(remote_group=group), rule("egress"), ports=ports,
                members={group: {"IPv4": [p["fixed_ips"][0]["ip_address"] for p in ports]}})
    made["security_groups"] = {group: made["security_groups"][GROUP]}
    return made


def fresh(info_: dict) -> tuple:
    """What a first apply, on a clean host, leaves there."""
    host = FakeIptables()
    IptablesFirewall(runner=host).apply(info_)
    return host.state()


def test_a_second_apply_without_change_runs_no_tool():
    host = FakeIptables()
    firewall = IptablesFirewall(runner=host)
    firewall.apply(many(5))
    assert host.tools() == ["ipset", "ipset", "iptables-save", "ip6tables-save",
                            "iptables-restore", "ip6tables-restore"]
    host.runs.clear()
    firewall.apply(many(5))
    assert host.runs == []


def test_a_port_added_writes_its_chains_and_edits_the_others_in_place():
    host = FakeIptables()
    firewall = IptablesFirewall(runner=host)
    firewall.apply(many(20))
    host.runs.clear()
    firewall.apply(many(21))
    assert host.tools() == ["ipset", "iptables-restore", "ip6tables-restore"]
    text = host.runs[1][1]
    added = "00000014-00"
    declared = [line for line in text.splitlines() if line.startswith(":")]
    assert declared == [f":neutrino-{c}{added} - [0:0]" for c in "ios"]
    assert not any(line.startswith("-D") for line in text.splitlines())
    assert len(text.splitlines()) < 60  # not the 20 others' chains again
    assert host.state() == fresh(many(21))


def test_changes_and_their_reversal_round_trip_to_a_fresh_apply():
    host = FakeIptables()
    firewall = IptablesFirewall(runner=host)
    ruled = many(8)
    ruled["security_groups"][GROUP].append(rule(protocol="tcp", low=22, high=22))
    fewer = many(8)
    del fewer["devices"][next(iter(fewer["devices"]))]
    for wanted in (many(8), many(12), ruled, fewer, many(3), many(8), info(ports=[]), many(8)):
        firewall.apply(wanted)
        assert host.state() == fresh(wanted)


def test_a_failed_restore_forgets_and_the_next_apply_rewrites_everything():
    host = FakeIptables()
    firewall = IptablesFirewall(runner=host)
    firewall.apply(many(4))
    host.tables[4]["neutrino-sg-chain"].append("-j DROP")  # someone meddles
    host.fail = "ip6tables-restore"
    with pytest.raises(FirewallError):
        firewall.apply(many(5))
    host.runs.clear()
    firewall.apply(many(5))
    assert [argv for argv, _ in host.runs if "save" in argv[0] or argv[1:] == ["save"]] == [
        ["ipset", "save"], ["iptables-save", "-t", "filter"], ["ip6tables-save", "-t", "filter"]]
    assert host.state() == fresh(many(5))


def test_remove_all_reads_the_host_and_leaves_nothing():
    host = FakeIptables()
    IptablesFirewall(runner=host).apply(many(3))
    IptablesFirewall(runner=host).remove_all()  # another object: it must read
    assert host.tables == {v: {"FORWARD": [], "INPUT": []} for v in (4, 6)}
    assert host.sets == {}


def test_conntrack_forgets_a_leaving_member_per_port_not_per_pair():
    before, after = build(many(300)), build(many(299))  # the last one leaves
    forgets = conntrack_forgets(before, after)
    assert len(forgets) == 299  # one per staying port, with the one gone address
    assert {f.remotes for f in forgets} == {frozenset({"10.0.1.50"})}
    assert len(conntrack_deletions(forgets)) == 299


def test_many_forgets_delete_only_the_live_connections_they_match():
    flows = ("ipv4 2 tcp 6 100 ESTABLISHED src=10.0.1.50 dst=10.0.0.1 sport=4000 dport=80 "
             "src=10.0.0.1 dst=10.0.1.50 sport=80 dport=4000\n"
             "ipv4 2 tcp 6 100 ESTABLISHED src=10.0.0.2 dst=10.0.0.1 sport=4001 dport=80 "
             "src=10.0.0.1 dst=10.0.0.2 sport=80 dport=4001\n"
             "ipv4 2 icmp 1 29 src=10.0.0.3 dst=10.0.1.50 type=8 code=0 id=7 "
             "src=10.0.1.50 dst=10.0.0.3 type=0 code=0 id=7\n")
    host = FakeIptables(flows)
    firewall = IptablesFirewall(runner=host)
    firewall.apply(many(300))
    host.runs.clear()
    firewall.apply(many(299))
    assert [argv for argv, _ in host.runs if argv[0] == "conntrack"] == [
        ["conntrack", "-L", "-o", "extended"],
        ["conntrack", "-D", "-f", "ipv4", "-s", "10.0.1.50", "-d", "10.0.0.1", "-p", "tcp",
         "--dport", "80"]]
    assert len(host.flows) == 2  # the other member's, and the one that left (its port
    # is gone: its chains with it)


def test_a_remote_group_rule_removed_forgets_the_members_of_then_per_local_address():
    members = {OTHER: {"IPv4": ["10.0.0.7", "10.0.0.8"]}}
    before = build(info(rule(protocol="udp", low=53, high=53, remote_group=OTHER),
                        members=members))
    after = build(info(members=members))
    [forget] = conntrack_forgets(before, after)
    assert forget.remotes == {"10.0.0.7", "10.0.0.8"} and forget.local == "10.0.0.1"
    assert forget.argv() == ["-D", "-f", "ipv4", "-d", "10.0.0.1", "-p", "udp",
                             "--dport", "53"]
