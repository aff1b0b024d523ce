"""The CT rules of routers' conntrack helpers (``neutrino.linux.conntrack_helpers``)
on a fake raw table, and what the L3 agent's extension asks of it."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from neutrino.agents.extensions.conntrack_helper import ConntrackHelperExtension, wanted
from neutrino.linux import conntrack_helpers as cth
from neutrino.linux.iptables import saved_lines

FTP = cth.Helper("tcp", 21, "ftp")
TFTP = cth.Helper("udp", 69, "tftp")
FOREIGN = "-A PREROUTING -p udp -m udp --dport 5060 -j CT --helper sip"


class FakeRaw:
    """The raw table of each IP version as ``iptables-restore --noflush``
    leaves it: a chain declared is emptied, rules are appended."""

    def __init__(self) -> None:
        self.tables = {v: {"PREROUTING": [FOREIGN], "OUTPUT": []} for v in (4, 6)}
        self.restores = 0
        self.refuse = False

    def __call__(self, argv: list[str], stdin: str | None) -> subprocess.CompletedProcess:
        version = 6 if argv[0].startswith("ip6") else 4
        table = self.tables[version]
        if argv[0].endswith("-save"):
            lines = ["*raw", *(f":{name} - [0:0]" for name in table),
                     *(rule for rules in table.values() for rule in rules), "COMMIT"]
            return subprocess.CompletedProcess(argv, 0, "\n".join(lines) + "\n", "")
        if self.refuse:
            return subprocess.CompletedProcess(argv, 2, "", "no such helper")
        assert argv[1:] == ["--noflush"]
        self.restores += 1
        for _, line in saved_lines(stdin or ""):
            if line.startswith(":"):
                table[line[1:].split()[0]] = []
            elif line.startswith("-A "):
                table[line.split()[1]].append(line)
        return subprocess.CompletedProcess(argv, 0, "", "")


def test_rules_are_written_once_for_both_versions():
    host = FakeRaw()
    assert cth.apply(host, [TFTP, FTP, FTP])
    for version in (4, 6):
        table = host.tables[version]
        assert table[cth.CHAIN.name] == [
            "-A neutrino-l3-CTH -p tcp -m tcp --dport 21 -j CT --helper ftp",
            "-A neutrino-l3-CTH -p udp -m udp --dport 69 -j CT --helper tftp"]
        assert table["PREROUTING"] == [FOREIGN, cth.CHAIN.jump]  # others' rules kept
    assert host.restores == 2
    assert not cth.apply(host, [FTP, TFTP])  # read back: nothing to write
    assert host.restores == 2


def test_a_change_rewrites_the_chain_and_none_empties_it():
    host = FakeRaw()
    cth.apply(host, [FTP])
    assert cth.apply(host, [TFTP])
    assert host.tables[4][cth.CHAIN.name] == [
        "-A neutrino-l3-CTH -p udp -m udp --dport 69 -j CT --helper tftp"]
    assert cth.apply(host, [])
    assert host.tables[4][cth.CHAIN.name] == []
    assert host.tables[4]["PREROUTING"] == [FOREIGN, cth.CHAIN.jump]  # one jump, still
    assert not cth.apply(host, [])


def test_a_router_that_never_had_helpers_is_left_alone():
    host = FakeRaw()
    assert not cth.apply(host, [])
    assert host.restores == 0 and cth.CHAIN.name not in host.tables[4]


def test_a_protocol_without_ports_has_no_rule():
    assert cth.rules([cth.Helper("icmp", 1, "ftp")]) == []


def test_what_iptables_refuses_is_an_error():
    host = FakeRaw()
    host.refuse = True
    with pytest.raises(cth.HelperError, match="no such helper"):
        cth.apply(host, [FTP])


def test_the_extension_applies_the_routers_sync_data():
    hosts: dict[str, FakeRaw] = {}
    extension = ConntrackHelperExtension(lambda ns: hosts.setdefault(ns, FakeRaw()))

    class Handles:
        @staticmethod
        async def run(work, *args):
            return work(*args)

    extension.initialize(Handles())  # type: ignore[arg-type]
    data = {"id": "r1", "_conntrack_helpers": [
        {"id": "h1", "protocol": "tcp", "port": 21, "helper": "ftp"}]}
    assert wanted(data) == [FTP]
    asyncio.run(extension.handle_router(data))
    assert hosts["qrouter-r1"].tables[4][cth.CHAIN.name] == cth.rules([FTP])
