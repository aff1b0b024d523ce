"""What L3 agents ask of the L3 plugin over the bus (topic ``q-l3-plugin``),
Neutron's L3 agent RPC API as the agent calls it (API version 1.12, less the
DVR and HA calls: neutrino routers are legacy routers).

``sync_routers`` answers with everything an agent needs to build a router:
the router's API view, its gateway port and interface ports (each with the
subnets of its network and its network's MTU), and its floating IPs. The data
for a whole list of routers is read in a handful of queries per 500 routers,
however many routers an agent asks for.

Each router also carries its floating IPs' port forwardings
(``_port_forwardings``, with the floating IP's address), where Neutron's L3
agent extension pulls them through the resources push/pull RPC; the port
forwarding plugin tells the router's agent of changes (``routers_updated``).
Other service plugins add their own keys through the
``extend_router_sync`` hook (the firewall plugin's ``_firewall_groups``, the
metering plugin's ``_metering_labels``).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, select, update
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery
from neutrino.db.util import CHUNK, chunked, now
from neutrino.definitions.agent import AGENT_TYPE_L3
from neutrino.definitions.l3 import ROUTER_INTERFACE
from neutrino.definitions.portbindings import HOST_ID
from neutrino.rpc.contracts import l3
from neutrino.rpc.contracts.l3 import FIP_STATUSES, FLOATINGIPS, INTERFACES, PORT_FORWARDINGS
from neutrino.services.l3 import floatingips, ha, routers

LOG = logging.getLogger(__name__)
ADMIN = Context.admin()
R = models.routers
RP = models.router_ports
AG = models.agents
F = models.floatingips
IA = models.ip_allocations
S = models.subnets
SP = models.subnetpools
N = models.networks

PF = models.port_forwardings


class TooManyExternalNetworks(exc.NeutronException):
    status = 409
    message = "More than one external network exists."


class DistributedRoutersNotSupported(exc.NeutronException):
    status = 400
    message = ("%(call)s is for distributed (DVR) routers, which neutrino does not "
               "support: run the L3 agent with agent_mode = legacy.")


def _subnet_info(subnet: dict[str, Any]) -> dict[str, Any]:
    return {key: subnet[key] for key in ("id", "cidr", "gateway_ip", "dns_nameservers",
                                         "ipv6_ra_mode", "subnetpool_id", "host_routes")}


class L3RpcCallback:
    rpc_version = l3.VERSION

    def __init__(self, plugin: Any):
        self.plugin = plugin
        self.core = plugin.core
        self.db = plugin.db
        self.conf = plugin.conf

    # --- the routers of an agent ---------------------------------------------------------

    def get_router_ids(self, context: dict, host: str, **_: Any) -> list[str]:
        """The routers scheduled to the agent on ``host`` (after scheduling it the
        unhosted ones it can serve); agents then ask ``sync_routers`` in chunks."""
        return self.plugin.scheduler.active_routers(host)

    def sync_routers(self, context: dict, host: str | None = None,
                     router_ids: Sequence[str] | None = None, **_: Any
                     ) -> list[dict[str, Any]]:
        """The full data of the enabled routers the agent on ``host`` serves (of
        ``router_ids``, when given). As Neutron, the routers' ports are bound to
        that host first, so its L2 agent wires them."""
        if not host:
            return []
        ids = self.plugin.scheduler.active_routers(host, router_ids)
        if not ids:
            return []
        found = self._sync_data(ids, host)
        rebound = set(self._bind_ports(found, host))
        if not rebound:
            return found
        # those routers again, with their ports as bound now (one gone meanwhile: left out)
        fresh = {router["id"]: router for router in self._sync_data(sorted(rebound), host)}
        again = (fresh.get(router["id"]) if router["id"] in rebound else router
                 for router in found)
        return [router for router in again if router is not None]

    def _bind_ports(self, found: list[dict[str, Any]], host: str) -> list[str]:
        """Point the routers' ports at ``host``; the routers whose ports moved. An
        HA router's are bound to its active host, as it says so
        (``update_ha_routers_states``)."""
        rebound = []
        for router in found:
            if router["ha"]:
                continue
            ports = [port for port in [router.get("gw_port"), *router[INTERFACES]] if port]
            moved = [port["id"] for port in ports if port.get(HOST_ID, host) != host]
            for port_id in moved:
                try:
                    self.core.update_port(ADMIN, port_id, {HOST_ID: host})
                except exc.PortNotFound:
                    LOG.debug("port %s went while binding it to %s", port_id, host)
            if moved:
                rebound.append(router["id"])
        return rebound

    def _sync_data(self, router_ids: Sequence[str], host: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        with self.db.reader() as conn:
            for chunk in chunked(list(router_ids), CHUNK):
                found.extend(self._routers(conn, chunk, host))
        return found

    def _routers(self, conn: Connection, router_ids: Sequence[str], host: str
                 ) -> list[dict[str, Any]]:
        rows = conn.execute(select(R).where(R.c.id.in_(router_ids), R.c.admin_state_up)
                            .order_by(R.c.id)).all()
        if not rows:
            return []
        ids = [row.id for row in rows]
        views = routers.views(conn, rows)
        interfaces: dict[str, list[str]] = {}
        for router_id, port_id in conn.execute(
                select(RP.c.router_id, RP.c.port_id)
                .where(RP.c.router_id.in_(ids), RP.c.port_type == ROUTER_INTERFACE)
                .order_by(RP.c.port_id)):
            interfaces.setdefault(router_id, []).append(port_id)
        gateway_ids = [row.gw_port_id for row in rows if row.gw_port_id]
        ports = {port["id"]: port for port in self.core.ports_by_id(
            conn, gateway_ids + [p for ids_ in interfaces.values() for p in ids_])}
        self._add_subnets(conn, list(ports.values()))
        fips = self._floatingips(conn, ids)
        forwardings = self._port_forwardings(conn, ids)
        for row, view in zip(rows, views, strict=True):
            gateway = ports.get(row.gw_port_id) if row.gw_port_id else None
            view.update({
                "gw_port_id": row.gw_port_id, "ha": False, "distributed": False,
                "gw_port_host": None,
                INTERFACES: [ports[p] for p in interfaces.get(row.id, []) if p in ports],
                FLOATINGIPS: fips.get(row.id, []),
                PORT_FORWARDINGS: forwardings.get(row.id, [])})
            if gateway is not None:
                view["gw_port"] = gateway
                view["enable_snat"] = row.enable_snat
        self._add_ha(conn, views, host)
        for extend in self.plugin.env.hooks.extend_router_sync:
            extend(conn, views)
        return views

    def _add_ha(self, conn: Connection, views: list[dict[str, Any]], host: str) -> None:
        """An HA router's ``ha_vr_id``, its port for the agent of ``host``
        (``_ha_interface``) and that agent's last known role (``_ha_state``)."""
        found = ha.is_ha(conn, [view["id"] for view in views])
        if not found:
            return
        agent_id = conn.execute(select(AG.c.id).where(
            AG.c.host == host, AG.c.agent_type == AGENT_TYPE_L3)).scalar()
        mine = {router_id: port_id for router_id, port_id in conn.execute(
            select(ha.HB.c.router_id, ha.HB.c.port_id).where(
                ha.HB.c.router_id.in_(list(found)), ha.HB.c.l3_agent_id == agent_id))}
        ports = {port["id"]: port for port in self.core.ports_by_id(conn, list(mine.values()))}
        self._add_subnets(conn, list(ports.values()))
        roles = ha.states(conn, list(found))
        for view in views:
            if view["id"] not in found:
                continue
            view["ha"] = True
            view["ha_vr_id"] = found[view["id"]][1]
            view["_ha_state"] = roles.get(view["id"], {}).get(agent_id or "", ha.UNKNOWN)
            port = ports.get(mine.get(view["id"], ""))
            if port is not None:
                view["_ha_interface"] = port

    def update_ha_routers_states(self, context: dict, host: str, states: dict[str, str],
                                 **_: Any) -> None:
        """The agent on ``host`` says which HA routers it is active or standby
        for. Where it is active, the routers' ports are bound to its host (so
        that the L2 agents there and l2population send their traffic to it)."""
        def work(conn: Connection) -> list[str]:
            agent_id = conn.execute(select(AG.c.id).where(
                AG.c.host == host, AG.c.agent_type == AGENT_TYPE_L3)).scalar()
            if agent_id is None:
                return []
            ha.set_states(conn, agent_id, states)
            return [router_id for router_id, state in states.items() if state == ha.ACTIVE]

        active = self.db.write(work)
        if not active:
            return
        B = models.port_bindings
        with self.db.reader() as conn:
            here = select(B.c.port_id).where(B.c.host == host)
            ports = list(conn.execute(
                select(RP.c.port_id).where(RP.c.router_id.in_(active),
                                           RP.c.port_id.not_in(here))).scalars())
        for port_id in ports:
            try:
                self.core.update_port(ADMIN, port_id, {HOST_ID: host})
            except exc.PortNotFound:
                LOG.debug("port %s went while binding it to %s", port_id, host)

    def _add_subnets(self, conn: Connection, ports: list[dict[str, Any]]) -> None:
        """Give each port the subnets of its fixed IPs (``subnets``) and the others
        of its network (``extra_subnets``), the prefix length of each fixed IP, the
        address scopes of its network and its network's MTU, as Neutron does."""
        network_ids = sorted({port["network_id"] for port in ports})
        if not network_ids:
            return
        on_network: dict[str, list[dict[str, Any]]] = {n: [] for n in network_ids}
        for subnet in self.core.subnets_in(conn, ADMIN, CollectionQuery(
                filters={"network_id": network_ids})):
            on_network[subnet["network_id"]].append(subnet)
        pool_ids = sorted({s["subnetpool_id"] for found in on_network.values()
                           for s in found if s["subnetpool_id"]})
        scopes = dict(conn.execute(select(SP.c.id, SP.c.address_scope_id).where(
            SP.c.id.in_(pool_ids))).all()) if pool_ids else {}
        mtus = dict(conn.execute(select(N.c.id, N.c.mtu).where(
            N.c.id.in_(network_ids))).all())
        for port in ports:
            port["subnets"], port["extra_subnets"] = [], []
            port["address_scopes"] = {"4": None, "6": None}
            fixed_by_subnet = {ip["subnet_id"]: ip for ip in port["fixed_ips"]}
            for subnet in on_network[port["network_id"]]:
                cidr = ipaddress.ip_network(subnet["cidr"])
                port["address_scopes"][str(cidr.version)] = scopes.get(subnet["subnetpool_id"])
                fixed = fixed_by_subnet.get(subnet["id"])
                if fixed is not None:
                    fixed["prefixlen"] = cidr.prefixlen
                    port["subnets"].append(_subnet_info(subnet))
                else:
                    port["extra_subnets"].append(_subnet_info(subnet))
            port["mtu"] = mtus.get(port["network_id"], 0)

    @staticmethod
    def _floatingips(conn: Connection, router_ids: list[str]) -> dict[str, list[dict]]:
        """router id -> its floating IPs, with the address scope of the fixed IP."""
        rows = conn.execute(select(F).where(F.c.router_id.in_(router_ids))
                            .order_by(F.c.id)).all()
        if not rows:
            return {}
        scopes = dict(conn.execute(
            select(F.c.id, SP.c.address_scope_id)
            .join(IA, and_(IA.c.port_id == F.c.fixed_port_id,
                           IA.c.ip_address == F.c.fixed_ip_address))
            .join(S, S.c.id == IA.c.subnet_id).join(SP, SP.c.id == S.c.subnetpool_id)
            .where(F.c.router_id.in_(router_ids))).all())
        found: dict[str, list[dict[str, Any]]] = {}
        for fip in floatingips.views(conn, rows):
            fip["fixed_ip_address_scope"] = scopes.get(fip["id"])
            fip["host"] = None
            found.setdefault(fip["router_id"], []).append(fip)
        return found

    @staticmethod
    def _port_forwardings(conn: Connection, router_ids: list[str]) -> dict[str, list[dict]]:
        """router id -> the port forwardings of its floating IPs."""
        rows = conn.execute(
            select(PF, F.c.router_id, F.c.floating_ip_address)
            .join(F, F.c.id == PF.c.floatingip_id)
            .where(F.c.router_id.in_(router_ids)).order_by(PF.c.id)).all()
        found: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            found.setdefault(row.router_id, []).append({
                "id": row.id, "floatingip_id": row.floatingip_id,
                "floating_ip_address": row.floating_ip_address,
                "internal_port_id": row.internal_port_id,
                "internal_ip_address": row.internal_ip_address, "protocol": row.protocol,
                "external_port_start": row.external_port_start,
                "external_port_end": row.external_port_end,
                "internal_port_start": row.internal_port_start,
                "internal_port_end": row.internal_port_end})
        return found

    # --- floating IP statuses --------------------------------------------------------------

    def update_floatingip_statuses(self, context: dict, router_id: str,
                                   fip_statuses: dict[str, str], **_: Any) -> None:
        """The agent of ``router_id`` reports what it made of floating IPs. Those
        of that router take the reported status; those since disassociated go
        DOWN (as Neutron sets DOWN the disassociated floating IPs last known on
        the router); those since moved to another router are that router
        agent's business, and unknown ids are ignored."""
        wanted: dict[str, list[str]] = {}
        for fip_id, status in (fip_statuses or {}).items():
            if status not in FIP_STATUSES:
                LOG.warning("ignored status %r for floating IP %s from router %s",
                            status, fip_id, router_id)
                continue
            wanted.setdefault(status, []).append(fip_id)
        if not wanted:
            return

        def set_status(conn: Connection, ids: Sequence[str], status: str, *where: Any
                       ) -> None:
            conn.execute(update(F).where(F.c.id.in_(ids), F.c.status != status, *where)
                         .values(status=status, updated_at=now(),
                                 revision_number=F.c.revision_number + 1))

        def work(conn: Connection) -> None:
            for status, ids in sorted(wanted.items()):
                for chunk in chunked(sorted(ids)):
                    set_status(conn, chunk, status, F.c.router_id == router_id)
                    set_status(conn, chunk, "DOWN", F.c.router_id.is_(None))

        self.db.write(work)

    # --- the rest of the API -------------------------------------------------------------

    def get_external_network_id(self, context: dict, **_: Any) -> str | None:
        """The only external network (agents before API 1.13 ask, to use it when
        configured without one); None if there is none."""
        with self.db.reader() as conn:
            ids = list(conn.execute(select(N.c.id).where(N.c.router_external)
                                    .order_by(N.c.id).limit(2)).scalars())
        if len(ids) > 1:
            raise TooManyExternalNetworks()
        return ids[0] if ids else None

    def get_service_plugin_list(self, context: dict, **_: Any) -> list[str]:
        return list(self.conf.DEFAULT.service_plugins)

    def get_networks(self, context: dict, filters: dict[str, Any] | None = None,
                     fields: list[str] | None = None, **_: Any) -> list[dict[str, Any]]:
        """Networks for the agent's interface driver (API 1.12)."""
        query = CollectionQuery(filters={
            key: value if isinstance(value, list) else [value]
            for key, value in (filters or {}).items()})
        found = self.core.get_networks(ADMIN, query)
        if fields:
            found = [{key: net[key] for key in fields if key in net} for net in found]
        return found

    def get_host_ha_router_count(self, context: dict, host: str | None = None,
                                 **_: Any) -> int:
        """The L3 agent asks first thing at start; neutrino has no HA routers."""
        return 0

    def update_all_ha_network_port_statuses(self, context: dict, host: str | None = None,
                                            **_: Any) -> None:
        """No HA routers, so no HA network ports to set DOWN."""

    def get_agent_gateway_port(self, context: dict, network_id: str | None = None,
                               host: str | None = None, **_: Any) -> Any:
        raise DistributedRoutersNotSupported(call="get_agent_gateway_port")

    def delete_agent_gateway_port(self, context: dict, **_: Any) -> Any:
        raise DistributedRoutersNotSupported(call="delete_agent_gateway_port")

    def get_ports_by_subnet(self, context: dict, **_: Any) -> Any:
        raise DistributedRoutersNotSupported(call="get_ports_by_subnet")
