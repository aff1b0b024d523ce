"""Security groups end to end, one test body for both L2 agents: the Linux
bridge agent's iptables firewall and the Open vSwitch agent's OpenFlow one.
Root only: everything happens in namespaces the tests make and remove."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.dataplane import pings, run, skip_unless_root, wait_until
from tests.functional.emulated_hosts import deployed
from tests.functional.test_linuxbridge_e2e import address_of, configure, nc_connects, port_status
from tests.functional.test_ovs_e2e import SERVER_EXTRA
from tests.ovs import skip_unless_ovs

pytestmark = pytest.mark.slow

AGENT_TYPES = {"linuxbridge": "Linux bridge agent", "openvswitch": "Open vSwitch agent"}


@pytest.fixture(params=sorted(AGENT_TYPES))
def driver(request) -> str:
    return request.param


@pytest.fixture
def deployment(tmp_path, rabbit_url, driver):
    skip_unless_root("ip", "socat", "ping", "nc", "iptables", "ipset")
    if driver == "openvswitch":
        skip_unless_ovs()
    with deployed(tmp_path, rabbit_url, SERVER_EXTRA) as deployment:
        yield deployment


def test_security_groups_filter_instances(deployment, driver):
    """The default group lets its members talk; a rule naming a group lets in
    its members only; a group without an ICMP rule
    blocks pings until the rule is added, and again once it is removed (a
    running ping too); a stateless group lets replies out only by a rule of
    their own; a spoofed source is dropped; port_security_enabled=false passes
    everything."""
    api = deployment.api
    deployment.add_host("h1", 1)
    if driver == "openvswitch":
        deployment.add_ovs("h1")
        deployment.start_ovs_agent("h1")
    else:
        deployment.start_l2_agent("h1")
    wait_until(lambda: deployment.agent_alive("h1", AGENT_TYPES[driver]), 30, "the agent")
    net = api.network()
    subnet = api.subnet(net["id"], "10.20.0.0/24")
    port_a, port_b = api.port(net["id"]), api.port(net["id"])
    for port in (port_a, port_b):
        deployment.plug("h1", port["id"])
        configure(port)
        wait_until(lambda p=port: port_status(api, p["id"]) == "ACTIVE", 20, "ACTIVE")
    inst_a, inst_b = (f"inst-{p['id'][:11]}" for p in (port_a, port_b))
    ip_b = address_of(port_b)
    wait_until(lambda: pings(inst_a, ip_b), 15, "default group members to ping")

    # b moves to a group that lets in only TCP 8080
    group = api.post("/v2.0/security-groups", json={"security_group": {
        "name": "web"}}).json()["security_group"]
    rule = api.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": group["id"], "direction": "ingress", "protocol": "tcp",
        "port_range_min": 8080, "port_range_max": 8080}})
    assert rule.status_code == 201, rule.text
    moved = api.put(f"/v2.0/ports/{port_b['id']}", json={"port": {
        "security_groups": [group["id"]]}})
    assert moved.status_code == 200, moved.text
    wait_until(lambda: not pings(inst_a, ip_b), 10, "ping to be blocked")
    for listen in (8080, 9090):
        run("sh", "-c", f"nc -lk -p {listen} >/dev/null 2>&1 &", namespace=inst_b)
    wait_until(lambda: nc_connects(inst_a, ip_b, 8080), 10, "TCP 8080 to be let in")
    assert not nc_connects(inst_a, ip_b, 9090)

    # a rule naming the group lets in its members only: a, while it is one
    by_group = api.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": group["id"], "direction": "ingress", "protocol": "tcp",
        "port_range_min": 9090, "port_range_max": 9090, "remote_group_id": group["id"]}})
    assert by_group.status_code == 201, by_group.text
    joined = api.put(f"/v2.0/ports/{port_a['id']}", json={"port": {
        "security_groups": [*port_a["security_groups"], group["id"]]}})
    assert joined.status_code == 200, joined.text
    wait_until(lambda: nc_connects(inst_a, ip_b, 9090), 10, "a member of the group to get in")
    left = api.put(f"/v2.0/ports/{port_a['id']}", json={"port": {
        "security_groups": port_a["security_groups"]}})
    assert left.status_code == 200, left.text
    wait_until(lambda: not nc_connects(inst_a, ip_b, 9090), 10, "a to be kept out once it left")
    assert nc_connects(inst_a, ip_b, 8080)

    # a rule naming an address group lets in its addresses: a, while it is one of
    # them (no port changes: only the group's members do, which agents must hear
    # of at once, not at their periodic resync)
    friends = api.post("/v2.0/address-groups", json={"address_group": {
        "name": "friends", "addresses": ["192.0.2.1/32"]}}).json()["address_group"]
    by_address = api.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": group["id"], "direction": "ingress", "protocol": "tcp",
        "port_range_min": 7070, "port_range_max": 7070,
        "remote_address_group_id": friends["id"]}})
    assert by_address.status_code == 201, by_address.text
    run("sh", "-c", "nc -lk -p 7070 >/dev/null 2>&1 &", namespace=inst_b)
    assert not nc_connects(inst_a, ip_b, 7070)
    for action, wanted in (("add_addresses", True), ("remove_addresses", False)):
        changed = api.put(f"/v2.0/address-groups/{friends['id']}/{action}", json={
            "address_group": {"addresses": [f"{address_of(port_a)}/32"]}})
        assert changed.status_code == 200, changed.text
        started = time.monotonic()
        wait_until(lambda w=wanted: nc_connects(inst_a, ip_b, 7070) == w, 5,
                   f"a to be {'let in' if wanted else 'kept out'} after {action}")
        print(f"{driver}: {action} on the host in {time.monotonic() - started:.2f} s")

    icmp = api.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": group["id"], "direction": "ingress", "protocol": "icmp"}})
    assert icmp.status_code == 201, icmp.text
    wait_until(lambda: pings(inst_a, ip_b), 5, "the ICMP rule to open pings")
    # a ping that keeps running is one connection: the rule's removal ends it too
    flood = subprocess.Popen(["ip", "netns", "exec", inst_a, "ping", "-n", "-i", "0.2",
                              "-w", "8", ip_b], stdout=subprocess.PIPE, text=True)
    time.sleep(1.2)
    deleted = api.delete(f"/v2.0/security-group-rules/{icmp.json()['security_group_rule']['id']}")
    assert deleted.status_code == 204
    wait_until(lambda: not pings(inst_a, ip_b), 5, "the rule's removal to close pings")
    out, _ = flood.communicate(timeout=15)
    replied = [int(word.split("=")[1]) for line in out.splitlines()
               for word in line.split() if word.startswith("icmp_seq=")]
    # about 40 sent; replies from the start, none in the last 2 s
    assert replied and min(replied) <= 3 and max(replied) <= 30, out

    # the same ICMP rule in a stateful group and in a stateless one: in the
    # stateless one the pings' replies need a rule of their own
    def icmp_only(stateful: bool) -> dict:
        made = api.post("/v2.0/security-groups", json={"security_group": {
            "name": f"icmp-{stateful}", "stateful": stateful}}).json()["security_group"]
        for old in made["security_group_rules"]:  # the template's egress rules
            api.delete(f"/v2.0/security-group-rules/{old['id']}")
        rule = api.post("/v2.0/security-group-rules", json={"security_group_rule": {
            "security_group_id": made["id"], "direction": "ingress", "protocol": "icmp"}})
        assert rule.status_code == 201, rule.text
        return made

    for stateful, replied in ((True, True), (False, False)):
        moved = api.put(f"/v2.0/ports/{port_b['id']}", json={"port": {
            "security_groups": [icmp_only(stateful)["id"]]}})
        assert moved.status_code == 200, moved.text
        wait_until(lambda r=replied: pings(inst_a, ip_b) == r, 10,
                   f"pings {'answered' if replied else 'unanswered'} (stateful={stateful})")
    reply_rule = api.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": moved.json()["port"]["security_groups"][0], "direction": "egress",
        "protocol": "icmp"}})
    assert reply_rule.status_code == 201, reply_rule.text
    wait_until(lambda: pings(inst_a, ip_b), 10, "the egress ICMP rule to let replies out")

    # back in the default group: a spoofed source address from a is dropped
    api.put(f"/v2.0/ports/{port_b['id']}", json={"port": {"security_groups": port_a[
        "security_groups"]}})
    wait_until(lambda: pings(inst_a, ip_b), 10, "default group again")
    spoofed = api.unused_address(subnet)
    run("ip", "addr", "add", f"{spoofed}/24", "dev", "eth0", namespace=inst_a)
    assert not run("ping", "-c", "1", "-W", "1", "-I", spoofed, ip_b,
                   namespace=inst_a, check=False).returncode == 0

    # a in no group drops everything coming in; without port security, it passes
    no_groups = api.put(f"/v2.0/ports/{port_a['id']}", json={"port": {"security_groups": []}})
    assert no_groups.status_code == 200, no_groups.text
    wait_until(lambda: not pings(inst_b, address_of(port_a)), 10, "a to let nothing in")
    open_port = api.put(f"/v2.0/ports/{port_a['id']}", json={"port": {
        "port_security_enabled": False}})
    assert open_port.status_code == 200, open_port.text
    wait_until(lambda: pings(inst_b, address_of(port_a)), 10,
               "a port without port security to let everything in")
