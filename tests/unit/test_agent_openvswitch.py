"""The Open vSwitch agent's sync against a fake OVSDB, a fake flow table and a
fake server on the in-memory bus: which packets br-int carries between
instance ports, as its flows and tags say, not which calls were made. No root."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from neutrino.agents.extensions.api import AgentHandles, L2AgentExtension
from neutrino.agents.openvswitch import OpenvswitchAgent
from neutrino.linux.names import tap_name
from neutrino.linux.ovs_names import DEAD_VLAN
from tests.fakes.agent_conf import agent_conf
from tests.fakes.openflow import FakeSwitch, Packet
from tests.fakes.ovsdb import FakeOvsdb
from tests.fakes.server import FakeServer, serving

HERE = "tests.unit.test_agent_openvswitch"
NET, NET2 = "a1b2c3d4-e5f6-4000-8000-000000000001", "a1b2c3d4-e5f6-4000-8000-000000000002"
WEB, DB_ = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
OTHER = "cccccccc-0000-4000-8000-000000000003"
GROUP = "99999999-0000-4000-8000-000000000009"
NOOP = "[securitygroup]\nfirewall_driver = noop\n"
FIREWALL = "[securitygroup]\nfirewall_driver = openvswitch\n"


def details(port_id: str, network_id: str, address: str, **extra: Any) -> dict[str, Any]:
    return {"port_id": port_id, "network_id": network_id,
            "mac_address": "fa:16:3e:00:00:" + address.rsplit(".", 1)[1].zfill(2),
            "admin_state_up": True, "network_type": "local", "segmentation_id": None,
            "physical_network": None, "mtu": 1500, "device_owner": "compute:nova",
            "fixed_ips": [{"subnet_id": "s-" + network_id[-1], "ip_address": address}],
            "allowed_address_pairs": [], "port_security_enabled": True,
            "security_groups": [GROUP], **extra}


def rule(direction: str, protocol: str | None = None, port: int | None = None,
         remote_group: str | None = None) -> dict[str, Any]:
    return {"direction": direction, "ethertype": "IPv4", "protocol": protocol,
            "port_range_min": port, "port_range_max": port, "remote_ip_prefix": None,
            "remote_group_id": remote_group, "remote_address_group_id": None,
            "security_group_id": GROUP}


class Host:
    """One host's OVSDB and flows, which outlive an agent (a restart)."""

    def __init__(self) -> None:
        self.db = FakeOvsdb()
        self.switch = FakeSwitch(self.db)

    def plug(self, server: FakeServer, *port_ids: str) -> None:
        """What the hypervisor does: the instance's port on br-int, untagged."""
        for port_id in port_ids:
            self.db.plug("br-int", tap_name(port_id), port_id,
                         server.ports[port_id]["mac_address"])

    def tag(self, port_id: str) -> int | None:
        return self.db.tag(tap_name(port_id))

    def reaches(self, server: FakeServer, source: str, target: str, dport: int = 22,
                reply: bool = False) -> bool:
        """Does a TCP packet from port ``source`` to ``dport`` of port ``target``
        leave br-int by ``target``'s port?"""
        a, b = server.ports[source], server.ports[target]
        packet = Packet(a["mac_address"], b["mac_address"], a["fixed_ips"][0]["ip_address"],
                        b["fixed_ips"][0]["ip_address"], "tcp", dport, reply=reply)
        return self.switch.reaches("br-int", tap_name(source), tap_name(target), packet)

    def state(self) -> tuple:
        return self.db.state(), {b: self.switch.flows(b) for b in sorted(self.switch.tables)}


@pytest.fixture
def server() -> FakeServer:
    made = FakeServer()
    made.ports = {WEB: details(WEB, NET, "10.0.0.5"), DB_: details(DB_, NET, "10.0.0.6"),
                  OTHER: details(OTHER, NET2, "10.0.0.7")}
    made.groups = {GROUP: [rule("egress"), rule("ingress", "tcp", 22, remote_group=GROUP)]}
    return made


@pytest.fixture
def host(server: FakeServer) -> Host:
    made = Host()
    made.plug(server, WEB, DB_, OTHER)
    return made


def run(tmp_path, server: FakeServer, host: Host,
        scenario: Callable[[OpenvswitchAgent], Awaitable[None]],
        conf: str = NOOP) -> OpenvswitchAgent:
    """``scenario`` with an agent on ``host`` talking to ``server``."""
    async def main() -> OpenvswitchAgent:
        async with serving(server) as bus:
            agent = OpenvswitchAgent(agent_conf(tmp_path, OpenvswitchAgent, conf), bus,
                                     db=host.db,  # type: ignore[arg-type]
                                     openflow=host.switch.openflow)  # type: ignore[arg-type]
            try:
                agent.start_extensions()
                await scenario(agent)
            finally:
                agent._host.shutdown()
            return agent
    return asyncio.run(main())


def full(agent: OpenvswitchAgent) -> Awaitable[None]:
    return agent.sync_with_extensions(True, set())


def test_each_network_has_its_own_local_vlan_and_its_ports_reach_only_each_other(
        tmp_path, server, host):
    run(tmp_path, server, host, full)
    assert host.tag(WEB) == host.tag(DB_) != host.tag(OTHER)
    assert DEAD_VLAN not in {host.tag(WEB), host.tag(OTHER)}
    assert host.db.port_tags()[tap_name(WEB)][1] == {"net_uuid": NET}
    assert host.reaches(server, WEB, DB_) and host.reaches(server, DB_, WEB)
    assert not host.reaches(server, WEB, OTHER) and not host.reaches(server, OTHER, DB_)
    assert server.status == {WEB: "ACTIVE", DB_: "ACTIVE", OTHER: "ACTIVE"}


