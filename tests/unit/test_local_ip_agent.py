"""The Open vSwitch agent's ``local_ip`` extension without a host: the flows
its associations become, and when it asks the server and marks ports dirty
(a server that answers, handles that record)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from neutrino.agents.extensions.api import AgentHandles
from neutrino.agents.extensions.local_ip import LocalIpExtension
from neutrino.agents.extensions.local_ip_ovs import (
    FIREWALL_TABLE,
    PLAIN_TABLE,
    PRIORITY,
    local_ip_flows,
    zone_of,
)
from neutrino.agents.extensions.manager import Extensions
from neutrino.agents.openvswitch_options import OPTIONS
from neutrino.config import load
from neutrino.linux.ovs import cookie_of

NET, OTHER_NET = "net-1", "net-2"
MAC_A = "fa:16:3e:00:00:0a"


def port(ofport: int | None, network: str = NET, mac: str = MAC_A, up: bool = True) -> dict:
    return {"network_id": network, "mac_address": mac, "ofport": ofport,
            "admin_state_up": up}


def association(local_ip: str = "10.0.0.100", fixed_ip: str = "10.0.0.5") -> dict:
    return {"local_ip_id": "lip", "local_ip_address": local_ip, "ip_mode": "translate",
            "fixed_ip": fixed_ip}


PORTS = {"a": port(7), "b": port(8, mac="fa:16:3e:00:00:0b"),
         "c": port(9, mac="fa:16:3e:00:00:0c"), "x": port(10, OTHER_NET),
         "down": port(11, up=False)}


@pytest.mark.parametrize(("firewall", "table"), [(False, PLAIN_TABLE), (True, FIREWALL_TABLE)])
def test_an_association_answers_arp_and_translates_for_the_ports_of_its_network(
        firewall, table):
    flows = local_ip_flows(PORTS, {"a": [association()]}, firewall)
    zone, cookie = zone_of(NET), f"cookie={cookie_of('a'):#x}"
    at = f"{cookie},table={table},priority={PRIORITY},reg7=0"
    for ofport in (8, 9):  # the others of its network, up
        assert (f"{at},in_port={ofport},arp,arp_tpa=10.0.0.100,arp_op=1,actions="
                "move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:fa:16:3e:00:00:0a->eth_src,"
                "set_field:2->arp_op,move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],"
                "move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:fa:16:3e:00:00:0a->arp_sha,"
                "set_field:10.0.0.100->arp_spa,IN_PORT") in flows
        # translated, marked, and back to the same table to go on from there
        assert (f"{at},in_port={ofport},ip,nw_dst=10.0.0.100,actions=set_field:1->reg7,"
                f"set_field:fa:16:3e:00:00:0a->eth_dst,"
                f"ct(commit,zone={zone},table={table},nat(dst=10.0.0.5))") in flows
    # what the port sends from its fixed IP goes through the same zone (replies back)
    assert (f"{at},in_port=7,ip,nw_src=10.0.0.5,"
            f"actions=set_field:1->reg7,ct(zone={zone},table={table},nat)") in flows
    assert len(flows) == 2 * 2 + 1
    # not for the port itself, another network's, or one that is down
    for ofport in (7, 10, 11):
        assert not any(f"in_port={ofport},arp" in f or f"in_port={ofport},ip,nw_dst" in f
                       for f in flows)


def test_nothing_without_associations_here():
    assert local_ip_flows(PORTS, {}) == []
    assert local_ip_flows(PORTS, {"gone": [association()]}) == []
    assert local_ip_flows(PORTS, {"down": [association()]}) == []
    assert local_ip_flows({"a": port(None)}, {"a": [association()]}) == []  # not wired yet
    assert local_ip_flows(PORTS, {"a": [association("fd00::1", "fd00::5")]}) == []
    # alone on its network: no one to answer, only its replies
    alone = local_ip_flows(PORTS, {"x": [association()]})
    assert [f for f in alone if "nw_dst" in f or "arp" in f] == []


def test_the_first_port_wins_a_local_ip_shared_on_one_host():
    flows = local_ip_flows(PORTS, {"b": [association(fixed_ip="10.0.0.6")],
                                   "a": [association()]})
    at_c = [f for f in flows if "in_port=9,ip,nw_dst" in f]
    assert len(at_c) == 1 and "nat(dst=10.0.0.5)" in at_c[0]
    assert len({f.partition(",actions=")[0].split(",", 1)[1] for f in flows}) == len(flows)


def test_zones_are_stable_and_above_the_local_vlans():
    assert zone_of(NET) == zone_of(NET)
    assert all(4096 <= zone_of(f"net-{n}") <= 65535 for n in range(200))


class Server:
    def __init__(self, found: dict[str, list[dict]]):
        self.found = found
        self.asked: list[list[str]] = []

    async def get_associations(self, ctx: dict, port_ids: list[str]) -> dict:
        self.asked.append(port_ids)
        return {p: self.found[p] for p in port_ids if p in self.found}


def handles(agent_type: str, conf_text: str = "[securitygroup]\nfirewall_driver = noop\n",
            state: dict | None = None, dirty: list | None = None, tmp_path: Any = None
            ) -> AgentHandles:
    path = tmp_path / "agent.conf"
    path.write_text(conf_text)
    conf = load([str(path)], OPTIONS)
    marked = dirty if dirty is not None else []
    return AgentHandles(conf=conf, bus=None, host="h", agent_type=agent_type,  # type: ignore[arg-type]
                        context={}, mark_dirty=lambda *items: marked.extend(items),
                        request_full_sync=lambda: None, state=state or {})


def test_only_the_open_vswitch_agent_takes_it_in_its_pipeline(tmp_path):
    with pytest.raises(RuntimeError, match="not by the Linux bridge agent"):
        LocalIpExtension().initialize(handles("Linux bridge agent", tmp_path=tmp_path))
    state = {"a": port(7), "b": port(8)}
    for text, table in (("[securitygroup]\nfirewall_driver = openvswitch\n", FIREWALL_TABLE),
                        ("", FIREWALL_TABLE),  # the default
                        ("[securitygroup]\nfirewall_driver = noop\n", PLAIN_TABLE),
                        ("[securitygroup]\nenable_security_group = false\n", PLAIN_TABLE)):
        ext = LocalIpExtension()
        ext.initialize(handles("Open vSwitch agent", text, state=state, tmp_path=tmp_path))
        ext.associations = {"a": [association()]}
        assert {f.split(",")[1] for f in ext.flows()} == {f"table={table}"}, text


def test_ports_are_asked_about_and_marked_dirty_when_they_change(tmp_path):
    dirty: list = []
    ext = LocalIpExtension()
    ext.initialize(handles("Open vSwitch agent", state=PORTS, dirty=dirty, tmp_path=tmp_path))
    server = Server({"a": [association()]})
    ext._plugin = server  # type: ignore[assignment]

    async def scenario() -> None:
        await ext.handle_port({**PORTS["a"], "port_id": "a"})
        await ext.handle_port({**PORTS["b"], "port_id": "b"})
        assert server.asked == [["a"], ["b"]]
        assert set(ext.associations) == {"a"}
        assert any("nat(dst=10.0.0.5)" in f for f in ext.flows())
        ext.associations_changed(["a", "elsewhere"])  # only the ports wired here
        assert dirty == [("port", "a")]
        server.found = {}
        await ext.handle_port({**PORTS["a"], "port_id": "a"})
        assert ext.associations == {} and ext.flows() == []
        server.found = {"b": [association()]}
        await ext.handle_port({**PORTS["b"], "port_id": "b"})
        await ext.delete_port({"port_id": "b"})
        assert ext.associations == {}
        # a full sync asks about every port here at once, then no more
        server.found, server.asked = {"a": [association()], "c": [association()]}, []
        await ext.before_full_sync()
        for port_id in ("a", "b", "c"):
            await ext.handle_port({**PORTS[port_id], "port_id": port_id})
        await ext.after_full_sync()
        assert server.asked == [sorted(PORTS)]
        assert set(ext.associations) == {"a", "c"}
        await ext.handle_port({**PORTS["c"], "port_id": "c"})  # between full syncs: its own
        assert server.asked[-1] == ["c"]

    asyncio.run(scenario())


def test_the_linux_bridge_agent_says_so_in_one_line(tmp_path, caplog):
    loaded = Extensions([("local_ip", LocalIpExtension())])
    with caplog.at_level(logging.INFO):
        loaded.initialize(handles("Linux bridge agent", tmp_path=tmp_path))
    assert loaded.names == []
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert errors == ["agent extension local_ip: initialize failed: RuntimeError: Local IPs "
                      "are enforced by the Open vSwitch agent only (as in Neutron), not by "
                      "the Linux bridge agent: nothing done"]
