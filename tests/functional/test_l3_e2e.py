"""The L3 agent end to end: an emulated host with the Linux bridge and L3
agents, instances on VXLAN networks behind routers, and an "external host" on
the flat external network (physnet1's wire) that plays the upstream gateway.
Root only: everything happens in namespaces the tests make and remove."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from neutrino.linux import radvd
from tests.dataplane import pings, run, sandbox, skip_unless_root, wait_until
from tests.functional.emulated_hosts import PHYSNET, Deployment

pytestmark = pytest.mark.slow

LB, L3 = "Linux bridge agent", "L3 agent"
EXTERNAL_CIDR, UPSTREAM = "203.0.113.0/24", "203.0.113.1"
LISTEN = 7000  # the external host's "who are you" service
SERVICE = 80  # the instances' "who am I" service
#: radvd's advertisements every 3 to 10 s (Neutron's 30 to 100 s would be slow)
RA_INTERVALS = "min_rtr_adv_interval = 3\nmax_rtr_adv_interval = 10\n"


@dataclass
class Lab:
    d: Deployment
    host: str  # the host's namespace
    external: str  # the external host's namespace
    ext_net: dict
    l3: subprocess.Popen

    @property
    def api(self):
        return self.d.api


@pytest.fixture
def lab(tmp_path, rabbit_url) -> Iterator[Lab]:
    skip_unless_root("ip", "socat", "ping", "nc", "iptables", "conntrack")
    with sandbox() as box:
        d = Deployment(box, tmp_path, rabbit_url,
                       server_extra="[DEFAULT]\nservice_plugins = router,port_forwarding\n")
        try:
            host = d.add_host("h1", 1)
            d.start_l2_agent("h1", firewall="noop")
            l3 = d.start_l3_agent("h1", RA_INTERVALS)
            external = d.add_external_host(f"{UPSTREAM}/24")
            d.serve_tcp(external, LISTEN, "echo $SOCAT_PEERADDR")
            ext_net = d.api.network(**{"router:external": True,
                                       "provider:network_type": "flat",
                                       "provider:physical_network": PHYSNET})
            d.api.subnet(ext_net["id"], EXTERNAL_CIDR, gateway_ip=UPSTREAM, enable_dhcp=False,
                         allocation_pools=[{"start": "203.0.113.10", "end": "203.0.113.200"}])
            for agent_type in (LB, L3):
                wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, f"the {agent_type}")
            yield Lab(d, host, external, ext_net, l3)
        finally:
            d.close()


def ask(namespace: str, address: str, port: int) -> str:
    """What the TCP service at address:port says to ``namespace`` ('' if none)."""
    done = subprocess.run(["ip", "netns", "exec", namespace, "socat", "-T", "2", "-",
                           f"TCP:{address}:{port},connect-timeout=1"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
    return done.stdout.strip()


def said(namespace: str, address: str, port: int, expected: str, seconds: float = 20) -> None:
    last = [""]

    def check() -> bool:
        last[0] = ask(namespace, address, port)
        return last[0] == expected
    wait_until(check, seconds, lambda: f"{address}:{port} to say {expected} (said {last[0]!r})")


def router_with_gateway(lab: Lab, **extra) -> dict:
    return lab.api.create("routers", name=f"r-{uuid.uuid4().hex[:6]}", external_gateway_info={
        "network_id": lab.ext_net["id"]}, **extra)


def tenant_subnet(lab: Lab, cidr: str) -> tuple[dict, dict]:
    net = lab.api.network()
    return net, lab.api.subnet(net["id"], cidr)


def add_interface(lab: Lab, router: dict, subnet: dict) -> None:
    resp = lab.api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                       json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text


def instance(lab: Lab, net: dict, subnet: dict, name: str, host: str = "h1"
             ) -> tuple[dict, str]:
    """A port plugged on ``host`` as an instance with its address and default
    route set by hand, answering its name on port 80."""
    port = lab.api.port(net["id"])
    lab.d.plug(host, port["id"])
    ns = f"inst-{port['id'][:11]}"
    prefix = subnet["cidr"].split("/")[1]
    run("ip", "addr", "add", f"{port['fixed_ips'][0]['ip_address']}/{prefix}", "dev", "eth0",
        namespace=ns)
    run("ip", "route", "add", "default", "via", subnet["gateway_ip"], namespace=ns)
    lab.d.serve_tcp(ns, SERVICE, f"echo {name}")
    return port, ns


def address(port: dict) -> str:
    return port["fixed_ips"][0]["ip_address"]


def gateway_ip(lab: Lab, router: dict) -> str:
    shown = lab.api.show("routers", router["id"])
    return shown["external_gateway_info"]["external_fixed_ips"][0]["ip_address"]


def fip_status(lab: Lab, fip: dict) -> str:
    return lab.api.show("floatingips", fip["id"])["status"]


def associate(lab: Lab, fip: dict, port_id: str | None) -> None:
    resp = lab.api.put(f"/v2.0/floatingips/{fip['id']}",
                       json={"floatingip": {"port_id": port_id}})
    assert resp.status_code == 200, resp.text


def nat_rules(router: dict) -> str:
    """The router's NAT table, as iptables-save shows it."""
    return run("iptables-save", "-t", "nat", namespace=f"qrouter-{router['id']}").stdout


