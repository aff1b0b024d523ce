"""A fake of ``neutrino.linux.ovs.Ovsdb`` for the OVS agent's unit tests:
bridges and ports (with their Interface's columns) in dicts.

Every port gets an OpenFlow number when it is added, as ovs-vswitchd gives
one a moment later. ``plug`` is what the hypervisor does: an instance's
port on a bridge with ``external_ids:iface-id``. ``writes`` counts the
transactions, so that a sync that finds everything right can be seen to
write nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FakeBridge:
    datapath_type: str
    fail_mode: str | None = None


@dataclass
class FakePort:
    bridge: str
    ofport: int
    tag: int | None = None
    other_config: dict[str, str] = field(default_factory=dict)
    type: str = ""
    options: dict[str, str] = field(default_factory=dict)
    external_ids: dict[str, str] = field(default_factory=dict)


class FakeOvsdb:
    def __init__(self) -> None:
        self.bridges_: dict[str, FakeBridge] = {}
        self.ports_: dict[str, FakePort] = {}
        self.writes = 0
        self._next_ofport = 0

    def _number(self) -> int:
        self._next_ofport += 1
        return self._next_ofport

    # --- the hypervisor -----------------------------------------------------------------

    def plug(self, bridge: str, name: str, port_id: str, mac: str) -> None:
        self.ports_[name] = FakePort(bridge, self._number(), external_ids={
            "iface-id": port_id, "attached-mac": mac, "iface-status": "active"})

    def unplug(self, name: str) -> None:
        del self.ports_[name]

    # --- Ovsdb's calls --------------------------------------------------------------------

    def close(self) -> None:
        pass

    def ensure_bridge(self, name: str, datapath_type: str, secure: bool = True) -> None:
        now = self.bridges_.get(name)
        if now is not None and now.datapath_type == datapath_type and (
                not secure or now.fail_mode == "secure"):
            return
        self.bridges_[name] = FakeBridge(datapath_type, "secure" if secure else None)
        self.writes += 1

    def ensure_port(self, bridge: str, port: str, tag: int | None = None,
                    **interface: Any) -> None:
        now = self.ports_.get(port)
        if now is not None and now.bridge == bridge and (tag is None or now.tag == tag) and all(
                getattr(now, key) == value for key, value in interface.items()):
            return
        if bridge not in self.bridges_:
            raise RuntimeError(f"no bridge {bridge}")
        if now is None or now.bridge != bridge:
            now = self.ports_[port] = FakePort(bridge, self._number())
        for key, value in interface.items():
            setattr(now, key, value)
        if tag is not None:
            now.tag = tag
        self.writes += 1

    def ensure_patch(self, bridge: str, port: str, peer: str) -> None:
        self.ensure_port(bridge, port, type="patch", options={"peer": peer})

    def delete_port(self, port: str, bridge: str | None = None) -> None:
        self.ports_.pop(port, None)
        self.writes += 1

    def ensure_patches(self, patches: Iterable[Any]) -> int:
        """``PatchPort``s, one write for all; those already so are not counted."""
        written = 0
        for patch in patches:
            now = self.ports_.get(patch.name)
            if now is not None and now.bridge == patch.bridge and now.type == "patch" and (
                    now.options == {"peer": patch.peer}) and (
                    patch.tag is None or now.tag == patch.tag) and all(
                    now.external_ids.get(k) == v for k, v in patch.external_ids.items()):
                continue
            if patch.bridge not in self.bridges_:
                raise RuntimeError(f"no bridge {patch.bridge}")
            if now is None or now.bridge != patch.bridge:
                now = self.ports_[patch.name] = FakePort(patch.bridge, self._number())
            now.type, now.options = "patch", {"peer": patch.peer}
            now.external_ids.update(patch.external_ids)
            if patch.tag is not None:
                now.tag = patch.tag
            written += 1
        self.writes += bool(written)
        return written

    def delete_ports(self, ports: Iterable[tuple[str, str]], bridges: Iterable[str] = ()
                     ) -> None:
        for bridge, name in ports:
            if name in self.ports_ and self.ports_[name].bridge == bridge:
                del self.ports_[name]
        for bridge in bridges:
            self.bridges_.pop(bridge, None)
            for name in [n for n, p in self.ports_.items() if p.bridge == bridge]:
                del self.ports_[name]
        self.writes += 1

    def set_tags(self, tags: Mapping[str, tuple[int, Mapping[str, str]]]) -> None:
        changed = False
        for name, (tag, notes) in tags.items():
            port = self.ports_.get(name)
            if port is None:
                continue
            if port.tag != tag:
                port.tag, changed = tag, True
            if any(port.other_config.get(k) != v for k, v in notes.items()):
                port.other_config, changed = dict(notes), True
        self.writes += changed

    def port_tags(self) -> dict[str, tuple[int | None, dict[str, str]]]:
        return {name: (p.tag, dict(p.other_config)) for name, p in self.ports_.items()}

    def ports(self, bridge: str) -> list[str]:
        return sorted(name for name, p in self.ports_.items() if p.bridge == bridge)

    def bridges(self) -> list[str]:
        return sorted(self.bridges_)

    def interfaces(self) -> dict[str, dict[str, Any]]:
        return {name: {"name": name, "ofport": p.ofport, "type": p.type,
                       "external_ids": dict(p.external_ids), "options": dict(p.options),
                       "error": []}
                for name, p in self.ports_.items()}

    def ofports(self) -> dict[str, int]:
        return {name: p.ofport for name, p in self.ports_.items()}

    # --- what a test asks ---------------------------------------------------------------

    def tag(self, name: str) -> int | None:
        return self.ports_[name].tag

    def state(self) -> dict[str, tuple]:
        return {name: (p.bridge, p.ofport, p.tag, tuple(sorted(p.other_config.items())),
                       p.type, tuple(sorted(p.options.items())))
                for name, p in sorted(self.ports_.items())}
