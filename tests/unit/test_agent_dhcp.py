"""The DHCP agent's sync against a fake DHCP dataplane (namespaces, the DHCP
port's device, dnsmasq answering from the real hosts file) and a fake server
on the in-memory bus: what a client on the network would be offered, and
how dnsmasq was handled. No root."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from neutrino.agents.dhcp import DhcpAgent
from neutrino.agents.extensions.api import AgentHandles, DhcpAgentExtension
from neutrino.linux.names import device_name
from tests.fakes.agent_conf import agent_conf
from tests.fakes.dhcp import FakeDhcpDataplane
from tests.fakes.server import FakeServer, serving

HERE = "tests.unit.test_agent_dhcp"
NET = "a1b2c3d4-e5f6-4000-8000-000000000001"
SUBNET, SUBNET2 = "5ub00000-0000-4000-8000-000000000001", "5ub00000-0000-4000-8000-000000000002"
VM, VM2 = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
MAC, MAC2 = "fa:16:3e:00:00:05", "fa:16:3e:00:00:06"


def subnet(subnet_id: str, cidr: str, gateway: str, dhcp: bool = True) -> dict[str, Any]:
    return {"id": subnet_id, "network_id": NET, "cidr": cidr, "ip_version": 4,
            "gateway_ip": gateway, "enable_dhcp": dhcp, "dns_nameservers": [],
            "host_routes": []}


def instance(port_id: str, mac: str, address: str, subnet_id: str = SUBNET) -> dict[str, Any]:
    return {"id": port_id, "network_id": NET, "mac_address": mac, "device_id": "vm",
            "device_owner": "compute:nova",
            "fixed_ips": [{"subnet_id": subnet_id, "ip_address": address}]}


@pytest.fixture
def server() -> FakeServer:
    made = FakeServer()
    made.networks[NET] = {"id": NET, "mtu": 1450, "admin_state_up": True,
                          "subnets": [subnet(SUBNET, "10.0.0.0/24", "10.0.0.1")],
                          "ports": [instance(VM, MAC, "10.0.0.5")]}
    return made


def run(tmp_path, server: FakeServer, host: FakeDhcpDataplane,
        scenario: Callable[[DhcpAgent], Awaitable[None]], conf: str = "") -> DhcpAgent:
    """``scenario`` with an agent serving on ``host``, talking to ``server``."""
    async def main() -> DhcpAgent:
        async with serving(server) as bus:
            agent = DhcpAgent(agent_conf(tmp_path, DhcpAgent, conf), bus,
                              dataplane=host)  # type: ignore[arg-type]
            try:
                agent.start_extensions()
                await scenario(agent)
            finally:
                agent._monitor.close()  # the pidfds it watches the fake's daemons by
            return agent
    return asyncio.run(main())


def full(agent: DhcpAgent) -> Awaitable[None]:
    return agent.sync_with_extensions(True, set())


def dirty(agent: DhcpAgent) -> Awaitable[None]:
    return agent.sync_with_extensions(False, {("network", NET)})


def dhcp_port(server: FakeServer) -> dict[str, Any]:
    [port] = [p for p in server.networks[NET]["ports"] if p["device_owner"] == "network:dhcp"]
    return port


def test_an_enabled_network_is_served_on_a_dhcp_port_of_its_own(tmp_path, server):
    host = FakeDhcpDataplane()
    run(tmp_path, server, host, full)
    port = dhcp_port(server)
    assert port["fixed_ips"] == [{"subnet_id": SUBNET, "ip_address": "10.0.0.2"}]
    assert host.networks[NET].devices == {device_name(port["id"]): (port["mac_address"],
                                                                    ("10.0.0.2/24",))}
    assert host.offer(NET, MAC) == [("10.0.0.5", "host-10-0-0-5.openstacklocal")]
    assert host.offer(NET, MAC2) == []
    assert f"--interface={device_name(port['id'])}" in host.dnsmasq(NET).argv
    assert host.dnsmasq(NET).starts == 1
    assert server.ready == {VM, port["id"]}


def test_a_new_port_is_a_reload_and_a_new_subnet_a_restart(tmp_path, server):
    host = FakeDhcpDataplane()

    async def scenario(agent):
        await full(agent)
        network = server.networks[NET]
        network["ports"].append(instance(VM2, MAC2, "10.0.0.6"))
        await dirty(agent)
        assert host.offer(NET, MAC2) == [("10.0.0.6", "host-10-0-0-6.openstacklocal")]
        daemon = host.dnsmasq(NET)
        assert (daemon.starts, daemon.reloads, daemon.restarts) == (1, 1, 0)
        await dirty(agent)  # nothing new: dnsmasq left alone
        assert (daemon.starts, daemon.reloads, daemon.restarts) == (1, 1, 0)
        network["subnets"].append(subnet(SUBNET2, "10.1.0.0/24", "10.1.0.1"))
        await dirty(agent)
        assert (daemon.starts, daemon.reloads, daemon.restarts) == (1, 1, 1)
        assert any("10.1.0.0" in arg for arg in daemon.argv)

    run(tmp_path, server, host, scenario)
    # the DHCP port was given an address on the new subnet, and holds it
    [held] = host.networks[NET].devices.values()
    assert held[1] == ("10.0.0.2/24", "10.1.0.2/24")
    assert "update_dhcp_port" in server.calls


def test_a_network_whose_dhcp_is_disabled_is_taken_down_and_its_port_given_back(
        tmp_path, server):
    host = FakeDhcpDataplane()

    async def scenario(agent):
        await full(agent)
        server.networks[NET]["subnets"][0]["enable_dhcp"] = False
        await dirty(agent)

    run(tmp_path, server, host, scenario)
    assert host.present() == set()
    assert server.released == [NET]
    assert not [p for p in server.networks[NET]["ports"]
                if p["device_owner"] == "network:dhcp"]


def test_a_network_moved_away_while_the_agent_was_down_goes_at_the_first_sync(
        tmp_path, server):
    host = FakeDhcpDataplane()
    run(tmp_path, server, host, full)
    del server.networks[NET]
    run(tmp_path, server, host, full)  # a restarted agent finds the leftover
    assert host.present() == set() and server.released == [NET]


def test_a_dead_dnsmasq_is_started_again(tmp_path, server):
    host = FakeDhcpDataplane()

    async def scenario(agent):
        await full(agent)
        host.kill(NET)
        assert host.offer(NET, MAC) == [] and host.dead([NET]) == [NET]
        await dirty(agent)

    run(tmp_path, server, host, scenario)
    assert host.offer(NET, MAC) == [("10.0.0.5", "host-10-0-0-5.openstacklocal")]
    assert host.dnsmasq(NET).starts == 2


def test_a_restarted_agent_converges_to_the_same_state_and_leaves_dnsmasq_alone(
        tmp_path, server):
    host = FakeDhcpDataplane()
    run(tmp_path, server, host, full)
    before, port = host.state(), dhcp_port(server)
    run(tmp_path, server, host, full)
    daemon = host.dnsmasq(NET)
    assert host.state() == before
    assert (daemon.starts, daemon.reloads, daemon.restarts) == (1, 0, 0)
    assert dhcp_port(server) == port and server.calls.count("create_dhcp_port") == 1


def test_a_change_and_its_reversal_leave_the_network_served_as_it_was(tmp_path, server):
    host = FakeDhcpDataplane()

    async def scenario(agent):
        await full(agent)
        before = host.state()
        network = server.networks[NET]
        network["ports"].append(instance(VM2, MAC2, "10.0.0.6"))
        network["subnets"][0]["dns_nameservers"] = ["192.0.2.53"]
        await dirty(agent)
        assert host.state() != before
        network["ports"] = [p for p in network["ports"] if p["id"] != VM2]
        network["subnets"][0]["dns_nameservers"] = []
        await dirty(agent)
        assert host.state() == before

    run(tmp_path, server, host, scenario)


def test_isolated_metadata_adds_the_address_and_the_proxy(tmp_path, server):
    host = FakeDhcpDataplane(metadata_socket="/nonexistent/metadata_proxy")
    run(tmp_path, server, host, full, conf="[dhcp]\nenable_isolated_metadata = true\n")
    [held] = host.networks[NET].devices.values()
    assert "169.254.169.254/32" in held[1]
    assert set(host.daemons(NET)) == {"dnsmasq", "metadata proxy"}
    assert "169.254.169.254/32,10.0.0.2" in host.networks[NET].files["opts"]


# --- the DHCP agent's extension hooks -----------------------------------------------------

class Recorder(DhcpAgentExtension):
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

    async def handle_network(self, network: Mapping[str, Any]) -> None:
        ports = tuple(sorted(p["device_owner"] for p in network["ports"]))
        self.calls.append(("handle_network", network["id"], *ports))

    async def delete_network(self, network_id: str) -> None:
        self.calls.append(("delete_network", network_id))


def test_the_sync_calls_each_extension_hook_in_turn(tmp_path, server):
    host = FakeDhcpDataplane()

    async def scenario(agent):
        await full(agent)
        del server.networks[NET]
        await dirty(agent)
        await dirty(agent)  # gone already: nothing more to tell

    agent = run(tmp_path, server, host, scenario,
                conf=f"[agent]\nextensions = {HERE}:Recorder\n")
    [recorder] = agent.extensions
    assert recorder.calls == [
        ("initialize",), ("before_full_sync",),
        ("handle_network", NET, "compute:nova", "network:dhcp"),  # its DHCP port made
        ("after_full_sync",), ("delete_network", NET)]
    assert recorder.handles.dataplane is host and recorder.handles.host == "h1"
