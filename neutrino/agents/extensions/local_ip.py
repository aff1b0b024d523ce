"""The ``local_ip`` L2 agent extension (``[agent] extensions = local_ip``):
Local IPs enforced by the Open vSwitch agent, on its integration bridge, as
Neutron's OVS agent extension does.

For each port of this host associated with a local IP, the other ports of
its network on this host are answered "that is me" when they ask for the
local IP (ARP), and what they send to it is led to the port: its MAC as
the destination and, through conntrack, its fixed IP (DNAT, committed);
what the port sends from that fixed IP goes through the same conntrack
zone, so that its replies come back from the local IP. So an instance that
reaches the local IP reaches the associated port of its own host; on a
host without one, the local IP leads nowhere (the port made for it is
bound nowhere). The port itself reaches the local IP's real owner, not
itself (Neutron's "no NAT to self"). Only IPv4, and both ``ip_mode``\\ s
translate, as in Neutron. Two ports of one network on one host associated
with the same local IP: the first by port id wins (Neutron leaves it to
chance).

The flows are br-int's, where a packet has left its sender and not yet
reached its receiver (``local_ip_ovs`` says where, with the openvswitch
firewall and without), each port's with its cookie. The associations are
asked of the server for each port the agent hands here (``get_associations``;
in a full sync, for every port at once); when the server says a port's
changed, the port is marked dirty, so the agent's next sync hands it back
and writes the flows again.

Not enforced by the Linux bridge agent, as in Neutron: loading it there is
one line in the log and nothing else. (Neutron's OVS extension refuses the
openvswitch firewall unless its ``static_nat`` is set; here the NAT has a
conntrack zone of its own, apart from the firewall's.)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from neutrino.agents.extensions.api import AgentHandles, L2AgentExtension
from neutrino.rpc import topics
from neutrino.rpc.contracts import local_ip as contract

LOG = logging.getLogger(__name__)
OPENVSWITCH = "Open vSwitch agent"


class LocalIpNotifications:
    """What the extension serves on ``LOCAL_IP_UPDATE``."""

    rpc_version = contract.NOTIFICATION_VERSION

    def __init__(self, extension: LocalIpExtension):
        self._extension = extension

    async def associations_updated(self, context: dict, port_ids: list[str], **kwargs: Any
                                   ) -> None:
        self._extension.associations_changed(port_ids)


class LocalIpExtension(L2AgentExtension):
    def __init__(self) -> None:
        #: port id -> its associations (ports with none are absent)
        self.associations: dict[str, list[contract.Association]] = {}
        #: in a full sync, the ports asked about already (None: none yet)
        self._asked: set[str] | None = set()

    def initialize(self, handles: AgentHandles) -> None:
        if handles.agent_type != OPENVSWITCH:
            raise RuntimeError(f"Local IPs are enforced by the {OPENVSWITCH} only (as in "
                               f"Neutron), not by the {handles.agent_type}: nothing done")
        sg = handles.conf.group("securitygroup")
        self._firewall = bool(getattr(sg, "enable_security_group", False)) and \
            getattr(sg, "firewall_driver", None) == "openvswitch"
        # only here: the Linux bridge agent never imports ovsdbapp
        from neutrino.agents.extensions import local_ip_ovs
        self._render = local_ip_ovs.local_ip_flows
        self.handles = handles
        self._plugin = contract.LocalIpPluginApi.on(handles.bus)

    def rpc_endpoints(self) -> Sequence[tuple[str, Sequence[object]]]:
        return [(topics.LOCAL_IP_UPDATE, [LocalIpNotifications(self)])]

    def flows(self) -> list[str]:
        return self._render(self.handles.state, self.associations, self._firewall)

    async def before_full_sync(self) -> None:
        self._asked = None  # the first port handed asks about every port, in one call

    async def after_full_sync(self) -> None:
        self._asked = set()

    async def handle_port(self, port: Mapping[str, Any]) -> None:
        port_id = port["port_id"]
        if self._asked is None:
            every = sorted(set(self.handles.state) | {port_id})
            self._learn(every, await self._ask(every))
            self._asked = set(every)
        if port_id in self._asked:
            self._asked.discard(port_id)  # asked in this full sync already
            return
        self._learn([port_id], await self._ask([port_id]))

    async def _ask(self, port_ids: list[str]) -> dict[str, list[contract.Association]]:
        return await self._plugin.get_associations(dict(self.handles.context),
                                                   port_ids=port_ids)

    def _learn(self, port_ids: list[str], answer: Mapping[str, Any]) -> None:
        for port_id in port_ids:
            found = list(answer.get(port_id) or [])
            if found != self.associations.get(port_id, []):
                LOG.info("port %s: local IPs %s", port_id,
                         ", ".join(a["local_ip_address"] for a in found) or "none")
            if found:
                self.associations[port_id] = found
            else:
                self.associations.pop(port_id, None)

    async def delete_port(self, port: Mapping[str, Any]) -> None:
        self.associations.pop(port["port_id"], None)

    def associations_changed(self, port_ids: list[str]) -> None:
        """The server says these ports' associations changed: those wired here
        are looked at again (``handle_port`` asks for them)."""
        here = [port_id for port_id in port_ids if port_id in self.handles.state]
        if here:
            self.handles.mark_dirty(*(("port", port_id) for port_id in here))
