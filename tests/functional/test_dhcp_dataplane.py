"""The DHCP agent against a real server on RabbitMQ, serving real DHCP clients.

The agent runs as a process whose DHCP ports' taps go into a namespace
standing in for the host (it talks to RabbitMQ from where it runs); the test
plays the Linux bridge agent (a bridge, the tap plugged in) and the instances
(namespaces whose ``eth0`` carries a port's MAC, asking with busybox udhcpc).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from neutrino.linux import dnsmasq
from tests.dataplane import pings, run, wait_until
from tests.functional.dhcp_deployment import Deployment, address, dhcp_deployment


@pytest.fixture
def deployment(tmp_path: Path, rabbit_url: str) -> Iterator[Deployment]:
    with dhcp_deployment(tmp_path, rabbit_url) as deployment:
        yield deployment


def hosts_file_has(deployment: Deployment, network_id: str, mac: str) -> Callable[[], bool]:
    def check() -> bool:
        try:
            return mac in (deployment.conf_dir(network_id) / "host").read_text()
        except OSError:
            return False
    return check


def dnsmasq_running(deployment: Deployment, network_id: str) -> int | None:
    """The pid of the network's dnsmasq if one runs."""
    return dnsmasq.Dnsmasq(str(deployment.conf_dir(network_id)), "").pid()


def test_ports_get_their_addresses_new_ports_without_a_restart(deployment: Deployment):
    d = deployment
    d.start_agent()
    net, subnet = d.network()
    first = d.client.port(net["id"])
    bridge = d.wire(net["id"])
    pid = d.dnsmasq_pid(net["id"])
    [dhcp_port] = d.dhcp_ports(net["id"])
    assert dhcp_port["binding:host_id"] == d.host
    assert {ip["subnet_id"] for ip in dhcp_port["fixed_ips"]} == {subnet["id"]}

    vm1 = d.instance(bridge, "vm1", first["mac_address"])
    lease = d.lease(vm1)
    assert lease == {"ip": address(first), "router": subnet["gateway_ip"], "mask": "24",
                     "server": address(dhcp_port)}
    assert pings(vm1, address(dhcp_port), wait=2)

    second = d.client.port(net["id"])
    wait_until(hosts_file_has(d, net["id"], second["mac_address"]), 10, "the second port")
    vm2 = d.instance(bridge, "vm2", second["mac_address"])
    assert d.lease(vm2)["ip"] == address(second)
    assert d.dnsmasq_pid(net["id"]) == pid  # a SIGHUP, not a restart

    # dnsmasq killed: the agent starts it again at once (its periodic check of its
    # daemons is a minute away), and it serves
    os.kill(pid, signal.SIGKILL)
    started = time.monotonic()
    # (measured 0.75 s; 10 s: a daemon's start-up on a loaded CI machine)
    wait_until(lambda: dnsmasq_running(d, net["id"]) not in (None, pid), 10,
               "dnsmasq to be started again")
    print(f"a killed dnsmasq ran again in {time.monotonic() - started:.2f} s")
    assert d.lease(vm2)["ip"] == address(second)
    pid = d.dnsmasq_pid(net["id"])

    for port in (first, second):
        assert d.client.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    assert d.client.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    d.wait_taken_down(net["id"], pid, 10)


def test_dnsmasq_outlives_an_agent_killed_and_dhcp_disabled_releases_the_port(
        deployment: Deployment):
    d = deployment
    agent = d.start_agent()
    net, subnet = d.network("192.168.7.0/24")
    first = d.client.port(net["id"])
    bridge = d.wire(net["id"])
    pid = d.dnsmasq_pid(net["id"])
    vm1 = d.instance(bridge, "vm1", first["mac_address"])
    assert d.lease(vm1)["ip"] == address(first)

    agent.send_signal(signal.SIGKILL)
    agent.wait()
    assert d.lease(vm1)["ip"] == address(first)  # served while no agent runs
    d.start_agent()
    # a change made after the restart reaches dnsmasq: the full sync is done by then
    second = d.client.port(net["id"])
    wait_until(hosts_file_has(d, net["id"], second["mac_address"]), 15, "the second port")
    assert d.dnsmasq_pid(net["id"]) == pid
    assert not [line for line in d.logs[-1].read_text().splitlines()
                if "starting dnsmasq" in line or "restarting dnsmasq" in line]
    assert d.lease(vm1)["ip"] == address(first)

    [dhcp_port] = d.dhcp_ports(net["id"])
    resp = d.client.put(f"/v2.0/subnets/{subnet['id']}", json={"subnet": {"enable_dhcp": False}})
    assert resp.status_code == 200, resp.text
    wait_until(lambda: not d.dhcp_ports(net["id"]), 10, "the DHCP port to be released")
    d.wait_taken_down(net["id"], pid, 10)
    assert run("ip", "link", "show", "tap" + dhcp_port["id"][:11], namespace=d.host_ns,
               check=False).returncode != 0


def test_a_network_deleted_while_the_agent_was_down_leaves_nothing(deployment: Deployment):
    d = deployment
    agent = d.start_agent()
    net, _ = d.network("172.16.5.0/24")
    d.wire(net["id"])
    pid = d.dnsmasq_pid(net["id"])
    agent.send_signal(signal.SIGKILL)
    agent.wait()
    assert d.client.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    d.start_agent()
    d.wait_taken_down(net["id"], pid, 15)

