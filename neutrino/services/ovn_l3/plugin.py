"""``ovn-router``: the router plugin with OVN as its backend (Neutron's
``ovn-router``). Routers, their interfaces, gateways, routes and floating IPs
are the ``router`` plugin's (same API, same checks, same database); instead of
L3 agents, every committed change writes the router into OVN's Northbound
database, through ML2's ``ovn`` driver's connection. Routing is then
distributed (each chassis' ovn-controller routes its instances' traffic) and
NAT happens on the gateway chassis that carries the router's gateway port.

Gateway chassis are the chassis that say ``ovn-cms-options=enable-chassis-as-gw``
(``OVN Controller Gateway agent`` in ``/v2.0/agents``) and reach the external
network's physical network (their ``ovn-bridge-mappings``). A gateway port
keeps the chassis it has while they stay alive; a new one is given the least
loaded first (``[ovn] ovn_l3_scheduler = leastloaded``) or a random order
(``chance``), up to five, by priority.
"""

from __future__ import annotations

import datetime
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from neutrino.config import ConfigError
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery
from neutrino.db.util import now
from neutrino.definitions.l3 import ROUTER_GATEWAY
from neutrino.ovn import names
from neutrino.ovn.commands import (
    DeleteRow,
    KeepOnly,
    ReplaceChildren,
    Row,
    SetBalancers,
    WriteRow,
    differences,
)
from neutrino.ovn.northbound import Northbound
from neutrino.ovn.ovsdb import OvnDatabase, OvnUnavailable
from neutrino.plugins.base import Environment
from neutrino.services.l3.plugin import L3RouterPlugin, PortChanges, RouterBackend, T
from neutrino.services.ovn_l3 import rows

LOG = logging.getLogger(__name__)
ADMIN = Context.admin()


