"""Just enough HTTP/1.1 for the metadata path, on asyncio streams.

Every hop is one request per connection (answers say ``Connection: close``):
metadata requests are few and small, and it keeps each hop a plain pipe with
no keep-alive state to get wrong. Sizes are bounded, so a misbehaving client
costs a 4xx, never the process's memory.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from http import HTTPStatus

#: the longest request or status line plus headers
MAX_HEAD = 64 * 1024
#: the largest body read (user data is at most 64 KiB in Nova)
MAX_BODY = 1024 * 1024

Headers = list[tuple[str, str]]


class HttpError(Exception):
    """A message we cannot take: the status to answer with, and why."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class Message:
    """A request (``start`` = method, target, version) or a response (version,
    status, reason), its headers in order and its whole body."""

    start: tuple[str, str, str]
    headers: Headers = field(default_factory=list)
    body: bytes = b""

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)

    @property
    def status(self) -> int:
        """A response's status code."""
        return int(self.start[1])


async def _head(reader: asyncio.StreamReader) -> list[str] | None:
    """The start line and header lines; None at a clean end before any byte."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if not error.partial:
            return None
        raise HttpError(400, "the connection ended inside the header") from None
    except asyncio.LimitOverrunError:
        raise HttpError(431, "header too large") from None
    if len(raw) > MAX_HEAD:
        raise HttpError(431, "header too large")
    return raw.decode("latin-1").split("\r\n")[:-2]


def _headers(lines: list[str]) -> Headers:
    found = []
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HttpError(400, f"malformed header line {line[:80]!r}")
        found.append((name, value.strip()))
    return found


async def _chunked(reader: asyncio.StreamReader, limit: int) -> bytes:
    body = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        try:
            size = int(size_line.split(b";")[0].strip(), 16)
        except ValueError:
            raise HttpError(400, "malformed chunk size") from None
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                pass
            return bytes(body)
        if len(body) + size > limit:
            raise HttpError(413, "body too large")
        body += await reader.readexactly(size)
        await reader.readexactly(2)


async def _body(reader: asyncio.StreamReader, message: Message, to_eof: bool,
                limit: int) -> bytes:
    """By ``Transfer-Encoding: chunked``, ``Content-Length``, else nothing (a
    request) or everything up to the end (a response)."""
    try:
        if (message.header("Transfer-Encoding") or "").lower().endswith("chunked"):
            return await _chunked(reader, limit)
        length = message.header("Content-Length")
        if length is not None:
            if not length.isdigit():
                raise HttpError(400, f"malformed Content-Length {length!r}")
            if int(length) > limit:
                raise HttpError(413, "body too large")
            return await reader.readexactly(int(length))
        if to_eof:
            body = await reader.read(limit + 1)
            while len(body) <= limit and (more := await reader.read(limit + 1 - len(body))):
                body += more
            if len(body) > limit:
                raise HttpError(413, "body too large")
            return body
        return b""
    except asyncio.IncompleteReadError:
        raise HttpError(400, "the connection ended inside the body") from None
    except asyncio.LimitOverrunError:
        raise HttpError(400, "malformed chunked body") from None


async def read_request(reader: asyncio.StreamReader, limit: int = MAX_BODY
                       ) -> Message | None:
    """The next request, or None if the peer closed without sending one."""
    lines = await _head(reader)
    if lines is None:
        return None
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(400, f"malformed request line {lines[0][:80]!r}")
    if not parts[1].startswith("/"):
        raise HttpError(400, f"only origin-form targets are served, not {parts[1][:80]!r}")
    request = Message((parts[0], parts[1], parts[2]), _headers(lines[1:]))
    request.body = await _body(reader, request, to_eof=False, limit=limit)
    return request


async def read_response(reader: asyncio.StreamReader, limit: int = MAX_BODY) -> Message:
    """A whole response (the peer was asked to close after it)."""
    lines = await _head(reader)
    if lines is None:
        raise HttpError(502, "the server closed without answering")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise HttpError(502, f"malformed status line {lines[0][:80]!r}")
    response = Message((parts[0], parts[1], parts[2] if len(parts) > 2 else ""),
                       _headers(lines[1:]))
    response.body = await _body(reader, response, to_eof=True, limit=limit)
    return response


def encode_request(method: str, target: str, headers: Headers, body: bytes = b"") -> bytes:
    """A request asking the server to close after answering; the body framed
    by ``Content-Length`` (any framing header given is dropped)."""
    kept = [(k, v) for k, v in headers if k.lower() not in (
        "connection", "content-length", "transfer-encoding")]
    if body or method in ("POST", "PUT", "PATCH"):
        kept.append(("Content-Length", str(len(body))))
    kept.append(("Connection", "close"))
    head = "".join(f"{k}: {v}\r\n" for k, v in kept)
    return f"{method} {target} HTTP/1.1\r\n{head}\r\n".encode("latin-1") + body


def encode_response(status: int, body: bytes = b"", content_type: str = "text/plain",
                    headers: Headers | None = None) -> bytes:
    """A whole response, closing the connection."""
    reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}",
             f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers or ()),
             "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def error_response(status: int, explanation: str = "") -> bytes:
    """A short plain-text answer for ``status``."""
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
    text = f"{status} {phrase}\n\n{explanation}\n" if explanation else f"{status} {phrase}\n"
    return encode_response(status, text.encode())
