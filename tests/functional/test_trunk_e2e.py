"""Trunks on an Open vSwitch host end to end: an instance's trunk parent
plugged into its trunk bridge (``neutrino-instance`` does it, as Nova does),
the agent patching it to br-int, the parent's traffic untagged and each
subport's tagged with its VLAN reaching instances on another host.

The instance cannot split VLANs with sub-interfaces (no 8021q module, no tc
vlan action here): ``neutrino-instance`` splits them with a second OVS bridge
of the host (``instance_vlans``), one namespace per VLAN, with the MAC of the
parent and of each subport.
"""

from __future__ import annotations

import pytest

from tests.dataplane import pings, run, wait_until
from tests.functional.emulated_hosts import BIN, Deployment, deployed
from tests.functional.test_ovs_e2e import SERVER_EXTRA, instance, ovs_hosts
from tests.ovs import OvsHost, skip_unless_ovs

pytestmark = pytest.mark.slow

CIDR = "10.97.0.0/24"
#: B and C share a CIDR: a subport reaching the other's peer would show a leak
TAGGED_CIDR = "10.97.1.0/24"


@pytest.fixture
def deployment(tmp_path, rabbit_url):
    skip_unless_ovs("socat", "ping", "ethtool")
    with deployed(tmp_path, rabbit_url,
                  "[DEFAULT]\nservice_plugins = trunk\n" + SERVER_EXTRA) as deployment:
        yield deployment


def network(deployment: Deployment, cidr: str) -> tuple[dict, dict]:
    net = deployment.api.network()
    return net, deployment.api.subnet(net["id"], cidr, enable_dhcp=False)


def addressed(port: dict) -> str:
    """The namespace neutrino-instance made for ``port`` (a parent or a subport),
    given the port's address."""
    ns = f"inst-{port['id'][:11]}"
    run("ip", "addr", "add", f"{port['fixed_ips'][0]['ip_address']}/24", "dev", "eth0",
        namespace=ns)
    return ns


def restarted(deployment: Deployment, name: str) -> None:
    """The host's OVS agent killed (-9), then started again."""
    netns = f"--net=/run/netns/{deployment.hosts[name]['namespace']}"
    agent = next(proc for proc in deployment.procs if proc.poll() is None
                 and "openvswitch-agent" in " ".join(proc.args) and netns in proc.args)
    agent.kill()
    agent.wait()
    deployment.start_ovs_agent(name)


def trunk_state(deployment: Deployment, trunk_id: str):
    def tell() -> str:
        api, ovs = deployment.api, deployment.hosts["h1"]["ovs"]
        return (f"trunk: {api.show('trunks', trunk_id)}\n{ovs.vsctl('show')}\n"
                f"{deployment.log('h1-neutrino-openvswitch-agent')[-4000:]}")
    return tell


