"""The ASGI application: request ids, authentication, dispatch, error bodies.

Handlers are synchronous (they talk to the database) and run in a thread
pool; the event loop only moves bytes.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol
from urllib.parse import parse_qsl, quote

import orjson

from neutrino import exceptions as exc
from neutrino.api.auth import Authenticator
from neutrino.api.metrics import RequestMetrics
from neutrino.api.request import Request, Response
from neutrino.api.router import Router
from neutrino.log import REQUEST_ID

LOG = logging.getLogger(__name__)
#: one INFO line per request (Neutron's logger is neutron.wsgi)
REQUESTS = logging.getLogger("neutrino.wsgi")

JSON = b"application/json"
#: allocations between two collections of the youngest generation
GC_THRESHOLD = 50_000


def error_body(error: exc.NeutronException) -> dict[str, Any]:
    return {"NeutronError": {"type": error.type, "message": error.msg, "detail": ""}}


class HTTPInternalServerError(exc.NeutronException):
    status = 500
    message = "Request Failed: internal server error while processing your request."


INTERNAL_ERROR = HTTPInternalServerError()


class Dispatcher(Protocol):
    """What answers an authenticated request (the Networking API's Router, or
    another API's own)."""

    def dispatch(self, req: Request) -> Response: ...


class Background(Protocol):
    """Something that runs on the server's event loop beside the API (the RPC
    servers): started before the first request, stopped after the last."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...


class ApiApp:
    def __init__(self, router: Router | Dispatcher, authenticator: Authenticator,
                 threads: int = 16, on_shutdown: Any = None,
                 background: Sequence[Background] = (), keep_alive: bool = True,
                 errors: Callable[[exc.NeutronException], dict[str, Any]] = error_body,
                 by_port: Mapping[int, ApiApp] | None = None,
                 public: Callable[[str], bool] = lambda path: not path.strip("/"),
                 metrics: RequestMetrics | None = None):
        self.router = router
        #: what records each request's labels and time (None: not recorded)
        self.metrics = metrics
        #: whether a path is answered without authentication: by default only the
        #: versions document, as in Neutron
        self.public = public
        #: the body of an error raised before dispatch (authentication, a 500)
        self.errors = errors
        #: other APIs served by this process, each on its own listening port
        #: (the load-balancer API): requests that came in on one go to it
        self.by_port = dict(by_port or {})
        self.keep_alive = keep_alive  # wsgi_keep_alive: false closes after each answer
        self.authenticator = authenticator
        self.threads = threads  # requests handled at once
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="api")
        self.on_shutdown = on_shutdown
        self.background = list(background)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        other = self.by_port.get((scope.get("server") or ("", 0))[1])
        if other is not None:
            await other(scope, receive, send)
            return
        started = time.perf_counter()
        body = await _whole_body(receive)
        if body is None:
            return  # the client left before its request was whole: nothing to act on
        request_id = f"req-{uuid.uuid4()}"
        context = contextvars.copy_context()
        context.run(REQUEST_ID.set, request_id)  # what handling it logs carries its id
        loop = asyncio.get_running_loop()
        status, headers, payload = await loop.run_in_executor(
            self.executor, context.run, self.handle, scope, body, request_id)
        try:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
        except OSError:  # the client left while its answer was being made
            LOG.debug("client of %s %s gone before its answer", scope["method"], scope["path"])
        if REQUESTS.isEnabledFor(logging.INFO):
            _log_request(scope, status, len(payload), time.perf_counter() - started,
                         request_id)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                # What start-up built (modules, tables, plugins) lives as long as the
                # process: moved out of the collector's way, it is not walked again by
                # every full collection, which a large list response triggers.
                gc.collect()
                gc.freeze()
                # A list of thousands makes hundreds of thousands of containers, none
                # of them in a cycle: collected every 700 allocations (the default),
                # they were collected dozens of times per list.
                gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
                try:
                    for service in self.background:
                        await service.start()
                except Exception as error:
                    LOG.exception("start-up failed")
                    await send({"type": "lifespan.startup.failed", "message": str(error)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for service in reversed(self.background):
                    await service.stop()
                self.executor.shutdown(wait=False)
                for other in self.by_port.values():
                    other.executor.shutdown(wait=False)
                if self.on_shutdown is not None:
                    self.on_shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def handle(self, scope: dict, body: bytes,
               request_id: str | None = None) -> tuple[int, list, bytes]:
        """Everything a request needs, synchronously: returns status, headers, body."""
        started = time.perf_counter()
        request_id = request_id or f"req-{uuid.uuid4()}"
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope["headers"]}
        try:
            req = Request(
                method=scope["method"], path=scope["path"],
                query=parse_qsl(scope["query_string"].decode("latin-1"),
                                keep_blank_values=True),
                headers=headers, body=body, base_url=_base_url(scope, headers),
                request_id=request_id)
            if not self.public(req.path):
                req.context = self.authenticator.authenticate(headers, request_id)
            response = self.router.dispatch(req)
        except exc.NeutronException as error:
            response = Response(error.status, self.errors(error))
        except Exception:
            LOG.exception("request %s %s failed", scope.get("method"), scope.get("path"))
            response = Response(500, self.errors(INTERNAL_ERROR))
        payload = response.encoded()
        out = [(b"x-openstack-request-id", request_id.encode()),
               (b"content-length", str(len(payload)).encode())]
        if payload and "content-type" not in response.headers:
            out.append((b"content-type", JSON))
        for key, value in response.headers.items():
            out.append((key.encode(), value.encode()))
        if response.status == 401:
            out.append((b"www-authenticate", self.authenticator.challenge.encode()))
        if not self.keep_alive:
            out.append((b"connection", b"close"))
        if self.metrics is not None:
            self.metrics.record(scope["method"], scope["path"], response.status, started)
        return response.status, out, payload


def _log_request(scope: dict, status: int, length: int, seconds: float,
                 request_id: str) -> None:
    """The request's line, as Neutron's ``neutron.wsgi`` has it: the path as the
    client sent it (percent-encoded, so it cannot break the line), with its query."""
    target = scope.get("raw_path") or quote(scope["path"]).encode()
    if scope["query_string"]:
        target += b"?" + scope["query_string"]
    client = scope.get("client")
    REQUESTS.info('%s "%s %s HTTP/%s" status: %d len: %d time: %.4f',
                  client[0] if client else "-", scope["method"], target.decode("latin-1"),
                  scope.get("http_version", "1.1"), status, length, seconds,
                  extra={"request_id": request_id})


async def _whole_body(receive: Any) -> bytes | None:
    """The request body, or None when the client disconnected before sending all of it."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _base_url(scope: dict, headers: dict[str, str]) -> str:
    scheme = headers.get("x-forwarded-proto") or scope.get("scheme", "http")
    host = headers.get("host")
    if not host:
        server = scope.get("server") or ("localhost", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scheme}://{host}"


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)
