"""The plugins' periodic work (rescheduling away from dead agents), run by the
server beside the API: each task in a thread every ``interval`` seconds, a
failure logged and retried at the next tick."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

LOG = logging.getLogger(__name__)


class PeriodicTasks:
    def __init__(self, tasks: Sequence[tuple[float, Callable[[], None]]]):
        self.tasks = list(tasks)
        self._running: list[asyncio.Task] = []

    async def _every(self, interval: float, work: Callable[[], None]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            try:
                await loop.run_in_executor(None, work)
            except Exception:
                LOG.exception("periodic task %s failed", getattr(work, "__qualname__", work))

    async def start(self) -> None:
        self._running = [asyncio.create_task(self._every(interval, work))
                         for interval, work in self.tasks]

    async def stop(self) -> None:
        for task in self._running:
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
        self._running = []
