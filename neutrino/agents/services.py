"""The L3 and metadata agents' commands (the DHCP agent is ``neutrino.agents.dhcp``).

They register, report and hear the server's notifications (each marks what it
names dirty), and their sync fetches from the server what they are to serve:
the routers scheduled to an L3 agent (counted in the state it reports).
Programming the host from it comes with their dataplanes.
"""

from __future__ import annotations

from typing import Any

from neutrino.agents.base import Agent, named
from neutrino.agents.cmd import main
from neutrino.config import Config, Opt, OptGroup, parse_bool
from neutrino.rpc import topics
from neutrino.rpc.bus import Bus
from neutrino.rpc.client import RpcClient

#: routers asked for per sync_routers call: thousands must not make one huge answer
ROUTERS_PER_CALL = 64


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


class L3Agent(Agent):
    agent_type = "L3 agent"
    binary = "neutrino-l3-agent"
    topic = topics.L3_AGENT
    option_groups = (OptGroup("l3", [
        Opt("handle_internal_only_routers", parse_bool, True,
            "Also serve routers without an external gateway."),
    ]),)

    def __init__(self, conf: Config, bus: Bus):
        super().__init__(conf, bus)
        self._plugin = RpcClient(bus, topics.L3_PLUGIN, "1.12")
        #: the routers this agent serves, as sync_routers gave them
        self.routers: dict[str, dict[str, Any]] = {}

    def configurations(self) -> dict[str, Any]:
        routers = self.routers.values()
        return {"agent_mode": "legacy", "routers": len(routers),
                "ex_gw_ports": sum(1 for r in routers if r.get("gw_port")),
                "interfaces": sum(len(r.get("_interfaces", ())) for r in routers),
                "floating_ips": sum(len(r.get("_floatingips", ())) for r in routers),
                "handle_internal_only_routers": self.conf.l3.handle_internal_only_routers}

    def endpoints(self) -> list[Any]:
        return [L3Notifications(self)]

    async def _sync_routers(self, router_ids: list[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(router_ids), ROUTERS_PER_CALL):
            chunk = router_ids[start:start + ROUTERS_PER_CALL]
            for router in await self._plugin.call(self.context, "sync_routers",
                                                  host=self.host, router_ids=chunk):
                found[router["id"]] = router
        return found

    async def sync(self, full: bool, dirty: set[Any]) -> None:
        """All the routers scheduled here, in chunks, or the dirty ones again
        (dropping those that went, or went to another agent)."""
        if full:
            ids = await self._plugin.call(self.context, "get_router_ids", host=self.host)
            self.routers = await self._sync_routers(sorted(ids))
            return
        changed = sorted(named(dirty, "router"))
        found = await self._sync_routers(changed)
        for router_id in changed:
            if router_id in found:
                self.routers[router_id] = found[router_id]
            else:
                self.routers.pop(router_id, None)


class MetadataAgent(Agent):
    agent_type = "Metadata agent"
    binary = "neutrino-metadata-agent"


def l3() -> None:
    main(L3Agent)


def metadata() -> None:
    main(MetadataAgent)
