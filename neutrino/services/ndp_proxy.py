"""The ``ndp_proxy`` service plugin (``service_plugins = router,ndp_proxy``):
an instance's IPv6 address published by its router on the external network
(the router answers neighbour solicitations for it there), so that the
outside reaches the instance by its own address, routed, without NAT.

A router publishes addresses only with ``enable_ndp_proxy`` (l3-ext-ndp-proxy),
which only a gateway on a network with an IPv6 subnet in an IPv6 address
scope allows; a router given a gateway without saying takes ``[DEFAULT]
enable_ndp_proxy_by_default`` when its gateway allows it. A proxy's address
is one of its port's, on an IPv6 subnet of the router, in the external
network's IPv6 address scope; one proxy per router and address. What a
proxy needs stays while it exists: the router's gateway
(RouterGatewayInUseByNDPProxy), an IPv6 address on it while the router has
``enable_ndp_proxy`` (RouterIPv6GatewayInUse), the interface on its subnet
(RouterInterfaceInUseByNDPProxy). As in Neutron, ``enable_ndp_proxy`` may
be turned off while proxies exist: they stay, unpublished.

One deviation: Neutron sets ``enable_ndp_proxy`` anew on every router
update that does not give it (to whether the gateway allows it, so renaming
a router turns it back on); here such an update keeps it, and only a router
whose gateway stops allowing it loses it.

The routers' L3 agents get each router's proxies with its sync data
(``_ndp_proxies``) and are told when they change (``routers_updated``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, false, func, select
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.config import Opt, OptGroup, parse_bool
from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db.query import CollectionQuery, api_columns, find_row, owned, read_page
from neutrino.db.util import bump, check_revision, now, timestamp
from neutrino.definitions import ndp_proxy as ndef
from neutrino.definitions.validators import new_uuid
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc.contracts.l3 import L3AgentNotifier
from neutrino.rpc.notifier import Notifier
from neutrino.services.l3 import agents_notify, ha, routers

NP = models.ndp_proxies
STATE = models.router_ndp_proxy_state
R, P, IA = models.routers, models.ports, models.ip_allocations
S, SP = models.subnets, models.subnetpools
COLUMNS = api_columns(NP, "router_id", "port_id", "ip_address")
ENABLE = ndef.ENABLE
#: in each router's sync data: its proxies
NDP_PROXIES = "_ndp_proxies"
ADMIN = Context.admin()

OPTIONS = OptGroup("DEFAULT", [
    Opt("enable_ndp_proxy_by_default", parse_bool, False,
        "The enable_ndp_proxy of a router given a gateway without it (when the "
        "gateway allows NDP proxies)."),
])


def _v6(address: str) -> bool:
    return ipaddress.ip_address(address).version == 6


# --- rows and views -----------------------------------------------------------------------

def view(row: Any, tag_list: list[str]) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "description": row.description,
            "project_id": row.project_id, "tenant_id": row.project_id,
            "router_id": row.router_id, "port_id": row.port_id, "ip_address": row.ip_address,
            "tags": tag_list, "created_at": timestamp(row.created_at),
            "updated_at": timestamp(row.updated_at), "revision_number": row.revision_number}


def views(conn: Connection, rows: list[Row]) -> list[dict[str, Any]]:
    tag_map = tags.load(conn, [row.id for row in rows]) if rows else {}
    return [view(row, tag_map.get(row.id, [])) for row in rows]


def proxy_row(conn: Connection, ctx: Context, proxy_id: str, for_update: bool = False) -> Row:
    return find_row(conn, NP, proxy_id, owned(NP, ctx),
                    lambda: ndef.NDPProxyNotFound(id=proxy_id), for_update)


def of_routers(conn: Connection, router_ids: list[str]) -> dict[str, list[Row]]:
    found: dict[str, list[Row]] = {}
    if router_ids:
        for row in conn.execute(select(NP).where(NP.c.router_id.in_(router_ids))
                                .order_by(NP.c.ip_address, NP.c.id)):
            found.setdefault(row.router_id, []).append(row)
    return found


def v6_scope(conn: Connection, network_id: str) -> str | None:
    """The network's ``ipv6_address_scope``: its IPv6 subnets' pools' scope."""
    return conn.execute(select(SP.c.address_scope_id).join(S, S.c.subnetpool_id == SP.c.id)
                        .where(S.c.network_id == network_id, S.c.ip_version == 6,
                               SP.c.address_scope_id.is_not(None)).limit(1)).scalar()


