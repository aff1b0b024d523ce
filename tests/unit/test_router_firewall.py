"""The router firewall's chains, as pure data: what they say, and what a write touches."""

from __future__ import annotations

import asyncio
from typing import Any

from neutrino.agents.extensions.api import AgentHandles
from neutrino.agents.extensions.firewall import FirewallExtension, groups_of
from neutrino.linux import firewall_log
from neutrino.linux import router_firewall as rf

GROUP_ID = "0f1e2d3c-4b5a-6978-8899-aabbccddeeff"
WEB = rf.Rule(action="allow", protocol="tcp", destination_port="80",
              source="10.0.0.0/24")


def group(**extra) -> rf.Group:
    return rf.Group(id=GROUP_ID, devices=("qr-1", "qr-2"), **{
        "ingress": (WEB, rf.Rule(action="reject", protocol="udp")), "egress": None, **extra})


def body(chain: list[str]) -> list[str]:
    return [line.split(" ", 2)[2] for line in chain[1:]]


def test_a_group_is_two_chains_and_the_forward_jumps():
    found = rf.chains([group()], 4)
    ingress, egress = rf.chain_name("ingress", GROUP_ID), rf.chain_name("egress", GROUP_ID)
    assert len(ingress) <= 28 and set(found) == {rf.FORWARD, ingress, egress}
    assert body(found[ingress]) == [
        "-m state --state INVALID -j DROP", "-m state --state RELATED,ESTABLISHED -j ACCEPT",
        "-s 10.0.0.0/24 -p tcp -m tcp --dport 80 -j ACCEPT",
        "-p udp -j REJECT --reject-with icmp-port-unreachable"]
    # no egress policy: nothing new goes out
    assert body(found[egress]) == body(found[ingress])[:2]
    assert body(found[rf.FORWARD]) == [
        f"-o qr-1 -j {ingress}", f"-o qr-2 -j {ingress}", f"-i qr-1 -j {egress}",
        f"-i qr-2 -j {egress}", "-o qr-1 -j DROP", "-o qr-2 -j DROP", "-i qr-1 -j DROP",
        "-i qr-2 -j DROP"]
    assert all(chain[0].startswith(f"-A {name} -m comment --comment ")
               for name, chain in found.items())


def test_each_family_takes_its_own_rules_and_spelling():
    v6 = rf.Rule(action="reject", protocol="icmp", ip_version=6, source="2001:db8::1")
    found = rf.chains([group(ingress=(WEB, v6))], 6)
    assert body(found[rf.chain_name("ingress", GROUP_ID)])[2:] == [
        "-s 2001:db8::1/128 -p ipv6-icmp -j REJECT --reject-with icmp6-port-unreachable"]
    tcp = rf.Rule(action="reject", protocol="tcp")
    assert body(rf.chains([group(ingress=(tcp,))], 4)[rf.chain_name("ingress", GROUP_ID)])[
        2:] == ["-p tcp -j REJECT --reject-with tcp-reset"]


def test_a_disabled_group_drops_all_new_traffic():
    found = rf.chains([group(enabled=False)], 4)
    assert len(body(found[rf.chain_name("ingress", GROUP_ID)])) == 2


def saved(chains: rf.Chains, hooked: bool = True) -> str:
    lines = ["*filter", ":FORWARD ACCEPT [0:0]", *(f":{c} - [0:0]" for c in chains)]
    if hooked:
        lines.append(f"-A FORWARD -j {rf.FORWARD}")
    lines += [line for chain in chains.values() for line in chain]
    return "\n".join([*lines, "COMMIT"])


def test_only_chains_whose_digest_differs_are_written():
    old = rf.chains([group()], 4)
    present, hooked = rf.saved_chains(saved(old))
    assert hooked and rf.restore_text(old, present, hooked) is None
    new = rf.chains([group(ingress=(WEB,))], 4)
    text = rf.restore_text(new, present, hooked)
    assert text is not None
    ingress = rf.chain_name("ingress", GROUP_ID)
    assert f":{ingress} - [0:0]" in text and rf.FORWARD not in text
    # a kept rule spelt otherwise by iptables-save changes nothing: the digest decides
    respelt = {c: [line.replace("-p tcp", "-p 6") for line in lines] for c, lines in
               old.items()}
    assert rf.restore_text(old, *rf.saved_chains(saved(respelt))) is None


def test_a_first_write_hooks_forward_and_a_last_one_unhooks_and_removes():
    wanted = rf.chains([group()], 4)
    first = rf.restore_text(wanted, {}, False)
    assert first is not None and f"-I FORWARD 1 -j {rf.FORWARD}" in first
    present, hooked = rf.saved_chains(saved(wanted))
    last = rf.restore_text({}, present, hooked)
    assert last is not None
    assert f"-D FORWARD -j {rf.FORWARD}" in last
    assert all(f"-X {chain}" in last for chain in wanted)
    assert rf.restore_text({}, {}, False) is None


