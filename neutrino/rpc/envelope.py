"""The JSON envelope every message travels in, on every transport.

A request carries the method, the API version the caller speaks, the
caller's context (request id, project, user, roles) and keyword arguments; a
reply carries a result or an error. Both are plain JSON, so the in-process
transport serialises exactly as RabbitMQ does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import orjson


@dataclass
class Request:
    method: str
    version: str
    args: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    namespace: str | None = None
    # set on calls: where the reply goes, and what it answers
    reply_to: str | None = None
    msg_id: str | None = None


@dataclass
class Reply:
    msg_id: str
    result: Any = None
    error: dict[str, str] | None = None  # {"type", "message"}


def encode(message: Request | Reply) -> bytes:
    kind = "request" if isinstance(message, Request) else "reply"
    return orjson.dumps({"kind": kind, **asdict(message)})


def decode(body: bytes) -> Request | Reply:
    data = orjson.loads(body)
    kind = data.pop("kind", None)
    if kind == "request":
        return Request(**data)
    if kind == "reply":
        return Reply(**data)
    raise ValueError(f"not a neutrino RPC message: kind {kind!r}")
