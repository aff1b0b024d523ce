"""What a serving command secures before it does any work, and how it then serves.

A port in use or an address not on the host must stop the command before
it migrates a database, starts agents or says it serves: the API's sockets
are bound first (``listen``) and handed to uvicorn, which would otherwise
bind them only after its start-up, the agents' first sync included. The
message bus is reached once (``reach_bus``) for the same reason: a broker
that is down or refuses the login is one line, not a traceback after
"serving".
"""

from __future__ import annotations

import asyncio
import ctypes
import signal
import socket
import sys
from typing import TYPE_CHECKING, Any

import uvicorn

from neutrino import config
from neutrino.rpc.errors import TransportError
from neutrino.rpc.transport import TransportURLError, get_transport

if TYPE_CHECKING:
    from neutrino.cmd.workers import Workers

#: uvicorn's default backlog
BACKLOG = 2048
#: the exit status of a command (or worker process) whose start-up failed
STARTUP_FAILED = 3
#: glibc's mallopt parameter for the number of malloc arenas
_M_ARENA_MAX = -8


def few_malloc_arenas(count: int = 2) -> None:
    """Let the process's threads share ``count`` malloc arenas; call before they start.

    glibc gives each thread that allocates an arena of its own (up to eight a
    core) and keeps there what a large answer freed: after some 5,000-port
    lists, each API thread held tens of MB. Not glibc: nothing to do."""
    try:
        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, count)
    except (OSError, AttributeError):
        pass


class StartupError(Exception):
    """The command cannot start; the message is one line (option and file where
    there is one)."""


def listen(conf: config.Config, group: str = "DEFAULT", reuse_port: bool = False
           ) -> list[socket.socket]:
    """Listening sockets on ``group``'s ``bind_host``:``bind_port`` (every address
    a host name has), as uvicorn would make them; ``reuse_port``: one of several
    sets on the same addresses, one per worker process."""
    opts = getattr(conf, group)
    host, port = opts.bind_host, opts.bind_port
    where = f"{conf.source(group, 'bind_host')} and {conf.source(group, 'bind_port')}"
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        found = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise StartupError(f"cannot listen on {shown}: {error.strerror}, set by "
                           f"{where}") from None
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(
                (f, k, p, "", a) for f, k, p, _, a in found):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(BACKLOG)
    except OSError as error:
        for sock in sockets:
            sock.close()
        raise StartupError(f"cannot listen on {shown}: {error.strerror}, set by "
                           f"{where}") from None
    return sockets


def reach_bus(conf: config.Config) -> None:
    """The broker of ``transport_url`` answers and takes the login."""
    try:
        asyncio.run(get_transport(conf.DEFAULT.transport_url).probe())
    except (TransportError, TransportURLError) as error:
        raise StartupError(f"{error}, set by {conf.source('DEFAULT', 'transport_url')}"
                           ) from None


def serve(app: Any, sockets: list[socket.socket], workers: Workers | None = None,
          **options: Any) -> None:
    """uvicorn serving ``app`` (or, with ``factory=True``, what the factory of
    that import string makes) on the bound ``sockets``, in this process, with
    ``workers`` (other processes on sockets of their own) beside it."""
    few_malloc_arenas()
    server = uvicorn.Server(uvicorn.Config(app, **options))

    def stop() -> None:
        server.should_exit = True

    if workers is not None:
        # uvicorn raises the signal it stopped for again once it has stopped;
        # this process then still has its workers to stop before it ends
        signal.signal(signal.SIGTERM, lambda *_: None)
        workers.start(on_failure=stop)
    try:
        server.run(sockets=sockets)
    except KeyboardInterrupt:
        return
    finally:
        if workers is not None:
            workers.stop()
    if not server.started or (workers is not None and workers.failed):
        sys.exit(STARTUP_FAILED)  # and whoever failed said why
