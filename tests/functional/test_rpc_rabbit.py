"""What only the RabbitMQ transport has: connection errors, acknowledgements, and
surviving a broker restart.

The restart test restarts a RabbitMQ node of its own (``rabbit_node``: started
in a temp dir, on free ports, and always stopped), never the shared one on
5672 that the other tests, in other xdist workers, are using at the same time.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from neutrino.rpc.bus import Bus
from neutrino.rpc.client import RpcClient
from neutrino.rpc.errors import MessagingTimeout, TransportError
from neutrino.rpc.rabbit import RabbitTransport
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import TransportURLError, get_transport
from tests.functional.rabbit_node import PrivateRabbit, private_node
from tests.functional.test_rpc_bus import CTX, RABBIT, Echo, _settle
from tests.harness import free_port


def run(coro):
    return asyncio.run(coro)


async def _bus(url: str) -> Bus:
    bus = Bus(get_transport(url), timeout=5)
    await bus.start()
    return bus


# --- connecting ----------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "says"), [
    ("rabbit://guest:secret@127.0.0.1:port/", "Port could not be cast"),
    ("rabbit://guest:secret@h1:5672,guest:secret@h2:5672/", "one broker per URL"),
    ("rabbit://guest:secret@:5672/", "no broker host"),
])
def test_a_bad_url_is_a_configuration_error(url, says):
    # as for an unknown scheme: the commands report it as a configuration error
    with pytest.raises(TransportURLError) as raised:
        get_transport(url)
    assert says in str(raised.value)
    assert "secret" not in str(raised.value)


@pytest.mark.parametrize(("url", "says"), [
    ("rabbit://guest:secret@127.0.0.1:{free_port}/", "Connect call failed"),
    ("rabbit://guest:secret@127.0.0.1:5672/", "ACCESS_REFUSED"),
    ("amqp://guest:guest@127.0.0.1:5672/no-such-vhost", "refused vhost 'no-such-vhost'"),
])
def test_connect_errors_are_one_line(url, says):
    async def scenario():
        transport = get_transport(url.format(free_port=free_port()))
        started = time.monotonic()
        with pytest.raises(TransportError) as raised:
            await transport.connect()
        message = str(raised.value)
        assert message.startswith("cannot connect to ") and says in message
        assert "\n" not in message and "secret" not in message
        assert time.monotonic() - started < 3
        with pytest.raises(TransportError, match="not connected"):
            await transport.send("anything", b"{}")

    run(scenario())


def test_connect_is_idempotent_and_close_is_final():
    async def scenario():
        transport = RabbitTransport(RABBIT)
        await transport.connect()
        connection = transport._connection
        await transport.connect()
        assert transport._connection is connection
        await transport.close()
        await transport.close()
        with pytest.raises(TransportError, match="not connected"):
            await transport.send("anything", b"{}")
        await transport.connect()  # a closed transport can connect again
        await transport.send(f"nobody-{uuid.uuid4().hex}", b"{}")
        await transport.close()

    run(scenario())


# --- acknowledgements ---------------------------------------------------------------------


def test_a_failing_delivery_is_dropped_not_redelivered():
    async def scenario():
        topic = f"t-{uuid.uuid4().hex}"
        transport = RabbitTransport(RABBIT)
        await transport.connect()
        seen: list[bytes] = []

        async def deliver(body: bytes) -> None:
            seen.append(body)
            raise RuntimeError("endpoint blew up")

        await transport.listen(topic, "h", deliver)
        await transport.send(topic, b'"one"')
        await transport.send(f"{topic}.h", b'"two"')
        await _settle(lambda: len(seen) == 2)
        await asyncio.sleep(0.3)
        assert sorted(seen) == [b'"one"', b'"two"']
        await transport.close()

    run(scenario())


def test_an_unfinished_message_goes_to_another_listener():
    """Acknowledged after delivery: a listener that goes mid-way leaves its message."""
    async def scenario():
        topic = f"t-{uuid.uuid4().hex}"
        first, second = RabbitTransport(RABBIT), RabbitTransport(RABBIT)
        await first.connect()
        await second.connect()
        started, got = asyncio.Event(), []

        async def stuck(body: bytes) -> None:
            started.set()
            await asyncio.sleep(60)

        async def quick(body: bytes) -> None:
            got.append(body)

        await first.listen(topic, None, stuck)
        await first.send(topic, b'"work"')
        await asyncio.wait_for(started.wait(), 5)
        await second.listen(topic, None, quick)
        await first.close()
        await _settle(lambda: got == [b'"work"'])
        await second.close()

    run(scenario())


def test_each_reply_queue_is_its_own():
    async def scenario():
        transport = RabbitTransport(RABBIT)
        await transport.connect()
        got: dict[str, list[bytes]] = {"a": [], "b": []}

        def collector(key):
            async def deliver(body: bytes) -> None:
                got[key].append(body)
            return deliver

        a = await transport.reply_queue(collector("a"))
        b = await transport.reply_queue(collector("b"))
        assert a != b
        await transport.send(a, b"1")
        await transport.send(b, b"2")
        await _settle(lambda: got == {"a": [b"1"], "b": [b"2"]})
        await transport.close()

    run(scenario())


# --- a broker restart ---------------------------------------------------------------------


@pytest.fixture
def private_rabbit():
    with private_node() as node:
        yield node


async def _ctl(node: PrivateRabbit, *args: str) -> None:
    process = await asyncio.create_subprocess_exec(
        *node.ctl(*args), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    _, err = await process.communicate()
    assert process.returncode == 0, err.decode()


class Slow(Echo):
    def __init__(self, name: str):
        super().__init__(name)
        self.started = asyncio.Event()

    async def hang(self, ctx):
        self.started.set()
        await asyncio.sleep(60)


async def _until_answered(client: RpcClient, host: str, seconds: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        try:
            await client.call(CTX, "echo", server=host, timeout=0.5)
            return
        except (TransportError, MessagingTimeout):
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.1)


@pytest.mark.slow
def test_a_broker_restart_fails_calls_in_flight_then_everything_works_again(private_rabbit):
    async def scenario():
        url = private_rabbit.url
        topic = f"t-{uuid.uuid4().hex}"
        bus_a, bus_b, client_bus = await _bus(url), await _bus(url), await _bus(url)
        leaving = await _bus(url)
        a, b = Slow("a"), Slow("b")
        await RpcServer(bus_a, topic, "host-a", [a]).start()
        await RpcServer(bus_b, topic, "host-b", [b]).start()
        client = RpcClient(client_bus, topic, "1.0")
        assert (await client.call(CTX, "echo", server="host-a"))["by"] == "a"
        await client.fanout(CTX, "note", value="before")  # the sender knows the exchange
        await _settle(lambda: all(("note", {"value": "before"}) in e.seen for e in (a, b)))

        in_flight = asyncio.ensure_future(client.call(CTX, "hang", server="host-a", timeout=60))
        await asyncio.wait_for(a.started.wait(), 5)
        await _ctl(private_rabbit, "stop_app")
        stopped = asyncio.get_running_loop().time()
        with pytest.raises(TransportError, match="connection lost"):
            await asyncio.wait_for(in_flight, 5)
        assert asyncio.get_running_loop().time() - stopped < 2

        # while the broker is away, sends fail at once rather than wait
        started = asyncio.get_running_loop().time()
        with pytest.raises(TransportError, match="not connected"):
            await client.cast(CTX, "note", server="host-a", value="lost")
        with pytest.raises(TransportError):
            await client.call(CTX, "echo", server="host-a")
        with pytest.raises(TransportError):
            await client.fanout(CTX, "note", value="lost")
        assert asyncio.get_running_loop().time() - started < 1
        # and a bus closes without waiting for the broker either. Not cancelled on a
        # deadline: aio_pika's reconnect loop outlives a close cut short, and the
        # test would then hang in asyncio.run's clean-up; a close may wait out one
        # reconnect attempt in progress (a second here), more on a loaded machine.
        started = asyncio.get_running_loop().time()
        await leaving.close()
        assert asyncio.get_running_loop().time() - started < 5

        await _ctl(private_rabbit, "start_app")
        # nothing is made again: the same buses, servers and reply queues
        await _until_answered(client, "host-a")
        await _until_answered(client, "host-b")
        assert (await client.call(CTX, "echo", server="host-b", n=2))["by"] == "b"
        by = {(await client.call(CTX, "echo"))["by"] for _ in range(8)}
        assert by == {"a", "b"}
        await client.cast(CTX, "note", server="host-b", value="cast")
        await _settle(lambda: ("note", {"value": "cast"}) in b.seen)
        assert ("note", {"value": "cast"}) not in a.seen
        await client.fanout(CTX, "note", value="after")
        await _settle(lambda: all(("note", {"value": "after"}) in e.seen for e in (a, b)))
        # the servers answer calls too: their own publishers came back
        server_client = RpcClient(bus_a, topic, "1.0")
        assert (await server_client.call(CTX, "echo", server="host-b"))["by"] == "b"
        assert ("note", {"value": "lost"}) not in a.seen + b.seen
        for bus in (bus_a, bus_b, client_bus):
            await bus.close()

    run(scenario())
