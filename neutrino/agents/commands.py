"""The agent commands and the option groups each reads, for any command that
shares config files with them: what one of them reads is no typo."""

from __future__ import annotations

from neutrino.config import OptGroup


def agent_commands() -> dict[str, tuple[OptGroup, ...]]:
    """Every agent command and its option groups. The agents are imported
    here, when asked (only when a file holds what the running command does
    not read); the Open vSwitch agent's options come from a module of their
    own, without the ovs library that the agent imports."""
    from neutrino.agents import openvswitch_options, ovn_metadata_options
    from neutrino.agents.base import AGENT_OPTIONS
    from neutrino.agents.dhcp import DhcpAgent
    from neutrino.agents.l3 import L3Agent
    from neutrino.agents.lbaas import LbaasAgent
    from neutrino.agents.linuxbridge import LinuxBridgeAgent
    from neutrino.agents.metadata import MetadataAgent
    found: dict[str, tuple[OptGroup, ...]] = {
        cls.binary: cls.option_groups
        for cls in (LinuxBridgeAgent, DhcpAgent, L3Agent, MetadataAgent, LbaasAgent)}
    found[openvswitch_options.BINARY] = openvswitch_options.OPTIONS
    found[ovn_metadata_options.BINARY] = ovn_metadata_options.OPTIONS
    return {binary: (AGENT_OPTIONS, *groups) for binary, groups in found.items()}
