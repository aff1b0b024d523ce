"""vlan: 802.1Q-tagged segments of physical networks, ids from network_vlan_ranges."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from neutrino.plugins.ml2 import allocations
from neutrino.plugins.ml2.api import (
    PHYSICAL_NETWORK,
    SEGMENTATION_ID,
    IdRange,
    Pools,
    Segment,
    TypeDriver,
)
from neutrino.plugins.ml2.drivers.errors import NoNetworkAvailable, VlanIdInUse, invalid
from neutrino.plugins.ml2.drivers.mtu import physnet_mtu

MIN_VLAN, MAX_VLAN = 1, 4094


class VlanTypeDriver(TypeDriver):
    network_type = "vlan"
    id_range = (MIN_VLAN, MAX_VLAN)

    @property
    def ranges(self) -> dict[str, list[tuple[int, int]]]:
        return self.conf.ml2_type_vlan.network_vlan_ranges

    def configured_ranges(self) -> list[IdRange]:
        return [(physnet, first, last) for physnet, spans in self.ranges.items()
                for first, last in spans]

    def sync_allocations(self, conn: Connection) -> None:
        allocations.sync(conn, self.network_type, self.ranges)

    def validate_provider_segment(self, segment: Segment) -> None:
        physnet, seg_id = segment.get(PHYSICAL_NETWORK), segment.get(SEGMENTATION_ID)
        if physnet is None:
            if seg_id is not None:
                raise invalid("segmentation_id requires physical_network for VLAN provider "
                              "network")
            return
        if physnet not in self.ranges:
            raise invalid(f"physical_network '{physnet}' unknown for VLAN provider network")
        if seg_id is not None and not MIN_VLAN <= seg_id <= MAX_VLAN:
            raise invalid(f"segmentation_id out of range ({MIN_VLAN} through {MAX_VLAN})")

    def reserve_provider_segment(self, conn: Connection, segment: Segment,
                                 pools: Pools | None = None) -> Segment:
        physnet, seg_id = segment.get(PHYSICAL_NETWORK), segment.get(SEGMENTATION_ID)
        if seg_id is None:  # a partial request: any free id (of the physnet if named)
            found = allocations.allocate_free(conn, self.network_type,
                                              [physnet] if physnet else None, pools)
            if found is None:
                raise NoNetworkAvailable()
            physnet, seg_id = found
        elif physnet is None:  # as validate_provider_segment says, for any other caller
            raise invalid("segmentation_id requires physical_network for VLAN provider "
                          "network")
        elif not allocations.reserve(conn, self.network_type, physnet, seg_id):
            raise VlanIdInUse(vlan_id=seg_id, physical_network=physnet)
        return {**segment, PHYSICAL_NETWORK: physnet, SEGMENTATION_ID: seg_id}

    def allocate_tenant_segment(self, conn: Connection, pools: Pools | None = None
                                ) -> Segment | None:
        found = allocations.allocate_free(conn, self.network_type, pools=pools)
        if found is None:
            return None
        return {"network_type": self.network_type, PHYSICAL_NETWORK: found[0],
                SEGMENTATION_ID: found[1]}

    def release_segment(self, conn: Connection, segment: Segment,
                        keep_free: bool = False) -> None:
        physnet = segment[PHYSICAL_NETWORK]
        allocations.release(conn, self.network_type, physnet, segment[SEGMENTATION_ID],
                            None if keep_free else self.ranges.get(physnet, []))

    def get_mtu(self, physical_network: str | None) -> int:
        return physnet_mtu(self.conf, physical_network)
