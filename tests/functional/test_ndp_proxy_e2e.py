"""NDP proxies end to end: the Linux bridge and L3 agents (with the ndp_proxy
extension) on an emulated host, a router whose gateway is on an external
network with an IPv6 subnet in an address scope, an IPv6 instance on a
subnet of the same scope behind it, and an "external host" for which the
scope's whole prefix is on-link (as an upstream router that hands out a
prefix without routing it). The external host reaches the instance by its
own address only while the router publishes it. Root only: everything
happens in namespaces the tests make and remove."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from neutrino.linux import ndp_proxy
from tests.dataplane import pings, run, sandbox, skip_unless_root, wait_until
from tests.functional.emulated_hosts import PHYSNET, Deployment
from tests.functional.test_address_scopes_e2e import instance6
from tests.functional.test_l3_e2e import L3, LB, UPSTREAM, Lab, add_interface

pytestmark = pytest.mark.slow

PREFIX = "2001:db8:ee::/48"  # the scope's: on-link for the external host
EXT_CIDR, UPSTREAM6 = "2001:db8:ee::/64", "2001:db8:ee::1"
TENANT_CIDR = "2001:db8:ee:1::/64"
QG = "qg-0a1b2c3d-4e"


@pytest.fixture
def lab(tmp_path, rabbit_url) -> Iterator[Lab]:
    skip_unless_root("ip", "iptables", "ip6tables", "conntrack", "ping", "sysctl")
    with sandbox() as box:
        d = Deployment(box, tmp_path, rabbit_url,
                       server_extra="[DEFAULT]\nservice_plugins = router,ndp_proxy\n")
        try:
            host = d.add_host("h1", 1)
            d.start_l2_agent("h1", firewall="noop")
            l3 = d.start_l3_agent("h1", text="extensions = ndp_proxy\n")
            external = d.add_external_host(f"{UPSTREAM}/24")
            run("ip", "-6", "addr", "add", f"{UPSTREAM6}/64", "dev", "eth0", "nodad",
                namespace=external)
            run("ip", "-6", "route", "add", PREFIX, "dev", "eth0", namespace=external)
            for agent_type in (LB, L3):
                wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, f"the {agent_type}")
            yield Lab(d, host, external, {}, l3)
        finally:
            d.close()


def proxied(router: dict) -> set[str]:
    ns = f"qrouter-{router['id']}"
    return {address for device in run("ls", "/sys/class/net", namespace=ns).stdout.split()
            if device.startswith("qg-") for address in ndp_proxy.proxied(run(
                "ip", "-6", "neigh", "show", "proxy", "dev", device, namespace=ns).stdout)}


def test_an_instance_reached_by_its_own_address_through_the_proxy(lab: Lab):
    api = lab.api
    scope = api.post("/v2.0/address-scopes", json={"address_scope": {
        "name": "ndp", "ip_version": 6, "shared": True}})
    assert scope.status_code == 201, scope.text
    pool = api.create("subnetpools", name="ndp", prefixes=[PREFIX], default_prefixlen=64,
                      shared=True, address_scope_id=scope.json()["address_scope"]["id"])
    ext_net = api.network(**{"router:external": True, "provider:network_type": "flat",
                             "provider:physical_network": PHYSNET})
    api.subnet(ext_net["id"], EXT_CIDR, subnetpool_id=pool["id"], gateway_ip=UPSTREAM6,
               enable_dhcp=False)
    router = api.create("routers", name=f"r-{uuid.uuid4().hex[:6]}", enable_ndp_proxy=True,
                        external_gateway_info={"network_id": ext_net["id"]})
    assert router["enable_ndp_proxy"] is True
    net = api.network()
    subnet = api.subnet(net["id"], TENANT_CIDR, subnetpool_id=pool["id"])
    add_interface(lab, router, subnet)
    inst, address = instance6(lab, net, subnet)
    port_id = next(port["id"] for port in api.get("/v2.0/ports", params={
        "network_id": net["id"]}).json()["ports"] if port["fixed_ips"][0]["ip_address"] == address)

    # nobody answers for the instance's address on the external link yet: its
    # packets get out, the replies do not come back
    gateway = gateway_address(lab, router)
    wait_until(lambda: router_has(router, gateway), 20, "the router's gateway")
    assert not pings(lab.external, address, count=2)
    assert not pings(inst, UPSTREAM6, count=2)

    made = api.post("/v2.0/ndp_proxies", json={"ndp_proxy": {"router_id": router["id"],
                                                             "port_id": port_id}})
    assert made.status_code == 201, made.text
    proxy = made.json()["ndp_proxy"]
    assert proxy["ip_address"] == address
    started = time.monotonic()
    wait_until(lambda: pings(lab.external, address), 15,
               "the external host to reach the instance through the proxy")
    print(f"a new NDP proxy answered in {time.monotonic() - started:.2f} s")
    assert pings(inst, UPSTREAM6)  # and the instance reaches out with its own address
    assert proxied(router) == {address}

    # another address of the subnet is not let in, though routed to the router
    stranger = lab.api.port(net["id"])["fixed_ips"][0]["ip_address"]
    run("ip", "-6", "route", "add", f"{stranger}/128", "via", gateway, "dev", "eth0",
        namespace=lab.external)
    run("ip", "-6", "addr", "add", f"{stranger}/64", "dev", "eth0", "nodad", namespace=inst)
    assert not pings(lab.external, stranger, count=2)

    # enable_ndp_proxy off: unpublished; on again: published
    off = api.put(f"/v2.0/routers/{router['id']}", json={"router": {"enable_ndp_proxy": False}})
    assert off.status_code == 200, off.text
    wait_until(lambda: proxied(router) == set(), 15, "the proxy to be unpublished")
    # (and the router lets in what is routed to it, as any router without them)
    wait_until(lambda: pings(lab.external, stranger), 15, "the routed address let in")
    on = api.put(f"/v2.0/routers/{router['id']}", json={"router": {"enable_ndp_proxy": True}})
    assert on.status_code == 200, on.text
    wait_until(lambda: proxied(router) == {address}, 15, "the proxy to be published again")
    assert not pings(lab.external, stranger, count=2)

    # the proxy deleted: its address goes from the gateway at once
    assert api.delete(f"/v2.0/ndp_proxies/{proxy['id']}").status_code == 204
    wait_until(lambda: proxied(router) == set(), 15, "the proxy to go")
    run("ip", "-6", "neigh", "flush", "dev", "eth0", namespace=lab.external)
    assert not pings(lab.external, address, count=2)


def router_has(router: dict, address: str) -> bool:
    """The router's namespace has ``address`` (set up that far)."""
    ns = f"qrouter-{router['id']}"
    if ns not in run("ip", "netns", "list").stdout:
        return False
    return f" {address}/" in run("ip", "-6", "addr", "show", namespace=ns).stdout


