"""``RouterDataplane`` on real namespaces, without a server: what a router is
on the host, and that converging is a round trip (A, then B, then A again
leaves the host as A left it; a new object, as after an agent restart, finds
nothing to fix). Root only."""

from __future__ import annotations

import dataclasses
import re
import uuid

import pytest

from neutrino.linux import nat
from neutrino.linux.interface import LinuxBridgeInterfaceDriver
from neutrino.linux.router import HaSettings, Port, Router, RouterDataplane, namespace_name
from tests.dataplane import run, sandbox, skip_unless_root, wait_until


@pytest.fixture
def setup(tmp_path):
    skip_unless_root("ip", "iptables", "conntrack")
    with sandbox() as box:
        host = box.namespace("host")
        router_id = str(uuid.uuid4())
        box.adopt(namespace_name(router_id))
        dataplane = RouterDataplane(str(tmp_path / "l3"), LinuxBridgeInterfaceDriver(host),
                                    arp_count=0)
        yield dataplane, host, router_id


def spec_a(router_id: str) -> Router:
    return Router(
        id=router_id,
        interfaces=(Port("aaaaaaaaaaa-1", "fa:16:3e:00:00:0a", 1450, ("10.1.0.1/24",)),
                    Port("bbbbbbbbbbb-2", "fa:16:3e:00:00:0b", 1450,
                         ("10.2.0.1/24", "2001:db8:2::1/64"))),
        gateway=Port("ggggggggggg-3", "fa:16:3e:00:00:0c", 1500,
                     ("203.0.113.10/24", "203.0.113.20/32")),
        routes=(("0.0.0.0/0", "203.0.113.1"), ("192.168.9.0/24", "10.1.0.254")),
        nat=nat.RouterNat(gateway="qg-ggggggggggg", snat_address="203.0.113.10",
                          floating_ips=(nat.FloatingIp("203.0.113.20", "10.1.0.5"),)))


def spec_b(router_id: str) -> Router:
    """One interface gone, the floating IP on another address, another route, no SNAT."""
    a = spec_a(router_id)
    return dataclasses.replace(
        a, interfaces=a.interfaces[:1],
        routes=(("0.0.0.0/0", "203.0.113.1"), ("192.168.8.0/24", "10.1.0.253")),
        nat=dataclasses.replace(a.nat, snat_address=None,
                                floating_ips=(nat.FloatingIp("203.0.113.20", "10.1.0.6"),)))


def _sorted(text: str) -> str:
    """Lines in order, without peer interface indexes (``qr-x@if9``)."""
    return "\n".join(sorted(re.sub(r"@if\d+", "", " ".join(line.split()))
                            for line in text.splitlines()))


def snapshot(namespace: str) -> dict[str, str]:
    """The router's host state that serve manages, as text (not interface
    indexes: a device made again is the same device)."""
    def show(*argv: str) -> str:
        return _sorted(run(*argv, namespace=namespace).stdout)

    return {
        "links": show("ip", "-br", "link"),
        "mtus": _sorted("\n".join(f"{line.split(': ')[1].split('@')[0]} mtu "
                                  f"{line.split(' mtu ')[1].split()[0]}"
                                  for line in run("ip", "-o", "link", namespace=namespace)
                                  .stdout.splitlines())),
        "addresses": show("ip", "-br", "addr"),
        "routes": show("ip", "route") + "\n" + show("ip", "-6", "route"),
        "iptables": "\n".join(line for line in run("iptables-save", namespace=namespace)
                              .stdout.splitlines() if not line.startswith("#")),
    }