def namespaces() -> list[str]:
    return run("ip", "netns", "list").stdout.split()


# --- the tests ------------------------------------------------------------------------------

def test_snat_and_floating_ips(lab: Lab):
    """Out through SNAT (the external host sees the gateway's address); in
    through a floating IP, which goes with disassociation and moves with
    re-association, its status following."""
    router = router_with_gateway(lab)
    net, subnet = tenant_subnet(lab, "10.31.0.0/24")
    add_interface(lab, router, subnet)
    port_a, inst_a = instance(lab, net, subnet, "a")
    port_b, inst_b = instance(lab, net, subnet, "b")
    snat = gateway_ip(lab, router)
    assert f"qrouter-{router['id']}" in namespaces()
    said(inst_a, UPSTREAM, LISTEN, snat)

    fip = lab.api.create("floatingips", floating_network_id=lab.ext_net["id"],
                         port_id=port_a["id"])
    fip_ip = fip["floating_ip_address"]
    said(lab.external, fip_ip, SERVICE, "a")
    said(inst_a, UPSTREAM, LISTEN, fip_ip)  # a speaks as its floating IP now
    assert ask(inst_b, UPSTREAM, LISTEN) == snat  # b still through SNAT
    said(inst_b, fip_ip, SERVICE, "a")  # hairpin: an instance to a floating IP
    wait_until(lambda: fip_status(lab, fip) == "ACTIVE", 10, "the floating IP ACTIVE")

    associate(lab, fip, None)
    wait_until(lambda: not pings(lab.external, fip_ip), 10, "the floating IP to go")
    assert ask(lab.external, fip_ip, SERVICE) == ""
    said(inst_a, UPSTREAM, LISTEN, snat)
    wait_until(lambda: fip_status(lab, fip) == "DOWN", 10, "the floating IP DOWN")

    associate(lab, fip, port_b["id"])
    said(lab.external, fip_ip, SERVICE, "b")
    wait_until(lambda: fip_status(lab, fip) == "ACTIVE", 10, "the floating IP ACTIVE again")

    # the port deleted: its floating IP leaves the router at once (not at the
    # agent's periodic resync)
    assert lab.api.delete(f"/v2.0/ports/{port_b['id']}").status_code == 204
    started = time.monotonic()
    wait_until(lambda: address(port_b) not in nat_rules(router), 5,
               "the deleted port's floating IP to leave the router")
    print(f"a deleted port's floating IP left the router in "
          f"{time.monotonic() - started:.2f} s")
    wait_until(lambda: fip_status(lab, fip) == "DOWN", 10, "the floating IP DOWN")


def test_subnets_of_one_router_route_to_each_other_not_to_another_router(lab: Lab):
    r1 = lab.api.create("routers", name="inside")
    r2 = lab.api.create("routers", name="elsewhere")
    net1, sub1 = tenant_subnet(lab, "10.41.0.0/24")
    net2, sub2 = tenant_subnet(lab, "10.42.0.0/24")
    net3, sub3 = tenant_subnet(lab, "10.43.0.0/24")
    add_interface(lab, r1, sub1)
    add_interface(lab, r1, sub2)
    add_interface(lab, r2, sub3)
    _, inst_a = instance(lab, net1, sub1, "a")
    port_b, _ = instance(lab, net2, sub2, "b")
    port_c, inst_c = instance(lab, net3, sub3, "c")
    said(inst_a, address(port_b), SERVICE, "b")  # the peer's own address: no NAT inside
    assert wait_until(lambda: pings(inst_c, sub3["gateway_ip"]), 15, "c's router")
    assert not pings(inst_a, address(port_c))
    assert ask(inst_a, address(port_c), SERVICE) == ""

    # a router set administratively down is taken off the host
    assert lab.api.put(f"/v2.0/routers/{r2['id']}", json={"router": {
        "admin_state_up": False}}).status_code == 200
    wait_until(lambda: f"qrouter-{r2['id']}" not in namespaces(), 15, "r2's namespace to go")
    assert wait_until(lambda: not pings(inst_c, sub3["gateway_ip"]), 5, "c's router gone")


