"""ML2's options, in Neutron's sections and names."""

from __future__ import annotations

from neutrino.config import Opt, OptGroup, choice, int_range, parse_list
from neutrino.ovn.options import OVN


def parse_physnet_mtus(text: str) -> dict[str, int]:
    """``physnet1:1500,physnet2:9000``."""
    found = {}
    for item in parse_list(text):
        name, sep, mtu = item.rpartition(":")
        if not sep or not name:
            raise ValueError(f"expected physnet:mtu, not {item!r}")
        found[name] = int_range(68)(mtu)
    return found


def parse_ranges(text: str) -> list[tuple[int, int]]:
    """``1:1000,2000:2100`` (inclusive ranges)."""
    ranges = []
    for item in parse_list(text):
        low, sep, high = item.partition(":")
        if not sep:
            raise ValueError(f"expected min:max, not {item!r}")
        first, last = int_range(0)(low), int_range(0)(high)
        if first > last:
            raise ValueError(f"range {item!r} ends before it starts")
        ranges.append((first, last))
    return ranges


def parse_vlan_ranges(text: str) -> dict[str, list[tuple[int, int]]]:
    """``physnet1:100:200,physnet2`` -- a physnet alone is usable for provider networks only."""
    found: dict[str, list[tuple[int, int]]] = {}
    for item in parse_list(text):
        parts = item.split(":")
        if len(parts) == 1:
            found.setdefault(parts[0], [])
            continue
        if len(parts) != 3 or not parts[0]:
            raise ValueError(f"expected physnet or physnet:min:max, not {item!r}")
        first, last = int_range(1, 4094)(parts[1]), int_range(1, 4094)(parts[2])
        if first > last:
            raise ValueError(f"range {item!r} ends before it starts")
        found.setdefault(parts[0], []).append((first, last))
    return found


OPTION_GROUPS = (
    OptGroup("ml2", [
        Opt("type_drivers", parse_list, ["local", "flat", "vlan", "gre", "vxlan", "geneve"],
            "Network segment types to load."),
        Opt("tenant_network_types", parse_list, ["local"],
            "Types for project networks, in order of preference."),
        Opt("mechanism_drivers", parse_list, [], "Mechanism drivers, in call order."),
        Opt("extension_drivers", parse_list, [], "Extension drivers to load."),
        Opt("path_mtu", int_range(0), 0, "MTU of the overlay's underlay path (0: use "
            "global_physnet_mtu)."),
        Opt("physical_network_mtus", parse_physnet_mtus, {}, "physnet:mtu overrides."),
        Opt("overlay_ip_version", choice("4", "6"), "4", "IP version of tunnel endpoints."),
    ]),
    OptGroup("ml2_type_flat", [
        Opt("flat_networks", parse_list, ["*"], "Physnets usable by flat networks ('*': any)."),
    ]),
    OptGroup("ml2_type_vlan", [
        Opt("network_vlan_ranges", parse_vlan_ranges, {}, "physnet[:min:max] list."),
    ]),
    OptGroup("ml2_type_vxlan", [
        Opt("vni_ranges", parse_ranges, [], "VNI ranges for project networks."),
        Opt("vxlan_group", str, "", "Multicast group for VXLAN (empty: unicast)."),
    ]),
    OptGroup("ml2_type_gre", [
        Opt("tunnel_id_ranges", parse_ranges, [], "GRE key ranges for project networks."),
    ]),
    OptGroup("ml2_type_geneve", [
        Opt("vni_ranges", parse_ranges, [], "VNI ranges for project networks."),
        Opt("max_header_size", int_range(30), 38, "Geneve header size to reserve."),
    ]),
    OVN,
)
