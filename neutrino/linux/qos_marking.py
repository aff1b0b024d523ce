"""DSCP marking of what instances send, by iptables (the Linux bridge agent's
QoS): one chain per IP version in the mangle table, ``neutrino-qos-dscp``,
jumped to from PREROUTING, with a rule per marked tap. Bridged frames meet it
through br_netfilter, as the security group firewall's rules do.

The chain is read back and rewritten whole only when it differs from what is
wanted (``neutrino.linux.iptables.OwnChain``).
"""

from __future__ import annotations

from collections.abc import Mapping

from neutrino.linux.errors import HostError
from neutrino.linux.iptables import OwnChain, Runner

CHAIN = OwnChain("mangle", "neutrino-qos-dscp")


class MarkingError(HostError):
    """iptables refused the marking rules."""


def rules(marks: Mapping[str, int]) -> list[str]:
    """The chain's rules for ``marks`` (tap -> DSCP mark), in a stable order."""
    return [f"-A {CHAIN.name} -m physdev --physdev-in {tap} -j DSCP --set-dscp {mark:#04x}"
            for tap, mark in sorted(marks.items())]


def apply(run: Runner, marks: Mapping[str, int]) -> bool:
    """Make both versions' chains mark as ``marks`` says; whether anything changed."""
    return CHAIN.apply(run, rules(marks), MarkingError)
