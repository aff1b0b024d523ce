"""The OpenFlow firewall's flows, without a switch (tests/functional: with one)."""

import random

import pytest

from neutrino.linux.ovs_firewall import Place, build, port_masks

PORT = {"port_id": "p1", "device": "p1", "mac_address": "FA:16:3E:00:00:01",
        "fixed_ips": [{"ip_address": "10.0.0.5"}, {"ip_address": "2001:db8::5"}],
        "security_groups": ["g1"], "allowed_address_pairs": [
            {"ip_address": "10.0.0.100/30", "mac_address": "fa:16:3e:00:00:99"}]}


def flows_of(rules, port=PORT, members=None):
    info = {"devices": {"p1": port}, "security_groups": {"g1": rules},
            "sg_member_ips": members or {}}
    return build(info, {"p1": Place(ofport=7, vlan=3)})


@pytest.mark.parametrize("low,high", [(22, 22), (8080, 8081), (1000, 1999), (0, 0),
                                      (1, 1023), (65535, 65535), (3, 60000)])
def test_port_masks_match_exactly_the_range(low, high):
    masks = port_masks(low, high)
    sample = {low, high, max(0, low - 1), min(65535, high + 1),
              *random.Random(low).sample(range(65536), 200)}
    for port in sample:
        hits = 0
        for mask in masks:
            value, _, bits = mask.partition("/")
            bits_value = int(bits, 16) if bits else 0xFFFF
            hits += (port & bits_value) == int(value, 16)
        assert hits == (1 if low <= port <= high else 0), (port, masks)


def test_every_port_is_no_match():
    assert port_masks(1, 65535) == [] and port_masks(0, 65535) == []


def test_only_the_ports_own_addresses_leave_it():
    flows = flows_of([])
    spoof = [f for f in flows if "table=71" in f and "ct(table=72" in f]
    assert any("dl_src=fa:16:3e:00:00:01" in f and "nw_src=10.0.0.5," in f for f in spoof)
    assert any("ipv6_src=2001:db8::5," in f for f in spoof)
    assert any("dl_src=fa:16:3e:00:00:99" in f and "nw_src=10.0.0.100/30" in f for f in spoof)
    assert any("ipv6_src=fe80::f816:3eff:fe00:1," in f for f in spoof)  # EUI-64 of the MAC
    assert any("table=71" in f and "reg5=7" in f and "priority=0" not in f
               and f.endswith("actions=drop") and "tp_src=67" in f for f in flows)


def test_rules_become_committing_flows():
    flows = flows_of([
        {"direction": "ingress", "ethertype": "IPv4", "protocol": "tcp",
         "port_range_min": 8080, "port_range_max": 8081, "remote_ip_prefix": "192.0.2.0/24"},
        {"direction": "egress", "ethertype": "IPv4"},
        {"direction": "ingress", "ethertype": "IPv6", "protocol": "icmp",
         "port_range_min": 128},
        {"direction": "ingress", "ethertype": "IPv4", "remote_group_id": "g1"},
    ], members={"g1": {"IPv4": ["10.0.0.5", "10.0.0.6"], "IPv6": ["2001:db8::5"]}})
    ingress = [f for f in flows if "table=82" in f and "priority=70" in f]
    egress = [f for f in flows if "table=72" in f and "priority=70" in f]
    assert any("nw_proto=6" in f and "tp_dst=0x1f90/0xfffe" in f
               and "nw_src=192.0.2.0/24" in f for f in ingress)
    assert any("nw_proto=58" in f and "icmp_type=128" in f for f in ingress)  # ICMPv6
    assert not any("nw_src=10.0.0" in f for f in ingress)  # the group's rule: below
    assert len(egress) == 1 and "ip," in egress[0] and "nw_dst" not in egress[0]
    assert all("reg5=7" in f and "ct(commit" in f for f in ingress + egress)


