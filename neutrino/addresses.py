"""Address arithmetic that the server and the agents share (so it lives
below both): the modified EUI-64 interface identifier of a MAC (RFC 4291,
appendix A), which makes a port's SLAAC addresses and its link-local one.

Pure: no host, no database.
"""

from __future__ import annotations

import ipaddress

LINK_LOCAL = ipaddress.IPv6Network("fe80::/64")


def interface_id(mac: str) -> int:
    """The 64-bit interface identifier of ``mac``: ff:fe in the middle, the
    universal/local bit flipped."""
    octets = [int(part, 16) for part in mac.split(":")]
    octets[0] ^= 0x02
    return int.from_bytes(bytes(octets[:3] + [0xFF, 0xFE] + octets[3:]), "big")


def eui64_address(prefix: ipaddress.IPv6Network, mac: str) -> ipaddress.IPv6Address:
    """The address ``mac`` makes for itself in a /64 ``prefix``."""
    return ipaddress.IPv6Address(int(prefix.network_address) | interface_id(mac))


def eui64(prefix: ipaddress.IPv6Network, mac: str) -> str:
    """``eui64_address`` as text."""
    return str(eui64_address(prefix, mac))


def link_local(mac: str) -> ipaddress.IPv6Address:
    """The fe80::/64 address ``mac`` makes for itself."""
    return eui64_address(LINK_LOCAL, mac)
