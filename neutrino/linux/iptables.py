"""What both writers of iptables (a router's NAT, ``neutrino.linux.nat``; the
security group firewall, ``neutrino.linux.iptables_firewall``) share: running
the tools (``iptables-save``, ``iptables-restore --noflush``, ...) in a
namespace, and reading ``iptables-save`` output table by table.

Each writer keeps its own chains apart by a name prefix and reads back only
those; how it turns what it wants into restore input is its own.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator

#: runs a tool's argv with that stdin (in some namespace), as subprocess.run does
Runner = Callable[[list[str], str | None], subprocess.CompletedProcess]


def namespace_runner(namespace: str | None, timeout: float) -> Runner:
    """A ``Runner`` of this host's tools in ``namespace`` (None: this one)."""
    def run(argv: list[str], stdin: str | None) -> subprocess.CompletedProcess:
        full = ["ip", "netns", "exec", namespace, *argv] if namespace else argv
        return subprocess.run(full, input=stdin, capture_output=True, text=True,
                              timeout=timeout)
    return run


def saved_lines(saved: str) -> Iterator[tuple[str, str]]:
    """(table, line) for each line of ``iptables-save`` output under a table's
    ``*table`` header (chain declarations, rules, COMMIT)."""
    table = None
    for line in saved.splitlines():
        if line.startswith("*"):
            table = line[1:].strip()
        elif table is not None:
            yield table, line
