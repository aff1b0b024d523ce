"""One OVN database (Northbound or Southbound) through ovsdbapp's IDL.

The IDL keeps a replica of the tables it monitors, so reads cost no round trip;
writes are ovsdbapp transactions. The connection is made in the background and
kept: a database that is down when the process starts, or that restarts later,
is reached when it comes back (the IDL reconnects by itself and catches up),
and meanwhile ``connected`` is False, so callers can refuse work at once
instead of waiting for a transaction's timeout.

Used by the server (the ``ovn`` mechanism driver) and by the OVN metadata agent
alike: nothing here imports server code.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from neutrino import exceptions as exc

# as in neutrino.linux.ovs: the ovs library's import of eventlet warns; only here
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated", category=Warning)
    from ovsdbapp import exceptions as ovsdbapp_exceptions
    from ovsdbapp.backend.ovs_idl import connection, idlutils
    from ovsdbapp.backend.ovs_idl.transaction import Transaction
    from ovsdbapp.schema.ovn_northbound import impl_idl as nb_idl
    from ovsdbapp.schema.ovn_southbound import impl_idl as sb_idl

LOG = logging.getLogger(__name__)
T = TypeVar("T")
__all__ = ["NB_API", "SB_API", "OvnDatabase", "OvnUnavailable", "OvnUnavailableError",
           "idlutils"]
#: (event: "create" | "update" | "delete", table name, row, the row's old columns or None)
RowCallback = Callable[[str, str, Any, Any], None]
#: the first wait between attempts to reach a database that is down; doubled up to MAX
RETRY_FIRST, RETRY_MAX = 0.5, 8.0


class OvnUnavailable(Exception):
    """The database cannot be reached, or a transaction with it did not complete."""


class OvnUnavailableError(exc.ServiceUnavailable):
    """The API's answer to a write that OVN cannot take now (503)."""

    message = "The OVN Northbound database is unavailable: %(reason)s"


class _WatchingIdl(connection.OvsdbIdl):
    """The IDL, handing every row change of ``watched`` tables to ``on_change``
    (called on the connection's thread: it must be quick and must not raise)."""

    watched: frozenset[str] = frozenset()
    on_change: RowCallback | None = None

    def notify(self, event: str, row: Any, updates: Any = None) -> None:
        table = row._table.name
        if self.on_change is not None and table in self.watched:
            try:
                self.on_change(event, table, row, updates)
            except Exception:  # the IDL's thread must live on
                LOG.exception("OVN %s event handler failed", table)


def _own_connection(api_class: type) -> type:
    """``api_class`` with a connection per instance: ovsdbapp keeps one per class
    for the whole process, and a test or a tool may hold two databases."""

    class Api(api_class):
        @property
        def ovsdb_connection(self) -> connection.Connection:
            return self._own_connection

        @ovsdb_connection.setter
        def ovsdb_connection(self, value: connection.Connection) -> None:
            self._own_connection = value

    Api.__name__ = api_class.__name__
    return Api


NB_API = _own_connection(nb_idl.OvnNbApiIdlImpl)
SB_API = _own_connection(sb_idl.OvnSbApiIdlImpl)


