"""local: a network that exists on one host only; no ids, no physnet."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from neutrino.plugins.ml2.api import (
    PHYSICAL_NETWORK,
    SEGMENTATION_ID,
    Pools,
    Segment,
    TypeDriver,
)
from neutrino.plugins.ml2.drivers.errors import invalid


class LocalTypeDriver(TypeDriver):
    network_type = "local"

    def validate_provider_segment(self, segment: Segment) -> None:
        for key in (PHYSICAL_NETWORK, SEGMENTATION_ID):
            if segment.get(key) is not None:
                raise invalid(f"{key} prohibited for local provider network")

    def reserve_provider_segment(self, conn: Connection, segment: Segment,
                                 pools: Pools | None = None) -> Segment:
        return {**segment, PHYSICAL_NETWORK: None, SEGMENTATION_ID: None}

    def allocate_tenant_segment(self, conn: Connection, pools: Pools | None = None
                                ) -> Segment | None:
        return {"network_type": "local", PHYSICAL_NETWORK: None, SEGMENTATION_ID: None}
