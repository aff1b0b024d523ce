"""Overlay types: vxlan, gre and geneve. Ids come from configured ranges; the
MTU is the underlay's less the encapsulation."""

from __future__ import annotations

from typing import ClassVar

from sqlalchemy.engine import Connection

from neutrino.plugins.ml2 import allocations
from neutrino.plugins.ml2.allocations import NO_PHYSNET
from neutrino.plugins.ml2.api import (
    PHYSICAL_NETWORK,
    SEGMENTATION_ID,
    IdRange,
    Pools,
    Segment,
    TypeDriver,
)
from neutrino.plugins.ml2.drivers.errors import NoNetworkAvailable, TunnelIdInUse, invalid
from neutrino.plugins.ml2.drivers.mtu import tunnel_mtu


class TunnelTypeDriver(TypeDriver):
    max_id: ClassVar[int] = 2 ** 24 - 1
    id_range = (1, max_id)
    #: encapsulation header bytes, without the outer IP header
    overhead: ClassVar[int] = 0
    #: (config section, option) holding the ranges
    ranges_option: ClassVar[tuple[str, str]] = ("", "")

    @property
    def ranges(self) -> list[tuple[int, int]]:
        section, option = self.ranges_option
        return getattr(self.conf.group(section), option)

    def configured_ranges(self) -> list[IdRange]:
        return [(None, first, last) for first, last in self.ranges]

    def sync_allocations(self, conn: Connection) -> None:
        allocations.sync(conn, self.network_type, {NO_PHYSNET: self.ranges})

    def validate_provider_segment(self, segment: Segment) -> None:
        if segment.get(PHYSICAL_NETWORK) is not None:
            raise invalid(f"provider:physical_network specified for {self.network_type} "
                          "network")
        seg_id = segment.get(SEGMENTATION_ID)
        if seg_id is not None and not 1 <= seg_id <= self.max_id:
            raise invalid(f"segmentation_id out of range (1 through {self.max_id})")

    def reserve_provider_segment(self, conn: Connection, segment: Segment,
                                 pools: Pools | None = None) -> Segment:
        seg_id = segment.get(SEGMENTATION_ID)
        if seg_id is None:
            allocated = self.allocate_tenant_segment(conn, pools)
            if allocated is None:
                raise NoNetworkAvailable()
            return {**segment, **allocated}
        if not allocations.reserve(conn, self.network_type, NO_PHYSNET, seg_id):
            raise TunnelIdInUse(tunnel_id=seg_id)
        return {**segment, PHYSICAL_NETWORK: None}

    def allocate_tenant_segment(self, conn: Connection, pools: Pools | None = None
                                ) -> Segment | None:
        found = allocations.allocate_free(conn, self.network_type, pools=pools)
        if found is None:
            return None
        return {"network_type": self.network_type, PHYSICAL_NETWORK: None,
                SEGMENTATION_ID: found[1]}

    def release_segment(self, conn: Connection, segment: Segment,
                        keep_free: bool = False) -> None:
        allocations.release(conn, self.network_type, NO_PHYSNET, segment[SEGMENTATION_ID],
                            None if keep_free else self.ranges)

    def get_mtu(self, physical_network: str | None) -> int:
        return tunnel_mtu(self.conf, self.encap_overhead())

    def encap_overhead(self) -> int:
        return self.overhead


class VxlanTypeDriver(TunnelTypeDriver):
    network_type = "vxlan"
    overhead = 30  # outer Ethernet 14 + UDP 8 + VXLAN 8
    ranges_option = ("ml2_type_vxlan", "vni_ranges")


class GreTypeDriver(TunnelTypeDriver):
    network_type = "gre"
    max_id = 2 ** 32 - 1
    id_range = (1, max_id)
    overhead = 22  # outer Ethernet 14 + GRE with key 8
    ranges_option = ("ml2_type_gre", "tunnel_id_ranges")


class GeneveTypeDriver(TunnelTypeDriver):
    network_type = "geneve"
    ranges_option = ("ml2_type_geneve", "vni_ranges")

    def encap_overhead(self) -> int:
        return self.conf.ml2_type_geneve.max_header_size
