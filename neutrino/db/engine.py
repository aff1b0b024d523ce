"""Engines and transactions, with retry on conflicts.

Correctness under many workers and servers comes from constraints and short
transactions: a transaction that loses a race (unique violation, deadlock,
serialization failure, SQLite busy) is run again from the start, and each
attempt re-reads what it depends on.
"""

from __future__ import annotations

import fcntl
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from neutrino import exceptions as exc
from neutrino import metrics

LOG = logging.getLogger(__name__)
T = TypeVar("T")

# PostgreSQL SQLSTATEs and MySQL error numbers that mean "lost a race, try again".
_PG_RETRY = {"40001", "40P01", "55P03"}
_MYSQL_RETRY = {1205, 1213, 1020}


def make_engine(url: str, pool_size: int = 10) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30},
                               pool_size=pool_size, max_overflow=20)
        _sqlite_setup(engine)
        return engine
    kwargs: dict[str, Any] = {"pool_size": pool_size, "max_overflow": 20,
                              "pool_pre_ping": True}
    if url.startswith("mysql"):
        kwargs["isolation_level"] = "READ COMMITTED"
        if "charset=" not in url:
            url += ("&" if "?" in url else "?") + "charset=utf8mb4"
    return create_engine(url, **kwargs)


def _sqlite_setup(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves, below
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(conn: Connection) -> None:
        # A writer takes the write lock up front: a deferred transaction that
        # later upgrades cannot wait for the lock and fails at once instead.
        mode = conn.get_execution_options().get("sqlite_begin", "")
        conn.exec_driver_sql(f"BEGIN {mode}")


def is_retriable(error: BaseException) -> bool:
    if isinstance(error, exc.RetryRequest | IntegrityError):
        return True
    if not isinstance(error, DBAPIError):
        return False
    orig = error.orig
    code = getattr(orig, "pgcode", None)
    if code in _PG_RETRY:
        return True
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int) and args[0] in _MYSQL_RETRY:
        return True
    if isinstance(error, OperationalError):
        text = str(orig).lower()
        return "database is locked" in text or "database is busy" in text
    return False


class WriterQueue:
    """The writers of one SQLite file, in every thread and process, wait here in turn.

    SQLite has one writer at a time anyway, but a writer that finds the file
    locked sleeps in SQLite's busy handler (1, 2, 5, ... 100 ms between tries):
    the database stands idle while writers sleep, and the process that just
    committed takes the lock again before a sleeper wakes, so one API worker
    does all the writing while the other's CPU idles and its requests wait.
    Queued on an ``flock`` of a file beside the database instead, the next
    writer, from whichever process, is woken the moment the lock is free. This
    only orders the writers that use it; SQLite's locking still keeps the data
    right, whoever else writes.
    """

    def __init__(self, database: str | None):
        in_memory = not database or database == ":memory:" or database.startswith("file:")
        self.path = None if in_memory else f"{database}-writers.lock"
        self.local = threading.local()  # per thread: its own descriptor, its depth
        self.fallback = threading.RLock()  # no file: one process, threads queue here

    @contextmanager
    def turn(self) -> Iterator[None]:
        fd = self._descriptor()
        if fd is None:
            with self.fallback:
                yield
            return
        depth = getattr(self.local, "depth", 0)
        if depth == 0:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits in the kernel, GIL released
        self.local.depth = depth + 1
        try:
            yield
        finally:
            self.local.depth = depth
            if depth == 0:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _descriptor(self) -> int | None:
        if self.path is None:
            return None
        fd = getattr(self.local, "fd", None)
        if fd is None:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as error:
                LOG.warning("cannot open %s (%s): SQLite writers wait in its busy handler",
                            self.path, error)
                self.path = None
                return None
            self.local.fd = fd
        return fd


class Database:
    def __init__(self, url: str, max_retries: int = 20, pool_size: int = 10):
        self.url = url
        self.engine = make_engine(url, pool_size)
        self.max_retries = max_retries
        self.is_sqlite = url.startswith("sqlite")
        self.dialect = self.engine.dialect.name
        self._writers = WriterQueue(self.engine.url.database if self.is_sqlite else None)

    @contextmanager
    def reader(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def write(self, work: Callable[[Connection], T]) -> T:
        """Run ``work(conn)`` in one write transaction, again if it lost a race."""
        attempt = 0
        while True:
            try:
                if self.is_sqlite:
                    with self.engine.connect() as conn:
                        conn.execution_options(sqlite_begin="IMMEDIATE")
                        with self._writers.turn(), conn.begin():
                            return work(conn)
                with self.engine.connect() as conn, conn.begin():
                    return work(conn)
            except Exception as error:
                if not is_retriable(error):
                    raise
                attempt += 1
                metrics.db_retry(gave_up=attempt >= self.max_retries)
                if attempt >= self.max_retries:
                    LOG.warning("giving up after %d attempts: %s", attempt, error)
                    raise exc.Conflicting(
                        msg="The request conflicted with concurrent changes; "
                            "please retry") from error
                time.sleep(random.uniform(0, min(0.2, 0.002 * 2 ** attempt)))

    def dispose(self) -> None:
        self.engine.dispose()
