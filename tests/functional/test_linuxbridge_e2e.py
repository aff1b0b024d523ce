"""The Linux bridge agent end to end: two emulated hosts, instances on a VXLAN
network reach each other, ports go ACTIVE, l2population entries come and go.
Root only: everything happens in namespaces the tests make and remove."""

from __future__ import annotations

import pytest

from tests.dataplane import pings, run, sandbox, skip_unless_root, wait_until
from tests.functional.emulated_hosts import Deployment

pytestmark = pytest.mark.slow

LB = "Linux bridge agent"
DHCP = "DHCP agent"


@pytest.fixture
def deployment(tmp_path, rabbit_url):
    skip_unless_root("ip", "socat", "ping", "dnsmasq", "udhcpc", "iptables", "ipset")
    with sandbox() as box:
        deployment = Deployment(box, tmp_path, rabbit_url)
        try:
            yield deployment
        finally:
            deployment.close()


def port_status(api, port_id: str) -> str:
    return api.show("ports", port_id)["status"]


def address_of(port: dict) -> str:
    return port["fixed_ips"][0]["ip_address"]


def configure(port: dict, prefix: int = 24) -> None:
    """Give the instance of ``port`` its address by hand (no DHCP agent here)."""
    run("ip", "addr", "add", f"{address_of(port)}/{prefix}", "dev", "eth0",
        namespace=f"inst-{port['id'][:11]}")


def fdb(deployment: Deployment, host: str, device: str) -> str:
    """The VXLAN device's own entries (MAC -> remote host), not those the bridge learnt."""
    shown = run("bridge", "fdb", "show", "dev", device, namespace=host, check=False).stdout
    return "\n".join(line for line in shown.splitlines() if " dst " in line)


def test_instances_on_two_hosts_reach_each_other(deployment):
    api = deployment.api
    h1, h2 = deployment.add_host("h1", 1), deployment.add_host("h2", 2)
    deployment.start_l2_agent("h1", firewall="noop")
    deployment.start_l2_agent("h2", firewall="noop")
    deployment.start_dhcp_agent("h1")
    for name, agent_type in (("h1", LB), ("h2", LB), ("h1", DHCP)):
        wait_until(lambda n=name, t=agent_type: deployment.agent_alive(n, t), 30,
                   f"the {agent_type} of {name}")

    net = api.network()
    assert net["provider:network_type"] == "vxlan"
    vni = net["provider:segmentation_id"]
    api.subnet(net["id"], "10.10.0.0/24")
    port_a, port_b = api.port(net["id"]), api.port(net["id"])
    # each instance gets by DHCP exactly the address the API gave its port (b's
    # from the DHCP agent on the other host, across the VXLAN network)
    assert deployment.plug("h1", port_a["id"], dhcp=True) == address_of(port_a)
    assert deployment.plug("h2", port_b["id"], dhcp=True) == address_of(port_b)

    for port in (port_a, port_b):
        wait_until(lambda p=port: port_status(api, p["id"]) == "ACTIVE", 20,
                   f"port {port['id']} to go ACTIVE")
    # l2population: each host floods to the other and knows the other's MAC
    wait_until(lambda: "192.168.200.2" in fdb(deployment, h1, f"vxlan-{vni}")
               and port_b["mac_address"] in fdb(deployment, h1, f"vxlan-{vni}"), 15,
               "h1's forwarding entries towards h2")
    wait_until(lambda: port_a["mac_address"] in fdb(deployment, h2, f"vxlan-{vni}"), 15,
               "h2's forwarding entries towards h1")
    inst_a = f"inst-{port_a['id'][:11]}"
    assert wait_until(lambda: pings(inst_a, address_of(port_b)), 15, "a ping across hosts")

    # the port goes: h2 unplugs, its port is DOWN, and h1 forgets it
    run("ip", "netns", "del", f"inst-{port_b['id'][:11]}")
    wait_until(lambda: port_status(api, port_b["id"]) == "DOWN", 20, "port b DOWN")
    wait_until(lambda: port_b["mac_address"] not in fdb(deployment, h1, f"vxlan-{vni}"),
               15, "h1 to forget port b")
    # and h2, with no port left on the network, removes its bridge
    wait_until(lambda: f"brq{net['id'][:11]}" not in run(
        "ip", "-o", "link", namespace=h2).stdout, 15, "h2's bridge to go")


def nc_connects(namespace: str, address: str, port: int) -> bool:
    return run("nc", "-z", "-w", "1", address, str(port), namespace=namespace,
               check=False).returncode == 0


def two_hosts(deployment: Deployment, dhcp: bool = False) -> tuple[str, str]:
    h1, h2 = deployment.add_host("h1", 1), deployment.add_host("h2", 2)
    deployment.start_l2_agent("h1", firewall="noop")
    deployment.start_l2_agent("h2", firewall="noop")
    for name in ("h1", "h2"):
        wait_until(lambda n=name: deployment.agent_alive(n, LB), 30, f"the agent of {name}")
    return h1, h2


def instance(deployment: Deployment, host: str, network_id: str, address: str,
             prefix: int = 24) -> dict:
    """A port with ``address``, plugged on ``host`` and configured by hand."""
    port = deployment.api.port(network_id, fixed_ips=[{"ip_address": address}])
    deployment.plug(host, port["id"])
    configure(port, prefix)
    wait_until(lambda: port_status(deployment.api, port["id"]) == "ACTIVE", 20,
               f"port {address} ACTIVE")
    return port


def mac_of_neighbour(namespace: str, address: str) -> str:
    shown = run("ip", "neigh", "show", address, namespace=namespace).stdout.split()
    return shown[shown.index("lladdr") + 1] if "lladdr" in shown else ""


