"""A port create's first read: its network, the project's port quota and whom
the DHCP notification will go to, in one statement.

Read one by one they were four round trips on SQLite (the quota, the network,
the DHCP agents after the insert) and five on PostgreSQL (the limit, the lock,
the count); none depends on the new port. On PostgreSQL a project with a limit
still has its ports counted in a statement of their own, after the lock
(``neutrino.db.quota``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import true
from sqlalchemy.engine import Connection

from neutrino.context import Context
from neutrino.db.quota import QuotaEngine, QuotaRead
from neutrino.plugins.core import networks
from neutrino.plugins.hooks import DhcpNotifications, DhcpTargets

RESOURCE = "port"


class NetworkRead(NamedTuple):
    network: Any  # the network's row
    dhcp: DhcpTargets | None  # None: not read with it (``DhcpNotifications.targets`` can)


class PortNetworkReader:
    def __init__(self, quota: QuotaEngine, dhcp: DhcpNotifications):
        self.quota = quota
        self.joined = dhcp.joined_targets()
        self._reads: dict[bool, QuotaRead] = {}  # by whether the caller is an admin

    def read(self, conn: Connection, ctx: Context, data: dict[str, Any]) -> NetworkRead:
        """The port's network as the caller may see it (NetworkNotFound), once the
        project's port quota allows one more (OverQuota); in the port's transaction."""
        project_id, network_id = data["project_id"], data["network_id"]
        reading = self._reading(ctx)
        if reading is None:
            self.quota.check(conn, project_id, RESOURCE)
            return NetworkRead(networks.get_row(conn, ctx, network_id), None)
        params = networks.row_params(ctx, network_id)
        dhcp_params = {}
        if self.joined is not None:
            dhcp_params = {"network_id": network_id, **self.joined.params()}
        rows = reading.rows(conn, project_id, {**params, **dhcp_params})
        if not rows:
            networks.get_row(conn, ctx, network_id)  # NetworkNotFound
        dhcp = self.joined.read(rows, dhcp_params) if self.joined is not None else None
        return NetworkRead(rows[0], dhcp)

    def _reading(self, ctx: Context) -> QuotaRead | None:
        """The statement of ``read`` (None: ``networks.get_row`` alone knows what
        the caller may see)."""
        network = networks.row_select(ctx)
        if network is None:
            return None
        if ctx.is_admin not in self._reads:
            if self.joined is not None:
                network = (network.add_columns(*self.joined.rows.c)
                           .select_from(networks.N.outerjoin(self.joined.rows, true()))
                           .order_by(self.joined.order_by))
            self._reads[ctx.is_admin] = self.quota.reading(RESOURCE, network)
        return self._reads[ctx.is_admin]
