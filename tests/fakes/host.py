"""A fake of ``neutrino.linux.ip.IpNetns`` for agents' unit tests: links in
a dict, with what the kernel does when another agent removes a device
between this one's read and its write (``vanishing``).

``vanishing`` maps a device to the read after which it goes (``names``,
``exists``, ``master_of``, ``bridge_ports``, ``fdb``): that read shows it,
the agent's next write finds it gone. As with the real one, writes to a
missing device raise ``NoSuchDevice`` and removals are quiet (a test of
``IpNetns`` on a real namespace holds it to that).

It answers what a test asks of the host rather than which calls were made:
which bridge switches a device's frames (``bridge_of``), whether two devices
reach each other (``switched``), and the whole state for round trips.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from neutrino.linux.ip import NoSuchDevice


@dataclass
class FakeLink:
    kind: str | None = None
    master: str | None = None
    up: bool = False
    mtu: int | None = None
    fdb: set[tuple[str, str]] = field(default_factory=set)


class FakeIp:
    def __init__(self, **links: FakeLink):
        self.links = dict(links)
        self.vanishing: dict[str, str] = {}
        self.vanished: list[str] = []

    def _seen(self, read: str, *names: str) -> None:
        for name in names:
            if self.vanishing.get(name) == read and name in self.links:
                del self.vanishing[name]
                self._remove(name)
                self.vanished.append(name)

    def _remove(self, name: str) -> None:
        del self.links[name]
        for link in self.links.values():
            if link.master == name:
                link.master = None

    def _link(self, name: str) -> FakeLink:
        if name not in self.links:
            raise NoSuchDevice(f"no link {name}")
        return self.links[name]

    # --- reads ---------------------------------------------------------------------------

    def names(self) -> set[str]:
        found = set(self.links)
        self._seen("names", *found)
        return found

    def exists(self, name: str) -> bool:
        found = name in self.links
        self._seen("exists", name)
        return found

    def master_of(self, name: str) -> str | None:
        link = self.links.get(name)
        self._seen("master_of", name)
        return link.master if link else None

    def bridge_ports(self, bridge: str) -> list[str]:
        found = sorted(n for n, link in self.links.items() if link.master == bridge)
        self._seen("bridge_ports", *found)
        return found

    def fdb(self, name: str) -> set[tuple[str, str]]:
        found = set(self._link(name).fdb)
        self._seen("fdb", name)
        return found

    def addresses(self, name: str) -> list[str]:
        self._link(name)
        return []

    # --- writes ----------------------------------------------------------------------------

    def set(self, name: str, *, up: bool | None = None, mtu: int | None = None,
            master: str | None = None, mac: str | None = None) -> None:
        link = self._link(name)
        if master is not None:
            self._link(master)
            link.master = master
        if up is not None:
            link.up = up
        if mtu is not None:
            link.mtu = mtu

    def add_bridge(self, name: str) -> None:
        self.links.setdefault(name, FakeLink(kind="bridge"))

    def add_vxlan(self, name: str, *args: object, **kwargs: object) -> None:
        self.links.setdefault(name, FakeLink(kind="vxlan"))

    def add_vlan(self, name: str, parent: str, vlan: int) -> None:
        self._link(parent)
        self.links.setdefault(name, FakeLink(kind="vlan"))

    def unplug(self, name: str) -> None:
        if name in self.links:
            self.links[name].master = None

    def delete(self, name: str) -> None:
        if name in self.links:
            self._remove(name)

    def fdb_add(self, name: str, mac: str, remote_ip: str) -> None:
        self._link(name).fdb.add((mac, remote_ip))

    def fdb_delete(self, name: str, mac: str, remote_ip: str) -> None:
        if name in self.links:
            self.links[name].fdb.discard((mac, remote_ip))

    # --- what a test asks ------------------------------------------------------------------

    def bridge_of(self, name: str) -> str | None:
        """The bridge that switches ``name``'s frames: its master, if that is a
        bridge that is up and ``name`` is up too."""
        link = self.links.get(name)
        bridge = self.links.get(link.master) if link and link.master else None
        if link is None or bridge is None or bridge.kind != "bridge":
            return None
        return link.master if link.up and bridge.up else None

    def switched(self, a: str, b: str) -> bool:
        """Whether a frame from device ``a`` can reach device ``b`` (one bridge)."""
        return self.bridge_of(a) is not None and self.bridge_of(a) == self.bridge_of(b)

    def state(self) -> dict[str, tuple]:
        """Every link as a comparable value, for round-trip checks."""
        return {name: (link.kind, link.master, link.up, link.mtu, frozenset(link.fdb))
                for name, link in sorted(self.links.items())}
