"""Interface drivers: a service port's device (a DHCP port's, say) in its namespace.

The Linux bridge driver makes a veth pair: ``tap<port id[:11]>`` stays in the
agent's namespace, where the Linux bridge L2 agent finds it as it finds an
instance's tap and plugs it into the network's bridge; ``ns-<port id[:11]>``
goes into the service's namespace with the port's MAC and addresses. Every
method converges (may_exist / if_exists), so a reconciler calls them blindly.

A new ``ns-`` device is told, before it comes up, to skip IPv6 duplicate
address detection (its addresses are the server's, unique by allocation; with
DAD a new address is unusable for a second or more, and dnsmasq cannot bind to
it) and to ignore router advertisements (a service port's addresses are the
server's; Neutron's DHCP agent turns them off too).
"""

from __future__ import annotations

import logging
import subprocess
import time

from neutrino.linux.ip import IpNetns, set_ipv6_conf

LOG = logging.getLogger(__name__)

TAP = "tap"
NS = "ns-"
#: the drivers ``interface_driver`` may name, and what may come later
SUPPORTED = ("linuxbridge",)
LATER = ("openvswitch",)


def _no_dad_no_ra(device: str, namespace: str) -> None:
    """Best effort: without it the device still works, once DAD is done."""
    try:
        set_ipv6_conf(namespace, device, accept_dad=0, accept_ra=0)
    except (OSError, subprocess.SubprocessError) as error:
        LOG.warning("%s in %s: IPv6 DAD and RAs left on: %s", device, namespace, error)


def tap_name(port_id: str) -> str:
    return TAP + port_id[:11]


def device_name(port_id: str, prefix: str = NS) -> str:
    """``prefix``: ``ns-`` for DHCP ports; routers' are ``qr-`` and ``qg-``."""
    return prefix + port_id[:11]


def parse_driver(text: str) -> str:
    """``interface_driver``: one of ``SUPPORTED``, or empty (no dataplane)."""
    value = text.strip()
    if value in LATER:
        raise ValueError(f"the {value} interface driver is not supported yet; "
                         f"use {', '.join(SUPPORTED)}")
    if value and value not in SUPPORTED:
        raise ValueError(f"must be one of {', '.join(SUPPORTED)}")
    return value


class LinuxBridgeInterfaceDriver:
    """Veth pairs between the agent's namespace (``agent_namespace``; None: the
    one it runs in) and service namespaces."""

    def __init__(self, agent_namespace: str | None = None):
        self.agent_namespace = agent_namespace

    def plug(self, port_id: str, mac: str, mtu: int, namespace: str, prefix: str = NS) -> str:
        """The port's device (``prefix`` + 11 of its id) in ``namespace``, up with
        ``mac`` and ``mtu``, its tap up beside it; the device's name."""
        with IpNetns(self.agent_namespace) as host, IpNetns(namespace) as inside:
            return self.plug_with(host, inside, port_id, mac, mtu, prefix)

    def plug_with(self, host: IpNetns, inside: IpNetns, port_id: str, mac: str, mtu: int,
                  prefix: str = NS) -> str:
        """``plug`` through sockets the caller holds (``host``: the agent's
        namespace, ``inside``: the service's): opening one into a namespace
        costs more than the work, and a router plugs several devices."""
        assert inside.namespace is not None
        tap, device = tap_name(port_id), device_name(port_id, prefix)
        if not inside.exists(device):
            host.delete(tap)  # a pair left half-made
            host.add_veth(tap, device, peer_namespace=inside.namespace)
            _no_dad_no_ra(device, inside.namespace)
        inside.set(device, mac=mac, mtu=mtu, up=True)
        host.set(tap, mtu=mtu, up=True)
        return device

    def set_addresses(self, device: str, cidrs: list[str], namespace: str) -> None:
        with IpNetns(namespace) as inside:
            inside.set_addresses(device, cidrs)

    def wait_usable(self, device: str, namespace: str, timeout: float = 10.0) -> None:
        """Until no address of the device is tentative (a device made before DAD
        was turned off for it, or by something else): a daemon binding to its
        addresses would fail until then."""
        deadline = time.monotonic() + timeout
        with IpNetns(namespace) as inside:
            while pending := inside.tentative(device):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{device} in {namespace}: duplicate address "
                                       f"detection not done for {', '.join(pending)}")
                time.sleep(0.05)

    def devices(self, namespace: str, prefixes: tuple[str, ...] = (NS,)) -> list[str]:
        """The devices this driver made in ``namespace`` (named with ``prefixes``)."""
        with IpNetns(namespace) as inside:
            return sorted(name for name in inside.links() if name.startswith(prefixes))

    def unplug(self, device: str, namespace: str) -> None:
        """Remove the pair (deleting one end takes the other)."""
        with IpNetns(namespace) as inside:
            inside.delete(device)