def allows_proxies(conn: Connection, network_id: str) -> bool:
    """A gateway network allows NDP proxies with an IPv6 subnet in an IPv6 scope."""
    return v6_scope(conn, network_id) is not None


def fixed_ips(conn: Connection, port_id: str) -> list[Row]:
    """(subnet_id, ip_address) of a port."""
    return list(conn.execute(select(IA.c.subnet_id, IA.c.ip_address)
                             .where(IA.c.port_id == port_id).order_by(IA.c.ip_address)))


def gateway_allows(conn: Connection, gw_port_id: str | None) -> bool:
    """The router's gateway allows proxies: its network does, and it has an IPv6
    address there."""
    if gw_port_id is None:
        return False
    network_id = conn.execute(select(P.c.network_id).where(P.c.id == gw_port_id)).scalar()
    return network_id is not None and allows_proxies(conn, network_id) and any(
        _v6(ip.ip_address) for ip in fixed_ips(conn, gw_port_id))


def enabled(conn: Connection, router_ids: list[str]) -> dict[str, bool]:
    if not router_ids:
        return {}
    return {router_id: bool(on) for router_id, on in conn.execute(
        select(STATE.c.router_id, STATE.c.enable_ndp_proxy)
        .where(STATE.c.router_id.in_(router_ids)))}


def set_enabled(conn: Connection, router_id: str, on: bool | None) -> None:
    """The router's state: ``on``, or none (no gateway: false)."""
    conn.execute(delete(STATE).where(STATE.c.router_id == router_id))
    if on is not None:
        conn.execute(STATE.insert().values(router_id=router_id, enable_ndp_proxy=on))


