"""Address scopes on a router, end to end: the Linux bridge and L3 agents on
an emulated host, a router whose gateway is on an external network in an
address scope, tenant subnets from a subnet pool of the same scope and one
in no scope, and an "external host" on the external network's wire. Root
only: everything happens in namespaces the tests make and remove.

Before its pool joins the scope, the router translates everything and routes
every subnet to every other; after, the subnets in the external network's
scope are routed to and from the outside, untranslated, and no traffic
crosses between scopes, as in Neutron. The same for IPv6 (ip6tables), where
nothing is translated: IPv6 subnets of one router in different IPv6 scopes
do not reach each other, those in one scope do."""

from __future__ import annotations

import dataclasses
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

from neutrino.linux import nat
from tests.dataplane import pings, run, sandbox, skip_unless_root, wait_until
from tests.functional.emulated_hosts import PHYSNET, Deployment
from tests.functional.test_l3_e2e import (
    EXTERNAL_CIDR,
    L3,
    LB,
    LISTEN,
    SERVICE,
    UPSTREAM,
    Lab,
    add_interface,
    address,
    ask,
    gateway_ip,
    instance,
    said,
)

pytestmark = pytest.mark.slow

TENANT_PREFIX, UNSCOPED_CIDR = "10.60.0.0/16", "10.70.0.0/24"


@pytest.fixture
def lab(tmp_path, rabbit_url) -> Iterator[Lab]:
    skip_unless_root("ip", "socat", "iptables", "ip6tables", "conntrack", "arping", "ping")
    with sandbox() as box:
        d = Deployment(box, tmp_path, rabbit_url,
                       server_extra="[DEFAULT]\nservice_plugins = router\n")
        try:
            host = d.add_host("h1", 1)
            d.start_l2_agent("h1", firewall="noop")
            l3 = d.start_l3_agent("h1")
            external = d.add_external_host(f"{UPSTREAM}/24")
            d.serve_tcp(external, LISTEN, "echo $SOCAT_PEERADDR")
            for agent_type in (LB, L3):
                wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, f"the {agent_type}")
            yield Lab(d, host, external, {}, l3)
        finally:
            d.close()


def pool_subnet(lab: Lab, network_id: str, pool: dict, cidr: str, **attrs) -> dict:
    return lab.api.subnet(network_id, cidr, subnetpool_id=pool["id"], **attrs)


def scope_rules(router: dict) -> str:
    """The router's address scope rules (those of their marks), as
    iptables-save shows them."""
    saved = run("iptables-save", "-t", "mangle", namespace=f"qrouter-{router['id']}").stdout
    return "\n".join(line for line in saved.splitlines()
                     if line.startswith(f"-A {nat.PREFIX}") and f"/{nat.SCOPE_MASK:#x}" in line)