def gateway_address(lab: Lab, router: dict) -> str:
    shown = lab.api.show("routers", router["id"])
    return next(ip["ip_address"] for ip in shown["external_gateway_info"]["external_fixed_ips"]
                if ":" in ip["ip_address"])


def test_a_namespace_made_so_and_back():
    """Applied twice, the second changes nothing; disabled, nothing of ours is
    left (the ip6tables filter table as it was)."""
    skip_unless_root("ip", "ip6tables", "sysctl")
    with sandbox() as box:
        ns = box.namespace("ndp")
        run("ip", "link", "add", QG, "type", "veth", "peer", "name", "peer0", namespace=ns)
        run("ip", "link", "set", QG, "up", namespace=ns)
        run("sysctl", "-q", "-w", "net.ipv6.conf.all.forwarding=1", namespace=ns)
        before = run("ip6tables-save", "-t", "filter", namespace=ns).stdout
        host = ndp_proxy.NdpProxies(ns)
        spec = ndp_proxy.Spec(QG, ("2001:db8:1::5", "2001:db8:1::6"), ("2001:db8:1::/64",))
        assert host.apply(spec)
        assert host.apply(spec) == []
        shown = run("ip", "-6", "neigh", "show", "proxy", "dev", QG, namespace=ns).stdout
        assert ndp_proxy.proxied(shown) == {"2001:db8:1::5", "2001:db8:1::6"}
        assert run("sysctl", "-n", f"net.ipv6.conf.{QG}.proxy_ndp",
                   namespace=ns).stdout.strip() == "1"
        # one address less: only it goes
        assert host.apply(ndp_proxy.Spec(QG, ("2001:db8:1::5",), ("2001:db8:1::/64",))) == [
            "firewall rules written", f"unpublished 2001:db8:1::6 on {QG}"]
        assert host.apply(ndp_proxy.Spec())
        assert ndp_proxy.proxied(run("ip", "-6", "neigh", "show", "proxy", "dev", QG,
                                     namespace=ns).stdout) == set()
        assert run("sysctl", "-n", f"net.ipv6.conf.{QG}.proxy_ndp",
                   namespace=ns).stdout.strip() == "0"

        def rules(saved: str) -> list[str]:
            return [line for line in saved.splitlines() if not line.startswith("#")]
        assert rules(run("ip6tables-save", "-t", "filter", namespace=ns).stdout) == rules(before)
