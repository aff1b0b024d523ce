"""neutrino-db-manage as a process, and the downgrades it offers on every database.

What it prints is what it did: the migrations ``upgrade`` ran, ``history``
with the database's revision marked, ``check_migration`` passing only at head
with the tables the models describe, and ``downgrade`` undoing only what can
be undone: a target that needs a migration without ``downgrade()`` is
refused with one line, before anything changes. Expectations come from the
migration scripts themselves, so a new migration needs no edit here.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from neutrino.db import migrate
from neutrino.db.models import metadata
from tests.harness import create_database

DB_MANAGE = str(Path(sys.executable).parent / "neutrino-db-manage")
SCRIPTS = list(migrate.scripts().walk_revisions())  # newest first
HEAD = SCRIPTS[0].revision
#: the migrations from head down that can be undone, newest first
UNDOABLE = [s.revision for s in SCRIPTS[:next(
    (i for i, s in enumerate(SCRIPTS) if not migrate.reversible(s)), len(SCRIPTS))]]


class DbManage:
    def __init__(self, tmp: Path):
        self.db = tmp / "state" / "neutrino.db"
        self.conf = tmp / "db.conf"
        self.conf.write_text(f"[DEFAULT]\nstate_path = {tmp / 'state'}\n")
        self.tmp = tmp

    def __call__(self, *args: str, code: int = 0) -> str:
        """Run it; the output (stdout, or stderr when it fails), checked for ``code``."""
        proc = subprocess.run([DB_MANAGE, "--config-file", str(self.conf), *args],
                              capture_output=True, text=True, cwd=self.tmp, timeout=120)
        assert proc.returncode == code, (proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr, proc.stderr
        return (proc.stdout if code == 0 else proc.stderr).strip()

    def current(self) -> str | None:
        return migrate.current(f"sqlite:///{self.db}")


@pytest.fixture
def db_manage(tmp_path):
    return DbManage(tmp_path)


def test_upgrade_says_what_it_ran(db_manage):
    assert db_manage("upgrade", SCRIPTS[2].revision) == (
        f"upgraded the schema from an empty database to {SCRIPTS[2].revision}, running "
        f"{', '.join(s.revision for s in reversed(SCRIPTS[2:]))}")
    assert db_manage("upgrade") == (
        f"upgraded the schema from {SCRIPTS[2].revision} to {HEAD} (head), running "
        f"{SCRIPTS[1].revision}, {HEAD}")
    assert db_manage("upgrade", "head") == (
        f"the schema is already at head ({HEAD}): nothing to do")
    assert db_manage("current") == HEAD


def test_history_marks_head_current_and_what_cannot_be_undone(db_manage):
    empty = db_manage("history").splitlines()
    assert empty[-1] == "(the database is empty: no revision is current)"
    db_manage("upgrade")
    shown = db_manage("history").splitlines()
    assert len(shown) == len(SCRIPTS)
    assert shown[0].startswith(f"{SCRIPTS[0].down_revision} -> {HEAD} (head) (current)")
    for line, script in zip(shown, SCRIPTS, strict=True):
        assert line.startswith(f"{script.down_revision or '<base>'} -> {script.revision}")
        assert line.endswith(f": {migrate.title(script)}")
        assert ("(no downgrade)" in line) == (not migrate.reversible(script)), line
    assert shown[-1].startswith(f"<base> -> {SCRIPTS[-1].revision}")


def test_check_migration(db_manage):
    assert db_manage("check_migration", code=1) == (
        f"neutrino-db-manage: the database is at no revision (empty), not at head {HEAD}: "
        "run neutrino-db-manage upgrade head")
    db_manage("upgrade")
    assert db_manage("check_migration") == (
        f"the database is at head ({HEAD}) and matches the models")
    with sqlite3.connect(db_manage.db) as conn:  # a change the migrations did not make
        conn.execute("ALTER TABLE networks ADD COLUMN stray INTEGER")
    error = db_manage("check_migration", code=1)
    assert error == "neutrino-db-manage: remove_column networks.stray", error


@pytest.mark.skipif(len(UNDOABLE) < 2, reason="fewer than two migrations from head have a "
                                              "downgrade()")
def test_downgrade_says_what_it_undid(db_manage):
    db_manage("upgrade")
    assert db_manage("downgrade", "-1") == (
        f"downgraded the schema from {HEAD} (head) to {UNDOABLE[1]}, undoing {HEAD}")
    assert db_manage("check_migration", code=1).endswith(
        f"the database is at {UNDOABLE[1]}, not at head {HEAD}: "
        "run neutrino-db-manage upgrade head")
    db_manage("upgrade")
    lowest = SCRIPTS[len(UNDOABLE)].revision  # below the last migration that can be undone
    assert db_manage("downgrade", lowest) == (
        f"downgraded the schema from {HEAD} (head) to {lowest}, undoing "
        f"{', '.join(UNDOABLE)}")
    assert db_manage.current() == lowest
    assert db_manage("downgrade", lowest) == f"the schema is already at {lowest}: nothing to do"
    assert db_manage("downgrade", HEAD, code=1) == (
        f"neutrino-db-manage: {HEAD} is not below the current revision {lowest}: use upgrade")
    assert db_manage("upgrade").startswith(f"upgraded the schema from {lowest} to {HEAD}")
    assert db_manage("check_migration").startswith("the database is at head")


@pytest.mark.skipif(len(UNDOABLE) == len(SCRIPTS), reason="every migration has a downgrade()")
def test_downgrade_past_a_migration_without_one_is_refused(db_manage):
    db_manage("upgrade")
    stuck = SCRIPTS[len(UNDOABLE)].revision  # the newest migration without downgrade()
    below = SCRIPTS[len(UNDOABLE) + 1].revision if len(SCRIPTS) > len(UNDOABLE) + 1 else "base"
    reach = f" (from {HEAD}, downgrades reach {stuck} at most)" if UNDOABLE else ""
    error = db_manage("downgrade", below, code=1)
    assert error == (f"neutrino-db-manage: cannot downgrade to {below}: migration {stuck} has "
                     f"no downgrade{reach}")
    error = db_manage("downgrade", "base", code=1)
    without = ", ".join(s.revision for s in SCRIPTS if not migrate.reversible(s))
    assert error == (f"neutrino-db-manage: cannot downgrade to base: migration"
                     f"{'s' if ',' in without else ''} {without} "
                     f"{'have' if ',' in without else 'has'} no downgrade{reach}")
    assert db_manage.current() == HEAD, "refused before anything changed"


def test_downgrade_an_unknown_revision_or_an_empty_database(db_manage):
    assert db_manage("downgrade", "0001", code=1) == (
        "neutrino-db-manage: the database has no schema: nothing to downgrade")
    db_manage("upgrade")
    assert db_manage("downgrade", "nosuch", code=1) == (
        "neutrino-db-manage: unknown revision 'nosuch' (neutrino-db-manage history lists them)")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mysql"])
def test_every_downgrade_offered_works_on_every_database(tmp_path, backend):
    """Down as far as the migrations go and up again: the schema is the models' again."""
    if len(UNDOABLE) < 1:
        pytest.skip("no migration has a downgrade()")
    url, drop = create_database(backend, tmp_path)
    try:
        migrate.upgrade(url)
        lowest = SCRIPTS[len(UNDOABLE)].revision
        done = migrate.downgrade(url, lowest)
        assert (done.before, done.after, done.ran) == (HEAD, lowest, tuple(UNDOABLE))
        done = migrate.upgrade(url)
        assert done.ran == tuple(reversed(UNDOABLE)) and done.after == HEAD
        engine = create_engine(url)
        try:
            with engine.connect() as conn:
                assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        finally:
            engine.dispose()
    finally:
        drop()
