"""neutrino-status: one screen that says what a deployment is running and
whether it works: the version, the database (its schema revision against the
code's), the message bus, the plugins and extensions the configuration
loads, the agents alive and dead with their last sync, the largest tables.

It only reads. The plugins are built as the server builds them (which checks
the configuration the same way) but never started or synced; the database is
opened read-only (SQLite ``mode=ro``, a read-only session on a server), so
neither a migration nor anything else can write through it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import sqlite3
import sys
import textwrap
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from sqlalchemy import create_engine, event, func, inspect, select, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from neutrino import cli, config, log
from neutrino.api.extensions import ExtensionError
from neutrino.cmd.startup import StartupError, reach_bus
from neutrino.db import migrate, models
from neutrino.db.util import now
from neutrino.plugins import loader

PROGRAM = "neutrino-status"
DESCRIPTION = ("Show on one screen the version, the database and its schema revision, the "
               "message bus, the loaded plugins and extensions, the agents alive and dead "
               "and the largest tables, reading only; exit 1 when the database or the bus "
               "cannot be reached.")
#: the exit status of a configuration mistake, as the other commands'
CONFIG_ERROR = 2
#: the exit status when the database or the bus cannot be reached
UNREACHABLE = 1
#: seconds to wait for a database server's answer
CONNECT_TIMEOUT = 5
#: the tables shown, largest first
TOP_TABLES = 10
#: the agents the text screen lists (dead ones first); JSON lists them all
SHOWN_AGENTS = 20
WIDTH = 100
#: the session setting that makes every later transaction read-only, by backend
READ_ONLY_SESSION = {"postgresql": "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
                     "mysql": "SET SESSION TRANSACTION READ ONLY",
                     "mariadb": "SET SESSION TRANSACTION READ ONLY"}


class Unreachable(Exception):
    """The database cannot be read; the message is one line."""


@dataclass
class DatabaseStatus:
    url: str
    backend: str
    #: where the configuration sets it
    set_by: str
    reachable: bool = False
    error: str | None = None
    revision: str | None = None
    head: str = ""
    #: ``at head``, ``behind head``, ``empty``, ``unknown`` (newer than the code)
    schema: str = ""


@dataclass
class BusStatus:
    url: str
    #: None: ``memory://``, which lives in the server process, nothing to reach
    reachable: bool | None
    error: str | None = None


@dataclass
class PluginStatus:
    role: str  # core, companion (of the core plugin), service
    name: str  # as the configuration names it
    cls: str


@dataclass
class AgentStatus:
    agent_type: str
    host: str
    alive: bool
    admin_state_up: bool
    heartbeat: str
    resources_synced: bool | None
    last_sync: str | None
    last_full_sync: str | None


@dataclass
class Status:
    version: str
    database: DatabaseStatus
    bus: BusStatus
    plugins: list[PluginStatus]
    extensions: list[str]
    agent_down_time: int
    agents: list[AgentStatus] | None = None  # None: could not be read
    tables: list[tuple[str, int]] | None = None
    #: why agents or tables could not be read, with the database reachable
    errors: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """What makes the exit status 1, each a few words."""
        found = []
        if not self.database.reachable:
            found.append(f"cannot read the database of {self.database.set_by}: "
                         f"{self.database.error}")
        if self.bus.reachable is False:
            found.append(f"cannot reach the bus: {self.bus.error}")
        return found


# --- what the configuration loads ------------------------------------------------------

def loaded_plugins(conf: config.Config) -> list[PluginStatus]:
    """The core plugin, its companions and the service plugins, as the server
    finds them (by entry point name or dotted path)."""
    from neutrino.cmd.server import companion_classes

    core = loader.find(loader.CORE_GROUP, conf.DEFAULT.core_plugin)
    found = [PluginStatus("core", conf.DEFAULT.core_plugin, _qualified(core))]
    found += [PluginStatus("companion", name, _qualified(cls)) for name, cls in
              zip(getattr(core, "companion_plugins", ()), companion_classes(core), strict=True)]
    found += [PluginStatus("service", name, _qualified(loader.find(loader.SERVICE_GROUP, name)))
              for name in conf.DEFAULT.service_plugins]
    return found


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def served_extensions(conf: config.Config) -> list[str]:
    """The aliases the API would serve: the server's own ``build_app``, whose
    plugins touch no database until started, which they are not here."""
    from neutrino.cmd.server import build_app

    app = build_app(conf, serve_rpc=False)
    try:
        return sorted(getattr(app.router, "extensions", {}))
    finally:
        app.on_shutdown()


# --- the database, read-only -----------------------------------------------------------

def database_url(conf: config.Config) -> str:
    """``[database] connection``, or the server's SQLite file in ``state_path``
    (not made here if it is missing, unlike the server)."""
    if conf.database.connection:
        return str(conf.database.connection)
    return f"sqlite:///{os.path.join(os.path.abspath(conf.DEFAULT.state_path), 'neutrino.db')}"


def masked_url(url: str) -> str:
    """The URL with its password (if any) as ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def backend_of(url: str) -> str:
    """``postgresql, psycopg2``; the URL's scheme when SQLAlchemy cannot parse it."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return url.partition(":")[0]
    return f"{parsed.get_backend_name()}, {parsed.get_driver_name()}"


def read_only_engine(url: str) -> Engine:
    """An engine that cannot write: an SQLite file opened ``mode=ro`` (and never
    made), a PostgreSQL or MySQL session whose transactions are read-only."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        path = parsed.database or ""
        if not path or path == ":memory:" or path.startswith("file:"):
            raise Unreachable(f"{url} is an in-memory database: only its own process sees it")
        path = os.path.abspath(path)
        if not os.path.isfile(path):
            raise Unreachable(f"no database file {path}")
        uri = f"file:{quote(path)}?mode=ro"
        return create_engine("sqlite://", poolclass=NullPool,
                             creator=lambda: sqlite3.connect(uri, uri=True, timeout=30))
    engine = create_engine(url, poolclass=NullPool,
                           connect_args={"connect_timeout": CONNECT_TIMEOUT})
    statement = READ_ONLY_SESSION.get(backend)
    if statement is not None:
        @event.listens_for(engine, "connect")
        def read_only(dbapi_conn: Any, _record: Any) -> None:
            cursor = dbapi_conn.cursor()
            cursor.execute(statement)
            cursor.close()
            dbapi_conn.commit()  # a SET in an open transaction would be rolled back with it
    return engine


