"""Prometheus metrics: what neutrino counts, and how a scrape reads it.

Every name starts with ``neutrino_`` and every label takes its values from a
set the code bounds (a collection name, an action, a status, a topic and a
method, an agent type, a daemon name): never an id, a project, a token or an
address, so that a series is not made per tenant and nothing private leaks
into a scrape. ``docs/metrics.md`` lists them.

**Several API workers.** ``api_workers > 1`` runs several processes on one
port and a scrape lands in any one of them, so each process's counts alone
would be a fraction. prometheus-client's multiprocess mode gives the sums:
``neutrino-server`` points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh directory
under ``state_path`` (``use_multiprocess_directory``) before any metric
exists; the workers it spawns inherit it, each process writes its values to
files of its own there, and a scrape of any of them reads all the files
(``exposition``). A worker that died leaves its files, so counters never go
back. prometheus-client chooses where values live once, when it is imported,
from that variable: this module therefore imports it only when the first
metric is made (``families``), never at import.

This module imports nothing of the server (agents import it too).
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client import Counter, Gauge, Histogram

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: seconds: requests, RPC calls, syncs and host programming all fit between these
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
           30.0, 60.0)
#: what a label value that is not one of the known ones becomes
OTHER = "other"
#: the counts in an agent's ``configurations()`` that are resources it handles
RESOURCE_COUNTS = frozenset({"devices", "networks", "subnets", "ports", "routers",
                             "ex_gw_ports", "interfaces", "floating_ips", "instances"})
#: the daemons agents start and watch (``ProcessMonitor``)
DAEMONS = frozenset({"dnsmasq", "keepalived", "haproxy", "radvd", "conntrackd",
                     "metadata proxy", "charon"})


def parse_bind_address(text: str) -> str:
    """``host:port`` (``[v6]:port`` too) or empty: no endpoint."""
    text = text.strip()
    if not text:
        return ""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not host:port")
    return text


@dataclass(frozen=True)
class Families:
    """Every metric neutrino records, made once per process."""

    api_requests: Counter
    api_seconds: Histogram
    db_retries: Counter
    rpc_messages: Counter
    rpc_seconds: Histogram
    agent_syncs: Histogram
    agent_sync_failures: Counter
    agent_resources: Gauge
    programming_seconds: Histogram
    daemon_restarts: Counter


@functools.cache
def families() -> Families:
    """The metrics, made (and prometheus-client imported) on first use: see the
    module docstring for why not at import."""
    from prometheus_client import Counter, Gauge, Histogram

    return Families(
        api_requests=Counter(
            "neutrino_api_requests", "Networking API requests answered.",
            ["resource", "action", "status"]),
        api_seconds=Histogram(
            "neutrino_api_request_duration_seconds",
            "Time to answer a Networking API request, from its whole body to its answer.",
            ["resource", "action", "status"], buckets=BUCKETS),
        db_retries=Counter(
            "neutrino_db_transaction_retries",
            "Write transactions run again after a conflict or a deadlock.", ["outcome"]),
        rpc_messages=Counter(
            "neutrino_rpc_messages", "RPC messages sent on the bus.",
            ["kind", "topic", "method", "outcome"]),
        rpc_seconds=Histogram(
            "neutrino_rpc_call_duration_seconds",
            "Time from sending an RPC call to its reply (or its failure).",
            ["topic", "method"], buckets=BUCKETS),
        agent_syncs=Histogram(
            "neutrino_agent_sync_duration_seconds",
            "Time of an agent's sync with the server (full, or partial: dirty items).",
            ["agent_type", "sync"], buckets=BUCKETS),
        agent_sync_failures=Counter(
            "neutrino_agent_sync_failures", "Agent syncs that failed (a full one follows).",
            ["agent_type", "sync"]),
        agent_resources=Gauge(
            "neutrino_agent_resources",
            "Resources an agent handles now, as its state report counts them.",
            ["agent_type", "resource"], multiprocess_mode="livesum"),
        programming_seconds=Histogram(
            "neutrino_dataplane_programming_duration_seconds",
            "Time to write an agent's filtering or flows to the host.",
            ["kind"], buckets=BUCKETS),
        daemon_restarts=Counter(
            "neutrino_agent_daemon_restarts",
            "Child daemons seen dead and started again by their agent.", ["daemon"]),
    )


# --- recording, for the code that does the work ------------------------------------------

def db_retry(gave_up: bool) -> None:
    families().db_retries.labels("gave_up" if gave_up else "retried").inc()


@functools.cache
def _rpc_children(kind: str, topic: str, method: str) -> tuple[Any, Any, Any, Any]:
    """The counters (ok, error, timeout) and the call histogram of one method,
    looked up once: a call then records without building label tuples."""
    fams = families()
    return (fams.rpc_messages.labels(kind, topic, method, "ok"),
            fams.rpc_messages.labels(kind, topic, method, "error"),
            fams.rpc_messages.labels(kind, topic, method, "timeout"),
            fams.rpc_seconds.labels(topic, method))


def rpc_topic(queue_topic: str) -> str:
    """The topic without a host (``topic.host`` is one host's queue)."""
    return queue_topic.partition(".")[0]


@contextmanager
def rpc_message(kind: str, topic: str, method: str,
                timeouts: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """Count one ``kind`` (call, cast, fanout) of ``method`` on ``topic`` by its
    outcome (an exception of ``timeouts``: a timeout; another: an error); a
    call's time goes to the histogram as well."""
    ok, error, timeout, seconds = _rpc_children(kind, rpc_topic(topic), method)
    started = perf_counter()
    try:
        yield
    except timeouts:
        timeout.inc()
        raise
    except Exception:
        error.inc()
        raise
    else:
        ok.inc()
    finally:
        if kind == "call":
            seconds.observe(perf_counter() - started)


def agent_sync(agent_type: str, full: bool, seconds: float, failed: bool) -> None:
    sync = "full" if full else "partial"
    fams = families()
    fams.agent_syncs.labels(agent_type, sync).observe(seconds)
    if failed:
        fams.agent_sync_failures.labels(agent_type, sync).inc()


def agent_resources(agent_type: str, configurations: dict[str, Any]) -> None:
    """The gauges of the counts among an agent's ``configurations()``."""
    gauge = families().agent_resources
    for name, value in configurations.items():
        if name in RESOURCE_COUNTS and isinstance(value, int) and not isinstance(value, bool):
            gauge.labels(agent_type, name).set(value)


@contextmanager
def programming(kind: str) -> Iterator[None]:
    """Time a write of filtering rules or flows to the host (``kind``:
    ``iptables``, ``openflow``), whether it succeeded or not."""
    started = perf_counter()
    try:
        yield
    finally:
        families().programming_seconds.labels(kind).observe(perf_counter() - started)


def daemon_restart(name: str) -> None:
    families().daemon_restarts.labels(name if name in DAEMONS else OTHER).inc()


# --- the API's request metrics -----------------------------------------------------------

class RequestRecorder:
    """The API's request counter and histogram, with a child per label set kept
    at hand: a request records with one dict lookup and two increments. Children
    are made when first seen, not ahead: every collection, action and status
    made ahead would be thousands of empty series in every scrape."""

    def __init__(self) -> None:
        fams = families()
        self._requests = fams.api_requests
        self._seconds = fams.api_seconds
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def _child(self, resource: str, action: str, status: int) -> tuple[Any, Any]:
        key = (resource, action, status)
        with self._lock:
            child = self._children.get(key)
            if child is None:
                text = str(status)
                child = (self._requests.labels(resource, action, text),
                         self._seconds.labels(resource, action, text))
                self._children[key] = child
        return child

    def record(self, resource: str, action: str, status: int, seconds: float) -> None:
        child = self._children.get((resource, action, status))
        if child is None:
            child = self._child(resource, action, status)
        child[0].inc()
        child[1].observe(seconds)


# --- exposing them -----------------------------------------------------------------------

def use_multiprocess_directory(path: str) -> None:
    """Make ``path`` empty and point this process (and those it starts) at it,
    before any metric exists (``RuntimeError`` if one does)."""
    if "prometheus_client" in sys.modules:
        raise RuntimeError("prometheus_client was imported before its multiprocess "
                           "directory was chosen: every worker's counts would not be summed")
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, mode=0o700)
    os.environ[MULTIPROC_ENV] = path


def exposition() -> tuple[bytes, str]:
    """The text a scrape reads and its content type: this process's metrics, or
    every process's summed in multiprocess mode."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return generate_latest(_registry()), CONTENT_TYPE_LATEST


def _registry() -> Any:
    """What a scrape reads: this process's registry, or in multiprocess mode one
    made for the scrape that reads every process's files."""
    families()
    from prometheus_client import REGISTRY, CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    if not os.environ.get(MULTIPROC_ENV):
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    return registry


class _Endpoint:
    def __init__(self, server: Any, thread: threading.Thread):
        self.server = server
        self.thread = thread
        self.users = 1


_endpoints: dict[str, _Endpoint] = {}
_endpoints_lock = threading.Lock()


def serve(address: str) -> None:
    """Serve ``/metrics`` on ``address`` (``host:port``) from a thread, until
    ``unserve``. Several agents of one process (the all-in-one) share one
    registry, so they share the endpoint: ``OSError`` if it cannot listen."""
    with _endpoints_lock:
        endpoint = _endpoints.get(address)
        if endpoint is not None:
            endpoint.users += 1
            return
        from prometheus_client import start_http_server

        host, _, port = address.rpartition(":")
        server, thread = start_http_server(int(port), host.strip("[]"), _registry())
        _endpoints[address] = _Endpoint(server, thread)


def unserve(address: str) -> None:
    with _endpoints_lock:
        endpoint = _endpoints.get(address)
        if endpoint is None:
            return
        endpoint.users -= 1
        if endpoint.users:
            return
        del _endpoints[address]
    endpoint.server.shutdown()
    endpoint.server.server_close()
    endpoint.thread.join()
