"""A router's conntrack helpers: iptables raw-table CT rules in its namespace.

Traffic to a helper's port enters the router through one of its devices; in
the raw table's PREROUTING, before conntrack has seen the connection, a
``-j CT --helper <name>`` rule attaches the kernel's helper (ftp, tftp,
sip ...) to it. The helper then reads the control connection, expects the
related data connections (the FTP server's connection back, the TFTP
server's answers from another port) and, with the router's NAT, rewrites the
addresses the protocol carries inside it. Without the rule, nothing is
attached: since Linux 4.7 no helper is assigned by port alone.

The rules sit in a chain of our own, ``neutrino-l3-CTH``, for both IP
versions, jumped to from PREROUTING, so that others writing the raw table
keep theirs. The chain is read back and rewritten whole (``iptables-restore
--noflush``) only when it differs from what is wanted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from neutrino.linux.errors import HostError
from neutrino.linux.iptables import Runner, saved_lines

TABLE = "raw"
CHAIN = "neutrino-l3-CTH"
JUMP = f"-A PREROUTING -j {CHAIN}"
TOOLS = (("iptables-save", "iptables-restore"), ("ip6tables-save", "ip6tables-restore"))
#: the protocols a rule can match a destination port of (the others have no ports)
PORT_PROTOCOLS = ("tcp", "udp", "sctp", "dccp")


class HelperError(HostError):
    """iptables refused the conntrack helper rules."""


@dataclass(frozen=True, order=True)
class Helper:
    protocol: str
    port: int
    helper: str


def rules(helpers: Iterable[Helper]) -> list[str]:
    """The chain's rules (as iptables-save spells them), in a stable order;
    a helper of a protocol without ports has none."""
    return [f"-A {CHAIN} -p {h.protocol} -m {h.protocol} --dport {h.port} "
            f"-j CT --helper {h.helper}"
            for h in sorted(set(helpers)) if h.protocol in PORT_PROTOCOLS]


def present(saved: str) -> tuple[list[str], bool] | None:
    """(the chain's rules, whether PREROUTING jumps to it) in ``iptables-save -t
    raw`` output; None when the chain is not there."""
    chain, found, jump = [], False, False
    for table, line in saved_lines(saved):
        if table != TABLE:
            continue
        if line.startswith(f":{CHAIN} "):
            found = True
        elif line.startswith(f"-A {CHAIN} "):
            chain.append(line)
        elif line == JUMP:
            jump = True
    return (chain, jump) if found else None


def restore_text(wanted: list[str], jump: bool) -> str:
    """Restore input writing the chain anew (declaring it flushes it), and the
    jump when it is missing."""
    lines = [f"*{TABLE}", f":{CHAIN} - [0:0]", *wanted]
    if not jump:
        lines.append(JUMP)
    return "\n".join([*lines, "COMMIT", ""])


def apply(run: Runner, helpers: Iterable[Helper]) -> bool:
    """Make both versions' chains attach ``helpers``; whether anything changed.
    A router without helpers and without the chain is left alone."""
    wanted, changed = rules(helpers), False
    for save, restore in TOOLS:
        saved = run([save, "-t", TABLE], None)
        if saved.returncode:
            raise HelperError(f"{save}: {saved.stderr.strip()}")
        found = present(saved.stdout)
        if found is None and not wanted:
            continue
        if found is not None and found[0] == wanted and found[1]:
            continue
        done = run([restore, "--noflush"],
                   restore_text(wanted, found is not None and found[1]))
        if done.returncode:
            raise HelperError(f"{restore}: {done.stderr.strip()}")
        changed = True
    return changed
