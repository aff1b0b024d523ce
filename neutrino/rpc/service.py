"""RPC servers on a bus, started and stopped as one: what a process serves."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from neutrino.rpc.bus import Bus
from neutrino.rpc.server import RpcServer

LOG = logging.getLogger(__name__)


class RpcService:
    """Serves ``endpoints`` (topic -> endpoint objects) on ``bus``, as ``host``."""

    def __init__(self, bus: Bus, endpoints: Mapping[str, Sequence[Any]], host: str | None):
        self.bus = bus
        self.servers = [RpcServer(bus, topic, host, list(objects))
                        for topic, objects in endpoints.items() if objects]

    async def start(self) -> None:
        await self.bus.start()
        for server in self.servers:
            await server.start()
        LOG.info("serving RPC topics %s", ", ".join(s.topic for s in self.servers) or "none")

    async def stop(self) -> None:
        await self.bus.close()
