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
from dataclasses import dataclass

from neutrino.linux.errors import HostError

#: the save and restore tools of each IP version
TOOLS = (("iptables-save", "iptables-restore"), ("ip6tables-save", "ip6tables-restore"))
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


@dataclass(frozen=True)
class OwnChain:
    """A chain of one writer's own in ``table``, jumped to from the built-in
    ``hook`` chain, for both IP versions: read back, and rewritten whole
    (``*-restore --noflush``; declaring the chain flushes it) only when it
    differs from what is wanted, so that others writing the table keep theirs."""

    table: str
    name: str
    hook: str = "PREROUTING"

    @property
    def jump(self) -> str:
        return f"-A {self.hook} -j {self.name}"

    def present(self, saved: str) -> tuple[list[str], bool] | None:
        """(the chain's rules, whether the hook jumps to it) in ``*-save -t
        <table>`` output; None when the chain is not there."""
        chain, found, jump = [], False, False
        for table, line in saved_lines(saved):
            if table != self.table:
                continue
            if line.startswith(f":{self.name} "):
                found = True
            elif line.startswith(f"-A {self.name} "):
                chain.append(line)
            elif line == self.jump:
                jump = True
        return (chain, jump) if found else None

    def restore_text(self, wanted: list[str], jump: bool) -> str:
        lines = [f"*{self.table}", f":{self.name} - [0:0]", *wanted]
        if not jump:
            lines.append(self.jump)
        return "\n".join([*lines, "COMMIT", ""])

    def apply(self, run: Runner, wanted: list[str], error: type[HostError]) -> bool:
        """Both versions' chains made ``wanted`` (rules as ``*-save`` spells
        them); whether anything changed. No chain and nothing wanted: left so."""
        changed = False
        for save, restore in TOOLS:
            saved = run([save, "-t", self.table], None)
            if saved.returncode:
                raise error(f"{save}: {saved.stderr.strip()}")
            found = self.present(saved.stdout)
            if found is None and not wanted:
                continue
            if found is not None and found[0] == wanted and found[1]:
                continue
            done = run([restore, "--noflush"],
                       self.restore_text(wanted, found is not None and found[1]))
            if done.returncode:
                raise error(f"{restore}: {done.stderr.strip()}")
            changed = True
        return changed
