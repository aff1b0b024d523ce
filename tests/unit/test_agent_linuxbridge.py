"""The Linux bridge agent's sync against a fake host (links, iptables, ipset)
and a fake server on the in-memory bus: what the host does, not which calls
were made. No root; each test runs in milliseconds."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from neutrino.agents.linuxbridge import LinuxBridgeAgent
from tests.fakes.agent_conf import agent_conf
from tests.fakes.host import FakeIp, FakeLink
from tests.fakes.iptables import FakeIptables, Packet
from tests.fakes.server import FakeServer, serving

NET = "a1b2c3d4-e5f6-4000-8000-000000000001"
BRIDGE = "brq" + NET[:11]
WEB, DB_ = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
GROUP = "99999999-0000-4000-8000-000000000009"
CONF = ("[securitygroup]\nfirewall_driver = iptables\n"
        "[vxlan]\nlocal_ip = 192.0.2.1\n")


def tap(port_id: str) -> str:
    return "tap" + port_id[:11]


def details(port_id: str, address: str, mac: str, **extra) -> dict:
    return {"port_id": port_id, "network_id": NET, "mac_address": mac,
            "admin_state_up": True, "network_type": "vxlan", "segmentation_id": 1001,
            "physical_network": None, "mtu": 1450, "device_owner": "compute:nova",
            "fixed_ips": [{"subnet_id": "s1", "ip_address": address}],
            "allowed_address_pairs": [], "port_security_enabled": True,
            "security_groups": [GROUP], **extra}


def rule(direction: str, protocol: str | None = None, port: int | None = None,
         remote_group: str | None = None) -> dict:
    return {"direction": direction, "ethertype": "IPv4", "protocol": protocol,
            "port_range_min": port, "port_range_max": port, "remote_ip_prefix": None,
            "remote_group_id": remote_group, "remote_address_group_id": None,
            "security_group_id": GROUP}


class Host:
    """One host's links and firewall, which outlive an agent (a restart)."""

    def __init__(self):
        self.ip = FakeIp(eth0=FakeLink(up=True))
        self.iptables = FakeIptables()

    def plug(self, port_id: str) -> None:
        """What the hypervisor does: the instance's tap, up, in no bridge."""
        self.ip.links[tap(port_id)] = FakeLink(up=True)

    def ssh(self, source: str, target: str, server: FakeServer) -> bool:
        """Does a first TCP 22 packet from port ``source`` reach port ``target``?"""
        a, b = server.ports[source], server.ports[target]
        packet = Packet(a["fixed_ips"][0]["ip_address"], b["fixed_ips"][0]["ip_address"],
                        "tcp", 22, src_mac=a["mac_address"])
        return (self.ip.switched(tap(source), tap(target))
                and self.iptables.forwards(packet, tap(source), tap(target)))

    def state(self) -> tuple:
        return self.ip.state(), self.iptables.state()


@pytest.fixture
def server():
    made = FakeServer()
    made.ports = {WEB: details(WEB, "10.0.0.5", "fa:16:3e:00:00:05"),
                  DB_: details(DB_, "10.0.0.6", "fa:16:3e:00:00:06")}
    made.groups = {GROUP: [rule("egress"), rule("ingress", "tcp", 22, remote_group=GROUP)]}
    return made


Scenario = Callable[[LinuxBridgeAgent], Awaitable[None]]


def run(tmp_path, server: FakeServer, host: Host, scenario: Scenario) -> None:
    """``scenario`` with an agent on ``host`` talking to ``server``."""
    async def main() -> None:
        async with serving(server) as bus:
            agent = LinuxBridgeAgent(agent_conf(tmp_path, LinuxBridgeAgent, CONF), bus,
                                     ip=host.ip, firewall_runner=host.iptables)
            try:
                await scenario(agent)
            finally:
                agent._host.shutdown()
    asyncio.run(main())


def full(agent: LinuxBridgeAgent) -> Awaitable[None]:
    return agent.sync(True, set())


def test_a_plugged_tap_goes_into_its_networks_bridge_and_is_reported_active(tmp_path, server):
    host = Host()
    host.plug(WEB)
    run(tmp_path, server, host, full)
    assert host.ip.bridge_of(tap(WEB)) == BRIDGE
    assert host.ip.links["vxlan-1001"].master == BRIDGE
    assert host.ip.links[tap(WEB)].mtu == 1450
    assert server.status == {WEB: "ACTIVE"}


