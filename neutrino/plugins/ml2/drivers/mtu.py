"""MTU arithmetic shared by the type drivers."""

from __future__ import annotations

from neutrino.config import Config

IP_HEADER = {4: 20, 6: 40}


def smallest(*values: int) -> int:
    """The smallest of the values that are set (0 means unset)."""
    present = [v for v in values if v > 0]
    return min(present) if present else 0


def physnet_mtu(conf: Config, physical_network: str | None) -> int:
    mtus = conf.ml2.physical_network_mtus
    return smallest(conf.DEFAULT.global_physnet_mtu,
                    mtus.get(physical_network, 0) if physical_network else 0)


def tunnel_mtu(conf: Config, encap_overhead: int) -> int:
    underlay = smallest(conf.DEFAULT.global_physnet_mtu, conf.ml2.path_mtu)
    if underlay == 0:
        return 0
    return underlay - encap_overhead - IP_HEADER[int(conf.ml2.overlay_ip_version)]