class OvnL3RouterPlugin(L3RouterPlugin):
    """The router plugin, realised by OVN rather than by L3 agents."""

    supported_extension_aliases: tuple[str, ...] = (
        "router", "ext-gw-mode", "extraroute", "extraroute-atomic", "fip-port-details",
        "floatingip-pools", "router_availability_zone", "l3-port-ip-change-not-allowed")

    def make_backend(self, env: Environment) -> RouterBackend:
        if "ovn" not in env.conf.ml2.mechanism_drivers:
            raise ConfigError("service plugin ovn-router needs ML2's ovn mechanism driver "
                              f"({env.conf.source('ml2', 'mechanism_drivers')})")
        return OvnRouters(self, env)

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        return {}  # no L3 agent calls

    def create_router(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        # OVN keeps a router up with its gateway chassis' priorities, not VRRP:
        # ``[DEFAULT] l3_ha`` is an L3 agents' setting
        return super().create_router(ctx, {**data, "ha": False})

    def _write(self, work: Callable[[Connection, PortChanges], T]) -> T:
        """A change of routers or floating IPs: 503 before anything is written
        when OVN cannot take it now, as ML2's ovn driver answers."""
        nb = self.env.hooks.ovn_northbound
        assert nb is not None  # ML2's ovn driver, which make_backend requires
        nb.require_for_api()
        return super()._write(work)


@dataclass(frozen=True)
class RouterRows:
    """A router as OVN should hold it."""

    router: Row
    ports: list[Row]
    gateway: dict[str, Any] | None
    routes: list[dict[str, Any]]
    nats: list[dict[str, Any]]
    balancers: list[Row]


class OvnRouters:
    """Writes each changed router, whole, into the Northbound database."""

    def __init__(self, plugin: OvnL3RouterPlugin, env: Environment):
        self.plugin = plugin
        self.env = env
        self.db = env.db
        self.core = env.core
        self.scheduler = env.conf.ovn.ovn_l3_scheduler
        self.distributed = env.conf.ovn.enable_distributed_floating_ip
        self.down_time = env.conf.DEFAULT.agent_down_time
        env.hooks.ovn_routers = self

    @property
    def nb(self) -> Northbound:
        nb = self.env.hooks.ovn_northbound
        assert nb is not None  # ML2's ovn driver sets it when it is built
        return nb

    # --- RouterBackend ---------------------------------------------------------------

    def routers_updated(self, router_ids: Sequence[str]) -> None:
        for router_id in router_ids:
            try:
                self.write_router(router_id)
            except OvnUnavailable as error:
                LOG.warning("router %s not written into OVN (%s); the maintenance task "
                            "will", router_id, error)

    def router_deleted(self, router_id: str, hosts: Sequence[str]) -> None:
        try:
            self.nb.transact([SetBalancers(rows.router_key(router_id), set()),
                              DeleteRow(rows.router_key(router_id))],
                             f"deleting router {router_id}")
        except OvnUnavailable as error:
            LOG.warning("router %s not deleted from OVN (%s)", router_id, error)

    def router_left(self, router_id: str, hosts: Sequence[str]) -> None:
        pass

    def hosts_of(self, router_id: str) -> list[str]:
        return []

    def unschedule(self, conn: Connection, router_id: str) -> list[str]:
        return []

    def alive_agents(self) -> int:
        return 0

    # --- the router, whole ---------------------------------------------------------------

    def wanted(self, router_id: str) -> RouterRows | None:
        """What OVN should hold of the router (None: it is gone)."""
        state = self._read(router_id)
        if state is None:
            return None
        view, ports, subnets, fips, forwardings = state
        gateway = next((p for p in ports if p["device_owner"] == ROUTER_GATEWAY), None)
        cidrs = [subnets[ip["subnet_id"]]["cidr"] for port in ports if port is not gateway
                 for ip in port["fixed_ips"] if ip["subnet_id"] in subnets]
        return RouterRows(
            router=rows.router(view, gateway["id"] if gateway else None),
            # OVN has no router port without an address (a gateway on a network
            # without subnets): such a port is left out
            ports=[row for port in ports
                   if (row := rows.router_port(port, subnets, router_id)).columns["networks"]],
            gateway=gateway,
            routes=rows.static_routes(view, gateway, subnets),
            nats=rows.nats(view, gateway, cidrs, fips, self.distributed),
            balancers=rows.forwarding_balancers(router_id, forwardings))

    def write_router(self, router_id: str) -> None:
        wanted = self.wanted(router_id)
        if wanted is None:  # deleted meanwhile
            return
        key = wanted.router.key
        commands: list[Any] = [
            WriteRow(key, wanted.router.columns, wanted.router.revision),
            *(WriteRow(port.key, port.columns, port.revision, port.parent)
              for port in wanted.ports),
            KeepOnly(key, "ports", "Logical_Router_Port",
                     {port.key.value for port in wanted.ports}),
            ReplaceChildren(key, "static_routes", "Logical_Router_Static_Route",
                            rows.ROUTE_KEY, wanted.routes),
            ReplaceChildren(key, "nat", "NAT", rows.NAT_KEY, wanted.nats),
            *(WriteRow(lb.key, lb.columns) for lb in wanted.balancers),
            SetBalancers(key, {lb.key.value for lb in wanted.balancers})]
        if wanted.gateway is not None:
            port_id = wanted.gateway["id"]
            commands.append(ReplaceChildren(
                rows.router_port_key(port_id), "gateway_chassis", "Gateway_Chassis",
                rows.CHASSIS_KEY,
                rows.gateway_chassis(port_id, self._gateway_chassis(wanted.gateway))))
        self.nb.transact(commands, f"writing router {router_id}")

    # --- drift (neutrino-ovn-db-sync, the maintenance task) ------------------------------

    def router_ids(self) -> set[str]:
        with self.db.reader() as conn:
            return set(conn.execute(select(models.routers.c.id)).scalars())

    def drift(self, router_id: str, replica: OvnDatabase) -> str | None:
        """How OVN's rows of the router differ from what it should hold: "missing",
        the differences, or None when in step (its gateway chassis aside: they
        follow the chassis alive, not the database)."""
        wanted = self.wanted(router_id)
        if wanted is None:
            return None

        def compare(api: Any) -> str | None:
            have = wanted.router.key.find(api)
            if have is None:
                return "missing"
            found = differences(api, have, wanted.router.columns)
            if {port.name for port in have.ports} != {p.key.value for p in wanted.ports}:
                found.append("router ports")
            for port in wanted.ports:
                lrp = port.key.find(api)
                if lrp is not None:
                    found += [f"{port.key.value} {d}"
                              for d in differences(api, lrp, port.columns)]
            for column, by, children in (("static_routes", rows.ROUTE_KEY, wanted.routes),
                                         ("nat", rows.NAT_KEY, wanted.nats)):
                present = {row.external_ids.get(by): row for row in getattr(have, column)}
                if set(present) != {child["external_ids"][by] for child in children} or any(
                        differences(api, present[child["external_ids"][by]], child)
                        for child in children):
                    found.append(column)
            balancers = {lb.name for lb in have.load_balancer}
            if balancers != {lb.key.value for lb in wanted.balancers} or any(
                    differences(api, lb.key.find(api), lb.columns)
                    for lb in wanted.balancers if lb.key.find(api) is not None):
                found.append("port forwardings")
            return "; ".join(found) or None

        return replica.read(compare)

    def present_router_ids(self, replica: OvnDatabase) -> set[str]:
        """The routers OVN holds rows of."""
        return replica.read(lambda api: {
            name[len("neutron-"):] for row in api.tables["Logical_Router"].rows.values()
            if (name := row.name).startswith("neutron-")})

    def forget(self, router_id: str) -> None:
        self.router_deleted(router_id, [])

    def _read(self, router_id: str) -> tuple[dict[str, Any], list[dict[str, Any]],
                                             dict[str, dict[str, Any]],
                                             list[dict[str, Any]],
                                             list[dict[str, Any]]] | None:
        """The router, its ports, their subnets, its floating IPs and their port
        forwardings, in one read."""
        RP, F, P = models.router_ports, models.floatingips, models.ports
        PF = models.port_forwardings

        def work(conn: Connection) -> Any:
            found = conn.execute(select(models.routers.c.id).where(
                models.routers.c.id == router_id)).first()
            if found is None:
                return None
            view = self.plugin.router_in(conn, router_id)
            port_ids = list(conn.execute(select(RP.c.port_id).where(
                RP.c.router_id == router_id).order_by(RP.c.port_id)).scalars())
            ports = self.core.ports_by_id(conn, port_ids)
            subnet_ids = sorted({ip["subnet_id"] for p in ports for ip in p["fixed_ips"]})
            subnets = {s["id"]: s for s in self.core.subnets_in(
                conn, ADMIN, CollectionQuery(filters={"id": subnet_ids}))} if subnet_ids else {}
            fips = [{"id": row.id, "floating_ip_address": row.floating_ip_address,
                     "fixed_ip_address": row.fixed_ip_address, "port_id": row.fixed_port_id,
                     "floating_port_mac": row.mac_address}
                    for row in conn.execute(
                        select(F.c.id, F.c.floating_ip_address, F.c.fixed_ip_address,
                               F.c.fixed_port_id, P.c.mac_address)
                        .join(P, P.c.id == F.c.floating_port_id)
                        .where(F.c.router_id == router_id).order_by(F.c.id))]
            forwardings = [row._asdict() for row in conn.execute(
                select(PF, F.c.floating_ip_address).join(F, F.c.id == PF.c.floatingip_id)
                .where(F.c.router_id == router_id).order_by(PF.c.id))]
            return view, ports, subnets, fips, forwardings

        with self.db.reader() as conn:
            return work(conn)

    def _gateway_chassis(self, gateway: dict[str, Any]) -> list[str]:
        """The chassis that may carry the gateway port, in order: those it has that
        can still, then others by load (or at random)."""
        physnet = self._physnet(gateway["network_id"])
        candidates = self._candidates(physnet)
        present = self.nb.select("Gateway_Chassis", [],
                                 ("name", "chassis_name", "priority"))
        mine = names.router_port(gateway["id"]) + "_"
        has = [gc["chassis_name"] for gc in sorted(present, key=lambda gc: -gc["priority"])
               if gc["name"].startswith(mine)]
        load: dict[str, int] = {}
        for gc in present:
            load[gc["chassis_name"]] = load.get(gc["chassis_name"], 0) + 1
        kept = [name for name in has if name in candidates]
        others = [name for name in candidates if name not in kept]
        if self.scheduler == "chance":
            random.shuffle(others)
        else:
            others.sort(key=lambda name: (load.get(name, 0), name))
        return kept + others

    def _physnet(self, network_id: str) -> str | None:
        with self.db.reader() as conn:
            S = models.network_segments
            return conn.execute(select(S.c.physical_network).where(
                S.c.network_id == network_id).order_by(S.c.segment_index)).scalar()

    def _candidates(self, physnet: str | None) -> list[str]:
        """The chassis names of alive gateway agents reaching ``physnet``."""
        since = now() - datetime.timedelta(seconds=self.down_time)
        AG = models.agents
        with self.db.reader() as conn:
            found = conn.execute(select(AG.c.configurations).where(
                AG.c.agent_type == names.GATEWAY_AGENT, AG.c.admin_state_up.is_(True),
                AG.c.heartbeat_timestamp >= since)).scalars().all()
        return sorted(config.get("chassis_name", "") for config in found
                      if physnet is None or physnet in (config.get("bridge_mappings") or {}))

