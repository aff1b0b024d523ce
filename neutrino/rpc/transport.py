"""The transports' contract, and the one chosen by ``transport_url``.

A transport moves opaque bodies between named queues, RabbitMQ's way:

- ``topic``: one shared queue per topic; each message goes to one listener.
- ``topic.host``: one queue per listening host, for messages to that host.
- the topic's fanout: every listener of the topic gets each message.
- a reply queue per process, for the answers to its calls.

Queues outlive their listeners (a restarting server finds its messages);
fanout and reply queues do not.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

Deliver = Callable[[bytes], Coroutine[Any, Any, None]]


class Transport(ABC):
    def __init__(self) -> None:
        self._lost_callbacks: list[Callable[[Exception], None]] = []

    @abstractmethod
    async def connect(self) -> None:
        """Connect (or do nothing if connected); reconnecting is the transport's job."""

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def probe(self) -> None:
        """Reach the broker once and leave: a start-up check (a broker that is
        down or refuses the login is one ``TransportError`` line before any
        work, not a connection that keeps trying)."""

    @abstractmethod
    async def listen(self, topic: str, host: str | None, deliver: Deliver) -> None:
        """Consume ``topic``, ``topic.host`` (when given) and the topic's fanout."""

    @abstractmethod
    async def send(self, queue: str, body: bytes, *, routed: bool = False) -> None:
        """Put ``body`` on ``queue`` (a topic, ``topic.host`` or a reply queue).

        ``routed``: fail at once when the broker has no such queue (a call made
        while a restarted broker waits for its listeners to come back), rather
        than drop the message and leave the caller waiting for its timeout.
        """

    @abstractmethod
    async def fanout(self, topic: str, body: bytes) -> None:
        """Give ``body`` to every listener of ``topic``."""

    @abstractmethod
    async def reply_queue(self, deliver: Deliver) -> str:
        """This process's reply queue (made on first use), consumed by ``deliver``."""

    def on_connection_lost(self, callback: Callable[[Exception], None]) -> None:
        """``callback`` runs whenever the connection drops (calls in flight fail)."""
        self._lost_callbacks.append(callback)

    def _connection_lost(self, error: Exception) -> None:
        for callback in self._lost_callbacks:
            callback(error)


class TransportURLError(ValueError):
    pass


def get_transport(url: str) -> Transport:
    """``memory://`` or ``rabbit://user:pass@host:port/vhost``."""
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        from neutrino.rpc.memory import MemoryTransport

        return MemoryTransport.named(urlsplit(url).netloc or "default")
    if scheme in ("rabbit", "amqp"):
        from neutrino.rpc.rabbit import RabbitTransport

        return RabbitTransport(url)
    raise TransportURLError(f"transport_url {url!r}: use memory:// or "
                            "rabbit://user:password@host:port/vhost")
