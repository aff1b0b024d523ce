"""The VPNaaS service plugin (``service_plugins = vpnaas``): IKE and IPsec
policies, VPN services on routers, endpoint groups and IPsec site connections,
with neutron-vpnaas's checks and statuses.

One driver serves every service: the L3 agents' ``vpnaas`` extension, which
runs strongSwan in the routers' namespaces. So no ``[service_providers]`` VPN
entry is needed (one configured is listed by service-type, not consulted).
Once a change that alters what a router's strongSwan does has committed, the
agents hosting the router hear ``routers_updated``; the services come with the
routers' sync data (the ``extend_router_sync`` hook, ``services.vpn.sync``) and
the agents report statuses back on ``ipsec_driver`` (``update_status``). A new
service or connection is PENDING_CREATE until then and, as in Neutron, refuses
updates while pending.

The router plugin asks before it removes a gateway or an interface this plugin
depends on (``before_router_gateway_remove``, ``before_router_interface_remove``),
and the core plugin before it deletes a subnet an endpoint group names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db.query import CollectionQuery
from neutrino.definitions import l3, vpn
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc.contracts import vpn as contract
from neutrino.rpc.contracts.l3 import L3AgentNotifier
from neutrino.rpc.notifier import Notifier
from neutrino.services.l3 import agents_notify
from neutrino.services.vpn import checks, store, sync

LOG = logging.getLogger(__name__)
ADMIN = Context.admin()
POLICY_KEYS = {
    "ikepolicy": ("name", "description", "auth_algorithm", "encryption_algorithm",
                  "phase1_negotiation_mode", "ike_version", "pfs"),
    "ipsecpolicy": ("name", "description", "transform_protocol", "auth_algorithm",
                    "encryption_algorithm", "encapsulation_mode", "pfs"),
}
CONNECTION_KEYS = ("name", "description", "peer_address", "peer_id", "local_id", "mtu",
                   "initiator", "psk", "admin_state_up", "local_ep_group_id",
                   "peer_ep_group_id")


def _not_pending(row: Row) -> None:
    if row.status in vpn.PENDING:
        raise vpn.VPNStateInvalidToUpdate(id=row.id, state=row.status)


def _dpd(given: dict[str, Any], row: Row | None = None) -> dict[str, Any]:
    """The flat DPD columns: what was given over what the connection had."""
    before = (vpn.DPD_DEFAULT if row is None else
              {"action": row.dpd_action, "interval": row.dpd_interval,
               "timeout": row.dpd_timeout})
    merged = {**before, **given}
    return {f"dpd_{key}": merged[key] for key in ("action", "interval", "timeout")}


class VpnPlugin(Plugin):
    plugin_type = "VPN"
    supported_extension_aliases = tuple(ext.alias for ext in vpn.EXTENSIONS)

    def __init__(self, env: Environment):
        super().__init__(env)
        self.notifier = L3AgentNotifier(Notifier(env.bus))
        for resource, table in (("ikepolicy", store.IKE), ("ipsecpolicy", store.IPSEC),
                                ("vpnservice", store.SVC), ("endpoint_group", store.EPG),
                                ("ipsec_site_connection", store.CONN)):
            env.quota.register(resource, table)
        env.hooks.extend_router_sync.append(self._extend_router_sync)
        env.hooks.before_router_gateway_remove.append(self._before_gateway_remove)
        env.hooks.before_router_interface_remove.append(self._before_interface_remove)
        env.hooks.before_subnet_delete.append(self._before_subnet_delete)

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        return {contract.TOPIC: [VpnStatusCallback(self)]}

    def _write(self, work: Callable[[Connection, set[str]], Any]) -> Any:
        """``work(conn, routers)`` in one transaction, where it adds the routers
        whose strongSwan must change; their agents are told once it has committed."""
        def attempt(conn: Connection) -> tuple[Any, set[str]]:
            routers: set[str] = set()
            return work(conn, routers), routers

        result, router_ids = self.db.write(attempt)
        agents_notify.routers_updated(self.db, self.notifier, router_ids)
        return result

    # --- the router and core plugins' hooks -------------------------------------------

    def _extend_router_sync(self, conn: Connection, views: list[dict[str, Any]]) -> None:
        found = sync.routers_services(conn, views)
        for view in views:
            view[contract.VPN_SERVICES] = found.get(view["id"], [])

    @staticmethod
    def _before_gateway_remove(conn: Connection, router_id: str) -> None:
        services = store.services_of_router(conn, router_id)
        if services:
            plural = "s" if len(services) > 1 else ""
            raise l3.RouterInUse(router_id=router_id,
                                 reason=f"is currently used by VPN service{plural} "
                                        f"({','.join(services)})")

    @staticmethod
    def _before_interface_remove(conn: Connection, router_id: str, subnet_ids: list[str]
                                 ) -> None:
        for subnet_id in subnet_ids:
            service_id = conn.execute(select(store.SVC.c.id).where(
                store.SVC.c.router_id == router_id, store.SVC.c.subnet_id == subnet_id)
                .limit(1)).scalar()
            if service_id is not None:
                raise vpn.SubnetInUseByVPNService(subnet_id=subnet_id,
                                                  vpnservice_id=service_id)
            connection_id = store.connection_using_local_subnet(conn, router_id, subnet_id)
            if connection_id is not None:
                raise vpn.SubnetInUseByIPsecSiteConnection(
                    subnet_id=subnet_id, ipsec_site_connection_id=connection_id)

    @staticmethod
    def _before_subnet_delete(conn: Connection, ctx: Context, subnet_id: str) -> None:
        group_id = store.subnet_groups_with(conn, subnet_id)
        if group_id is not None:
            raise vpn.SubnetInUseByEndpointGroup(subnet_id=subnet_id, group_id=group_id)

    # --- IKE and IPsec policies -------------------------------------------------------

    def _create_policy(self, kind: str, table: Any, data: dict[str, Any],
                       view: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        def make(conn: Connection, item: dict[str, Any]) -> dict[str, Any]:
            values = {key: item[key] for key in POLICY_KEYS[kind] if key in item}
            policy_id = store.insert(conn, table, {
                "project_id": item["project_id"], **values,
                **store.lifetime_values(item.get("lifetime") or {})})
            return view(conn.execute(select(table).where(table.c.id == policy_id)).one())

        return self.db.write(lambda conn: self.env.quota.create(conn, kind, data, make))

    def _update_policy(self, kind: str, table: Any, row_of: Callable[..., Row],
                       in_use: Callable[[str], Exception], policy_id: str,
                       data: dict[str, Any], ctx: Context,
                       view: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        column = store.CONN.c[f"{kind}_id"]

        def work(conn: Connection) -> dict[str, Any]:
            row = row_of(conn, ctx, policy_id, for_update=True)
            if store.connection_using(conn, column, policy_id):
                raise in_use(policy_id)
            values = {key: data[key] for key in POLICY_KEYS[kind] if key in data}
            if data.get("lifetime"):
                values.update(store.lifetime_values(data["lifetime"], row))
            if values:
                conn.execute(table.update().where(table.c.id == policy_id).values(**values))
            return view(conn.execute(select(table).where(table.c.id == policy_id)).one())

        return self.db.write(work)

    def _delete_policy(self, kind: str, table: Any, row_of: Callable[..., Row],
                       in_use: Callable[[str], Exception], policy_id: str, ctx: Context
                       ) -> None:
        column = store.CONN.c[f"{kind}_id"]

        def work(conn: Connection) -> None:
            row_of(conn, ctx, policy_id, for_update=True)
            if store.connection_using(conn, column, policy_id):
                raise in_use(policy_id)
            conn.execute(delete(table).where(table.c.id == policy_id))

        self.db.write(work)

    def get_ikepolicy(self, ctx: Context, policy_id: str) -> dict[str, Any]:
        return self._read(lambda conn: store.ike_view(store.ike_row(conn, ctx, policy_id)))

    def get_ikepolicies(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: store.ike_policies(conn, ctx, query))

    def create_ikepolicy(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._create_policy("ikepolicy", store.IKE, data, store.ike_view)

    def update_ikepolicy(self, ctx: Context, policy_id: str, data: dict[str, Any],
                         if_revision: int | None = None) -> dict[str, Any]:
        return self._update_policy("ikepolicy", store.IKE, store.ike_row,
                                   lambda i: vpn.IKEPolicyInUse(ikepolicy_id=i), policy_id,
                                   data, ctx, store.ike_view)

    def delete_ikepolicy(self, ctx: Context, policy_id: str,
                         if_revision: int | None = None) -> None:
        self._delete_policy("ikepolicy", store.IKE, store.ike_row,
                            lambda i: vpn.IKEPolicyInUse(ikepolicy_id=i), policy_id, ctx)

    def get_ipsecpolicy(self, ctx: Context, policy_id: str) -> dict[str, Any]:
        return self._read(lambda conn: store.ipsec_view(store.ipsec_row(conn, ctx, policy_id)))

    def get_ipsecpolicies(self, ctx: Context, query: CollectionQuery
                          ) -> list[dict[str, Any]]:
        return self._read(lambda conn: store.ipsec_policies(conn, ctx, query))

    def create_ipsecpolicy(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._create_policy("ipsecpolicy", store.IPSEC, data, store.ipsec_view)

    def update_ipsecpolicy(self, ctx: Context, policy_id: str, data: dict[str, Any],
                           if_revision: int | None = None) -> dict[str, Any]:
        return self._update_policy("ipsecpolicy", store.IPSEC, store.ipsec_row,
                                   lambda i: vpn.IPsecPolicyInUse(ipsecpolicy_id=i),
                                   policy_id, data, ctx, store.ipsec_view)

    def delete_ipsecpolicy(self, ctx: Context, policy_id: str,
                           if_revision: int | None = None) -> None:
        self._delete_policy("ipsecpolicy", store.IPSEC, store.ipsec_row,
                            lambda i: vpn.IPsecPolicyInUse(ipsecpolicy_id=i), policy_id, ctx)

    # --- services -------------------------------------------------------------------

    def get_vpnservice(self, ctx: Context, service_id: str) -> dict[str, Any]:
        return self._read(lambda conn: store.service_view(
            store.service_row(conn, ctx, service_id)))

    def get_vpnservices(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: store.services(conn, ctx, query))

    def create_vpnservice(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        def make(conn: Connection, item: dict[str, Any], routers: set[str]) -> dict[str, Any]:
            router = checks.check_service(conn, ctx, item)
            gateway = checks.gateway_ips(conn, router)
            service_id = store.insert(conn, store.SVC, {
                "project_id": item["project_id"], "name": item.get("name", ""),
                "description": item.get("description", ""), "status": vpn.PENDING_CREATE,
                "admin_state_up": item.get("admin_state_up", True),
                "external_v4_ip": gateway.get(4), "external_v6_ip": gateway.get(6),
                "subnet_id": item.get("subnet_id"), "router_id": router.id})
            routers.add(router.id)
            return store.service_view(store.service_row(conn, ADMIN, service_id))

        return self._write(lambda conn, routers: self.env.quota.create(
            conn, "vpnservice", data, lambda c, item: make(c, item, routers)))

    def update_vpnservice(self, ctx: Context, service_id: str, data: dict[str, Any],
                          if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection, routers: set[str]) -> dict[str, Any]:
            row = store.service_row(conn, ctx, service_id, for_update=True)
            _not_pending(row)
            values = {k: data[k] for k in ("name", "description", "admin_state_up")
                      if k in data}
            if values:
                conn.execute(store.SVC.update().where(store.SVC.c.id == service_id)
                             .values(**values))
            if "admin_state_up" in values:
                routers.add(row.router_id)
            return store.service_view(store.service_row(conn, ADMIN, service_id))

        return self._write(work)

    def delete_vpnservice(self, ctx: Context, service_id: str,
                          if_revision: int | None = None) -> None:
        def work(conn: Connection, routers: set[str]) -> None:
            row = store.service_row(conn, ctx, service_id, for_update=True)
            if store.connection_using(conn, store.CONN.c.vpnservice_id, service_id):
                raise vpn.VPNServiceInUse(vpnservice_id=service_id)
            conn.execute(delete(store.SVC).where(store.SVC.c.id == service_id))
            routers.add(row.router_id)

        self._write(work)

    # --- endpoint groups --------------------------------------------------------------

    def get_endpoint_group(self, ctx: Context, group_id: str) -> dict[str, Any]:
        return self._read(lambda conn: store.group(conn, ctx, group_id))

    def get_endpoint_groups(self, ctx: Context, query: CollectionQuery
                            ) -> list[dict[str, Any]]:
        return self._read(lambda conn: store.groups(conn, ctx, query))

    def create_endpoint_group(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        def make(conn: Connection, item: dict[str, Any]) -> dict[str, Any]:
            endpoints = checks.checked_endpoints(conn, ctx, self.env.core, item)
            group_id = store.insert(conn, store.EPG, {
                "project_id": item["project_id"], "name": item.get("name", ""),
                "description": item.get("description", ""), "endpoint_type": item["type"]})
            store.set_endpoints(conn, group_id, endpoints)
            return store.group(conn, ADMIN, group_id)

        return self.db.write(lambda conn: self.env.quota.create(
            conn, "endpoint_group", data, make))

    def update_endpoint_group(self, ctx: Context, group_id: str, data: dict[str, Any],
                              if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            store.group_row(conn, ctx, group_id, for_update=True)
            values = {k: data[k] for k in ("name", "description") if k in data}
            if values:
                conn.execute(store.EPG.update().where(store.EPG.c.id == group_id)
                             .values(**values))
            return store.group(conn, ADMIN, group_id)

        return self.db.write(work)

    def delete_endpoint_group(self, ctx: Context, group_id: str,
                              if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            store.group_row(conn, ctx, group_id, for_update=True)
            if store.connection_using_group(conn, group_id):
                raise vpn.EndpointGroupInUse(group_id=group_id)
            conn.execute(delete(store.EPG).where(store.EPG.c.id == group_id))

        self.db.write(work)

    # --- site connections -------------------------------------------------------------

    def get_ipsec_site_connection(self, ctx: Context, connection_id: str) -> dict[str, Any]:
        return self._read(lambda conn: store.connection(conn, ctx, connection_id))

    def get_ipsec_site_connections(self, ctx: Context, query: CollectionQuery
                                   ) -> list[dict[str, Any]]:
        return self._read(lambda conn: store.connections(conn, ctx, query))

    @staticmethod
    def _checked(conn: Connection, ctx: Context, item: dict[str, Any], service: Row,
                 address_given: bool) -> None:
        ipsec_policy = store.ipsec_row(conn, ctx, item["ipsecpolicy_id"])
        checks.check_connection(conn, ctx, item, service, ipsec_policy)
        if address_given:
            checks.check_peer_address(conn, item, service)

    def create_ipsec_site_connection(self, ctx: Context, data: dict[str, Any]
                                     ) -> dict[str, Any]:
        def make(conn: Connection, given: dict[str, Any], routers: set[str]
                 ) -> dict[str, Any]:
            item = {**given, **_dpd(given.get("dpd") or {})}
            service = store.service_row(conn, ctx, item["vpnservice_id"])
            store.ike_row(conn, ctx, item["ikepolicy_id"])
            self._checked(conn, ctx, item, service, address_given=True)
            connection_id = store.insert(conn, store.CONN, {
                "project_id": item["project_id"], "route_mode": "static",
                "auth_mode": "psk", "status": vpn.PENDING_CREATE,
                **{k: item[k] for k in CONNECTION_KEYS if k in item},
                **{k: item[k] for k in ("dpd_action", "dpd_interval", "dpd_timeout")},
                "vpnservice_id": service.id, "ikepolicy_id": item["ikepolicy_id"],
                "ipsecpolicy_id": item["ipsecpolicy_id"]})
            store.set_peer_cidrs(conn, connection_id, item.get("peer_cidrs") or [])
            routers.add(service.router_id)
            return store.connection(conn, ADMIN, connection_id)

        return self._write(lambda conn, routers: self.env.quota.create(
            conn, "ipsec_site_connection", data, lambda c, item: make(c, item, routers)))

    def update_ipsec_site_connection(self, ctx: Context, connection_id: str,
                                     data: dict[str, Any], if_revision: int | None = None
                                     ) -> dict[str, Any]:
        def work(conn: Connection, routers: set[str]) -> dict[str, Any]:
            row = store.connection_row(conn, ctx, connection_id, for_update=True)
            service = store.service_row(conn, ADMIN, row.vpnservice_id)
            before = store.connection_view(
                row, store.peer_cidrs_of(conn, [connection_id]).get(connection_id, []))
            item = {**before, **data, **_dpd(data.get("dpd") or {}, row)}
            self._checked(conn, ctx, item, service, address_given="peer_address" in data)
            _not_pending(row)
            values = {k: item[k] for k in CONNECTION_KEYS if k in data}
            if "dpd" in data:
                values.update({k: item[k] for k in ("dpd_action", "dpd_interval",
                                                     "dpd_timeout")})
            if values:
                conn.execute(store.CONN.update().where(store.CONN.c.id == connection_id)
                             .values(**values))
            if "peer_cidrs" in data:
                store.set_peer_cidrs(conn, connection_id, item["peer_cidrs"])
            routers.add(service.router_id)
            return store.connection(conn, ADMIN, connection_id)

        return self._write(work)

    def delete_ipsec_site_connection(self, ctx: Context, connection_id: str,
                                     if_revision: int | None = None) -> None:
        def work(conn: Connection, routers: set[str]) -> None:
            row = store.connection_row(conn, ctx, connection_id, for_update=True)
            service = store.service_row(conn, ADMIN, row.vpnservice_id)
            conn.execute(delete(store.CONN).where(store.CONN.c.id == connection_id))
            routers.add(service.router_id)

        self._write(work)


class VpnStatusCallback:
    """What the L3 agents' vpnaas extension calls on ``ipsec_driver``, as
    Neutron's IPsecVpnDriverCallBack serves it."""

    rpc_version = contract.VERSION

    def __init__(self, plugin: VpnPlugin):
        self.db = plugin.db

    def update_status(self, context: dict, status: list[contract.ServiceStatus] | None = None,
                      **_: Any) -> None:
        """Each service's and connection's status as the agent saw it; a pending
        one only changes when the agent says it settled it, a PENDING_DELETE
        never; a service or connection gone since is skipped."""
        def work(conn: Connection) -> None:
            for service in status if isinstance(status, list) else ():
                if not isinstance(service, dict) or not isinstance(service.get("id"), str):
                    continue
                store.set_status(conn, store.SVC, service["id"], _reported(service),
                                 bool(service.get("updated_pending_status")))
                found = service.get("ipsec_site_connections")
                for connection_id, reported in (found.items() if isinstance(found, dict)
                                                else ()):
                    if isinstance(reported, dict):
                        store.set_status(conn, store.CONN, str(connection_id),
                                         _reported(reported),
                                         bool(reported.get("updated_pending_status")))

        self.db.write(work)
        LOG.debug("VPN statuses reported: %s", status)


def _reported(entry: Mapping[str, Any]) -> str:
    """ACTIVE, DOWN or ERROR as the agent says; anything else is ERROR."""
    value = entry.get("status")
    return value if value in vpn.REPORTED else vpn.ERROR

