"""The caller's side of one RPC API: a topic, a version, a namespace.

Each message is counted by kind, topic and method (``neutrino.metrics``);
the host a message goes to is not a label (hosts are unbounded)."""

from __future__ import annotations

from typing import Any

from neutrino import metrics
from neutrino.rpc import envelope
from neutrino.rpc.bus import Bus
from neutrino.rpc.errors import MessagingTimeout


class RpcClient:
    """``call`` waits for the answer; ``cast`` does not; ``fanout`` reaches every
    listener of the topic. ``server`` sends to one host's queue (not ``host``:
    many RPC APIs have an argument of that name)."""

    def __init__(self, bus: Bus, topic: str, version: str = "1.0",
                 namespace: str | None = None):
        self.bus = bus
        self.topic = topic
        self.version = version
        self.namespace = namespace

    def _request(self, ctx: dict[str, Any], method: str, version: str | None,
                 args: dict[str, Any]) -> envelope.Request:
        return envelope.Request(method=method, version=version or self.version, args=args,
                                context=ctx, namespace=self.namespace)

    def _queue(self, server: str | None) -> str:
        return self.topic if server is None else f"{self.topic}.{server}"

    async def call(self, ctx: dict[str, Any], method: str, *, server: str | None = None,
                   timeout: float | None = None, version: str | None = None,
                   **args: Any) -> Any:
        with metrics.rpc_message("call", self.topic, method, (MessagingTimeout,)):
            return await self.bus.call(self._queue(server),
                                       self._request(ctx, method, version, args), timeout)

    async def cast(self, ctx: dict[str, Any], method: str, *, server: str | None = None,
                   version: str | None = None, **args: Any) -> None:
        request = self._request(ctx, method, version, args)
        with metrics.rpc_message("cast", self.topic, method):
            await self.bus.transport.send(self._queue(server), envelope.encode(request))

    async def fanout(self, ctx: dict[str, Any], method: str, *, version: str | None = None,
                     **args: Any) -> None:
        request = self._request(ctx, method, version, args)
        with metrics.rpc_message("fanout", self.topic, method):
            await self.bus.transport.fanout(self.topic, envelope.encode(request))