def test_a_router_on_the_host(setup):
    dataplane, host, router_id = setup
    ns = namespace_name(router_id)
    dataplane.serve(spec_a(router_id))
    assert dataplane.present() == {router_id}
    assert run("ip", "netns", "exec", ns, "sysctl", "-n", "net.ipv4.ip_forward").stdout.strip() \
        == "1"
    state = snapshot(ns)
    for expected in ("qr-aaaaaaaaaaa", "qr-bbbbbbbbbbb", "qg-ggggggggggg"):
        assert expected in state["links"]
    assert "fa:16:3e:00:00:0a" in state["links"]
    assert "qr-aaaaaaaaaaa mtu 1450" in state["mtus"]
    for cidr in ("10.1.0.1/24", "10.2.0.1/24", "2001:db8:2::1/64", "203.0.113.10/24",
                 "203.0.113.20/32"):
        assert f" {cidr}" in state["addresses"]
    assert "default via 203.0.113.1 dev qg-ggggggggggg" in state["routes"]
    assert "192.168.9.0/24 via 10.1.0.254 dev qr-aaaaaaaaaaa" in state["routes"]
    assert "-A neutrino-l3-PRE -d 203.0.113.20/32 -j DNAT --to-destination 10.1.0.5" \
        in state["iptables"]
    assert "-A POSTROUTING -j neutrino-l3-POST" in state["iptables"]
    taps = run("ip", "-o", "link", namespace=host).stdout
    assert "tapaaaaaaaaaaa" in taps and "tapggggggggggg" in taps

    dataplane.serve(spec_b(router_id))
    changed = snapshot(ns)
    assert "qr-bbbbbbbbbbb" not in changed["links"]
    assert "tapbbbbbbbbbbb" not in run("ip", "-o", "link", namespace=host).stdout
    assert "192.168.9.0/24" not in changed["routes"]
    assert "192.168.8.0/24 via 10.1.0.253" in changed["routes"]
    assert "--to-destination 10.1.0.6" in changed["iptables"]
    assert "-o qg-ggggggggggg -j SNAT" not in changed["iptables"]

    dataplane.serve(spec_a(router_id))
    assert snapshot(ns) == state  # the round trip

    restarted = RouterDataplane(dataplane.state_dir, dataplane.driver, arp_count=0)
    restarted.serve(spec_a(router_id))
    assert snapshot(ns) == state  # nothing doubled (the jumps read back, not added again)

    restarted.retire(router_id)
    assert ns not in run("ip", "netns", "list").stdout
    assert restarted.present() == set()
    assert "tapaaaaaaaaaaa" not in run("ip", "-o", "link", namespace=host).stdout


def test_only_routers_with_a_directory_are_ours(setup, tmp_path):
    dataplane, _, router_id = setup
    other = RouterDataplane(str(tmp_path / "other-agent"), dataplane.driver, arp_count=0)
    other.serve(Router(id=router_id))
    assert dataplane.present() == set()
    assert other.present() == {router_id}
    other.retire(router_id)


def test_an_ha_router_alone_takes_its_addresses_through_keepalived(setup):
    """An HA router's addresses and routes are keepalived's: alone on its HA
    network it becomes master and holds them (IPv4 only); the
    same spec again leaves keepalived alone; made legacy, keepalived stops
    and the addresses stay; retired, nothing is left."""
    skip_unless_root("keepalived")
    dataplane, _, router_id = setup
    ns = namespace_name(router_id)
    legacy = spec_a(router_id)
    ha = dataclasses.replace(legacy, ha=HaSettings(
        Port("hhhhhhhhhhh-4", "fa:16:3e:00:00:0d", 1500, ("169.254.192.5/18",)),
        vr_id=3, advert_int=1))
    dataplane.serve(ha)
    assert dataplane.ha_state(ha) == "standby"  # every host starts as a backup
    wait_until(lambda: dataplane.ha_state(ha) == "active", 10, "keepalived to take over")
    wait_until(lambda: "203.0.113.20/32" in snapshot(ns)["addresses"], 5, "the addresses")
    state = snapshot(ns)
    for cidr in ("10.1.0.1/24", "203.0.113.10/24", "169.254.192.5/18", "169.254.0.3/24"):
        assert f" {cidr}" in state["addresses"], state["addresses"]
    assert "2001:db8:2::1" not in state["addresses"]  # HA routers are IPv4 only, for now
    assert "default via 203.0.113.1 dev qg-ggggggggggg" in state["routes"]
    assert "192.168.9.0/24 via 10.1.0.254 dev qr-aaaaaaaaaaa" in state["routes"]
    pid = dataplane.daemons(router_id)["keepalived"]
    dataplane.serve(ha)
    assert dataplane.daemons(router_id)["keepalived"] == pid

    dataplane.serve(legacy)  # made legacy (the router disabled meanwhile, as Neutron asks)
    assert "keepalived" not in dataplane.daemons(router_id)
    made = snapshot(ns)
    assert "ha-hhhhhhhhhhh" not in made["links"]
    for cidr in ("10.1.0.1/24", "203.0.113.20/32"):
        assert f" {cidr}" in made["addresses"]
    assert "default via 203.0.113.1 dev qg-ggggggggggg" in made["routes"]

    dataplane.serve(ha)
    dataplane.retire(router_id)
    assert ns not in run("ip", "netns", "list").stdout
    assert "keepalived" not in dataplane.daemons(router_id)
