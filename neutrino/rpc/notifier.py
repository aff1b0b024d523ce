"""Fire-and-forget messages from plugin code (worker threads) to agents.

Plugins run in the API's worker threads; the bus lives on the server's event
loop, so each message is handed to that loop and not waited for. A message
that cannot be sent is only logged: agents resync periodically, so a lost
notification costs latency, never correctness.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Coroutine
from typing import Any

from neutrino.rpc.bus import Bus
from neutrino.rpc.client import RpcClient
from neutrino.rpc.errors import RpcError

LOG = logging.getLogger(__name__)
CONTEXT = {"request_id": None, "project_id": None, "is_admin": True}


def _logged(future: concurrent.futures.Future) -> None:
    error = future.exception()
    if error is not None:
        LOG.warning("an agent notification was not sent: %s", error)


class Notifier:
    def __init__(self, bus: Bus | None):
        self.bus = bus

    def _send(self, make: Any) -> None:
        if self.bus is None or self.bus.loop is None:
            return  # no bus running in this process: no agent can hear
        coro: Coroutine = make(self.bus)
        try:
            future = self.bus.submit(coro)
        except RpcError as error:
            LOG.warning("an agent notification was not sent: %s", error)
            return
        future.add_done_callback(_logged)

    def fanout(self, topic: str, method: str, **args: Any) -> None:
        """To every agent listening on ``topic``."""
        self._send(lambda bus: RpcClient(bus, topic).fanout(CONTEXT, method, **args))

    def cast(self, topic: str, host: str, method: str, **args: Any) -> None:
        """To the agent of ``topic`` on ``host``."""
        self._send(lambda bus: RpcClient(bus, topic).cast(CONTEXT, method, server=host, **args))