def schema_state(revision: str | None, head: str, known: set[str]) -> str:
    if revision is None:
        return "empty"
    if revision == head:
        return "at head"
    return "behind head" if revision in known else "unknown"


def read_revision(engine: Engine) -> str | None:
    """alembic's revision of the database (as ``migrate.current``, on this engine)."""
    with engine.connect() as conn:
        if not inspect(conn).has_table(migrate.VERSION_TABLE):
            return None
        found = conn.execute(text(f"SELECT version_num FROM {migrate.VERSION_TABLE}")).scalar()
        return None if found is None else str(found)


def read_agents(engine: Engine, down_time: int, when: datetime.datetime
                ) -> list[AgentStatus]:
    """Every agent, alive as the server counts it: a heartbeat no older than
    ``agent_down_time`` seconds."""
    ag = models.agents
    since = when - datetime.timedelta(seconds=down_time)
    with engine.connect() as conn:
        rows = conn.execute(select(ag.c.agent_type, ag.c.host, ag.c.admin_state_up,
                                   ag.c.heartbeat_timestamp, ag.c.resources_synced,
                                   ag.c.configurations)
                            .order_by(ag.c.agent_type, ag.c.host)).all()
    found = []
    for row in rows:
        reported = row.configurations if isinstance(row.configurations, dict) else {}
        found.append(AgentStatus(
            row.agent_type, row.host, row.heartbeat_timestamp >= since,
            bool(row.admin_state_up), row.heartbeat_timestamp.strftime("%Y-%m-%d %H:%M:%S"),
            row.resources_synced, _text(reported.get("last_sync")),
            _text(reported.get("last_full_sync"))))
    return found


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def read_table_counts(engine: Engine) -> list[tuple[str, int]]:
    """Rows of each of the models' tables that the database has, largest first."""
    with engine.connect() as conn:
        present = set(inspect(conn).get_table_names())
        counts = [(table.name, int(conn.execute(select(func.count()).select_from(table))
                                   .scalar_one()))
                  for table in models.metadata.sorted_tables if table.name in present]
    return sorted(counts, key=lambda item: (-item[1], item[0]))


