"""The RabbitMQ transport (``rabbit://`` or ``amqp://user:password@host:port/vhost``).

The broker layout, with a topic ``t`` and a host ``h``:

- queue ``t``, shared by every listener of the topic (the broker hands each
  message to one of them, round robin), and queue ``t.h``. Both are
  non-durable and not auto-delete: they outlive their listeners, so a
  restarting server finds what was sent while it was away (a broker restart
  loses them; the listeners declare them again when they reconnect).
- every queue is reached through the default exchange by its name: ``send``
  needs no bindings, and there are none to restore after a reconnection.
  A message for a queue that nobody has declared is dropped (a call then
  times out).
- fanout exchange ``t_fanout``, and per listener an exclusive auto-delete
  queue ``t_fanout_<uuid>`` bound to it.
- per ``reply_queue()`` call an exclusive auto-delete queue ``reply_<uuid>``.
  Queues are named here, not by the broker, so that the same names can be
  declared again after a broker restart (the broker refuses ``amq.*`` names).

Messages from the topic and host queues are acknowledged after ``deliver``
returns, or raises (a failure is logged and the message is dropped, never
redelivered): delivery is at least once, so a listener that dies or loses its
connection mid-way leaves the message to another, and a listener has at most
``prefetch`` messages in hand, so a busy server does not hoard the topic's
work. Fanout and reply queues are exclusive, nobody else could take their
messages, so they are consumed without acknowledgements.

aio-pika's robust connection reconnects by itself (every ``reconnect_interval``
seconds, 1 unless the URL's query says otherwise) and declares the queues,
exchanges, bindings and consumers again. When the connection drops,
``on_connection_lost`` callbacks run at once, so the bus fails the calls in
flight. While it is down, ``send`` and ``fanout`` fail at once with
``TransportError``: they never wait for the broker to come back (the caller
retries if it wants, as it must for a call that the drop failed). ``send``
returns once the broker has confirmed the message (publisher confirms); one
it does not confirm within ``send_timeout`` seconds fails too, and so does a
declaration (``listen``, ``reply_queue``). A broker that vanishes without
closing the connection is noticed by the AMQP heartbeat (after a few missed
beats; 60 s apart unless the URL's ``heartbeat`` says otherwise); until then
calls wait for their own timeout.

A malformed URL is a ``TransportURLError`` from the constructor (so from
``get_transport``, as an unknown scheme is: a configuration error); failing to
reach or log in to the broker is a one-line ``TransportError`` from
``connect``. Passwords are masked in every message.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import socket
import uuid
from collections.abc import Awaitable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

import aio_pika
from aio_pika.abc import (
    AbstractConnection,
    AbstractExchange,
    AbstractIncomingMessage,
    AbstractRobustChannel,
    AbstractRobustConnection,
)
from aio_pika.exceptions import CONNECTION_EXCEPTIONS, PublishError
from yarl import URL

from neutrino.rpc.errors import TransportError
from neutrino.rpc.transport import Deliver, Transport, TransportURLError

LOG = logging.getLogger(__name__)
T = TypeVar("T")

# what aio-pika and aiormq raise when the broker or the connection fails
_FAILURES = (*CONNECTION_EXCEPTIONS, TimeoutError)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class RabbitTransport(Transport):
    def __init__(self, url: str, *, connect_timeout: float = 5.0, send_timeout: float = 5.0,
                 prefetch: int = 64):
        super().__init__()
        self.url = url
        self._amqp_url = _amqp_url(url)
        self.connect_timeout = connect_timeout
        self.send_timeout = send_timeout
        self.prefetch = prefetch
        self._connection: AbstractRobustConnection | None = None
        self._publisher: AbstractRobustChannel | None = None
        self._consumer: AbstractRobustChannel | None = None
        self._fanouts: dict[str, AbstractExchange] = {}
        self._connecting = asyncio.Lock()
        self._down = False  # lost the connection, not yet back

    def __repr__(self) -> str:
        return f"<RabbitTransport {_masked(self.url)}>"

    # --- connection ----------------------------------------------------------------------

    async def connect(self) -> None:
        async with self._connecting:
            if self._connection is not None:
                return
            url = self._amqp_url
            where = _masked(self.url)
            kwargs: dict[str, Any] = (
                {} if "reconnect_interval" in _url_query(url) else {"reconnect_interval": 1})
            connection = aio_pika.RobustConnection(URL(url), **kwargs)
            try:
                async with asyncio.timeout(self.connect_timeout):  # see _bounded
                    await connection.connect(timeout=self.connect_timeout)
            except _FAILURES as error:
                await connection.close()  # stops its reconnecting
                raise TransportError(f"cannot connect to {where}: "
                                     f"{_connect_failure(error, url)}") from None
            try:
                publisher = await connection.channel(publisher_confirms=True,
                                                     on_return_raises=True)
                consumer = await connection.channel(publisher_confirms=False)
                await consumer.set_qos(prefetch_count=self.prefetch)
            except _FAILURES as error:
                await connection.close()
                raise TransportError(f"cannot open channels on {where}: "
                                     f"{_one_line(error)}") from None
            connection.close_callbacks.add(self._on_close)
            connection.reconnect_callbacks.add(self._on_reconnect)
            self._connection, self._publisher, self._consumer = connection, publisher, consumer
            self._down = False
            LOG.info("connected to %s", where)

    async def probe(self) -> None:
        """The broker's port answers (a bare TCP connection: aiormq would log a
        refused one at ERROR besides), then a plain AMQP connection (not robust:
        no reconnecting) logs in and closes; within ``connect_timeout``."""
        where = _masked(self.url)
        parts = urlsplit(self._amqp_url)
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, writer = await asyncio.open_connection(parts.hostname, parts.port or 5672)
                writer.close()
                await writer.wait_closed()
                connection = await aio_pika.connect(URL(self._amqp_url),
                                                    timeout=self.connect_timeout)
                await connection.close()
        except TimeoutError:
            raise TransportError(f"cannot connect to {where}: no answer within "
                                 f"{self.connect_timeout:g} s") from None
        except OSError as error:  # refused, unreachable, no such host
            reason = (error.strerror if isinstance(error, socket.gaierror) or not error.errno
                      else os.strerror(error.errno))
            raise TransportError(f"cannot connect to {where}: "
                                 f"{reason or _one_line(error)}") from None
        except _FAILURES as error:
            raise TransportError(f"cannot connect to {where}: "
                                 f"{_connect_failure(error, self._amqp_url)}") from None

    async def close(self) -> None:
        async with self._connecting:
            connection, self._connection = self._connection, None
            self._publisher = self._consumer = None
            self._fanouts.clear()
            if connection is not None:
                # deliveries in progress are cancelled; the broker gives their
                # unacknowledged messages to the topic's other listeners
                await connection.close()

    def _on_close(self, connection: AbstractConnection | None,
                  error: BaseException | None) -> None:
        if connection is not self._connection:
            return  # our own close()
        # this runs again for every failed attempt to reconnect: say it once,
        # but fail the calls every time (one may have started in between)
        reason = _one_line(error) if error is not None else "closed"
        if not self._down:
            LOG.warning("lost the connection to %s (%s); reconnecting", _masked(self.url),
                        reason)
        self._down = True
        self._connection_lost(error if isinstance(error, Exception) else TransportError(reason))

    def _on_reconnect(self, connection: AbstractRobustConnection | None) -> None:
        if connection is self._connection:
            self._down = False
            LOG.info("reconnected to %s", _masked(self.url))

    def _channels(self) -> tuple[AbstractRobustChannel, AbstractRobustChannel]:
        connection = self._connection
        if connection is None or self._publisher is None or self._consumer is None:
            raise TransportError(f"not connected to {_masked(self.url)}")
        if not connection.connected.is_set():
            raise TransportError(f"not connected to {_masked(self.url)}: the connection "
                                 "was lost and is being re-established")
        return self._publisher, self._consumer

    # --- listening -----------------------------------------------------------------------

    async def listen(self, topic: str, host: str | None, deliver: Deliver) -> None:
        _, channel = self._channels()
        on_message = functools.partial(self._on_message, deliver)

        async def declare() -> None:
            for name in (topic, f"{topic}.{host}") if host is not None else (topic,):
                queue = await channel.declare_queue(name, durable=False, auto_delete=False)
                await queue.consume(on_message)
            exchange = await self._fanout_exchange(channel, topic)
            queue = await channel.declare_queue(f"{topic}_fanout_{uuid.uuid4().hex}",
                                                exclusive=True, auto_delete=True)
            await queue.bind(exchange)
            await queue.consume(on_message, no_ack=True)

        await self._bounded(declare(), f"cannot listen on {topic}")

    async def reply_queue(self, deliver: Deliver) -> str:
        _, channel = self._channels()
        name = f"reply_{uuid.uuid4().hex}"

        async def declare() -> None:
            queue = await channel.declare_queue(name, exclusive=True, auto_delete=True)
            await queue.consume(functools.partial(self._on_message, deliver), no_ack=True)

        await self._bounded(declare(), "cannot make a reply queue")
        return name

    @staticmethod
    async def _on_message(deliver: Deliver, message: AbstractIncomingMessage) -> None:
        try:
            await deliver(message.body)
        except TransportError as error:  # the broker went away: its caller will retry
            LOG.warning("a message from %s is dropped: %s", message.routing_key, error)
        except Exception:
            LOG.exception("a message from %s failed; it is dropped", message.routing_key)
        # not reached when the delivery is cancelled (close): the broker keeps the message
        if not message.processed:  # no_ack messages count as processed
            try:
                await message.ack()
            except Exception as error:  # the channel went away with the connection
                LOG.debug("could not acknowledge a message from %s: %s",
                          message.routing_key, error)

    # --- sending -------------------------------------------------------------------------

    async def send(self, queue: str, body: bytes, *, routed: bool = False) -> None:
        publisher, _ = self._channels()
        await self._publish(publisher.default_exchange, queue, body, mandatory=routed)

    async def fanout(self, topic: str, body: bytes) -> None:
        publisher, _ = self._channels()
        exchange = self._fanouts.get(topic)
        if exchange is None:
            exchange = await self._bounded(self._fanout_exchange(publisher, topic),
                                           f"cannot fan out on {topic}")
            self._fanouts[topic] = exchange
        await self._publish(exchange, "", body)

    @staticmethod
    async def _fanout_exchange(channel: AbstractRobustChannel, topic: str) -> AbstractExchange:
        # not auto-delete: a sender may hold it while its last listener goes
        return await channel.declare_exchange(f"{topic}_fanout", aio_pika.ExchangeType.FANOUT,
                                              durable=False, auto_delete=False)

    async def _publish(self, exchange: AbstractExchange, routing_key: str, body: bytes,
                       mandatory: bool = False) -> None:
        message = aio_pika.Message(body, content_type="application/json",
                                   delivery_mode=aio_pika.DeliveryMode.NOT_PERSISTENT)
        where = routing_key or exchange.name

        async def publish() -> None:
            try:
                await exchange.publish(message, routing_key, mandatory=mandatory)
            except PublishError:  # returned: no queue of that name (yet)
                raise TransportError(f"cannot send to {where}: no such queue on the "
                                     "broker; is anyone listening?") from None

        await self._bounded(publish(), f"cannot send to {where}")

    async def _bounded(self, work: Awaitable[T], failed: str) -> T:
        """``work`` within ``send_timeout``; a broker failure is a TransportError.

        Robust channels wait for the connection to come back: never for long here.
        A timeout scope, not ``wait_for``: on Python 3.11 that loses a cancellation
        that comes as ``work`` finishes, and the cancelled caller (an agent's
        heartbeat, say) runs on.
        """
        try:
            async with asyncio.timeout(self.send_timeout):
                return await work
        except TimeoutError:
            raise TransportError(f"{failed}: no answer from the broker within "
                                 f"{self.send_timeout:g}s") from None
        except _FAILURES as error:
            raise TransportError(f"{failed}: {_one_line(error)}") from None


def _connect_failure(error: BaseException, url: str) -> str:
    if "Connection.OpenOk" in str(error):  # the broker closed instead of opening the vhost
        vhost = unquote(urlsplit(url).path[1:]) or "/"
        return f"the broker refused vhost {vhost!r} (is it there, may this user use it?)"
    return _one_line(error)


def _url_query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


def _amqp_url(url: str) -> str:
    """``rabbit://`` as aio-pika's ``amqp://``; a bad one is a configuration error."""
    parts = urlsplit(url)
    if parts.scheme not in ("rabbit", "amqp"):
        raise TransportURLError(f"transport_url {_masked(url)}: not a rabbit:// URL")
    if "," in parts.netloc:
        raise TransportURLError(f"transport_url {_masked(url)}: one broker per URL is supported")
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError as error:
        raise TransportURLError(f"transport_url {_masked(url)}: {error}") from None
    if not parts.hostname:
        raise TransportURLError(f"transport_url {_masked(url)}: no broker host")
    return urlunsplit(("amqp", *parts[1:]))


def _masked(url: str) -> str:
    """The URL without its passwords, for messages and logs."""
    return re.sub(r"([/,][^:@/,]*):[^@/,]*@", r"\1:***@", url)
