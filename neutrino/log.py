"""Logging for every neutrino command: the ``[DEFAULT]`` options and ``setup()``.

The options are Neutron's (oslo.log's) names and meanings: ``debug`` (in the
core group), ``log_file`` (relative to ``log_dir`` when both are set),
``log_dir`` (alone: ``<log_dir>/<program>.log``), ``use_syslog`` with
``syslog_log_facility``, ``use_json`` and ``default_log_levels`` (``module=LEVEL``
pairs). A value that cannot be used is a ``ConfigError`` naming the option and
its file, raised before the command does anything else.

Records go through a queue to one thread that formats and writes them: the
thread that logs (an API request's, or the event loop) pays only for making
the record and merging its arguments, never for formatting, a disk or a
syslog daemon that is slow. The queue is drained at exit; a forked child
starts a writing thread of its own.

The id of the API request being handled (``REQUEST_ID``, set by the API for
the duration of a request) goes with every record logged meanwhile.
"""

from __future__ import annotations

import atexit
import copy
import json
import logging
import logging.handlers
import os
import queue
import socket
import sys
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime

from neutrino.config import Config, ConfigError, Opt, OptGroup, parse_bool, parse_list

#: where the local syslog daemon (or journald) listens
SYSLOG_SOCKET = "/dev/log"

#: the request a thread is handling, for the records it logs meanwhile
REQUEST_ID: ContextVar[str | None] = ContextVar("neutrino_request_id", default=None)

TEXT_FORMAT = ("%(asctime)s.%(msecs)03d %(process)d %(levelname)s %(name)s "
               "%(request)s%(message)s")
SYSLOG_FORMAT = "%(levelname)s %(name)s %(request)s%(message)s"  # syslog stamps the time
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"

#: libraries that say too much (oslo.log's list, for the libraries neutrino uses);
#: they apply with debug too, so that debug shows neutrino's own records
DEFAULT_LOG_LEVELS = [
    "aio_pika=WARN", "aiormq=WARN", "sqlalchemy=WARN", "keystoneauth=WARN",
    "urllib3.connectionpool=WARN", "stevedore=WARN", "pyroute2=WARN", "ovsdbapp=INFO",
]


def parse_levels(text: str) -> list[str]:
    """``module=LEVEL, ...``; LEVEL a level name (DEBUG ... CRITICAL) or a number."""
    known = logging.getLevelNamesMapping()
    pairs = []
    for item in parse_list(text):
        module, sep, level = (part.strip() for part in item.partition("="))
        if not sep or not module or not level:
            raise ValueError(f"expected module=LEVEL, not {item!r}")
        if level.upper() not in known and not level.isdigit():
            raise ValueError(f"unknown level {level!r} for {module} "
                             f"(one of {', '.join(known)}, or a number)")
        pairs.append(f"{module}={level.upper()}")
    return pairs


def _facility_number(text: str) -> int:
    name = text.strip().lower()
    name = name[4:] if name.startswith("log_") else name
    return logging.handlers.SysLogHandler.facility_names[name]


def parse_facility(text: str) -> str:
    """A syslog facility, as oslo.log takes it: LOG_USER, LOG_LOCAL0 ... (or user, local0)."""
    try:
        _facility_number(text)
    except KeyError:
        raise ValueError("expected a syslog facility such as LOG_USER, LOG_DAEMON or "
                         "LOG_LOCAL0 ... LOG_LOCAL7") from None
    return text.strip()


GROUP = OptGroup("DEFAULT", [
    Opt("log_file", str, "", "Log to this file instead of stderr."),
    Opt("log_dir", str, "", "Directory of log_file."),
    Opt("use_syslog", parse_bool, False, "Also log to the local syslog."),
    Opt("syslog_log_facility", parse_facility, "LOG_USER", "The syslog facility."),
    Opt("use_json", parse_bool, False, "Log one JSON object per line."),
    Opt("default_log_levels", parse_levels, DEFAULT_LOG_LEVELS,
        "Levels of chosen loggers, as module=LEVEL pairs."),
])


