"""Agent-based mechanism drivers: bind a port on a host where an alive agent of
their kind can reach the segment (its mappings or its tunnel types)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from neutrino.plugins.ml2.api import (
    NETWORK_TYPE,
    PHYSICAL_NETWORK,
    MechanismDriver,
    PortContext,
    Segment,
)
from neutrino.rpc.contracts.trunk import trunk_bridge_name

VNIC_NORMAL = "normal"


def agent_can_reach(agent: Mapping[str, Any], segment: Segment, mapping_keys: tuple[str, ...],
                    supported_types: tuple[str, ...]) -> bool:
    """Whether ``agent`` (its reported configurations) can carry ``segment``."""
    configurations = agent.get("configurations") or {}
    network_type = segment[NETWORK_TYPE]
    if network_type not in supported_types:
        return False
    if network_type == "local":
        return True
    if network_type in ("flat", "vlan"):
        physnets: set[str] = set()
        for key in mapping_keys:
            physnets.update((configurations.get(key) or {}).keys())
        return segment.get(PHYSICAL_NETWORK) in physnets
    return network_type in (configurations.get("tunnel_types") or [])


class AgentMechanismDriver(MechanismDriver):
    agent_type: ClassVar[str] = ""
    #: other agent types whose hosts the driver binds ports on too
    also_binds_on: ClassVar[tuple[str, ...]] = ()
    vif_type: ClassVar[str] = ""
    mapping_keys: ClassVar[tuple[str, ...]] = ()
    supported_types: ClassVar[tuple[str, ...]] = ()
    vnic_types: ClassVar[tuple[str, ...]] = (VNIC_NORMAL,)

    def vif_details(self, agent: Mapping[str, Any]) -> dict[str, Any]:
        return {"port_filter": True, "connectivity": "l2"}

    def port_vif_details(self, agent: Mapping[str, Any], port: Mapping[str, Any]
                         ) -> dict[str, Any]:
        """``vif_details`` for this port (a trunk's parent's differ on OVS)."""
        return self.vif_details(agent)

    def bind_port(self, context: PortContext) -> None:
        if context.vnic_type not in self.vnic_types:
            return
        for agent in context.agents:
            if agent.get("agent_type") not in (self.agent_type, *self.also_binds_on) \
                    or not agent.get("alive") \
                    or not agent.get("admin_state_up", True):
                continue
            for segment in context.segments_to_bind:
                if agent_can_reach(agent, segment, self.mapping_keys, self.supported_types):
                    context.set_binding(segment, self.vif_type,
                                        self.port_vif_details(agent, context.current))
                    return


class LinuxBridgeMechanismDriver(AgentMechanismDriver):
    name = "linuxbridge"
    agent_type = "Linux bridge agent"
    vif_type = "bridge"
    mapping_keys = ("interface_mappings", "bridge_mappings")
    supported_types = ("local", "flat", "vlan", "vxlan")
    # as Neutron's driver declares them; its agent's qos extension enforces them
    qos_rule_types = frozenset({"bandwidth_limit", "dscp_marking"})


class OpenvswitchMechanismDriver(AgentMechanismDriver):
    name = "openvswitch"
    agent_type = "Open vSwitch agent"
    vif_type = "ovs"
    mapping_keys = ("bridge_mappings",)
    supported_types = ("local", "flat", "vlan", "vxlan", "gre", "geneve")
    # as Neutron's driver declares them; its agent's qos extension enforces the
    # limits and marks (the minimums are a scheduler's, which neutrino has not)
    qos_rule_types = frozenset({"bandwidth_limit", "dscp_marking", "minimum_bandwidth",
                                "packet_rate_limit", "minimum_packet_rate"})

    def vif_details(self, agent: Mapping[str, Any]) -> dict[str, Any]:
        configurations = agent.get("configurations") or {}
        return {"port_filter": True, "connectivity": "l2", "ovs_hybrid_plug": False,
                "datapath_type": configurations.get("datapath_type", "system"),
                "bridge_name": configurations.get("integration_bridge", "br-int")}

    def port_vif_details(self, agent: Mapping[str, Any], port: Mapping[str, Any]
                         ) -> dict[str, Any]:
        """A trunk's parent is plugged into its trunk's bridge, as Neutron's OVS
        trunk driver tells Nova (``bridge_name``)."""
        details = self.vif_details(agent)
        trunk = port.get("trunk_details")
        if trunk:
            details["bridge_name"] = trunk_bridge_name(trunk["trunk_id"])
        return details
