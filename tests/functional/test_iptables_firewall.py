"""The security-group firewall on a real bridge: two instances behind one host.

Each test builds, in its own namespaces, a "host" with a bridge and two
instances plugged into it by veth pairs (the host ends named as the agent's
taps), applies ``info`` dicts shaped like the server's
``security_group_info_for_devices`` answer, and asks ping and nc what passes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from neutrino.linux import ipset
from neutrino.linux.iptables_firewall import IptablesFirewall
from tests.dataplane import pings, run, sandbox, skip_unless_root, wait_until

TOOLS = ("ip", "iptables", "ip6tables", "ipset", "conntrack", "ping", "nc")
PREFIX = "neutrino"


@dataclass
class Instance:
    namespace: str
    port_id: str
    mac: str
    ip: str

    @property
    def tap(self) -> str:
        return f"tap{self.port_id[:11]}"

    def port(self, groups: list[str], **extra) -> dict:
        return {"device": self.tap, "port_id": self.port_id, "mac_address": self.mac,
                "fixed_ips": [{"subnet_id": "subnet", "ip_address": self.ip}],
                "allowed_address_pairs": [], "port_security_enabled": True,
                "security_groups": groups, "device_owner": "compute:nova", **extra}


@dataclass
class Host:
    namespace: str
    a: Instance
    b: Instance
    firewall: IptablesFirewall
    processes: list[subprocess.Popen] = field(default_factory=list)

    def save(self) -> str:
        """Our lines of both families' filter tables, and our sets."""
        ours = []
        for tool in ("iptables-save", "ip6tables-save"):
            text = run(tool, "-t", "filter", namespace=self.namespace).stdout
            ours += [line for line in text.splitlines() if PREFIX in line]
        sets = run("ipset", "list", namespace=self.namespace).stdout
        return "\n".join(ours) + "\n" + sets


@pytest.fixture
def host() -> Iterator[Host]:
    skip_unless_root(*TOOLS)
    with sandbox() as box:
        ns = box.namespace("host")
        bridged = run("sysctl", "-n", "net.bridge.bridge-nf-call-iptables", namespace=ns,
                      check=False)
        if bridged.stdout.strip() != "1":
            pytest.skip("br_netfilter is not active (bridge-nf-call-iptables)")
        run("ip", "link", "add", "br0", "type", "bridge", namespace=ns)
        run("ip", "link", "set", "br0", "up", namespace=ns)
        run("ip", "addr", "add", "10.0.0.254/24", "dev", "br0", namespace=ns)
        instances = []
        for n in (1, 2):
            inst = Instance(box.namespace(f"vm{n}"), str(uuid.uuid4()),
                            f"fa:16:3e:00:00:0{n}", f"10.0.0.{n}")
            run("ip", "link", "add", inst.tap, "type", "veth", "peer", "name", "eth0",
                "netns", inst.namespace, namespace=ns)
            run("ip", "link", "set", inst.tap, "master", "br0", "up", namespace=ns)
            run("ip", "link", "set", "eth0", "address", inst.mac, "up", namespace=inst.namespace)
            run("ip", "addr", "add", f"{inst.ip}/24", "dev", "eth0", namespace=inst.namespace)
            instances.append(inst)
        made = Host(ns, *instances, IptablesFirewall(namespace=ns, prefix=PREFIX))
        try:
            yield made
        finally:
            for process in made.processes:
                process.kill()
                process.wait()


def rule(group: str, direction: str, protocol: str | None = None, low: int | None = None,
         high: int | None = None, remote_group: str | None = None,
         prefix: str | None = None, ethertype: str = "IPv4") -> dict:
    return {"direction": direction, "ethertype": ethertype, "protocol": protocol,
            "port_range_min": low, "port_range_max": high, "remote_ip_prefix": prefix,
            "remote_group_id": remote_group, "security_group_id": group}


