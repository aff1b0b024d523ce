"""Schema migrations (alembic), run by the server at start and by neutrino-db-manage.

The functions here say what they did (the revisions before and after, the
migrations run) rather than print: the server logs it, db-manage prints it.
Not every migration can be undone: ``downgrade`` refuses, before touching
anything, a target that would need a migration without a ``downgrade()``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import Script, ScriptDirectory
from alembic.script.revision import RevisionError
from alembic.util.exc import CommandError
from sqlalchemy import create_engine, inspect, text

HERE = os.path.dirname(os.path.abspath(__file__))
#: the revision of an empty database, in alembic's words
BASE = "base"
#: where alembic keeps the database's revision (its default name)
VERSION_TABLE = "alembic_version"


class MigrationError(Exception):
    """A migration that cannot be done as asked; the message is one line."""


@dataclass(frozen=True)
class Migrated:
    """What an upgrade or a downgrade did: the revision before and after (None:
    an empty database) and the migrations it ran, in the order it ran them."""

    before: str | None
    after: str | None
    ran: tuple[str, ...]


@dataclass(frozen=True)
class Revision:
    """A migration, as ``history`` shows it."""

    revision: str
    down_revision: str | None
    title: str
    reversible: bool
    head: bool
    current: bool


def alembic_config(url: str) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", os.path.join(HERE, "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def scripts(url: str = "sqlite://") -> ScriptDirectory:
    """The migration scripts (the URL plays no part in finding them)."""
    return ScriptDirectory.from_config(alembic_config(url))


def head() -> str:
    found = scripts().get_current_head()
    assert found is not None, "the migrations have one head"
    return found


def upgrade(url: str, revision: str = "head") -> Migrated:
    before = current(url)
    command.upgrade(alembic_config(url), revision)
    after = current(url)
    return Migrated(before, after, _between(scripts(url), after, before, newest_first=False))


def current(url: str) -> str | None:
    """The database's revision; None for an empty database.

    Read from alembic's table directly: a MigrationContext would log two INFO
    lines of its own each time (the server reads it before and after upgrading)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table(VERSION_TABLE):
                return None
            return conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    finally:
        engine.dispose()


def revision(url: str, message: str, autogenerate: bool = True) -> None:
    command.revision(alembic_config(url), message=message, autogenerate=autogenerate)


def history(url: str) -> list[Revision]:
    """Every migration, newest first, with the database's place among them."""
    at = current(url)
    directory = scripts(url)
    tip = directory.get_current_head()
    return [Revision(script.revision, _down(script), title(script), reversible(script),
                     script.revision == tip, script.revision == at)
            for script in directory.walk_revisions()]


def title(script: Script) -> str:
    """The first line of a migration's docstring."""
    return (script.doc or "").strip().splitlines()[0] if (script.doc or "").strip() else ""


def reversible(script: Script) -> bool:
    return callable(getattr(script.module, "downgrade", None))


def _down(script: Script) -> str | None:
    down = script.down_revision
    return down if isinstance(down, str) or down is None else ",".join(down)


def check(url: str) -> list[str]:
    """Why the database is not what the code expects (at head, its tables as the
    models describe them); empty when it is."""
    at, tip = current(url), head()
    if at != tip:
        return [f"the database is at {at or 'no revision (empty)'}, not at head {tip}: "
                "run neutrino-db-manage upgrade head"]
    from neutrino.db.models import metadata  # the whole model: only this check needs it

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            differences = compare_metadata(MigrationContext.configure(conn), metadata)
    finally:
        engine.dispose()
    return [_difference(item) for item in differences]


def _difference(item: tuple[Any, ...] | list[tuple[Any, ...]]) -> str:
    """One of autogenerate's differences, in a few words: ``add_column networks.foo``."""
    words = []
    for op in item if isinstance(item, list) else [item]:  # modify_* come in lists
        kind, *rest = op
        if kind.startswith("modify_"):  # schema, table, column, info, old, new
            _, table, column, _, old, new = rest
            words.append(f"{kind} {table}.{column}: {old!r} -> {new!r}")
        elif kind.endswith("_column"):  # schema, table, column
            _, table, column = rest
            words.append(f"{kind} {table}.{column.name}")
        else:  # a table, an index or a constraint
            thing = rest[0]
            parts = (getattr(getattr(thing, "table", None), "name", None),
                     getattr(thing, "name", None))
            words.append(f"{kind} {'.'.join(str(part) for part in parts if part)}")
    return "; ".join(words)


def downgrade(url: str, target: str) -> Migrated:
    """Undo migrations down to ``target`` (a revision, ``base``, or ``-N``: N
    steps). Refuses, touching nothing, a target that is not below the current
    revision or that needs a migration that cannot be undone."""
    directory = scripts(url)
    before = current(url)
    if before is None:
        raise MigrationError("the database has no schema: nothing to downgrade")
    goal = _resolve_target(directory, before, target)
    if goal == before:
        return Migrated(before, before, ())
    undo = _between(directory, before, goal, newest_first=True)
    if not undo or (goal is not None and goal in undo):
        raise MigrationError(f"{target} is not below the current revision {before}: "
                             "use upgrade")
    stuck = [rev for rev in undo if not reversible(directory.get_revision(rev))]
    if stuck:
        can = _reversible_tail(directory, before)
        reach = f" (from {before}, downgrades reach {can} at most)" if can != before else ""
        which = (f"migration {stuck[0]} has" if len(stuck) == 1
                 else f"migrations {', '.join(stuck)} have")
        raise MigrationError(f"cannot downgrade to {goal or BASE}: {which} no downgrade{reach}")
    command.downgrade(alembic_config(url), goal or BASE)
    after = current(url)
    return Migrated(before, after, _between(directory, before, after, newest_first=True))


def _resolve_target(directory: ScriptDirectory, at: str, target: str) -> str | None:
    """The revision ``target`` names; None: base (an empty schema)."""
    if target == BASE:
        return None
    if target.startswith("-") and target[1:].isdigit():
        goal: str | None = at
        for _ in range(int(target[1:])):
            if goal is None:
                raise MigrationError(f"{target}: the database is only "
                                     f"{len(_between(directory, at, None, True))} "
                                     "migration(s) above base")
            goal = _down(directory.get_revision(goal))
        return goal
    try:
        return directory.get_revision(target).revision
    except CommandError:
        raise MigrationError(f"unknown revision {target!r} (neutrino-db-manage history "
                             "lists them)") from None


def _between(directory: ScriptDirectory, upper: str | None, lower: str | None,
             newest_first: bool) -> tuple[str, ...]:
    """The migrations above ``lower`` up to ``upper`` (None: base)."""
    if upper is None or upper == lower:
        return ()
    try:
        revs = [script.revision for script in
                directory.iterate_revisions(upper, lower or BASE)]
    except (CommandError, RevisionError):  # lower is not below upper
        return ()
    return tuple(revs if newest_first else reversed(revs))


def _reversible_tail(directory: ScriptDirectory, at: str) -> str:
    """The lowest revision that downgrading from ``at`` can reach."""
    reach = at
    while reach is not None:
        script = directory.get_revision(reach)
        if not reversible(script):
            return reach
        down = _down(script)
        if down is None:
            return BASE
        reach = down
    return BASE
