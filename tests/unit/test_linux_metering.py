"""The metering chains: the pure builder, and ``MeterTable`` on a fake filter
table that keeps counters and walks packets through the chains as the kernel
would (which labels count a packet?)."""

from __future__ import annotations

import ipaddress
import subprocess

import pytest

from neutrino.linux import metering as m

GW = "qg-0123456789a"
A, B = "aaaaaaaa-1111-4111-8111-111111111111", "bbbbbbbb-2222-4222-8222-222222222222"


class FakeFilter:
    """``iptables-save [-c] -t filter`` and ``iptables-restore --noflush`` on one
    filter table; each rule has its own counters, zeroed when its chain is declared."""

    def __init__(self) -> None:
        self.chains: dict[str, list[list]] = {"FORWARD": []}  # chain -> [[spec, pkts, bytes]]
        self.restores = 0

    def __call__(self, argv: list[str], stdin: str | None) -> subprocess.CompletedProcess:
        if argv[0] == "iptables-save":
            out = self.save(counters="-c" in argv)
        else:
            assert argv == ["iptables-restore", "--noflush"]
            self.restore(stdin or "")
            out = ""
        return subprocess.CompletedProcess(argv, 0, out, "")

    def save(self, counters: bool) -> str:
        lines = ["*filter", ":FORWARD ACCEPT [0:0]"]
        lines += [f":{c} - [0:0]" for c in sorted(self.chains) if c != "FORWARD"]
        for chain in ["FORWARD", *sorted(c for c in self.chains if c != "FORWARD")]:
            for spec, pkts, size in self.chains[chain]:
                line = f"-A {chain} {spec}".rstrip()
                lines.append(f"[{pkts}:{size}] {line}" if counters else line)
        return "\n".join([*lines, "COMMIT"]) + "\n"

    def restore(self, text: str) -> None:
        self.restores += 1
        for line in text.splitlines():
            if line.startswith(":"):
                self.chains[line[1:].split()[0]] = []
            elif line.startswith("-A "):
                _, chain, *spec = line.split(" ", 2)
                assert chain in self.chains, line
                self.chains[chain].append([spec[0] if spec else "", 0, 0])
            elif line.startswith("-F "):
                self.chains[line.split()[1]] = []
            elif line.startswith("-X "):
                name = line.split()[1]
                assert not self.chains[name], "deleting a chain with rules"
                assert not any(f"-j {name}" in r[0] for rules in self.chains.values()
                               for r in rules), "deleting a chain still jumped to"
                del self.chains[name]

    def forward(self, src: str, dst: str, in_dev: str, out_dev: str, size: int) -> None:
        """A packet through FORWARD: every rule it matches counts it."""
        self._walk("FORWARD", {"-s": src, "-d": dst, "-i": in_dev, "-o": out_dev}, size)

    def _walk(self, chain: str, packet: dict[str, str], size: int) -> bool:
        for rule in self.chains[chain]:
            words = rule[0].split()
            opts = dict(zip(words[::2], words[1::2], strict=True)) if words else {}
            if not all(self._matches(k, v, packet) for k, v in opts.items() if k != "-j"):
                continue
            rule[1] += 1
            rule[2] += size
            target = opts.get("-j")
            if target == "RETURN":
                return True
            if target in self.chains:
                self._walk(target, packet, size)
        return False

    @staticmethod
    def _matches(key: str, value: str, packet: dict[str, str]) -> bool:
        if key in ("-s", "-d"):
            return ipaddress.ip_address(packet[key]) in ipaddress.ip_network(value)
        return packet[key] == value


def counted(table: m.MeterTable) -> dict[str, tuple[int, int]]:
    return {chain: (c.packets, c.bytes) for chain, c in table.counters().items()}


def test_chain_layout():
    labels = [m.Label(B, (m.Rule("egress", destination="0.0.0.0/0"),)),
              m.Label(A, (m.Rule("ingress", source="10.0.0.5/24"),
                          m.Rule("ingress", source="10.0.0.7/32", excluded=True),
                          m.Rule("egress", source="192.168.1.0/24",
                                 destination="203.0.113.0/24")))]
    assert m.chains(GW, labels) == {
        "neutrino-meter-FWD": ["-A neutrino-meter-FWD -j neutrino-meter-r-aaaaaaaa-11",
                               "-A neutrino-meter-FWD -j neutrino-meter-r-bbbbbbbb-22"],
        "neutrino-meter-r-aaaaaaaa-11": [
            f"-A neutrino-meter-r-aaaaaaaa-11 -s 10.0.0.7/32 -i {GW} -j RETURN",
            f"-A neutrino-meter-r-aaaaaaaa-11 -s 10.0.0.0/24 -i {GW} "
            "-j neutrino-meter-l-aaaaaaaa-11",
            f"-A neutrino-meter-r-aaaaaaaa-11 -s 192.168.1.0/24 -d 203.0.113.0/24 -o {GW} "
            "-j neutrino-meter-l-aaaaaaaa-11"],
        "neutrino-meter-l-aaaaaaaa-11": ["-A neutrino-meter-l-aaaaaaaa-11"],
        "neutrino-meter-r-bbbbbbbb-22": [
            f"-A neutrino-meter-r-bbbbbbbb-22 -o {GW} -j neutrino-meter-l-bbbbbbbb-22"],
        "neutrino-meter-l-bbbbbbbb-22": ["-A neutrino-meter-l-bbbbbbbb-22"],
    }
    assert all(len(chain) <= 28 for chain in m.chains(GW, labels))  # iptables' limit
    assert m.chains(None, labels) == {"neutrino-meter-FWD": []}  # no gateway: nothing


