"""Trunks on an Open vSwitch host end to end: an instance's trunk parent
plugged into its trunk bridge (``neutrino-instance`` does it, as Nova does),
the agent patching it to br-int, the parent's traffic untagged and each
subport's tagged with its VLAN reaching instances on another host.

The instance cannot split VLANs itself (no 8021q module, no tc vlan action
here), so its VLAN demultiplexing is a second OVS bridge of the host
(``vmb-``): the instance's eth0 moves onto it as its trunk port, and access
ports of VLAN 0 (untagged), 101 and 102 lead to one namespace each, with the
MAC and address of the parent and of each subport.
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


def vlan_namespace(deployment: Deployment, ovs: OvsHost, host_ns: str, bridge: str,
                   tag: int, port: dict, prefix: int) -> str:
    """A namespace behind an access port of VLAN ``tag`` (0: untagged) on the
    instance's demultiplexing bridge, as ``port`` (its MAC, its address)."""
    ns = deployment.box.namespace(f"vlan{tag}")
    outside = f"vp{tag}-{port['id'][:8]}"
    run("ip", "link", "add", outside, "type", "veth", "peer", "name", "eth0",
        "netns", ns, namespace=host_ns)
    run("ip", "link", "set", outside, "up", namespace=host_ns)
    run("ethtool", "-K", "eth0", "tx", "off", namespace=ns)
    run("ip", "link", "set", "eth0", "address", port["mac_address"], "mtu", "1450", "up",
        namespace=ns)
    run("ip", "addr", "add", f"{port['fixed_ips'][0]['ip_address']}/{prefix}", "dev", "eth0",
        namespace=ns)
    ovs.vsctl("add-port", bridge, outside, "--", "set", "Port", outside, f"tag={tag}")
    return ns


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
    host_ns = deployment.hosts["h1"]["namespace"]
    net_a, _ = network(deployment, CIDR)
    (net_b, _), (net_c, _) = (network(deployment, TAGGED_CIDR) for _ in range(2))
    parent = api.port(net_a["id"])
    first = api.port(net_b["id"], fixed_ips=[{"ip_address": "10.97.1.11"}])
    second = api.port(net_c["id"], fixed_ips=[{"ip_address": "10.97.1.12"}])
    trunk = api.create("trunks", port_id=parent["id"], sub_ports=[
        {"port_id": first["id"], "segmentation_type": "vlan", "segmentation_id": 101}])
    # the other instances, on h2: one per network; B's and C's peers differ
    _, a_ip = instance(deployment, "h2", net_a, CIDR)
    peer_b = api.port(net_b["id"], fixed_ips=[{"ip_address": "10.97.1.21"}])
    peer_c = api.port(net_c["id"], fixed_ips=[{"ip_address": "10.97.1.22"}])
    for peer in (peer_b, peer_c):
        deployment.plug("h2", peer["id"])
        run("ip", "addr", "add", f"{peer['fixed_ips'][0]['ip_address']}/24", "dev", "eth0",
            namespace=f"inst-{peer['id'][:11]}")
    b_ip, c_ip = "10.97.1.21", "10.97.1.22"

    # the instance: plugged into its trunk's bridge, its eth0 then the trunk port
    # of the VLAN-splitting bridge
    deployment.plug("h1", parent["id"])
    bridge = f"tbr-{trunk['id'][:11]}"
    assert bridge in ovs.vsctl("list-br").split()
    vm, vm_trunk = f"vmb-{parent['id'][:8]}", f"vmt-{parent['id'][:8]}"
    run("ip", "link", "set", "eth0", "netns", host_ns, namespace=f"inst-{parent['id'][:11]}")
    run("ip", "link", "set", "eth0", "name", vm_trunk, "up", namespace=host_ns)
    ovs.add_bridge(vm)
    ovs.vsctl("add-port", vm, vm_trunk)
    untagged = vlan_namespace(deployment, ovs, host_ns, vm, 0, parent, 24)
    vlan101 = vlan_namespace(deployment, ovs, host_ns, vm, 101, first, 24)
    vlan102 = vlan_namespace(deployment, ovs, host_ns, vm, 102, second, 24)

    tell = trunk_state(deployment, trunk["id"])
    assert wait_until(lambda: api.show("trunks", trunk["id"])["status"] == "ACTIVE", 30, tell)
    for port in (parent, first):
        shown = api.show("ports", port["id"])
        assert wait_until(lambda p=port: api.show("ports", p["id"])["status"] == "ACTIVE",
                          20, tell)
        assert shown["binding:host_id"] == deployment.hosts["h1"]["host"]
    assert wait_until(lambda: pings(untagged, a_ip), 20, tell)
    assert wait_until(lambda: pings(vlan101, b_ip), 20, tell)
    assert not pings(vlan101, c_ip), "VLAN 101 reached network C"
    assert not pings(vlan102, c_ip), "VLAN 102 passes before it is a subport"

    # a subport added to the live trunk, then removed
    added = api.put(f"/v2.0/trunks/{trunk['id']}/add_subports", json={"sub_ports": [
        {"port_id": second["id"], "segmentation_type": "vlan", "segmentation_id": 102}]})
    assert added.status_code == 200, added.text
    assert wait_until(lambda: pings(vlan102, c_ip), 30, tell)
    assert not pings(vlan102, b_ip), "VLAN 102 reached network B"
    assert wait_until(lambda: api.show("trunks", trunk["id"])["status"] == "ACTIVE", 20, tell)
    assert api.show("ports", second["id"])["status"] == "ACTIVE"
    assert pings(untagged, a_ip) and pings(vlan101, b_ip)

    removed = api.put(f"/v2.0/trunks/{trunk['id']}/remove_subports", json={"sub_ports": [
        {"port_id": second["id"]}]})
    assert removed.status_code == 200, removed.text
    spi = f"spi-{second['id'][:11]}"
    assert wait_until(lambda: spi not in ovs.vsctl("list-ports", "br-int").split(), 20, tell)
    assert not pings(vlan102, c_ip), "a removed subport still passes"
    assert pings(vlan101, b_ip) and pings(untagged, a_ip)
    assert wait_until(lambda: api.show("ports", second["id"])["status"] == "DOWN", 20, tell)

    # the instance goes: its trunk bridge and br-int's patches with it
    run(str(BIN / "neutrino-instance"), "--url", deployment.server.url, "unplug",
        parent["id"], "--host-netns", host_ns, "--ovs-db", ovs.db)

    def cleaned() -> bool:
        patches = [p for p in ovs.vsctl("list-ports", "br-int").split()
                   if p.startswith(("tpi-", "spi-"))]
        return bridge not in ovs.vsctl("list-br").split() and not patches

    assert wait_until(cleaned, 20, tell)
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
