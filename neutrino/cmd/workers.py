"""API worker processes, each accepting on sockets of its own (SO_REUSEPORT).

uvicorn's workers share one listening socket, and the worker whose loop
wakes first accepts every connection that is waiting: the keep-alive
connections a client opens together (a load balancer's pool, a benchmark's)
all landed in one worker while the other idled, and on PostgreSQL that one
worker's interpreter was the limit. Here each worker listens on its own
sockets bound to the same addresses with SO_REUSEPORT, and the kernel
spreads new connections over them by their addresses' hash.

The server's own process is the first worker (a supervisor that only
watched would hold the 60 MB of modules its start-up checks loaded, for
nothing); the others are spawned beside it and replaced when they die, on
the same sockets, which this process keeps open: the connections that come
meanwhile wait in their queue.
"""

from __future__ import annotations

import logging
import multiprocessing
import socket
import threading
from collections.abc import Callable
from multiprocessing.context import SpawnProcess
from typing import Any

from neutrino.cmd.startup import STARTUP_FAILED, serve

LOG = logging.getLogger(__name__)
#: how long a stopping worker has to finish what it is answering
STOP_TIMEOUT = 15.0
#: how often the workers are looked at
WATCH_INTERVAL = 0.5


def _work(factory: str, sockets: list[socket.socket], options: dict[str, Any]) -> None:
    """Entry of a worker process: the app ``factory`` makes, served on ``sockets``."""
    serve(factory, sockets, factory=True, **options)


class Workers:
    """Worker processes beside this one, worker ``n`` serving ``socket_sets[n]``
    with the app the import string ``factory`` makes."""

    def __init__(self, factory: str, socket_sets: list[list[socket.socket]],
                 options: dict[str, Any]):
        self.factory = factory
        self.socket_sets = socket_sets
        self.options = options
        self.context = multiprocessing.get_context("spawn")
        self.processes: list[SpawnProcess] = []
        self.stopping = threading.Event()
        self.failed = False  # a worker could not start: the command stops
        self._watcher: threading.Thread | None = None

    def start(self, on_failure: Callable[[], None]) -> None:
        """Start them, and replace each that dies until ``stop``; one that could
        not start calls ``on_failure`` (it would fail again, the same way)."""
        self.processes = [self._spawn(n) for n in range(len(self.socket_sets))]
        self._watcher = threading.Thread(target=self._watch, args=(on_failure,),
                                         name="api-workers", daemon=True)
        self._watcher.start()

    def _spawn(self, n: int) -> SpawnProcess:
        process = self.context.Process(
            target=_work, args=(self.factory, self.socket_sets[n], self.options),
            name=f"api-worker-{n + 1}")
        process.start()
        return process

    def _watch(self, on_failure: Callable[[], None]) -> None:
        while not self.stopping.wait(WATCH_INTERVAL):
            for n, process in enumerate(self.processes):
                if process.is_alive() or self.stopping.is_set():
                    continue
                if process.exitcode == STARTUP_FAILED:
                    LOG.error("API worker %s could not start: stopping", process.pid)
                    self.failed = True
                    on_failure()
                    return
                LOG.warning("API worker %s ended with status %s: starting another",
                            process.pid, process.exitcode)
                self.processes[n] = self._spawn(n)

    def stop(self) -> None:
        """Stop them (each finishes what it is answering) and close their sockets."""
        self.stopping.set()
        if self._watcher is not None:
            self._watcher.join()
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(STOP_TIMEOUT)
            if process.is_alive():
                process.kill()
                process.join()
        for sockets in self.socket_sets:
            for sock in sockets:
                sock.close()
