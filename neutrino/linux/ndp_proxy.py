"""NDP proxies in a router's namespace: the router answers neighbour
solicitations on its gateway for its instances' IPv6 addresses, so that the
external network reaches them on-link, and routes them in; inbound traffic
to the router's other addresses of the gateway's scope is dropped.

As Neutron's L3 agent extension, three things, all in the namespace:

- ``net.ipv6.conf.<qg>.proxy_ndp = 1`` (the namespace forwards already);
- a proxy neighbour entry per address (``ip -6 neigh add proxy <addr> dev qg-...``);
- ip6tables, filter table, in chains of our own::

      FORWARD -> neutrino-ndp-FWD: per internal IPv6 subnet of the gateway's
          scope, ``-d <cidr> -i qg-...`` jumps to ...
      neutrino-ndp: per proxied address ``-d <addr>/128 -i qg-...`` RETURN,
          then ``-i qg-...`` DROP

  Where Neutron ACCEPTs a proxied address, we RETURN: the router's firewall
  (FWaaS), which FORWARD reaches after us, still applies.

``Spec`` is what the router is to have (pure, from its sync data);
``NdpProxies.apply`` reads back what the namespace has and changes only what
differs (a resync of an unchanged router runs only the reads); ``Spec()``
(disabled) takes everything of ours away.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from neutrino.linux.iptables import Runner, namespace_runner, saved_lines

PREFIX = "neutrino-ndp"
TOP = f"{PREFIX}-FWD"
CHAIN = PREFIX
TABLE = "filter"

Chains = dict[str, list[str]]


@dataclass(frozen=True)
class Spec:
    """The router's NDP proxies: none with no gateway device (disabled)."""

    gateway: str | None = None  # the qg- device
    addresses: tuple[str, ...] = ()  # proxied
    cidrs: tuple[str, ...] = ()  # the internal IPv6 subnets of the gateway's scope


def _host(address: str) -> str:
    return str(ipaddress.ip_address(address))


def chains(spec: Spec) -> Chains:
    """Our chains and their ``-A`` lines, as ip6tables-save writes them; none
    when disabled."""
    if spec.gateway is None:
        return {}
    dev = spec.gateway
    top = [f"-A {TOP} -d {ipaddress.ip_network(cidr, strict=False)} -i {dev} -j {CHAIN}"
           for cidr in sorted(set(spec.cidrs))]
    mine = [f"-A {CHAIN} -d {_host(address)}/128 -i {dev} -j RETURN"
            for address in sorted(set(spec.addresses), key=ipaddress.ip_address)]
    mine.append(f"-A {CHAIN} -i {dev} -j DROP")
    return {TOP: top, CHAIN: mine}


def saved_chains(saved: str) -> tuple[Chains, bool]:
    """Our chains in ``ip6tables-save`` output, and whether FORWARD jumps to the top."""
    found: Chains = {}
    jump = False
    for table, line in saved_lines(saved):
        if table != TABLE:
            continue
        if line.startswith(f":{PREFIX}"):
            found.setdefault(line[1:].split()[0], [])
        elif line.startswith("-A "):
            chain = line.split()[1]
            if chain.startswith(PREFIX):
                found.setdefault(chain, []).append(line)
            elif chain == "FORWARD" and line == f"-A FORWARD -j {TOP}":
                jump = True
    return found, jump


def restore_text(wanted: Chains, present: Mapping[str, list[str]], jump: bool) -> str | None:
    """``ip6tables-restore --noflush`` input turning ``present`` into ``wanted``
    (only the chains that differ); None when nothing does."""
    changed = sorted(chain for chain, lines in wanted.items() if present.get(chain) != lines)
    gone = sorted(chain for chain in present if chain not in wanted)
    want_jump = bool(wanted)
    if not changed and not gone and jump == want_jump:
        return None
    lines = [f"*{TABLE}"]
    lines += [f":{chain} - [0:0]" for chain in changed]
    if want_jump and not jump:
        lines.append(f"-I FORWARD 1 -j {TOP}")
    elif jump and not want_jump:
        lines.append(f"-D FORWARD -j {TOP}")
    for chain in changed:
        lines += wanted[chain]
    lines += [f"-F {chain}" for chain in gone]
    lines += [f"-X {chain}" for chain in gone]
    lines.append("COMMIT")
    return "\n".join(lines) + "\n"


def proxied(shown: str) -> set[str]:
    """The addresses of ``ip -6 neigh show proxy dev <dev>`` output."""
    return {_host(line.split()[0]) for line in shown.splitlines() if line.strip()}


class NdpProxies:
    """One router namespace's NDP proxies; every ``apply`` reads the host back."""

    def __init__(self, namespace: str, runner: Runner | None = None):
        self.namespace = namespace
        self._run_tool = runner or namespace_runner(namespace, timeout=30)

    def _run(self, argv: Sequence[str], stdin: str | None = None) -> str:
        done = self._run_tool(list(argv), stdin)
        if done.returncode != 0:
            raise OSError(f"{argv[0]} in {self.namespace}: "
                          f"{done.stderr.strip() or done.returncode}")
        return done.stdout

    def _devices(self) -> set[str]:
        return {line.split(":")[1].strip().split("@")[0]
                for line in self._run(["ip", "-o", "link", "show"]).splitlines()
                if line.count(":") >= 2}

    def apply(self, spec: Spec) -> list[str]:
        """Make the namespace have ``spec``; what was changed, in words (empty:
        nothing). Every gateway device but ``spec.gateway`` (an older one) is
        left with no proxies."""
        done: list[str] = []
        # the firewall first: nothing published lets in more than it should
        present, jump = saved_chains(self._run(["ip6tables-save", "-t", TABLE]))
        text = restore_text(chains(spec), present, jump)
        if text is not None:
            self._run(["ip6tables-restore", "--noflush"], text)
            done.append("firewall rules written")
        devices = self._devices()
        for device in sorted(devices):
            if not device.startswith("qg-"):
                continue
            wanted = set(map(_host, spec.addresses)) if device == spec.gateway else set()
            have = proxied(self._run(["ip", "-6", "neigh", "show", "proxy", "dev", device]))
            for address in sorted(have - wanted):
                self._run(["ip", "-6", "neigh", "del", "proxy", address, "dev", device])
                done.append(f"unpublished {address} on {device}")
            for address in sorted(wanted - have):
                self._run(["ip", "-6", "neigh", "add", "proxy", address, "dev", device])
                done.append(f"published {address} on {device}")
            on = "1" if device == spec.gateway else "0"
            key = f"net.ipv6.conf.{device}.proxy_ndp"
            if self._run(["sysctl", "-n", key]).strip() != on:
                self._run(["sysctl", "-q", "-w", f"{key}={on}"])
                done.append(f"proxy_ndp={on} on {device}")
        return done
