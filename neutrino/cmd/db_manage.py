"""neutrino-db-manage: schema migrations (``upgrade head``, ``current``, ``revision``)."""

from __future__ import annotations

import argparse
import sys

from alembic.util import CommandError
from sqlalchemy.exc import SQLAlchemyError

from neutrino import config
from neutrino.db import migrate


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="neutrino-db-manage")
    parser.add_argument("--config-file", action="append", default=[])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("upgrade", help="migrate the schema to a revision")
    up.add_argument("revision", nargs="?", default="head")
    sub.add_parser("current", help="print the schema revision")
    rev = sub.add_parser("revision", help="create a new migration script")
    rev.add_argument("-m", "--message", required=True)
    rev.add_argument("--autogenerate", action="store_true")
    args = parser.parse_args(argv)
    try:
        # no file: no database either, rather than a new one in ./state
        files = args.config_file or config.files_from_env()
        if not files:
            raise config.ConfigError(f"no configuration: give --config-file FILE (the "
                                     f"server's), or list the files in {config.CONFIG_ENV}")
        conf = config.load(files)
        url = config.database_url(conf)
    except config.ConfigError as error:
        print(f"neutrino-db-manage: {error}", file=sys.stderr)
        sys.exit(2)
    try:
        if args.command == "upgrade":
            migrate.upgrade(url, args.revision)
        elif args.command == "current":
            print(migrate.current(url) or "(empty database)")
        else:
            migrate.revision(url, args.message, args.autogenerate)
    except CommandError as error:  # alembic's: an unknown revision, say
        print(f"neutrino-db-manage: {_first_line(error)}", file=sys.stderr)
        sys.exit(1)
    except (SQLAlchemyError, ImportError) as error:  # ImportError: a missing DB driver
        print(f"neutrino-db-manage: cannot use the database of "
              f"{conf.source('database', 'connection')}: {_first_line(error)}",
              file=sys.stderr)
        sys.exit(1)


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


if __name__ == "__main__":
    main()
