"""Port and network changes fanned out to the L2 agents, once committed.

Plugins run in the API's worker threads; the bus lives on the server's event
loop, so each notification is handed to that loop and not waited for. A
notification that cannot be sent is only logged: agents resync periodically.
"""

from __future__ import annotations

import concurrent.futures
import logging
from typing import Any

from neutrino.rpc import topics
from neutrino.rpc.bus import Bus
from neutrino.rpc.client import RpcClient
from neutrino.rpc.errors import RpcError

LOG = logging.getLogger(__name__)
CONTEXT = {"request_id": None, "project_id": None, "is_admin": True}


def _logged(future: concurrent.futures.Future) -> None:
    error = future.exception()
    if error is not None:
        LOG.warning("an agent notification was not sent: %s", error)


class AgentNotifier:
    def __init__(self, bus: Bus | None):
        self.bus = bus

    def _fanout(self, topic: str, method: str, **args: Any) -> None:
        if self.bus is None or self.bus.loop is None:
            return  # no bus running in this process: no agent can hear
        try:
            future = self.bus.submit(RpcClient(self.bus, topic).fanout(CONTEXT, method, **args))
        except RpcError as error:
            LOG.warning("an agent notification was not sent: %s", error)
            return
        future.add_done_callback(_logged)

    def port_update(self, port: dict[str, Any], segment: dict[str, Any] | None) -> None:
        segment = segment or {}
        self._fanout(topics.PORT_UPDATE, "port_update", port=port,
                     network_type=segment.get("network_type"),
                     segmentation_id=segment.get("segmentation_id"),
                     physical_network=segment.get("physical_network"))

    def port_delete(self, port_id: str, network_id: str) -> None:
        self._fanout(topics.PORT_DELETE, "port_delete", port_id=port_id, network_id=network_id)

    def network_update(self, network: dict[str, Any]) -> None:
        self._fanout(topics.NETWORK_UPDATE, "network_update", network=network)

    def network_delete(self, network_id: str) -> None:
        self._fanout(topics.NETWORK_DELETE, "network_delete", network_id=network_id)
