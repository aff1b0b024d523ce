"""The in-process transport (``memory://``): the all-in-one server and tests.

Queues behave as the RabbitMQ transport's do (shared topic queues handed out
round-robin, a queue per host, fanout to every listener, messages kept for a
queue until someone listens), and bodies are bytes, so code that works here
sees the same messages on RabbitMQ. Everything runs on the event loop of the
process; ``named`` gives every ``memory://<name>`` user of a process one bus.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections import defaultdict, deque
from typing import ClassVar

from neutrino.rpc.transport import Deliver, Transport


class _Queue:
    def __init__(self) -> None:
        self.listeners: list[Deliver] = []
        self.waiting: deque[bytes] = deque()
        self.turn = itertools.count()

    def put(self, body: bytes) -> None:
        if not self.listeners:
            self.waiting.append(body)
            return
        deliver = self.listeners[next(self.turn) % len(self.listeners)]
        asyncio.get_running_loop().create_task(deliver(body))

    def add(self, deliver: Deliver) -> None:
        self.listeners.append(deliver)
        while self.waiting:
            self.put(self.waiting.popleft())


class MemoryTransport(Transport):
    _buses: ClassVar[dict[str, MemoryTransport]] = {}

    def __init__(self) -> None:
        super().__init__()
        self.queues: dict[str, _Queue] = defaultdict(_Queue)
        self.fanouts: dict[str, list[Deliver]] = defaultdict(list)

    @classmethod
    def named(cls, name: str) -> MemoryTransport:
        """One bus per name in a process, shared by server and agents."""
        if name not in cls._buses:
            cls._buses[name] = cls()
        return cls._buses[name]

    async def connect(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def probe(self) -> None:
        pass  # in this process: nothing to reach

    async def listen(self, topic: str, host: str | None, deliver: Deliver) -> None:
        self.queues[topic].add(deliver)
        if host is not None:
            self.queues[f"{topic}.{host}"].add(deliver)
        self.fanouts[topic].append(deliver)

    async def send(self, queue: str, body: bytes, *, routed: bool = False) -> None:
        self.queues[queue].put(body)  # a queue is never lost here: it waits for listeners

    async def fanout(self, topic: str, body: bytes) -> None:
        loop = asyncio.get_running_loop()
        for deliver in list(self.fanouts[topic]):
            loop.create_task(deliver(body))

    async def reply_queue(self, deliver: Deliver) -> str:
        """A new queue per caller: server and agents share this bus in one process."""
        name = f"reply_{uuid.uuid4().hex}"
        self.queues[name].add(deliver)
        return name
