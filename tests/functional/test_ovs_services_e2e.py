"""The DHCP and L3 agents on Open vSwitch hosts (``interface_driver =
openvswitch``): their ports' taps on br-int, wired by the OVS agent as any
instance's port, on OVS's userspace datapath.

- The driver alone against a private OVS (plug, the OVS agent's tag kept by
  a plug again, a pair lost underneath made again, unplug).
- End to end: emulated OVS hosts (``tests.functional.emulated_hosts``), the
  DHCP agent on one giving addresses to instances on both; a router on one
  between two networks whose instances are on the other, and SNAT to an
  external host on physnet1 (the hosts' br-phys).
- The pure parts: the option's values, the ``[ovs]`` options, the names.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from neutrino import config
from neutrino.agents import dhcp, l3
from neutrino.linux import interface
from neutrino.linux.interface import (
    DEAD_VLAN,
    OvsInterfaceDriver,
    device_name,
    tap_name,
)
from neutrino.linux.ip import IpNetns
from tests.dataplane import Sandbox, pings, run, sandbox, wait_until
from tests.functional.emulated_hosts import PHYSNET, Deployment, deployed
from tests.functional.test_l3_e2e import LISTEN, UPSTREAM, ask
from tests.functional.test_ovs_e2e import SERVER_EXTRA, flows_of, ovs_hosts
from tests.ovs import OvsHost, ovs_host, skip_unless_ovs

DHCP, L3 = "DHCP agent", "L3 agent"
EXTERNAL_CIDR = "203.0.113.0/24"


# --- the pure parts ----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "driver"), [
    ("openvswitch", "openvswitch"), (" linuxbridge ", "linuxbridge"), ("", ""),
    ("neutron.agent.linux.interface.OVSInterfaceDriver", "openvswitch"),
    ("neutron.agent.linux.interface.BridgeInterfaceDriver", "linuxbridge")])
def test_interface_driver_values(text, driver):
    assert interface.parse_driver(text) == driver


def test_an_unknown_interface_driver_is_refused():
    with pytest.raises(ValueError, match="must be one of linuxbridge, openvswitch"):
        interface.parse_driver("ovs")


@pytest.mark.parametrize("prefix", ["ns-", "qr-", "qg-"])
def test_the_tap_of_a_device_is_its_ports(prefix):
    port_id = str(uuid.uuid4())
    assert interface.tap_of(device_name(port_id, prefix)) == tap_name(port_id)


@pytest.mark.parametrize("options", [dhcp.OPTIONS, l3.OPTIONS])
def test_agents_read_the_ovs_options_and_make_the_driver(tmp_path, options):
    """Neutron's names ([ovs] integration_bridge, ovsdb_connection), its
    defaults; the driver connects to OVSDB only when first used."""
    path = tmp_path / "agent.ini"

    def driver(text: str) -> interface.InterfaceDriver:
        path.write_text(text)
        conf = config.load([str(path)])
        conf.register(options)
        return interface.make_driver(conf)

    made = driver("[DEFAULT]\ninterface_driver = openvswitch\n")
    assert isinstance(made, OvsInterfaceDriver)
    assert (made.bridge, made.ovsdb) == ("br-int", "unix:/var/run/openvswitch/db.sock")
    made = driver("[DEFAULT]\ninterface_driver = openvswitch\n"
                  "[ovs]\nintegration_bridge = br-x\novsdb_connection = tcp:192.0.2.1:6640\n")
    assert isinstance(made, OvsInterfaceDriver)
    assert (made.bridge, made.ovsdb, made._db) == ("br-x", "tcp:192.0.2.1:6640", None)
    assert isinstance(driver("[DEFAULT]\ninterface_driver = linuxbridge\n"),
                      interface.LinuxBridgeInterfaceDriver)


# --- the driver against a private OVS ------------------------------------------------------

@pytest.fixture
def ovs_box(tmp_path) -> Iterator[tuple[Sandbox, OvsHost, OvsInterfaceDriver]]:
    """A host namespace with OVS (br-int, userspace) and the driver for it."""
    skip_unless_ovs()
    with sandbox() as box:
        host = box.namespace("host")
        with ovs_host(host, tmp_path / "ovs") as ovs:
            driver = OvsInterfaceDriver("br-int", ovs.db, agent_namespace=host)
            try:
                yield box, ovs, driver
            finally:
                driver.close()


def tx_checksumming(namespace: str, device: str) -> str:
    out = run("ethtool", "-k", device, namespace=namespace).stdout
    return next(line.split(":")[1].strip() for line in out.splitlines()
                if line.startswith("tx-checksumming:"))


@pytest.mark.slow
def test_ovs_driver_plug_again_and_unplug(ovs_box):
    box, ovs, driver = ovs_box
    service = box.namespace("svc")
    port_id, mac = str(uuid.uuid4()), "fa:16:3e:00:00:5a"
    tap = tap_name(port_id)

    device = driver.plug(port_id, mac, 1450, service, prefix="qr-")
    assert device == device_name(port_id, "qr-")
    assert ovs.get("Interface", tap, "external_ids") == {
        "iface-id": port_id, "attached-mac": mac, "iface-status": "active"}
    assert ovs.get("Port", tap, "tag") == DEAD_VLAN  # until the OVS agent tags it
    ovs.check_interface(tap)  # OVS opened it
    with IpNetns(service) as inside:
        link = inside.links()[device]
    assert (link.mac, link.mtu, link.up) == (mac, 1450, True)
    assert tx_checksumming(service, device) == "off"  # a userspace datapath's bridge

    # the OVS agent gives it its network's VLAN; a plug again leaves it and the row alone
    ovs.vsctl("set", "Port", tap, "tag=7")
    row = ovs.get("Interface", tap, "_uuid")
    assert driver.plug(port_id, mac, 1450, service, prefix="qr-") == device
    assert (ovs.get("Port", tap, "tag"), ovs.get("Interface", tap, "_uuid")) == (7, row)
    assert driver.devices(service, ("qr-",)) == [device]

    # the pair lost underneath (its row stays, with an error): made again, the row anew
    run("ip", "link", "del", device, namespace=service)
    driver.plug(port_id, mac, 1450, service, prefix="qr-")
    assert ovs.get("Interface", tap, "_uuid") != row
    assert ovs.get("Port", tap, "tag") == DEAD_VLAN
    ovs.check_interface(tap)

    driver.unplug(device, service)
    assert tap not in ovs.vsctl("list-ports", "br-int").split()
    with IpNetns(service) as inside:
        assert device not in inside.links()
    with IpNetns(driver.agent_namespace) as host:
        assert tap not in host.links()
    driver.unplug(device, service)  # gone already: nothing to do


# --- end to end ----------------------------------------------------------------------------

@pytest.fixture
def deployment(tmp_path, rabbit_url) -> Iterator[Deployment]:
    skip_unless_ovs("socat", "ping", "udhcpc", "dnsmasq")
    with deployed(tmp_path, rabbit_url, SERVER_EXTRA) as deployment:
        yield deployment


def wait_alive(deployment: Deployment, name: str, agent_type: str, binary: str) -> None:
    wait_until(lambda: deployment.agent_alive(name, agent_type), 30,
               lambda: f"the {agent_type} of {name}\n"
                       f"{deployment.log(f'{name}-{binary}')[-2000:]}")


def port_status(deployment: Deployment, port_id: str) -> str:
    return deployment.api.show("ports", port_id)["status"]


def tag_of(deployment: Deployment, name: str, port_id: str) -> int | list:
    return deployment.hosts[name]["ovs"].get("Port", tap_name(port_id), "tag")


@pytest.mark.slow
def test_dhcp_agent_on_an_ovs_host_serves_both_hosts(deployment):
    d, api = deployment, deployment.api
    ovs_hosts(d, "h1", "h2")
    d.start_dhcp_agent("h1")
    wait_alive(d, "h1", DHCP, "neutrino-dhcp-agent")
    net = api.network(**{"provider:network_type": "vxlan"})
    subnet = api.subnet(net["id"], "10.96.0.0/24")
    far, near = api.port(net["id"]), api.port(net["id"])

    def dhcp_ports() -> list[dict]:
        return api.get("/v2.0/ports", params={"network_id": net["id"],
                                              "device_owner": "network:dhcp"}).json()["ports"]

    wait_until(lambda: [p for p in dhcp_ports() if p["status"] == "ACTIVE"], 30,
               lambda: f"the DHCP port ACTIVE: {dhcp_ports()}\n"
                       f"{flows_of(d, 'h1')()}\n{d.log('h1-neutrino-dhcp-agent')[-2000:]}")
    [port] = dhcp_ports()
    assert tag_of(d, "h1", port["id"]) not in (DEAD_VLAN, [])  # wired by the OVS agent
    # across the tunnel, and on the DHCP agent's own host
    assert d.plug("h2", far["id"], dhcp=True) == far["fixed_ips"][0]["ip_address"]
    assert d.plug("h1", near["id"], dhcp=True) == near["fixed_ips"][0]["ip_address"]
    assert pings(f"inst-{far['id'][:11]}", port["fixed_ips"][0]["ip_address"])

    # no DHCP any more: the network is taken down, its tap leaves br-int with its pair
    ovs = d.hosts["h1"]["ovs"]
    assert api.put(f"/v2.0/subnets/{subnet['id']}", json={"subnet": {
        "enable_dhcp": False}}).status_code == 200
    wait_until(lambda: tap_name(port["id"]) not in ovs.vsctl("list-ports", "br-int").split(),
               20, lambda: f"the DHCP tap to leave br-int: {ovs.vsctl('list-ports', 'br-int')}")
    wait_until(lambda: f"qdhcp-{net['id']}" not in run("ip", "netns", "list").stdout, 10,
               "the DHCP namespace to go")


@pytest.mark.slow
def test_router_on_an_ovs_host_routes_and_snats(deployment):
    """The router on h1 between two VXLAN networks, their instances on h2;
    its gateway on the flat external network (physnet1: br-phys)."""
    d, api = deployment, deployment.api
    ovs_hosts(d, "h1", "h2")
    d.start_l3_agent("h1")
    external = d.add_external_host(f"{UPSTREAM}/24")
    # its replies leave with full checksums: OVS passes a partial one on as it is
    run("ethtool", "-K", "eth0", "tx", "off", namespace=external)
    d.serve_tcp(external, LISTEN, "echo $SOCAT_PEERADDR")
    wait_alive(d, "h1", L3, "neutrino-l3-agent")
    ext_net = api.network(**{"router:external": True, "provider:network_type": "flat",
                             "provider:physical_network": PHYSNET})
    api.subnet(ext_net["id"], EXTERNAL_CIDR, gateway_ip=UPSTREAM, enable_dhcp=False,
               allocation_pools=[{"start": "203.0.113.10", "end": "203.0.113.200"}])
    router = api.create("routers", name="r", external_gateway_info={
        "network_id": ext_net["id"]})
    subnets = []
    for index in (1, 2):
        net = api.network(**{"provider:network_type": "vxlan"})
        subnet = api.subnet(net["id"], f"10.97.{index}.0/24", enable_dhcp=False)
        resp = api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                       json={"subnet_id": subnet["id"]})
        assert resp.status_code == 200, resp.text
        subnets.append((net, subnet))
    router_ports = api.get("/v2.0/ports", params={"device_id": router["id"]}).json()["ports"]
    assert len(router_ports) == 3
    # the router's ports wired first, as in a cloud. Not only for realism: an OVS
    # agent told of a remote port (add_fdb_entries) while it fetches its new
    # network's entries can lose it (the fetch's answer replaces them), seen once
    wait_until(lambda: all(port_status(d, p["id"]) == "ACTIVE" for p in router_ports), 30,
               lambda: f"the router's ports ACTIVE\n{flows_of(d, 'h1')()}\n"
                       f"{d.log('h1-neutrino-l3-agent')[-2000:]}")
    assert all(tag_of(d, "h1", p["id"]) not in (DEAD_VLAN, []) for p in router_ports)
    instances = []
    for net, subnet in subnets:
        port = api.port(net["id"])
        d.plug("h2", port["id"])
        ns, address = f"inst-{port['id'][:11]}", port["fixed_ips"][0]["ip_address"]
        run("ip", "addr", "add", f"{address}/24", "dev", "eth0", namespace=ns)
        run("ip", "route", "add", "default", "via", subnet["gateway_ip"], namespace=ns)
        instances.append((ns, address))
    (a, a_ip), (b, b_ip) = instances
    assert wait_until(lambda: pings(a, b_ip), 20, flows_of(d, "h1", "h2"))
    assert pings(b, a_ip)

    shown = api.show("routers", router["id"])
    snat = shown["external_gateway_info"]["external_fixed_ips"][0]["ip_address"]
    said = [""]

    def snatted() -> bool:
        said[0] = ask(a, UPSTREAM, LISTEN)
        return said[0] == snat
    wait_until(snatted, 20, lambda: f"the external host to see {snat} (saw {said[0]!r})")
    assert ask(b, UPSTREAM, LISTEN) == snat
    assert pings(external, snat)

    # the router goes: its ports leave br-int with their pairs
    taps = {tap_name(p["id"]) for p in router_ports}
    ovs = d.hosts["h1"]["ovs"]
    assert taps <= set(ovs.vsctl("list-ports", "br-int").split())
    for subnet_id in {ip["subnet_id"] for p in router_ports for ip in p["fixed_ips"]
                      if p["device_owner"] == "network:router_interface"}:
        assert api.put(f"/v2.0/routers/{router['id']}/remove_router_interface",
                       json={"subnet_id": subnet_id}).status_code == 200
    assert api.delete(f"/v2.0/routers/{router['id']}").status_code == 204
    wait_until(lambda: not taps & set(ovs.vsctl("list-ports", "br-int").split()), 20,
               lambda: f"the router's taps to leave br-int: {ovs.vsctl('list-ports', 'br-int')}")
    assert not pings(a, b_ip)

