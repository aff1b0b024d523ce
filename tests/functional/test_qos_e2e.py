"""QoS end to end: the ``qos`` service plugin and ML2 extension driver, the
``qos`` extension of the Linux bridge and Open vSwitch agents, instances in
namespaces measured with iperf3 (TCP, a few seconds each). Root only.

Directions are the instance's: an egress limit bounds what it sends, an
ingress limit what it receives. Bursts are a tenth of a second's worth: the
default (0.8 s, Neutron's) would add much to a two-second measurement. A
DSCP mark is seen by the receiving instance's own iptables (``-m dscp``
counts what arrives marked).
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.dataplane import run, skip_unless_root, wait_until
from tests.functional.emulated_hosts import PHYSNET, Deployment, deployed
from tests.functional.test_l3_e2e import (
    EXTERNAL_CIDR,
    L3,
    SERVICE,
    UPSTREAM,
    Lab,
    add_interface,
    instance,
    router_with_gateway,
    said,
    tenant_subnet,
)
from tests.functional.test_ovs_e2e import OVS_AGENT, SERVER_EXTRA
from tests.ovs import skip_unless_ovs

pytestmark = pytest.mark.slow

LB = "Linux bridge agent"
QOS = "[DEFAULT]\nservice_plugins = qos\n"
AGENT = "[agent]\nextensions = qos\n"
DSCP = 10


def mbits(src: str, dst: str, address: str, seconds: float = 2) -> float:
    """What ``src`` sends to ``dst`` (at ``address``) over TCP, in Mbit/s as received."""
    server = subprocess.Popen(["ip", "netns", "exec", dst, "iperf3", "-s", "-1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            done = run("iperf3", "-c", address, "-t", str(seconds), "-J", namespace=src,
                       check=False)
            end = json.loads(done.stdout or "{}").get("end", {})
            if done.returncode == 0 and "sum_received" in end:
                return end["sum_received"]["bits_per_second"] / 1e6
            time.sleep(0.1)  # the server is not listening yet
        raise AssertionError(f"iperf3 to {address} failed: {done.stdout[-500:]}")
    finally:
        server.kill()
        server.wait()


def near(measured: float, limit_kbps: int) -> bool:
    """Limited: not above the limit (and its burst), and not far below it,
    with room for a busy machine (bench/qos_bench.py measures how near)."""
    return 0.6 * limit_kbps <= measured * 1000 <= 1.15 * limit_kbps


def count_marked(namespace: str) -> int:
    """Packets that arrived in ``namespace`` with DSCP ``DSCP`` (the rule counts)."""
    saved = run("iptables", "-L", "INPUT", "-v", "-n", "-x", namespace=namespace).stdout
    return sum(int(line.split()[0]) for line in saved.splitlines()
               if "DSCP match" in line)


def watch_marks(namespace: str) -> None:
    run("iptables", "-A", "INPUT", "-m", "dscp", "--dscp", str(DSCP), namespace=namespace)


def policy(api, **rules: dict) -> dict:
    made = api.post("/v2.0/qos/policies", json={"policy": {"name": "p"}})
    assert made.status_code == 201, made.text
    policy = made.json()["policy"]
    for path, body in rules.items():
        added = api.post(f"/v2.0/qos/policies/{policy['id']}/{path}", json=body)
        assert added.status_code == 201, added.text
    return policy


def instances(deployment: Deployment, host: str, count: int) -> tuple[dict, list[tuple]]:
    """A network and ``count`` ports of it plugged on ``host``: (network, [(port,
    namespace, address)])."""
    api = deployment.api
    net = api.network()
    api.subnet(net["id"], "10.40.0.0/24", enable_dhcp=False)
    found = []
    for _ in range(count):
        port = api.port(net["id"], port_security_enabled=False, security_groups=[])
        address = port["fixed_ips"][0]["ip_address"]
        ns = f"inst-{port['id'][:11]}"
        deployment.plug(host, port["id"])
        run("ip", "addr", "add", f"{address}/24", "dev", "eth0", namespace=ns)
        found.append((port, ns, address))
    for port, _, _ in found:
        wait_until(lambda p=port: api.show("ports", p["id"])["status"] == "ACTIVE", 20,
                   f"port {port['id']} ACTIVE")
    return net, found


def flows(switch) -> str:
    return switch.ofctl("-O", "OpenFlow13", "dump-flows", "br-int")


def update(api, path: str, **body: dict) -> None:
    done = api.put(path, json=body)
    assert done.status_code == 200, done.text


@pytest.fixture
def lb(tmp_path, rabbit_url):
    skip_unless_root("ip", "socat", "iperf3", "tc", "iptables")
    with deployed(tmp_path, rabbit_url, QOS, extension_drivers="port_security,qos") as d:
        d.add_host("h1", 1)
        d.start_l2_agent("h1", firewall="noop", text=AGENT)
        wait_until(lambda: d.agent_alive("h1", LB), 30, "the agent")
        yield d


def test_linux_bridge_limits_and_marks(lb):
    """Both directions limited by tc, what a port sends marked; a rule's change
    is enforced; the network's policy applies to a port without its own; a
    port without a policy any more is left unlimited, its IFB removed."""
    api = lb.api
    host_ns = lb.hosts["h1"]["namespace"]
    net, [(a, ns_a, ip_a), (_, ns_b, ip_b)] = instances(lb, "h1", 2)
    assert mbits(ns_a, ns_b, ip_b) > 50  # unlimited first
    limits = policy(api, bandwidth_limit_rules={"bandwidth_limit_rule": {
        "max_kbps": 4000, "max_burst_kbps": 400, "direction": "egress"}},
        dscp_marking_rules={
        "dscp_marking_rule": {"dscp_mark": DSCP}})
    ingress = api.post(f"/v2.0/qos/policies/{limits['id']}/bandwidth_limit_rules", json={
        "bandwidth_limit_rule": {"max_kbps": 2000, "max_burst_kbps": 200,
                                 "direction": "ingress"}})
    assert ingress.status_code == 201, ingress.text
    update(api, f"/v2.0/ports/{a['id']}", port={"qos_policy_id": limits["id"]})
    tap = f"tap{a['id'][:11]}"
    wait_until(lambda: "tbf" in run("tc", "qdisc", "show", "dev", f"ifb{tap[3:]}",
                                    namespace=host_ns, check=False).stdout,
               15, lambda: lb.log("h1-neutrino-linuxbridge-agent")[-2000:])
    sent, received = mbits(ns_a, ns_b, ip_b), mbits(ns_b, ns_a, ip_a)
    assert near(sent, 4000), sent
    assert near(received, 2000), received
    watch_marks(ns_b)
    run("ping", "-c", "3", "-i", "0.2", ip_b, namespace=ns_a)
    assert count_marked(ns_b) >= 3, run("iptables-save", "-t", "mangle",
                                        namespace=host_ns).stdout

    # a rule changed: the new rate, soon
    rule_id = ingress.json()["bandwidth_limit_rule"]["id"]
    update(api, f"/v2.0/qos/policies/{limits['id']}/bandwidth_limit_rules/{rule_id}",
           bandwidth_limit_rule={"max_kbps": 1000, "max_burst_kbps": 100})
    wait_until(lambda: "rate 1Mbit" in run("tc", "qdisc", "show", "dev", tap,
                                           namespace=host_ns).stdout, 10, "the new rate")
    assert near(mbits(ns_b, ns_a, ip_a), 1000)

    # the port's own policy gone, the network's applies (ingress only here)
    net_policy = policy(api, bandwidth_limit_rules={"bandwidth_limit_rule": {
        "max_kbps": 1500, "max_burst_kbps": 150, "direction": "ingress"}})
    update(api, f"/v2.0/networks/{net['id']}", network={"qos_policy_id": net_policy["id"]})
    update(api, f"/v2.0/ports/{a['id']}", port={"qos_policy_id": None})
    wait_until(lambda: "rate 1500Kbit" in run("tc", "qdisc", "show", "dev", tap,
                                           namespace=host_ns).stdout, 10, "the network's rate")
    wait_until(lambda: f"ifb{tap[3:]}" not in run("ip", "link", namespace=host_ns).stdout,
               10, "the IFB removed")
    wait_until(lambda: "neutrino-qos-dscp -m physdev" not in run(
        "iptables-save", "-t", "mangle", namespace=host_ns).stdout, 10, "no DSCP mark")
    # and nothing once the network has none either
    update(api, f"/v2.0/networks/{net['id']}", network={"qos_policy_id": None})
    wait_until(lambda: "tbf" not in run("tc", "qdisc", "show", "dev", tap,
                                        namespace=host_ns).stdout, 10, "no limit")


@pytest.fixture
def ovs(tmp_path, rabbit_url):
    skip_unless_ovs("socat", "iperf3", "iptables")
    with deployed(tmp_path, rabbit_url, QOS + SERVER_EXTRA,
                  extension_drivers="port_security,qos") as d:
        d.add_host("h1", 1)
        d.add_ovs("h1")
        d.start_ovs_agent("h1", text=AGENT)
        wait_until(lambda: d.agent_alive("h1", OVS_AGENT), 30, "the OVS agent")
        yield d


def test_open_vswitch_limits_and_marks(ovs):
    """What an instance sends passes a meter and is marked, what it receives is
    shaped by a linux-htb QoS; after ovs-vswitchd restarts, both are back; the
    policy unbound, nothing of it stays."""
    api = ovs.api
    switch = ovs.hosts["h1"]["ovs"]
    _, [(a, ns_a, ip_a), (_, ns_b, ip_b)] = instances(ovs, "h1", 2)
    limits = policy(api, bandwidth_limit_rules={"bandwidth_limit_rule": {
        "max_kbps": 4000, "max_burst_kbps": 400, "direction": "egress"}},
        dscp_marking_rules={"dscp_marking_rule": {"dscp_mark": DSCP}})
    api.post(f"/v2.0/qos/policies/{limits['id']}/bandwidth_limit_rules", json={
        "bandwidth_limit_rule": {"max_kbps": 2000, "max_burst_kbps": 200,
                                 "direction": "ingress"}})
    update(api, f"/v2.0/ports/{a['id']}", port={"qos_policy_id": limits["id"]})
    wait_until(lambda: "meter:" in flows(switch), 15,
               lambda: ovs.log("h1-neutrino-openvswitch-agent")[-2000:])
    wait_until(lambda: switch.vsctl("--columns=type", "list", "qos").strip(), 10, "a QoS row")
    sent, received = mbits(ns_a, ns_b, ip_b), mbits(ns_b, ns_a, ip_a)
    assert 4000 * 0.4 <= sent * 1000 <= 4000 * 1.15, sent  # a meter drops
    assert near(received, 2000), received
    watch_marks(ns_b)
    run("ping", "-c", "3", "-i", "0.2", ip_b, namespace=ns_a)
    assert count_marked(ns_b) >= 3, flows(switch)

    switch.restart_vswitchd()  # every flow and meter gone: the agent writes them again
    wait_until(lambda: "meter:" in flows(switch), 20,
               "the meter's flow written again")
    assert "rate=4000" in switch.ofctl("-O", "OpenFlow13", "dump-meters", "br-int")

    update(api, f"/v2.0/ports/{a['id']}", port={"qos_policy_id": None})
    wait_until(lambda: "meter:" not in flows(switch), 15, "no meter")
    wait_until(lambda: not switch.vsctl("--columns=_uuid", "list", "qos").strip(), 10,
               "no QoS row")
    assert "meter=" not in switch.ofctl("-O", "OpenFlow13", "dump-meters", "br-int")
    assert mbits(ns_a, ns_b, ip_b) > 50


@pytest.fixture
def lab(tmp_path, rabbit_url):
    skip_unless_root("ip", "socat", "iperf3", "tc", "iptables")
    with deployed(tmp_path, rabbit_url, "[DEFAULT]\nservice_plugins = router,qos\n",
                  extension_drivers="port_security,qos") as d:
        host = d.add_host("h1", 1)
        d.start_l2_agent("h1", firewall="noop")
        l3 = d.start_l3_agent("h1", text="extensions = fip_qos,gateway_ip_qos\n")
        external = d.add_external_host(f"{UPSTREAM}/24")
        ext_net = d.api.network(**{"router:external": True, "provider:network_type": "flat",
                                   "provider:physical_network": PHYSNET})
        d.api.subnet(ext_net["id"], EXTERNAL_CIDR, gateway_ip=UPSTREAM, enable_dhcp=False,
                     allocation_pools=[{"start": "203.0.113.10", "end": "203.0.113.200"}])
        for agent_type in (LB, L3):
            wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, f"the {agent_type}")
        yield Lab(d, host, external, ext_net, l3)


def classes(namespace: str, device: str) -> str:
    return run("tc", "class", "show", "dev", device, namespace=namespace, check=False).stdout


def test_floating_ip_and_gateway_limits(lab):
    """A floating IP's limits both ways, the gateway's for what goes out
    through SNAT, in tc on the router's gateway; a rule's change reaches
    them; a policy unbound leaves nothing behind."""
    api = lab.api
    fip_policy = policy(api, bandwidth_limit_rules={"bandwidth_limit_rule": {
        "max_kbps": 4000, "max_burst_kbps": 400, "direction": "egress"}})
    added = api.post(f"/v2.0/qos/policies/{fip_policy['id']}/bandwidth_limit_rules", json={
        "bandwidth_limit_rule": {"max_kbps": 2000, "max_burst_kbps": 200,
                                 "direction": "ingress"}})
    gw_policy = policy(api, bandwidth_limit_rules={"bandwidth_limit_rule": {
        "max_kbps": 3000, "max_burst_kbps": 300, "direction": "egress"}})
    router = router_with_gateway(lab)
    net, subnet = tenant_subnet(lab, "10.32.0.0/24")
    add_interface(lab, router, subnet)
    port_a, inst_a = instance(lab, net, subnet, "a")
    _, inst_b = instance(lab, net, subnet, "b")
    fip = api.create("floatingips", floating_network_id=lab.ext_net["id"],
                     port_id=port_a["id"], qos_policy_id=fip_policy["id"])
    fip_ip = fip["floating_ip_address"]
    said(lab.external, fip_ip, SERVICE, "a")
    assert mbits(inst_b, lab.external, UPSTREAM) > 50  # the gateway unlimited yet
    update(api, f"/v2.0/routers/{router['id']}", router={"external_gateway_info": {
        "network_id": lab.ext_net["id"], "qos_policy_id": gw_policy["id"]}})
    ns = f"qrouter-{router['id']}"
    qg = next(word.rstrip(":").split("@")[0] for word
              in run("ip", "-o", "link", namespace=ns).stdout.split() if word.startswith("qg-"))
    wait_until(lambda: "rate 3Mbit" in classes(ns, qg), 15,
               lambda: lab.d.log("h1-neutrino-l3-agent")[-2000:])
    assert near(mbits(inst_a, lab.external, UPSTREAM), 4000)  # out as its floating IP
    assert near(mbits(lab.external, inst_a, fip_ip), 2000)  # in to it
    assert near(mbits(inst_b, lab.external, UPSTREAM), 3000)  # out through SNAT

    # a rule changed: its class follows
    rule_id = added.json()["bandwidth_limit_rule"]["id"]
    update(api, f"/v2.0/qos/policies/{fip_policy['id']}/bandwidth_limit_rules/{rule_id}",
           bandwidth_limit_rule={"max_kbps": 1000, "max_burst_kbps": 100})
    wait_until(lambda: "rate 1Mbit" in classes(ns, f"ifb{qg[3:]}"), 10, "the new rate")

    # unbound: nothing left on the gateway
    update(api, f"/v2.0/floatingips/{fip['id']}", floatingip={"qos_policy_id": None})
    update(api, f"/v2.0/routers/{router['id']}", router={"external_gateway_info": {
        "network_id": lab.ext_net["id"], "qos_policy_id": None}})
    wait_until(lambda: not classes(ns, qg), 10, "no class")
    assert f"ifb{qg[3:]}" not in run("ip", "link", namespace=ns).stdout
    assert mbits(inst_a, lab.external, UPSTREAM) > 50
