"""The listening side: requests on a topic dispatched to endpoint objects.

An endpoint declares the API it serves (``rpc_version = "1.3"``, optionally
``rpc_namespace``); its public methods are the RPC methods and take the
caller's context dict first, then keyword arguments. A request for version
X.Y is served by an endpoint of the same namespace and major version with a
minor version of at least Y. Plain methods run in a thread pool (they may
touch the database); coroutines run on the loop.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Sequence
from typing import Any

from neutrino.rpc import envelope
from neutrino.rpc.bus import Bus
from neutrino.rpc.errors import UnsupportedVersion

LOG = logging.getLogger(__name__)


def _compatible(served: str, wanted: str) -> bool:
    s_major, _, s_minor = served.partition(".")
    w_major, _, w_minor = wanted.partition(".")
    return s_major == w_major and int(s_minor or 0) >= int(w_minor or 0)


class NoSuchMethod(Exception):
    pass


class RpcServer:
    def __init__(self, bus: Bus, topic: str, host: str | None, endpoints: Sequence[Any]):
        self.bus = bus
        self.topic = topic
        self.host = host
        self.endpoints = list(endpoints)

    async def start(self) -> None:
        await self.bus.transport.listen(self.topic, self.host, self._deliver)

    def _find(self, request: envelope.Request) -> Any:
        known = False
        for endpoint in self.endpoints:
            if getattr(endpoint, "rpc_namespace", None) != request.namespace:
                continue
            method = getattr(endpoint, request.method, None)
            if method is None or request.method.startswith("_"):
                continue
            known = True
            if _compatible(getattr(endpoint, "rpc_version", "1.0"), request.version):
                return method
        if known:
            raise UnsupportedVersion(f"{request.method} at version {request.version} is not "
                                     f"served on {self.topic}")
        raise NoSuchMethod(f"{request.method} is not served on {self.topic}")

    async def _deliver(self, body: bytes) -> None:
        try:
            request = envelope.decode(body)
        except ValueError as error:
            LOG.warning("dropped a message on %s: %s", self.topic, error)
            return
        if not isinstance(request, envelope.Request):
            return
        reply = envelope.Reply(msg_id=request.msg_id or "")
        try:
            method = self._find(request)
            if inspect.iscoroutinefunction(method):
                reply.result = await method(request.context, **request.args)
            else:
                reply.result = await asyncio.get_running_loop().run_in_executor(
                    None, functools.partial(method, request.context, **request.args))
        except Exception as error:  # every failure goes back to the caller
            if request.reply_to is None:
                LOG.exception("%s on %s failed", request.method, self.topic)
            reply.error = {"type": type(error).__name__, "message": str(error)}
        if request.reply_to is not None:
            await self.bus.transport.send(request.reply_to, envelope.encode(reply))