class NdpProxyPlugin(Plugin):
    plugin_type = "NDP_PROXY"
    supported_extension_aliases = tuple(ext.alias for ext in ndef.EXTENSIONS)
    option_groups = (OPTIONS,)

    def __init__(self, env: Environment):
        super().__init__(env)
        self.notifier = L3AgentNotifier(Notifier(env.bus))
        self.by_default = bool(getattr(env.conf.DEFAULT, "enable_ndp_proxy_by_default", False))
        hooks = env.hooks
        hooks.extend_routers.append(self._extend_routers)
        hooks.extend_router_sync.append(self._extend_router_sync)
        hooks.on_router_write.append(self._router_written)
        hooks.on_router_gateway_write.append(self._gateway_written)
        hooks.before_router_gateway_remove.append(self._gateway_removed)
        hooks.before_router_interface_remove.append(self._interfaces_removed)
        hooks.before_port_delete.append(self._before_port_delete)
        hooks.router_filters[ENABLE] = func.coalesce(
            select(STATE.c.enable_ndp_proxy).where(STATE.c.router_id == R.c.id)
            .scalar_subquery(), false())

    def taggable_tables(self) -> dict[str, Any]:
        return {ndef.RESOURCE.collection: NP}

    def _routers_updated(self, router_ids: list[str | None]) -> None:
        agents_notify.routers_updated(self.db, self.notifier, router_ids)

    # --- the routers' enable_ndp_proxy ----------------------------------------------------

    @staticmethod
    def _extend_routers(conn: Connection, found: list[dict[str, Any]]) -> None:
        """``enable_ndp_proxy``: false for a router without a gateway."""
        states = enabled(conn, [item["id"] for item in found
                                if item.get("external_gateway_info")])
        for item in found:
            item[ENABLE] = states.get(item["id"], False)

    def _router_written(self, conn: Connection, router_id: str, data: dict[str, Any],
                        created: bool) -> None:
        wanted = data.get(ENABLE)  # None: not said
        row = routers.get_row(conn, ADMIN, router_id)
        if "external_gateway_info" in data and not data["external_gateway_info"] \
                and wanted and not created:
            raise ndef.RouterGatewayNotValid(router_id=router_id,
                                             reason="The router's external gateway will "
                                                    "be unset")
        if row.gw_port_id is None:
            if wanted:
                raise ndef.RouterGatewayNotValid(router_id=router_id, reason=(
                    "The request body not contain external gateway information" if created
                    else "The router has no external gateway or the external gateway port "
                         "has no IPv6 address or IPv6 address scope"))
            set_enabled(conn, router_id, None)
            return
        if created:
            network_id = str(conn.execute(select(P.c.network_id).where(
                P.c.id == row.gw_port_id)).scalar())
            allowed = allows_proxies(conn, network_id)
            if wanted and not allowed:
                raise ndef.RouterGatewayNotValid(router_id=router_id, reason=(
                    f"The external network {network_id} don't support IPv6 ndp proxy, the "
                    "network has no IPv6 subnets or has no IPv6 address scope"))
        else:
            allowed = gateway_allows(conn, row.gw_port_id)
            if wanted and not allowed:
                raise ndef.RouterGatewayNotValid(router_id=router_id, reason=(
                    "The router has no external gateway or the external gateway port has "
                    "no IPv6 address or IPv6 address scope"))
        current = enabled(conn, [router_id]).get(router_id)
        if wanted is None:
            wanted = (allowed and self.by_default) if current is None else (current and allowed)
        if wanted != current:
            set_enabled(conn, router_id, wanted)

    @staticmethod
    def _gateway_written(conn: Connection, router_id: str, project_id: str | None,
                         gateway: dict[str, Any] | None) -> None:
        """A gateway given IPv4 addresses only, on a router with enable_ndp_proxy:
        RouterIPv6GatewayInUse."""
        if gateway is None or not gateway.get("external_fixed_ips"):
            return
        if not enabled(conn, [router_id]).get(router_id):
            return
        for fixed in gateway["external_fixed_ips"]:
            if fixed.get("ip_address") and _v6(fixed["ip_address"]):
                return
            version = conn.execute(select(S.c.ip_version).where(
                S.c.id == fixed.get("subnet_id"))).scalar()
            if version == 6:
                return
        raise ndef.RouterIPv6GatewayInUse(router_id=router_id)

    @staticmethod
    def _gateway_removed(conn: Connection, router_id: str) -> None:
        if of_routers(conn, [router_id]):
            raise ndef.RouterGatewayInUseByNDPProxy(router_id=router_id)
        set_enabled(conn, router_id, None)

    @staticmethod
    def _interfaces_removed(conn: Connection, router_id: str, subnet_ids: list[str]) -> None:
        for proxy in of_routers(conn, [router_id]).get(router_id, []):
            for fixed in fixed_ips(conn, proxy.port_id):
                if fixed.ip_address == proxy.ip_address and fixed.subnet_id in subnet_ids:
                    raise ndef.RouterInterfaceInUseByNDPProxy(router_id=router_id,
                                                              subnet_id=fixed.subnet_id)

    @staticmethod
    def _extend_router_sync(conn: Connection, found: list[dict[str, Any]]) -> None:
        """Each router's ``enable_ndp_proxy`` and its proxies (``_ndp_proxies``)."""
        ids = [item["id"] for item in found]
        states = enabled(conn, [item["id"] for item in found if item.get("gw_port")])
        proxies = of_routers(conn, ids)
        for item in found:
            item[ENABLE] = states.get(item["id"], False)
            item[NDP_PROXIES] = [
                {"id": row.id, "router_id": row.router_id, "port_id": row.port_id,
                 "ip_address": row.ip_address} for row in proxies.get(item["id"], [])]

    # --- a port that goes takes its proxies -----------------------------------------------

    def _before_port_delete(self, conn: Connection, ctx: Context, port_id: str
                            ) -> Callable[[], None] | None:
        router_ids = sorted(set(conn.execute(select(NP.c.router_id).where(
            NP.c.port_id == port_id)).scalars()))
        if not router_ids:
            return None
        for proxy_id in conn.execute(select(NP.c.id).where(NP.c.port_id == port_id)).scalars():
            tags.remove(conn, proxy_id)
        conn.execute(delete(NP).where(NP.c.port_id == port_id))
        return lambda: self._routers_updated(list(router_ids))

    # --- the proxies ----------------------------------------------------------------------

    def _checked_address(self, conn: Connection, ctx: Context, data: dict[str, Any]
                         ) -> tuple[str, str]:
        """(router id, address) of a new proxy, or Neutron's error."""
        router_id, port_id = data["router_id"], data["port_id"]
        if ha.is_ha(conn, [router_id]):
            raise exc.Conflicting(msg=(
                f"Router {router_id} is highly available: its devices have IPv6 off "
                "here, so it cannot publish an NDP proxy"))
        port = self.env.core.port_in(conn, ctx, port_id)
        on_network = {row.port_id for row in routers.interface_ips(conn, router_id)}
        router_ports = [pid for pid in on_network if conn.execute(select(P.c.network_id).where(
            P.c.id == pid)).scalar() == port["network_id"]]
        if not router_ports:
            raise ndef.PortUnreachableRouter(router_id=router_id, port_id=port_id)
        router = routers.get_row(conn, ctx, router_id)
        if not (router.gw_port_id and enabled(conn, [router.id]).get(router.id)):
            raise ndef.RouterNDPProxyNotEnable(router_id=router.id)
        gw_network = str(conn.execute(select(P.c.network_id).where(
            P.c.id == router.gw_port_id)).scalar())
        ext_scope = v6_scope(conn, gw_network)
        mine = [ip for ip in port["fixed_ips"] if _v6(ip["ip_address"])]
        if not mine:
            raise exc.BadRequest(resource="ndp_proxy", msg=(
                f"Requested port {port_id} must allocate one IPv6 address at least"))
        router_subnets = {ip.subnet_id for pid in router_ports
                          for ip in fixed_ips(conn, pid) if _v6(ip.ip_address)}
        address = data.get("ip_address")
        if not address:
            chosen = next((ip for ip in mine if ip["subnet_id"] in router_subnets), None)
            if chosen is None:
                raise ndef.PortUnreachableRouter(port_id=port_id, router_id=router_id)
            address = chosen["ip_address"]
        else:
            subnet_id = next((ip["subnet_id"] for ip in mine if ipaddress.ip_address(
                ip["ip_address"]) == ipaddress.ip_address(address)), None)
            if subnet_id is None:
                raise ndef.InvalidAddress(address=address,
                                          reason=f"This address not belong to the port "
                                                 f"{port_id}")
            if subnet_id not in router_subnets:
                raise ndef.InvalidAddress(address=address,
                                          reason=f"This address cannot reach the router "
                                                 f"{router_id}")
        internal_scope = v6_scope(conn, port["network_id"])
        if ext_scope != internal_scope:
            raise ndef.AddressScopeConflict(ext_address_scope=ext_scope,
                                            internal_address_scope=internal_scope)
        return router.id, str(ipaddress.ip_address(address))

    def create_ndp_proxy(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            routers.get_row(conn, ctx, data["router_id"], for_update=True)  # one at a time
            router_id, address = self._checked_address(conn, ctx, data)
            taken = conn.execute(select(NP.c.id).where(
                NP.c.router_id == router_id, NP.c.ip_address == address)).scalar()
            if taken is not None:
                raise ndef.DuplicateNDPProxy(router_id=router_id, ip_address=address)
            proxy_id, at = new_uuid(), now()
            conn.execute(NP.insert().values(
                id=proxy_id, project_id=data.get("project_id"), name=data.get("name") or "",
                description=data.get("description") or "", router_id=router_id,
                port_id=data["port_id"], ip_address=address, created_at=at, updated_at=at,
                revision_number=0))
            return views(conn, [proxy_row(conn, ADMIN, proxy_id)])[0]

        created = self.db.write(work)
        self._routers_updated([created["router_id"]])
        return created

    def get_ndp_proxy(self, ctx: Context, proxy_id: str) -> dict[str, Any]:
        return self._read(lambda conn: views(conn, [proxy_row(conn, ctx, proxy_id)])[0])

    def get_ndp_proxies(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        def work(conn: Connection) -> list[dict[str, Any]]:
            if query.marker is not None:
                proxy_row(conn, ctx, query.marker)
            rows, _ = read_page(conn, NP, COLUMNS, query, owned(NP, ctx))
            return views(conn, rows)

        return self._read(work)

    def update_ndp_proxy(self, ctx: Context, proxy_id: str, data: dict[str, Any],
                         if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            row = proxy_row(conn, ctx, proxy_id, for_update=True)
            bump(conn, NP, row.id, if_revision,
                 {k: data[k] for k in ("name", "description") if k in data})
            return views(conn, [proxy_row(conn, ctx, row.id)])[0]

        return self.db.write(work)  # nothing the agents use changed

    def delete_ndp_proxy(self, ctx: Context, proxy_id: str,
                         if_revision: int | None = None) -> None:
        def work(conn: Connection) -> str:
            row = proxy_row(conn, ctx, proxy_id, for_update=True)
            check_revision(conn, NP, row.id, if_revision)
            tags.remove(conn, row.id)
            conn.execute(delete(NP).where(NP.c.id == row.id))
            return str(row.router_id)

        self._routers_updated([self.db.write(work)])

