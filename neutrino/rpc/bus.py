"""A process's end of the bus: calls waiting for replies, clients, servers.

Callers are coroutines on the bus's event loop; code running in threads (the
plugins) uses ``Bus.submit`` to hand a coroutine to that loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from collections.abc import Coroutine
from typing import Any

from neutrino.rpc import envelope
from neutrino.rpc.errors import MessagingTimeout, RemoteError, TransportError, UnsupportedVersion
from neutrino.rpc.transport import Transport

_ERRORS = {"UnsupportedVersion": UnsupportedVersion}


class Bus:
    def __init__(self, transport: Transport, timeout: float = 60.0):
        self.transport = transport
        self.timeout = timeout
        self.loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[str, asyncio.Future] = {}
        self._reply_to: str | None = None
        transport.on_connection_lost(self._fail_pending)

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        await self.transport.connect()
        self._reply_to = await self.transport.reply_queue(self._on_reply)

    async def close(self) -> None:
        self._fail_pending(TransportError("the bus was closed"))
        await self.transport.close()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        """Run ``coro`` on the bus's loop from another thread."""
        if self.loop is None:
            coro.close()
            raise TransportError("the bus is not started")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    # --- calls ---------------------------------------------------------------------------

    async def call(self, queue: str, request: envelope.Request, timeout: float | None) -> Any:
        if self._reply_to is None:
            raise TransportError("the bus is not started")
        request.msg_id = uuid.uuid4().hex
        request.reply_to = self._reply_to
        waiter = asyncio.get_running_loop().create_future()
        self._pending[request.msg_id] = waiter
        try:
            await self.transport.send(queue, envelope.encode(request), routed=True)
            wait = self.timeout if timeout is None else timeout
            try:
                # not wait_for: on Python 3.11 it returns a reply that lands as the
                # caller is cancelled and loses the cancellation (a heartbeat loop
                # then never stops); a timeout scope keeps it
                async with asyncio.timeout(wait):
                    reply: envelope.Reply = await waiter
            except TimeoutError:
                raise MessagingTimeout(
                    f"no reply to {request.method} on {queue} within {wait:g}s") from None
        finally:
            self._pending.pop(request.msg_id, None)
        if reply.error is not None:
            kind = _ERRORS.get(reply.error["type"])
            if kind is not None:
                raise kind(reply.error["message"])
            raise RemoteError(reply.error["type"], reply.error["message"])
        return reply.result

    async def _on_reply(self, body: bytes) -> None:
        reply = envelope.decode(body)
        waiter = self._pending.get(getattr(reply, "msg_id", None) or "")
        if waiter is not None and not waiter.done():
            waiter.set_result(reply)

    def _fail_pending(self, error: Exception) -> None:
        for waiter in list(self._pending.values()):
            if not waiter.done():
                waiter.get_loop().call_soon_threadsafe(
                    _fail, waiter, TransportError(f"connection lost: {error}"))


def _fail(waiter: asyncio.Future, error: Exception) -> None:
    if not waiter.done():
        waiter.set_exception(error)
