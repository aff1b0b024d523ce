"""A fake of ``neutrino.linux.ovs.OpenFlow``: each bridge's flow table in
memory, changed by the agent's ``replace`` and ``update`` bundles as
ovs-ofctl would change it, and a small evaluator of those flows.

``mods`` counts the flow mods that reached the "switch" (for ``replace``,
only the difference, as ``replace-flows`` sends), so that a sync that finds
the right flows can be seen to send none.

``reaches`` answers "does this packet from port A get out of port B?" on one
bridge by running the table as OVS would, far enough for the agent's
pipelines: matches on ports, VLANs, registers, MACs, IP addresses and
prefixes, protocols, L4 ports (with masks), ``ct_state`` and conjunctions;
actions ``drop``, ``NORMAL``, ``resubmit``, ``goto_table``, ``output``,
``set_field`` (registers, VLAN), ``push_vlan``/``pop_vlan`` and ``ct``. Flows
or actions it does not know make it raise, rather than guess. Two
approximations, said here:

- conntrack: ``ct(table=N)`` continues at table N with the packet's
  ``ct_state``: ``+trk+new`` for a first packet, ``+trk+est+rpl`` for a reply
  of a connection taken as established (``Packet.reply``); ``ct(commit)``
  remembers nothing.
- ``NORMAL`` floods within the packet's VLAN (the in-port's tag for an access
  port; the frame's 802.1Q tag for a trunk): a learned MAC would narrow that
  to one of these ports, so "reaches" holds either way. A port tagged 4095
  (``DEAD_VLAN``) passes nothing, which is what Neutron tags it for.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass, field, replace

from neutrino.linux.ovs import flow_key, flow_mods
from neutrino.linux.ovs_names import DEAD_VLAN
from tests.fakes.ovsdb import FakeOvsdb

PROTOCOLS = {"ip": ("ip", None), "ipv6": ("ipv6", None), "arp": ("arp", None),
             "tcp": ("ip", 6), "udp": ("ip", 17), "icmp": ("ip", 1), "sctp": ("ip", 132),
             "tcp6": ("ipv6", 6), "udp6": ("ipv6", 17), "icmp6": ("ipv6", 58)}
NUMBERS = {"tcp": 6, "udp": 17, "icmp": 1, "icmp6": 58}
MAX_DEPTH = 64


@dataclass(frozen=True)
class Packet:
    """A packet as it enters a port: untagged unless ``vlan`` says otherwise."""

    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    proto: str = "tcp"
    dport: int = 22
    sport: int = 40000
    vlan: int | None = None
    reply: bool = False


@dataclass
class _State:
    packet: Packet
    in_port: int
    vlan: int | None
    regs: dict[int, int] = field(default_factory=dict)
    ct: frozenset[str] = frozenset()


@functools.cache
def _parse(flow: str) -> tuple[int, int, tuple[tuple[str, str], ...], tuple[str, ...]]:
    """(table, priority, match fields, actions) of a flow as the agent writes it."""
    head, _, actions = flow.partition(",actions=")
    table, priority, fields = 0, 32768, []
    for part in head.split(","):
        name, _, value = part.partition("=")
        if name == "table":
            table = int(value)
        elif name == "priority":
            priority = int(value)
        elif name != "cookie":
            fields.append((name, value))
    return table, priority, tuple(fields), tuple(_split(actions))


def _split(actions: str) -> list[str]:
    """Actions at the top level (commas inside parentheses stay)."""
    found, depth, start = [], 0, 0
    for i, char in enumerate(actions):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            found.append(actions[start:i])
            start = i + 1
    found.append(actions[start:])
    return [a for a in found if a]


def _masked(actual: int | None, wanted: str) -> bool:
    if actual is None:
        return False
    value, _, mask = wanted.partition("/")
    bits = int(mask, 0) if mask else -1
    return actual & bits == int(value, 0) & bits


class FakeSwitch:
    """The flow tables of every bridge of one host (whose OVSDB is ``db``)."""

    def __init__(self, db: FakeOvsdb):
        self.db = db
        self.tables: dict[str, dict[str, str]] = {}  # bridge -> flow key -> flow
        self.mods = 0

    def openflow(self, bridge: str) -> FakeOpenFlow:
        """What the agent is given in place of ``OpenFlow``."""
        return FakeOpenFlow(self, bridge)

    def flows(self, bridge: str) -> list[str]:
        return sorted(self.tables.get(bridge, {}).values())

    def _apply(self, bridge: str, mods: list[str]) -> None:
        table = self.tables.setdefault(bridge, {})
        for mod in mods:
            verb, _, rest = mod.partition(" ")
            if verb == "add":
                table[flow_key(rest)] = rest
            elif verb == "delete_strict":
                table.pop(rest, None)
            else:
                raise ValueError(f"unknown flow mod {mod!r}")
        self.mods += len(mods)

    # --- the evaluator ------------------------------------------------------------------

    def _ofport(self, bridge: str, name: str) -> int:
        if name.isdigit():
            return int(name)
        port = self.db.ports_[name]
        assert port.bridge == bridge, f"{name} is not on {bridge}"
        return port.ofport

    def reaches(self, bridge: str, source: str, target: str, packet: Packet) -> bool:
        """Whether ``packet``, entering port ``source`` of ``bridge``, leaves by
        port ``target`` (names of ports)."""
        state = _State(packet, self._ofport(bridge, source), packet.vlan,
                       ct=frozenset({"trk", "est", "rpl"} if packet.reply else {"trk", "new"}))
        return self._ofport(bridge, target) in self._table(bridge, 0, state, 0)

    def _matches(self, bridge: str, name: str, value: str, state: _State) -> bool:
        p = state.packet
        version = ipaddress.ip_address(p.src_ip).version
        kind = "ipv6" if version == 6 else "ip"
        if name in PROTOCOLS and not value:
            wanted_kind, number = PROTOCOLS[name]
            return kind == wanted_kind and (number is None or NUMBERS.get(p.proto) == number)
        if name == "in_port":
            return state.in_port == self._ofport(bridge, value)
        if name == "dl_vlan":
            return state.vlan == int(value)
        if name == "vlan_tci":
            return _masked(0 if state.vlan is None else 0x1000 | state.vlan, value)
        if name in ("reg5", "reg6"):
            return _masked(state.regs.get(int(name[3:]), 0), value)
        if name in ("dl_src", "dl_dst"):
            return value.lower() == (p.src_mac if name == "dl_src" else p.dst_mac).lower()
        if name in ("nw_src", "nw_dst", "ipv6_src", "ipv6_dst"):
            address = ipaddress.ip_address(p.src_ip if name.endswith("src") else p.dst_ip)
            network = ipaddress.ip_network(value, strict=False)
            return address.version == network.version and address in network
        if name == "nw_proto":
            return NUMBERS.get(p.proto) == int(value)
        if name in ("tp_src", "tp_dst"):
            ported = p.proto in ("tcp", "udp")
            return _masked((p.sport if name == "tp_src" else p.dport) if ported else None, value)
        if name in ("icmp_type", "icmp_code"):
            return False  # the packets asked about are not ICMP messages of a type
        if name == "ct_state":
            return all((flag in state.ct) == (sign == "+")
                       for sign, flag in re.findall(r"([+-])(\w+)", value))
        raise ValueError(f"the fake flow table cannot match {name}={value}")

    def _table(self, bridge: str, table: int, state: _State, depth: int) -> set[int]:
        """The ports a packet in ``state`` leaves by from ``table`` on."""
        if depth > MAX_DEPTH:
            raise RecursionError("resubmit loop")
        candidates, clauses, conjunctive = [], {}, []
        for flow in self.tables.get(bridge, {}).values():
            number, priority, fields, actions = _parse(flow)
            if number != table:
                continue
            conj = dict(fields).get("conj_id")
            if not all(self._matches(bridge, n, v, state) for n, v in fields
                       if n != "conj_id"):
                continue
            if conj is not None:
                conjunctive.append((priority, int(conj), actions))
            elif all(a.startswith("conjunction(") for a in actions):
                for action in actions:
                    conj_id, clause, of = map(int, re.findall(r"\d+", action))
                    clauses.setdefault(conj_id, (of, set()))[1].add(clause)
            else:
                candidates.append((priority, actions))
        for priority, conj_id, actions in conjunctive:
            of, seen = clauses.get(conj_id, (0, set()))
            if of and seen == set(range(1, of + 1)):
                candidates.append((priority, actions))
        if not candidates:
            return set()  # a table miss drops (OpenFlow 1.3, fail mode secure)
        _, actions = max(candidates, key=lambda c: c[0])
        return self._act(bridge, actions, state, depth)

    def _act(self, bridge: str, actions: tuple[str, ...], state: _State,
             depth: int) -> set[int]:
        out: set[int] = set()
        for action in actions:
            if action == "drop":
                break
            if action == "NORMAL":
                out |= self._normal(bridge, state)
            elif action == "IN_PORT":
                out.add(state.in_port)
            elif action.startswith("resubmit(,"):
                out |= self._table(bridge, int(action[10:-1]), state, depth + 1)
            elif action.startswith("goto_table:"):
                return out | self._table(bridge, int(action[11:]), state, depth + 1)
            elif action.startswith("ct("):
                inner = dict(part.partition("=")[::2] for part in _split(action[3:-1]))
                if "table" in inner:
                    out |= self._table(bridge, int(inner["table"]),
                                       replace(state, regs=dict(state.regs)), depth + 1)
            elif action.startswith("set_field:"):
                value, _, target = action[10:].partition("->")
                if target in ("reg5", "reg6"):
                    state.regs[int(target[3:])] = int(value, 0)
                elif target == "vlan_vid":
                    state.vlan = int(value, 0) - 4096
                else:
                    raise ValueError(f"the fake flow table cannot set {target}")
            elif action.startswith("push_vlan:"):
                state.vlan = 0
            elif action == "pop_vlan":
                state.vlan = None
            elif action == "output:NXM_NX_REG5[]":
                out.add(state.regs.get(5, 0))
            elif action.startswith("output:"):
                out.add(self._ofport(bridge, action[7:]))
            else:
                raise ValueError(f"the fake flow table cannot do {action}")
        return out

    def _normal(self, bridge: str, state: _State) -> set[int]:
        ports = {p.ofport: p for p in self.db.ports_.values() if p.bridge == bridge}
        here = ports.get(state.in_port)
        if here is None:
            return set()
        vlan = here.tag if here.tag is not None else (state.vlan or 0)
        if vlan == DEAD_VLAN:
            return set()
        return {n for n, p in ports.items() if n != state.in_port
                and p.tag != DEAD_VLAN and (p.tag is None or p.tag == vlan)}


class FakeOpenFlow:
    """One bridge's table, as ``OpenFlow`` writes it."""

    def __init__(self, switch: FakeSwitch, bridge: str):
        self.switch = switch
        self.bridge = bridge

    def add(self, flows: list[str]) -> None:
        self.switch._apply(self.bridge, [f"add {flow}" for flow in flows])

    def update(self, old: list[str], new: list[str]) -> int:
        changes = flow_mods(old, new)
        self.switch._apply(self.bridge, changes)
        return len(changes)

    def replace(self, flows: list[str]) -> None:
        current = list(self.switch.tables.get(self.bridge, {}).values())
        self.switch._apply(self.bridge, flow_mods(current, flows))

    def dump(self, match: str = "") -> list[str]:
        wanted = [part for part in match.split(",") if part]
        return [flow for flow in self.switch.flows(self.bridge)
                if all(part in flow_key(flow).split(",") for part in wanted)]