def test_networks_with_the_same_cidr_are_isolated(deployment):
    api = deployment.api
    two_hosts(deployment)
    red, blue = api.network(name="red"), api.network(name="blue")
    for net in (red, blue):
        api.subnet(net["id"], "10.30.0.0/24")
    red_a = instance(deployment, "h1", red["id"], "10.30.0.10")
    red_b = instance(deployment, "h2", red["id"], "10.30.0.20")
    blue_b = instance(deployment, "h2", blue["id"], "10.30.0.20")  # the same address
    blue_c = instance(deployment, "h1", blue["id"], "10.30.0.30")
    ns = {port["id"]: f"inst-{port['id'][:11]}" for port in (red_a, red_b, blue_b, blue_c)}

    # red's 10.30.0.20 answers red, and is red's port, not blue's
    assert wait_until(lambda: pings(ns[red_a["id"]], "10.30.0.20"), 15, "red to red")
    assert mac_of_neighbour(ns[red_a["id"]], "10.30.0.20") == red_b["mac_address"]
    assert wait_until(lambda: pings(ns[blue_c["id"]], "10.30.0.20"), 15, "blue to blue")
    assert mac_of_neighbour(ns[blue_c["id"]], "10.30.0.20") == blue_b["mac_address"]
    # nothing crosses: blue has no 10.30.0.10, red no 10.30.0.30
    assert not pings(ns[blue_b["id"]], "10.30.0.10", count=2)
    assert not pings(ns[red_b["id"]], "10.30.0.30", count=2)


def test_traffic_outlives_an_agent_that_is_killed_and_resyncs(deployment):
    """kill -9 of an L2 agent leaves its host's wiring in place; started again,
    it wires what came meanwhile and unplugs a port deleted meanwhile."""
    api = deployment.api
    h1, _ = two_hosts(deployment)
    net = api.network()
    api.subnet(net["id"], "10.40.0.0/24")
    port_a = instance(deployment, "h1", net["id"], "10.40.0.10")
    instance(deployment, "h2", net["id"], "10.40.0.20")
    doomed = instance(deployment, "h1", net["id"], "10.40.0.30")
    inst_a = f"inst-{port_a['id'][:11]}"
    assert wait_until(lambda: pings(inst_a, "10.40.0.20"), 15, "a ping across hosts")

    agent = next(proc for proc in deployment.procs if "linuxbridge" in " ".join(proc.args)
                 and f"--net=/run/netns/{h1}" in proc.args)
    agent.kill()
    agent.wait()
    assert pings(inst_a, "10.40.0.20", count=3)  # the host stays wired
    assert api.delete(f"/v2.0/ports/{doomed['id']}").status_code == 204
    late = api.port(net["id"], fixed_ips=[{"ip_address": "10.40.0.40"}])
    deployment.plug("h1", late["id"])
    configure(late)
    if not pings(inst_a, "10.40.0.20", count=3):
        h2 = deployment.hosts["h2"]["namespace"]
        vni = net["provider:segmentation_id"]
        raise AssertionError("a lost b while h1's agent was down; h1's entries:\n" +
                             fdb(deployment, h1, f"vxlan-{vni}") +
                             "\nh2 fdb:\n" + fdb(deployment, h2, f"vxlan-{vni}") +
                             "\nneigh a: " + run("ip", "neigh", namespace=inst_a).stdout +
                             "\nh2's agent:\n" +
                             deployment.log("h2-neutrino-linuxbridge-agent")[-3000:])

    deployment.start_l2_agent("h1", firewall="noop")
    wait_until(lambda: port_status(api, late["id"]) == "ACTIVE", 30, "the late port ACTIVE")
    assert wait_until(lambda: pings(f"inst-{late['id'][:11]}", "10.40.0.20"), 15,
                      "the late port to reach the other host")
    bridge = f"brq{net['id'][:11]}"
    members = run("ip", "-o", "link", "show", "master", bridge, namespace=h1).stdout
    assert f"tap{doomed['id'][:11]}" not in members and f"tap{late['id'][:11]}" in members
    assert wait_until(lambda: pings(inst_a, "10.40.0.20", count=2), 10, "a to reach b still")


def kernel_has_vlans() -> bool:
    with sandbox() as box:
        ns = box.namespace("vlan")
        run("ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1", namespace=ns)
        return run("ip", "link", "add", "link", "d0", "name", "d0.5", "type", "vlan", "id",
                   "5", namespace=ns, check=False).returncode == 0


@pytest.mark.parametrize("network_type", ["flat", "vlan"])
def test_provider_networks_on_the_physical_interface(deployment, network_type):
    if network_type == "vlan" and not kernel_has_vlans():
        pytest.skip("this kernel cannot make VLAN sub-interfaces (no 8021q module)")
    api = deployment.api
    two_hosts(deployment)
    segment = {"provider:network_type": network_type, "provider:physical_network": "physnet1"}
    if network_type == "vlan":
        segment["provider:segmentation_id"] = 150
    resp = api.post("/v2.0/networks", json={"network": {"name": "provider", **segment}})
    assert resp.status_code == 201, resp.text
    net = resp.json()["network"]
    api.subnet(net["id"], "10.60.0.0/24")
    a = instance(deployment, "h1", net["id"], "10.60.0.10")
    instance(deployment, "h2", net["id"], "10.60.0.20")
    assert wait_until(lambda: pings(f"inst-{a['id'][:11]}", "10.60.0.20"), 15,
                      f"a ping across the {network_type} network")