def test_remote_prefix_is_the_outside_end():
    assert m.rule_of("ingress", False, "198.51.100.0/24", None, None) == m.Rule(
        "ingress", source="198.51.100.0/24")
    assert m.rule_of("egress", True, "198.51.100.0/24", None, None) == m.Rule(
        "egress", destination="198.51.100.0/24", excluded=True)
    assert m.rule_of("egress", False, None, "10.0.0.0/8", "1.2.3.4/32") == m.Rule(
        "egress", "10.0.0.0/8", "1.2.3.4/32")
    assert m.rule_of("ingress", False, "2001:db8::/64", None, None) is None  # IPv4 only


def test_excluded_traffic_is_not_counted_and_counters_survive_rule_changes():
    host = FakeFilter()
    table = m.MeterTable("qrouter-x", runner=host)
    counting = m.label_chain(A)
    all_in = m.Label(A, (m.Rule("ingress", source="0.0.0.0/0"),
                         m.Rule("ingress", source="198.51.100.9/32", excluded=True)))
    assert table.apply(m.chains(GW, [all_in]))
    host.forward("198.51.100.1", "10.0.0.5", GW, "qr-1", 100)
    host.forward("198.51.100.9", "10.0.0.5", GW, "qr-1", 1000)  # excluded
    host.forward("10.0.0.5", "198.51.100.1", "qr-1", GW, 10)  # egress: another direction
    assert counted(table) == {counting: (1, 100)}
    assert not table.apply(m.chains(GW, [all_in]))  # unchanged: nothing run
    # another rule for the label: its rules chain is rewritten, its counters stay
    more = m.Label(A, (*all_in.rules, m.Rule("egress", destination="0.0.0.0/0")))
    assert table.apply(m.chains(GW, [more]))
    host.forward("10.0.0.5", "198.51.100.1", "qr-1", GW, 10)
    assert counted(table) == {counting: (2, 110)}
    # a second object on the same namespace (the agent restarted) rewrites nothing
    again = m.MeterTable("qrouter-x", runner=host)
    before = host.restores
    assert not again.apply(m.chains(GW, [more]))
    assert host.restores == before and counted(again) == {counting: (2, 110)}
    # a label that goes takes its chains; the other label starts at zero
    assert again.apply(m.chains(GW, [m.Label(B, (m.Rule("egress"),))]))
    assert set(host.chains) == {"FORWARD", m.TOP, m.rules_chain(B), m.label_chain(B)}
    assert counted(again) == {m.label_chain(B): (0, 0)}
    assert host.save(False).count(f"-A FORWARD -j {m.TOP}") == 1


def test_restore_text_round_trip():
    wanted = m.chains(GW, [m.Label(A, (m.Rule("ingress", source="10.0.0.0/8"),))])
    text = m.restore_text(wanted, {}, jump=False)
    assert text is not None and text.startswith("*filter\n") and text.endswith("COMMIT\n")
    host = FakeFilter()
    host.restore(text)
    assert m.saved_chains(host.save(False)) == (wanted, True)
    assert m.saved_chains(host.save(True)) == (wanted, True)
    assert m.restore_text(wanted, wanted, jump=True) is None


@pytest.mark.parametrize("saved,found", [
    ("*filter\n[3:180] -A neutrino-meter-l-aaaaaaaa-11\nCOMMIT\n",
     {"neutrino-meter-l-aaaaaaaa-11": m.Counter(3, 180)}),
    ("*nat\n[3:180] -A neutrino-meter-l-aaaaaaaa-11\nCOMMIT\n", {}),
    ("*filter\n[3:180] -A neutrino-meter-r-aaaaaaaa-11 -o qg-1 -j RETURN\nCOMMIT\n", {}),
])
def test_counters(saved, found):
    assert m.counters(saved) == found
