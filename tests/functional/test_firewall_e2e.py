"""FWaaS v2 end to end: an emulated host with the Linux bridge agent and the
L3 agent running its ``fwaas_v2`` extension, a router with two tenant
subnets, and a firewall group on the router's port of one of them. Root
only: everything happens in namespaces the test makes and removes."""

from __future__ import annotations

import select
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.dataplane import pings, run, sandbox, skip_unless_root, wait_until
from tests.functional.emulated_hosts import Deployment
from tests.functional.test_l3_e2e import (
    LB,
    SERVICE,
    Lab,
    add_interface,
    address,
    ask,
    instance,
    said,
    tenant_subnet,
)

pytestmark = pytest.mark.slow

FW = "/v2.0/fwaas"
L3 = "L3 agent"
REJECTED, DROPPED, ECHO = 81, 82, 83


@pytest.fixture
def lab(tmp_path, rabbit_url) -> Iterator[Lab]:
    skip_unless_root("ip", "socat", "ping", "iptables", "ip6tables", "conntrack")
    with sandbox() as box:
        d = Deployment(box, tmp_path, rabbit_url, server_extra=(
            "[DEFAULT]\nservice_plugins = router,firewall_v2,log\n"))
        try:
            host = d.add_host("h1", 1)
            d.start_l2_agent("h1", firewall="noop")
            l3 = d.start_l3_agent("h1", text=l3_text(d))
            for agent_type in (LB, L3):
                wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, f"the {agent_type}")
            yield Lab(d, host, "", {}, l3)
        finally:
            d.close()


def l3_text(d: Deployment) -> str:
    """The L3 agent's [agent] extensions, and where its packet lines go."""
    return (f"extensions = fwaas_v2\n[network_log]\n"
            f"local_output_log_base = {packet_log(d)}\n")


def packet_log(d: Deployment) -> Path:
    return d.tmp / "packets.log"


def lines(d: Deployment) -> list[str]:
    path = packet_log(d)
    return path.read_text().splitlines() if path.exists() else []