def read_database(url: str, set_by: str, down_time: int
                  ) -> tuple[DatabaseStatus, list[AgentStatus] | None,
                             list[tuple[str, int]] | None, list[str]]:
    """The database's status, its agents and table counts (None where they
    could not be read), and why not."""
    scripts = migrate.scripts()
    head = scripts.get_current_head() or ""
    status = DatabaseStatus(masked_url(url), backend_of(url), set_by, head=head)
    try:
        engine = read_only_engine(url)
    except (ArgumentError, ImportError) as error:
        status.error = _first_line(error)
        return status, None, None, []
    except Unreachable as error:
        status.error = str(error)
        return status, None, None, []
    errors: list[str] = []
    agents = tables = None
    try:
        status.revision = read_revision(engine)
        status.reachable = True
        status.schema = schema_state(status.revision, head,
                                     {s.revision for s in scripts.walk_revisions()})
        if status.revision is not None:
            agents = _section(errors, "agents", lambda: read_agents(engine, down_time, now()))
            tables = _section(errors, "tables", lambda: read_table_counts(engine))
    except SQLAlchemyError as error:
        status.error = _first_line(error)
    finally:
        engine.dispose()
    return status, agents, tables, errors


def _section(errors: list[str], name: str, read: Callable[[], Any]) -> Any:
    """``read()``, or None with the reason in ``errors`` (an old schema, say)."""
    try:
        return read()
    except SQLAlchemyError as error:
        errors.append(f"cannot read the {name}: {_first_line(error)}")
        return None


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


# --- the bus ---------------------------------------------------------------------------

def read_bus(conf: config.Config) -> BusStatus:
    url = conf.DEFAULT.transport_url
    if urlsplit(url).scheme == "memory":
        return BusStatus(masked_url(url), None)
    try:
        reach_bus(conf)
    except StartupError as error:
        return BusStatus(masked_url(url), False, str(error))
    return BusStatus(masked_url(url), True)


# --- the screen ------------------------------------------------------------------------

def as_json(status: Status) -> str:
    data = asdict(status)
    data["tables"] = (None if status.tables is None else
                      [{"name": name, "rows": rows} for name, rows in status.tables])
    data["ok"] = not status.problems()
    return json.dumps(data, indent=2)


def _label(name: str, lines: list[str]) -> list[str]:
    """``name`` in a 12-column margin before the first of ``lines``."""
    return [f"{name if i == 0 else '':<12}{line}" for i, line in enumerate(lines)]


def _wrapped(words: list[str], width: int = WIDTH - 12) -> list[str]:
    return textwrap.wrap(", ".join(words), width, break_on_hyphens=False) or ["none"]


def _clip(value: str, width: int) -> str:
    return value if len(value) <= width else value[:width - 3] + "..."


def as_text(status: Status) -> str:
    """The one screen: aligned, at most ``WIDTH`` columns."""
    db = status.database
    lines = [f"{'Version':<12}neutrino {status.version}", ""]
    if db.reachable:
        schema = {"at head": f"schema at {db.revision} (head)",
                  "behind head": f"schema at {db.revision}, behind head {db.head}: "
                                 "run neutrino-db-manage upgrade head",
                  "empty": f"no schema (head is {db.head}): run neutrino-db-manage "
                           "upgrade head",
                  "unknown": f"schema at {db.revision}, unknown to this code "
                             f"(head {db.head}): newer?"}[db.schema]
        state = f"reachable; {schema}"
    else:
        state = f"UNREACHABLE: {db.error}"
    lines += _label("Database", [_clip(db.url, WIDTH - 12),
                                 *textwrap.wrap(f"{db.backend}: {state}", WIDTH - 12)])
    bus = status.bus
    bus_state = {None: "inside the server process (memory://): nothing to reach from here",
                 True: "reachable",
                 False: f"UNREACHABLE: {bus.error}"}[bus.reachable]
    lines += _label("Bus", [_clip(bus.url, WIDTH - 12), *textwrap.wrap(bus_state, WIDTH - 12)])
    lines.append("")
    lines += _label("Plugins", plugin_lines(status.plugins))
    lines += _label("Extensions", [f"{len(status.extensions)} served:",
                                   *_wrapped(status.extensions)])
    lines.append("")
    lines += agent_lines(status)
    lines.append("")
    if status.tables is None:
        lines.append("Largest tables: not read")
    else:
        empty = sum(rows == 0 for _, rows in status.tables)
        lines.append(f"Largest tables (rows; of {len(status.tables)} tables, {empty} are empty)")
        top = [(name, rows) for name, rows in status.tables[:TOP_TABLES] if rows]
        name_width = max((len(name) for name, _ in top), default=0)
        lines += [f"  {name:<{name_width}}  {rows:>10}" for name, rows in top]
    lines += status.errors
    return "\n".join(line.rstrip() for line in lines)


