"""DSCP marking of what instances send, by iptables (the Linux bridge agent's
QoS): one chain per IP version in the mangle table, ``neutrino-qos-dscp``,
jumped to from PREROUTING, with a rule per marked tap. Bridged frames meet it
through br_netfilter, as the security group firewall's rules do.

The chain is read back and rewritten whole (``iptables-restore --noflush``)
only when it differs from what is wanted.
"""

from __future__ import annotations

from collections.abc import Mapping

from neutrino.linux.errors import HostError
from neutrino.linux.iptables import Runner, saved_lines

CHAIN = "neutrino-qos-dscp"
JUMP = f"-A PREROUTING -j {CHAIN}"
TOOLS = (("iptables-save", "iptables-restore"), ("ip6tables-save", "ip6tables-restore"))


class MarkingError(HostError):
    """iptables refused the marking rules."""


def rules(marks: Mapping[str, int]) -> list[str]:
    """The chain's rules for ``marks`` (tap -> DSCP mark), in a stable order."""
    return [f"-A {CHAIN} -m physdev --physdev-in {tap} -j DSCP --set-dscp {mark:#04x}"
            for tap, mark in sorted(marks.items())]


def present(saved: str) -> tuple[list[str], bool] | None:
    """(the chain's rules, whether PREROUTING jumps to it) in ``iptables-save -t
    mangle`` output; None when the chain is not there."""
    chain, found, jump = [], False, False
    for table, line in saved_lines(saved):
        if table != "mangle":
            continue
        if line.startswith(f":{CHAIN} "):
            found = True
        elif line.startswith(f"-A {CHAIN} "):
            chain.append(line)
        elif line == JUMP:
            jump = True
    return (chain, jump) if found else None


def restore_text(wanted: list[str], jump: bool) -> str:
    lines = ["*mangle", f":{CHAIN} - [0:0]", *wanted]
    if not jump:
        lines.append(JUMP)
    return "\n".join([*lines, "COMMIT", ""])


def apply(run: Runner, marks: Mapping[str, int]) -> bool:
    """Make both versions' chains mark as ``marks`` says; whether anything changed."""
    wanted, changed = rules(marks), False
    for save, restore in TOOLS:
        saved = run([save, "-t", "mangle"], None)
        if saved.returncode:
            raise MarkingError(f"{save}: {saved.stderr.strip()}")
        found = present(saved.stdout)
        if found is not None and found[0] == wanted and found[1]:
            continue
        done = run([restore, "--noflush"],
                   restore_text(wanted, found is not None and found[1]))
        if done.returncode:
            raise MarkingError(f"{restore}: {done.stderr.strip()}")
        changed = True
    return changed
