"""The L3 router service plugin: routers, their gateways and interfaces, extra
routes, and floating IPs.

Every operation is one write transaction: the ports a router or floating IP
needs are made by the core plugin inside it (``create_port_in``), so a
failure leaves nothing behind, and the router row is locked first so that
concurrent interface changes on one router are checked one after another.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from sqlalchemy import select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db.query import CollectionQuery
from neutrino.db.util import bump
from neutrino.definitions import l3
from neutrino.definitions import validators as v
from neutrino.definitions.availability_zone import AZ_HINTS
from neutrino.definitions.l3 import (
    DHCP,
    FLOATINGIP,
    ROUTER_GATEWAY,
    ROUTER_INTERFACE,
    bad_floatingip,
    bad_router,
)
from neutrino.definitions.port_forwarding import FipInUseByPortForwarding
from neutrino.plugins.base import CorePlugin, Environment, Plugin
from neutrino.plugins.hooks import FlavorProviders
from neutrino.plugins.providers import Provider
from neutrino.rpc import topics
from neutrino.services.agents import db as agents_db
from neutrino.services.l3 import floatingips, ha, portforwardings, router_flavors, routers
from neutrino.services.l3 import providers as l3_providers
from neutrino.services.l3.agent_scheduler import L3AgentSchedulerPlugin
from neutrino.services.l3.rpc import L3RpcCallback

T = TypeVar("T")
ADMIN = Context.admin()


class RouterBackend(Protocol):
    """What realises routers: told of every committed change (the L3 agents'
    scheduler, or OVN's Northbound database)."""

    def routers_updated(self, router_ids: Sequence[str]) -> None:
        """After a committed change to these routers (their ports, gateway,
        routes, floating IPs)."""

    def router_deleted(self, router_id: str, hosts: Sequence[str]) -> None:
        """After the router's delete committed; ``hosts``: ``hosts_of`` before it."""

    def router_left(self, router_id: str, hosts: Sequence[str]) -> None:
        """After a conversion took the router off ``hosts`` (``unschedule``'s)."""

    def hosts_of(self, router_id: str) -> list[str]:
        """The hosts serving the router now."""
        ...

    def unschedule(self, conn: Connection, router_id: str) -> list[str]:
        """In a conversion's transaction: the router taken off its hosts; which."""
        ...

    def alive_agents(self) -> int:
        """How many hosts a highly available router could be spread over."""
        ...


class PortChanges:
    """Ports made, changed and removed in a transaction: their drivers' postcommit
    runs once it has committed; and the routers it changed, whose agents are told."""

    def __init__(self, core: CorePlugin):
        self.core = core
        self.created: list[dict[str, Any]] = []
        self.updated: list[Any] = []
        self.deleted: list[Any] = []
        self.routers: set[str] = set()

    def create(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        port = self.core.create_port_in(conn, ADMIN, {
            "name": "", "admin_state_up": True, "project_id": "", **data})
        self.created.append(port)
        return port

    def update(self, conn: Connection, port_id: str, data: dict[str, Any]) -> None:
        self.updated.append(self.core.update_port_in(conn, ADMIN, port_id, data))

    def delete(self, conn: Connection, port_id: str) -> None:
        self.deleted.append(self.core.delete_port_in(conn, ADMIN, port_id))

    def committed(self) -> None:
        for port in self.created:
            self.core.port_created(ADMIN, port)
        for context in self.updated:
            self.core.port_updated(context)
        for context in self.deleted:
            self.core.port_deleted(context)


def _v4(address: str) -> bool:
    return ipaddress.ip_address(address).version == 4


class L3RouterPlugin(Plugin):
    plugin_type = "L3_ROUTER_NAT"
    supported_extension_aliases: tuple[str, ...] = (
        "router", "ext-gw-mode", "extraroute", "extraroute-atomic", "fip-port-details",
        "floatingip-pools", "router_availability_zone", "l3-port-ip-change-not-allowed",
        "l3-ha", "network_ha")

    def __init__(self, env: Environment):
        super().__init__(env)
        self.core = env.core
        self.settings = env.conf.DEFAULT
        env.quota.register("router", models.routers)
        env.quota.register("floatingip", models.floatingips)
        env.hooks.before_port_delete.append(self._before_port_delete)
        env.hooks.before_network_delete.append(self._before_network_delete)
        env.hooks.after_network_change.append(self._network_changed)
        env.hooks.before_port_update_commit.append(self._keep_floating_ips_addresses)
        env.hooks.before_port_update_commit.append(self._keep_interfaces_ipv4)
        env.hooks.on_network_write.append(ha.mark_network)  # network_ha's ``ha``
        # what realises the routers, hearing of every change: by default the L3
        # agents, scheduled by a companion that serves the l3-agent-scheduler API
        self.scheduler = self.make_backend(env)
        self.companions = [self.scheduler] if isinstance(self.scheduler, Plugin) else []
        l3_providers.check_config(env.providers)
        # routers of a flavor (l3-flavors), once the flavors plugin is loaded too
        self.flavored = "FLAVORS" in env.plugin_types
        if self.flavored:
            self.supported_extension_aliases = (*self.supported_extension_aliases,
                                                l3.L3_FLAVORS.alias)
            env.hooks.before_flavor_delete.append(router_flavors.check_unused)
            env.hooks.router_filters["flavor_id"] = router_flavors.FLAVOR_ID

    def make_backend(self, env: Environment) -> RouterBackend:
        return L3AgentSchedulerPlugin(env, self)

    def taggable_tables(self) -> dict[str, Any]:
        return {"routers": models.routers, "floatingips": models.floatingips}

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        """The L3 agents' calls, on ``q-l3-plugin``."""
        return {topics.L3_PLUGIN: [L3RpcCallback(self)]}

    def port_changes(self) -> PortChanges:
        """A record of ports changed in a transaction (the scheduler's HA ports)."""
        return PortChanges(self.core)

    def _write(self, work: Callable[[Connection, PortChanges], T]) -> T:
        """Run ``work`` in one transaction; then the port drivers' postcommit."""
        changes = PortChanges(self.core)

        def attempt(conn: Connection) -> T:
            nonlocal changes
            changes = PortChanges(self.core)  # a retried attempt starts afresh
            return work(conn, changes)

        result = self.db.write(attempt)
        changes.committed()
        changes.routers.discard(None)
        if changes.routers:
            self.scheduler.routers_updated(sorted(changes.routers))
        return result

    # --- routers ----------------------------------------------------------------------

    def _extended_routers(self, conn: Connection, views: list[dict[str, Any]]
                          ) -> list[dict[str, Any]]:
        """Router views with ``ha``, ``flavor_id`` (l3-flavors) and what other
        plugins add (the gateway's qos_policy_id)."""
        ids = [view["id"] for view in views]
        highly_available = ha.is_ha(conn, ids)
        flavors = router_flavors.of(conn, ids) if self.flavored else {}
        shows_ha = "l3-ha" in self.supported_extension_aliases
        for view in views:
            if shows_ha:
                view["ha"] = view["id"] in highly_available
            if self.flavored:
                view["flavor_id"] = flavors.get(view["id"])
        for extend in self.env.hooks.extend_routers:
            extend(conn, views)
        return views

    def _router(self, conn: Connection, ctx: Context, router_id: str) -> dict[str, Any]:
        return self._extended_routers(conn, [routers.get(conn, ctx, router_id)])[0]

    def router_in(self, conn: Connection, router_id: str) -> dict[str, Any]:
        """The router's view as an admin sees it, read in the caller's transaction."""
        return self._router(conn, ADMIN, router_id)

    def get_router(self, ctx: Context, router_id: str) -> dict[str, Any]:
        return self._read(lambda conn: self._router(conn, ctx, router_id))

    def get_routers(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: self._extended_routers(
            conn, routers.list_(conn, ctx, query, self.env.hooks.router_filters)))

    def _gateway_written(self, conn: Connection, router_id: str, project_id: str | None,
                         gateway: dict[str, Any] | None) -> None:
        """Tell the services (the gateway's ``qos_policy_id``); a key none of
        them takes is refused, as Neutron's validator refuses it."""
        if gateway and "qos_policy_id" in gateway and not self.env.hooks.on_router_gateway_write:
            raise exc.InvalidInput(error_message="Invalid input for external_gateway_info. "
                                   "Reason: Unexpected keys supplied: qos_policy_id.")
        for write in self.env.hooks.on_router_gateway_write:
            write(conn, router_id, project_id, gateway)

    def _ha_network(self, project_id: str) -> str:
        """The project's HA network, once enough L3 agents are alive to make a
        router highly available (two: HANotEnoughAvailableAgents)."""
        alive = self.scheduler.alive_agents()
        if alive < 2:
            raise ha.HANotEnoughAvailableAgents(min_agents=2, num_agents=alive)
        return ha.ensure_network(self.core, self.settings, project_id)

    def _flavors(self) -> FlavorProviders:
        assert self.env.hooks.flavors is not None  # loaded, since l3-flavors is served
        return self.env.hooks.flavors

    def create_router(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        gateway = data.get("external_gateway_info") or None
        flavor_id = data.get("flavor_id") if self.flavored else None
        provider = None
        wanted = data.get("ha")
        wants_ha = bool(self.settings.l3_ha if wanted is None else wanted)
        if flavor_id is not None:  # its provider says whether the router is HA
            provider = self._read(lambda conn: self._flavors().provider_in(
                conn, flavor_id, l3_providers.SERVICE_TYPE))
            wants_ha = l3_providers.router_is_ha(provider, wanted)
        ha_network = self._ha_network(data["project_id"]) if wants_ha else None
        # as Neutron: the hints sorted, or the configured default zones
        zone_hints = (sorted(data.get(AZ_HINTS) or [])
                      or list(self.settings.default_availability_zones))

        def work(conn: Connection, changes: PortChanges) -> dict[str, Any]:
            self.env.quota.check(conn, data["project_id"], "router")
            agents_db.check_zones(conn, "router", zone_hints)
            router_id = routers.insert(conn, data, self._snat(gateway))
            changes.routers.add(router_id)
            if flavor_id is not None:
                self._bind_flavor(conn, router_id, flavor_id, provider)
            if ha_network is not None:
                ha.make_ha(conn, router_id, ha_network)
            agents_db.add_hints(conn, models.router_availability_zone_hints, router_id,
                                zone_hints)
            if gateway:
                self._add_gateway(conn, ctx, changes, router_id, gateway)
                self._gateway_written(conn, router_id, data["project_id"], gateway)
            if data.get("tags"):
                tags.replace(conn, router_id, data["tags"])
            for write in self.env.hooks.on_router_write:  # enable_ndp_proxy
                write(conn, router_id, data, True)
            return self._router(conn, ADMIN, router_id)

        return self._write(work)

    def _bind_flavor(self, conn: Connection, router_id: str, flavor_id: str,
                     chosen: Provider | None) -> None:
        """The router's flavor, held (locked) until the router is committed, and
        the provider chosen before the transaction, which must still serve it."""
        provider = self._flavors().provider_in(conn, flavor_id, l3_providers.SERVICE_TYPE,
                                               lock=True)
        if provider != chosen:
            raise exc.Conflicting(msg=f"Flavor {flavor_id} changed while router {router_id} "
                                      "was being created; please retry")
        router_flavors.bind(conn, router_id, flavor_id, provider.name)

    def _snat(self, gateway: dict[str, Any] | None) -> bool:
        if gateway and "enable_snat" in gateway:
            return gateway["enable_snat"]
        return self.settings.enable_snat_by_default

    def update_router(self, ctx: Context, router_id: str, data: dict[str, Any],
                      if_revision: int | None = None) -> dict[str, Any]:
        converting = self._conversion(ctx, router_id, data)
        ha_network = self._ha_network(converting[1]) if converting and converting[0] else None
        left: list[str | None] = []  # a project whose HA network has no router any more
        moved: list[str] = []  # the hosts the router leaves when it is converted

        def work(conn: Connection, changes: PortChanges) -> dict[str, Any]:
            row = routers.get_row(conn, ctx, router_id, for_update=True)
            changes.routers.add(router_id)
            values: dict[str, Any] = {
                k: data[k] for k in ("name", "description", "admin_state_up") if k in data}
            bump(conn, models.routers, router_id, if_revision, values)
            if converting:
                moved[:] = self.scheduler.unschedule(conn, router_id)
                if ha_network is not None:
                    ha.make_ha(conn, router_id, ha_network)
                else:
                    left[:] = [ha.release(conn, changes, router_id)]
            if "external_gateway_info" in data:
                gateway = data["external_gateway_info"] or None
                self._update_gateway(conn, ctx, changes, row, gateway)
                self._gateway_written(conn, router_id, row.project_id, gateway)
            if "routes" in data:
                self._set_routes(conn, router_id, data["routes"])
            for write in self.env.hooks.on_router_write:  # enable_ndp_proxy
                write(conn, router_id, data, False)
            return self._router(conn, ADMIN, router_id)

        view = self._write(work)
        self.scheduler.router_left(router_id, moved)
        if left and left[0] is not None:
            ha.drop_network(self.core, left[0])
        return view

    def _conversion(self, ctx: Context, router_id: str, data: dict[str, Any]
                    ) -> tuple[bool, str] | None:
        """(ha wanted, the router's project) when the update turns an HA router
        legacy or a legacy one HA; only a disabled router is converted, as in
        Neutron."""
        if data.get("ha") is None:
            return None
        view = self.get_router(ctx, router_id)
        if view["ha"] == data["ha"]:
            return None
        if data.get("admin_state_up", view["admin_state_up"]):
            raise exc.BadRequest(resource="router", msg=(
                "Cannot change HA attribute of active routers. Please set router "
                "admin_state_up to False prior to upgrade"))
        if view.get("flavor_id"):  # its provider made it HA or not
            raise exc.InvalidInput(error_message=(
                "Changing the 'ha' and 'distributed' attributes on a router associated "
                "with a flavor is not supported"))
        return bool(data["ha"]), view["project_id"]

    def delete_router(self, ctx: Context, router_id: str,
                      if_revision: int | None = None) -> None:
        def work(conn: Connection, changes: PortChanges) -> None:
            row = routers.get_row(conn, ctx, router_id, for_update=True)
            bump(conn, models.routers, router_id, if_revision)
            attached = routers.interface_ports(conn, router_id)
            if attached:
                raise l3.RouterInUse(router_id=router_id, reason="has ports still attached: "
                                                                 + ", ".join(attached))
            self._remove_gateway(conn, changes, row)
            left[:] = [ha.release(conn, changes, router_id)]
            routers.delete_row(conn, router_id)

        left: list[str | None] = []
        hosts = self.scheduler.hosts_of(router_id)  # the delete takes the bindings
        self._write(work)
        self.scheduler.router_deleted(router_id, hosts)
        if left and left[0] is not None:
            ha.drop_network(self.core, left[0])

    # --- the gateway ------------------------------------------------------------------

    def _add_gateway(self, conn: Connection, ctx: Context, changes: PortChanges,
                     router_id: str, gateway: dict[str, Any]) -> None:
        network_id = gateway["network_id"]
        network = self.core.network_row_in(conn, ctx, network_id)
        if not network.router_external:
            raise bad_router(f"Network {network_id} is not an external network")
        external = self._subnets_of(conn, network_id)
        gateway_ips = {s["gateway_ip"] for s in external if s["gateway_ip"]}
        for fixed in gateway.get("external_fixed_ips") or ():
            if fixed.get("ip_address") in gateway_ips:
                raise bad_router(f"External IP {fixed['ip_address']} is the same as the "
                                 "gateway IP")
        self._check_subnets(conn, router_id, external)
        # A network without free addresses still gives a gateway, without IPs.
        port = changes.create(conn, {
            "network_id": network_id, "device_owner": ROUTER_GATEWAY, "device_id": router_id,
            "fixed_ips": gateway.get("external_fixed_ips") or None})
        routers.attach(conn, router_id, port["id"], ROUTER_GATEWAY)
        bump(conn, models.routers, router_id, values={
            "gw_port_id": port["id"], "enable_snat": self._snat(gateway)})

    @staticmethod
    def _subnets_of(conn: Connection, network_id: str) -> list[dict[str, Any]]:
        s = models.subnets
        return [{"id": r.id, "cidr": r.cidr, "gateway_ip": r.gateway_ip}
                for r in conn.execute(select(s.c.id, s.c.cidr, s.c.gateway_ip)
                                      .where(s.c.network_id == network_id))]

    def _remove_gateway(self, conn: Connection, changes: PortChanges, row: Any) -> None:
        if row.gw_port_id is None:
            return
        self.env.hooks.run(self.env.hooks.before_router_gateway_remove, conn, row.id)
        network_id = self.core.port_row_in(conn, ADMIN, row.gw_port_id).network_id
        if floatingips.through_router(conn, row.id, network_id):
            raise l3.RouterExternalGatewayInUseByFloatingIp(router_id=row.id,
                                                             net_id=network_id)
        bump(conn, models.routers, row.id, values={
            "gw_port_id": None, "enable_snat": self.settings.enable_snat_by_default})
        changes.delete(conn, row.gw_port_id)

    def _update_gateway(self, conn: Connection, ctx: Context, changes: PortChanges, row: Any,
                        gateway: dict[str, Any] | None) -> None:
        current = routers.get(conn, ADMIN, row.id)["external_gateway_info"]
        if gateway is None:
            self._remove_gateway(conn, changes, row)
            return
        if current is None or current["network_id"] != gateway["network_id"]:
            self._remove_gateway(conn, changes, row)
            self._add_gateway(conn, ctx, changes, row.id, gateway)
            return
        bump(conn, models.routers, row.id, values={"enable_snat": self._snat(gateway)})
        wanted = gateway.get("external_fixed_ips")
        if wanted and wanted != current["external_fixed_ips"]:
            changes.update(conn, row.gw_port_id, {"fixed_ips": wanted})

    # --- interfaces -------------------------------------------------------------------

    @staticmethod
    def _interface_request(body: dict[str, Any], removing: bool = False
                           ) -> tuple[str | None, str | None]:
        subnet_id, port_id = body.get("subnet_id"), body.get("port_id")
        if subnet_id is None and port_id is None:
            raise bad_router("Either subnet_id or port_id must be specified")
        if subnet_id is not None and port_id is not None and not removing:
            raise bad_router("Cannot specify both subnet-id and port-id")
        for value in (subnet_id, port_id):
            if value is not None and (error := v.uuid(value)):
                raise bad_router(error)
        return subnet_id, port_id

    @staticmethod
    def _interface_info(router: Any, port: dict[str, Any],
                        subnet_ids: list[str]) -> dict[str, Any]:
        return {"id": router.id, "tenant_id": port["project_id"],
                "project_id": port["project_id"], "port_id": port["id"],
                "network_id": port["network_id"], "subnet_id": subnet_ids[0],
                "subnet_ids": subnet_ids}

    def _check_subnets(self, conn: Connection, router_id: str,
                       new: list[dict[str, Any]]) -> None:
        """A subnet joins a router once, and never overlapping one it has (on an
        interface or on the gateway's network)."""
        attached = {row.subnet_id: row.cidr for row in routers.interface_ips(conn, router_id)}
        gateway_port = routers.get_row(conn, ADMIN, router_id).gw_port_id
        if gateway_port is not None:
            network_id = self.core.port_row_in(conn, ADMIN, gateway_port).network_id
            attached.update((s["id"], s["cidr"]) for s in self._subnets_of(conn, network_id))
        for subnet in new:
            if subnet["id"] in attached:
                raise bad_router(f"Router already has a port on subnet {subnet['id']}")
            cidr = ipaddress.ip_network(subnet["cidr"])
            for other_id, other_cidr in attached.items():
                if cidr.overlaps(ipaddress.ip_network(other_cidr)):
                    raise bad_router(
                        f"Cidr {subnet['cidr']} of subnet {subnet['id']} overlaps with cidr "
                        f"{other_cidr} of subnet {other_id}")

    def add_router_interface(self, ctx: Context, router_id: str, body: dict[str, Any]
                             ) -> dict[str, Any]:
        subnet_id, port_id = self._interface_request(body)

        def work(conn: Connection, changes: PortChanges) -> dict[str, Any]:
            router = routers.get_row(conn, ctx, router_id, for_update=True)
            changes.routers.add(router_id)
            bump(conn, models.routers, router_id)
            if subnet_id is not None:
                port, added = self._port_for_subnet(conn, ctx, changes, router, subnet_id)
            else:
                assert port_id is not None  # _interface_request wants one of the two
                port = self._adopt_port(conn, ctx, changes, router, port_id)
                added = [ip["subnet_id"] for ip in port["fixed_ips"]]
            return self._interface_info(router, port, added)

        return self._write(work)

    @staticmethod
    def _check_ra_mode(subnet: dict[str, Any]) -> None:
        if subnet["ip_version"] == 6 and subnet["ipv6_ra_mode"] is None and \
                subnet["ipv6_address_mode"] is not None:
            raise bad_router(f"IPv6 subnet {subnet['id']} configured to receive RAs from an "
                             "external router cannot be added to Neutron Router")

    def _port_for_subnet(self, conn: Connection, ctx: Context, changes: PortChanges,
                         router: Any, subnet_id: str) -> tuple[dict[str, Any], list[str]]:
        """A new interface port with the subnet's gateway IP; an IPv6 subnet joins
        the router's IPv6 port on the same network instead, as in Neutron."""
        subnet = self.core.subnet_in(conn, ctx, subnet_id)
        if not ctx.is_admin and subnet["project_id"] != ctx.project_id:
            raise bad_router(f"Cannot add interface to router because subnet {subnet_id} is "
                             "not owned by project making the request")
        if not subnet["gateway_ip"]:
            raise bad_router("Subnet for router interface must have a gateway IP")
        self._check_ra_mode(subnet)
        self._check_subnets(conn, router.id, [subnet])
        wanted = {"subnet_id": subnet_id, "ip_address": subnet["gateway_ip"]}
        if subnet["ip_version"] == 6:
            shared = self._ipv6_port_on(conn, router.id, subnet["network_id"])
            if shared is not None:
                changes.update(conn, shared["id"], {"fixed_ips": [*shared["fixed_ips"], wanted]})
                return self.core.port_in(conn, ADMIN, shared["id"]), [subnet_id]
        port = changes.create(conn, {
            "network_id": subnet["network_id"], "project_id": router.project_id,
            "device_owner": ROUTER_INTERFACE, "device_id": router.id, "fixed_ips": [wanted]})
        routers.attach(conn, router.id, port["id"], ROUTER_INTERFACE)
        return port, [subnet_id]

    def _ipv6_port_on(self, conn: Connection, router_id: str, network_id: str
                      ) -> dict[str, Any] | None:
        for port_id in routers.interface_ports(conn, router_id):
            port = self.core.port_in(conn, ADMIN, port_id)
            if port["network_id"] == network_id and any(
                    not _v4(ip["ip_address"]) for ip in port["fixed_ips"]):
                return port
        return None

    def _adopt_port(self, conn: Connection, ctx: Context, changes: PortChanges,
                    router: Any, port_id: str) -> dict[str, Any]:
        port = self.core.port_in(conn, ctx, port_id)
        if port["device_id"]:
            raise exc.PortInUse(port_id=port_id, net_id=port["network_id"],
                                device_id=port["device_id"])
        if not port["fixed_ips"]:
            raise bad_router("Router port must have at least one fixed IP")
        subnet_rows = [self.core.subnet_in(conn, ADMIN, ip["subnet_id"])
                       for ip in port["fixed_ips"]]
        for subnet in subnet_rows:
            self._check_ra_mode(subnet)
        if any(s["ip_version"] == 6 for s in subnet_rows):
            existing = self._ipv6_port_on(conn, router.id, port["network_id"])
            if existing is not None:
                raise bad_router(
                    f"Router already contains IPv6 port {existing['id']} belonging to network "
                    f"id {port['network_id']}. Only one IPv6 port from the same network "
                    "subnet can be connected to a router.")
        self._check_subnets(conn, router.id, subnet_rows)
        if sum(1 for s in subnet_rows if s["ip_version"] == 4) > 1:
            raise bad_router("Cannot have multiple IPv4 subnets on router port")
        changes.update(conn, port_id, {"device_owner": ROUTER_INTERFACE,
                                       "device_id": router.id})
        routers.attach(conn, router.id, port_id, ROUTER_INTERFACE)
        return port

    def remove_router_interface(self, ctx: Context, router_id: str, body: dict[str, Any]
                                ) -> dict[str, Any]:
        subnet_id, port_id = self._interface_request(body, removing=True)

        def work(conn: Connection, changes: PortChanges) -> dict[str, Any]:
            router = routers.get_row(conn, ctx, router_id, for_update=True)
            changes.routers.add(router_id)
            bump(conn, models.routers, router_id)
            addresses = routers.interface_ips(conn, router_id)
            if port_id is not None:
                if port_id not in routers.interface_ports(conn, router_id):
                    raise l3.RouterInterfaceNotFound(router_id=router_id, port_id=port_id)
                removed = [a for a in addresses if a.port_id == port_id]
                if subnet_id is not None and subnet_id not in {a.subnet_id for a in removed}:
                    raise l3.SubnetMismatchForPort(port_id=port_id, subnet_id=subnet_id)
            else:
                removed = [a for a in addresses if a.subnet_id == subnet_id]
                if not removed:
                    raise l3.RouterInterfaceNotFoundForSubnet(router_id=router_id,
                                                              subnet_id=subnet_id)
            self._check_unused(conn, router_id, removed)
            self.env.hooks.run(self.env.hooks.before_router_interface_remove, conn, router_id,
                               [a.subnet_id for a in removed])
            target = port_id or removed[0].port_id
            port = self.core.port_in(conn, ADMIN, target)
            if port_id is None and len(port["fixed_ips"]) > 1:
                changes.update(conn, target, {"fixed_ips": [
                    ip for ip in port["fixed_ips"] if ip["subnet_id"] != subnet_id]})
            else:
                changes.delete(conn, target)
            return self._interface_info(router, port, [a.subnet_id for a in removed])

        return self._write(work)

    @staticmethod
    def _check_unused(conn: Connection, router_id: str, removed: list[Any]) -> None:
        """An interface that floating IPs, their port forwardings or extra routes go
        through must stay."""
        for address in removed:
            cidr = ipaddress.ip_network(address.cidr)
            targets = [fip.fixed_ip_address for fip in floatingips.through_router(
                conn, router_id) if fip.fixed_ip_address]
            targets += portforwardings.through_router(conn, router_id)
            if any(ipaddress.ip_address(target) in cidr for target in targets):
                raise l3.RouterInterfaceInUseByFloatingIP(router_id=router_id,
                                                          subnet_id=address.subnet_id)
            for route in routers.routes_of(conn, [router_id]).get(router_id, []):
                if ipaddress.ip_address(route["nexthop"]) in cidr:
                    raise l3.RouterInterfaceInUseByRoute(router_id=router_id,
                                                         subnet_id=address.subnet_id)

    # --- extra routes -----------------------------------------------------------------

    def _set_routes(self, conn: Connection, router_id: str,
                    wanted: list[dict[str, str]]) -> None:
        """The whole new list: each nexthop on a subnet the router is on (an
        interface or its gateway), none of them the router's own address."""
        unique = {(r["destination"], r["nexthop"]): r for r in wanted}
        if len(unique) > self.settings.max_routes:
            raise l3.RoutesExhausted(router_id=router_id, quota=self.settings.max_routes)
        s = models.subnets
        connected = conn.execute(
            select(models.ip_allocations.c.ip_address, s.c.cidr)
            .join(s, s.c.id == models.ip_allocations.c.subnet_id)
            .join(models.router_ports,
                  models.router_ports.c.port_id == models.ip_allocations.c.port_id)
            .where(models.router_ports.c.router_id == router_id)).all()
        own = {row.ip_address for row in connected}
        cidrs = [ipaddress.ip_network(row.cidr) for row in connected]
        for route in unique.values():
            nexthop = ipaddress.ip_address(route["nexthop"])
            if route["nexthop"] in own:
                raise l3.InvalidRoutes(routes=wanted, reason="the nexthop is used by router")
            if not any(nexthop in cidr for cidr in cidrs):
                raise l3.InvalidRoutes(routes=wanted,
                                       reason="the nexthop is not connected with router")
        routers.set_routes(conn, router_id, list(unique.values()))

    @staticmethod
    def _routes_body(body: dict[str, Any]) -> list[dict[str, str]]:
        router = body.get("router")
        if not isinstance(router, dict) or set(router) != {"routes"}:
            raise bad_router("Body must be {'router': {'routes': [...]}}")
        if router["routes"] is None:  # a list to add or remove, not a whole new one
            raise exc.HTTPBadRequest(msg="Invalid input for routes. Reason: 'None' is not "
                                         "a list.")
        value = l3.canonical_routes(router["routes"])
        error = l3.routes(value)
        if error:
            raise exc.HTTPBadRequest(msg=f"Invalid input for routes. Reason: {error}.")
        return value

    def _edit_routes(self, ctx: Context, router_id: str, body: dict[str, Any],
                     adding: bool) -> dict[str, Any]:
        given = self._routes_body(body)

        def work(conn: Connection, changes: PortChanges) -> dict[str, Any]:
            routers.get_row(conn, ctx, router_id, for_update=True)
            changes.routers.add(router_id)
            bump(conn, models.routers, router_id)
            current = routers.routes_of(conn, [router_id]).get(router_id, [])
            if adding:
                wanted = current + given
            else:
                drop = {(r["destination"], r["nexthop"]) for r in given}
                wanted = [r for r in current if (r["destination"], r["nexthop"]) not in drop]
            self._set_routes(conn, router_id, wanted)
            return {"router": self._router(conn, ADMIN, router_id)}

        return self._write(work)

    def add_extraroutes(self, ctx: Context, router_id: str, body: dict[str, Any]
                        ) -> dict[str, Any]:
        return self._edit_routes(ctx, router_id, body, adding=True)

    def remove_extraroutes(self, ctx: Context, router_id: str, body: dict[str, Any]
                           ) -> dict[str, Any]:
        return self._edit_routes(ctx, router_id, body, adding=False)

    # --- floating IPs -----------------------------------------------------------------

    def _fip_view(self, conn: Connection, fip_id: str) -> dict[str, Any]:
        return self._extended(conn, [floatingips.get(conn, ADMIN, fip_id)])[0]

    def _extended(self, conn: Connection, views: list[dict[str, Any]]
                  ) -> list[dict[str, Any]]:
        """Floating IP views with what other plugins add (port_forwardings)."""
        for extend in self.env.hooks.extend_floatingips:
            extend(conn, views)
        return views

    def get_floatingip(self, ctx: Context, fip_id: str) -> dict[str, Any]:
        return self._read(lambda conn: self._extended(
            conn, [floatingips.get(conn, ctx, fip_id)])[0])

    def get_floatingips(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: self._extended(
            conn, floatingips.list_(conn, ctx, query)))

    def create_floatingip(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        network_id = data["floating_network_id"]

        self._check_fixed_ip_request(data)

        def work(conn: Connection, changes: PortChanges) -> dict[str, Any]:
            self.env.quota.check(conn, data["project_id"], "floatingip")
            # as the caller: an external network is theirs to use when an RBAC
            # entry (access_as_external, or a '*' one) opens it to them
            network = self.core.network_row_in(conn, ctx, network_id)
            if not network.router_external:
                raise bad_floatingip(f"Network {network_id} is not a valid external network")
            fip_id = v.new_uuid()
            port = self._floating_port(conn, changes, fip_id, network_id, data)
            address = next(ip["ip_address"] for ip in port["fixed_ips"]
                           if _v4(ip["ip_address"]))
            floatingips.insert(conn, fip_id, data, address, port["id"])
            if data.get("port_id"):
                # part of the new row, as in Neutron: revision_number stays 0
                floatingips.set_values(conn, fip_id, self._association(
                    conn, ctx, floatingips.get_row(conn, ADMIN, fip_id), data["port_id"],
                    data.get("fixed_ip_address")))
            if data.get("tags"):
                tags.replace(conn, fip_id, data["tags"])
            for write in self.env.hooks.on_floatingip_write:  # qos_policy_id
                write(conn, fip_id, data, True)
            created = self._fip_view(conn, fip_id)
            changes.routers.add(created["router_id"])
            return created

        return self._write(work)

    def _floating_port(self, conn: Connection, changes: PortChanges, fip_id: str,
                       network_id: str, data: dict[str, Any]) -> dict[str, Any]:
        """The port holding the address on the external network: the address or
        subnet asked for, else the first IPv4 subnet with room."""
        port = {"network_id": network_id, "device_owner": FLOATINGIP, "device_id": fip_id}
        wanted = {k: data[k] for k in ("subnet_id",) if data.get(k)}
        if data.get("floating_ip_address"):
            wanted["ip_address"] = data["floating_ip_address"]
        if wanted:
            return changes.create(conn, {**port, "fixed_ips": [wanted]})
        s = models.subnets
        candidates = list(conn.execute(select(s.c.id).where(
            s.c.network_id == network_id, s.c.ip_version == 4)
            .order_by(s.c.created_at, s.c.id)).scalars())
        if not candidates:
            raise bad_floatingip(f"Network {network_id} does not contain any IPv4 subnet")
        for subnet_id in candidates:
            try:
                return changes.create(conn, {**port, "fixed_ips": [{"subnet_id": subnet_id}]})
            except exc.IpAddressGenerationFailure:
                if subnet_id == candidates[-1]:
                    raise
        raise AssertionError("unreachable")

    @staticmethod
    def _check_fixed_ip_request(data: dict[str, Any]) -> None:
        if data.get("fixed_ip_address") is not None and data.get("port_id") is None:
            raise bad_floatingip("fixed_ip_address cannot be specified without a port_id")

    def update_floatingip(self, ctx: Context, fip_id: str, data: dict[str, Any],
                          if_revision: int | None = None) -> dict[str, Any]:
        self._check_fixed_ip_request(data)

        # as Neutron: an empty body dissociates (one without port_id otherwise keeps it)
        wanted = data if data else {"port_id": None}

        def work(conn: Connection, changes: PortChanges) -> dict[str, Any]:
            row = floatingips.get_row(conn, ctx, fip_id, for_update=True)
            values = {k: wanted[k] for k in ("description",) if k in wanted}
            port_id = wanted.get("port_id")
            if port_id is not None:
                if portforwardings.exists_for(conn, fip_id):
                    raise FipInUseByPortForwarding(id=fip_id)
                values.update(self._association(conn, ctx, row, port_id,
                                                wanted.get("fixed_ip_address")))
            elif "port_id" in wanted and row.fixed_port_id is not None:
                values.update(fixed_port_id=None, fixed_ip_address=None, router_id=None)
            bump(conn, models.floatingips, fip_id, if_revision, values)  # one change
            for write in self.env.hooks.on_floatingip_write:  # qos_policy_id
                write(conn, fip_id, data, False)
            updated = self._fip_view(conn, fip_id)
            changes.routers.update((row.router_id, updated["router_id"]))
            return updated

        return self._write(work)

    def delete_floatingip(self, ctx: Context, fip_id: str,
                          if_revision: int | None = None) -> None:
        def work(conn: Connection, changes: PortChanges) -> None:
            row = floatingips.get_row(conn, ctx, fip_id, for_update=True)
            bump(conn, models.floatingips, fip_id, if_revision)
            if portforwardings.exists_for(conn, fip_id):
                raise FipInUseByPortForwarding(id=fip_id)
            floatingips.delete_row(conn, fip_id)
            changes.delete(conn, row.floating_port_id)
            changes.routers.add(row.router_id)

        self._write(work)

    def _association(self, conn: Connection, ctx: Context, fip: Any, port_id: str,
                     fixed_ip: str | None) -> dict[str, Any]:
        """The columns that associate ``fip`` with the port, once checked."""
        port = self.core.port_in(conn, ctx, port_id)
        if not ctx.is_admin and port["project_id"] != fip.project_id:
            raise bad_floatingip(f"Cannot process floating IP association with Port {port_id}, "
                                 "since that port is owned by a different tenant")
        if port["device_owner"] in (DHCP, ROUTER_GATEWAY, ROUTER_INTERFACE, FLOATINGIP):
            raise bad_floatingip(f"Port {port_id} is unable to be assigned a floating IP")
        fixed = self._fixed_ip_for(port, fixed_ip)
        router_id = routers.serving_subnet(
            conn, fixed["subnet_id"], routers.with_gateway_on(conn, fip.floating_network_id))
        if router_id is None:
            raise l3.ExternalGatewayForFloatingIPNotFound(
                external_network_id=fip.floating_network_id, subnet_id=fixed["subnet_id"],
                port_id=port_id)
        holder = floatingips.holder_of(conn, fip.floating_network_id, port_id,
                                       fixed["ip_address"])
        if holder is not None and holder.id != fip.id:
            raise l3.FloatingIPPortAlreadyAssociated(
                floating_ip_address=fip.floating_ip_address, fip_id=fip.id, port_id=port_id,
                fixed_ip=fixed["ip_address"], net_id=fip.floating_network_id)
        return {"fixed_port_id": port_id, "fixed_ip_address": fixed["ip_address"],
                "router_id": router_id}

    @staticmethod
    def _fixed_ip_for(port: dict[str, Any], wanted: str | None) -> dict[str, str]:
        v4 = [ip for ip in port["fixed_ips"] if _v4(ip["ip_address"])]
        if wanted is not None:
            if not _v4(wanted):
                raise bad_floatingip(f"Cannot process floating IP association with {wanted}, "
                                     "since that is not an IPv4 address")
            for ip in v4:
                if ip["ip_address"] == wanted:
                    return ip
            raise bad_floatingip(f"Port {port['id']} does not have fixed ip {wanted}")
        if not v4:
            raise bad_floatingip(f"Cannot add floating IP to port {port['id']} that has no "
                                 "fixed IPv4 addresses")
        if len(v4) > 1:
            raise bad_floatingip(f"Port {port['id']} has multiple fixed IPv4 addresses.  Must "
                                 "provide a specific IPv4 address when assigning a floating IP")
        return v4[0]

    # --- floating IP pools ------------------------------------------------------------

    def get_floatingip_pools(self, ctx: Context, query: CollectionQuery
                             ) -> list[dict[str, Any]]:
        def work(conn: Connection) -> list[dict[str, Any]]:
            s, n = models.subnets, models.networks
            mine = self.core.networks_visible_to(ctx)  # the external networks open to the caller
            rows = conn.execute(select(s.c.id, s.c.name, s.c.network_id, s.c.cidr)
                                .join(n, n.c.id == s.c.network_id)
                                .where(n.c.router_external, s.c.ip_version == 4,
                                       *([] if mine is None else [mine]))
                                .order_by(s.c.id)).all()
            # as Neutron: the pools are listed as the caller's
            return [{"subnet_id": r.id, "subnet_name": r.name, "network_id": r.network_id,
                     "cidr": r.cidr, "project_id": ctx.project_id,
                     "tenant_id": ctx.project_id} for r in rows]

        pools = self._read(work)
        return [pool for pool in pools
                if all(pool.get(k) in wanted for k, wanted in query.filters.items())]

    def get_floatingip_pool(self, ctx: Context, pool_id: str) -> dict[str, Any]:
        raise exc.HTTPNotFound()

    # --- hooks on the core plugin's updates and deletes ---------------------------------

    @staticmethod
    def _keep_floating_ips_addresses(conn: Connection, ctx: Context, port: dict[str, Any],
                                     _original: dict[str, Any]) -> None:
        """A fixed IP that a floating IP points at stays on its port, as in Neutron."""
        kept = {ip["ip_address"] for ip in port["fixed_ips"]}
        if any(fip.fixed_ip_address not in kept
               for fip in floatingips.on_port(conn, port["id"])):
            raise exc.BadRequest(resource="port", msg=(
                f"Cannot update the fixed_ips of the port {port['id']}, because its "
                "original fixed_ip has been associated to a floating ip"))

    @staticmethod
    def _keep_interfaces_ipv4(conn: Connection, ctx: Context, port: dict[str, Any],
                              original: dict[str, Any]) -> None:
        """A router interface's IPv4 addresses are the router's to change, not the
        port's (l3-port-ip-change-not-allowed); its IPv6 ones may come and go."""
        if original["device_owner"] != ROUTER_INTERFACE or not routers.owner_of(
                conn, original["id"]):
            return

        def ipv4(item: dict[str, Any]) -> set[tuple[str, str]]:
            return {(ip["subnet_id"], ip["ip_address"]) for ip in item["fixed_ips"]
                    if ":" not in ip["ip_address"]}

        if ipv4(port) != ipv4(original):
            raise l3.IPAddressChangeNotAllowed(port_id=original["id"])

    def _network_changed(self, network_id: str) -> None:
        """A network or one of its subnets changed (a gateway IP, DNS servers
        that radvd announces, an MTU): its routers' agents are told."""
        router_ids = self._read(lambda conn: routers.on_network(conn, network_id))
        if router_ids:
            self.scheduler.routers_updated(router_ids)

    def _before_network_delete(self, conn: Connection, ctx: Context, network_id: str
                               ) -> Callable[[], None] | None:
        """As Neutron: a network that goes takes the floating IPs on it that
        serve nothing (no port, no router; whoever owns them) with it, in the
        same transaction. Those in use keep their ports, which keep it in use."""
        idle = floatingips.idle_on(conn, network_id)
        if not idle:
            return None
        changes = PortChanges(self.core)
        for row in idle:
            floatingips.delete_row(conn, row.id)
            changes.delete(conn, row.floating_port_id)
        return changes.committed

    def _before_port_delete(self, conn: Connection, ctx: Context, port_id: str
                            ) -> Callable[[], None] | None:
        """Router and floating IP ports go with their owner, not by themselves; a
        port that goes takes its floating IPs' association with it, and once
        that has committed their routers' agents are told."""
        owner = conn.execute(select(models.ports.c.device_owner).where(
            models.ports.c.id == port_id)).scalar()
        if owner in (ROUTER_INTERFACE, ROUTER_GATEWAY) and routers.owner_of(conn, port_id):
            raise l3.ServicePortInUse(port_id=port_id, reason=f"has device owner {owner}")
        if owner == FLOATINGIP and floatingips.of_floating_port(conn, port_id):
            raise l3.ServicePortInUse(port_id=port_id, reason=f"has device owner {owner}")
        router_ids = sorted({fip.router_id for fip in floatingips.on_port(conn, port_id)
                             if fip.router_id})
        floatingips.disassociate_port(conn, port_id)
        return (lambda: self.scheduler.routers_updated(router_ids)) if router_ids else None
