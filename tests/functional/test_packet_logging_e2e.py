"""Packet logging end to end: the server's ``log`` service plugin, the Linux
bridge agent's ``log`` extension writing NFLOG rules into its iptables firewall
and reading NFLOG group 3101, one line per packet in its log file. Root only:
everything happens in namespaces the test makes and removes.

NFLOG is read in order, so a line we wait for (a "sentinel") proves that every
packet logged before it has been written: that is how the test knows a
packet was not logged without sleeping.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.dataplane import pings, run, skip_unless_root, wait_until
from tests.functional.emulated_hosts import Deployment, deployed
from tests.functional.test_linuxbridge_e2e import address_of, configure, nc_connects, port_status

pytestmark = pytest.mark.slow

LB = "Linux bridge agent"
LOGS = "/v2.0/log/logs"
RATE, BURST = 100, 25  # the extension's least limits: the flood's bound
RATE_AFTER, BURST_AFTER = 150, 40  # the restarted agent's
#: the flood's TTL and the sentinels' (the line names the TTL: that tells them apart)
FLOOD_TTL, SENTINEL_TTL = 64, 33


@pytest.fixture
def deployment(tmp_path, rabbit_url):
    skip_unless_root("ip", "socat", "ping", "nc", "iptables", "ipset")
    with deployed(tmp_path, rabbit_url, "[DEFAULT]\nservice_plugins = log\n") as deployment:
        yield deployment


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def new_lines(path: Path, seen: int, *words: str) -> list[str]:
    """The lines after the first ``seen`` that hold every one of ``words``."""
    return [line for line in lines(path)[seen:] if all(w in line for w in words)]


def blocked_ping(namespace: str, address: str, ttl: int = SENTINEL_TTL) -> None:
    run("ping", "-n", "-c", "1", "-W", "0.3", "-t", str(ttl), address, namespace=namespace,
        check=False)


def nflog_prefixes(deployment: Deployment, host: str) -> str:
    """The NFLOG rules' prefixes in the host's firewall (what the agent wrote)."""
    saved = run("iptables-save", "-t", "filter", namespace=deployment.hosts[host]["namespace"])
    words = (word.strip('"') for line in saved.stdout.splitlines() if "-j NFLOG" in line
             for word in line.split())
    return " ".join(word for word in words if word.startswith(("A:", "D:")))


def create_log(api, **attrs) -> dict:
    made = api.post(LOGS, json={"log": {"resource_type": "security_group", **attrs}})
    assert made.status_code == 201, made.text
    return made.json()["log"]


def test_security_group_packets_are_logged(deployment, tmp_path):
    """A DROP log writes a line for a blocked ping and none for what the group
    allows; an ACCEPT log writes one for a new allowed connection; a disabled
    log writes nothing more; a port that joins the group is logged; a flood is
    cut to the kernel's rate limit; a restarted agent logs again, under its new
    limits."""
    api = deployment.api
    out = tmp_path / "packets.log"
    deployment.add_host("h1", 1)

    def agent_conf(rate: int, burst: int) -> str:
        return ("[agent]\nextensions = log\n"
                f"[network_log]\nrate_limit = {rate}\nburst_limit = {burst}\n"
                f"local_output_log_base = {out}\n")

    agent = deployment.start_l2_agent("h1", text=agent_conf(RATE, BURST))
    wait_until(lambda: deployment.agent_alive("h1", LB), 30, "the agent")
    types = api.get("/v2.0/log/loggable-resources").json()["loggable_resources"]
    assert types == [{"type": "security_group"}], types

    # b is in a group that lets in TCP 8080 only; a is in the default group
    web = api.post("/v2.0/security-groups", json={"security_group": {
        "name": "web"}}).json()["security_group"]
    rule = api.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": web["id"], "direction": "ingress", "protocol": "tcp",
        "port_range_min": 8080, "port_range_max": 8080}})
    assert rule.status_code == 201, rule.text
    net = api.network()
    api.subnet(net["id"], "10.30.0.0/24")
    port_a = api.port(net["id"])
    port_b = api.port(net["id"], security_groups=[web["id"]])
    for port in (port_a, port_b):
        deployment.plug("h1", port["id"])
        configure(port)
        wait_until(lambda p=port: port_status(api, p["id"]) == "ACTIVE", 20, "ACTIVE")
    inst_a, inst_b = (f"inst-{p['id'][:11]}" for p in (port_a, port_b))
    ip_b = address_of(port_b)
    run("sh", "-c", "nc -lk -p 8080 >/dev/null 2>&1 &", namespace=inst_b)
    wait_until(lambda: nc_connects(inst_a, ip_b, 8080), 15, "TCP 8080 to be let in")
    assert not pings(inst_a, ip_b)
    assert lines(out) == []  # nothing logs yet

    # DROP: the blocked ping is logged, on b's port, by this log
    drops = create_log(api, name="drops", resource_id=web["id"], event="DROP")
    prefix = (f"action=DROP project_id={drops['project_id']} "
              f"log_resource_ids=['{drops['id']}'] vm_port={port_b['id']} ")

    def dropped(seen: int = 0) -> list[str]:
        blocked_ping(inst_a, ip_b)
        return new_lines(out, seen, "action=DROP", f"vm_port={port_b['id']}",
                         f"ttl={SENTINEL_TTL}", "icmp(code=0,type=8)")

    found = wait_until(dropped, 15, lambda: f"a DROP line in {lines(out)}")
    assert found[0].split(" ", 2)[2].startswith(prefix), found  # after the time stamp
    assert f"ipv4(dst='{ip_b}',proto=1,src='{address_of(port_a)}'" in found[0], found
    # what the group allows is not dropped: no line for it
    seen = len(lines(out))
    assert nc_connects(inst_a, ip_b, 8080)
    wait_until(lambda: dropped(seen), 10, "a sentinel DROP line")
    assert new_lines(out, seen, "tcp(") == [], lines(out)[seen:]
    assert new_lines(out, seen, "action=ACCEPT") == [], lines(out)[seen:]

    # ACCEPT: a new connection that the group lets in is logged, once
    accepts = create_log(api, name="accepts", resource_id=web["id"], event="ACCEPT")
    seen = len(lines(out))

    def accepted(seen: int) -> list[str]:
        assert nc_connects(inst_a, ip_b, 8080)
        return new_lines(out, seen, "action=ACCEPT", f"vm_port={port_b['id']}",
                         "dst_port=8080")

    found = wait_until(lambda: accepted(seen), 15,
                       lambda: f"an ACCEPT line in {lines(out)[seen:]}")
    assert f"log_resource_ids=['{accepts['id']}']" in found[0], found
    # the SYN only: a connection's other packets are past the conntrack rules
    assert all(",bits=2," in line for line in found), found

    # disabled: the DROP log's rule goes, and blocked pings write nothing more
    disabled = api.put(f"{LOGS}/{drops['id']}", json={"log": {"enabled": False}})
    assert disabled.status_code == 200, disabled.text
    assert disabled.json()["log"]["enabled"] is False
    wait_until(lambda: f"D:{port_b['id']}" not in nflog_prefixes(deployment, "h1"), 10,
               lambda: f"the DROP rule to go: {nflog_prefixes(deployment, 'h1')}")
    assert f"A:{port_b['id']}" in nflog_prefixes(deployment, "h1")
    seen = len(lines(out))
    blocked_ping(inst_a, ip_b)
    wait_until(lambda: accepted(seen), 10, "an ACCEPT line after the ping (a sentinel)")
    assert new_lines(out, seen, "action=DROP") == [], lines(out)[seen:]

    # a joins the logged group: what a drops is logged too (the port's update)
    deleted = api.delete(f"{LOGS}/{accepts['id']}")
    assert deleted.status_code == 204, deleted.text
    enabled = api.put(f"{LOGS}/{drops['id']}", json={"log": {"enabled": True}})
    assert enabled.status_code == 200, enabled.text
    seen = len(lines(out))
    wait_until(lambda: dropped(seen), 15, "the DROP log again")
    joined = api.put(f"/v2.0/ports/{port_a['id']}", json={"port": {
        "security_groups": [*port_a["security_groups"], web["id"]]}})
    assert joined.status_code == 200, joined.text

    def dropped_by_a(seen: int) -> list[str]:
        blocked_ping(inst_b, address_of(port_a))
        return new_lines(out, seen, "action=DROP", f"vm_port={port_a['id']}",
                         f"ttl={SENTINEL_TTL}")

    wait_until(lambda: dropped_by_a(seen), 15, "a's drops to be logged once it joined the group")

    def flood(rate: int, burst: int) -> tuple[int, float]:
        """Lines a 2 s flood of blocked pings wrote, and the most the limits
        allow: the burst and the rate's worth for its time, however full the
        bucket was."""
        seen = len(lines(out))
        started = time.monotonic()
        # unanswered, ping keeps to about 100 a second: -l lets 50 more be in flight
        pinged = run("ping", "-n", "-q", "-l", "50", "-i", "0.002", "-w", "2", ip_b,
                     namespace=inst_a, check=False, timeout=10)
        elapsed = time.monotonic() - started
        sent = int(pinged.stdout.split(" packets transmitted")[0].split()[-1])
        wait_until(lambda: dropped(seen), 10, "a sentinel DROP line after the flood")
        logged = len(new_lines(out, seen, "action=DROP", f"ttl={FLOOD_TTL}"))
        bound = burst + rate * elapsed
        print(f"flood at {rate}/s, burst {burst}: {sent} pings in {elapsed:.2f} s, "
              f"{logged} logged (bound {bound:.0f})")
        assert sent > 2 * bound, pinged.stdout  # a flood indeed, well beyond the limit
        return logged, bound

    # rate limit: at most the bound (plus 10% and 5: hashlimit counts in
    # jiffies), at least the burst
    logged, bound = flood(RATE, BURST)
    assert BURST <= logged <= bound * 1.1 + 5, (logged, bound)

    # a restarted agent logs again (its full sync asks about every port), under
    # its new limits: more than the old ones let through
    agent.terminate()
    agent.wait(10)
    agent_log = deployment.log("h1-neutrino-linuxbridge-agent")
    assert "Traceback" not in agent_log and " ERROR " not in agent_log, agent_log[-4000:]
    seen = len(lines(out))
    deployment.start_l2_agent("h1", text=agent_conf(RATE_AFTER, BURST_AFTER))
    wait_until(lambda: dropped(seen) and dropped_by_a(seen), 30,
               "the restarted agent to log both ports")
    logged, new_bound = flood(RATE_AFTER, BURST_AFTER)
    assert bound * 1.1 + 5 < logged <= new_bound * 1.1 + 5, (logged, bound, new_bound)
    agent_log = deployment.log("h1-neutrino-linuxbridge-agent")
    assert "Traceback" not in agent_log and " ERROR " not in agent_log, agent_log[-4000:]