def test_the_external_networks_scope_is_routed_and_scopes_kept_apart(lab: Lab):
    api = lab.api
    pool = api.create("subnetpools", name="routed", default_prefixlen=24,
                      prefixes=[EXTERNAL_CIDR, TENANT_PREFIX], shared=True)
    ext_net = api.network(**{"router:external": True, "provider:network_type": "flat",
                             "provider:physical_network": PHYSNET})
    pool_subnet(lab, ext_net["id"], pool, EXTERNAL_CIDR, gateway_ip=UPSTREAM,
                enable_dhcp=False,
                allocation_pools=[{"start": "203.0.113.10", "end": "203.0.113.200"}])
    router = api.create("routers", name=f"r-{uuid.uuid4().hex[:6]}",
                        external_gateway_info={"network_id": ext_net["id"]})
    nets = {}
    for name, cidr in (("a", "10.60.1.0/24"), ("b", "10.60.2.0/24"), ("c", UNSCOPED_CIDR)):
        net = api.network()
        subnet = (pool_subnet(lab, net["id"], pool, cidr) if name != "c"
                  else api.subnet(net["id"], cidr))
        add_interface(lab, router, subnet)
        nets[name] = (net, subnet)
    port_a, inst_a = instance(lab, *nets["a"], "a")
    port_b, _ = instance(lab, *nets["b"], "b")
    port_c, inst_c = instance(lab, *nets["c"], "c")
    snat = gateway_ip(lab, router)
    # the outside routes the tenant subnets through the router's gateway address
    for cidr in (TENANT_PREFIX, UNSCOPED_CIDR):
        run("ip", "route", "add", cidr, "via", snat, namespace=lab.external)

    # no scope yet: everything translated out, every subnet reached from every other
    said(inst_a, UPSTREAM, LISTEN, snat)
    said(inst_c, address(port_a), SERVICE, "a")
    said(inst_a, address(port_c), SERVICE, "c")
    assert scope_rules(router) == ""

    scope = api.post("/v2.0/address-scopes", json={"address_scope": {
        "name": "routed", "ip_version": 4, "shared": True}})
    assert scope.status_code == 201, scope.text
    scope_id = scope.json()["address_scope"]["id"]
    joined = api.put(f"/v2.0/subnetpools/{pool['id']}", json={"subnetpool": {
        "address_scope_id": scope_id}})
    assert joined.status_code == 200, joined.text
    started = time.monotonic()  # notified: the agent's full resync is minutes away
    wait_until(lambda: scope_rules(router) != "", 15, "the router's address scope rules")
    print(f"a pool's new address scope reached the router in "
          f"{time.monotonic() - started:.2f} s")

    # (a) the external network's scope: out and in with the instances' own addresses
    said(inst_a, UPSTREAM, LISTEN, address(port_a))
    said(lab.external, address(port_a), SERVICE, "a")
    said(lab.external, address(port_b), SERVICE, "b")
    said(inst_a, address(port_b), SERVICE, "b")
    # (b) no scope: translated out, and nothing between it and the scope
    said(inst_c, UPSTREAM, LISTEN, snat)
    assert ask(inst_c, address(port_a), SERVICE) == ""
    assert ask(inst_a, address(port_c), SERVICE) == ""
    assert ask(lab.external, address(port_c), SERVICE) == ""
    # (c) a floating IP of the instance in no scope, from the outside and out
    fip = api.create("floatingips", floating_network_id=ext_net["id"], port_id=port_c["id"])
    said(lab.external, fip["floating_ip_address"], SERVICE, "c")
    said(inst_c, UPSTREAM, LISTEN, fip["floating_ip_address"])
    said(inst_a, UPSTREAM, LISTEN, address(port_a))  # the scope still untranslated


def scope6_rules(router: dict) -> list[str]:
    """The router's IPv6 address scope rules, as ip6tables-save shows them."""
    saved = run("ip6tables-save", "-t", "mangle", namespace=f"qrouter-{router['id']}").stdout
    return [line for line in saved.splitlines() if f" {nat.PREFIX}-" in line]


def instance6(lab: Lab, net: dict, subnet: dict) -> tuple[str, str]:
    """A port plugged as an instance with its IPv6 address and default route
    set by hand: its namespace and address."""
    port = lab.api.port(net["id"])
    lab.d.plug("h1", port["id"])
    ns, ip6 = f"inst-{port['id'][:11]}", address(port)
    run("ip", "-6", "addr", "add", f"{ip6}/64", "dev", "eth0", "nodad", namespace=ns)
    run("ip", "-6", "route", "add", "default", "via", subnet["gateway_ip"], namespace=ns)
    return ns, ip6


def scope6(lab: Lab, pool: dict, scope_id: str | None) -> None:
    joined = lab.api.put(f"/v2.0/subnetpools/{pool['id']}", json={"subnetpool": {
        "address_scope_id": scope_id}})
    assert joined.status_code == 200, joined.text


