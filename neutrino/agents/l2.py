"""The Open vSwitch agent's command, and what the L2 agents share.

It registers, reports its mappings (which ML2 binds ports by) and hears the
server's port and network notifications; its host side comes with its
dataplane. The Linux bridge agent is in ``linuxbridge``.
"""

from __future__ import annotations

from typing import Any

from neutrino.agents.base import Agent
from neutrino.agents.cmd import main
from neutrino.agents.notifications import L2Notifications
from neutrino.config import Opt, OptGroup, parse_list
from neutrino.rpc.topics import L2_NOTIFICATIONS


def parse_mappings(text: str) -> dict[str, str]:
    """``physnet1:eth1,physnet2:br-ex`` as a dict."""
    mappings = {}
    for item in parse_list(text):
        name, sep, value = item.partition(":")
        if not sep or not name.strip() or not value.strip():
            raise ValueError(f"'{item}' is not <physical network>:<name>")
        mappings[name.strip()] = value.strip()
    return mappings


class OpenvswitchAgent(Agent):
    agent_type = "Open vSwitch agent"
    binary = "neutrino-openvswitch-agent"
    notification_topics = L2_NOTIFICATIONS
    option_groups = (
        OptGroup("ovs", [
            Opt("integration_bridge", str, "br-int", "The bridge instances plug into."),
            Opt("bridge_mappings", parse_mappings, {},
                "Physical networks and the OVS bridges that carry them."),
            Opt("datapath_type", str, "system", "system, or netdev for userspace."),
            Opt("local_ip", str, "", "This host's address for tunnels."),
        ]),
    )

    def configurations(self) -> dict[str, Any]:
        ovs = self.conf.ovs
        return {"bridge_mappings": ovs.bridge_mappings, "integration_bridge":
                ovs.integration_bridge, "datapath_type": ovs.datapath_type,
                "tunnel_types": ["vxlan", "geneve", "gre"] if ovs.local_ip else [],
                "devices": 0}

    def endpoints(self) -> list[Any]:
        return [L2Notifications(self)]


def openvswitch() -> None:
    main(OpenvswitchAgent)
