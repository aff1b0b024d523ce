"""flat: untagged traffic on a physical network; one network per physnet."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from neutrino.plugins.ml2 import allocations
from neutrino.plugins.ml2.api import (
    PHYSICAL_NETWORK,
    SEGMENTATION_ID,
    Pools,
    Segment,
    TypeDriver,
)
from neutrino.plugins.ml2.drivers.errors import FlatNetworkInUse, invalid
from neutrino.plugins.ml2.drivers.mtu import physnet_mtu


class FlatTypeDriver(TypeDriver):
    network_type = "flat"

    @property
    def flat_networks(self) -> list[str]:
        return self.conf.ml2_type_flat.flat_networks

    def validate_provider_segment(self, segment: Segment) -> None:
        physnet = segment.get(PHYSICAL_NETWORK)
        if not physnet:
            raise invalid("physical_network required for flat provider network")
        if "*" not in self.flat_networks and physnet not in self.flat_networks:
            raise invalid(f"physical_network '{physnet}' unknown for flat provider network")
        if segment.get(SEGMENTATION_ID) is not None:
            raise invalid("segmentation_id prohibited for flat provider network")

    def reserve_provider_segment(self, conn: Connection, segment: Segment,
                                 pools: Pools | None = None) -> Segment:
        physnet = segment[PHYSICAL_NETWORK]
        if not allocations.reserve(conn, self.network_type, physnet, 0):
            raise FlatNetworkInUse(physical_network=physnet)
        return {**segment, SEGMENTATION_ID: None}

    def release_segment(self, conn: Connection, segment: Segment,
                        keep_free: bool = False) -> None:
        allocations.release(conn, self.network_type, segment[PHYSICAL_NETWORK], 0, [])

    def get_mtu(self, physical_network: str | None) -> int:
        return physnet_mtu(self.conf, physical_network)
