"""Local IPs end to end: the ``local_ip`` service plugin and the Open vSwitch
agent's ``local_ip`` extension (userspace datapath), instances in
namespaces on one emulated host. Root only.

An instance that reaches the local IP reaches the port associated with it
on its own host (ARP answered for it, DNAT through conntrack, replies from
the local IP); once the association goes, the local IP leads nowhere and
nothing of it stays on br-int.
"""

from __future__ import annotations

import pytest

from tests.dataplane import run, wait_until
from tests.functional.emulated_hosts import deployed
from tests.functional.test_l3_e2e import ask, said
from tests.functional.test_ovs_e2e import OVS_AGENT, SERVER_EXTRA
from tests.functional.test_qos_e2e import flows, instances
from tests.ovs import skip_unless_ovs

pytestmark = pytest.mark.slow

SERVER = "[DEFAULT]\nservice_plugins = local_ip\n"
# the openvswitch firewall and Local IPs' NAT do not mix (the extension says so)
AGENT = "[agent]\nextensions = local_ip\n[securitygroup]\nfirewall_driver = noop\n"
LOCAL_IP = "10.40.0.200"


def pings(namespace: str, address: str) -> bool:
    return run("ping", "-c", "1", "-W", "1", address, namespace=namespace,
               check=False).returncode == 0


@pytest.fixture
def ovs(tmp_path, rabbit_url):
    skip_unless_ovs("socat")
    with deployed(tmp_path, rabbit_url, SERVER + SERVER_EXTRA) as d:
        d.add_host("h1", 1)
        d.add_ovs("h1")
        d.start_ovs_agent("h1", text=AGENT)
        wait_until(lambda: d.agent_alive("h1", OVS_AGENT), 30, "the OVS agent")
        yield d


def test_an_instance_reaches_the_associated_port_of_its_own_host(ovs):
    api = ovs.api
    switch = ovs.hosts["h1"]["ovs"]
    net, [(a, ns_a, _), (_, ns_b, ip_b)] = instances(ovs, "h1", 2)
    lip = api.create("local_ips", network_id=net["id"], local_ip_address=LOCAL_IP)
    assert not pings(ns_b, LOCAL_IP)  # its own port is bound nowhere

    path = f"/v2.0/local_ips/{lip['id']}/port_associations"
    made = api.post(path, json={"port_association": {"fixed_port_id": a["id"]}})
    assert made.status_code == 201, made.text
    assert made.json()["port_association"]["host"] == ovs.hosts["h1"]["host"]
    log = lambda: ovs.log("h1-neutrino-openvswitch-agent")[-2000:]  # noqa: E731
    wait_until(lambda: "nat(dst=" in flows(switch), 15, log)
    wait_until(lambda: pings(ns_b, LOCAL_IP), 10, log)
    ovs.serve_tcp(ns_a, 7000, "echo $SOCAT_PEERADDR")
    said(ns_b, LOCAL_IP, 7000, ip_b, seconds=10)  # a, reached; it sees b's own address

    assert api.delete(f"{path}/{a['id']}").status_code == 204
    wait_until(lambda: "nat(" not in flows(switch), 15, log)
    assert "table=31" not in flows(switch) and LOCAL_IP not in flows(switch)
    run("ip", "neigh", "flush", "all", namespace=ns_b)
    assert not pings(ns_b, LOCAL_IP)
    assert ask(ns_b, LOCAL_IP, 7000) == ""
