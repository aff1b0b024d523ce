"""Extension drivers each keeping one port attribute in a table of its own
(``port_numa_affinity_policy``, ``port_device_profile``, ``port_trusted``, as
Neutron names them): a row while the port has a value, none for null."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Table, delete, insert, select
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.db.query import Page
from neutrino.definitions.port_attributes import DEVICE_PROFILE, NUMA_AFFINITY_POLICY, TRUSTED
from neutrino.plugins.extension_driver import ExtensionDriver


class PortAttributeDriver(ExtensionDriver):
    """``attribute`` of ports, as the column of that name in ``table``."""

    table: ClassVar[Table]
    attribute: ClassVar[str]

    def _store(self, conn: Connection, port_id: str, value: Any) -> None:
        conn.execute(delete(self.table).where(self.table.c.port_id == port_id))
        if value is not None:
            conn.execute(insert(self.table).values(port_id=port_id, **{self.attribute: value}))

    def process_create_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        value = data.get(self.attribute)
        if value is not None:
            conn.execute(insert(self.table).values(port_id=view["id"],
                                                   **{self.attribute: value}))
        view[self.attribute] = value

    def process_update_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        if self.attribute in data:
            self._store(conn, view["id"], data[self.attribute])
            view[self.attribute] = data[self.attribute]

    def extend_ports(self, conn: Connection, views: list[dict[str, Any]], page: Page) -> None:
        column = self.table.c.port_id
        found = dict(page.read(conn, select(column, self.table.c[self.attribute]), column))
        for view in views:
            view[self.attribute] = found.get(view["id"])


class NumaAffinityPolicyDriver(PortAttributeDriver):
    extension_alias = "port-numa-affinity-policy"
    port_attributes = frozenset({NUMA_AFFINITY_POLICY})
    table = models.port_numa_affinity_policies
    attribute = NUMA_AFFINITY_POLICY


class NumaAffinityPolicySocketDriver(NumaAffinityPolicyDriver):
    """The same, with the "socket" policy too."""

    extension_aliases = ("port-numa-affinity-policy-socket",)


class DeviceProfileDriver(PortAttributeDriver):
    extension_alias = "port-device-profile"
    port_attributes = frozenset({DEVICE_PROFILE})
    table = models.port_device_profiles
    attribute = DEVICE_PROFILE


class TrustedDriver(PortAttributeDriver):
    extension_alias = "port-trusted-vif"
    port_attributes = frozenset({TRUSTED})
    table = models.port_trusted
    attribute = TRUSTED
