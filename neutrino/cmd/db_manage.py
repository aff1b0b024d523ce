"""neutrino-db-manage: schema migrations (``upgrade head``, ``current``, ``revision``)."""

from __future__ import annotations

import argparse
import sys

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
        conf = config.load(args.config_file)
    except config.ConfigError as error:
        print(f"neutrino-db-manage: {error}", file=sys.stderr)
        sys.exit(2)
    url = config.database_url(conf)
    if args.command == "upgrade":
        migrate.upgrade(url, args.revision)
    elif args.command == "current":
        print(migrate.current(url) or "(empty database)")
    else:
        migrate.revision(url, args.message, args.autogenerate)


if __name__ == "__main__":
    main()
