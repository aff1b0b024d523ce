"""The Open vSwitch agent end to end: emulated hosts running OVS on its
userspace datapath, instances plugged as a hypervisor plugs them (the port
on br-int with ``external_ids:iface-id``), traffic between them.

Addresses are set in the instances by hand: the DHCP agent does not speak
to OVS yet.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from neutrino.linux.ovs import cookie_of
from tests.dataplane import pings, run, wait_until
from tests.functional.emulated_hosts import BIN, Deployment, deployed
from tests.ovs import skip_unless_ovs

pytestmark = pytest.mark.slow

OVS_AGENT = "Open vSwitch agent"
SERVER_EXTRA = ("[ml2]\ntype_drivers = local,flat,vlan,vxlan,geneve,gre\n"
                "mechanism_drivers = openvswitch,linuxbridge,l2population\n"
                "[ml2_type_geneve]\nvni_ranges = 3000:3999\n"
                "[ml2_type_gre]\ntunnel_id_ranges = 4000:4999\n")


@pytest.fixture
def deployment(tmp_path, rabbit_url):
    skip_unless_ovs("socat", "ping")
    with deployed(tmp_path, rabbit_url, SERVER_EXTRA) as deployment:
        yield deployment


def ovs_hosts(deployment: Deployment, *names: str, first: int = 1) -> None:
    for index, name in enumerate(names, start=first):
        deployment.add_host(name, index)
        deployment.add_ovs(name)
        deployment.start_ovs_agent(name)
    for name in names:
        wait_until(lambda n=name: deployment.agent_alive(n, OVS_AGENT), 30,
                   f"the OVS agent of {name}")


def instance(deployment: Deployment, host: str, network: dict, cidr: str) -> tuple[str, str]:
    """A port of ``network`` plugged on ``host``, its address set by hand: (the
    instance's namespace, its address)."""
    api = deployment.api
    port = api.port(network["id"])
    address = port["fixed_ips"][0]["ip_address"]
    ns = f"inst-{port['id'][:11]}"
    deployment.plug(host, port["id"])
    run("ip", "addr", "add", f"{address}/{cidr.split('/')[1]}", "dev", "eth0", namespace=ns)
    wait_until(lambda: api.show("ports", port["id"])["status"] == "ACTIVE", 20,
               f"port {port['id']} ACTIVE")
    return ns, address


def network(deployment: Deployment, cidr: str, **attrs) -> dict:
    net = deployment.api.network(**attrs)
    deployment.api.subnet(net["id"], cidr, enable_dhcp=False)
    return net


def flows_of(deployment: Deployment, *names: str) -> Callable[[], str]:
    """What the hosts' bridges hold, and their agents' logs: a failure's message."""
    def tell() -> str:
        text = []
        for name in names:
            ovs = deployment.hosts[name]["ovs"]
            for bridge in ("br-int", "br-tun"):
                text.append(f"{name} {bridge}:\n{ovs.ofctl('dump-flows', bridge)}")
            text.append(deployment.log(f"{name}-neutrino-openvswitch-agent")[-2000:])
        return "\n".join(text)

    return tell


@pytest.mark.parametrize("network_type", ["vxlan", "geneve", "gre"])
def test_instances_on_two_ovs_hosts_reach_each_other(deployment, network_type):
    ovs_hosts(deployment, "h1", "h2")
    net = network(deployment, "10.90.0.0/24", **{"provider:network_type": network_type})
    a, _ = instance(deployment, "h1", net, "10.90.0.0/24")
    b, b_ip = instance(deployment, "h2", net, "10.90.0.0/24")
    assert wait_until(lambda: pings(a, b_ip), 20, flows_of(deployment, "h1", "h2"))
    # h1's br-tun answers a's ARP for b itself (arp_responder)
    run("ip", "neigh", "flush", "all", namespace=a)
    assert pings(a, b_ip)
    answered = [line for line in deployment.hosts["h1"]["ovs"].ofctl(
        "dump-flows", "br-tun").splitlines() if f"arp_tpa={b_ip}" in line]
    assert answered and "n_packets=0," not in answered[0], answered


def test_networks_are_isolated(deployment):
    ovs_hosts(deployment, "h1", "h2")
    red, blue = (network(deployment, "10.91.0.0/24") for _ in range(2))
    a, _ = instance(deployment, "h1", red, "10.91.0.0/24")
    b, b_ip = instance(deployment, "h2", red, "10.91.0.0/24")
    c, c_ip = instance(deployment, "h2", blue, "10.91.0.0/24")
    assert wait_until(lambda: pings(a, b_ip), 20, f"{a} reaching {b_ip}")
    if c_ip != b_ip:  # the same CIDR: the addresses may coincide
        assert not pings(a, c_ip)


@pytest.mark.parametrize("network_type", ["flat", "vlan"])
def test_provider_network_between_ovs_hosts(deployment, network_type):
    """physnet1's wire joins the hosts' br-phys; a VLAN network's frames cross
    it tagged with the network's VLAN (OVS tags them: no 8021q needed)."""
    ovs_hosts(deployment, "h1", "h2")
    net = network(deployment, "10.92.0.0/24", **{"provider:network_type": network_type,
                                                  "provider:physical_network": "physnet1"})
    a, _ = instance(deployment, "h1", net, "10.92.0.0/24")
    b, b_ip = instance(deployment, "h2", net, "10.92.0.0/24")
    assert wait_until(lambda: pings(a, b_ip), 20, f"{a} reaching {b_ip}")


def test_linux_bridge_and_ovs_hosts_share_a_vxlan_network(deployment):
    deployment.add_host("lb", 1)
    deployment.start_l2_agent("lb", firewall="noop")
    ovs_hosts(deployment, "ovs", first=2)
    wait_until(lambda: deployment.agent_alive("lb", "Linux bridge agent"), 30, "the LB agent")
    net = network(deployment, "10.93.0.0/24", **{"provider:network_type": "vxlan"})
    a, _ = instance(deployment, "lb", net, "10.93.0.0/24")
    b, b_ip = instance(deployment, "ovs", net, "10.93.0.0/24")
    ovs, lb = deployment.hosts["ovs"]["ovs"], deployment.hosts["lb"]["namespace"]

    def state() -> str:
        """What each side knows of the other, for the failure message."""
        fdb = run("bridge", "fdb", "show", namespace=lb).stdout
        return (f"{a} (Linux bridge) reaching {b_ip} (OVS); OVS br-tun:\n"
                f"{ovs.ofctl('dump-flows', 'br-tun')}\n{ovs.vsctl('show')}\nLB fdb:\n{fdb}")

    assert wait_until(lambda: pings(a, b_ip), 20, state)


def flow_ages(ovs, bridge: str, needle: str) -> list[float]:
    """The ages (s) of the bridge's flows that mention ``needle``."""
    ages = []
    for line in ovs.ofctl("dump-flows", bridge).splitlines():
        if needle in line and "duration=" in line:
            ages.append(float(line.split("duration=")[1].split("s,")[0]))
    return ages


def test_agent_killed_keeps_traffic_and_resyncs(deployment):
    """kill -9 of the OVS agent: the flows stay and traffic with them; started
    again, it rewrites nothing that is still right (the flows keep their age),
    and removes what went meanwhile (a network's flows, its tunnel key)."""
    ovs_hosts(deployment, "h1", "h2")
    api, ovs = deployment.api, deployment.hosts["h1"]["ovs"]
    kept = network(deployment, "10.94.0.0/24")
    a, _ = instance(deployment, "h1", kept, "10.94.0.0/24")
    _, b_ip = instance(deployment, "h2", kept, "10.94.0.0/24")
    doomed_net = network(deployment, "10.95.0.0/24")
    port = api.port(doomed_net["id"])
    deployment.plug("h1", port["id"])
    instance(deployment, "h2", doomed_net, "10.95.0.0/24")
    kept_key = f"cookie={cookie_of(kept['id']):#x},"  # all of its flows, ARP replies too
    doomed_key = f"tun_id={doomed_net['provider:segmentation_id']:#x}"
    wait_until(lambda: flow_ages(ovs, "br-tun", doomed_key), 20, "the doomed network's flows")
    assert wait_until(lambda: pings(a, b_ip), 20, f"{a} reaching {b_ip}")

    agent = next(proc for proc in deployment.procs if "openvswitch-agent" in " ".join(proc.args)
                 and f"--net=/run/netns/{deployment.hosts['h1']['namespace']}" in proc.args)
    agent.kill()
    agent.wait()
    assert pings(a, b_ip, count=3), "traffic stops with the agent"
    run(str(BIN / "neutrino-instance"), "unplug", port["id"], "--keep-binding", "--host-netns",
        deployment.hosts["h1"]["namespace"], "--ovs-db", ovs.db)
    assert api.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    before = min(flow_ages(ovs, "br-tun", kept_key))
    firewall_before = min(flow_ages(ovs, "br-int", "table=71"))
    dumped = ovs.ofctl("dump-flows", "br-tun")

    deployment.start_ovs_agent("h1")
    wait_until(lambda: not flow_ages(ovs, "br-tun", doomed_key), 30,
               "the deleted network's flows to go")
    assert pings(a, b_ip, count=3)
    assert min(flow_ages(ovs, "br-int", "table=71")) >= firewall_before, (
        "the firewall's flows were written again")
    assert min(flow_ages(ovs, "br-tun", kept_key)) >= before, (
        f"flows were written again; before:\n{dumped}\nafter:\n"
        f"{ovs.ofctl('dump-flows', 'br-tun')}\n"
        f"{deployment.log('h1-neutrino-openvswitch-agent')[-3000:]}")


def test_flows_come_back_after_ovs_vswitchd_restarts(deployment):
    """ovs-vswitchd keeps no flow across a restart: the agent notices (its
    canary flow is gone) and writes them all again."""
    ovs_hosts(deployment, "h1", "h2")
    net = network(deployment, "10.96.0.0/24")
    a, _ = instance(deployment, "h1", net, "10.96.0.0/24")
    _, b_ip = instance(deployment, "h2", net, "10.96.0.0/24")
    assert wait_until(lambda: pings(a, b_ip), 20, f"{a} reaching {b_ip}")
    ovs = deployment.hosts["h1"]["ovs"]
    ovs.restart_vswitchd()
    assert wait_until(lambda: pings(a, b_ip), 30, flows_of(deployment, "h1"))
    assert "table=23" in ovs.ofctl("dump-flows", "br-int")
