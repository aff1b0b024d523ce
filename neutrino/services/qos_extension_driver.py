"""qos: the ``qos_policy_id`` of networks and ports (``[ml2] extension_drivers =
qos``, with ``service_plugins = qos``), and a port's ``qos_network_policy_id``.

A network created without a policy takes its project's default one
(``qos-default``), as in Neutron; a port takes none (its network's shows as
``qos_network_policy_id``). A policy given must exist and be the resource's
project's or shared with it (QosPolicyNotFound): Neutron asks whether the
caller sees it, here whether the resource's project does, which the caller's
own resources make the same. A policy bound to anything is not deleted (the
plugin's QosPolicyInUse).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.engine import Connection

from neutrino.db import models, rbac
from neutrino.db.query import Page
from neutrino.definitions import qos as qdef
from neutrino.plugins.extension_driver import ExtensionDriver
from neutrino.services import qos_resource_request as resource_request

Q, D = models.qos_policies, models.qos_default_policies
NB, PB = models.qos_network_policy_bindings, models.qos_port_policy_bindings
N, P = models.networks, models.ports


def check_usable(conn: Connection, policy_id: str, project_id: str | None) -> None:
    """QosPolicyNotFound unless the policy is ``project_id``'s or shared with it."""
    found = conn.execute(select(Q.c.id).where(
        Q.c.id == policy_id, or_(Q.c.project_id == project_id,
                                 Q.c.id.in_(rbac.granted("qos_policy", project_id))))).first()
    if found is None:
        raise qdef.QosPolicyNotFound(policy_id=policy_id)


def _bind(conn: Connection, table: Any, column: str, owner_id: str, policy_id: str | None,
          project_id: str | None, replace: bool) -> None:
    if policy_id is not None:
        check_usable(conn, policy_id, project_id)
    if replace:
        conn.execute(delete(table).where(table.c[column] == owner_id))
    if policy_id is not None:
        conn.execute(table.insert().values(**{column: owner_id, "policy_id": policy_id}))


def follows(port: dict[str, Any], own: str | None, network: str | None) -> str | None:
    """The policy a port follows: its own, else its network's, except for the
    network's own services' ports (as the agents enforce it)."""
    if own or str(port.get("device_owner", "")).startswith("network:"):
        return own
    return network


class QosExtensionDriver(ExtensionDriver):
    extension_alias = qdef.PORT_NETWORK_POLICY.alias
    extension_aliases = (qdef.RESOURCE_REQUEST.alias, qdef.RESOURCE_REQUEST_GROUPS.alias)
    port_attributes = frozenset({qdef.POLICY_ID, qdef.NETWORK_POLICY_ID, "resource_request"})
    port_follows = frozenset({"binding:vnic_type", "device_owner"})

    def process_create_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        policy_id = data.get(qdef.POLICY_ID)
        if policy_id is None:  # qos-default: the project's default policy, if any
            policy_id = conn.execute(select(D.c.qos_policy_id).where(
                D.c.project_id == view.get("project_id"))).scalar()
        _bind(conn, NB, "network_id", view["id"], policy_id, view.get("project_id"), False)
        view[qdef.POLICY_ID] = policy_id

    def process_update_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        if qdef.POLICY_ID in data:
            policy_id = data[qdef.POLICY_ID]
            _bind(conn, NB, "network_id", view["id"], policy_id, view.get("project_id"), True)
            view[qdef.POLICY_ID] = policy_id

    def process_create_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        policy_id = data.get(qdef.POLICY_ID)
        _bind(conn, PB, "port_id", view["id"], policy_id, view.get("project_id"), False)
        view[qdef.POLICY_ID] = policy_id
        view[qdef.NETWORK_POLICY_ID] = conn.execute(select(NB.c.policy_id).where(
            NB.c.network_id == view["network_id"])).scalar()
        resource_request.extend(conn, [view], {
            view["id"]: follows(view, policy_id, view[qdef.NETWORK_POLICY_ID])})

    def process_update_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        if qdef.POLICY_ID in data:
            policy_id = data[qdef.POLICY_ID]
            _bind(conn, PB, "port_id", view["id"], policy_id, view.get("project_id"), True)
            view[qdef.POLICY_ID] = policy_id

    def extend_networks(self, conn: Connection, views: list[dict[str, Any]], page: Page
                        ) -> None:
        bound = dict(page.read(conn, select(NB.c.network_id, NB.c.policy_id),
                               NB.c.network_id))
        for view in views:
            view[qdef.POLICY_ID] = bound.get(view["id"])

    def extend_ports(self, conn: Connection, views: list[dict[str, Any]], page: Page) -> None:
        """Both policies of every port, in one statement; the resource requests
        of those whose policy has minimums, in one or two more when any has a
        policy."""
        stmt = select(P.c.id, PB.c.policy_id, NB.c.policy_id).select_from(
            P.outerjoin(PB, PB.c.port_id == P.c.id)
            .outerjoin(NB, NB.c.network_id == P.c.network_id))
        bound = {port_id: (own, net) for port_id, own, net in page.read(conn, stmt, P.c.id)}
        for view in views:
            own, net = bound.get(view["id"], (None, None))
            view[qdef.POLICY_ID] = own
            view[qdef.NETWORK_POLICY_ID] = net
        resource_request.extend(conn, views, {
            view["id"]: follows(view, view[qdef.POLICY_ID], view[qdef.NETWORK_POLICY_ID])
            for view in views})

    def filter_clauses(self, collection: str, query: Any) -> list:
        values = query.pop_filter(qdef.POLICY_ID)
        if values is None:
            return []
        owners, table, column = ((N, NB, NB.c.network_id) if collection == "networks"
                                 else (P, PB, PB.c.port_id))
        present = [value for value in values if value is not None]
        parts = [owners.c.id.in_(select(column).where(table.c.policy_id.in_(present)))]
        if None in values:
            parts.append(owners.c.id.not_in(select(column)))
        return [or_(*parts)]