def test_ipv6_scopes_kept_apart(lab: Lab):
    """Three IPv6 subnets of one router (static addresses), from two subnet
    pools: routed to each other while the pools are in no scope; a and b in
    one scope, c in another, c reaches neither; all in one, all reach each
    other; no scope again, no ip6tables chain of ours is left."""
    api = lab.api
    pool_x = api.create("subnetpools", name="x6", default_prefixlen=64,
                        prefixes=["2001:db8:a::/48"], shared=True)
    pool_y = api.create("subnetpools", name="y6", default_prefixlen=64,
                        prefixes=["2001:db8:b::/48"], shared=True)
    router = api.create("routers", name=f"r-{uuid.uuid4().hex[:6]}")
    inst = {}
    for name, pool, cidr in (("a", pool_x, "2001:db8:a:1::/64"),
                             ("b", pool_x, "2001:db8:a:2::/64"),
                             ("c", pool_y, "2001:db8:b:1::/64")):
        net = api.network()
        subnet = pool_subnet(lab, net["id"], pool, cidr)
        add_interface(lab, router, subnet)
        inst[name] = instance6(lab, net, subnet)

    def reach(a: str, b: str, wanted: bool = True) -> None:
        wait_until(lambda: pings(inst[a][0], inst[b][1]) == wanted, 20,
                   f"{a} {'' if wanted else 'not '}to reach {b}")

    # no scope: every subnet reached from every other, no rules
    for a, b in (("a", "b"), ("a", "c"), ("c", "b")):
        reach(a, b)
        reach(b, a)
    assert scope6_rules(router) == []

    scopes = []
    for name in ("x6", "y6"):
        made = api.post("/v2.0/address-scopes", json={"address_scope": {
            "name": name, "ip_version": 6, "shared": True}})
        assert made.status_code == 201, made.text
        scopes.append(made.json()["address_scope"]["id"])
    scope6(lab, pool_x, scopes[0])
    scope6(lab, pool_y, scopes[1])
    marks = nat.scope_marks(scopes)
    wanted = sorted(f"--set-xmark {marks[scope] << 16:#x}/{nat.SCOPE_MASK:#x}"
                    for scope in (scopes[0], scopes[0], scopes[1]))
    wait_until(lambda: sorted(line.split(" -j MARK ")[1] for line in scope6_rules(router)
                              if " -j MARK " in line) == wanted, 15,
               "the router's IPv6 address scope rules")
    assert scope_rules(router) == ""  # the IPv4 rules: no IPv4 scope here
    # a and b in one scope, c in another
    reach("a", "b")
    reach("b", "a")
    for a, b in (("a", "c"), ("c", "a"), ("b", "c"), ("c", "b")):
        assert not pings(inst[a][0], inst[b][1], count=2), f"{a} reached {b}"

    # c's pool joins a and b's scope: all in one
    scope6(lab, pool_y, scopes[0])
    for a, b in (("a", "c"), ("c", "b")):
        reach(a, b)
        reach(b, a)

    # no scope any more: our chains and their jumps go, and routing stays
    scope6(lab, pool_x, None)
    scope6(lab, pool_y, None)
    wait_until(lambda: scope6_rules(router) == [], 15, "the IPv6 scope rules to go")
    reach("a", "c")


def test_scope_rules_read_back_as_written(tmp_path):
    """iptables and ip6tables write our address scope rules back as we write
    them: an agent restarted on a router finds nothing to change; and the
    IPv6 ones go without a trace."""
    skip_unless_root("ip", "iptables", "ip6tables", "conntrack")
    with sandbox() as box:
        ns = box.namespace("router")  # (rules name devices that need not be there)
        wanted = nat.RouterNat(
            gateway="qg-x", snat_address="203.0.113.10",
            floating_ips=(nat.FloatingIp("203.0.113.20", "10.70.0.5", nat.NO_SCOPE),),
            scopes=(("qg-x", 0x1234), ("qr-a", 0x1234), ("qr-c", nat.NO_SCOPE)),
            scopes6=(("qg-x", 0x4321), ("qr-a", 0x4321), ("qr-b", nat.NO_SCOPE)))
        v6_before = run("ip6tables-save", "-t", "mangle", namespace=ns).stdout
        assert nat.NatTable(ns, fresh=True).apply(wanted)
        assert not nat.NatTable(ns).apply(wanted)
        assert f"-A FORWARD -j {nat.PREFIX}-SCOPE" in run(
            "ip6tables-save", "-t", "mangle", namespace=ns).stdout
        assert nat.NatTable(ns).apply(dataclasses.replace(wanted, scopes6=()))
        v6_after = run("ip6tables-save", "-t", "mangle", namespace=ns).stdout

        def rules(saved: str) -> list[str]:
            return [line for line in saved.splitlines() if not line.startswith("#")]
        assert rules(v6_after) == rules(v6_before)
        saved = run("iptables-save", namespace=ns).stdout
        for chain in (f"{nat.PREFIX}-SCOPE", f"{nat.PREFIX}-SAVE", nat.FLOAT_SNAT):
            assert f"-A {chain} " in saved
        done = subprocess.run(["ip", "netns", "exec", ns, "iptables", "-t", "mangle", "-C",
                               "FORWARD", "-j", f"{nat.PREFIX}-SCOPE"], capture_output=True)
        assert done.returncode == 0
