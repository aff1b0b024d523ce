"""The fake flow table the OVS agent's unit tests ask: that it answers from
the flows, not by default (a fake that always said yes would prove nothing)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.fakes.openflow import FakeSwitch, Packet
from tests.fakes.ovsdb import FakeOvsdb

A = Packet("fa:16:3e:00:00:01", "fa:16:3e:00:00:02", "10.0.0.1", "10.0.0.2", "tcp", 22)


@pytest.fixture
def switch() -> FakeSwitch:
    db = FakeOvsdb()
    db.ensure_bridge("br0", "system")
    for name in ("a", "b", "c"):
        db.plug("br0", name, name, "fa:16:3e:00:00:00")
    db.set_tags({"a": (1, {}), "b": (1, {}), "c": (2, {})})
    return FakeSwitch(db)


def test_no_flow_drops_and_normal_stays_in_the_vlan(switch):
    assert not switch.reaches("br0", "a", "b", A)
    switch.openflow("br0").replace(["table=0,priority=0,actions=NORMAL"])
    assert switch.reaches("br0", "a", "b", A) and not switch.reaches("br0", "a", "c", A)
    switch.db.set_tags({"b": (4095, {})})
    assert not switch.reaches("br0", "a", "b", A)


def test_update_and_replace_send_only_the_difference(switch):
    flows = ["table=0,priority=0,actions=NORMAL", "table=0,priority=5,in_port=a,actions=drop"]
    openflow = switch.openflow("br0")
    openflow.replace(flows)
    assert switch.mods == 2 and not switch.reaches("br0", "a", "b", A)
    openflow.replace(flows)
    assert switch.mods == 2
    assert openflow.update(flows, flows[:1]) == 1
    assert switch.reaches("br0", "a", "b", A)
    assert openflow.dump("table=0") == flows[:1]


def test_matches_conjunctions_and_conntrack(switch):
    switch.openflow("br0").replace([
        "table=0,priority=0,actions=ct(table=1,zone=NXM_NX_REG6[0..15])",
        "table=1,priority=90,ct_state=+est+rpl+trk,actions=NORMAL",
        "table=1,priority=60,tcp,tp_dst=0x16,actions=conjunction(7,1/2)",
        "table=1,priority=60,ip,nw_src=10.0.0.0/30,actions=conjunction(7,2/2)",
        "table=1,priority=60,conj_id=7,ip,actions=ct(commit,zone=NXM_NX_REG6[0..15]),NORMAL",
        "table=1,priority=0,actions=drop"])
    assert switch.reaches("br0", "a", "b", A)
    other = Packet(A.src_mac, A.dst_mac, "10.0.0.9", A.dst_ip, "tcp", 22)
    assert not switch.reaches("br0", "a", "b", other)  # one clause only
    assert not switch.reaches("br0", "a", "b", replace(A, dport=80))  # the other clause
    assert switch.reaches("br0", "a", "b", Packet(A.src_mac, A.dst_mac, "10.0.0.9",
                                                  A.dst_ip, "tcp", 80, reply=True))


def test_what_it_cannot_evaluate_is_an_error_not_a_guess(switch):
    switch.openflow("br0").replace(["table=0,priority=0,tun_src=1.2.3.4,actions=NORMAL"])
    with pytest.raises(ValueError, match="cannot match tun_src"):
        switch.reaches("br0", "a", "b", A)