def test_trunk_on_an_ovs_host(deployment):
    ovs_hosts(deployment, "h1", "h2")
    api = deployment.api
    ovs: OvsHost = deployment.hosts["h1"]["ovs"]
    net_a, _ = network(deployment, CIDR)
    (net_b, _), (net_c, _) = (network(deployment, TAGGED_CIDR) for _ in range(2))
    parent = api.port(net_a["id"])
    first = api.port(net_b["id"], fixed_ips=[{"ip_address": "10.97.1.11"}])
    second = api.port(net_c["id"], fixed_ips=[{"ip_address": "10.97.1.12"}])
    tagged = [{"port_id": first["id"], "segmentation_type": "vlan", "segmentation_id": 101},
              {"port_id": second["id"], "segmentation_type": "vlan", "segmentation_id": 102}]
    trunk = api.create("trunks", port_id=parent["id"], sub_ports=tagged)
    # the other instances, on h2: one per network; B's and C's peers differ
    _, a_ip = instance(deployment, "h2", net_a, CIDR)
    peer_b = api.port(net_b["id"], fixed_ips=[{"ip_address": "10.97.1.21"}])
    peer_c = api.port(net_c["id"], fixed_ips=[{"ip_address": "10.97.1.22"}])
    for peer in (peer_b, peer_c):
        deployment.plug("h2", peer["id"])
        addressed(peer)
    b_ip, c_ip = "10.97.1.21", "10.97.1.22"

    # the instance: its tap on its trunk's bridge, a namespace per VLAN
    deployment.plug("h1", parent["id"])
    for sub in (first, second):
        deployment.box.adopt(f"inst-{sub['id'][:11]}")
    bridge = f"tbr-{trunk['id'][:11]}"
    assert bridge in ovs.vsctl("list-br").split()
    untagged, vlan101, vlan102 = (addressed(port) for port in (parent, first, second))

    tell = trunk_state(deployment, trunk["id"])
    assert wait_until(lambda: api.show("trunks", trunk["id"])["status"] == "ACTIVE", 30, tell)
    for port in (parent, first, second):
        assert wait_until(lambda p=port: api.show("ports", p["id"])["status"] == "ACTIVE",
                          20, tell)
        assert api.show("ports", port["id"])["binding:host_id"] == \
            deployment.hosts["h1"]["host"]
    assert wait_until(lambda: pings(untagged, a_ip), 20, tell)
    assert wait_until(lambda: pings(vlan101, b_ip), 20, tell)
    assert wait_until(lambda: pings(vlan102, c_ip), 20, tell)
    assert not pings(vlan101, c_ip), "VLAN 101 reached network C"
    assert not pings(vlan102, b_ip), "VLAN 102 reached network B"

    # a subport removed from the live trunk, then added back
    removed = api.put(f"/v2.0/trunks/{trunk['id']}/remove_subports", json={"sub_ports": [
        {"port_id": second["id"]}]})
    assert removed.status_code == 200, removed.text
    spi = f"spi-{second['id'][:11]}"
    assert wait_until(lambda: spi not in ovs.vsctl("list-ports", "br-int").split(), 20, tell)
    assert not pings(vlan102, c_ip), "a removed subport still passes"
    assert pings(vlan101, b_ip) and pings(untagged, a_ip)
    assert wait_until(lambda: api.show("ports", second["id"])["status"] == "DOWN", 20, tell)
    assert wait_until(lambda: api.show("trunks", trunk["id"])["status"] == "ACTIVE", 20, tell)

    added = api.put(f"/v2.0/trunks/{trunk['id']}/add_subports",
                    json={"sub_ports": tagged[1:]})
    assert added.status_code == 200, added.text
    assert wait_until(lambda: pings(vlan102, c_ip), 30, tell)
    assert wait_until(lambda: api.show("trunks", trunk["id"])["status"] == "ACTIVE", 20, tell)
    assert api.show("ports", second["id"])["status"] == "ACTIVE"
    assert pings(untagged, a_ip) and pings(vlan101, b_ip)

    # the agent killed and started again: traffic goes on, nothing is rewritten
    restarted(deployment, "h1")
    assert wait_until(lambda: "full sync done" in deployment.log(
        "h1-neutrino-openvswitch-agent"), 30, tell)
    assert pings(vlan102, c_ip) and pings(vlan101, b_ip) and pings(untagged, a_ip)
    log = deployment.log("h1-neutrino-openvswitch-agent")
    assert "trunk patch ports made" not in log, log[-3000:]
    assert api.show("trunks", trunk["id"])["status"] == "ACTIVE"

    # the instance goes: its trunk bridge and br-int's patches with it
    run(str(BIN / "neutrino-instance"), "--url", deployment.server.url, "unplug",
        parent["id"], "--host-netns", deployment.hosts["h1"]["namespace"], "--ovs-db", ovs.db)

    def cleaned() -> bool:
        patches = [p for p in ovs.vsctl("list-ports", "br-int").split()
                   if p.startswith(("tpi-", "spi-"))]
        return bridge not in ovs.vsctl("list-br").split() and not patches

    assert wait_until(cleaned, 20, tell)
    assert wait_until(lambda: api.show("trunks", trunk["id"])["status"] == "DOWN", 20, tell)
    assert not any(b.startswith("vmb-") for b in ovs.vsctl("list-br").split())
    assert f"inst-{first['id'][:11]}" not in run("ip", "netns", "list").stdout
    assert api.delete(f"/v2.0/trunks/{trunk['id']}").status_code == 204
    assert api.delete(f"/v2.0/ports/{parent['id']}").status_code == 204

def test_a_trunk_on_a_linux_bridge_host_goes_to_error(deployment):
    """No 8021q here: the Linux bridge agent wires the parent untagged and
    puts the trunk in ERROR, saying why."""
    deployment.add_host("lb", 1)
    deployment.start_l2_agent("lb", firewall="noop")
    wait_until(lambda: deployment.agent_alive("lb", "Linux bridge agent"), 30, "the LB agent")
    api = deployment.api
    net, _ = network(deployment, CIDR)
    tagged, _ = network(deployment, TAGGED_CIDR)
    parent, sub = api.port(net["id"]), api.port(tagged["id"])
    trunk = api.create("trunks", port_id=parent["id"], sub_ports=[
        {"port_id": sub["id"], "segmentation_type": "vlan", "segmentation_id": 101}])
    deployment.plug("lb", parent["id"])
    log = lambda: deployment.log("lb-neutrino-linuxbridge-agent")[-3000:]  # noqa: E731
    assert wait_until(lambda: api.show("trunks", trunk["id"])["status"] == "ERROR", 30, log)
    assert wait_until(lambda: api.show("ports", parent["id"])["status"] == "ACTIVE", 20, log)
    assert f"trunk {trunk['id']} (parent port {parent['id']}) is in ERROR" in log()
