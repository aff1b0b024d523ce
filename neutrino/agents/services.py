"""The DHCP, L3 and metadata agents' commands.

They register, report and hear the server's notifications (each marks what it
names dirty); the host side of their sync comes with their dataplanes.
"""

from __future__ import annotations

from typing import Any

from neutrino.agents.base import Agent
from neutrino.agents.cmd import main
from neutrino.config import Opt, OptGroup, parse_bool
from neutrino.rpc import topics


class DhcpNotifications:
    """What the server tells DHCP agents (on ``dhcp_agent`` and ``dhcp_agent.host``)."""

    rpc_version = "1.0"

    def __init__(self, agent: Agent):
        self._agent = agent

    def _network(self, payload: dict[str, Any]) -> None:
        for key in ("network", "subnet", "port"):
            item = payload.get(key)
            if isinstance(item, dict):
                network_id = item.get("network_id") or item.get("id")
                self._agent.mark_dirty(("network", network_id))
                return
        if "network_id" in payload:
            self._agent.mark_dirty(("network", payload["network_id"]))

    async def network_create_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def network_update_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def network_delete_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def subnet_create_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def subnet_update_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def subnet_delete_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def port_create_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def port_update_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def port_delete_end(self, context: dict, payload: dict) -> None:
        self._network(payload)


class L3Notifications:
    """What the server tells L3 agents (on ``l3_agent`` and ``l3_agent.host``)."""

    rpc_version = "1.0"

    def __init__(self, agent: Agent):
        self._agent = agent

    async def routers_updated(self, context: dict, routers: list[str]) -> None:
        self._agent.mark_dirty(*(("router", r) for r in routers))

    async def router_deleted(self, context: dict, router_id: str) -> None:
        self._agent.mark_dirty(("router", router_id))

    async def router_added_to_agent(self, context: dict, payload: list[str]) -> None:
        self._agent.mark_dirty(*(("router", r) for r in payload))

    async def router_removed_from_agent(self, context: dict, payload: dict) -> None:
        self._agent.mark_dirty(("router", payload["router_id"]))


class DhcpAgent(Agent):
    agent_type = "DHCP agent"
    binary = "neutrino-dhcp-agent"
    topic = topics.DHCP_AGENT
    option_groups = (OptGroup("dhcp", [
        Opt("enable_isolated_metadata", parse_bool, False,
            "Serve metadata in the DHCP namespace of networks without a router."),
    ]),)

    def configurations(self) -> dict[str, Any]:
        return {"dhcp_driver": "dnsmasq", "networks": 0, "subnets": 0, "ports": 0,
                "enable_isolated_metadata": self.conf.dhcp.enable_isolated_metadata}

    def endpoints(self) -> list[Any]:
        return [DhcpNotifications(self)]


class L3Agent(Agent):
    agent_type = "L3 agent"
    binary = "neutrino-l3-agent"
    topic = topics.L3_AGENT
    option_groups = (OptGroup("l3", [
        Opt("handle_internal_only_routers", parse_bool, True,
            "Also serve routers without an external gateway."),
    ]),)

    def configurations(self) -> dict[str, Any]:
        return {"agent_mode": "legacy", "routers": 0, "ex_gw_ports": 0,
                "interfaces": 0, "floating_ips": 0,
                "handle_internal_only_routers": self.conf.l3.handle_internal_only_routers}

    def endpoints(self) -> list[Any]:
        return [L3Notifications(self)]


class MetadataAgent(Agent):
    agent_type = "Metadata agent"
    binary = "neutrino-metadata-agent"


def dhcp() -> None:
    main(DhcpAgent)


def l3() -> None:
    main(L3Agent)


def metadata() -> None:
    main(MetadataAgent)