def test_a_port_not_yet_wired_passes_nothing(tmp_path, server, host):
    """Flows and tags are the agent's: with none written, br-int drops."""
    assert not host.reaches(server, WEB, DB_)


def test_an_admin_down_port_passes_nothing_and_is_reported_down(tmp_path, server, host):
    async def scenario(agent):
        await full(agent)
        server.ports[DB_]["admin_state_up"] = False
        await agent.sync_with_extensions(False, {("port", DB_)})

    run(tmp_path, server, host, scenario)
    assert host.tag(DB_) == DEAD_VLAN
    assert not host.reaches(server, WEB, DB_) and not host.reaches(server, DB_, WEB)
    assert server.status[DB_] == "DOWN" and server.status[WEB] == "ACTIVE"


def test_a_port_that_left_is_reported_down_and_its_network_vlan_freed(
        tmp_path, server, host):
    async def scenario(agent):
        await full(agent)
        assert NET2 in agent.vlans
        host.db.unplug(tap_name(OTHER))
        await agent.sync_with_extensions(False, {("device", OTHER)})
        assert NET2 not in agent.vlans

    run(tmp_path, server, host, scenario)
    assert server.status[OTHER] == "DOWN"


def test_a_restarted_agent_keeps_the_local_vlans_and_sends_no_flow_mod(
        tmp_path, server, host):
    first = run(tmp_path, server, host, full)
    before, mods, writes = host.state(), host.switch.mods, host.db.writes
    second = run(tmp_path, server, host, full)
    assert second.vlans == first.vlans
    assert host.state() == before
    assert host.switch.mods == mods and host.db.writes == writes


def test_the_same_vlans_even_when_the_restarted_agent_sees_networks_in_another_order(
        tmp_path, server, host):
    first = run(tmp_path, server, host, full)
    host.db.unplug(tap_name(WEB))
    host.db.unplug(tap_name(DB_))
    host.plug(server, WEB, DB_)  # NET's ports come back after NET2's
    second = run(tmp_path, server, host, full)
    assert second.vlans == first.vlans


def test_a_change_and_its_reversal_leave_the_switch_as_it_was(tmp_path, server, host):
    extra = "dddddddd-0000-4000-8000-000000000004"

    async def scenario(agent):
        await full(agent)
        before = host.state()
        server.ports[extra] = details(extra, "a1b2c3d4-e5f6-4000-8000-000000000003",
                                      "10.0.0.8")
        server.ports[DB_]["admin_state_up"] = False
        host.plug(server, extra)
        await agent.sync_with_extensions(False, {("device", extra), ("port", DB_)})
        assert host.state() != before
        host.db.unplug(tap_name(extra))
        del server.ports[extra]
        server.ports[DB_]["admin_state_up"] = True
        await agent.sync_with_extensions(False, {("device", extra), ("port", DB_)})
        assert host.state() == before

    run(tmp_path, server, host, scenario)


def test_the_firewall_lets_through_what_the_rules_allow_and_replies(tmp_path, server, host):
    run(tmp_path, server, host, full, conf=FIREWALL)
    assert host.reaches(server, WEB, DB_, 22)  # a member of the group
    assert not host.reaches(server, WEB, DB_, 80)  # no rule
    assert host.reaches(server, DB_, WEB, 80, reply=True)  # a reply passes
    assert not host.reaches(server, WEB, OTHER, 22)  # another network


def test_the_firewall_drops_what_a_removed_rule_allowed(tmp_path, server, host):
    async def scenario(agent):
        await full(agent)
        server.groups[GROUP] = [rule("egress")]
        await agent.sync_with_extensions(False, {("security_group", GROUP)})

    run(tmp_path, server, host, scenario, conf=FIREWALL)
    assert not host.reaches(server, WEB, DB_, 22)


# --- the L2 agents' extension hooks, as the OVS agent calls them -----------------------------

class Recorder(L2AgentExtension):
    """Records every hook the agent calls, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.handles: AgentHandles | None = None

    def initialize(self, handles: AgentHandles) -> None:
        self.handles = handles
        self.calls.append(("initialize",))

    async def before_full_sync(self) -> None:
        self.calls.append(("before_full_sync",))

    async def after_full_sync(self) -> None:
        self.calls.append(("after_full_sync",))

    async def handle_port(self, port: Mapping[str, Any]) -> None:
        self.calls.append(("handle_port", port["port_id"], str(port["admin_state_up"])))

    async def delete_port(self, port: Mapping[str, Any]) -> None:
        self.calls.append(("delete_port", port["port_id"]))


def test_the_sync_calls_each_extension_hook_in_turn(tmp_path, server, host):
    async def scenario(agent):
        await full(agent)
        host.db.unplug(tap_name(DB_))
        await agent.sync_with_extensions(False, {("device", DB_)})
        server.ports[WEB]["admin_state_up"] = False
        await agent.sync_with_extensions(False, {("port", WEB)})

    agent = run(tmp_path, server, host, scenario, conf=f"[agent]\nextensions = {HERE}:Recorder\n")
    [recorder] = agent.extensions
    assert recorder.calls == [
        ("initialize",), ("before_full_sync",), ("handle_port", WEB, "True"),
        ("handle_port", DB_, "True"), ("handle_port", OTHER, "True"), ("after_full_sync",),
        ("delete_port", DB_), ("handle_port", WEB, "False")]
    assert recorder.handles.host == "h1" and recorder.handles.state is agent.ports
