"""Open vSwitch agents' ``local_ip`` extension <-> server: the local IPs
associated with the agent's ports.

Agents -> server on ``q-local-ip-plugin``, version 1.0: ``get_associations``
gives, for the ports named, each association: the local IP, its address and
mode, and the fixed IP it leads to. Neutron's agents pull versioned objects
(``LocalIPAssociation``) through its generic resources RPC and are pushed
them; neutrino's extension asks for what it enforces only.

Server -> every L2 agent, fanned out on ``q-agent-notifier-local-ip-update``:
``associations_updated`` once an association was made or removed, with the
ports concerned; an agent asks again about those it has (a hint, as every
notification).
"""

from __future__ import annotations

from typing import Any, TypedDict

from neutrino.rpc import topics
from neutrino.rpc.contracts.base import Api
from neutrino.rpc.notifier import Notifier

TOPIC = topics.LOCAL_IP_PLUGIN
VERSION = "1.0"
NOTIFICATION_VERSION = "1.0"


class Association(TypedDict):
    local_ip_id: str
    local_ip_address: str
    ip_mode: str
    fixed_ip: str


class LocalIpPluginApi(Api):
    """The agent's end of ``q-local-ip-plugin``."""

    topic = TOPIC
    version = VERSION

    async def get_associations(self, ctx: dict[str, Any], port_ids: list[str]
                               ) -> dict[str, list[Association]]:
        """port id -> its associations, for the ports of ``port_ids`` that have any."""
        return await self.caller.call(ctx, "get_associations", port_ids=port_ids)


class LocalIpAgentNotifier:
    """The server's end of ``LOCAL_IP_UPDATE``."""

    def __init__(self, notifier: Notifier):
        self._fanout = notifier.fanout

    def associations_updated(self, port_ids: list[str]) -> None:
        if port_ids:
            self._fanout(topics.LOCAL_IP_UPDATE, "associations_updated",
                         port_ids=sorted(set(port_ids)))