def test_an_unplugged_tap_is_reported_down_and_its_bridge_goes(tmp_path, server):
    host = Host()
    host.plug(WEB)

    async def scenario(agent):
        await full(agent)
        host.ip.delete(tap(WEB))  # the instance went
        await agent.sync(False, {("device", tap(WEB))})

    run(tmp_path, server, host, scenario)
    assert server.status == {WEB: "DOWN"}
    assert BRIDGE not in host.ip.links and "vxlan-1001" not in host.ip.links


def test_an_admin_down_port_is_wired_down_and_reported_down(tmp_path, server):
    server.ports[WEB]["admin_state_up"] = False
    host = Host()
    host.plug(WEB)
    run(tmp_path, server, host, full)
    assert host.ip.links[tap(WEB)].master == BRIDGE
    assert host.ip.bridge_of(tap(WEB)) is None  # the tap is down: nothing passes
    assert server.status == {WEB: "DOWN"}


def test_a_tap_of_no_port_is_left_out_of_every_bridge(tmp_path, server):
    host = Host()
    host.ip.links["tapstranger00"] = FakeLink(up=True, master=BRIDGE)
    host.ip.links[BRIDGE] = FakeLink(kind="bridge", up=True)
    run(tmp_path, server, host, full)
    assert host.ip.links["tapstranger00"].master is None
    assert server.status == {}


def test_members_of_the_group_reach_each_other_on_ssh_only_as_the_rules_say(tmp_path, server):
    host = Host()
    host.plug(WEB)
    host.plug(DB_)
    run(tmp_path, server, host, full)
    assert host.ssh(WEB, DB_, server) and host.ssh(DB_, WEB, server)
    web, db = server.ports[WEB], server.ports[DB_]
    http = Packet(web["fixed_ips"][0]["ip_address"], db["fixed_ips"][0]["ip_address"],
                  "tcp", 80, src_mac=web["mac_address"])
    assert not host.iptables.forwards(http, tap(WEB), tap(DB_))
    spoofed = Packet("10.0.0.99", db["fixed_ips"][0]["ip_address"], "tcp", 22,
                     src_mac=web["mac_address"])
    assert not host.iptables.forwards(spoofed, tap(WEB), tap(DB_))


def test_a_rule_removed_and_a_group_changed_stop_ssh_at_the_next_sync(tmp_path, server):
    host = Host()
    host.plug(WEB)
    host.plug(DB_)

    async def scenario(agent):
        await full(agent)
        assert host.ssh(WEB, DB_, server)
        server.groups[GROUP] = [rule("egress")]  # the ssh rule deleted
        await agent.sync(False, {("security_group", GROUP)})

    run(tmp_path, server, host, scenario)
    assert not host.ssh(WEB, DB_, server)
    assert not host.ssh(DB_, WEB, server)


def test_a_port_without_port_security_passes_anything(tmp_path, server):
    server.ports[DB_]["port_security_enabled"] = False
    server.groups[GROUP] = [rule("egress")]  # no ingress at all
    host = Host()
    host.plug(WEB)
    host.plug(DB_)
    run(tmp_path, server, host, full)
    assert host.ssh(WEB, DB_, server)  # DB_ is not filtered
    assert not host.ssh(DB_, WEB, server)  # WEB's ingress lets nothing in


def test_a_restarted_agent_converges_to_the_same_host(tmp_path, server):
    """The same links, chains and sets; the sets, read back equal, are not
    written again (chains are: iptables-save spells rules its own way)."""
    host = Host()
    host.plug(WEB)
    host.plug(DB_)
    run(tmp_path, server, host, full)
    before = host.state()
    runs = len(host.iptables.runs)
    run(tmp_path, server, host, full)  # a new agent: nothing remembered
    assert host.state() == before
    assert ["ipset", "restore"] not in [argv for argv, _ in host.iptables.runs[runs:]]


def test_a_change_and_its_reversal_leave_the_host_as_it_was(tmp_path, server):
    host = Host()
    host.plug(WEB)
    host.plug(DB_)

    async def scenario(agent):
        await full(agent)
        before = host.state()
        server.ports[DB_]["admin_state_up"] = False
        server.groups[GROUP].append(rule("ingress", "tcp", 443))
        await agent.sync(False, {("port", DB_), ("security_group", GROUP)})
        assert host.state() != before
        server.ports[DB_]["admin_state_up"] = True
        server.groups[GROUP].pop()
        await agent.sync(False, {("port", DB_), ("security_group", GROUP)})
        assert host.state() == before

    run(tmp_path, server, host, scenario)
