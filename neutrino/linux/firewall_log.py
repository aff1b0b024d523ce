"""Packet logging in the iptables firewall: NFLOG rules in a port's chains.

A port's chains RETURN what its security group rules allow, after the
conntrack rules have let established traffic through, so every packet that
meets a rule opens a connection: logging ACCEPT puts, before each rule, the
same match jumping to NFLOG; logging DROP puts one NFLOG rule before the jump
to the fallback chain (what no rule allowed). Rules written for the agent
itself (DHCP, ND, anti-spoofing) are not logged, as in Neutron.

The rate limit is the kernel's: every NFLOG rule has one ``hashlimit`` match
of the same name (``bucket``) and no mode, which is one token bucket per IP
version for the whole host (``rate_limit`` packets a second, ``burst_limit`` at once), so
a flood never reaches the agent. The prefix says the action and the port
(``A:<port id>``, ``D:<port id>``), which the agent's NFLOG reader maps to the
port's logs.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: the netlink group the rules send to and the agent reads (one agent a namespace)
NFLOG_GROUP = 3101
#: bytes of each packet copied to the agent: headers, not payload
COPY_BYTES = 128
#: the hashlimit bucket's name: this, then 6 hex digits of its limits (15 characters:
#: the kernel's most)
BUCKET_PREFIX = "neutrino-"
ACCEPT, DROP = "A", "D"


@dataclass(frozen=True)
class PortLog:
    """What to log of one port's traffic."""
    accept: bool = False
    drop: bool = False


@dataclass(frozen=True)
class Limits:
    rate: int = 100  # packets a second
    burst: int = 25
    group: int = NFLOG_GROUP


def bucket(limits: Limits) -> str:
    """The hashlimit name of the logging rules under ``limits``. The kernel keeps
    a bucket's first limits as long as a rule names it (a restore that keeps the
    name keeps them), so other limits must be another name."""
    digest = zlib.crc32(f"{limits.rate}/{limits.burst}".encode()) & 0xFFFFFF
    return f"{BUCKET_PREFIX}{digest:06x}"


def prefix(action: str, port_id: str) -> str:
    return f"{action}:{port_id}"


def parse_prefix(text: str) -> tuple[str, str] | None:
    """(action, port id) of a prefix of ours; None for another's."""
    action, sep, port_id = text.partition(":")
    if not sep or action not in (ACCEPT, DROP) or not port_id:
        return None
    return action, port_id


def nflog(match: str, action: str, port_id: str, limits: Limits) -> str:
    """``match`` (may be empty) sending to NFLOG, within the host's rate limit."""
    lead = f"{match} " if match else ""
    return (f"{lead}-m hashlimit --hashlimit-upto {limits.rate}/sec "
            f"--hashlimit-burst {limits.burst} --hashlimit-name {bucket(limits)} "
            f"-j NFLOG --nflog-group {limits.group} "
            f"--nflog-prefix {prefix(action, port_id)} --nflog-size {COPY_BYTES}")


def accepting(specs: Iterable[str], port_id: str, log: PortLog | None, limits: Limits
              ) -> list[str]:
    """A port's rule specifications (``<match> -j RETURN``), each preceded by
    its NFLOG twin when the port logs ACCEPT."""
    if log is None or not log.accept:
        return list(specs)
    logged = []
    for spec in specs:
        match = spec.removesuffix("-j RETURN").strip()
        logged += [nflog(match, ACCEPT, port_id, limits), spec]
    return logged


def dropping(chain: list[str], port_id: str, log: PortLog | None, limits: Limits
             ) -> list[str]:
    """A port's chain (ending with the jump to the fallback) with the NFLOG rule
    before that jump when the port logs DROP."""
    if log is None or not log.drop:
        return chain
    return [*chain[:-1], nflog("", DROP, port_id, limits), chain[-1]]


@dataclass(frozen=True)
class Logging:
    """The packet logging of a host's ports, as the firewall writes it."""
    ports: Mapping[str, PortLog] = field(default_factory=dict)
    limits: Limits = Limits()
