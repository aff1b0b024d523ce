"""neutrino-db-manage: the database schema (alembic migrations) of the
``[database] connection`` in the config files.

Each subcommand prints what it found or did: ``upgrade`` the revisions it ran
(or that there was nothing to do), ``history`` every migration with the
database's place among them, ``check_migration`` whether the database is at
head with the tables the code describes, ``downgrade`` what it undid; and it
refuses, with one line, a downgrade that a migration cannot do.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from alembic.util import CommandError
from sqlalchemy.exc import SQLAlchemyError

from neutrino import cli, config, log
from neutrino.db import migrate

PROGRAM = "neutrino-db-manage"
DESCRIPTION = ("Create, upgrade, show, check or downgrade the schema of the database "
               "that [database] connection of the config files names.")


def make_parser() -> argparse.ArgumentParser:
    parser = cli.parser(PROGRAM, DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    up = sub.add_parser("upgrade", help="run the migrations up to a revision (default: head)",
                        description="Run the migrations up to REVISION, and print which ran.")
    up.add_argument("revision", nargs="?", default="head", metavar="REVISION",
                    help="a revision id, or head (the default)")
    sub.add_parser("current", help="print the database's revision",
                   description="Print the database's revision, or (empty database).")
    sub.add_parser("history", help="list the migrations, newest first, marking the current one",
                   description="List the migrations, newest first: each one's revisions, "
                               "whether it is head, the database's (current), or cannot be "
                               "undone (no downgrade).")
    sub.add_parser("check_migration",
                   help="exit 0 if the database is at head and its tables match the models",
                   description="Exit 0 if the database is at head and autogenerate finds no "
                               "difference between its tables and the models; otherwise "
                               "print one line saying what differs and exit 1.")
    down = sub.add_parser("downgrade", help="undo migrations down to a revision",
                          description="Undo migrations down to REVISION. Only migrations "
                                      "with a downgrade can be undone (history marks the "
                                      "others); a REVISION that needs another is refused "
                                      "before anything changes.")
    down.add_argument("revision", metavar="REVISION",
                      help="a revision id, base, or -N (N migrations down)")
    rev = sub.add_parser("revision", help="write a new migration script (developers)",
                         description="Write a new migration script under the package's "
                                     "migrations.")
    rev.add_argument("-m", "--message", required=True, help="its title")
    rev.add_argument("--autogenerate", action="store_true",
                     help="fill it with the differences between the models and the database")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = make_parser().parse_args(argv)
    try:
        # no file: no database either, rather than a new one in ./state
        files = args.config_file or config.files_from_env()
        if not files:
            raise config.ConfigError(f"no configuration: give --config-file FILE (the "
                                     f"server's), or list the files in {config.CONFIG_ENV}")
        conf = config.load(files)
        log.setup(conf, PROGRAM, cli.logging_overrides(args))
        url = config.database_url(conf)
    except config.ConfigError as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        sys.exit(2)
    quiet_alembic()
    try:
        code = run(args, url)
    except migrate.MigrationError as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        code = 1
    except CommandError as error:  # alembic's: an unknown revision, say
        print(f"{PROGRAM}: {_first_line(error)}", file=sys.stderr)
        code = 1
    except (SQLAlchemyError, ImportError) as error:  # ImportError: a missing DB driver
        print(f"{PROGRAM}: cannot use the database of "
              f"{conf.source('database', 'connection')}: {_first_line(error)}",
              file=sys.stderr)
        code = 1
    except BrokenPipeError:  # history | head: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def quiet_alembic() -> None:
    """alembic's own INFO lines say what this command prints; they stay for
    debug, or when default_log_levels names alembic."""
    alembic = logging.getLogger("alembic")
    if alembic.level == logging.NOTSET and not logging.getLogger().isEnabledFor(logging.DEBUG):
        alembic.setLevel(logging.WARNING)


def run(args: argparse.Namespace, url: str) -> int:
    """The subcommand; its exit code."""
    if args.command == "upgrade":
        print(upgraded(migrate.upgrade(url, args.revision), args.revision))
    elif args.command == "current":
        print(migrate.current(url) or "(empty database)")
    elif args.command == "history":
        print("\n".join(history_lines(migrate.history(url), migrate.current(url))))
    elif args.command == "check_migration":
        problems = migrate.check(url)
        if problems:
            print(f"{PROGRAM}: {'; '.join(problems)}", file=sys.stderr)
            return 1
        print(f"the database is at head ({migrate.head()}) and matches the models")
    elif args.command == "downgrade":
        print(downgraded(migrate.downgrade(url, args.revision)))
    else:
        migrate.revision(url, args.message, args.autogenerate)
    return 0


def _named(revision: str | None) -> str:
    if revision is None:
        return "an empty database"
    return f"{revision} (head)" if revision == migrate.head() else revision


def upgraded(done: migrate.Migrated, target: str) -> str:
    if done.ran:
        return (f"upgraded the schema from {_named(done.before)} to {_named(done.after)}, "
                f"running {', '.join(done.ran)}")
    if done.after == migrate.head():
        return f"the schema is already at head ({done.after}): nothing to do"
    return f"the schema is at {_named(done.after)}, at or past {target}: nothing to do"


def downgraded(done: migrate.Migrated) -> str:
    if not done.ran:
        return f"the schema is already at {_named(done.after)}: nothing to do"
    return (f"downgraded the schema from {_named(done.before)} to "
            f"{done.after or 'base (no schema)'}, undoing {', '.join(done.ran)}")


def history_lines(revisions: list[migrate.Revision], at: str | None) -> list[str]:
    """alembic's ``down -> up (marks): title`` lines, with neutrino's marks."""
    lines = []
    for rev in revisions:
        marks = [mark for mark, shown in (("head", rev.head), ("current", rev.current),
                                           ("no downgrade", not rev.reversible)) if shown]
        lines.append(f"{rev.down_revision or '<base>'} -> {rev.revision}"
                     f"{''.join(f' ({mark})' for mark in marks)}: {rev.title}")
    if at is None:
        lines.append("(the database is empty: no revision is current)")
    elif not any(rev.current for rev in revisions):
        lines.append(f"(the database is at {at}, which none of these migrations is)")
    return lines


if __name__ == "__main__":
    main()
