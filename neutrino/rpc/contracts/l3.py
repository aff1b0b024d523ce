"""L3 agents <-> server (Neutron's L3 agent API and wire format).

Agents -> server on topic ``q-l3-plugin`` (no namespace), version 1.12 (less
the DVR and HA calls: neutrino routers are legacy routers): the routers a host
serves, everything needed to build them, and floating IP statuses.

Server -> the agent hosting a router, cast on ``l3_agent.<host>``, version
1.0: routers updated, deleted, added to or removed from the agent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, TypedDict

from neutrino.rpc import topics
from neutrino.rpc.contracts.base import Api
from neutrino.rpc.notifier import Notifier

TOPIC = topics.L3_PLUGIN
NAMESPACE: str | None = None
VERSION = "1.12"
AGENT_TOPIC = topics.L3_AGENT
NOTIFICATION_VERSION = "1.0"

# Neutron's keys in a router's sync data (RouterSyncData spells them out:
# a TypedDict's keys must be literal strings)
INTERFACES = "_interfaces"
FLOATINGIPS = "_floatingips"
PORT_FORWARDINGS = "_port_forwardings"
#: the metering labels counted on the router, each with its rules (Neutron's key)
METERING_LABELS = "_metering_labels"
#: the router's conntrack helpers (id, protocol, port, helper): Neutron's agents
#: pull them over an RPC of their own, neutrino's find them in the sync data
CONNTRACK_HELPERS = "_conntrack_helpers"

FloatingIpStatus = Literal["ACTIVE", "DOWN", "ERROR"]
FIP_STATUSES: tuple[FloatingIpStatus, ...] = ("ACTIVE", "DOWN", "ERROR")

class RouterSyncData(TypedDict, total=False):
    """One router as ``sync_routers`` sends it: its API view, and more."""

    id: str
    admin_state_up: bool
    gw_port: dict[str, Any] | None
    _interfaces: list[dict[str, Any]]
    _floatingips: list[dict[str, Any]]
    _port_forwardings: list[dict[str, Any]]
    _metering_labels: list[dict[str, Any]]
    _conntrack_helpers: list[dict[str, Any]]
    ha: bool
    ha_vr_id: int  # an HA router's virtual router id on its HA network
    _ha_interface: dict[str, Any]  # its port there for the asking agent's host
    _ha_state: str  # what that agent last said of its role


class L3PluginApi(Api):
    """The agent's end of ``q-l3-plugin``."""

    topic = TOPIC
    version = VERSION
    namespace = NAMESPACE

    async def get_router_ids(self, ctx: dict[str, Any], host: str) -> list[str]:
        return await self.caller.call(ctx, "get_router_ids", host=host)

    async def sync_routers(self, ctx: dict[str, Any], host: str, router_ids: list[str]
                           ) -> list[RouterSyncData]:
        return await self.caller.call(ctx, "sync_routers", host=host, router_ids=router_ids)

    async def update_floatingip_statuses(self, ctx: dict[str, Any], router_id: str,
                                         fip_statuses: dict[str, FloatingIpStatus]) -> None:
        await self.caller.call(ctx, "update_floatingip_statuses", router_id=router_id,
                               fip_statuses=fip_statuses)

    async def update_ha_routers_states(self, ctx: dict[str, Any], host: str,
                                       states: dict[str, str]) -> None:
        """HA router id -> active or standby, on ``host``."""
        await self.caller.call(ctx, "update_ha_routers_states", host=host, states=states)


class L3AgentNotifier:
    """The server's end of ``l3_agent``: casts to the hosts of routers."""

    def __init__(self, notifier: Notifier):
        self._cast = notifier.cast

    def routers_updated(self, hosts: Iterable[str], router_ids: list[str]) -> None:
        for host in hosts:
            self._cast(AGENT_TOPIC, host, "routers_updated", routers=router_ids)

    def router_deleted(self, hosts: Iterable[str], router_id: str) -> None:
        for host in hosts:
            self._cast(AGENT_TOPIC, host, "router_deleted", router_id=router_id)

    def router_added_to_agent(self, host: str, router_ids: list[str]) -> None:
        self._cast(AGENT_TOPIC, host, "router_added_to_agent", payload=router_ids)

    def router_removed_from_agent(self, host: str, router_id: str) -> None:
        self._cast(AGENT_TOPIC, host, "router_removed_from_agent",
                   payload={"router_id": router_id})