def test_an_instance_on_another_host_goes_out_through_the_router(lab: Lab):
    """The router on h1, the instance on h2: across VXLAN, both ways."""
    lab.d.add_host("h2", 2)
    lab.d.start_l2_agent("h2", firewall="noop")
    wait_until(lambda: lab.d.agent_alive("h2", LB), 30, "h2's L2 agent")
    router = router_with_gateway(lab)
    net, subnet = tenant_subnet(lab, "10.71.0.0/24")
    add_interface(lab, router, subnet)
    port, inst = instance(lab, net, subnet, "remote", host="h2")
    said(inst, UPSTREAM, LISTEN, gateway_ip(lab, router))
    fip = lab.api.create("floatingips", floating_network_id=lab.ext_net["id"],
                         port_id=port["id"])
    said(lab.external, fip["floating_ip_address"], SERVICE, "remote")


def test_port_forwarding(lab: Lab):
    router = router_with_gateway(lab)
    net, subnet = tenant_subnet(lab, "10.51.0.0/24")
    add_interface(lab, router, subnet)
    port_a, inst_a = instance(lab, net, subnet, "a")
    fip = lab.api.create("floatingips", floating_network_id=lab.ext_net["id"])
    resp = lab.api.post(f"/v2.0/floatingips/{fip['id']}/port_forwardings", json={
        "port_forwarding": {"protocol": "tcp", "internal_port_id": port_a["id"],
                            "internal_ip_address": address(port_a),
                            "internal_port": SERVICE, "external_port": 8080}})
    assert resp.status_code == 201, resp.text
    forwarding = resp.json()["port_forwarding"]
    said(lab.external, fip["floating_ip_address"], 8080, "a")
    assert ask(lab.external, fip["floating_ip_address"], SERVICE) == ""  # only that port

    resp = lab.api.delete(f"/v2.0/floatingips/{fip['id']}/port_forwardings/"
                          f"{forwarding['id']}")
    assert resp.status_code == 204, resp.text
    wait_until(lambda: ask(lab.external, fip["floating_ip_address"], 8080) == "", 10,
               "the forwarding to go")

    # a forwarding whose internal port is deleted goes with it, from the router
    # too, at once (not at the agent's periodic resync)
    resp = lab.api.post(f"/v2.0/floatingips/{fip['id']}/port_forwardings", json={
        "port_forwarding": {"protocol": "tcp", "internal_port_id": port_a["id"],
                            "internal_ip_address": address(port_a),
                            "internal_port": SERVICE, "external_port": 8081}})
    assert resp.status_code == 201, resp.text
    said(lab.external, fip["floating_ip_address"], 8081, "a")
    assert address(port_a) in nat_rules(router)
    assert lab.api.delete(f"/v2.0/ports/{port_a['id']}").status_code == 204
    started = time.monotonic()
    wait_until(lambda: address(port_a) not in nat_rules(router), 5,
               "the deleted port's forwarding to leave the router")
    print(f"a deleted port's forwarding left the router in {time.monotonic() - started:.2f} s")

    # the external subnet's gateway moves: the router's default route follows at once
    [ext_subnet] = lab.api.get("/v2.0/subnets", params={
        "network_id": lab.ext_net["id"]}).json()["subnets"]
    moved = lab.api.put(f"/v2.0/subnets/{ext_subnet['id']}", json={"subnet": {
        "gateway_ip": "203.0.113.254"}})
    assert moved.status_code == 200, moved.text
    started = time.monotonic()
    wait_until(lambda: "default via 203.0.113.254 " in run(
        "ip", "route", namespace=f"qrouter-{router['id']}").stdout, 5,
        "the router's default route to follow its subnet's gateway")
    print(f"a subnet's new gateway reached the router in {time.monotonic() - started:.2f} s")


def test_agent_restart_keeps_traffic_and_cleans_up(lab: Lab):
    """Killed, the agent leaves the routers working; restarted, it converges:
    what changed meanwhile is applied, a router deleted meanwhile goes."""
    router = router_with_gateway(lab)
    net, subnet = tenant_subnet(lab, "10.61.0.0/24")
    add_interface(lab, router, subnet)
    port_a, inst_a = instance(lab, net, subnet, "a")
    fip = lab.api.create("floatingips", floating_network_id=lab.ext_net["id"],
                         port_id=port_a["id"])
    fip_ip = fip["floating_ip_address"]
    said(lab.external, fip_ip, SERVICE, "a")
    doomed = lab.api.create("routers", name="doomed")
    wait_until(lambda: f"qrouter-{doomed['id']}" in namespaces(), 15, "the second router")

    # a ping every 0.1 s from the external host to the instance, across the restart
    pinger = subprocess.Popen(["ip", "netns", "exec", lab.external, "ping", "-i", "0.1",
                               "-W", "1", fip_ip], stdout=subprocess.PIPE, text=True)
    try:
        lab.l3.kill()
        lab.l3.wait()
        assert lab.api.delete(f"/v2.0/routers/{doomed['id']}").status_code == 204
        said(lab.external, fip_ip, SERVICE, "a", 5)  # still there, agent gone
        lab.l3 = lab.d.start_l3_agent("h1")
        wait_until(lambda: f"qrouter-{doomed['id']}" not in namespaces(), 20,
                   "the deleted router's namespace to go")
        said(lab.external, fip_ip, SERVICE, "a", 5)
    finally:
        pinger.terminate()
        out, _ = pinger.communicate(timeout=5)
    replies = sum(1 for line in out.splitlines() if "bytes from" in line)
    sequence = [int(part.split("=")[1]) for line in out.splitlines()
                for part in line.split() if part.startswith("icmp_seq=")]
    assert sequence, out
    assert replies >= max(sequence) - 2, f"lost pings across the restart:\n{out}"
    assert f"qrouter-{router['id']}" in namespaces()


