"""IPv6 from the DHCP agent to ``neutrino-instance``, on networks without a router.

The subnets set ``ipv6_ra_mode`` (OpenStack sends the RAs) and no router
interface is there, so the DHCP agent's dnsmasq advertises them: instances on
a SLAAC subnet make their address from its RAs, and on a DHCPv6-stateful
subnet ask dnsmasq for theirs. Each gets exactly what the API gave its port.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dataplane import pings, run, wait_until
from tests.functional.dhcp_deployment import Deployment, dhcp_deployment


@pytest.fixture
def deployment(tmp_path: Path, rabbit_url: str) -> Iterator[Deployment]:
    with dhcp_deployment(tmp_path, rabbit_url, "dhclient") as deployment:
        yield deployment


def v6_subnet(d: Deployment, network_id: str, cidr: str, mode: str) -> dict:
    return d.client.subnet(network_id, cidr, ipv6_ra_mode=mode, ipv6_address_mode=mode)


def ipv6_network(d: Deployment, *subnets: tuple[str, str]) -> tuple[dict, list[dict]]:
    """A network with IPv6 subnets of (cidr, mode); removed with its dnsmasq at the end."""
    net = d.client.network()
    d.box.adopt(f"qdhcp-{net['id']}")
    return net, [v6_subnet(d, net["id"], cidr, mode) for cidr, mode in subnets]


def global_ipv6(namespace: str) -> set[str]:
    """The instance's global IPv6 addresses: what it took from RAs and DHCPv6."""
    shown = run("ip", "-6", "-o", "addr", "show", "dev", "eth0", "scope", "global",
                namespace=namespace).stdout.split()
    return {shown[i + 1].split("/")[0] for i, word in enumerate(shown) if word == "inet6"}


def addresses(port: dict, version: int) -> list[str]:
    return [ip["ip_address"] for ip in port["fixed_ips"]
            if (":" in ip["ip_address"]) == (version == 6)]


def dhcp_address(d: Deployment, network_id: str, subnet_id: str) -> str:
    [port] = d.dhcp_ports(network_id)
    return next(ip["ip_address"] for ip in port["fixed_ips"] if ip["subnet_id"] == subnet_id)


def test_slaac_without_a_router_gives_the_ports_address(deployment: Deployment):
    d = deployment
    d.start_agent()
    net, [subnet] = ipv6_network(d, ("2001:db8:10::/64", "slaac"))
    port = d.client.port(net["id"])
    bridge = d.wire(net["id"])
    [expected] = addresses(port, 6)
    assert d.plug(bridge, port) == [f"inst-{port['id'][:11]}", expected]
    instance = f"inst-{port['id'][:11]}"
    assert global_ipv6(instance) == {expected}
    # dnsmasq advertises prefixes, not itself as a router: the namespace routes nothing
    assert run("ip", "-6", "route", "show", "default", namespace=instance).stdout == ""
    # the DHCP port's address may still be tentative (duplicate address detection)
    server = dhcp_address(d, net["id"], subnet["id"])
    wait_until(lambda: pings(instance, server, wait=1), 10, f"{server} to answer")


def test_dhcpv6_stateful_gives_the_api_assigned_address(deployment: Deployment):
    d = deployment
    d.start_agent()
    net, [subnet] = ipv6_network(d, ("2001:db8:20::/64", "dhcpv6-stateful"))
    port = d.client.port(net["id"])
    bridge = d.wire(net["id"])
    [expected] = addresses(port, 6)
    assert d.plug(bridge, port) == [f"inst-{port['id'][:11]}", expected]
    instance = f"inst-{port['id'][:11]}"
    assert global_ipv6(instance) == {expected}  # no SLAAC address beside it (no A flag)
    assert pings(instance, dhcp_address(d, net["id"], subnet["id"]), wait=2)


def test_dual_stack_gives_ipv4_then_the_ipv6_addresses(deployment: Deployment):
    d = deployment
    d.start_agent()
    net, _ = d.network("10.61.0.0/24")
    v6_subnet(d, net["id"], "2001:db8:30::/64", "dhcpv6-stateful")
    v6_subnet(d, net["id"], "2001:db8:31::/64", "slaac")
    port = d.client.port(net["id"])
    assert len(addresses(port, 6)) == 2  # a stateful address and the SLAAC one
    bridge = d.wire(net["id"])
    printed = d.plug(bridge, port)
    assert printed == [f"inst-{port['id'][:11]}", *addresses(port, 4), *addresses(port, 6)]
    assert global_ipv6(printed[0]) == set(addresses(port, 6))