def plugin_lines(plugins: list[PluginStatus]) -> list[str]:
    """By role, each plugin by its configured name and its class's."""
    lines = []
    for role, title in (("core", "core"), ("companion", "with the core"),
                        ("service", "services")):
        named = [f"{p.name} ({p.cls.rpartition('.')[2]})" for p in plugins if p.role == role]
        if named:
            lines += textwrap.wrap(f"{title}: {', '.join(named)}", WIDTH - 12,
                                   subsequent_indent="  ", break_on_hyphens=False)
    return lines or ["none"]


def agent_lines(status: Status) -> list[str]:
    if status.agents is None:
        return ["Agents      not read"]
    agents = status.agents
    alive = sum(a.alive for a in agents)
    lines = [f"{'Agents':<12}{alive} alive, {len(agents) - alive} dead (dead: no heartbeat "
             f"for agent_down_time = {status.agent_down_time} s; times in UTC)"]
    if not agents:
        return lines
    shown = sorted(agents, key=lambda a: a.alive)[:SHOWN_AGENTS]  # dead first, stable
    type_width = min(max(len(a.agent_type) for a in shown), 20)
    host_width = max(4, WIDTH - (2 + type_width + 2 + 5 + 2 + 5 + 2 + 19 + 2 + 19 + 2))
    host_width = min(host_width, max(len(a.host) for a in shown))
    row = f"  {{:<{type_width}}}  {{:<{host_width}}}  {{:<5}}  {{:<5}}  {{:<19}}  {{}}"
    lines.append(row.format("TYPE", "HOST", "ALIVE", "ADMIN", "LAST HEARTBEAT",
                            "LAST FULL SYNC"))
    for a in shown:
        lines.append(row.format(_clip(a.agent_type, type_width), _clip(a.host, host_width),
                                "yes" if a.alive else "DEAD", "up" if a.admin_state_up
                                else "down", a.heartbeat, a.last_full_sync or "-"))
    if len(agents) > len(shown):
        lines.append(f"  ... and {len(agents) - len(shown)} more alive (--format json "
                     "lists every agent)")
    return lines


# --- the command -----------------------------------------------------------------------

def make_parser() -> argparse.ArgumentParser:
    parser = cli.parser(PROGRAM, DESCRIPTION)
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: one screen for people (the default); json: for programs")
    return parser


def gather(files: list[str], args: argparse.Namespace) -> Status:
    """Everything the screen shows; a configuration mistake is a StartupError."""
    from neutrino.cmd.server import load_config

    try:
        conf = load_config(files)
        log.setup(conf, PROGRAM, cli.logging_overrides(args))
    except (config.ConfigError, loader.PluginLoadError) as error:
        raise StartupError(str(error)) from None
    quiet_logging()
    try:
        plugins = loaded_plugins(conf)
        extensions = served_extensions(conf)
    except (config.ConfigError, ExtensionError, loader.PluginLoadError) as error:
        raise StartupError(str(error)) from None
    except (SQLAlchemyError, ImportError) as error:  # a URL no engine can be made of
        raise StartupError(f"cannot use the database of "
                           f"{conf.source('database', 'connection')}: "
                           f"{_first_line(error)}") from None
    down_time = int(conf.DEFAULT.agent_down_time)
    set_by = (conf.source("database", "connection") if conf.database.connection
              else conf.source("DEFAULT", "state_path"))  # the file is the server's there
    database, agents, tables, errors = read_database(database_url(conf), set_by, down_time)
    return Status(cli.version(), database, read_bus(conf), plugins, extensions, down_time,
                  agents, tables, errors)


def quiet_logging() -> None:
    """What building the plugins logs at INFO is the server's start, not this
    command's; it stays for debug."""
    root = logging.getLogger()
    if not root.isEnabledFor(logging.DEBUG):
        for name in ("neutrino", "alembic"):
            logger = logging.getLogger(name)
            if logger.level == logging.NOTSET:
                logger.setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> None:
    args = make_parser().parse_args(argv)
    try:
        files = args.config_file or config.files_from_env()
        status = gather(files, args)
    except (config.ConfigError, StartupError) as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        sys.exit(CONFIG_ERROR)
    try:
        print(as_json(status) if args.format == "json" else as_text(status), flush=True)
    except BrokenPipeError:  # status | head: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    problems = status.problems()
    if problems:
        print(f"{PROGRAM}: {'; '.join(problems)}", file=sys.stderr)
        sys.exit(UNREACHABLE)
    sys.exit(0)


if __name__ == "__main__":
    main()
