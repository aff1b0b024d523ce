"""The ``qos`` L2 agent extension (``[agent] extensions = qos``): a port's QoS
policy enforced where the port is wired, by the Linux bridge or the Open
vSwitch agent (``qos_drivers`` says how each does it).

A port follows its own policy, else its network's (except the ports of the
cloud's own services, ``network:*``, as in Neutron). The rules of the
policies in use are asked of the server (``get_policies``) and kept; when
the server says a policy changed, they are asked again and the ports that
follow it are marked dirty, so the agent's next sync hands them back here.

Between full syncs a port is written only when what it wants changed, and
only in what changed (what it has is known). A full sync asks for every
policy again and hands every port here: the drivers read the host and change
only what differs, then remove what ports no longer here left behind. What
the host refuses is logged, with the port and policy, and tried again a few
seconds later (the port marked dirty); the agent's sync goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from neutrino.agents.extensions.api import AgentHandles, L2AgentExtension, OvsBridge
from neutrino.agents.extensions.qos_drivers import NOTHING, Port, TcDriver, Wanted, wanted_of
from neutrino.config import Config
from neutrino.linux import host_check
from neutrino.rpc import topics
from neutrino.rpc.contracts import qos as contract

if TYPE_CHECKING:
    from neutrino.agents.extensions import qos_ovs

LOG = logging.getLogger(__name__)
LINUX_BRIDGE, OPENVSWITCH = "Linux bridge agent", "Open vSwitch agent"
#: how long a port whose QoS the host refused waits before it is tried again
RETRY_SECONDS = 5


def policy_of(port: Mapping[str, Any]) -> str | None:
    """The policy a port follows: its own, else its network's (not for ports
    of the network's own services)."""
    own = port.get("qos_policy_id")
    if own or str(port.get("device_owner", "")).startswith("network:"):
        return own or None
    return port.get("network_qos_policy_id") or None


class QosNotifications:
    """What the extension serves on ``QOS_POLICY_UPDATE``."""

    rpc_version = contract.NOTIFICATION_VERSION

    def __init__(self, extension: QosExtension):
        self._extension = extension

    async def policies_updated(self, context: dict, policy_ids: list[str], **kwargs: Any
                               ) -> None:
        await self._extension.policies_changed(policy_ids)


class QosExtension(L2AgentExtension):
    def __init__(self) -> None:
        self.rules: dict[str, list[contract.Rule]] = {}  # policy id -> its rules
        self.ports: dict[str, tuple[Port, str | None]] = {}  # port id -> (where, policy)
        self.applied: dict[str, tuple[Port, Wanted]] = {}  # as last written
        self._full_sync = False
        self._asking = asyncio.Lock()  # one question at a time: answers in order

    def initialize(self, handles: AgentHandles) -> None:
        self.handles = handles
        self._plugin = contract.QosPluginApi.on(handles.bus)
        self.driver: TcDriver | qos_ovs.OvsDriver
        if handles.agent_type == LINUX_BRIDGE:
            self.driver = TcDriver()
        elif handles.agent_type == OPENVSWITCH and isinstance(handles.dataplane, OvsBridge):
            # only here: the Linux bridge agent never imports ovsdbapp
            from neutrino.agents.extensions import qos_ovs
            self.driver = qos_ovs.OvsDriver(handles.dataplane.db, handles.dataplane.openflow)
        else:
            raise RuntimeError(f"QoS is enforced by the {LINUX_BRIDGE} and the "
                               f"{OPENVSWITCH}, not by the {handles.agent_type}")

    def host_needs(self, conf: Config, needs: host_check.Needs) -> None:
        needs.tool(conf.setting("agent", "extensions"), host_check.TC)

    def rpc_endpoints(self) -> Sequence[tuple[str, Sequence[object]]]:
        return [(topics.QOS_POLICY_UPDATE, [QosNotifications(self)])]

    def flows(self) -> list[str]:
        return self.driver.flows()

    async def before_full_sync(self) -> None:
        self._full_sync = True
        self.rules.clear()
        self.driver.forget_switch()

    async def after_full_sync(self) -> None:
        self._full_sync = False
        where = [port for port, _ in self.ports.values()]
        await self.handles.run(self.driver.keep_only, where)

    async def handle_port(self, port: Mapping[str, Any]) -> None:
        port_id = port["port_id"]
        where = Port(port_id, port.get("interface") or port["device"], port.get("ofport"))
        policy_id = policy_of(port)
        wanted = wanted_of(await self._rules(policy_id)) if policy_id else NOTHING
        self.ports[port_id] = (where, policy_id)
        before = self.applied.get(port_id)
        if not self._full_sync and before == (where, wanted):
            return
        if not self._full_sync and before is None and wanted == NOTHING:
            self.applied[port_id] = (where, wanted)  # never limited by us: nothing to undo
            return
        # between full syncs what was written is known: only what changes is written
        known = before[1] if before is not None and before[0] == where \
            and not self._full_sync else None
        self.applied.pop(port_id, None)  # unknown until written
        try:
            await self.handles.run(self.driver.apply, where, wanted, known)
        except Exception as error:  # the host refused: said, and tried again later
            LOG.error("port %s: the QoS of policy %s is not in place (again in %d s): %s",
                      port_id, policy_id, RETRY_SECONDS, error)
            asyncio.get_running_loop().call_later(RETRY_SECONDS, self.handles.mark_dirty,
                                                  ("port", port_id))
            return
        self.applied[port_id] = (where, wanted)

    async def delete_port(self, port: Mapping[str, Any]) -> None:
        found = self.ports.pop(port["port_id"], None)
        self.applied.pop(port["port_id"], None)
        if found is not None:
            await self.handles.run(self.driver.remove, found[0])

    async def _rules(self, policy_id: str) -> list[contract.Rule]:
        if policy_id not in self.rules:
            async with self._asking:
                if policy_id not in self.rules:
                    answer = await self._plugin.get_policies(dict(self.handles.context),
                                                             policy_ids=[policy_id])
                    self.rules[policy_id] = answer.get(policy_id, [])
        return self.rules[policy_id]

    async def policies_changed(self, policy_ids: list[str]) -> None:
        """Ask again about the policies of ``policy_ids`` in use here; mark
        dirty the ports that follow them."""
        used = {policy for _, policy in self.ports.values() if policy} & set(policy_ids)
        if not used:
            return
        async with self._asking:
            answer = await self._plugin.get_policies(dict(self.handles.context),
                                                     policy_ids=sorted(used))
            for policy_id in used:
                self.rules[policy_id] = answer.get(policy_id, [])
        self.handles.mark_dirty(*(("port", port_id) for port_id, (_, policy)
                                  in sorted(self.ports.items()) if policy in used))
