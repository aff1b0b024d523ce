"""An OVSDB JSON-RPC connection (RFC 7047) for transactions only.

The server's API workers write into the Northbound database and read a few
rows back, but never need a replica of it: an IDL's replica would take every
change of every row (each port, written by any worker) and parse it, in every
worker. This connection monitors nothing: it sends ``transact`` requests and
reads their replies, with the standard library's JSON (its C parser).

It is made in the background and kept, as ``OvnDatabase``'s: a database that
is down is reached once it is back, and meanwhile ``connected`` is False so
callers can refuse work at once. Nothing here imports server code.
"""

from __future__ import annotations

import codecs
import itertools
import json
import logging
import socket
import threading
from typing import Any

from neutrino.ovn.ovsdb import RETRY_FIRST, RETRY_MAX, OvnUnavailable, describe

LOG = logging.getLogger(__name__)
_DECODER = json.JSONDecoder()
#: seconds a connection attempt may take (a remote that does not answer at all)
CONNECT_TIMEOUT = 5.0
_SPACE = " \t\r\n"


class OvsdbError(Exception):
    """The database refused a transaction (a constraint, a bad operation)."""


class _Call:
    __slots__ = ("done", "reply")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.reply: dict[str, Any] | None = None


def open_socket(remote: str, timeout: float) -> socket.socket:
    """A connected socket to ``tcp:IP:PORT`` or ``unix:PATH``."""
    kind, _, where = remote.partition(":")
    if kind == "tcp":
        host, _, port = where.rpartition(":")
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    elif kind == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(where)
    else:
        raise OvnUnavailable(f"{remote}: only tcp:IP:PORT and unix:PATH connections are "
                             "supported")
    sock.settimeout(None)
    return sock


class OvsdbClient:
    """Transactions on the database ``database`` at ``remote`` (``tcp:IP:PORT``,
    ``unix:PATH``, or several of them, comma-separated)."""

    def __init__(self, remote: str, database: str, timeout: float = 10.0):
        self.remote = remote
        self.database = database
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self._state_lock = threading.Lock()  # stop() and a new connection
        self._calls: dict[int, _Call] = {}
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"jsonrpc-{self.database}",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._state_lock:
            self._stopping.set()
            sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # the reader's recv returns
            except OSError:  # the connection is already gone
                pass
        if self._thread is not None:  # at worst a connection attempt's wait
            self._thread.join(CONNECT_TIMEOUT)

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def transact(self, operations: list[dict[str, Any]]) -> list[Any]:
        """The results of ``operations`` in one transaction (an operation that
        failed has an ``error`` member: the caller judges). OvnUnavailable when
        the database cannot be reached or did not answer within ``timeout``."""
        reply = self._call("transact", [self.database, *operations])
        if reply.get("error") is not None:
            raise OvsdbError(f"{reply['error']}")
        result: list[Any] = reply["result"]
        return result

    # --- the wire ------------------------------------------------------------------

    def _call(self, method: str, params: list[Any]) -> dict[str, Any]:
        sock = self._sock
        if sock is None:
            raise OvnUnavailable(f"the {self.database} database at {self.remote} cannot "
                                 "be reached")
        ident = next(self._ids)
        call = self._calls[ident] = _Call()
        try:
            data = json.dumps({"method": method, "params": params, "id": ident},
                              separators=(",", ":")).encode()
            try:
                with self._send_lock:
                    sock.sendall(data)
            except OSError as error:
                raise OvnUnavailable(f"the {self.database} database went away "
                                     f"({describe(error)})") from error
            if not call.done.wait(self.timeout):
                raise OvnUnavailable(f"the {self.database} database did not answer within "
                                     f"{self.timeout:g} s")
        finally:
            self._calls.pop(ident, None)
        if call.reply is None:
            raise OvnUnavailable(f"the {self.database} database went away")
        return call.reply

    def _run(self) -> None:
        """Connect, read until the connection is lost, again: to each of the
        remotes in turn (a cluster's members: any of them takes transactions)."""
        delay = RETRY_FIRST
        remotes = itertools.cycle(self.remote.split(","))
        while not self._stopping.is_set():
            remote = next(remotes)
            try:
                sock = open_socket(remote, min(self.timeout, CONNECT_TIMEOUT))
            except (OSError, ValueError, OvnUnavailable) as error:
                LOG.warning("cannot reach the %s database at %s (%s); retrying in %.1f s",
                            self.database, remote, describe(error), delay)
                self._stopping.wait(delay)
                delay = min(delay * 2, RETRY_MAX)
                continue
            delay = RETRY_FIRST
            with self._state_lock:
                if self._stopping.is_set():
                    sock.close()
                    return
                self._sock = sock
            LOG.info("connected to the %s database at %s", self.database, remote)
            try:
                self._read(sock)
            except (OSError, ValueError) as error:
                if not self._stopping.is_set():
                    LOG.warning("lost the %s database at %s (%s)", self.database, remote,
                                describe(error))
            finally:
                self._sock = None
                sock.close()
                for call in list(self._calls.values()):  # they will not be answered
                    call.done.set()

    def _read(self, sock: socket.socket) -> None:
        """Hand each reply to its caller, and answer the server's echo (its
        inactivity probe), until the connection closes."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        buffer = ""
        while True:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("closed by the server")
            buffer += decoder.decode(data)
            if not data.rstrip().endswith(b"}"):
                continue  # no message ends here: parse nothing (a reply in many pieces)
            start = 0
            while True:
                while start < len(buffer) and buffer[start] in _SPACE:
                    start += 1
                if start == len(buffer):
                    break
                try:
                    message, start = _DECODER.raw_decode(buffer, start)
                except json.JSONDecodeError:
                    break  # the rest of it is on its way
                self._dispatch(sock, message)
            buffer = buffer[start:]

    def _dispatch(self, sock: socket.socket, message: dict[str, Any]) -> None:
        if message.get("method") == "echo":
            with self._send_lock:
                sock.sendall(json.dumps({"result": message.get("params", []), "error": None,
                                         "id": message.get("id")}).encode())
            return
        call = self._calls.get(message.get("id"))  # type: ignore[arg-type]
        if call is not None:
            call.reply = message
            call.done.set()
