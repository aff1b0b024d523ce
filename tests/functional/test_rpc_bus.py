"""Bus semantics, the same on the in-process transport and on RabbitMQ."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from neutrino.rpc.bus import Bus
from neutrino.rpc.client import RpcClient
from neutrino.rpc.errors import MessagingTimeout, RemoteError, TransportError, UnsupportedVersion
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport

RABBIT = "rabbit://guest:guest@127.0.0.1:5672/"
CTX = {"request_id": "req-1", "project_id": "p1"}


class Echo:
    rpc_version = "1.2"

    def __init__(self, name: str):
        self.name = name
        self.seen: list[tuple[str, dict]] = []

    def echo(self, ctx, **kwargs):
        self.seen.append(("echo", kwargs))
        return {"by": self.name, "args": kwargs, "ctx": ctx}

    async def note(self, ctx, value):
        self.seen.append(("note", {"value": value}))

    def fail(self, ctx):
        raise ValueError("no good")

    async def slow(self, ctx, seconds):
        await asyncio.sleep(seconds)
        return "late"


def url_of(kind: str) -> str:
    # a memory bus of its own per test, so tests do not hear each other
    return f"memory://{uuid.uuid4().hex}" if kind == "memory" else RABBIT


@pytest.fixture(params=["memory", "rabbit"])
def url(request):
    return url_of(request.param)


async def _bus(url: str) -> Bus:
    bus = Bus(get_transport(url), timeout=5)
    await bus.start()
    return bus


async def _settle(check, seconds: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("not delivered in time")
        await asyncio.sleep(0.01)


def run(coro):
    return asyncio.run(coro)


def test_call_cast_and_host_queues(url):
    async def scenario():
        topic = f"t-{uuid.uuid4().hex}"
        server_bus, client_bus = await _bus(url), await _bus(url)
        a, b = Echo("a"), Echo("b")
        await RpcServer(server_bus, topic, "host-a", [a]).start()
        await RpcServer(server_bus, topic, "host-b", [b]).start()
        client = RpcClient(client_bus, topic, version="1.1")
        result = await client.call(CTX, "echo", server="host-b", x=1)
        assert result == {"by": "b", "args": {"x": 1}, "ctx": CTX}
        # calls to the topic go round to the listeners
        by = {(await client.call(CTX, "echo"))["by"] for _ in range(6)}
        assert by == {"a", "b"}
        await client.cast(CTX, "note", server="host-a", value=7)
        await _settle(lambda: ("note", {"value": 7}) in a.seen)
        assert ("note", {"value": 7}) not in b.seen
        await server_bus.close()
        await client_bus.close()

    run(scenario())


def test_fanout_reaches_every_listener(url):
    async def scenario():
        topic = f"t-{uuid.uuid4().hex}"
        buses = [await _bus(url) for _ in range(3)]
        endpoints = [Echo(str(i)) for i in range(3)]
        for i, (bus, endpoint) in enumerate(zip(buses, endpoints, strict=True)):
            await RpcServer(bus, topic, f"h{i}", [endpoint]).start()
        await RpcClient(buses[0], topic, "1.0").fanout(CTX, "note", value="all")
        await _settle(lambda: all(("note", {"value": "all"}) in e.seen for e in endpoints))
        for bus in buses:
            await bus.close()

    run(scenario())


def test_errors_timeout_and_versions(url):
    async def scenario():
        topic = f"t-{uuid.uuid4().hex}"
        bus = await _bus(url)
        await RpcServer(bus, topic, "h", [Echo("a")]).start()
        client = RpcClient(bus, topic, "1.2")
        with pytest.raises(RemoteError) as raised:
            await client.call(CTX, "fail")
        assert (raised.value.type, raised.value.message) == ("ValueError", "no good")
        with pytest.raises(RemoteError) as raised:
            await client.call(CTX, "no_such_method")
        assert raised.value.type == "NoSuchMethod"
        with pytest.raises(UnsupportedVersion):
            await client.call(CTX, "echo", version="1.3")
        with pytest.raises(UnsupportedVersion):
            await client.call(CTX, "echo", version="2.0")
        with pytest.raises(MessagingTimeout):
            await client.call(CTX, "slow", seconds=2, timeout=0.3)
        # a call to a queue nobody declared: the broker returns it, and the call
        # fails at once; in memory the queue waits for a listener, until the timeout
        expected = MessagingTimeout if url.startswith("memory") else TransportError
        with pytest.raises(expected, match="no reply|no such queue"):
            await RpcClient(bus, f"nobody-{uuid.uuid4().hex}").call(CTX, "echo", timeout=0.3)
        await bus.close()

    run(scenario())


def test_messages_wait_for_a_listener(url):
    async def scenario():
        topic = f"t-{uuid.uuid4().hex}"
        bus = await _bus(url)
        client = RpcClient(bus, topic, "1.0")
        late = Echo("late")
        server = RpcServer(bus, topic, "h", [late])
        await server.start()  # declare the queues, as a server that ran before would
        call = asyncio.ensure_future(client.call(CTX, "echo", server="h", n=1, timeout=5))
        assert (await call)["by"] == "late"
        await bus.close()

    run(scenario())
