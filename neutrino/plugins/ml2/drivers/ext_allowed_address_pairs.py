"""allowed_address_pairs: built into ML2, as Neutron offers it without configuration.

Pairs need port security: a port whose port security is off may not get
pairs, and may not lose port security while it keeps them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from neutrino.config import Config
from neutrino.db import models
from neutrino.db.port_security import network_secured, port_secured
from neutrino.db.query import Page
from neutrino.definitions.allowed_address_pairs import (
    ADDRESS_PAIRS,
    AddressPairAndPortSecurityRequired,
    AllowedAddressPairExhausted,
    DuplicateAddressPairInRequest,
)
from neutrino.definitions.port_security import ENABLED
from neutrino.plugins.extension_driver import ExtensionDriver

AAP = models.allowed_address_pairs


def _completed(pairs: list[dict[str, Any]], port_mac: str) -> list[dict[str, str]]:
    """Each pair with its MAC (the port's unless given); one pair may not appear twice,
    whatever the letter case (MariaDB's keys ignore it)."""
    done: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for pair in pairs:
        mac = pair.get("mac_address", port_mac)
        key = (mac.lower(), pair["ip_address"].lower())
        if key in seen:
            raise DuplicateAddressPairInRequest(mac_address=mac, ip_address=pair["ip_address"])
        seen.add(key)
        done.append({"mac_address": mac, "ip_address": pair["ip_address"]})
    return done


def _insert(conn: Connection, port_id: str, pairs: list[dict[str, str]]) -> None:
    if pairs:
        conn.execute(AAP.insert(), [{**pair, "port_id": port_id, "position": n}
                                    for n, pair in enumerate(pairs)])


def _load(conn: Connection, page: Page) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {}
    for port_id, address, mac in page.read(
            conn, select(AAP.c.port_id, AAP.c.ip_address, AAP.c.mac_address)
            .order_by(AAP.c.port_id, AAP.c.position), AAP.c.port_id):
        found.setdefault(port_id, []).append({"mac_address": mac, "ip_address": address})
    return found


class AllowedAddressPairsExtensionDriver(ExtensionDriver):
    extension_alias = "allowed-address-pairs"
    port_attributes = frozenset({ADDRESS_PAIRS})

    def __init__(self, conf: Config):
        super().__init__(conf)
        self.limit: int = conf.DEFAULT.max_allowed_address_pair

    def _check_limit(self, pairs: list[Any]) -> None:
        if len(pairs) > self.limit:
            raise AllowedAddressPairExhausted(quota=self.limit)

    def process_create_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        pairs = data.get(ADDRESS_PAIRS) or []
        self._check_limit(pairs)
        if pairs:
            secured = view.get(ENABLED, data.get(ENABLED))
            if secured is None:  # the port_security driver has not run (yet)
                secured = network_secured(conn, view["network_id"])
            if not secured:
                raise AddressPairAndPortSecurityRequired()
        stored = _completed(pairs, view["mac_address"])
        _insert(conn, view["id"], stored)
        view[ADDRESS_PAIRS] = stored

    def process_update_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        port_id = view["id"]
        pairs = data.get(ADDRESS_PAIRS)
        if pairs is None and ENABLED not in data:
            return
        if pairs is not None:
            self._check_limit(pairs)
        secured = data[ENABLED] if ENABLED in data else port_secured(conn, port_id)
        if not secured:
            # Neutron's rule: pairs are refused, and kept ones forbid turning security
            # off, unless this same request clears them.
            if pairs or (pairs is None and _load(conn, Page([port_id])).get(port_id)):
                raise AddressPairAndPortSecurityRequired()
        if pairs is None:
            return
        mac = conn.execute(select(models.ports.c.mac_address)
                           .where(models.ports.c.id == port_id)).scalar_one()
        stored = _completed(pairs, mac)
        conn.execute(delete(AAP).where(AAP.c.port_id == port_id))
        _insert(conn, port_id, stored)

    def extend_ports(self, conn: Connection, views: list[dict[str, Any]], page: Page) -> None:
        found = _load(conn, page)
        for view in views:
            view[ADDRESS_PAIRS] = found.get(view["id"], [])