def test_connections_of_rules_taken_away_are_forgotten():
    old = rf.chains([group()], 4)
    new = rf.chains([group(ingress=())], 4)
    assert rf.forgotten_rules(old, new) == ["-s 10.0.0.0/24 -p tcp -m tcp --dport 80 -j ACCEPT"]
    assert rf.forgotten_rules(old, old) == []
    assert rf.conntrack_filter("-s 10.0.0.5/32 -p tcp -m tcp --dport 80 -j ACCEPT", 4) == [
        "-f", "ipv4", "-s", "10.0.0.5", "-p", "tcp", "--dport", "80"]
    assert rf.conntrack_filter("-p tcp -m tcp --dport 80:90 -j ACCEPT", 4) == [
        "-f", "ipv4", "-p", "tcp"]


def test_the_extension_reads_groups_from_a_routers_sync_data():
    data = {"id": "r", "_interfaces": [{"id": "aaaaaaaaaaaa-1"}], "_firewall_groups": [{
        "id": GROUP_ID, "status": "PENDING_CREATE", "admin_state_up": True,
        "ports": ["aaaaaaaaaaaa-1", "gone"], "ingress_rules": None, "egress_rules": [{
            "id": "x", "enabled": False, "action": "allow", "protocol": None,
            "ip_version": 4, "source_ip_address": None, "destination_ip_address": None,
            "source_port": None, "destination_port": None}]}]}
    [found] = groups_of(data)
    assert found.devices == ("qr-aaaaaaaaaaa",) and found.ingress is None
    assert found.egress == ()  # a disabled rule is left out


class Table:
    """A router's firewall that fails as often as told, then records."""

    def __init__(self, failures: int = 0):
        self.failures = failures
        self.applied: list[list[rf.Group]] = []

    def apply(self, groups: list[rf.Group], limits: object) -> list[str]:
        if self.failures:
            self.failures -= 1
            raise OSError("iptables-restore in qrouter-r: no")
        self.applied.append(groups)
        return ["ipv4 chain"]


class Plugin:
    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []

    async def set_firewall_group_status(self, ctx, fwg_id, status, host) -> bool:
        self.said.append((fwg_id, status))
        return True


def extension(table: Table, dirty: list) -> tuple[FirewallExtension, Plugin]:
    """The extension as initialize leaves it, with a fake server and table."""
    ext = FirewallExtension()
    ext.handles = AgentHandles(conf=Any, bus=Any, host="h", agent_type="L3 agent",
                               context={}, mark_dirty=lambda *items: dirty.extend(items),
                               request_full_sync=lambda: None)
    ext.plugin = plugin = Plugin()  # type: ignore[assignment]
    ext.tables = {"r": table}  # type: ignore[dict-item]
    ext.retry_after = 0.05
    ext.limits = firewall_log.Limits()
    ext.logs, ext.readers = {}, {}
    return ext, plugin


def sync_data(status: str, up: bool = True) -> dict:
    return {"id": "r", "_interfaces": [{"id": "p1"}], "_firewall_groups": [{
        "id": "g", "status": status, "admin_state_up": up, "ports": ["p1"],
        "ingress_rules": [], "egress_rules": None}]}


def test_the_extension_reports_what_differs_and_retries_a_failure():
    dirty: list = []
    table = Table(failures=1)
    ext, plugin = extension(table, dirty)

    async def scenario() -> None:
        await ext.handle_router(sync_data("PENDING_CREATE"))  # fails: ERROR, retried
        assert plugin.said == [("g", "ERROR")] and table.applied == []
        await asyncio.sleep(0.2)
        assert dirty == [("router", "r")]
        await ext.handle_router(sync_data("ERROR"))
        assert plugin.said[-1] == ("g", "ACTIVE") and len(table.applied) == 1
        await ext.handle_router(sync_data("ACTIVE"))  # as the server has it: not said again
        assert len(plugin.said) == 2
        await ext.handle_router(sync_data("ACTIVE", up=False))
        assert plugin.said[-1] == ("g", "DOWN")

    asyncio.run(scenario())


def test_a_logged_group_has_nflog_twins_naming_it():
    deny = rf.Rule(action="deny", protocol="udp")
    logged = group(ingress=(WEB, deny), logs=frozenset({firewall_log.ACCEPT, firewall_log.DROP}))
    found = rf.chains([logged], 4)
    ingress = body(found[rf.chain_name("ingress", GROUP_ID)])
    nflog = [rule for rule in ingress if "-j NFLOG" in rule]
    assert [rule.split("--nflog-prefix ")[1].split()[0] for rule in nflog] == [
        f"A:{GROUP_ID}", f"D:{GROUP_ID}"]
    assert ingress.index(nflog[0]) + 1 == ingress.index(
        "-s 10.0.0.0/24 -p tcp -m tcp --dport 80 -j ACCEPT")
    # what no rule allowed is logged before each device's drop
    forward = body(found[rf.FORWARD])
    assert sum("--nflog-prefix D:" in rule for rule in forward) == 4
    assert rf.chains([group()], 4) != found  # logging changes the digest: rewritten
    [read] = groups_of({"id": "r", "_interfaces": [{"id": "p"}], "_firewall_groups": [{
        "id": "g", "status": "ACTIVE", "admin_state_up": True, "ports": ["p"],
        "ingress_rules": None, "egress_rules": None,
        "logs": [{"id": "l", "project_id": "x", "event": "DROP"}]}]})
    assert read.logs == frozenset({firewall_log.DROP})