class OvnDatabase:
    """The ``schema`` database at ``remote`` (``tcp:IP:PORT``, ``unix:PATH``...),
    ``tables`` replicated whole and ``columns`` (table: its columns) in part (all
    tables when both are empty), only the rows that match ``conditions`` (table:
    an OVSDB condition) where given; ``on_change`` hears the rows of ``watched``
    tables change (a row that comes to match its table's condition is created,
    one that no longer does is deleted)."""

    def __init__(self, remote: str, schema: str, api_class: type, *,
                 tables: Iterable[str] = (), columns: Mapping[str, Sequence[str]] | None = None,
                 conditions: Mapping[str, list[Any]] | None = None,
                 timeout: float = 10.0,
                 watched: Iterable[str] = (), on_change: RowCallback | None = None,
                 on_connect: Callable[[], None] | None = None):
        self.remote = remote
        self.schema = schema
        self.timeout = timeout
        self._api_class = api_class
        self._tables = tuple(tables)
        self._columns = dict(columns or {})
        self._conditions = dict(conditions or {})
        self._watched = frozenset(watched)
        self._on_change = on_change
        self._on_connect = on_connect
        self.api: Any = None
        self._conn: connection.Connection | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # --- life ------------------------------------------------------------------------

    def start(self, wait: float = 0.0) -> None:
        """Connect in the background; ``wait``: seconds to wait for the first
        connection (0: return at once)."""
        self._thread = threading.Thread(target=self._connect_until_stopped,
                                        name=f"ovsdb-{self.schema}", daemon=True)
        self._thread.start()
        if wait:
            self.wait_connected(wait)

    def _connect_until_stopped(self) -> None:
        delay = RETRY_FIRST
        while not self._stopping.is_set():
            try:
                self._connect()
                return
            except Exception as error:  # noqa: BLE001 - down, refused, no schema yet
                LOG.warning("cannot reach the %s database at %s (%s); retrying in %.1f s",
                            self.schema, self.remote, describe(error), delay)
            self._stopping.wait(delay)
            delay = min(delay * 2, RETRY_MAX)

    def _connect(self) -> None:
        helper = idlutils.get_schema_helper(self.remote, self.schema)
        if not self._tables and not self._columns:
            helper.register_all()
        for table in self._tables:
            helper.register_table(table)
        for table, columns in self._columns.items():
            helper.register_columns(table, list(columns))
        idl = _WatchingIdl(self.remote, helper)
        for table, condition in self._conditions.items():
            idl.cond_change(table, condition)
        idl.watched = self._watched
        idl.on_change = self._on_change
        conn = connection.Connection(idl, self.timeout)
        api = self._api_class(conn, start=False)
        conn.start()
        self._conn, self.api = conn, api
        LOG.info("connected to the %s database at %s", self.schema, self.remote)
        if self._on_connect is not None:
            self._on_connect()

    def wait_connected(self, seconds: float) -> None:
        """Return once connected; OvnUnavailable after ``seconds``."""
        wait_connected(lambda: self.connected, seconds,
                       f"the {self.schema} database at {self.remote}")

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(self.timeout)
        if self._conn is not None:
            self._conn.stop(timeout=self.timeout)
            self._conn.idl.close()

    # --- use -------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether the database answers now (its replica is current)."""
        # python-ovs's Idl says it only through its session (Neutron reads it so too)
        return self._conn is not None and bool(self._conn.idl._session.is_connected())

    def require(self) -> None:
        """Raise OvnUnavailable unless the database answers now."""
        if not self.connected:
            raise OvnUnavailable(f"the {self.schema} database at {self.remote} "
                                 "cannot be reached")

    def transact(self, commands: Iterable[Any], what: str) -> list[Any]:
        """Run ``commands`` (ovsdbapp commands) in one transaction; their results.
        OvnUnavailable when the database cannot be reached or did not answer."""
        self.require()
        txn = Transaction(self.api, self._conn, check_error=True, log_errors=False)
        for command in commands:
            txn.add(command)
        try:
            txn.commit()
        except ovsdbapp_exceptions.TimeoutException as error:
            raise OvnUnavailable(f"{what}: the {self.schema} database did not answer within "
                                 f"{self.timeout:g} s") from error
        except Exception as error:
            if not self.connected:
                raise OvnUnavailable(f"{what}: the {self.schema} database went away "
                                     f"({describe(error)})") from error
            raise
        return [command.result for command in txn.commands]

    def read(self, work: Callable[[Any], T]) -> T:
        """``work(api)`` on the replica while the connection's thread leaves it
        alone: no update applied, no transaction half-built (whose new rows
        have no values yet). Keep it short: the connection waits."""
        self.require()
        assert self._conn is not None
        with self._conn.lock:
            return work(self.api)


def wait_connected(connected: Callable[[], bool], seconds: float, what: str) -> None:
    """Return once ``connected()``; OvnUnavailable naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not connected():
        if time.monotonic() >= deadline:
            raise OvnUnavailable(f"{what} did not answer within {seconds:g} s")
        time.sleep(0.05)


def describe(error: BaseException) -> str:
    """One line for an ovsdbapp or socket error (some have an empty str(), and
    ovsdbapp's TimeoutException made without a message has none at all)."""
    try:
        return str(error) or type(error).__name__
    except Exception:  # noqa: BLE001 - its __str__ failed
        return type(error).__name__
