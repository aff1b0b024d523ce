"""ML2/OVN's metadata end to end: a neutrino server with ``mechanism_drivers =
ovn`` and ``ovn_metadata_enabled`` gives the network a metadata port and DHCP
a route to 169.254.169.254 through it; ``neutrino-ovn-metadata-agent`` runs on
the chassis (in its namespace, as on a host of its own: ``as_a_host``),
reading the chassis' Open vSwitch and the Southbound database over its UNIX
socket (the chassis' namespace cannot reach the root namespace's 127.0.0.1).
An instance's curl crosses the ``ovnmeta-`` namespace's proxy and the agent
to a fake Nova on the chassis' loopback, which records what it was told; the
agent shows alive in /v2.0/agents (dead once stopped), starts a proxy that
died again, keeps its agent id over a restart; the network's last port on
the chassis deleted, its namespace goes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.dataplane import Sandbox, as_a_host, kill_namespace, run, sandbox, wait_until
from tests.functional.test_metadata_e2e import FAKE_NOVA, METADATA_URL, assert_nova_saw, curl
from tests.harness import ROOT, ApiClient, Server, start_server
from tests.ovn import OvnCentral, OvnChassis, ovn_central, ovn_chassis, skip_unless_ovn
from tests.ovs import ovs_host

pytestmark = pytest.mark.slow

SECRET = "ovn-metadata-secret"
NOVA_PORT = 8775
CIDR = "10.31.0.0/24"
#: udhcpc's script: the address, and the classless static routes (option 121,
#: where OVN's DHCP gives the route to 169.254.169.254)
LEASE_SCRIPT = """#!/bin/sh
case "$1" in
  bound|renew)
    ip addr replace "$ip/$mask" dev "$interface"
    set -- $staticroutes
    while [ $# -ge 2 ]; do
      ip route replace "$1" via "$2" dev "$interface"
      shift 2
    done
    echo "$ip" > "$LEASE_FILE"
    ;;
esac
exit 0
"""


@dataclass
class Lab:
    box: Sandbox
    tmp: Path
    central: OvnCentral
    chassis: OvnChassis
    server: Server
    api: ApiClient
    admin: ApiClient
    #: the networks made, whose ovnmeta- namespaces the clean-up removes
    networks: list[str] = field(default_factory=list)
    agent: subprocess.Popen | None = None

    def start_agent(self) -> subprocess.Popen:
        state = self.tmp / "agent"
        state.mkdir(exist_ok=True)
        conf = self.tmp / "ovn_metadata_agent.ini"
        conf.write_text(
            f"[DEFAULT]\nhost = {self.chassis.name}\nstate_path = {state}\ndebug = true\n"
            f"nova_metadata_host = 127.0.0.1\nnova_metadata_port = {NOVA_PORT}\n"
            f"metadata_proxy_shared_secret = {SECRET}\n"
            f"[ovn]\novn_sb_connection = {self.central.local['sb']}\n"
            f"[ovs]\novsdb_connection = {self.chassis.ovs.db}\n")
        log = (self.tmp / "ovn-metadata-agent.log").open("wb")
        self.agent = subprocess.Popen(
            [*as_a_host(self.chassis.ovs.namespace), sys.executable, "-m",
             "neutrino.agents.ovn_metadata", "--config-file", str(conf)],
            stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)})
        return self.agent

    def agent_log(self) -> str:
        return (self.tmp / "ovn-metadata-agent.log").read_text(errors="replace")[-4000:]

    def stop_agent(self) -> None:
        if self.agent is not None and self.agent.poll() is None:
            self.agent.terminate()
            try:
                self.agent.wait(15)
            except subprocess.TimeoutExpired:
                self.agent.kill()
                self.agent.wait()

    def network(self, **attrs: Any) -> dict[str, Any]:
        network = self.api.network(**attrs)
        self.networks.append(network["id"])
        return network

    def instance(self, name: str, network_id: str, device_id: str
                 ) -> tuple[dict[str, Any], str]:
        """A port bound to the chassis and an instance plugged into it, addressed
        (and routed to 169.254.169.254) by OVN's DHCP."""
        port = self.api.port(network_id, name=name, device_id=device_id,
                             device_owner="compute:nova",
                             **{"binding:host_id": self.chassis.name})
        namespace = self.box.namespace(f"vm-{name}")
        self.chassis.plug(port["id"], namespace, port["mac_address"])
        wait_until(lambda: self.api.show("ports", port["id"])["status"] == "ACTIVE", 20,
                   lambda: f"port {name} ACTIVE\n{self.server.log.read_text()[-3000:]}")
        out = self.tmp / f"lease-{name}"
        script = self.tmp / "udhcpc.sh"
        script.write_text(LEASE_SCRIPT)
        script.chmod(0o755)
        run("env", f"LEASE_FILE={out}", "udhcpc", "-i", "eth0", "-n", "-q", "-f", "-t", "5",
            "-T", "1", "-O", "staticroutes", "-s", str(script), namespace=namespace,
            timeout=30)
        assert out.read_text().split()[0] == port["fixed_ips"][0]["ip_address"]
        return port, namespace

    def clean_up(self) -> None:
        """The agent stopped; what it made for the test's networks removed (the
        proxies with their namespaces), even if the test failed half-way."""
        self.stop_agent()
        for network_id in self.networks:
            kill_namespace(f"ovnmeta-{network_id}")


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """One chassis and a server writing into OVN with metadata enabled; the
    fake Nova on the chassis' loopback."""
    skip_unless_ovn("udhcpc", "curl")
    with sandbox() as box, ovn_central(tmp_path / "central") as central, \
            ovs_host(box.namespace("ch1"), tmp_path / "ch1", bridges=()) as ovs, \
            ovn_chassis(ovs, central, "192.168.79.1") as chassis:
        server = start_server(tmp_path, f"sqlite:///{tmp_path / 'neutrino.db'}", extra=(
            "agent_down_time = 8\n"
            "[ml2]\nmechanism_drivers = ovn\ntenant_network_types = geneve\n"
            "extension_drivers = port_security\n"
            "[ml2_type_geneve]\nvni_ranges = 1:100\n"
            f"[ovn]\novn_nb_connection = {central.nb}\novn_sb_connection = {central.sb}\n"
            "ovn_metadata_enabled = true\n"))
        lab = Lab(box, tmp_path, central, chassis, server, server.client("p1"),
                  server.client("p1", roles=("admin",)))
        nova = subprocess.Popen(["ip", "netns", "exec", ovs.namespace, sys.executable, "-c",
                                 FAKE_NOVA, str(NOVA_PORT), str(tmp_path / "nova.jsonl")])
        try:
            yield lab
        finally:
            nova.kill()
            nova.wait()
            lab.clean_up()
            server.stop()


def metadata_agents_alive(lab: Lab) -> set[str]:
    return {agent["host"] for agent in lab.admin.get("/v2.0/agents").json()["agents"]
            if agent["agent_type"] == "OVN Metadata agent" and agent["alive"]}


def why_not(lab: Lab, vm: str, namespace: str) -> str:
    """What tells why the instance's request got no answer."""
    return "\n".join([
        run("curl", "-sv", "-m", "5", METADATA_URL, namespace=vm, check=False).stderr,
        run("ip", "route", namespace=vm, check=False).stdout,
        run("ip", "-o", "addr", namespace=namespace, check=False).stdout,
        run("ss", "-ltnp", namespace=namespace, check=False).stdout,
        *(path.read_text() for path in (lab.tmp / "agent").rglob("*.log")),
        lab.chassis.ovs.vsctl("show"), lab.central.nbctl("show"), lab.agent_log()])


def proxies(namespace: str) -> list[int]:
    """The pids of what runs in the namespace (the proxy, alone)."""
    return [int(pid) for pid in run("ip", "netns", "pids", namespace, check=False).stdout.split()]


def namespaces() -> set[str]:
    return set(run("ip", "netns", "list").stdout.split())


def test_an_instance_gets_its_metadata_through_the_chassis_agent(lab: Lab):
    lab.start_agent()
    assert wait_until(lambda: lab.chassis.name in metadata_agents_alive(lab), 30,
                      lambda: f"the OVN metadata agent alive\n{lab.agent_log()}")
    [private] = lab.central.sb_rows("Chassis_Private", f"name={lab.chassis.name}")
    own_id = private["external_ids"]["neutron:ovn-metadata-id"]

    network = lab.network(name="md")
    lab.api.subnet(network["id"], CIDR)
    [metadata_port] = lab.admin.get("/v2.0/ports", params={
        "network_id": network["id"], "device_owner": "network:distributed"}).json()["ports"]
    metadata_ip = metadata_port["fixed_ips"][0]["ip_address"]
    # trusted, as Neutron writes it: the proxy answers from 169.254.169.254
    assert not lab.central.nb_get("Logical_Switch_Port", metadata_port["id"], "port_security")
    namespace = f"ovnmeta-{network['id']}"
    assert namespace not in namespaces()  # no instance of the network here yet

    instance_id = str(uuid.uuid4())
    port, vm = lab.instance("a", network["id"], instance_id)
    address = port["fixed_ips"][0]["ip_address"]
    # DHCP routed 169.254.169.254 through the metadata port
    assert f"via {metadata_ip}" in run("ip", "route", "show", "169.254.169.254",
                                       namespace=vm).stdout
    assert wait_until(lambda: namespace in namespaces(), 20,
                      lambda: f"{namespace} provisioned\n{lab.agent_log()}")
    assert wait_until(lambda: curl(vm, METADATA_URL)[0] == 200, 20,
                      lambda: "metadata answered\n" + why_not(lab, vm, namespace))
    assert curl(vm, METADATA_URL) == (200, instance_id)
    assert_nova_saw(lab.tmp / "nova.jsonl", instance_id, port, address, secret=SECRET)
    inside = run("ip", "-o", "addr", namespace=namespace).stdout
    assert "169.254.169.254/32" in inside and f"{metadata_ip}/24" in inside

    # a proxy that dies is started again at once
    [proxy] = proxies(namespace)
    os.kill(proxy, signal.SIGKILL)
    wait_until(lambda: proxies(namespace) not in ([], [proxy]), 10,
               lambda: f"the proxy started again\n{lab.agent_log()}")
    assert wait_until(lambda: curl(vm, METADATA_URL)[0] == 200, 10, "metadata again")

    # restarted, the agent keeps its id and serves on
    lab.stop_agent()
    lab.start_agent()
    assert wait_until(lambda: curl(vm, METADATA_URL)[0] == 200, 20,
                      lambda: f"metadata after a restart\n{lab.agent_log()}")
    [private] = lab.central.sb_rows("Chassis_Private", f"name={lab.chassis.name}")
    assert private["external_ids"]["neutron:ovn-metadata-id"] == own_id

    # the network's last port on the chassis gone, so is its namespace
    assert lab.api.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    assert wait_until(lambda: namespace not in namespaces(), 20,
                      lambda: f"{namespace} removed\n{lab.agent_log()}")
    assert lab.agent is not None and lab.agent.poll() is None, lab.agent_log()

    # stopped, it no longer answers the server's nb_cfg: taken for dead
    lab.stop_agent()
    assert wait_until(lambda: lab.chassis.name not in metadata_agents_alive(lab), 30,
                      "the stopped agent taken for dead")
