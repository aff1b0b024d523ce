"""Routed networks end to end: one network with a segment on each of two
physical networks (two wires), a host on each, and the provider's router on
both wires (a namespace forwarding between them, as a routed provider
network's physical router does: an L2 agent wires one segment of a network
per host, in Neutron as here). A port gets its address from the segment of
the host it is plugged on, and the instances reach each other through the
router. Root only: everything happens in namespaces the test makes and
removes."""

from __future__ import annotations

import pytest

from tests.dataplane import pings, run, skip_unless_root, wait_until
from tests.functional.emulated_hosts import PHYS_INTERFACE, PHYSNET, deployed

pytestmark = pytest.mark.slow

LB = "Linux bridge agent"
PHYSNET2, PHYS2_INTERFACE = "physnet2", "ph1"
SERVER = ("[DEFAULT]\nservice_plugins = router,segments\n"
          f"[ml2_type_flat]\nflat_networks = {PHYSNET},{PHYSNET2}\n")


def on_second_wire(d, ns: str, inside: str) -> None:
    """``inside`` in ``ns``, on physnet2's wire (a bridge of its own, made once)."""
    if run("ip", "link", "show", "br-phys2", namespace=d.underlay, check=False).returncode:
        run("ip", "link", "add", "br-phys2", "type", "bridge", namespace=d.underlay)
        run("ip", "link", "set", "br-phys2", "up", namespace=d.underlay)
    outside = f"p2-{ns[-6:]}"
    run("ip", "link", "add", inside, "type", "veth", "peer", "name", outside, namespace=ns)
    run("ip", "link", "set", outside, "netns", d.underlay, namespace=ns)
    run("ip", "link", "set", outside, "master", "br-phys2", "up", namespace=d.underlay)
    run("ip", "link", "set", inside, "up", namespace=ns)


def provider_router(d) -> str:
    """The physical router of the two segments: 10.90.1.1 on physnet1's wire,
    10.90.2.1 on physnet2's, forwarding between them."""
    ns = d.add_external_host("10.90.1.1/24", name="prouter")
    on_second_wire(d, ns, "eth1")
    run("ip", "addr", "add", "10.90.2.1/24", "dev", "eth1", namespace=ns)
    run("sysctl", "-qw", "net.ipv4.ip_forward=1", namespace=ns)
    return ns


def l2_agent(d, name: str, mappings: str) -> None:
    host = d.hosts[name]
    d.start_agent(name, "neutrino-linuxbridge-agent", (
        f"[linux_bridge]\nphysical_interface_mappings = {mappings}\n"
        f"[vxlan]\nenable_vxlan = false\nlocal_ip = {host['local_ip']}\n"
        "[securitygroup]\nfirewall_driver = noop\n"))


def instance(d, net: dict, name: str) -> tuple[dict, str]:
    """A port made without a host (its address waits), plugged on ``name``:
    the binding gives it its address; set by hand, default route via the
    gateway of the subnet it came from."""
    api = d.api
    port = api.port(net["id"])
    assert (port["fixed_ips"], port["ip_allocation"]) == ([], "deferred")
    d.plug(name, port["id"])
    port = api.show("ports", port["id"])
    assert port["ip_allocation"] == "immediate"
    [fixed] = port["fixed_ips"]
    subnet = api.show("subnets", fixed["subnet_id"])
    ns = f"inst-{port['id'][:11]}"
    prefix = subnet["cidr"].split("/")[1]
    run("ip", "addr", "add", f"{fixed['ip_address']}/{prefix}", "dev", "eth0", namespace=ns)
    run("ip", "route", "add", "default", "via", subnet["gateway_ip"], namespace=ns)
    return port, ns


def test_ports_take_the_segment_of_their_host_and_route_across(tmp_path, rabbit_url):
    skip_unless_root("ip", "ping", "sysctl")
    with deployed(tmp_path, rabbit_url, server_extra=SERVER) as d:
        for index, name in enumerate(("ha", "hb"), start=1):
            d.add_host(name, index)
        on_second_wire(d, d.hosts["hb"]["namespace"], PHYS2_INTERFACE)
        l2_agent(d, "ha", f"{PHYSNET}:{PHYS_INTERFACE}")
        l2_agent(d, "hb", f"{PHYSNET2}:{PHYS2_INTERFACE}")
        for name in ("ha", "hb"):
            wait_until(lambda n=name: d.agent_alive(n, LB), 30, f"{name}'s L2 agent")
        provider_router(d)

        api = d.api
        net = api.network(**{"provider:network_type": "flat",
                             "provider:physical_network": PHYSNET})
        resp = api.post("/v2.0/segments", json={"segment": {
            "network_id": net["id"], "network_type": "flat", "physical_network": PHYSNET2}})
        assert resp.status_code == 201, resp.text
        segments = {s["physical_network"]: s["id"] for s in api.get(
            "/v2.0/segments", params={"network_id": net["id"]}).json()["segments"]}
        sub_a = api.subnet(net["id"], "10.90.1.0/24", segment_id=segments[PHYSNET],
                           enable_dhcp=False)
        sub_b = api.subnet(net["id"], "10.90.2.0/24", segment_id=segments[PHYSNET2],
                           enable_dhcp=False)
        assert api.show("networks", net["id"])["l2_adjacency"] is False
        # what a guest learns by DHCP: the other segment is through its own gateway
        assert api.show("subnets", sub_a["id"])["host_routes"] == [
            {"destination": "10.90.2.0/24", "nexthop": "10.90.1.1"}]

        port_a, ns_a = instance(d, net, "ha")
        port_b, ns_b = instance(d, net, "hb")
        assert port_a["fixed_ips"][0]["subnet_id"] == sub_a["id"]
        assert port_b["fixed_ips"][0]["subnet_id"] == sub_b["id"]
        address_a, address_b = (p["fixed_ips"][0]["ip_address"] for p in (port_a, port_b))
        wait_until(lambda: pings(ns_a, "10.90.1.1"), 30, "segment A's gateway")
        wait_until(lambda: pings(ns_b, "10.90.2.1"), 30, "segment B's gateway")
        wait_until(lambda: pings(ns_a, address_b), 30, "B from A through the router")
        assert pings(ns_b, address_a)
        # the segments are two L2 domains: B is not there on A's own wire
        run("ip", "route", "add", f"{address_b}/32", "dev", "eth0", namespace=ns_a)
        assert not pings(ns_a, address_b, count=2)
