"""What every neutrino command's command line shares: ``--version``, a one-line
description, ``--config-file`` and the logging options.

The logging options are oslo.log's command-line spellings of the ``[DEFAULT]``
options of ``neutrino.log`` (``--log-file`` for ``log_file`` ...), as
Neutron's commands take them: packaging often passes ``--log-file`` in the
service unit rather than in a shared configuration file. Given on the command
line, they win over the files.
"""

from __future__ import annotations

import argparse
from importlib import metadata

PACKAGE = "neutrino"


def version() -> str:
    """The installed package's version (its metadata, not a constant in the code)."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:  # run from a tree that was never installed
        return "unknown (not installed)"


def describe(doc: str | None) -> str:
    """A docstring's first paragraph as one plain line, for ``--help``."""
    first = (doc or "").strip().split("\n\n")[0]
    return " ".join(first.replace("``", "").split())


def parser(prog: str, description: str, epilog: str | None = None,
           config_files: bool = True) -> argparse.ArgumentParser:
    """A command's parser with ``--version``, and with ``config_files``,
    ``--config-file`` and the logging options."""
    made = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog)
    made.add_argument("--version", action="version", version=f"%(prog)s {version()}",
                      help="print the program's name and version, and exit")
    if config_files:
        made.add_argument("--config-file", action="append", default=[], metavar="FILE",
                          help="INI file; repeatable, later files override earlier ones")
        add_logging(made)
    return made


def add_logging(made: argparse.ArgumentParser) -> None:
    logs = made.add_argument_group(
        "logging", "override the [DEFAULT] logging options of the config files")
    logs.add_argument("-d", "--debug", action="store_true", default=None,
                      help="log at debug level (debug = true)")
    logs.add_argument("--log-file", metavar="PATH",
                      help="log to this file instead of stderr (log_file); relative to "
                           "--log-dir if that is given")
    logs.add_argument("--log-dir", metavar="DIR",
                      help="directory of log_file; alone, logs to DIR/PROGRAM.log (log_dir)")
    logs.add_argument("--use-syslog", action="store_true", default=None,
                      help="also log to the local syslog (use_syslog)")
    logs.add_argument("--use-json", action="store_true", default=None,
                      help="log one JSON object per line (use_json)")


def logging_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The logging options given on the command line, by their ``[DEFAULT]`` names."""
    return {name: value for name in ("debug", "log_file", "log_dir", "use_syslog", "use_json")
            if (value := getattr(args, name, None)) is not None}
