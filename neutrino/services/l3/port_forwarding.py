"""The port forwarding service plugin: ports of a floating IP forwarded to an
internal port, through the router that connects that port to the floating
IP's network (``service_plugins = router,port_forwarding``).

The floating IP row is locked first, so the collision checks of concurrent
requests on one floating IP run one after another; unique keys back them.
Once a change has committed, the L3 agent of the floating IP's router is told
(``routers_updated``): the forwardings come with the router's sync data. So
too when an internal port is deleted, taking its forwardings with it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery
from neutrino.db.util import bump
from neutrino.definitions import l3
from neutrino.definitions import port_forwarding as pfdef
from neutrino.definitions.port_forwarding import bad_port_forwarding
from neutrino.definitions.validators import new_uuid
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc.contracts.l3 import L3AgentNotifier
from neutrino.rpc.notifier import Notifier
from neutrino.services.l3 import agents_notify, floatingips, routers
from neutrino.services.l3 import portforwardings as store

Range = tuple[int, int]


def _range(port: int | None, text: str | None, name: str) -> Range:
    """One of ``<name>_port`` and ``<name>_port_range``, as (start, end)."""
    if port is not None and text is not None:
        raise bad_port_forwarding(f"Only one of {name}_port and {name}_port_range may be given")
    if port is not None:
        return port, port
    if text is None:
        raise bad_port_forwarding(f"Either {name}_port or {name}_port_range must be given")
    start, _, end = text.partition(":")
    return int(start), int(end or start)


def _collides(a: Range, b: Range) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


class PortForwardingPlugin(Plugin):
    plugin_type = "PORTFORWARDING"
    supported_extension_aliases = tuple(ext.alias for ext in pfdef.EXTENSIONS)

    def __init__(self, env: Environment):
        super().__init__(env)
        env.hooks.before_port_delete.append(self._before_port_delete)
        env.hooks.extend_floatingips.append(self._extend_floatingips)
        self.notifier = L3AgentNotifier(Notifier(env.bus))

    @staticmethod
    def _extend_floatingips(conn: Connection, views: list[dict[str, Any]]) -> None:
        """Each floating IP lists its forwardings (expose-port-forwarding-in-fip)."""
        found = store.of_floatingips(conn, [view["id"] for view in views])
        for view in views:
            view["port_forwardings"] = [store.brief(row) for row in found.get(view["id"], ())]

    def _routers_updated(self, router_ids: list[str | None]) -> None:
        agents_notify.routers_updated(self.db, self.notifier, router_ids)
        ovn = self.env.hooks.ovn_routers  # with ovn-router: OVN's load balancers
        if ovn is not None:
            ovn.routers_updated(sorted({rid for rid in router_ids if rid}))

    def get_floatingip_port_forwardings(self, ctx: Context, fip_id: str,
                                        query: CollectionQuery) -> list[dict[str, Any]]:
        def work(conn: Connection) -> list[dict[str, Any]]:
            floatingips.get_row(conn, ctx, fip_id)
            return [store.view(row) for row in store.of_floatingip(conn, fip_id)]

        return [item for item in self._read(work)
                if all(item.get(key) in wanted for key, wanted in query.filters.items())]

    def get_floatingip_port_forwarding(self, ctx: Context, fip_id: str, pf_id: str
                                       ) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            floatingips.get_row(conn, ctx, fip_id)
            return store.view(store.get_row(conn, fip_id, pf_id))

        return self._read(work)

    def create_floatingip_port_forwarding(self, ctx: Context, fip_id: str,
                                          data: dict[str, Any]) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            fip = floatingips.get_row(conn, ctx, fip_id, for_update=True)
            values = self._checked(conn, ctx, fip, data, exclude=None)
            values.update(id=new_uuid(), floatingip_id=fip_id)
            store.insert(conn, values)
            bump(conn, models.floatingips, fip_id)
            routers_of[:] = [floatingips.get_row(conn, ctx, fip_id).router_id]  # retried: once
            return store.view(store.get_row(conn, fip_id, values["id"]))

        routers_of: list[str | None] = []
        created = self.db.write(work)
        self._routers_updated(routers_of)
        return created

    def update_floatingip_port_forwarding(self, ctx: Context, fip_id: str, pf_id: str,
                                          data: dict[str, Any],
                                          if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            fip = floatingips.get_row(conn, ctx, fip_id, for_update=True)
            current = store.view(store.get_row(conn, fip_id, pf_id))
            merged = {**current, **data}
            # a port given replaces the range, and the other way round
            for name in ("external", "internal"):
                if f"{name}_port" in data and f"{name}_port_range" not in data:
                    merged[f"{name}_port_range"] = None
                elif f"{name}_port_range" in data and f"{name}_port" not in data:
                    merged[f"{name}_port"] = None
                elif f"{name}_port" not in data:
                    merged[f"{name}_port"] = None
            values = self._checked(conn, ctx, fip, merged, exclude=pf_id)
            store.delete_row(conn, pf_id)
            store.insert(conn, {**values, "id": pf_id, "floatingip_id": fip_id})
            bump(conn, models.floatingips, fip_id)
            routers_of[:] = [floatingips.get_row(conn, ctx, fip_id).router_id]  # retried: once
            return store.view(store.get_row(conn, fip_id, pf_id))

        routers_of: list[str | None] = []
        updated = self.db.write(work)
        self._routers_updated(routers_of)
        return updated

    def delete_floatingip_port_forwarding(self, ctx: Context, fip_id: str, pf_id: str,
                                          if_revision: int | None = None) -> None:
        def work(conn: Connection) -> str | None:
            fip = floatingips.get_row(conn, ctx, fip_id, for_update=True)
            store.get_row(conn, fip_id, pf_id)
            store.delete_row(conn, pf_id)
            self._release_router(conn, fip_id)
            return fip.router_id

        self._routers_updated([self.db.write(work)])

    @staticmethod
    def _release_router(conn: Connection, fip_id: str) -> None:
        """A floating IP left with no forwardings and no port has no router."""
        fip = floatingips.get_row(conn, Context.admin(), fip_id)
        if fip.fixed_port_id is None and not store.exists_for(conn, fip_id):
            bump(conn, models.floatingips, fip_id, values={"router_id": None})

    # --- checks -----------------------------------------------------------------------

    def _checked(self, conn: Connection, ctx: Context, fip: Any, data: dict[str, Any],
                 exclude: str | None) -> dict[str, Any]:
        """The row to store for ``data`` on ``fip``, or the error Neutron gives."""
        external = _range(data.get("external_port"), data.get("external_port_range"),
                          "external")
        internal = _range(data.get("internal_port"), data.get("internal_port_range"),
                          "internal")
        if internal[1] > internal[0] and internal[1] - internal[0] != external[1] - external[0]:
            raise bad_port_forwarding("Invalid ranges of internal and/or external ports. The "
                                      "relation between internal and external ports must be "
                                      "N-N or 1-N")
        port_id, address = data["internal_port_id"], data["internal_ip_address"]
        protocol = data["protocol"]
        for other in store.on_internal(conn, port_id, protocol, address):
            theirs = (other.internal_port_start, other.internal_port_end)
            if other.id != exclude and _collides(internal, theirs):
                raise self._collision("internal_port_range", theirs, internal)
        for other in store.of_floatingip(conn, fip.id):
            theirs = (other.external_port_start, other.external_port_end)
            if other.id != exclude and other.protocol == protocol and _collides(
                    external, theirs):
                raise self._collision("external_port_range", theirs, external)
        bound = floatingips.on_port(conn, port_id)
        if bound:
            raise pfdef.PortHasBindingFloatingIP(
                floating_ip_address=bound[0].floating_ip_address, fip_id=bound[0].id,
                port_id=port_id, fixed_ip=bound[0].fixed_ip_address)
        if fip.fixed_port_id is not None:
            raise l3.FloatingIPPortAlreadyAssociated(
                floating_ip_address=fip.floating_ip_address, fip_id=fip.id, port_id=port_id,
                fixed_ip=address, net_id=fip.floating_network_id)
        router_id = self._router_for(conn, ctx, fip, port_id, address)
        if fip.router_id is not None and fip.router_id != router_id:
            raise bad_port_forwarding(
                f"The Floating IP {fip.id} had been set on router {fip.router_id}, the internal "
                f"Neutron port {port_id} can not reach it")
        bump(conn, models.floatingips, fip.id, values={"router_id": router_id})
        return {"internal_port_id": port_id, "internal_ip_address": address,
                "protocol": protocol, "description": data.get("description") or "",
                "external_port_start": external[0], "external_port_end": external[1],
                "internal_port_start": internal[0], "internal_port_end": internal[1]}

    @staticmethod
    def _collision(name: str, theirs: Range, mine: Range) -> exc.BadRequest:
        return bad_port_forwarding(
            f"There is a port collision with the {name}. The following ranges collides: "
            f"{theirs[0]}:{theirs[1]} and {mine[0]}:{mine[1]}")

    def _router_for(self, conn: Connection, ctx: Context, fip: Any, port_id: str,
                    address: str) -> str:
        port = self.env.core.port_in(conn, ctx, port_id)
        v4 = [ip for ip in port["fixed_ips"]
              if ipaddress.ip_address(ip["ip_address"]).version == 4]
        if not v4:
            raise bad_port_forwarding(f"Requested internal port {port_id} must allocate an "
                                      "IPv4 address at least.")
        fixed = next((ip for ip in v4 if ip["ip_address"] == address), None)
        if fixed is None:
            raise bad_port_forwarding(
                f"Requested internal IP address {address} is not suitable for internal neutron "
                f"port {port_id}, as its fixed_ips are {port['fixed_ips']}")
        router_id = routers.serving_subnet(
            conn, fixed["subnet_id"], routers.with_gateway_on(conn, fip.floating_network_id))
        if router_id is None:
            raise bad_port_forwarding(
                f"External network {fip.floating_network_id} is not reachable from subnet "
                f"{fixed['subnet_id']}. Cannot set Port forwarding for port {port_id} with "
                f"Floating IP {fip.id}")
        return router_id

    # --- an internal port that goes takes its forwardings -------------------------------

    def _before_port_delete(self, conn: Connection, ctx: Context, port_id: str
                            ) -> Callable[[], None] | None:
        """The port's forwardings go with it; once that has committed, the
        agents of their routers are told (their DNAT rules go at once)."""
        affected = store.floatingips_of_port(conn, port_id)
        if not affected:
            return None
        router_ids = [floatingips.get_row(conn, Context.admin(), fip_id).router_id
                      for fip_id in affected]
        store.delete_of_port(conn, port_id)
        for fip_id in affected:
            self._release_router(conn, fip_id)
        return lambda: self._routers_updated(router_ids)
