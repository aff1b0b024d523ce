"""A device that another agent removes between this agent's read and its
write (the DHCP or L3 agent unplugging its tap a moment before the Linux
bridge agent unplugs it) is the desired state: the sync goes on, no full
resync follows. ``tests/fakes/host.py`` removes it at that moment."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from neutrino import config
from neutrino.agents.base import AGENT_OPTIONS
from neutrino.agents.linuxbridge import LinuxBridgeAgent
from neutrino.linux.ip import FLOOD_MAC
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts.l2 import L2PluginApi
from neutrino.rpc.transport import get_transport
from tests.fakes.host import FakeIp, FakeLink

NET = "a1b2c3d4e5f6-0000-0000-0000-000000000000"
BRIDGE = "brq" + NET[:11]


class FakePlugin:
    """The server's answers: ``details`` by device; the calls made."""

    def __init__(self, details: dict[str, dict]):
        self.details = details
        self.calls: list[tuple[str, dict]] = []

    async def call(self, context: dict, method: str, **kwargs):
        self.calls.append((method, kwargs))
        if method == "get_devices_details_list":
            return [self.details.get(d, {"device": d}) for d in kwargs["devices"]]
        if method == "get_fdb_entries":
            return {}
        return {}


def port(tap: str, network_type: str = "local") -> dict:
    return {"device": tap, "port_id": tap[3:] + "-port", "network_id": NET,
            "network_type": network_type, "segmentation_id": 1001, "mtu": 1450,
            "admin_state_up": True}


@pytest.fixture
def agent(tmp_path):
    path = tmp_path / "agent.conf"
    path.write_text("[DEFAULT]\nhost = h1\n[securitygroup]\nfirewall_driver = noop\n"
                    "[vxlan]\nlocal_ip = 192.0.2.1\nl2_population = true\n")
    conf = config.load([str(path)])
    conf.register((AGENT_OPTIONS, *LinuxBridgeAgent.option_groups))
    made = LinuxBridgeAgent(conf, Bus(get_transport(f"memory://{uuid.uuid4().hex}")))
    yield made
    made._host.shutdown()


def sync(agent: LinuxBridgeAgent, host: FakeIp, plugin: FakePlugin, *dirty) -> None:
    agent._ip, agent._plugin = host, L2PluginApi(plugin)
    asyncio.run(agent.sync(False, set(dirty)))


def test_a_tap_gone_before_it_is_unplugged(agent):
    """The port was deleted; its tap (still in the network's bridge when the
    agent looks) goes before the agent unplugs it."""
    host = FakeIp(**{BRIDGE: FakeLink(kind="bridge"), "tapdeleted000": FakeLink(master=BRIDGE),
                     "tapkept000000": FakeLink(master=BRIDGE)})
    host.vanishing["tapdeleted000"] = "master_of"
    sync(agent, host, FakePlugin({}), ("device", "tapdeleted000"))
    assert host.vanished == ["tapdeleted000"]
    assert BRIDGE in host.links  # the other tap keeps it


def test_a_tap_gone_before_it_is_wired_is_forgotten_and_others_wired(agent):
    host = FakeIp(tapgone000000=FakeLink(), tapstays00000=FakeLink())
    host.vanishing["tapgone000000"] = "names"  # seen by the sync's scan, then gone
    plugin = FakePlugin({t: port(t) for t in ("tapgone000000", "tapstays00000")})
    sync(agent, host, plugin, ("device", "tapgone000000"), ("device", "tapstays00000"))
    assert host.vanished == ["tapgone000000"]
    assert host.links["tapstays00000"].master == BRIDGE
    assert set(agent.ports) == {"tapstays00000"}
    [(_, status)] = [c for c in plugin.calls if c[0] == "update_device_list"]
    assert status["devices_up"] == ["tapstays00000"]


def test_a_bridge_member_gone_before_it_is_unplugged(agent):
    """The network's last tap went: its bridge is removed, and a member that
    goes meanwhile is as good as unplugged."""
    host = FakeIp(**{BRIDGE: FakeLink(kind="bridge"), "vxlan-1001": FakeLink(
        kind="vxlan", master=BRIDGE), "qr-leftover0": FakeLink(master=BRIDGE)})
    host.vanishing["qr-leftover0"] = "bridge_ports"
    sync(agent, host, FakePlugin({}), ("device", "tapwasthere00"))
    assert host.vanished == ["qr-leftover0"]
    assert set(host.links) == set()


def test_a_vxlan_device_gone_before_its_entries_are_written(agent):
    host = FakeIp(**{"vxlan-1001": FakeLink(kind="vxlan")})
    host.vanishing["vxlan-1001"] = "fdb"
    agent._ip = host
    agent.fdb = {NET: {"192.0.2.2": {(FLOOD_MAC, "0.0.0.0")}}}
    agent._program_fdb(NET, "vxlan-1001")  # no error
    assert host.vanished == ["vxlan-1001"]


def test_a_missing_device_that_is_not_the_tap_is_no_desired_state(agent):
    """The tap is there but its flat network's interface is not: an error,
    logged, and the port not reported up (not taken for a tap gone)."""
    host = FakeIp(tapflat000000=FakeLink())
    details = {**port("tapflat000000", "flat"), "physical_network": "physnet1"}
    agent.conf.linux_bridge.physical_interface_mappings["physnet1"] = "eth9"
    plugin = FakePlugin({"tapflat000000": details})
    sync(agent, host, plugin, ("device", "tapflat000000"))
    assert agent.ports == {} and "tapflat000000" in host.links
    assert not [c for c in plugin.calls if c[0] == "update_device_list"]
