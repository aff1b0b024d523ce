"""A fake of ``neutrino.linux.router.RouterDataplane``: routers' namespaces
held in memory, their NAT chains computed by the real ``nat.chains`` (and
their ip6tables chains by ``nat.chains6``).

It answers what a router on a host would do: where a packet to a floating
IP is sent (``dnat``), which source a packet leaving by the gateway gets
(``snat``), which addresses each device holds, and the whole state for
round trips. ``writes`` counts the changes it made, so a sync that finds
everything right can be seen to change nothing.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from neutrino.linux import nat
from neutrino.linux.interface import device_name
from neutrino.linux.router import EXTERNAL, INTERNAL, Router


@dataclass
class FakeRouterNamespace:
    devices: dict[str, tuple[str, int, tuple[str, ...]]] = field(default_factory=dict)
    routes: tuple[tuple[str, str], ...] = ()
    chains: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    chains6: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # ip6tables'
    daemons: dict[str, int | None] = field(default_factory=dict)


class FakeRouterDataplane:
    def __init__(self, metadata_socket: str | None = None):
        self.state_dir = "/nonexistent/l3"
        self.metadata_socket = metadata_socket
        self.routers: dict[str, FakeRouterNamespace] = {}
        self.writes = 0
        self._pids = 1000

    def present(self) -> set[str]:
        return set(self.routers)

    def serve(self, router: Router) -> list[str]:
        here = self.routers.setdefault(router.id, FakeRouterNamespace())
        ports = [(p, INTERNAL) for p in router.interfaces]
        ports += [(router.gateway, EXTERNAL)] if router.gateway else []
        devices = {device_name(p.id, prefix): (p.mac, p.mtu, p.cidrs) for p, prefix in ports}
        chains = {key: rules[:] for key, rules in nat.chains(router.nat).items()}
        chains6 = {key: rules[:] for key, rules in nat.chains6(router.nat).items()}
        daemons = {"metadata proxy": here.daemons.get("metadata proxy") or self._pid()
                   } if router.metadata else {}
        if router.metadata and self.metadata_socket is None:
            raise ValueError(f"router {router.id}: metadata wanted, but no metadata socket")
        for name, value, now in (("devices", devices, here.devices),
                                 ("routes", router.routes, here.routes),
                                 ("chains", chains, here.chains),
                                 ("chains6", chains6, here.chains6),
                                 ("daemons", daemons, here.daemons)):
            if value != now:
                setattr(here, name, value)
                self.writes += 1
        return []

    def _pid(self) -> int:
        self._pids += 1
        return self._pids

    def daemons(self, router_id: str) -> dict[str, int | None]:
        return dict(self.routers[router_id].daemons) if router_id in self.routers else {}

    def dead(self, router_ids: list[str]) -> list[str]:
        return [r for r in router_ids if None in self.daemons(r).values()]

    def retire(self, router_id: str) -> None:
        if self.routers.pop(router_id, None) is not None:
            self.writes += 1

    # --- what a test asks ------------------------------------------------------------

    def kill(self, router_id: str, daemon: str) -> None:
        self.routers[router_id].daemons[daemon] = None

    def addresses(self, router_id: str) -> dict[str, tuple[str, ...]]:
        return {name: cidrs for name, (_, _, cidrs) in self.routers[router_id].devices.items()}

    def dnat(self, router_id: str, address: str) -> str | None:
        """Where the router sends a packet that came for ``address``."""
        for rule in self.routers[router_id].chains.get(("nat", f"{nat.PREFIX}-PRE"), []):
            words = rule.split()
            if "DNAT" in words and words[words.index("-d") + 1] == f"{address}/32" \
                    and "--dport" not in words:
                return words[words.index("--to-destination") + 1]
        return None

    def snat(self, router_id: str, source: str, out: str) -> str | None:
        """The source of a new packet from ``source`` leaving by device ``out``
        (None: sent as it is)."""
        for rule in self.routers[router_id].chains.get(("nat", f"{nat.PREFIX}-POST"), []):
            words = rule.split()[2:]  # after "-A <chain>"
            if "--ctstate" in words or "!" in words:
                continue  # only for DNATed connections, or between interfaces
            if "-s" in words and ipaddress.ip_address(source) not in ipaddress.ip_network(
                    words[words.index("-s") + 1]):
                continue
            if "-o" in words and words[words.index("-o") + 1] != out:
                continue
            if "SNAT" in words:
                return words[words.index("--to-source") + 1]
        return None

    def state(self) -> dict[str, FakeRouterNamespace]:
        return {r: FakeRouterNamespace(dict(ns.devices), ns.routes,
                                       {k: list(v) for k, v in ns.chains.items()},
                                       dict(ns.daemons))
                for r, ns in sorted(self.routers.items())}
