"""A fake of the firewall tools (``ip[6]tables-save/-restore``, ``ipset``,
``conntrack``) for ``IptablesFirewall(runner=...)``: the tools' effect on a
filter table per IP version, the sets and conntrack, every run recorded.

It answers what a host would do with a packet (``forwards``): a bridged
packet from one tap to another walks ``FORWARD`` and the chains it jumps to,
matching the rules as iptables would (physdev, addresses, protocol and
ports, sets, MAC, conntrack state). An option it does not know fails the
test rather than match by accident.
"""

from __future__ import annotations

import ipaddress
import subprocess
from dataclasses import dataclass

BUILT_IN = ("ACCEPT", "DROP")


@dataclass(frozen=True)
class Packet:
    """What the rules look at; ``state``: conntrack's view (a first packet is NEW)."""
    src: str
    dst: str
    protocol: str = "tcp"
    dport: int | None = None
    sport: int = 40000
    src_mac: str = ""
    state: str = "NEW"
    icmp_type: int | None = None


class FakeIptables:
    """The tools' effect on a filter table per family, the sets and conntrack,
    enough to ask what the host holds; every run is recorded."""

    def __init__(self, flows: str = ""):
        self.tables: dict[int, dict[str, list[str]]] = {
            4: {"FORWARD": [], "INPUT": []}, 6: {"FORWARD": [], "INPUT": []}}
        self.sets: dict[str, set[str]] = {}
        self.flows = flows.splitlines()
        self.runs: list[tuple[list[str], str | None]] = []
        self.fail: str | None = None  # a tool to fail once

    def __call__(self, argv: list[str], stdin: str | None) -> subprocess.CompletedProcess:
        self.runs.append((argv, stdin))
        if argv[0] == self.fail:
            self.fail = None
            return subprocess.CompletedProcess(argv, 1, "", "refused")
        out = getattr(self, argv[0].replace("-", "_"))(argv[1:], stdin or "")
        return subprocess.CompletedProcess(argv, 0, out or "", "")

    def tools(self) -> list[str]:
        return [argv[0] for argv, _ in self.runs]

    def iptables_save(self, _args: list[str], _stdin: str, version: int = 4) -> str:
        table = self.tables[version]
        return "\n".join(["*filter", *(f":{name} - [0:0]" for name in table),
                          *(f"-A {name} {rule}" for name, rules in table.items()
                            for rule in rules), "COMMIT"]) + "\n"

    def ip6tables_save(self, args: list[str], stdin: str) -> str:
        return self.iptables_save(args, stdin, 6)

    def iptables_restore(self, _args: list[str], text: str, version: int = 4) -> None:
        table = self.tables[version]
        for line in text.splitlines():
            if line.startswith(":"):
                table[line[1:].split()[0]] = []
                continue
            op, _, rest = line.partition(" ")
            name, _, spec = rest.partition(" ")
            if op == "-A":
                table[name].append(spec)
            elif op == "-I":
                number, _, rule_ = spec.partition(" ")
                assert int(number) <= len(table[name]) + 1
                table[name].insert(int(number) - 1, rule_)
            elif op == "-D":
                rules = table[name]
                del rules[int(spec) - 1 if spec.isdigit() else rules.index(spec)]
            elif op == "-X":
                assert not table.pop(name)

    def ip6tables_restore(self, args: list[str], text: str) -> None:
        self.iptables_restore(args, text, 6)

    def ipset(self, args: list[str], text: str) -> str:
        if args == ["save"]:
            return "".join(f"create {n} hash:net\n" + "".join(f"add {n} {e}\n" for e in sorted(s))
                           for n, s in self.sets.items())
        for words in (line.split() for line in text.splitlines()):
            if words[0] == "create":
                self.sets.setdefault(words[1], set())
            elif words[0] == "flush":
                self.sets[words[1]] = set()
            elif words[0] == "add":
                self.sets[words[1]].add(words[2])
            elif words[0] == "swap":
                self.sets[words[1]], self.sets[words[2]] = self.sets[words[2]], self.sets[words[1]]
            elif words[0] == "destroy":
                del self.sets[words[1]]
        return ""

    def conntrack(self, args: list[str], _stdin: str) -> str:
        if args[0] == "-L":
            return "\n".join(self.flows) + "\n"
        wanted = dict(zip(args[1::2], args[2::2], strict=True))
        self.flows = [flow for flow in self.flows if not all(
            _field(flow, key) == value for key, value in wanted.items())]
        return ""

    def state(self) -> tuple:
        return self.tables, self.sets

    # --- what the host does with a packet ----------------------------------------------

    def forwards(self, packet: Packet, in_tap: str, out_tap: str) -> bool:
        """Whether the bridge passes ``packet`` from ``in_tap`` to ``out_tap``
        (FORWARD's policy: ACCEPT)."""
        version = ipaddress.ip_address(packet.src).version
        where = {"in": in_tap, "out": out_tap}
        return self._walk(version, "FORWARD", packet, where, 0) != "DROP"

    def _walk(self, version: int, chain: str, packet: Packet, where: dict[str, str],
              depth: int) -> str | None:
        """ACCEPT, DROP, or None when the chain ran out or RETURNed."""
        assert depth < 20, f"a jump loop through {chain}"
        for spec in self.tables[version][chain]:
            target = self._match(spec, packet, where)
            if target is None:
                continue
            if target == "RETURN":
                return None
            if target in BUILT_IN:
                return target
            found = self._walk(version, target, packet, where, depth + 1)
            if found is not None:
                return found
        return None

    def _match(self, spec: str, packet: Packet, where: dict[str, str]) -> str | None:
        """The rule's target if ``packet`` matches it, else None."""
        words = spec.split()
        target, i, ok = None, 0, True
        while i < len(words):
            word, value = words[i], words[i + 1] if i + 1 < len(words) else ""
            i += 2
            if word == "-m":
                continue  # the module; its options follow
            if word == "--physdev-is-bridged":
                i -= 1
            elif word in ("--physdev-in", "--physdev-out"):
                ok &= where[word.rsplit("-", 1)[1]] == value
            elif word in ("-s", "-d"):
                address = packet.src if word == "-s" else packet.dst
                ok &= _within(address, value)
            elif word == "-p":
                ok &= packet.protocol == value
            elif word in ("--dport", "--sport"):
                number = packet.dport if word == "--dport" else packet.sport
                low, _, high = value.partition(":")
                ok &= number is not None and int(low) <= number <= int(high or low)
            elif word in ("--icmp-type", "--icmpv6-type"):
                ok &= packet.icmp_type == int(value.split("/")[0])
            elif word == "--state":
                ok &= packet.state in value.split(",")
            elif word == "--match-set":
                address = packet.src if words[i] == "src" else packet.dst
                i += 1
                ok &= any(_within(address, entry) for entry in self.sets[value])
            elif word == "--mac-source":
                ok &= packet.src_mac.upper() == value.upper()
            elif word == "-j":
                target = value
            else:
                raise AssertionError(f"the fake does not know {word} (in {spec!r})")
        return target if ok else None


def _field(flow: str, option: str) -> str | None:
    """What a ``conntrack -D`` option matches in a ``conntrack -L -o extended`` line."""
    words = flow.split()
    if option in ("-f", "-p"):
        return words[0 if option == "-f" else 2]
    key = {"-s": "src", "-d": "dst", "--dport": "dport"}[option]
    return next((w.split("=")[1] for w in words if w.startswith(key + "=")), None)


def _within(address: str, cidr: str) -> bool:
    return ipaddress.ip_address(address) in ipaddress.ip_network(cidr, strict=False)