@pytest.mark.skipif(shutil.which("radvd") is None,
                    reason="needs radvd on PATH (Debian's radvd): the router's "
                           "advertisements come from it")
def test_slaac_from_the_routers_advertisements(lab: Lab):
    """An instance on an IPv6 SLAAC subnet makes exactly its port's
    address from the router's advertisements (radvd) and reaches the router;
    radvd goes with the router's last IPv6 interface."""
    router = lab.api.create("routers", name="v6")
    net = lab.api.network()
    subnet = lab.api.subnet(net["id"], "2001:db8:77::/64",  # no DHCP agent: RAs from radvd only
                            ipv6_ra_mode="slaac", ipv6_address_mode="slaac")
    add_interface(lab, router, subnet)
    port = lab.api.port(net["id"])
    [expected] = [ip["ip_address"] for ip in port["fixed_ips"]]
    state = str(lab.d.tmp / "h1" / "l3" / router["id"])
    wait_until(lambda: radvd.radvd_pid(state) is not None, 20, "the router's radvd")
    assert lab.d.plug("h1", port["id"], dhcp=True) == expected
    shown = run("ip", "-6", "-o", "addr", "show", "dev", "eth0", "scope", "global",
                namespace=f"inst-{port['id'][:11]}").stdout.split()
    assert [shown[i + 1] for i, word in enumerate(shown) if word == "inet6"] == [
        f"{expected}/64"]
    assert wait_until(lambda: pings(f"inst-{port['id'][:11]}", subnet["gateway_ip"]), 15,
                      "the router's IPv6 address")

    # radvd killed: the agent starts it again at once (its periodic check of its
    # daemons is a minute away, its resync ten)
    killed = radvd.radvd_pid(state)
    os.kill(killed, signal.SIGKILL)
    started = time.monotonic()
    # (measured 0.4 s; 10 s: a daemon's start-up on a loaded CI machine)
    wait_until(lambda: radvd.radvd_pid(state) not in (None, killed), 10,
               "radvd to be started again")
    print(f"a killed radvd ran again in {time.monotonic() - started:.2f} s")

    resp = lab.api.put(f"/v2.0/routers/{router['id']}/remove_router_interface",
                       json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    wait_until(lambda: radvd.radvd_pid(state) is None, 15, "radvd to go")
    assert f"qrouter-{router['id']}" in namespaces()


def test_removing_an_interface_logs_no_error(lab: Lab):
    """``router remove subnet``: the L3 agent takes the qr- device away while the
    Linux bridge agent may be wiring or unwiring its tap; a device or port gone
    in between is the desired state, not an error in either agent's log."""
    router = router_with_gateway(lab)
    net, subnet = tenant_subnet(lab, "10.77.0.0/24")
    add_interface(lab, router, subnet)
    instance(lab, net, subnet, "a")
    [port] = lab.api.get("/v2.0/ports", params={"device_id": router["id"],
                                                "network_id": net["id"]}).json()["ports"]
    namespace, device = f"qrouter-{router['id']}", f"qr-{port['id'][:11]}"

    def has_device() -> bool:
        return run("ip", "link", "show", device, namespace=namespace,
                   check=False).returncode == 0

    wait_until(has_device, 20, "the router's qr- device")
    wait_until(lambda: lab.api.show("ports", port["id"])["status"] == "ACTIVE", 20,
               "the router port to be ACTIVE")
    resp = lab.api.put(f"/v2.0/routers/{router['id']}/remove_router_interface",
                       json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    wait_until(lambda: not has_device(), 20, "the qr- device to go")
    time.sleep(3)  # the L2 agent's scan (polling_interval 1 s) has seen the tap go
    for agent in ("neutrino-l3-agent", "neutrino-linuxbridge-agent"):
        log = lab.d.log(f"h1-{agent}")
        assert "Traceback" not in log and " ERROR " not in log, f"{agent}:\n{log[-4000:]}"
