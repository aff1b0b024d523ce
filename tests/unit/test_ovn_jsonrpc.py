"""The OVSDB JSON-RPC connection against a stand-in server on loopback: replies
that arrive in pieces (a character's bytes split too), the server's echo
probes, a server that goes away, and the remotes the options take."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from neutrino.ovn.jsonrpc import OvsdbClient, OvsdbError
from neutrino.ovn.options import ovsdb_remotes
from neutrino.ovn.ovsdb import OvnUnavailable


class StandIn:
    """Answers each request with ``reply(request)``, in bytes of ``chunk``; says
    echo first, and records what the client sends back to it."""

    def __init__(self, chunk: int):
        self.chunk = chunk
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.remote = f"tcp:127.0.0.1:{self.listener.getsockname()[1]}"
        self.echo_answers: list[dict] = []
        self.conn: socket.socket | None = None
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        self.conn = conn
        self._send({"method": "echo", "params": ["probe"], "id": "echo"})
        decoder, buffer = json.JSONDecoder(), ""
        while data := conn.recv(65536):
            buffer += data.decode()
            while buffer:
                try:
                    message, end = decoder.raw_decode(buffer)
                except json.JSONDecodeError:
                    break
                buffer = buffer[end:]
                if message.get("id") == "echo":
                    self.echo_answers.append(message)
                elif message["params"][1].get("op") == "fail":
                    self._send({"result": None, "error": "bad", "id": message["id"]})
                else:
                    self._send({"result": [{"echoed": message["params"][1:],
                                            "text": "é" * 500}],
                                "error": None, "id": message["id"]})

    def _send(self, message: dict) -> None:
        assert self.conn is not None
        data = json.dumps(message, ensure_ascii=False).encode()
        for start in range(0, len(data), self.chunk):
            self.conn.sendall(data[start:start + self.chunk])
            time.sleep(0)

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.shutdown(socket.SHUT_RDWR)
            except OSError:  # the client left first
                pass
        self.listener.close()


@pytest.fixture(params=[3, 1000, 65536], ids=["3-bytes", "1000-bytes", "whole"])
def stand_in(request: pytest.FixtureRequest) -> Iterator[StandIn]:
    server = StandIn(request.param)
    yield server
    server.close()


def connected(client: OvsdbClient, stand_in: StandIn) -> OvsdbClient:
    client.start()
    deadline = time.monotonic() + 5
    while not (client.connected and stand_in.echo_answers):
        assert time.monotonic() < deadline, "no connection"
        time.sleep(0.01)
    return client


def test_replies_in_pieces_reach_their_callers(stand_in: StandIn):
    client = connected(OvsdbClient(stand_in.remote, "DB", timeout=5), stand_in)
    try:
        results = [None] * 8

        def call(index: int) -> None:
            results[index] = client.transact([{"op": "select", "n": index}])

        threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for index, result in enumerate(results):
            assert result == [{"echoed": [{"op": "select", "n": index}], "text": "é" * 500}]
        assert stand_in.echo_answers == [{"result": ["probe"], "error": None, "id": "echo"}]
        with pytest.raises(OvsdbError, match="bad"):
            client.transact([{"op": "fail"}])
    finally:
        client.stop()


def test_a_server_gone_fails_calls_at_once(stand_in: StandIn):
    client = connected(OvsdbClient(stand_in.remote, "DB", timeout=30), stand_in)
    try:
        stand_in.close()
        deadline = time.monotonic() + 5
        while client.connected:
            assert time.monotonic() < deadline, "the loss went unnoticed"
            time.sleep(0.01)
        started = time.monotonic()
        with pytest.raises(OvnUnavailable, match="cannot be reached"):
            client.transact([{"op": "select"}])
        assert time.monotonic() - started < 1
    finally:
        client.stop()


@pytest.mark.parametrize("text,expected", [
    ("tcp:127.0.0.1:6641", "tcp:127.0.0.1:6641"),
    ("tcp:192.0.2.1:6641, tcp:192.0.2.2:6641", "tcp:192.0.2.1:6641,tcp:192.0.2.2:6641"),
    ("unix:/run/ovn/ovnnb_db.sock", "unix:/run/ovn/ovnnb_db.sock"),
])
def test_remotes_accepted(text: str, expected: str):
    assert ovsdb_remotes(text) == expected


@pytest.mark.parametrize("text", ["ssl:192.0.2.1:6641", "192.0.2.1:6641", "tcp:", ""])
def test_remotes_refused(text: str):
    with pytest.raises(ValueError, match="is not tcp:IP:PORT or unix:PATH"):
        ovsdb_remotes(text)


def test_an_error_without_a_message_is_still_described():
    """ovsdbapp's TimeoutException made without a message fails its own str():
    the reconnection loop that logs it must live on."""
    from ovsdbapp.exceptions import TimeoutException

    from neutrino.ovn.ovsdb import describe

    assert describe(TimeoutException()) == "TimeoutException"
    assert describe(ConnectionRefusedError()) == "ConnectionRefusedError"