def test_a_stateless_port_skips_conntrack_both_ways():
    rules = [{"direction": "ingress", "ethertype": "IPv4", "protocol": "tcp",
              "port_range_min": 80, "port_range_max": 80},
             {"direction": "egress", "ethertype": "IPv4", "remote_group_id": "g1"}]
    members = {"g1": {"IPv4": ["10.0.0.6"], "IPv6": []}}
    stateful = flows_of(rules, members=members)
    flows = flows_of([{**rule, "stateful": False} for rule in rules], members=members)
    own = [f for f in flows if "reg5=7" in f or "in_port=7" in f or "conj_id" in f]
    assert own and not any("ct(" in f for f in own)
    spoof = [f for f in flows if "table=71" in f and "nw_src=10.0.0.5," in f]
    assert spoof and all(f.endswith("actions=resubmit(,72)") for f in spoof)
    assert any(f.endswith("table=81,priority=91,reg5=7,ip,actions=resubmit(,82)") for f in flows)
    assert any("table=82" in f and "tp_dst=0x50" in f and f.endswith("actions=output:NXM_NX_REG5[]")
               for f in flows)
    # the shared flows are the stateful ones' (a stateful port on the host still uses them)
    shared = [f for f in flows if "reg5=" not in f and "in_port=" not in f and "cookie" not in f]
    assert all(f in stateful for f in shared if "conjunction(" not in f)


def conjunction_flows(flows):
    """(the ports' clauses, the members' clauses, the conjunctions) in table 82."""
    found = [f for f in flows if "table=82" in f and "priority=60" in f]
    return ([f for f in found if "1/2)" in f], [f for f in found if "2/2)" in f],
            [f for f in found if "conj_id=" in f])


def test_a_remote_group_is_a_conjunction_linear_in_ports_and_members():
    """N ports of a group allowing each other: a flow per port and per member,
    not one per pair."""
    rules = {"g1": [{"direction": "ingress", "ethertype": "IPv4", "protocol": "tcp",
                     "port_range_min": 22, "port_range_max": 22, "remote_group_id": "g1"},
                    {"direction": "ingress", "ethertype": "IPv4", "protocol": "udp",
                     "remote_group_id": "g1"}],
             "g2": [{"direction": "ingress", "ethertype": "IPv4", "protocol": "tcp",
                     "port_range_min": 22, "port_range_max": 22, "remote_group_id": "g2"}]}
    devices, places, members = {}, {}, []
    for n in range(1, 51):
        groups = ["g1", "g2"] if n == 1 else ["g1"]
        devices[f"p{n}"] = {**PORT, "port_id": f"p{n}", "security_groups": groups,
                            "fixed_ips": [{"ip_address": f"10.0.0.{n}"}],
                            "allowed_address_pairs": []}
        places[f"p{n}"] = Place(ofport=n, vlan=3)
        members.append(f"10.0.0.{n}")
    info = {"devices": devices, "security_groups": rules,
            "sg_member_ips": {"g1": {"IPv4": members}, "g2": {"IPv4": ["10.0.0.1"]}}}
    ports, addresses, conjunctions = conjunction_flows(build(info, places))
    assert len(ports) == 50 * 2  # tcp/22 and udp per port (port 1: g2 shares its tcp/22)
    assert len(addresses) == 50  # one per member, whatever groups name it
    assert len(conjunctions) == 2  # g1 and g2, ingress, IPv4
    g1, g2 = (int(f.split("conj_id=")[1].split(",")[0]) for f in conjunctions)
    member_1 = next(f for f in addresses if "nw_src=10.0.0.1," in f)
    assert member_1.endswith(f"actions=conjunction({min(g1, g2)},2/2),"
                             f"conjunction({max(g1, g2)},2/2)")
    port_1_ssh = next(f for f in ports if "reg5=1," in f and "tp_dst=0x16" in f)
    assert f"conjunction({g1},1/2)" in port_1_ssh and f"conjunction({g2},1/2)" in port_1_ssh
    # the same ids next time, and in another process: unchanged flows stay
    assert conjunction_flows(build(info, places))[2] == conjunctions


def test_unfiltered_ports_and_empty_groups_get_no_rules():
    assert not any("reg5=7" in f for f in flows_of(
        [], port={**PORT, "port_security_enabled": False}))
    assert not any("priority=70" in f for f in flows_of(
        [{"direction": "ingress", "ethertype": "IPv4", "remote_group_id": "g9"}]))
