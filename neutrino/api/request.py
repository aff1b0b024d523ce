"""The request and response objects handlers see (a thin view of ASGI)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import orjson

from neutrino import exceptions as exc
from neutrino.context import Context


@dataclass
class Request:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes
    base_url: str  # scheme://host, no trailing slash
    request_id: str
    #: who asks: set by the authenticator for every path but the public versions
    #: document; handlers read it as ``context``
    auth: Context | None = None

    @property
    def context(self) -> Context:
        """The caller's context: every handler that reads it runs after auth."""
        if self.auth is None:
            raise RuntimeError(f"{self.method} {self.path} was not authenticated")
        return self.auth

    @context.setter
    def context(self, value: Context) -> None:
        self.auth = value

    def json(self) -> Any:
        """The body as a JSON object; an empty body is ``{}``."""
        if not self.body.strip():
            return {}
        try:
            value = orjson.loads(self.body)
        except orjson.JSONDecodeError:
            raise exc.HTTPBadRequest(msg="Body contains invalid data") from None
        if not isinstance(value, dict):
            raise exc.HTTPBadRequest(msg="Body contains invalid data")
        return value

    def fields(self) -> list[str]:
        """``fields`` parameters (repeated, never comma-split, as Neutron)."""
        return [value for key, value in self.query if key == "fields" and value]

    def url(self, path: str, params: list[tuple[str, str]] | None = None) -> str:
        query = f"?{urlencode(params)}" if params else ""
        return f"{self.base_url}{path}{query}"


# A body of JSON ``null``, what Neutron answers for actions that return nothing.
JSON_NULL = object()


@dataclass
class Response:
    status: int = 200
    #: JSON-able, None for an empty body, JSON_NULL, or bytes sent as they are
    #: (a page, the metrics' text: their ``content-type`` in ``headers``)
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> bytes:
        if self.body is None:
            return b""
        if isinstance(self.body, bytes):
            return self.body
        if self.body is JSON_NULL:
            return b"null"
        try:
            return orjson.dumps(self.body)
        except TypeError:
            # orjson stops at 64 bits; an IPv6 subnet counts 2**64 addresses and
            # more, which JSON (and Neutron) answers whole
            return json.dumps(self.body, separators=(",", ":")).encode()
