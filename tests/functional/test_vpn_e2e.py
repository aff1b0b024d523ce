"""VPNaaS end to end: the server with the vpnaas plugin, an emulated host with
its Linux bridge agent and its L3 agent running the ``vpnaas`` extension, two
routers on one external network, each with a private subnet and an
instance, and a site connection each way. The kernel here has no ESP, so
charon encrypts in userspace (the mode the agent detects). Root only:
everything happens in namespaces the test makes and removes."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator

import pytest

from tests.dataplane import pings, run, sandbox, skip_unless_root, wait_until
from tests.functional.emulated_hosts import PHYSNET, Deployment
from tests.functional.test_l3_e2e import LB, Lab, address, instance, tenant_subnet

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    shutil.which("charon-systemd") is None or shutil.which("swanctl") is None,
    reason="needs strongSwan (Debian's charon-systemd, strongswan-swanctl, "
           "libcharon-extra-plugins)")]

L3 = "L3 agent"
VPN = "/v2.0/vpn"
EXTENSIONS = "extensions = vpnaas\n[vpnagent]\nstatus_interval = 2\n"
SINGULAR = {"ikepolicies": "ikepolicy", "ipsecpolicies": "ipsecpolicy",
            "vpnservices": "vpnservice", "endpoint-groups": "endpoint_group",
            "ipsec-site-connections": "ipsec_site_connection"}


@pytest.fixture
def lab(tmp_path, rabbit_url) -> Iterator[Lab]:
    skip_unless_root("ip", "ping", "iptables", "conntrack")
    with sandbox() as box:
        d = Deployment(box, tmp_path, rabbit_url, server_extra=(
            "[DEFAULT]\nservice_plugins = router,vpnaas\n"))
        try:
            host = d.add_host("h1", 1)
            d.start_l2_agent("h1", firewall="noop")
            l3 = d.start_l3_agent("h1", text=EXTENSIONS)
            ext_net = d.api.network(**{"router:external": True,
                                       "provider:network_type": "flat",
                                       "provider:physical_network": PHYSNET})
            d.api.subnet(ext_net["id"], "203.0.113.0/24", gateway_ip="203.0.113.1",
                         enable_dhcp=False)
            for agent_type in (LB, L3):
                wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, f"the {agent_type}")
            yield Lab(d, host, "", ext_net, l3)
        finally:
            d.close()


def made(lab: Lab, kind: str, **attrs) -> dict:
    resp = lab.api.post(f"{VPN}/{kind}", json={SINGULAR[kind]: attrs})
    assert resp.status_code == 201, resp.text
    return resp.json()[SINGULAR[kind]]


def shown(lab: Lab, kind: str, item_id: str) -> dict:
    return lab.api.get(f"{VPN}/{kind}/{item_id}").json()[SINGULAR[kind]]


def site(lab: Lab, name: str, cidr: str) -> dict:
    """A router with a gateway and a subnet with an instance behind it, and
    a VPN service on the router."""
    router = lab.api.create("routers", name=name, external_gateway_info={
        "network_id": lab.ext_net["id"]})
    net, subnet = tenant_subnet(lab, cidr)
    resp = lab.api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                       json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    port, inst = instance(lab, net, subnet, name)
    service = made(lab, "vpnservices", router_id=router["id"], name=name)
    local = made(lab, "endpoint-groups", type="subnet", endpoints=[subnet["id"]])
    return {"router": router, "subnet": subnet, "port": port, "inst": inst,
            "service": service, "local": local}


def connect(lab: Lab, here: dict, there: dict, ike: dict, ipsec: dict) -> dict:
    peer_ip = shown(lab, "vpnservices", there["service"]["id"])["external_v4_ip"]
    peer = made(lab, "endpoint-groups", type="cidr", endpoints=[there["subnet"]["cidr"]])
    return made(lab, "ipsec-site-connections", vpnservice_id=here["service"]["id"],
                ikepolicy_id=ike["id"], ipsecpolicy_id=ipsec["id"], peer_address=peer_ip,
                peer_id=peer_ip, psk="a secret both sides know",
                local_ep_group_id=here["local"]["id"], peer_ep_group_id=peer["id"],
                dpd={"action": "restart", "interval": 2, "timeout": 6})


def status(lab: Lab, connection: dict) -> str:
    return shown(lab, "ipsec-site-connections", connection["id"])["status"]


def outside_counts(lab: Lab, site_: dict) -> dict[str, int]:
    """Packets the router sent out of its gateway: plain ICMP, ESP in UDP."""
    saved = run("iptables-save", "-c", "-t", "mangle",
                namespace=f"qrouter-{site_['router']['id']}").stdout
    found = {}
    for line in saved.splitlines():
        for kind in ("icmp", "natt"):
            if f"--comment vpn-test-{kind}" in line:
                found[kind] = int(line.split("[", 1)[1].split(":")[0])
    return found


def count_outside(lab: Lab, site_: dict) -> None:
    namespace = f"qrouter-{site_['router']['id']}"
    gateway = next(line.split()[1].rstrip(":") for line in run(
        "ip", "-o", "link", namespace=namespace).stdout.splitlines()
        if line.split()[1].startswith("qg-"))
    for kind, match in (("icmp", ["-p", "icmp"]), ("natt", ["-p", "udp", "--dport", "4500"])):
        run("iptables", "-t", "mangle", "-A", "POSTROUTING", "-o", gateway.split("@")[0],
            *match, "-m", "comment", "--comment", f"vpn-test-{kind}", namespace=namespace)


def test_two_sites_tunnel_their_subnets(lab: Lab):
    left, right = site(lab, "left", "10.95.0.0/24"), site(lab, "right", "10.96.0.0/24")
    ike, ipsec = made(lab, "ikepolicies", name="ike"), made(lab, "ipsecpolicies", name="esp")
    started = time.monotonic()
    there = connect(lab, left, right, ike, ipsec)
    back = connect(lab, right, left, ike, ipsec)
    wait_until(lambda: pings(left["inst"], address(right["port"]), wait=1), 60,
               "a ping across the tunnel")
    print(f"first ping across the tunnel {time.monotonic() - started:.1f} s after the "
          "connections were made")
    wait_until(lambda: status(lab, there) == status(lab, back) == "ACTIVE", 30,
               "both connections ACTIVE")
    assert pings(right["inst"], address(left["port"]))

    # what leaves the gateway towards the other site is ESP in UDP, not ICMP
    count_outside(lab, left)
    assert pings(left["inst"], address(right["port"]))
    counts = outside_counts(lab, left)
    assert counts["natt"] >= 1 and counts["icmp"] == 0, counts

    # one side's connection goes: the other side is DOWN, and pings stop
    assert lab.api.delete(f"{VPN}/ipsec-site-connections/{back['id']}").status_code == 204
    wait_until(lambda: status(lab, there) == "DOWN", 60, "the other side to go DOWN")
    assert not pings(left["inst"], address(right["port"]), wait=1)

    # and comes back; an L3 agent killed and started again keeps or restores it
    back = connect(lab, right, left, ike, ipsec)
    wait_until(lambda: pings(left["inst"], address(right["port"]), wait=1), 60,
               "the tunnel to come back")
    lab.l3.kill()
    lab.l3.wait()
    lab.l3 = lab.d.start_l3_agent("h1", text=EXTENSIONS)
    wait_until(lambda: "full sync done" in lab.d.log("h1-neutrino-l3-agent"), 30,
               "the restarted agent's sync")
    wait_until(lambda: pings(left["inst"], address(right["port"]), wait=1), 60,
               "the tunnel after the restart")
    wait_until(lambda: status(lab, there) == status(lab, back) == "ACTIVE", 30,
               "both connections ACTIVE after the restart")
