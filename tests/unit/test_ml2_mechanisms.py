"""Mechanism manager fan-out and the agent-based binding rule."""

import pytest

from neutrino import config
from neutrino.context import Context
from neutrino.plugins.ml2.api import MechanismDriver, NetworkContext, PortContext
from neutrino.plugins.ml2.drivers.mech_agent import (
    LinuxBridgeMechanismDriver,
    OpenvswitchMechanismDriver,
    agent_can_reach,
)
from neutrino.plugins.ml2.mechanisms import MechanismDriverError, MechanismManager


class Recorder(MechanismDriver):
    def __init__(self, name, calls, fail_on=()):
        super().__init__(config.load([]))
        self.name, self.calls, self.fail_on = name, calls, fail_on

    def create_network_precommit(self, context):
        self._record("create_network_precommit")

    def delete_network_postcommit(self, context):
        self._record("delete_network_postcommit")

    def _record(self, method):
        self.calls.append((self.name, method))
        if method in self.fail_on:
            raise RuntimeError(f"{self.name} broke")


def net_context():
    return NetworkContext(conn=None, ctx=Context.admin(), current={"id": "n"})


def test_calls_in_order_and_deletes_in_reverse():
    calls = []
    manager = MechanismManager([Recorder("a", calls), Recorder("b", calls)])
    manager.call("create_network_precommit", net_context())
    manager.call("delete_network_postcommit", net_context())
    assert calls == [("a", "create_network_precommit"), ("b", "create_network_precommit"),
                     ("b", "delete_network_postcommit"), ("a", "delete_network_postcommit")]


def test_first_error_stops_unless_keep_going():
    calls = []
    manager = MechanismManager([Recorder("a", calls, fail_on={"create_network_precommit",
                                                               "delete_network_postcommit"}),
                                Recorder("b", calls)])
    with pytest.raises(MechanismDriverError, match="a: a broke"):
        manager.call("create_network_precommit", net_context())
    assert calls == [("a", "create_network_precommit")]
    calls.clear()
    with pytest.raises(MechanismDriverError):
        manager.call("delete_network_postcommit", net_context(), keep_going=True)
    assert calls == [("b", "delete_network_postcommit"), ("a", "delete_network_postcommit")]


LB_AGENT = {"agent_type": "Linux bridge agent", "alive": True, "admin_state_up": True,
            "configurations": {"interface_mappings": {"physnet1": "eth1"},
                               "tunnel_types": ["vxlan"]}}


@pytest.mark.parametrize("segment,expected", [
    ({"network_type": "vxlan", "segmentation_id": 5}, True),
    ({"network_type": "flat", "physical_network": "physnet1"}, True),
    ({"network_type": "vlan", "physical_network": "physnet2", "segmentation_id": 3}, False),
    ({"network_type": "gre", "segmentation_id": 3}, False),
    ({"network_type": "local"}, True),
])
def test_agent_reach(segment, expected):
    assert agent_can_reach(LB_AGENT, segment, LinuxBridgeMechanismDriver.mapping_keys,
                           LinuxBridgeMechanismDriver.supported_types) is expected


def port_context(agents, segments):
    return PortContext(conn=None, ctx=Context.admin(), current={"id": "p"}, host="h1",
                       agents=agents, segments_to_bind=segments)


def test_binds_the_first_reachable_segment_on_an_alive_agent():
    conf = config.load([])
    manager = MechanismManager([OpenvswitchMechanismDriver(conf),
                                LinuxBridgeMechanismDriver(conf)])
    segments = [{"network_type": "vlan", "physical_network": "physnet9", "segmentation_id": 4},
                {"network_type": "vxlan", "segmentation_id": 7}]
    context = port_context([LB_AGENT], segments)
    assert manager.bind_port(context)
    assert context.vif_type == "bridge" and context.bound_segment == segments[1]
    assert context.vif_details["bound_drivers"] == {"0": "linuxbridge"}
    dead = port_context([{**LB_AGENT, "alive": False}], segments)
    assert not manager.bind_port(dead) and dead.vif_type is None
