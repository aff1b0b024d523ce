"""The metadata proxy: one small process per namespace that serves metadata.

    python -m neutrino.metadata.proxy --bind-host H --bind-port P \\
        --header X-Neutron-Network-ID=<id> --socket PATH --pid-file PATH [--log-file F]

It takes an instance's HTTP request, drops whatever the instance said about
who it is (``X-Forwarded-For``, ``X-Neutron-*``, ``X-Instance-*``,
``X-Tenant-ID``: an instance must not choose the answer's instance), adds its
source address and the namespace's network or router, and passes it over the
metadata agent's UNIX socket; the answer is streamed back as it comes. Each
step has a timeout, so a dead agent costs the instance an error, not a hang.

Started by an agent with ``ip netns exec`` (see ``neutrino.linux.metadata_proxy``),
it binds first and reports a failure to bind by its exit status; then it
detaches, so it outlives the agent as dnsmasq does, and the pid file names
the process that serves.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import socket
import sys

from neutrino.metadata import http

LOG = logging.getLogger("neutrino.metadata.proxy")

#: seconds an instance has to send its whole request
REQUEST_TIMEOUT = 30.0
#: seconds to reach the metadata agent's socket
CONNECT_TIMEOUT = 5.0
#: seconds of silence from the agent before giving up (it answers within its
#: own timeouts, which are shorter)
ANSWER_TIMEOUT = 60.0
#: headers an instance may not set: they say who it is
SPOOFABLE = frozenset({"x-forwarded-for", "x-neutron-network-id", "x-neutron-router-id",
                       "x-instance-id", "x-instance-id-signature", "x-tenant-id"})
#: headers about one connection, not the request (RFC 9110, 7.6.1)
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer",
                        "transfer-encoding", "upgrade"})


def client_address(peer: object) -> str:
    """The peer's address without an IPv6 scope (``fe80::1%eth0``)."""
    host = peer[0] if isinstance(peer, tuple) else str(peer)
    return host.split("%", 1)[0]


def forwarded(request: http.Message, client: str, header: tuple[str, str]) -> bytes:
    """The request as the metadata agent gets it."""
    kept = [(k, v) for k, v in request.headers
            if k.lower() not in SPOOFABLE and k.lower() not in HOP_BY_HOP]
    method, target, _ = request.start
    return http.encode_request(method, target, [*kept, ("X-Forwarded-For", client), header],
                               request.body)


class Proxy:
    """Serves connections from instances, forwarding to ``socket_path``."""

    def __init__(self, socket_path: str, header: tuple[str, str],
                 answer_timeout: float = ANSWER_TIMEOUT):
        self.socket_path = socket_path
        self.header = header
        self.answer_timeout = answer_timeout

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client = client_address(writer.get_extra_info("peername"))
        try:
            await self._serve(client, reader, writer)
        except (ConnectionError, OSError) as error:
            LOG.debug("%s: connection lost: %s", client, error)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _serve(self, client: str, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(http.read_request(reader), REQUEST_TIMEOUT)
        except http.HttpError as error:
            writer.write(http.error_response(error.status, error.reason))
            return
        except TimeoutError:
            writer.write(http.error_response(408))
            return
        if request is None:
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_unix_connection(self.socket_path), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as error:
            LOG.error("%s %s from %s: the metadata agent at %s is unreachable: %s",
                      request.start[0], request.start[1], client, self.socket_path,
                      error or "timed out")
            writer.write(http.error_response(502, "The metadata service is unavailable."))
            return
        try:
            up_writer.write(forwarded(request, client, self.header))
            await up_writer.drain()
            await self._stream_back(client, up_reader, writer)
        finally:
            up_writer.close()

    async def _stream_back(self, client: str, up_reader: asyncio.StreamReader,
                           writer: asyncio.StreamWriter) -> None:
        """The agent's answer, as it comes, until it closes (it always does)."""
        sent = False
        while True:
            try:
                data = await asyncio.wait_for(up_reader.read(65536), self.answer_timeout)
            except TimeoutError:
                LOG.error("%s: no answer from the metadata agent in %gs", client,
                          self.answer_timeout)
                if not sent:
                    writer.write(http.error_response(504, "The metadata service timed out."))
                return
            if not data:
                if not sent:
                    writer.write(http.error_response(502, "The metadata service closed."))
                return
            writer.write(data)
            sent = True
            await writer.drain()


def listen(host: str, port: int) -> socket.socket:
    """The listening socket (bound before detaching, so that a failure shows)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        address, _, scope = host.partition("%")
        sock.bind((address, port, 0, socket.if_nametoindex(scope) if scope else 0))
    else:
        sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve(sock: socket.socket, proxy: Proxy) -> None:
    server = await asyncio.start_server(proxy.handle, sock=sock)
    async with server:
        await server.serve_forever()


def _detach(pid_file: str, log_file: str | None) -> None:
    """Go to the background: the first process writes the pid file with the
    serving process's pid and exits 0."""
    child = os.fork()
    if child:
        staging = pid_file + ".new"
        with open(staging, "w", encoding="ascii") as handle:
            handle.write(f"{child}\n")
        os.replace(staging, pid_file)
        os._exit(0)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    out = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if log_file else null
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)


def parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, not {text!r}")
    return name, value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="neutrino-metadata-proxy")
    parser.add_argument("--bind-host", default="0.0.0.0")
    parser.add_argument("--bind-port", type=int, default=80)
    parser.add_argument("--header", type=parse_header, required=True,
                        help="NAME=VALUE added to every request (the network or router)")
    parser.add_argument("--socket", required=True, help="the metadata agent's UNIX socket")
    parser.add_argument("--pid-file", help="detach, and write the serving pid here")
    parser.add_argument("--log-file")
    args = parser.parse_args(argv)
    try:
        sock = listen(args.bind_host, args.bind_port)
    except OSError as error:
        sys.exit(f"metadata proxy: cannot listen on {args.bind_host}:{args.bind_port}: "
                 f"{error.strerror or error}")
    if args.pid_file:
        _detach(args.pid_file, args.log_file)
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(process)d %(levelname)s %(name)s %(message)s")
    LOG.info("serving on %s:%d for %s=%s, to %s", args.bind_host, args.bind_port,
             *args.header, args.socket)
    asyncio.run(serve(sock, Proxy(args.socket, args.header)))


if __name__ == "__main__":
    main()
