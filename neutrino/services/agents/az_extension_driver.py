"""network_availability_zone: the zones a network is asked to be in, and is in.

``availability_zone_hints`` (given at create, checked against the zones of the
DHCP agents) are kept for the DHCP scheduler; ``availability_zones`` are the
zones of the DHCP agents hosting the network. ML2 always loads this driver,
as Neutron's ML2 always offers the extension.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.query import Page
from neutrino.definitions.availability_zone import AVAILABILITY_ZONES, AZ_HINTS
from neutrino.plugins.extension_driver import ExtensionDriver
from neutrino.services.agents import db as agents_db
from neutrino.services.agents import scheduling

HINTS = models.network_availability_zone_hints


class NetworkAvailabilityZoneExtensionDriver(ExtensionDriver):
    extension_alias = "network_availability_zone"
    port_attributes: ClassVar[frozenset[str] | None] = frozenset()  # networks' only

    def process_create_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        hints = list(data.get(AZ_HINTS) or [])
        agents_db.check_zones(conn, "network", hints)
        agents_db.add_hints(conn, HINTS, view["id"], hints)
        view[AZ_HINTS] = hints
        view[AVAILABILITY_ZONES] = []

    def extend_networks(self, conn: Connection, views: list[dict[str, Any]], page: Page
                        ) -> None:
        ids = page.ids
        found = agents_db.load_hints(conn, HINTS, ids)
        zones = scheduling.zones_of(conn, scheduling.DHCP, ids)
        for view in views:
            view[AZ_HINTS] = found.get(view["id"], [])
            view[AVAILABILITY_ZONES] = zones[view["id"]]
