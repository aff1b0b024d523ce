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
keep theirs. The chain is read back and rewritten whole only when it differs
from what is wanted (``neutrino.linux.iptables.OwnChain``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from neutrino.linux.errors import HostError
from neutrino.linux.iptables import OwnChain, Runner

CHAIN = OwnChain("raw", "neutrino-l3-CTH")
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
    return [f"-A {CHAIN.name} -p {h.protocol} -m {h.protocol} --dport {h.port} "
            f"-j CT --helper {h.helper}"
            for h in sorted(set(helpers)) if h.protocol in PORT_PROTOCOLS]


def apply(run: Runner, helpers: Iterable[Helper]) -> bool:
    """Make both versions' chains attach ``helpers``; whether anything changed.
    A router without helpers and without the chain is left alone."""
    return CHAIN.apply(run, rules(helpers), HelperError)
