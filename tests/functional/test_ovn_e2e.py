"""ML2/OVN end to end: a neutrino server with ``mechanism_drivers = ovn`` writes
the logical network into a real OVN (``tests.ovn``: central databases,
ovn-northd, one ovn-controller per emulated chassis on the userspace
datapath), and instances on two chassis get their addresses from OVN's DHCP,
reach each other over Geneve, and are filtered by their security groups as
ACLs; no L2 or DHCP agent runs.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.dataplane import Sandbox, pings, run, sandbox, wait_until
from tests.harness import ApiClient, Server, start_server
from tests.ovn import (
    OvnCentral,
    OvnChassis,
    external_host,
    ovn_central,
    ovn_chassis,
    skip_unless_ovn,
    underlay,
)
from tests.ovs import ovs_host

pytestmark = pytest.mark.slow

ENCAP = ("192.168.78.1", "192.168.78.2", "192.168.78.3")
EXTERNAL_HOST = "172.24.4.1"
CIDR = "10.30.0.0/24"
LEASE_SCRIPT = """#!/bin/sh
case "$1" in
  bound|renew)
    ip addr replace "$ip/$mask" dev "$interface"
    [ -n "$router" ] && ip route replace default via "$router"
    echo "$ip $router $mask $mtu" > "{out}"
    ;;
esac
exit 0
"""


@dataclass
class Lab:
    box: Sandbox
    tmp: Path
    central: OvnCentral
    chassis: tuple[OvnChassis, OvnChassis]
    server: Server
    api: ApiClient
    admin: ApiClient
    external: str  # the external host's namespace

    def update_port(self, port_id: str, **attrs: Any) -> None:
        resp = self.api.put(f"/v2.0/ports/{port_id}", json={"port": attrs})
        assert resp.status_code == 200, resp.text

    def instance(self, name: str, network_id: str, chassis: OvnChassis,
                 **attrs: Any) -> tuple[dict[str, Any], str]:
        """A port bound to ``chassis`` and an instance (namespace) plugged into it,
        addressed by OVN's DHCP; the port once ACTIVE, and the namespace."""
        port = self.api.port(network_id, name=name, device_id=f"vm-{name}",
                             device_owner="compute:nova",
                             **{"binding:host_id": chassis.name}, **attrs)
        assert port["binding:vif_type"] == "ovs", port
        namespace = self.box.namespace(f"vm-{name}")
        chassis.plug(port["id"], namespace, port["mac_address"])
        wait_until(lambda: self.api.show("ports", port["id"])["status"] == "ACTIVE", 20,
                   lambda: f"port {name} ACTIVE\n{self.server.log.read_text()[-3000:]}")
        out = self.tmp / f"lease-{name}"
        script = self.tmp / "udhcpc.sh"
        script.write_text(LEASE_SCRIPT.format(out="$LEASE_FILE"))
        script.chmod(0o755)
        run("env", f"LEASE_FILE={out}", "udhcpc", "-i", "eth0", "-n", "-q", "-f", "-t", "5",
            "-T", "1", "-s", str(script), namespace=namespace, timeout=30)
        leased = out.read_text().split()
        assert leased[0] == port["fixed_ips"][0]["ip_address"], (leased, port)
        return port, namespace


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """Two compute chassis and a gateway chassis on one underlay; behind the
    gateway's br-ex an external host (``EXTERNAL_HOST``, the physical network's
    router); a server writing into OVN."""
    skip_unless_ovn("ping", "udhcpc", "socat", "nc")
    with sandbox() as box, ovn_central(tmp_path / "central") as central, \
            ovs_host(box.namespace("ch1"), tmp_path / "ch1", bridges=()) as ovs1, \
            ovs_host(box.namespace("ch2"), tmp_path / "ch2", bridges=()) as ovs2, \
            ovs_host(box.namespace("gw"), tmp_path / "gw", bridges=()) as ovs3:
        underlay(box.namespace("fabric"), [(ovs1, f"{ENCAP[0]}/24"), (ovs2, f"{ENCAP[1]}/24"),
                                           (ovs3, f"{ENCAP[2]}/24")])
        with ovn_chassis(ovs1, central, ENCAP[0]) as ch1, \
                ovn_chassis(ovs2, central, ENCAP[1]) as ch2, \
                ovn_chassis(ovs3, central, ENCAP[2], bridge_mappings={"physnet1": "br-ex"},
                            gateway=True) as gw:
            external = box.namespace("ext")
            external_host(ovs3, "br-ex", external, f"{EXTERNAL_HOST}/24")
            server = start_server(tmp_path, f"sqlite:///{tmp_path / 'neutrino.db'}", extra=(
                "agent_down_time = 8\nservice_plugins = ovn-router,port_forwarding\n"
                "[ml2]\nmechanism_drivers = ovn\ntenant_network_types = geneve\n"
                "extension_drivers = port_security\n"
                "[ml2_type_geneve]\nvni_ranges = 1:100\n"
                f"[ovn]\novn_nb_connection = {central.nb}\novn_sb_connection = {central.sb}\n"))
            try:
                api = server.client("p1")
                admin = server.client("p1", roles=("admin",))
                wait_until(lambda: {(a["agent_type"], a["host"])
                                    for a in admin.get("/v2.0/agents").json()["agents"]
                                    if a["alive"]}
                           == {("OVN Controller agent", ch1.name),
                               ("OVN Controller agent", ch2.name),
                               ("OVN Controller Gateway agent", gw.name)},
                           30, "the three chassis alive as agents")
                yield Lab(box, tmp_path, central, (ch1, ch2), server, api, admin, external)
            finally:
                server.stop()