class _WithRequestId(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = REQUEST_ID.get()
        return True


class TextFormatter(logging.Formatter):
    """The classic line, with ``[req-...]`` before the message during a request."""

    def format(self, record: logging.LogRecord) -> str:
        request_id = getattr(record, "request_id", None)
        record.request = f"[{request_id}] " if request_id else ""
        return super().format(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (a traceback is a string in it)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created).astimezone().isoformat(
                timespec="milliseconds"),
            "level": record.levelname, "logger": record.name,
            "message": record.getMessage(), "process": record.process}
        request_id = getattr(record, "request_id", None)
        if request_id:
            entry["request_id"] = request_id
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["traceback"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        return json.dumps(entry, ensure_ascii=False, default=str)


class _Queued(logging.handlers.QueueHandler):
    """Hands records to the writing thread with their message merged (its
    arguments may change once the call returns) but not yet formatted."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        exc_info = record.exc_info
        if exc_info:  # the traceback, as text, while its frames are what they were
            record = copy.copy(record)
            record.exc_text = _PLAIN.formatException(exc_info)
            record.exc_info = None
        record.msg = record.getMessage()
        record.args = None
        return record


_PLAIN = logging.Formatter()


@dataclass
class _Installed:
    handler: _Queued
    listener: logging.handlers.QueueListener
    leveled: list[str] = field(default_factory=list)


_installed: _Installed | None = None


def setup(conf: Config, program: str, overrides: Mapping[str, object] | None = None,
          syslog_address: str = SYSLOG_SOCKET) -> None:
    """Log as ``conf`` (and ``overrides``: command-line values by option name) says.

    Replaces what an earlier call installed. Raises ConfigError when a log file
    cannot be opened or syslog cannot be reached."""
    conf.register([GROUP])
    given = dict(overrides or {})
    opts = conf.DEFAULT

    def value(name: str) -> object:
        return given[name] if name in given else getattr(opts, name)

    def source(name: str) -> str:
        if name in given:
            return f"--{name.replace('_', '-')} on the command line"
        return conf.source("DEFAULT", name)

    json_lines = bool(value("use_json"))
    handlers: list[logging.Handler] = []
    try:
        path = log_path(str(value("log_file")), str(value("log_dir")), program)
        if path is not None:
            named = [source(n) for n in ("log_file", "log_dir") if value(n)]
            try:
                handlers.append(logging.handlers.WatchedFileHandler(path, encoding="utf-8"))
            except OSError as error:
                raise ConfigError(f"cannot open log file {path}: {error.strerror or error}, "
                                  f"set by {' and '.join(named)}") from None
        else:
            handlers.append(logging.StreamHandler(sys.stderr))
        for handler in handlers:
            handler.setFormatter(JsonFormatter() if json_lines
                                 else TextFormatter(TEXT_FORMAT, DATE_FORMAT))
        if value("use_syslog"):
            handlers.append(_syslog(syslog_address, opts.syslog_log_facility, program,
                                    json_lines, source("use_syslog")))
    except ConfigError:
        for handler in handlers:
            handler.close()
        raise
    shutdown()
    global _installed
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    front = _Queued(records)
    front.addFilter(_WithRequestId())
    listener = logging.handlers.QueueListener(records, *handlers)
    listener.start()
    root = logging.getLogger()
    root.addHandler(front)
    root.setLevel(logging.DEBUG if value("debug") else logging.INFO)
    installed = _Installed(front, listener)
    for pair in opts.default_log_levels:
        module, _, level = pair.partition("=")
        logging.getLogger(module).setLevel(int(level) if level.isdigit() else level)
        installed.leveled.append(module)
    _installed = installed


def log_path(log_file: str, log_dir: str, program: str) -> str | None:
    """Where the log goes, as oslo.log decides it; None: stderr."""
    if log_file and log_dir:
        return os.path.join(log_dir, log_file)
    if log_file:
        return log_file
    if log_dir:
        return os.path.join(log_dir, f"{program}.log")
    return None


def _syslog(address: str, facility: str, program: str, json_lines: bool,
            source: str) -> logging.Handler:
    """A handler to the local syslog, which must be there: records sent to no one
    would each print a logging error instead."""
    reason = _unreachable(address)
    if reason is not None:
        raise ConfigError(f"cannot reach syslog at {address}: {reason}, needed by {source}")
    handler = logging.handlers.SysLogHandler(address, facility=_facility_number(facility))
    handler.ident = f"{program}[{os.getpid()}]: "
    handler.setFormatter(JsonFormatter() if json_lines
                         else TextFormatter(SYSLOG_FORMAT))
    return handler


def _unreachable(address: str) -> str | None:
    """Why nothing takes datagrams or connections at the UNIX socket ``address``."""
    reason = None
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        with socket.socket(socket.AF_UNIX, kind) as probe:
            try:
                probe.connect(address)
                return None
            except OSError as error:
                reason = reason or error.strerror or str(error)
    return reason


def shutdown() -> None:
    """Write out what is queued and remove what ``setup`` installed."""
    global _installed
    if _installed is None:
        return
    root = logging.getLogger()
    root.removeHandler(_installed.handler)
    _installed.listener.stop()
    for handler in _installed.listener.handlers:
        handler.close()
    for module in _installed.leveled:
        logging.getLogger(module).setLevel(logging.NOTSET)
    _installed = None


def _after_fork() -> None:
    """A forked child (``--background``) has no writing thread: it gets its own,
    on a fresh queue (the parent's may have been mid-use when it forked)."""
    if _installed is None:
        return
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    _installed.handler.queue = records
    _installed.listener = logging.handlers.QueueListener(records, *_installed.listener.handlers)
    _installed.listener.start()


atexit.register(shutdown)
os.register_at_fork(after_in_child=_after_fork)
