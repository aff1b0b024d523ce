"""Message bus benchmark: RPC round trips and fanout reach, per transport.

    .venv/bin/python bench/rpc_bench.py [--transports memory,rabbit] [--calls 3000]
                                        [--rabbit rabbit://guest:guest@127.0.0.1:5672/]
                                        [--loop asyncio|uvloop]

For each transport, in one process and one event loop (caller and server
share the CPU with each other, and on RabbitMQ with the broker):

* ``call`` round trips to a coroutine endpoint on a host queue, one caller at a
  time and 16 callers at once: calls per second, and latency p50/p99;
* the time for one ``fanout`` to reach 100 servers listening on one topic
  (100 buses: on RabbitMQ 100 connections, as 100 agents would have), from the
  ``fanout()`` call until the last server has the message; median and worst of
  20 fanouts.

The in-process transport is the ceiling: what the bus itself costs (envelope,
futures, dispatch) without a broker.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from neutrino.rpc.bus import Bus
from neutrino.rpc.client import RpcClient
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport

CTX = {"request_id": "req-bench", "project_id": "bench"}


class Endpoint:
    rpc_version = "1.0"

    def __init__(self) -> None:
        self.heard: asyncio.Event | None = None

    async def echo(self, ctx, value):
        return value

    async def note(self, ctx, n):
        if self.heard is not None:
            self.heard.set()


def _url(kind: str, rabbit: str) -> str:
    return f"memory://bench-{uuid.uuid4().hex}" if kind == "memory" else rabbit


async def _bus(url: str) -> Bus:
    bus = Bus(get_transport(url), timeout=30)
    await bus.start()
    return bus


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def _calls(client: RpcClient, calls: int, concurrency: int) -> tuple[float, list[float]]:
    latencies: list[float] = []

    async def caller(n: int) -> None:
        for i in range(n):
            started = time.perf_counter()
            assert await client.call(CTX, "echo", server="h", value=i) == i
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(caller(calls // concurrency) for _ in range(concurrency)))
    return time.perf_counter() - started, latencies


async def bench_calls(kind: str, url: str, calls: int) -> None:
    topic = f"bench-{uuid.uuid4().hex}"
    server_bus, client_bus = await _bus(url), await _bus(url)
    await RpcServer(server_bus, topic, "h", [Endpoint()]).start()
    client = RpcClient(client_bus, topic)
    await _calls(client, 200, 4)  # warm up
    for concurrency in (1, 16):
        elapsed, latencies = await _calls(client, calls, concurrency)
        print(f"{kind:7} call  c={concurrency:<3} {len(latencies) / elapsed:9.0f} calls/s   "
              f"p50 {_percentile(latencies, 50) * 1e3:7.3f} ms   "
              f"p99 {_percentile(latencies, 99) * 1e3:7.3f} ms")
    await server_bus.close()
    await client_bus.close()


async def bench_fanout(kind: str, url: str, listeners: int = 100, rounds: int = 20) -> None:
    topic = f"bench-{uuid.uuid4().hex}"
    buses = [await _bus(url) for _ in range(listeners)]
    endpoints = [Endpoint() for _ in range(listeners)]
    for i, (bus, endpoint) in enumerate(zip(buses, endpoints, strict=True)):
        await RpcServer(bus, topic, f"h{i}", [endpoint]).start()
    client_bus = await _bus(url)
    client = RpcClient(client_bus, topic)
    times = []
    for n in range(rounds + 1):
        for endpoint in endpoints:
            endpoint.heard = asyncio.Event()
        started = time.perf_counter()
        await client.fanout(CTX, "note", n=n)
        await asyncio.wait_for(asyncio.gather(*(e.heard.wait() for e in endpoints)), 30)
        if n:  # the first one declares the exchange on the sender's side
            times.append(time.perf_counter() - started)
    print(f"{kind:7} fanout to {listeners} servers   median {statistics.median(times) * 1e3:7.2f}"
          f" ms   worst {max(times) * 1e3:7.2f} ms   ({rounds} fanouts)")
    for bus in [*buses, client_bus]:
        await bus.close()


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transports", default="memory,rabbit")
    parser.add_argument("--calls", type=int, default=3000, help="calls per measurement")
    parser.add_argument("--rabbit", default="rabbit://guest:guest@127.0.0.1:5672/")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio",
                        help="uvloop is what uvicorn runs the API workers on")
    return parser.parse_args()


async def bench(args: argparse.Namespace) -> None:
    print(f"event loop: {args.loop}")
    for kind in args.transports.split(","):
        url = _url(kind, args.rabbit)
        await bench_calls(kind, url, args.calls)
        await bench_fanout(kind, _url(kind, args.rabbit))


if __name__ == "__main__":
    arguments = _args()
    if arguments.loop == "uvloop":
        import uvloop

        uvloop.run(bench(arguments))
    else:
        asyncio.run(bench(arguments))
