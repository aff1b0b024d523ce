"""Local IPs end to end: the ``local_ip`` service plugin and the Open vSwitch
agent's ``local_ip`` extension (userspace datapath), instances in
namespaces on two emulated hosts: ``h1`` with the openvswitch firewall
(instances in the default security group), ``h2`` without. Root only.

One local IP associated with a port on each host: an instance that reaches
it reaches the associated port of its own host (ARP answered for it, DNAT
through conntrack, replies from the local IP); once a host's association
goes, the local IP leads nowhere there, still to the other host's port on
the other, and nothing of it stays on the first's br-int.
"""

from __future__ import annotations

import pytest

from tests.dataplane import run, wait_until
from tests.functional.emulated_hosts import Deployment, deployed
from tests.functional.test_l3_e2e import ask, said
from tests.functional.test_ovs_e2e import OVS_AGENT, SERVER_EXTRA
from tests.functional.test_qos_e2e import flows
from tests.ovs import skip_unless_ovs

pytestmark = pytest.mark.slow

SERVER = "[DEFAULT]\nservice_plugins = local_ip\n"
AGENT = "[agent]\nextensions = local_ip\n[securitygroup]\nfirewall_driver = {}\n"
FIREWALLS = {"h1": "openvswitch", "h2": "noop"}
LOCAL_IP = "10.40.0.200"
SERVICE = 7000


def pings(namespace: str, address: str) -> bool:
    return run("ping", "-c", "1", "-W", "1", address, namespace=namespace,
               check=False).returncode == 0


@pytest.fixture
def ovs(tmp_path, rabbit_url):
    skip_unless_ovs("socat")
    with deployed(tmp_path, rabbit_url, SERVER + SERVER_EXTRA) as d:
        for index, (host, firewall) in enumerate(FIREWALLS.items(), start=1):
            d.add_host(host, index)
            d.add_ovs(host)
            d.start_ovs_agent(host, text=AGENT.format(firewall))
        for host in FIREWALLS:
            wait_until(lambda h=host: d.agent_alive(h, OVS_AGENT), 30, f"the agent of {host}")
        yield d


def instances(deployment: Deployment, network_id: str, host: str) -> list[tuple]:
    """Two ports of the network (the default security group: they reach each
    other) plugged on ``host``, each answering TCP with its host and its
    caller's address: [(port, namespace, address)]."""
    api = deployment.api
    found = []
    for _ in range(2):
        port = api.port(network_id)
        address = port["fixed_ips"][0]["ip_address"]
        ns = f"inst-{port['id'][:11]}"
        deployment.plug(host, port["id"])
        run("ip", "addr", "add", f"{address}/24", "dev", "eth0", namespace=ns)
        deployment.serve_tcp(ns, SERVICE, f"echo {host}-$SOCAT_PEERADDR")
        found.append((port, ns, address))
    return found


def test_an_instance_reaches_the_associated_port_of_its_own_host(ovs):
    api = ovs.api
    net = api.network()
    # the pool stops short of the local IP: ports take addresses at random
    api.subnet(net["id"], "10.40.0.0/24", enable_dhcp=False,
               allocation_pools=[{"start": "10.40.0.2", "end": "10.40.0.199"}])
    placed = {host: instances(ovs, net["id"], host) for host in FIREWALLS}
    for (port, _, _) in [*placed["h1"], *placed["h2"]]:
        wait_until(lambda p=port: api.show("ports", p["id"])["status"] == "ACTIVE", 20,
                   f"port {port['id']} ACTIVE")
    lip = api.create("local_ips", network_id=net["id"], local_ip_address=LOCAL_IP)
    assert not pings(placed["h1"][1][1], LOCAL_IP)  # its own port is bound nowhere

    path = f"/v2.0/local_ips/{lip['id']}/port_associations"
    for host, [(a, _, _), _] in placed.items():
        made = api.post(path, json={"port_association": {"fixed_port_id": a["id"]}})
        assert made.status_code == 201, made.text
        assert made.json()["port_association"]["host"] == ovs.hosts[host]["host"]
    for host, [_, (_, ns_b, ip_b)] in placed.items():
        switch = ovs.hosts[host]["ovs"]
        log = lambda h=host: ovs.log(f"{h}-neutrino-openvswitch-agent")[-2000:]  # noqa: E731
        wait_until(lambda s=switch: "nat(dst=" in flows(s), 15, log)
        wait_until(lambda n=ns_b: pings(n, LOCAL_IP), 10, log)
        # the port of b's own host answers, and sees b's own address
        said(ns_b, LOCAL_IP, SERVICE, f"{host}-{ip_b}", seconds=10)
    switch = ovs.hosts["h1"]["ovs"]
    assert "table=60" in flows(switch) and "reg7=0" in flows(switch)  # after the firewall

    a1, ns_b1 = placed["h1"][0][0], placed["h1"][1][1]
    assert api.delete(f"{path}/{a1['id']}").status_code == 204
    wait_until(lambda: "nat(" not in flows(switch), 15, "h1's flows gone")
    assert "reg7" not in flows(switch) and LOCAL_IP not in flows(switch)
    run("ip", "neigh", "flush", "all", namespace=ns_b1)
    assert not pings(ns_b1, LOCAL_IP)
    assert ask(ns_b1, LOCAL_IP, SERVICE) == ""
    # the other host's association stays: there the local IP still leads to its port
    ns_b2, ip_b2 = placed["h2"][1][1], placed["h2"][1][2]
    assert ask(ns_b2, LOCAL_IP, SERVICE) == f"h2-{ip_b2}"
    assert "reg7=0" in flows(ovs.hosts["h2"]["ovs"])
