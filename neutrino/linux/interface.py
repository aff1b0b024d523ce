"""Interface drivers: a service port's device (a DHCP port's, say) in its namespace.

The Linux bridge driver makes a veth pair: ``tap<port id[:11]>`` stays in the
agent's namespace, where the Linux bridge L2 agent finds it as it finds an
instance's tap and plugs it into the network's bridge; ``ns-<port id[:11]>``
goes into the service's namespace with the port's MAC and addresses. Every
method converges (may_exist / if_exists), so a reconciler calls them blindly.
"""

from __future__ import annotations

from neutrino.linux.ip import IpNetns

TAP = "tap"
NS = "ns-"
#: the drivers ``interface_driver`` may name, and what may come later
SUPPORTED = ("linuxbridge",)
LATER = ("openvswitch",)


def tap_name(port_id: str) -> str:
    return TAP + port_id[:11]


def device_name(port_id: str) -> str:
    return NS + port_id[:11]


class LinuxBridgeInterfaceDriver:
    """Veth pairs between the agent's namespace (``agent_namespace``; None: the
    one it runs in) and service namespaces."""

    def __init__(self, agent_namespace: str | None = None):
        self.agent_namespace = agent_namespace

    def plug(self, port_id: str, mac: str, mtu: int, namespace: str) -> str:
        """The port's device in ``namespace``, up with ``mac`` and ``mtu``, its tap
        up beside it; the device's name."""
        tap, device = tap_name(port_id), device_name(port_id)
        with IpNetns(self.agent_namespace) as host, IpNetns(namespace) as inside:
            if not inside.exists(device):
                host.delete(tap)  # a pair left half-made
                host.add_veth(tap, device, peer_namespace=namespace)
            inside.set(device, mac=mac, mtu=mtu, up=True)
            host.set(tap, mtu=mtu, up=True)
        return device

    def set_addresses(self, device: str, cidrs: list[str], namespace: str) -> None:
        with IpNetns(namespace) as inside:
            inside.set_addresses(device, cidrs)

    def devices(self, namespace: str) -> list[str]:
        """The devices this driver made in ``namespace``."""
        with IpNetns(namespace) as inside:
            return sorted(name for name in inside.links() if name.startswith(NS))

    def unplug(self, device: str, namespace: str) -> None:
        """Remove the pair (deleting one end takes the other)."""
        with IpNetns(namespace) as inside:
            inside.delete(device)