def made(lab: Lab, kind: str, **attrs) -> dict:
    name = "firewall_policy" if kind == "firewall_policies" else kind[:-1]
    resp = lab.api.post(f"{FW}/{kind}", json={name: attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()[name]


def status(lab: Lab, group: dict) -> str:
    return lab.api.get(f"{FW}/firewall_groups/{group['id']}").json()["firewall_group"]["status"]


def refused_quickly(namespace: str, address: str, port: int) -> bool:
    """A connection that fails at once (a reset), not after the timeout (a drop)."""
    started = time.monotonic()
    answer = ask(namespace, address, port)
    return answer == "" and time.monotonic() - started < 0.8


def dropped(namespace: str, address: str, port: int) -> bool:
    started = time.monotonic()
    answer = ask(namespace, address, port)
    return answer == "" and time.monotonic() - started >= 0.9


class Conversation:
    """One TCP connection kept open to an echo service, line by line."""

    def __init__(self, namespace: str, address: str, port: int):
        self.proc = subprocess.Popen(["ip", "netns", "exec", namespace, "socat", "-",
                                      f"TCP:{address}:{port}"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

    def echoes(self, line: str, seconds: float = 2) -> bool:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], seconds)
        return bool(ready) and self.proc.stdout.readline().strip() == line

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@dataclass
class Sites:
    """A router between two subnets, an instance on each (b's answers on
    SERVICE), and the router's port on b's network."""

    router: dict
    port_a: dict
    inst_a: str
    port_b: dict
    inst_b: str
    router_port_b: str


def sites(lab: Lab, cidr_a: str, cidr_b: str) -> Sites:
    router = lab.api.create("routers", name="r")
    net_a, subnet_a = tenant_subnet(lab, cidr_a)
    net_b, subnet_b = tenant_subnet(lab, cidr_b)
    add_interface(lab, router, subnet_a)
    add_interface(lab, router, subnet_b)
    port_a, inst_a = instance(lab, net_a, subnet_a, "a")
    port_b, inst_b = instance(lab, net_b, subnet_b, "b")
    said(inst_a, address(port_b), SERVICE, "b")
    [router_port_b] = [p["id"] for p in lab.api.get("/v2.0/ports", params={
        "device_id": router["id"], "network_id": net_b["id"]}).json()["ports"]]
    return Sites(router, port_a, inst_a, port_b, inst_b, router_port_b)


def test_a_firewall_group_on_a_router_port(lab: Lab):
    s = sites(lab, "10.81.0.0/24", "10.82.0.0/24")
    router, port_a, inst_a, inst_b = s.router, s.port_a, s.inst_a, s.inst_b
    ip_b = address(s.port_b)
    for port in (REJECTED, DROPPED):
        lab.d.serve_tcp(inst_b, port, f"echo b{port}")
    lab.d.serve_tcp(inst_b, ECHO, "cat")
    said(inst_a, ip_b, DROPPED, f"b{DROPPED}")
    assert pings(inst_a, ip_b)

    # into b's network: 80 and the echo service allowed, 81 rejected, the rest
    # (82, pings) dropped by the policy's end; out of it: anything
    allow = made(lab, "firewall_rules", protocol="tcp", destination_port=str(SERVICE),
                 action="allow")
    echo = made(lab, "firewall_rules", protocol="tcp", destination_port=str(ECHO),
                action="allow")
    reject = made(lab, "firewall_rules", protocol="tcp", destination_port=str(REJECTED),
                  action="reject")
    anything = made(lab, "firewall_rules", action="allow")
    ingress = made(lab, "firewall_policies", name="in",
                   firewall_rules=[allow["id"], echo["id"], reject["id"]])
    egress = made(lab, "firewall_policies", name="out", firewall_rules=[anything["id"]])
    group = made(lab, "firewall_groups", name="g", ports=[s.router_port_b],
                 ingress_firewall_policy_id=ingress["id"],
                 egress_firewall_policy_id=egress["id"])
    wait_until(lambda: status(lab, group) == "ACTIVE", 15, "the group to be ACTIVE")
    assert ask(inst_a, ip_b, SERVICE) == "b"
    assert refused_quickly(inst_a, ip_b, REJECTED)
    assert dropped(inst_a, ip_b, DROPPED)
    assert not pings(inst_a, ip_b)
    assert pings(inst_b, address(port_a))  # out of b's network: allowed, answers come back

    # an open connection lives through a change that still allows it ...
    talk = Conversation(inst_a, ip_b, ECHO)
    try:
        assert talk.echoes("one")
        resp = lab.api.put(f"{FW}/firewall_rules/{reject['id']}",
                           json={"firewall_rule": {"action": "allow"}})
        assert resp.status_code == 200, resp.text
        started = time.monotonic()
        wait_until(lambda: ask(inst_a, ip_b, REJECTED) == f"b{REJECTED}", 10,
                   "the rule change to be enforced")
        print(f"a rule change was enforced in {time.monotonic() - started:.2f} s")
        wait_until(lambda: status(lab, group) == "ACTIVE", 10, "the group to be ACTIVE again")
        assert talk.echoes("two")
        # ... and not through one that takes its rule away
        resp = lab.api.put(f"{FW}/firewall_policies/{ingress['id']}/remove_rule",
                           json={"firewall_rule_id": echo["id"]})
        assert resp.status_code == 200, resp.text
        wait_until(lambda: status(lab, group) == "ACTIVE", 10, "the group to be ACTIVE again")
        assert not talk.echoes("three")
    finally:
        talk.close()

    # killed and started again, the agent finds its chains right and rewrites none
    namespace = f"qrouter-{router['id']}"
    before = run("iptables-save", "-t", "filter", namespace=namespace).stdout
    lab.l3.kill()
    lab.l3.wait()
    lab.l3 = lab.d.start_l3_agent("h1", text=l3_text(lab.d))
    log = "h1-neutrino-l3-agent"
    wait_until(lambda: "full sync done" in lab.d.log(log), 30, "the restarted agent's sync")
    assert "firewall chains written" not in lab.d.log(log), lab.d.log(log)
    after = run("iptables-save", "-t", "filter", namespace=namespace).stdout
    ours = [line for line in after.splitlines() if "neutrino-fw" in line]
    assert ours == [line for line in before.splitlines() if "neutrino-fw" in line]
    assert dropped(inst_a, ip_b, DROPPED)

    # the group taken off the port: everything passes again, and it is INACTIVE
    resp = lab.api.put(f"{FW}/firewall_groups/{group['id']}",
                       json={"firewall_group": {"ports": []}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["firewall_group"]["status"] == "INACTIVE"
    wait_until(lambda: ask(inst_a, ip_b, DROPPED) == f"b{DROPPED}", 10,
               "traffic to pass again")
    assert pings(inst_a, ip_b)
    assert "neutrino-fw" not in run("iptables-save", "-t", "filter",
                                    namespace=namespace).stdout


def test_a_drop_log_on_a_firewall_group(lab: Lab):
    """A DROP log of the group writes a line per dropped connection attempt
    (naming the group), none for what passes; disabled, it writes no more."""
    s = sites(lab, "10.83.0.0/24", "10.84.0.0/24")
    router, port_a, inst_a = s.router, s.port_a, s.inst_a
    ip_b = address(s.port_b)
    allow = made(lab, "firewall_rules", protocol="tcp", destination_port=str(SERVICE),
                 action="allow")
    ingress = made(lab, "firewall_policies", firewall_rules=[allow["id"]])
    group = made(lab, "firewall_groups", ports=[s.router_port_b],
                 ingress_firewall_policy_id=ingress["id"])
    resp = lab.api.post("/v2.0/log/logs", json={"log": {
        "resource_type": "firewall_group", "resource_id": group["id"], "event": "DROP"}})
    assert resp.status_code == 201, resp.text
    log = resp.json()["log"]
    wait_until(lambda: status(lab, group) == "ACTIVE", 15, "the group to be ACTIVE")
    namespace = f"qrouter-{router['id']}"
    wait_until(lambda: "NFLOG" in run("iptables-save", "-t", "filter",
                                      namespace=namespace).stdout, 10, "the NFLOG rules")

    def logged(port: int) -> list[str]:
        return [text for text in lines(lab.d) if f"dst_port={port}," in text]

    assert dropped(inst_a, ip_b, DROPPED)
    wait_until(lambda: logged(DROPPED), 10, "a line for the dropped connection")
    [first, *_] = logged(DROPPED)
    assert "action=DROP" in first and f"firewall_group={group['id']}" in first
    assert f"log_resource_ids=['{log['id']}']" in first and address(port_a) in first
    # what passes is not logged: a later dropped probe's line comes, none for 80
    assert ask(inst_a, ip_b, SERVICE) == "b"
    assert dropped(inst_a, ip_b, ECHO)
    wait_until(lambda: logged(ECHO), 10, "the later probe's line")
    assert logged(SERVICE) == []

    resp = lab.api.put(f"/v2.0/log/logs/{log['id']}", json={"log": {"enabled": False}})
    assert resp.status_code == 200, resp.text
    wait_until(lambda: "NFLOG" not in run("iptables-save", "-t", "filter",
                                          namespace=namespace).stdout, 10,
               "the NFLOG rules to go")
    before = len(lines(lab.d))
    assert dropped(inst_a, ip_b, DROPPED)
    time.sleep(1)  # a line would have come by now: the reader writes at once
    assert len(lines(lab.d)) == before