def test_instances_on_two_chassis_get_dhcp_ping_and_are_filtered(lab: Lab):
    network = lab.api.network(name="web")
    assert network["provider:network_type"] == "geneve"
    assert network["mtu"] == 1442  # 1500 less Geneve's 38 and the outer IPv4 header
    subnet = lab.api.subnet(network["id"], CIDR)
    ch1, ch2 = lab.chassis
    a, vm_a = lab.instance("a", network["id"], ch1)
    b, vm_b = lab.instance("b", network["id"], ch2)
    b_ip = b["fixed_ips"][0]["ip_address"]
    # the default group lets members of the group in: a reaches b across chassis
    assert wait_until(lambda: pings(vm_a, b_ip), 10, "a ping from a to b")
    # b's switch port deleted behind the server's back: db-sync finds it, and repairs it
    lab.central.nbctl("lsp-del", b["id"])
    assert wait_until(lambda: not pings(vm_a, b_ip), 10, "b gone with its switch port")
    logged = db_sync(lab, "log")
    assert logged.returncode == 1, logged.stderr
    assert f"port {b['id']}: missing" in logged.stdout
    assert not pings(vm_a, b_ip)  # log mode changes nothing
    repaired = db_sync(lab, "repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert wait_until(lambda: pings(vm_a, b_ip), 15, "b back after the repair")
    assert db_sync(lab, "log").returncode == 0
    # b in a group of its own that lets nothing in: the running flow stops
    closed = lab.api.post("/v2.0/security-groups",
                          json={"security_group": {"name": "closed"}}).json()["security_group"]
    lab.update_port(b["id"], security_groups=[closed["id"]])
    assert wait_until(lambda: not pings(vm_a, b_ip), 10, "b closed to a")
    # a rule for ICMP from the subnet: it flows again
    rule = lab.api.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": closed["id"], "direction": "ingress", "protocol": "icmp",
        "remote_ip_prefix": CIDR}}).json()["security_group_rule"]
    assert wait_until(lambda: pings(vm_a, b_ip), 10, "b open to a's ping again")
    assert lab.api.delete(f"/v2.0/security-group-rules/{rule['id']}").status_code == 204
    assert wait_until(lambda: not pings(vm_a, b_ip), 10, "b closed again")
    # port security off: no group filters it
    lab.update_port(b["id"], security_groups=[], port_security_enabled=False)
    assert wait_until(lambda: pings(vm_a, b_ip), 10, "b unfiltered")
    assert subnet["gateway_ip"] == "10.30.0.1"


def db_sync(lab: Lab, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "neutrino.cmd.ovn_db_sync", "--config-file",
         str(lab.server.conf), "--mode", mode], capture_output=True, text=True, timeout=60)


def source_seen_by_external_host(lab: Lab, namespace: str) -> str:
    """The address a TCP connection from ``namespace`` comes from, as the
    external host sees it (a listener that answers with its peer's address)."""
    listener = subprocess.Popen(
        ["ip", "netns", "exec", lab.external, "socat", "-T", "5",
         "TCP-LISTEN:8080,reuseaddr", "SYSTEM:echo $SOCAT_PEERADDR"])
    try:
        def answer() -> str:
            return run("nc", "-w", "2", EXTERNAL_HOST, "8080", namespace=namespace,
                       check=False, timeout=10).stdout.strip()
        seen = ""
        for _ in range(20):
            seen = answer()
            if seen:
                break
        return seen
    finally:
        listener.kill()
        listener.wait()


