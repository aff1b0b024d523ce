"""L2 agents <-> server: the dataplane of trunks.

Agents -> server on Neutron's topic and namespace (``trunk``), version 1.0:

- ``get_trunk_details``: the trunks whose parent is one of ``port_ids``, by
  parent (an agent finds an instance's port on a trunk bridge, or wires a
  port, and asks what it is the parent of; Neutron asks one port at a time);
- ``update_subport_bindings``: the trunk's subports take its parent's
  ``binding:host_id`` (and are bound there); the trunk goes BUILD meanwhile;
  the subports bound;
- ``update_trunk_status``: what the agent made of it (BUILD while it wires,
  ACTIVE, DEGRADED when some subports could not be wired, ERROR when the trunk
  could not be wired at all, DOWN when the instance left; Neutron's has no
  ``host``, and puts a trunk DOWN when its parent is unbound).

Server -> every L2 agent, fanned out on ``q-agent-notifier-trunk-update``:
``trunk_changed`` once a trunk was made, its subports were added or
removed, or it was deleted: an agent that wires its parent asks again (a
hint, as every notification; Neutron pushes the trunk and subport objects
themselves).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from neutrino.rpc import topics
from neutrino.rpc.contracts.base import Api
from neutrino.rpc.notifier import Notifier

TOPIC = topics.TRUNK_PLUGIN
NAMESPACE = topics.TRUNK_NAMESPACE
VERSION = "1.0"
NOTIFICATION_VERSION = "1.0"

#: an instance's trunk parent is plugged into a bridge of its trunk's, not br-int
TRUNK_BRIDGE_PREFIX = "tbr-"


def trunk_bridge_name(trunk_id: str) -> str:
    """``tbr-<trunk id[:11]>``: the server names it in the parent's binding
    (``vif_details: bridge_name``), the hypervisor makes it, the OVS agent
    finds it."""
    return f"{TRUNK_BRIDGE_PREFIX}{trunk_id[:11]}"


Status = Literal["DOWN", "BUILD", "ACTIVE", "DEGRADED", "ERROR"]
DOWN: Status = "DOWN"
BUILD: Status = "BUILD"
ACTIVE: Status = "ACTIVE"
DEGRADED: Status = "DEGRADED"
ERROR: Status = "ERROR"


class SubPort(TypedDict):
    port_id: str
    segmentation_type: str
    segmentation_id: int
    mac_address: str


class TrunkDetails(TypedDict):
    """A trunk as its parent's agent wires it."""
    trunk_id: str
    port_id: str  # the parent
    admin_state_up: bool
    status: Status
    sub_ports: list[SubPort]


class TrunkPluginApi(Api):
    """The agent's end of ``trunk``."""

    topic = TOPIC
    version = VERSION
    namespace = NAMESPACE

    async def get_trunk_details(self, ctx: dict[str, Any], port_ids: list[str],
                                timeout: float | None = None) -> dict[str, TrunkDetails]:
        """parent port id -> its trunk, for those of ``port_ids`` that are a parent
        (``timeout``: seconds, for an agent that asks where trunks may not be served)."""
        return await self.caller.call(ctx, "get_trunk_details", port_ids=port_ids,
                                      timeout=timeout)

    async def update_subport_bindings(self, ctx: dict[str, Any], trunk_id: str
                                      ) -> list[str]:
        """The trunk's subports bound to its parent's host: the ids of those bound."""
        return await self.caller.call(ctx, "update_subport_bindings", trunk_id=trunk_id)

    async def update_trunk_status(self, ctx: dict[str, Any], trunk_id: str,
                                  status: Status, host: str | None = None) -> None:
        """``host``: the reporting agent's; a DOWN from a host the parent is no
        longer bound to (it moved) is passed over."""
        await self.caller.call(ctx, "update_trunk_status", trunk_id=trunk_id, status=status,
                               host=host)


class TrunkAgentNotifier:
    """The server's end of ``TRUNK_UPDATE``."""

    def __init__(self, notifier: Notifier):
        self._fanout = notifier.fanout

    def trunk_changed(self, trunk_id: str, parent_id: str) -> None:
        self._fanout(topics.TRUNK_UPDATE, "trunk_changed", trunk_id=trunk_id,
                     port_id=parent_id)
