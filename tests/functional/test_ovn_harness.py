"""The OVN harness (``tests.ovn``) with plain OVN, no neutrino server: central
and two chassis on the userspace datapath, a logical switch written with
``ovn-nbctl``, instances in namespaces. What the ML2/OVN tests stand on:
ports go ``up``, Geneve carries traffic between chassis within its MTU, the
Northbound database restarts with its data, nothing is left running. (OVN's
DHCP, chassis liveness and flows outliving ovn-controller are proven with a
neutrino server in test_ovn_e2e.py.)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.dataplane import Sandbox, pings, run, sandbox, wait_until
from tests.ovn import (
    GENEVE_OVERHEAD,
    OvnCentral,
    OvnChassis,
    ovn_central,
    ovn_chassis,
    skip_unless_ovn,
    underlay,
)
from tests.ovs import OvsHost, ovs_host

pytestmark = pytest.mark.slow

SWITCH = "ls0"
PORTS = {  # logical port -> (MAC, address), one on each chassis
    "lsp-a": ("0a:00:00:00:00:0a", "10.20.0.10"),
    "lsp-b": ("0a:00:00:00:00:0b", "10.20.0.11"),
}
ENCAP = ("192.168.77.1", "192.168.77.2")

@dataclass
class Cloud:
    box: Sandbox
    central: OvnCentral
    chassis: tuple[OvnChassis, OvnChassis]
    instances: dict[str, str]  # logical port -> instance namespace
    devices: dict[str, str]  # logical port -> its device on br-int

    def up(self, port: str) -> bool:
        return self.central.nb_get("Logical_Switch_Port", port, "up") is True

    def bound_to(self, port: str) -> str | None:
        """The name of the chassis the Southbound binding of ``port`` names."""
        [binding] = self.central.sb_rows("Port_Binding", f"logical_port={port}")
        if not binding["chassis"]:
            return None
        return self.central.sb_get("Chassis", binding["chassis"], "name")

    def logs(self) -> str:
        return "\n".join(f"--- {c.name}:\n{c.log(15)}" for c in self.chassis)


@pytest.fixture
def box() -> Iterator[Sandbox]:
    skip_unless_ovn("ping")
    with sandbox() as box:
        yield box


@pytest.fixture
def cloud(box: Sandbox, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cloud]:
    """Central, two chassis on one underlay, a switch with a port on each
    chassis, an instance (namespace) plugged into each port, not addressed.
    Geneve tunnels, unless the test is parametrized with another encap type."""
    encap = getattr(request, "param", "geneve")
    with ovn_central(tmp_path / "central") as central, \
            ovs_host(box.namespace("ch1"), tmp_path / "ch1", bridges=()) as ovs1, \
            ovs_host(box.namespace("ch2"), tmp_path / "ch2", bridges=()) as ovs2:
        underlay(box.namespace("fabric"), [(ovs1, f"{ENCAP[0]}/24"), (ovs2, f"{ENCAP[1]}/24")])
        with ovn_chassis(ovs1, central, ENCAP[0], encap) as ch1, \
                ovn_chassis(ovs2, central, ENCAP[1], encap) as ch2:
            central.nbctl("ls-add", SWITCH)
            instances, devices = {}, {}
            for (port, (mac, ip)), chassis in zip(PORTS.items(), (ch1, ch2), strict=True):
                central.nbctl("lsp-add", SWITCH, port, "--", "lsp-set-addresses", port,
                              f"{mac} {ip}", "--", "lsp-set-port-security", port, f"{mac} {ip}")
                instances[port] = box.namespace(f"vm-{port[-1]}")
                devices[port] = chassis.plug(port, instances[port], mac)
            cloud = Cloud(box, central, (ch1, ch2), instances, devices)
            wait_until(lambda: all(map(cloud.up, PORTS)), 20,
                       lambda: f"both ports up\n{cloud.logs()}")
            yield cloud


def address(cloud: Cloud, port: str) -> None:
    _, ip = PORTS[port]
    run("ip", "addr", "add", f"{ip}/24", "dev", "eth0", namespace=cloud.instances[port])


def test_ports_go_up_and_instances_ping_across_chassis(cloud: Cloud):
    ch1, ch2 = cloud.chassis
    encap = ch1.ovs.get("Open_vSwitch", ".", "external_ids")["ovn-encap-type"]
    assert cloud.bound_to("lsp-a") == ch1.name and cloud.bound_to("lsp-b") == ch2.name
    for port in PORTS:
        address(cloud, port)
    a, b = cloud.instances["lsp-a"], cloud.instances["lsp-b"]
    assert wait_until(lambda: pings(a, PORTS["lsp-b"][1]), 10,
                      lambda: f"a ping from a to b\n{cloud.logs()}")
    assert pings(b, PORTS["lsp-a"][1])
    # across chassis means through a tunnel: OVN made one on each br-int
    for chassis, peer in zip(cloud.chassis, reversed(ENCAP), strict=True):
        ports = chassis.ovs.vsctl("list-ports", "br-int").split()
        [tunnel] = [p for p in ports if chassis.ovs.get("interface", p, "type") == encap]
        assert chassis.ovs.get("interface", tunnel, "options")["remote_ip"] == peer
    # a full-sized packet (the instance's MTU: the underlay's less Geneve's
    # overhead, VXLAN's is smaller) goes through unfragmented
    size = 1500 - GENEVE_OVERHEAD - 28
    assert run("ping", "-c", "1", "-W", "2", "-M", "do", "-s", str(size), PORTS["lsp-b"][1],
               namespace=a, check=False).returncode == 0
    if encap == "geneve":  # one byte more does not fit the underlay: dropped, silently
        run("ip", "link", "set", "eth0", "mtu", "1500", namespace=a)
        run("ip", "link", "set", cloud.devices["lsp-a"], "mtu", "1500",
            namespace=ch1.ovs.namespace)
        assert run("ping", "-c", "1", "-W", "1", "-M", "do", "-s", str(size + 1),
                   PORTS["lsp-b"][1], namespace=a, check=False).returncode != 0
        assert "Message too long" in ch1.ovs.log("ovs-vswitchd")
    # port security: an address the port does not own gets nowhere
    run("ip", "addr", "replace", "10.20.0.99/24", "dev", "eth0", namespace=b)
    run("ip", "addr", "del", f"{PORTS['lsp-b'][1]}/24", "dev", "eth0", namespace=b)
    assert not pings(b, PORTS["lsp-a"][1], count=2)


def test_the_northbound_db_restarts_with_its_data(box: Sandbox, tmp_path: Path):
    with ovn_central(tmp_path) as central:
        central.nbctl("ls-add", SWITCH)
        port = central.ports["nb"]
        central.stop_nb()
        assert run("ovn-nbctl", f"--db={central.nb}", "--timeout=1", "ls-list",
                   check=False).returncode != 0
        central.start_nb()
        assert central.ports["nb"] == port
        done = run("ovn-nbctl", f"--db={central.nb}", "--timeout=5", "ls-list")
        assert SWITCH in done.stdout
        central.nbctl("--wait=sb", "sync")  # ovn-northd reconnected
        assert central.sb_rows("Datapath_Binding")


def test_stop_leaves_no_process(box: Sandbox, tmp_path: Path):
    ovs: OvsHost
    with ovn_central(tmp_path / "central") as central, \
            ovs_host(box.namespace("ch1"), tmp_path / "ch1", bridges=()) as ovs:
        chassis = OvnChassis.start(ovs, central, "192.168.77.1")
        daemons = [chassis.controller, central.northd, *central.servers.values()]
        pids = [daemon.pid for daemon in daemons]
        assert all(daemon.running() for daemon in daemons)
        wait_until(lambda: central.sb_rows("Chassis_Private"), 10, "the chassis")
        chassis.stop()
        chassis.stop()
        # asked to exit, ovn-controller takes its chassis out of the Southbound DB
        assert central.sb_rows("Chassis") == central.sb_rows("Chassis_Private") == []
    assert not any(daemon.running() for daemon in daemons), pids
    assert not central.rundir.exists()
