"""What the L2 agents call on the ``trunk`` plugin (``rpc.contracts.trunk``):
a trunk's details by its parent, its subports' bindings, its status.

The subports follow their parent: ``update_subport_bindings`` gives each the
parent's ``binding:host_id`` through the core plugin's ``update_port``, so that
ML2 binds them there as it binds any port, and the agent that wires the trunk
then finds them (their ``spi-`` patches on br-int) and sets them ACTIVE through
the usual device-up path. A subport ML2 cannot bind there leaves the trunk
DEGRADED, as in Neutron.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import Page
from neutrino.db.util import bump
from neutrino.definitions import trunk as tdef
from neutrino.rpc.contracts import trunk as contract

if TYPE_CHECKING:
    from neutrino.services.trunk import TrunkPlugin

LOG = logging.getLogger(__name__)
T, S, P = models.trunks, models.subports, models.ports
BINDINGS = models.port_bindings
ADMIN = Context.admin()
STATUSES = frozenset({tdef.DOWN, tdef.BUILD, tdef.ACTIVE, tdef.DEGRADED, tdef.ERROR})
HOST_ID = "binding:host_id"


def details_of(conn: Connection, port_ids: list[str]) -> dict[str, contract.TrunkDetails]:
    """parent port id -> its trunk, for the parents among ``port_ids``: two statements."""
    page = Page.of(sorted(set(port_ids)))
    found: dict[str, contract.TrunkDetails] = {}
    for row in page.read(conn, select(T.c.id, T.c.port_id, T.c.admin_state_up, T.c.status),
                         T.c.port_id):
        found[row.port_id] = {"trunk_id": row.id, "port_id": row.port_id,
                              "admin_state_up": bool(row.admin_state_up),
                              "status": row.status, "sub_ports": []}
    if not found:
        return found
    by_trunk = {details["trunk_id"]: details for details in found.values()}
    stmt = (select(S.c.trunk_id, S.c.port_id, S.c.segmentation_type, S.c.segmentation_id,
                   P.c.mac_address).join(P, P.c.id == S.c.port_id)
            .where(S.c.trunk_id.in_(list(by_trunk))).order_by(S.c.port_id))
    for row in conn.execute(stmt):
        by_trunk[row.trunk_id]["sub_ports"].append({
            "port_id": row.port_id, "segmentation_type": row.segmentation_type,
            "segmentation_id": row.segmentation_id, "mac_address": row.mac_address})
    return found


def _host_of(conn: Connection, port_id: str) -> str:
    """The host the port is bound to ('' when unbound)."""
    return conn.execute(select(BINDINGS.c.host).where(
        BINDINGS.c.port_id == port_id, BINDINGS.c.status == "ACTIVE")).scalar() or ""


def _set_status(conn: Connection, trunk_id: str, status: str, host: str | None = None
                ) -> None:
    """The trunk's status, its revision bumped when it changes; a trunk gone meanwhile
    is passed over (its agent may report after the delete), and so is a DOWN
    from ``host`` when the parent is bound to another (it moved: the new host's
    agent reports)."""
    row = conn.execute(select(T.c.status, T.c.port_id).where(T.c.id == trunk_id)
                       .with_for_update()).first()
    if row is None or row.status == status:
        return
    if status == tdef.DOWN and host and _host_of(conn, row.port_id) not in ("", host):
        return
    bump(conn, T, trunk_id, values={"status": status})


class TrunkRpcCallback:
    """The server's end of ``trunk``."""

    rpc_version = contract.VERSION
    rpc_namespace = contract.NAMESPACE

    def __init__(self, plugin: TrunkPlugin):
        self._plugin = plugin

    def get_trunk_details(self, context: dict[str, Any], port_ids: list[str],
                          **kwargs: Any) -> dict[str, contract.TrunkDetails]:
        if not isinstance(port_ids, list) or not all(isinstance(p, str) for p in port_ids):
            raise exc.InvalidInput(error_message="port_ids must be a list of port ids")
        return self._plugin._read(lambda conn: details_of(conn, port_ids))

    def update_trunk_status(self, context: dict[str, Any], trunk_id: str, status: str,
                            host: str | None = None, **kwargs: Any) -> None:
        if status not in STATUSES:
            raise exc.InvalidInput(error_message=f"Unknown trunk status '{status}'")
        self._plugin.db.write(lambda conn: _set_status(conn, trunk_id, status, host))

    def update_subport_bindings(self, context: dict[str, Any], trunk_id: str,
                                **kwargs: Any) -> list[str]:
        """The subports take the parent's host, the trunk BUILD meanwhile (and
        DEGRADED if a subport is not bound at the end); those bound."""
        found = self._plugin._read(lambda conn: _parent_and_subports(conn, trunk_id))
        if found is None:
            LOG.debug("trunk %s is gone: no subport to bind", trunk_id)
            return []
        host, subports = found
        self._plugin.db.write(lambda conn: _set_status(conn, trunk_id, tdef.BUILD))
        for port_id, (now_host, _) in sorted(subports.items()):
            if now_host != host:
                try:
                    self._plugin.core.update_port(ADMIN, port_id, {HOST_ID: host})
                except exc.NeutronException as error:  # gone meanwhile, say
                    LOG.warning("subport %s of trunk %s not bound to %r: %s", port_id,
                                trunk_id, host, error)
        after = self._plugin._read(lambda conn: _parent_and_subports(conn, trunk_id))
        bound = sorted(port_id for port_id, (now_host, vif_type) in (after or (host, {}))[1]
                       .items() if now_host == host and vif_type != "binding_failed")
        if len(bound) < len(subports):
            LOG.warning("trunk %s: subports %s could not be bound on %r", trunk_id,
                        ", ".join(sorted(set(subports) - set(bound))), host)
            self._plugin.db.write(lambda conn: _set_status(conn, trunk_id, tdef.DEGRADED))
        return bound


def _parent_and_subports(conn: Connection, trunk_id: str
                         ) -> tuple[str, dict[str, tuple[str, str]]] | None:
    """The host of the trunk's parent, and subport id -> (its host, its vif_type);
    None for a trunk gone."""
    parent = conn.execute(select(T.c.port_id).where(T.c.id == trunk_id)).scalar()
    if parent is None:
        return None
    subports = {port_id: ("", "unbound") for port_id in conn.execute(
        select(S.c.port_id).where(S.c.trunk_id == trunk_id)).scalars()}
    if subports:
        for row in conn.execute(select(BINDINGS.c.port_id, BINDINGS.c.host,
                                       BINDINGS.c.vif_type).where(
                BINDINGS.c.port_id.in_(list(subports)), BINDINGS.c.status == "ACTIVE")):
            subports[row.port_id] = (row.host, row.vif_type)
    return _host_of(conn, parent), subports
