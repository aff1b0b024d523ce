"""The type manager: the loaded type drivers and the segment rules across them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.plugins.hooks import Hooks, IdRange, SegmentPools, SegmentRanges
from neutrino.plugins.ml2 import allocations
from neutrino.plugins.ml2.api import NETWORK_TYPE, SEGMENTATION_ID, Segment, TypeDriver
from neutrino.plugins.ml2.drivers.errors import NoNetworkAvailable, invalid


class TypeManager:
    """The loaded type drivers. With the network segment ranges' plugin loaded
    (``hooks.segment_ranges``), the types whose ids come from ranges allocate
    within the pools it gives a project, and their free ids follow its ranges."""

    def __init__(self, drivers: Mapping[str, TypeDriver], tenant_types: list[str],
                 default_mtu: int, hooks: Hooks | None = None):
        missing = [t for t in tenant_types if t not in drivers]
        if missing:
            raise ValueError(f"tenant_network_types {', '.join(missing)} not in type_drivers")
        self.drivers = dict(drivers)
        self.tenant_types = tenant_types
        self.default_mtu = default_mtu
        self.hooks = hooks

    @property
    def segment_ranges(self) -> SegmentRanges | None:
        """The network segment ranges, when their plugin is loaded (it is built
        after the core plugin, so looked up when needed)."""
        return self.hooks.segment_ranges if self.hooks is not None else None

    def range_types(self) -> dict[str, tuple[int, int]]:
        """Network type -> its lowest and highest id, of the types whose ids come
        from ranges."""
        return {t: d.id_range for t, d in self.drivers.items() if d.id_range is not None}

    def sync_allocations(self, conn: Connection) -> None:
        ranges = self.segment_ranges
        if ranges is None:
            for driver in self.drivers.values():
                driver.sync_allocations(conn)
            return
        ranged = self.range_types()
        everything = ranges.follow_config(conn, {
            t: self.drivers[t].configured_ranges() for t in ranged})
        for network_type, driver in self.drivers.items():
            if network_type in ranged:
                allocations.sync(conn, network_type,
                                 allocations.by_physnet(everything.get(network_type, [])))
            else:
                driver.sync_allocations(conn)

    def follow_ranges(self, conn: Connection, network_type: str, ranges: list[IdRange],
                      changed: list[IdRange]) -> None:
        """The type's free ids within ``changed`` follow ``ranges`` (all of the type's)."""
        driver = self.drivers.get(network_type)
        if driver is None or driver.id_range is None or not changed:
            return  # a type since unloaded: its rows wait for its driver's sync
        allocations.sync(conn, network_type, allocations.by_physnet(ranges),
                         allocations.by_physnet(changed))

    def driver(self, segment: Segment) -> TypeDriver:
        network_type = segment.get(NETWORK_TYPE)
        if network_type is None:
            raise invalid("network_type required")
        driver = self.drivers.get(network_type)
        if driver is None:
            raise invalid(f"network_type value '{network_type}' not supported")
        return driver

    def validate_provider_segment(self, segment: Segment) -> None:
        self.driver(segment).validate_provider_segment(segment)

    def reserve_provider_segment(self, conn: Connection, segment: Segment,
                                 project_id: str | None = None) -> Segment:
        """The requested segment; a partial one of a ranged type takes its id from
        the pools of ``project_id`` (None: the shared ranges less the projects')."""
        driver = self.driver(segment)
        ranges = self.segment_ranges
        if ranges is None or driver.id_range is None or segment.get(SEGMENTATION_ID) is not None:
            return driver.reserve_provider_segment(conn, segment)
        pools = ranges.pools(conn, project_id).get(driver.network_type, [])
        return driver.reserve_provider_segment(conn, segment, pools)

    def allocate_tenant_segment(self, conn: Connection, project_id: str | None = None
                                ) -> Segment:
        ranges = self.segment_ranges
        pools: SegmentPools | None = None
        for network_type in self.tenant_types:
            driver = self.drivers[network_type]
            if ranges is not None and driver.id_range is not None:
                if pools is None:  # read once, for every type tried
                    pools = ranges.pools(conn, project_id)
                segment = driver.allocate_tenant_segment(conn, pools.get(network_type, []))
            else:
                segment = driver.allocate_tenant_segment(conn)
            if segment is not None:
                return segment
        raise NoNetworkAvailable()

    def release_segment(self, conn: Connection, segment: Segment) -> None:
        driver = self.drivers.get(segment[NETWORK_TYPE])
        if driver is None:  # a type since unloaded keeps its rows
            return
        if self.segment_ranges is not None and driver.id_range is not None:
            driver.release_segment(conn, segment, keep_free=True)
        else:
            driver.release_segment(conn, segment)

    def network_mtu(self, segments: list[Segment]) -> int:
        """The smallest MTU any segment allows; the physnet default when none limits."""
        mtus = [self.drivers[s[NETWORK_TYPE]].get_mtu(s.get("physical_network"))
                for s in segments if s[NETWORK_TYPE] in self.drivers]
        mtus = [m for m in mtus if m > 0]
        return min(mtus) if mtus else self.default_mtu


def check_requested_mtu(requested: Any, maximum: int) -> None:
    if requested is not None and requested > maximum:
        raise exc.InvalidInput(error_message=f"Requested MTU is too big, maximum is {maximum}")