def info(host: Host, rules: list[dict], group: str, a: dict | None = None,
         b: dict | None = None) -> dict:
    """Both instances in ``group`` with ``rules`` (overrides of their ports in a, b)."""
    ports = [host.a.port([group], **(a or {})), host.b.port([group], **(b or {}))]
    return {"devices": {p["port_id"]: p for p in ports}, "security_groups": {group: rules},
            "sg_member_ips": {group: {"IPv4": [host.a.ip, host.b.ip], "IPv6": []}}}


def default_group(group: str) -> list[dict]:
    """Neutron's default group: members talk to each other, anything goes out."""
    return [rule(group, "ingress", remote_group=group), rule(group, "egress"),
            rule(group, "ingress", remote_group=group, ethertype="IPv6"),
            rule(group, "egress", ethertype="IPv6")]


def connects(inst: Instance, address: str, port: int) -> bool:
    return run("nc", "-z", "-w", "1", address, str(port), namespace=inst.namespace,
               check=False).returncode == 0


def listen(host: Host, inst: Instance, port: int) -> None:
    host.processes.append(subprocess.Popen(
        ["ip", "netns", "exec", inst.namespace, "nc", "-lk", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    wait_until(lambda: f":{port} " in run("ss", "-ltn", namespace=inst.namespace).stdout,
               5, f"nc listening on {port}")


def test_default_group_members_reach_each_other(host: Host):
    group = str(uuid.uuid4())
    host.firewall.apply(info(host, default_group(group), group))
    assert pings(host.a.namespace, host.b.ip)
    assert pings(host.b.namespace, host.a.ip)


def test_icmp_rule_added_then_removed(host: Host):
    group = str(uuid.uuid4())
    base = [rule(group, "egress"), rule(group, "ingress", "tcp", 22, 22)]
    host.firewall.apply(info(host, base, group))
    assert not pings(host.a.namespace, host.b.ip, wait=0.5)

    host.firewall.apply(info(host, [*base, rule(group, "ingress", "icmp")], group))
    assert wait_until(lambda: pings(host.a.namespace, host.b.ip, wait=0.5), 1, "ping")

    # a ping that keeps running keeps its conntrack entry: removing the rule must end it
    flood = subprocess.Popen(["ip", "netns", "exec", host.a.namespace, "ping", "-n", "-i",
                              "0.2", "-w", "4", host.b.ip], stdout=subprocess.PIPE, text=True)
    time.sleep(1.2)
    host.firewall.apply(info(host, base, group))
    removed_at = 1.2 / 0.2 + 1
    out, _ = flood.communicate(timeout=10)
    replied = [int(word.split("=")[1]) for line in out.splitlines()
               for word in line.split() if word.startswith("icmp_seq=")]
    assert replied and min(replied) <= 3
    assert max(replied) <= removed_at + 3, out
    assert not pings(host.a.namespace, host.b.ip, wait=0.5)


def test_tcp_port_rule(host: Host):
    group = str(uuid.uuid4())
    listen(host, host.b, 8080)
    listen(host, host.b, 9090)
    host.firewall.apply(info(host, [rule(group, "egress"),
                                    rule(group, "ingress", "tcp", 8000, 8100)], group))
    assert connects(host.a, host.b.ip, 8080)
    assert not connects(host.a, host.b.ip, 9090)


def test_a_stateless_group_lets_replies_through_only_by_their_own_rules(host: Host):
    """Neutron's stateless groups: no conntrack state, so the port 8080 rules that
    let a connection in and out do not let its replies back."""
    group = str(uuid.uuid4())
    listen(host, host.b, 8080)
    to_8080 = [rule(group, "egress", "tcp", 8080, 8080), rule(group, "ingress", "tcp", 8080, 8080)]
    host.firewall.apply(info(host, to_8080, group))
    assert connects(host.a, host.b.ip, 8080)  # stateful: the replies are of a connection

    stateless = [{**r, "stateful": False} for r in to_8080]
    host.firewall.apply(info(host, stateless, group))
    assert "RELATED,ESTABLISHED" not in host.save()
    assert not connects(host.a, host.b.ip, 8080)

    replies = [rule(group, "egress", "tcp", 1024, 65535),
               rule(group, "ingress", "tcp", 1024, 65535)]
    host.firewall.apply(info(host, [*stateless, *({**r, "stateful": False} for r in replies)],
                             group))
    assert connects(host.a, host.b.ip, 8080)


def test_spoofed_address_and_mac_are_dropped(host: Host):
    group = str(uuid.uuid4())
    host.firewall.apply(info(host, default_group(group), group))
    run("ip", "addr", "add", "10.0.0.99/24", "dev", "eth0", namespace=host.a.namespace)
    assert pings(host.a.namespace, host.b.ip)
    assert not run("ping", "-c", "1", "-W", "0.5", "-I", "10.0.0.99", host.b.ip,
                   namespace=host.a.namespace, check=False).returncode == 0
    # to the host itself (INPUT) as well
    assert pings(host.a.namespace, "10.0.0.254")
    assert run("ping", "-c", "1", "-W", "0.5", "-I", "10.0.0.99", "10.0.0.254",
               namespace=host.a.namespace, check=False).returncode != 0

    # an allowed address pair makes that address the instance's own (B's group lets
    # its members in: the server would count the pair's address as one)
    pair = {"allowed_address_pairs": [{"ip_address": "10.0.0.99", "mac_address": host.a.mac}]}
    wanted = info(host, default_group(group), group, a=pair)
    wanted["sg_member_ips"][group]["IPv4"].append("10.0.0.99")
    host.firewall.apply(wanted)
    assert run("ping", "-c", "1", "-W", "1", "-I", "10.0.0.99", host.b.ip,
               namespace=host.a.namespace, check=False).returncode == 0

    run("ip", "link", "set", "eth0", "address", "fa:16:3e:00:00:99",
        namespace=host.a.namespace)
    run("ip", "neigh", "flush", "all", namespace=host.b.namespace)
    assert not pings(host.a.namespace, host.b.ip, wait=0.5)


def test_port_security_disabled_passes_everything(host: Host):
    group = str(uuid.uuid4())
    closed = [rule(group, "egress")]  # no ingress at all
    host.firewall.apply(info(host, closed, group))
    assert not pings(host.a.namespace, host.b.ip, wait=0.5)
    off = {"port_security_enabled": False, "security_groups": []}
    host.firewall.apply(info(host, closed, group, a=off, b=off))
    assert pings(host.a.namespace, host.b.ip)
    run("ip", "addr", "add", "10.0.0.99/24", "dev", "eth0", namespace=host.a.namespace)
    assert run("ping", "-c", "1", "-W", "1", "-I", "10.0.0.99", host.b.ip,
               namespace=host.a.namespace, check=False).returncode == 0
    assert not any(f"-i{host.a.port_id[:11]}" in line for line in host.save().splitlines())


def test_apply_is_idempotent_and_leaves_others_alone(host: Host):
    group = str(uuid.uuid4())
    run("iptables", "-N", "someone-else", namespace=host.namespace)
    run("iptables", "-A", "FORWARD", "-j", "someone-else", namespace=host.namespace)
    wanted = info(host, default_group(group), group)
    host.firewall.apply(wanted)
    first = host.save()
    host.firewall.apply(wanted)
    assert host.save() == first
    assert first.count(f"-A FORWARD -j {PREFIX}-FORWARD") == 2  # IPv4 and IPv6
    saved = run("iptables-save", "-t", "filter", namespace=host.namespace).stdout
    assert "-A FORWARD -j someone-else" in saved


def test_ports_left_out_lose_their_chains_and_sets(host: Host):
    group, other = str(uuid.uuid4()), str(uuid.uuid4())
    wanted = info(host, [*default_group(group), rule(group, "ingress", remote_group=other)],
                  group)
    wanted["sg_member_ips"][other] = {"IPv4": ["192.0.2.0/24"], "IPv6": []}
    host.firewall.apply(wanted)
    assert ipset.set_name(PREFIX, 4, "g", other) in host.save()

    only_b = info(host, default_group(group), group)
    del only_b["devices"][host.a.port_id]
    host.firewall.apply(only_b)
    saved = host.save()
    assert host.a.port_id[:11] not in saved and host.b.port_id[:11] in saved
    assert ipset.set_name(PREFIX, 4, "g", other) not in saved
    assert ipset.set_name(PREFIX, 4, "g", group) in saved


def test_remove_all_leaves_nothing_of_ours(host: Host):
    group = str(uuid.uuid4())
    host.firewall.apply(info(host, default_group(group), group))
    host.firewall.remove_all()
    assert PREFIX not in host.save()
    assert pings(host.a.namespace, host.b.ip)  # FORWARD's policy again
    host.firewall.remove_all()  # nothing to remove: harmless


def test_namespace_none_filters_the_namespace_it_runs_in(host: Host):
    """As the agent runs it: inside the host's namespace, told no namespace."""
    group = str(uuid.uuid4())
    script = ("import json, sys\n"
              "from neutrino.linux.iptables_firewall import IptablesFirewall\n"
              f"IptablesFirewall(prefix={PREFIX!r}).apply(json.load(sys.stdin))\n")
    closed = info(host, [rule(group, "egress")], group)
    subprocess.run(["ip", "netns", "exec", host.namespace, sys.executable, "-c", script],
                   input=json.dumps(closed), text=True, check=True, timeout=30)
    assert f"-A FORWARD -j {PREFIX}-FORWARD" in host.save()
    assert not pings(host.a.namespace, host.b.ip, wait=0.5)


def test_ipv6_neighbour_discovery_and_rules(host: Host):
    group = str(uuid.uuid4())
    overrides = []
    for inst, address in ((host.a, "fd00::1"), (host.b, "fd00::2")):
        run("ip", "addr", "add", f"{address}/64", "dev", "eth0", "nodad",
            namespace=inst.namespace)
        overrides.append({"fixed_ips": [{"subnet_id": "s4", "ip_address": inst.ip},
                                        {"subnet_id": "s6", "ip_address": address}]})
    wanted = info(host, default_group(group), group, *overrides)
    wanted["sg_member_ips"][group]["IPv6"] = ["fd00::1", "fd00::2"]
    host.firewall.apply(wanted)
    assert wait_until(lambda: pings(host.a.namespace, "fd00::2"), 3, "ping over IPv6")

    closed = info(host, [rule(group, "egress"), rule(group, "egress", ethertype="IPv6")],
                  group, *overrides)
    host.firewall.apply(closed)
    assert not pings(host.a.namespace, "fd00::2", wait=0.5)


def ours_in_iptables(namespace: str) -> list[str]:
    """Our lines of both families' filter tables, in the kernel's order."""
    return [line for tool in ("iptables-save", "ip6tables-save")
            for line in run(tool, "-t", "filter", namespace=namespace).stdout.splitlines()
            if PREFIX in line]


def test_incremental_applies_leave_what_a_fresh_apply_writes(host: Host):
    """Edited in place (rules deleted and inserted by position), the chains end
    as a first apply on a clean host writes them; and traffic agrees."""
    group = str(uuid.uuid4())
    extra = [Instance(host.namespace, f"{n:08x}-{uuid.uuid4()}"[:36], f"fa:16:3e:00:01:{n:02x}",
                      f"10.0.1.{n}") for n in range(1, 13)]  # taps that need not exist

    def wanted(count: int, rules: list[dict]) -> dict:
        made = info(host, rules, group)
        for inst in extra[:count]:
            made["devices"][inst.port_id] = inst.port([group])
            made["sg_member_ips"][group]["IPv4"].append(inst.ip)
        return made

    steps = [wanted(10, default_group(group)), wanted(11, default_group(group)),
             wanted(9, default_group(group)),
             wanted(9, [*default_group(group), rule(group, "ingress", "tcp", 22, 22)]),
             wanted(12, default_group(group))]
    for step in steps:
        host.firewall.apply(step)
        incremental = ours_in_iptables(host.namespace)
        fresh = IptablesFirewall(namespace=host.namespace, prefix=PREFIX)
        fresh.remove_all()
        fresh.apply(step)
        assert ours_in_iptables(host.namespace) == incremental
        host.firewall = fresh  # what it wrote is known to it, not to the other
    assert pings(host.a.namespace, host.b.ip)
