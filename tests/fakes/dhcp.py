"""A fake of ``neutrino.linux.dhcp.DhcpDataplane``: each network's namespace,
the DHCP port's device there and a dnsmasq handle, held in memory.

What dnsmasq is told comes from the real ``neutrino.linux.dnsmasq``: its
files (``dnsmasq.files``) and its command line (``dnsmasq.command``), and the
fake decides as the real dataplane does: a new command line is a restart,
new files a reload (SIGHUP), nothing new nothing at all. So a test can ask
what a client would get (``offer``: the address and name the hosts file
gives a MAC) and how dnsmasq was handled (``starts``, ``reloads``,
``restarts``).

A running daemon's pid is the test process's own: it lives as long as the
test, so the agent's process monitor (which watches pids through the
kernel) sees it alive; ``kill`` makes it None, a daemon that died.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from neutrino.linux import dnsmasq
from neutrino.linux.dnsmasq import Network
from neutrino.linux.names import device_name


@dataclass
class FakeDnsmasq:
    argv: list[str]
    pid: int | None = None
    starts: int = 0
    reloads: int = 0
    restarts: int = 0


@dataclass
class FakeDhcpNamespace:
    """One network's ``qdhcp-`` namespace: its devices (name -> (MAC, addresses)),
    the files dnsmasq reads, dnsmasq and the metadata proxy."""

    devices: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    dnsmasq: FakeDnsmasq | None = None
    proxy: int | None = None
    proxy_wanted: bool = False


def _cidrs(network: Network, port: dict[str, Any]) -> tuple[str, ...]:
    """The DHCP port's addresses on the DHCP subnets, with their prefix lengths."""
    prefixes = {s["id"]: s["cidr"].split("/")[1] for s in dnsmasq.dhcp_subnets(network)}
    return tuple(sorted(f"{f['ip_address']}/{prefixes[f['subnet_id']]}"
                        for f in port["fixed_ips"] if f["subnet_id"] in prefixes))


class FakeDhcpDataplane:
    def __init__(self, settings: dnsmasq.Settings | None = None,
                 metadata_socket: str | None = None):
        self.confs_dir = "/nonexistent/dhcp"
        self.settings = settings or dnsmasq.Settings()
        self.metadata_socket = metadata_socket
        self.networks: dict[str, FakeDhcpNamespace] = {}

    def conf_dir(self, network_id: str) -> str:
        return os.path.join(self.confs_dir, network_id)

    def present(self) -> set[str]:
        return set(self.networks)

    def serve(self, network: Network, port: dict[str, Any]) -> None:
        here = self.networks.setdefault(network["id"], FakeDhcpNamespace())
        device = device_name(port["id"])
        routes = dnsmasq.metadata_routes(network, port) if self.metadata_socket else {}
        metadata = ("169.254.169.254/32",) if routes else ()
        here.devices = {device: (port["mac_address"], _cidrs(network, port) + metadata)}
        files = dnsmasq.files(network, self.settings, routes)
        changed, here.files = files != here.files, files
        argv = dnsmasq.command(network, device, self.conf_dir(network["id"]), self.settings)
        daemon = here.dnsmasq
        if daemon is None or daemon.pid is None:
            here.dnsmasq = daemon = daemon or FakeDnsmasq(argv)
            daemon.argv, daemon.pid = argv, os.getpid()
            daemon.starts += 1
        elif daemon.argv != argv:
            daemon.argv = argv
            daemon.restarts += 1
        elif changed:
            daemon.reloads += 1
        here.proxy_wanted = bool(routes)
        if not routes:
            here.proxy = None
        elif here.proxy is None:
            here.proxy = os.getpid()

    def daemons(self, network_id: str) -> dict[str, int | None]:
        here = self.networks.get(network_id)
        if here is None:
            return {}
        found = {"dnsmasq": here.dnsmasq.pid if here.dnsmasq else None}
        if here.proxy_wanted:
            found["metadata proxy"] = here.proxy
        return found

    def dead(self, network_ids: list[str]) -> list[str]:
        return [n for n in network_ids if None in self.daemons(n).values()]

    def retire(self, network_id: str) -> None:
        self.networks.pop(network_id, None)

    # --- what a test asks ------------------------------------------------------------

    def kill(self, network_id: str) -> None:
        """dnsmasq of the network dies."""
        daemon = self.networks[network_id].dnsmasq
        assert daemon is not None
        daemon.pid = None

    def dnsmasq(self, network_id: str) -> FakeDnsmasq:
        daemon = self.networks[network_id].dnsmasq
        assert daemon is not None
        return daemon

    def offer(self, network_id: str, mac: str) -> list[tuple[str, str]]:
        """What dnsmasq of the network answers a client with ``mac``: (address,
        name) per address its hosts file gives that MAC; none while it does
        not run."""
        here = self.networks.get(network_id)
        if here is None or here.dnsmasq is None or here.dnsmasq.pid is None:
            return []
        found = []
        for line in here.files.get(dnsmasq.HOSTS, "").splitlines():
            fields = line.split(",")
            if fields[0].lower() == mac.lower():
                found.append((fields[-1].strip("[]"), fields[-2]))
        return found

    def state(self) -> dict[str, tuple]:
        """Every network as a comparable value (pids left out), for round trips."""
        return {n: (dict(ns.devices), dict(ns.files),
                    ns.dnsmasq.argv if ns.dnsmasq else None, ns.proxy is not None)
                for n, ns in sorted(self.networks.items())}
