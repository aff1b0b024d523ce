"""The names of the devices the agents make for ports and networks.

Linux allows 15 characters in a device name, so a port or network is named
by the first 11 characters of its id after a short prefix, as Neutron does:
``tap<port>`` (the host end of a port), ``ns-``/``qr-``/``qg-<port>`` (the end
in a DHCP or router namespace), ``brq<network>`` (a Linux bridge). Instances,
the DHCP and L3 agents, the L2 agents and the commands that plug instances
all must agree on them, so they are written once, here.
"""

from __future__ import annotations

#: how much of an id a device name keeps
ID_CHARS = 11
TAP = "tap"
NS = "ns-"
BRIDGE = "brq"


def tap_name(port_id: str) -> str:
    return TAP + port_id[:ID_CHARS]


def device_name(port_id: str, prefix: str = NS) -> str:
    """``prefix``: ``ns-`` for DHCP ports; routers' are ``qr-`` and ``qg-``."""
    return prefix + port_id[:ID_CHARS]


def tap_of(device: str) -> str:
    """The tap end of a pair from its namespace end's name (``ns-``, ``qr-``, ``qg-``)."""
    return TAP + device[len(NS):]


def bridge_name(network_id: str) -> str:
    return BRIDGE + network_id[:ID_CHARS]