def test_a_router_routes_snats_serves_floating_ips_and_forwards_ports(lab: Lab):
    public = lab.admin.network(name="public", **{
        "router:external": True, "provider:network_type": "flat",
        "provider:physical_network": "physnet1"})
    lab.admin.subnet(public["id"], "172.24.4.0/24", gateway_ip=EXTERNAL_HOST, enable_dhcp=False,
                     allocation_pools=[{"start": "172.24.4.10", "end": "172.24.4.100"}])
    left, right = lab.api.network(name="left"), lab.api.network(name="right")
    left_subnet = lab.api.subnet(left["id"], "10.30.1.0/24")
    right_subnet = lab.api.subnet(right["id"], "10.30.2.0/24")
    router = lab.api.create("routers", name="r", external_gateway_info={
        "network_id": public["id"]})
    for subnet in (left_subnet, right_subnet):
        resp = lab.api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                           json={"subnet_id": subnet["id"]})
        assert resp.status_code == 200, resp.text
    gateway_ip = router["external_gateway_info"]["external_fixed_ips"][0]["ip_address"]
    ch1, ch2 = lab.chassis
    a, vm_a = lab.instance("a", left["id"], ch1)
    b, vm_b = lab.instance("b", right["id"], ch2)
    b_ip = b["fixed_ips"][0]["ip_address"]
    # east-west, between the router's two networks, across chassis
    assert wait_until(lambda: pings(vm_a, b_ip), 15, "a reaches b through the router")
    # north: SNAT to the router's gateway address
    assert wait_until(lambda: pings(vm_a, EXTERNAL_HOST), 15, "a reaches the external host")
    assert source_seen_by_external_host(lab, vm_a) == gateway_ip
    # a floating IP, both ways (b's group lets the world ping it)
    resp = lab.api.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": b["security_groups"][0], "direction": "ingress",
        "protocol": "icmp", "remote_ip_prefix": "0.0.0.0/0"}})
    assert resp.status_code == 201, resp.text
    fip = lab.api.create("floatingips", floating_network_id=public["id"], port_id=b["id"])
    address = fip["floating_ip_address"]
    assert wait_until(lambda: pings(lab.external, address), 15, lambda: (
        "the floating IP answers\n" + lab.central.nbctl("show") + lab.central.nbctl(
            "list", "NAT") + run("ip", "neigh", namespace=lab.external).stdout))
    assert source_seen_by_external_host(lab, vm_b) == address
    # taken away, it answers no more; given back, it does again
    for port_id in (None, b["id"]):
        resp = lab.api.put(f"/v2.0/floatingips/{fip['id']}",
                           json={"floatingip": {"port_id": port_id}})
        assert resp.status_code == 200, resp.text
        wanted = port_id is not None
        assert wait_until(lambda wanted=wanted: pings(lab.external, address) == wanted, 15,
                          f"the floating IP {'back' if wanted else 'gone'}")
    # a port forwarding (an OVN load balancer on the router): the external
    # host's TCP to another floating IP's port 8080 reaches a's port 80
    resp = lab.api.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": a["security_groups"][0], "direction": "ingress",
        "protocol": "tcp", "port_range_min": 80, "port_range_max": 80}})
    assert resp.status_code == 201, resp.text
    forwarded = lab.api.create("floatingips", floating_network_id=public["id"])
    resp = lab.api.post(f"/v2.0/floatingips/{forwarded['id']}/port_forwardings", json={
        "port_forwarding": {"protocol": "tcp", "internal_port_id": a["id"],
                            "internal_ip_address": a["fixed_ips"][0]["ip_address"],
                            "internal_port": 80, "external_port": 8080}})
    assert resp.status_code == 201, resp.text
    listener = subprocess.Popen(["ip", "netns", "exec", vm_a, "socat",
                                 "TCP-LISTEN:80,reuseaddr,fork", "SYSTEM:echo instance-a"])
    try:
        assert wait_until(lambda: run(
            "nc", "-w", "2", forwarded["floating_ip_address"], "8080", namespace=lab.external,
            check=False, timeout=10).stdout.strip() == "instance-a", 20,
            "the forwarded port answering")
    finally:
        listener.kill()
        listener.wait()
    # OVN's flows outlive ovn-controller and the server, both killed
    ch2.kill9()
    lab.server.proc.kill()
    lab.server.proc.wait()
    assert pings(vm_a, b_ip, count=3) and pings(lab.external, address, count=3)
    ch2.start_controller()
    assert pings(vm_a, b_ip, count=3) and pings(lab.external, address, count=3)
