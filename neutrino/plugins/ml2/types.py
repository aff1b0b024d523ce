"""The type manager: the loaded type drivers and the segment rules across them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.plugins.ml2.api import NETWORK_TYPE, Segment, TypeDriver
from neutrino.plugins.ml2.drivers.errors import NoNetworkAvailable, invalid


class TypeManager:
    def __init__(self, drivers: Mapping[str, TypeDriver], tenant_types: list[str],
                 default_mtu: int):
        missing = [t for t in tenant_types if t not in drivers]
        if missing:
            raise ValueError(f"tenant_network_types {', '.join(missing)} not in type_drivers")
        self.drivers = dict(drivers)
        self.tenant_types = tenant_types
        self.default_mtu = default_mtu

    def sync_allocations(self, conn: Connection) -> None:
        for driver in self.drivers.values():
            driver.sync_allocations(conn)

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

    def reserve_provider_segment(self, conn: Connection, segment: Segment) -> Segment:
        return self.driver(segment).reserve_provider_segment(conn, segment)

    def allocate_tenant_segment(self, conn: Connection) -> Segment:
        for network_type in self.tenant_types:
            segment = self.drivers[network_type].allocate_tenant_segment(conn)
            if segment is not None:
                return segment
        raise NoNetworkAvailable()

    def release_segment(self, conn: Connection, segment: Segment) -> None:
        driver = self.drivers.get(segment[NETWORK_TYPE])
        if driver is not None:  # a type since unloaded keeps its rows
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
