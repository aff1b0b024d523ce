"""The ``haproxy`` provider: load balancers run by load-balancer agents.

A load balancer of this provider is scheduled to one alive
``neutrino-lbaas-agent`` when its tree first has work pending (and moved to
another when its agent dies); its VIP port is bound to that agent's host, so
the host's L2 agent wires it like a DHCP port. Every change casts
``loadbalancer_updated`` to the agent, which reads the whole tree
(``get_loadbalancer``), makes HAProxy run it, and reports back
(``update_status``): the report completes the pending work, or puts it in
ERROR, and carries the operating statuses HAProxy observes.
"""

from __future__ import annotations

import datetime
import functools
import ipaddress
import logging
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.util import now
from neutrino.rpc.contracts.lbaas import (
    AGENT_TOPIC,
    AGENT_TYPE,
    PROVIDER,
    TOPIC,
    FlavorSyncData,
    HealthMonitorSyncData,
    L7PolicySyncData,
    L7RuleSyncData,
    ListenerSyncData,
    LoadBalancerSyncData,
    MemberSyncData,
    PoolSyncData,
    StatusReport,
    VipSyncData,
)
from neutrino.rpc.notifier import Notifier
from neutrino.services.agents import db as agents_db
from neutrino.services.agents import scheduling
from neutrino.services.agents.dhcp_scheduler import enabled_agent
from neutrino.services.agents.scheduling import Hosting
from neutrino.services.octavia import errors
from neutrino.services.octavia.catalog import FLAVORS, ZONES
from neutrino.services.octavia.plugin import (
    HM,
    L7P,
    L7R,
    LB,
    LI,
    ME,
    PENDING,
    PO,
    ST,
    STATS,
)
from neutrino.services.octavia.providers import Provider

LOG = logging.getLogger(__name__)
ADMIN = Context.admin()

LBAAS = Hosting(AGENT_TYPE, models.lbaas_loadbalancer_agent_bindings, "loadbalancer_id",
                "agent_id", None)
#: what the API accepts that HAProxy cannot do, by kind of object
UNSUPPORTED = {"listener": ("UDP", "SCTP"), "pool": ("UDP", "SCTP"),
               "healthmonitor": ("UDP-CONNECT", "SCTP"),
               # no TLS is terminated here: no client certificate to look at
               "l7rule": ("SSL_CONN_HAS_CERT", "SSL_VERIFY_RESULT", "SSL_DN_FIELD")}
#: seconds between looks for load balancers without a (live) agent
RESCHEDULE_INTERVAL = 10.0
#: the flavor options HAProxy is given, and their bounds
FLAVOR_LIMITS = {"maxconn": (1, 1_000_000), "nbthread": (1, 64)}
ZONE_OPTION = "agent_availability_zone"


class HaproxyProvider(Provider):
    """Completes nothing itself: the agent's report does."""

    completes = False
    flavor_capabilities = {
        "maxconn": "Connections the load balancer's HAProxy takes at once over all its "
                   "listeners (its global maxconn), 1 to 1000000.",
        "nbthread": "Threads of the load balancer's HAProxy, 1 to 64."}
    availability_zone_capabilities = {
        ZONE_OPTION: "The availability zone of the load-balancer agents that may run "
                     "the load balancer (an agent's [agent] availability_zone)."}

    def __init__(self, plugin: Any, name: str):
        super().__init__(plugin, name)
        self.db = plugin.db
        self.down_time: int = plugin.conf.DEFAULT.agent_down_time
        self.notifier = Notifier(plugin.env.bus)

    def _alive_since(self) -> datetime.datetime:
        return agents_db.cutoff(now(), self.down_time)

    def validate_flavor(self, options: dict[str, Any]) -> None:
        super().validate_flavor(options)
        for name, (low, high) in FLAVOR_LIMITS.items():
            value = options.get(name, low)
            if isinstance(value, bool) or not isinstance(value, int) or \
                    not low <= value <= high:
                raise errors.ProviderUnsupported(
                    provider=self.name, reason=f"flavor metadata failed validation: "
                                               f"{name} must be an integer from {low} to {high}")

    def validate_availability_zone(self, options: dict[str, Any]) -> None:
        super().validate_availability_zone(options)
        zone = options.get(ZONE_OPTION, "nova")
        if not isinstance(zone, str) or not zone:
            raise errors.ProviderUnsupported(
                provider=self.name, reason=f"availability zone metadata failed validation: "
                                           f"{ZONE_OPTION} must be a zone's name")

    def _eligible(self, conn: Connection, zone: str | None) -> Callable[[Row], bool] | None:
        """Which agents may run a load balancer of availability zone ``zone``."""
        wanted = self.plugin.catalog.options(conn, ZONES, zone).get(ZONE_OPTION)
        return None if wanted is None else (lambda agent: agent.availability_zone == wanted)

    def check(self, kind: str, value: str) -> None:
        """UDP and SCTP need IPVS (or another kernel balancer), not HAProxy; rules
        on client certificates need TLS terminated, which this provider does not."""
        if value in UNSUPPORTED.get(kind, ()):
            why = ("no TLS is terminated" if kind == "l7rule"
                   else "HAProxy balances TCP and HTTP only")
            raise errors.ProviderUnsupported(provider=PROVIDER, reason=f"{value} {kind}s: {why}")

    def check_member(self, conn: Connection, lb: Row, address: str) -> None:
        """HAProxy runs in a namespace whose only device is the VIP port's, with
        the VIP subnet on link and a default route through its gateway, if it
        has one (``neutrino.linux.lbaas``): a member elsewhere is unreachable."""
        subnet = self.plugin.core.subnet_in(conn, ADMIN, lb.vip_subnet_id)
        member = ipaddress.ip_address(address)
        if member in ipaddress.ip_network(subnet["cidr"]):
            return
        gateway = subnet["gateway_ip"]
        if gateway and ipaddress.ip_address(gateway).version == member.version:
            return
        raise errors.ProviderUnsupported(
            provider=self.name,
            reason=f"member address {address} is outside the VIP subnet "
                   f"{subnet['cidr']}, which has no IPv{member.version} gateway")

    def pending(self, conn: Connection, lb: Row, after: list[Callable[[], None]]) -> None:
        hosts = [row.host for row in scheduling.agents_hosting(conn, LBAAS, [lb.id])[lb.id]]
        if not hosts:
            chosen = scheduling.schedule(conn, LBAAS, lb.id, 1, self._alive_since(),
                                         self._eligible(conn, lb.availability_zone))
            if not chosen:
                LOG.warning("load balancer %s waits for an alive %s", lb.id, AGENT_TYPE)
                return
            hosts = [chosen[0].host]
            after.append(lambda: self._plug_vip(lb.vip_port_id, hosts[0]))
        for host in hosts:
            after.append(functools.partial(self._tell, host, lb.id))

    def failover(self, conn: Connection, lb: Row, after: list[Callable[[], None]]) -> None:
        """Onto another alive agent if there is one (the one it leaves takes its
        HAProxy down), else afresh on the same."""
        leaving = scheduling.agents_hosting(conn, LBAAS, [lb.id])[lb.id]
        chosen = scheduling.choose(conn, LBAAS, lb.id, len(leaving) + 1, self._alive_since(),
                                   self._eligible(conn, lb.availability_zone))
        if not chosen:
            self.pending(conn, lb, after)
            return
        for agent in leaving:
            scheduling.unbind(conn, LBAAS, lb.id, agent.id)
            after.append(functools.partial(self._tell, agent.host, lb.id))
        scheduling.bind(conn, LBAAS, lb.id, chosen[0].id, limit=1)
        after.append(functools.partial(self._plug_vip, lb.vip_port_id, chosen[0].host))
        after.append(functools.partial(self._tell, chosen[0].host, lb.id))

    def _tell(self, host: str, lb_id: str) -> None:
        self.notifier.cast(AGENT_TOPIC, host, "loadbalancer_updated", loadbalancer_id=lb_id)

    def _plug_vip(self, port_id: str | None, host: str) -> None:
        """The VIP port bound to the agent's host (its L2 agent wires it), up."""
        if not port_id:
            return
        try:
            self.plugin.core.update_port(ADMIN, port_id, {
                "binding:host_id": host, "admin_state_up": True})
        except exc.NotFound:
            LOG.warning("the VIP port %s is gone", port_id)

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        return {TOPIC: [LbaasRpc(self)]}

    def periodic_tasks(self) -> list[tuple[float, Callable[[], None]]]:
        return [(RESCHEDULE_INTERVAL, self.reschedule)]

    def reschedule(self) -> None:
        """Load balancers of agents silent for twice ``agent_down_time`` move to
        alive ones; pending ones that found no agent get one now."""
        dead_since = agents_db.cutoff(now(), 2 * self.down_time)

        def work(conn: Connection) -> list[tuple[str, str | None, str]]:
            moved = []
            for binding in scheduling.dead_bindings(conn, LBAAS, dead_since):
                scheduling.unbind(conn, LBAAS, binding.resource_id, binding.id)
                LOG.warning("load balancer %s leaves the dead agent on %s",
                            binding.resource_id, binding.host)
            waiting = conn.execute(
                select(LB.c.id, LB.c.vip_port_id, LB.c.availability_zone).where(
                    LB.c.provider == PROVIDER,
                    LB.c.id.not_in(select(LBAAS.resource)))).all()
            for lb_id, port_id, zone in waiting:
                chosen = scheduling.schedule(conn, LBAAS, lb_id, 1, self._alive_since(),
                                             self._eligible(conn, zone))
                if chosen:
                    moved.append((lb_id, port_id, chosen[0].host))
            return moved

        for lb_id, port_id, host in self.db.write(work):
            self._plug_vip(port_id, host)
            self._tell(host, lb_id)


# --- what the agents are told --------------------------------------------------------------

def _vip(core: Any, conn: Connection, lb: Row) -> VipSyncData:
    port = core.port_in(conn, ADMIN, lb.vip_port_id)
    subnet = core.subnet_in(conn, ADMIN, lb.vip_subnet_id)
    network = core.network_row_in(conn, ADMIN, lb.vip_network_id)
    return {"port_id": port["id"], "mac_address": port["mac_address"],
            "address": lb.vip_address,
            "prefixlen": ipaddress.ip_network(subnet["cidr"]).prefixlen,
            "gateway_ip": subnet["gateway_ip"], "network_id": lb.vip_network_id,
            "mtu": network.mtu, "host_routes": list(subnet.get("host_routes") or [])}


def _monitor(row: Row) -> HealthMonitorSyncData:
    return {"id": row.id, "type": row.type, "delay": row.delay, "timeout": row.timeout,
            "max_retries": row.max_retries, "max_retries_down": row.max_retries_down,
            "http_method": row.http_method, "url_path": row.url_path,
            "expected_codes": row.expected_codes,
            "http_version": float(row.http_version) if row.http_version else None,
            "domain_name": row.domain_name, "admin_state_up": row.admin_state_up}


def _member(row: Row) -> MemberSyncData:
    return {"id": row.id, "address": row.address, "protocol_port": row.protocol_port,
            "weight": row.weight, "backup": row.backup, "admin_state_up": row.admin_state_up,
            "monitor_address": row.monitor_address, "monitor_port": row.monitor_port}


def _policies(conn: Connection, listener_ids: list[str]
              ) -> dict[str, list[L7PolicySyncData]]:
    """listener id -> its L7 policies (with their rules) in position order."""
    found: dict[str, list[L7PolicySyncData]] = {i: [] for i in listener_ids}
    if not listener_ids:
        return found
    rules: dict[str, list[L7RuleSyncData]] = {}
    policies = conn.execute(select(L7P).where(
        L7P.c.listener_id.in_(listener_ids), L7P.c.provisioning_status != "PENDING_DELETE")
        .order_by(L7P.c.position)).all()
    if policies:
        for row in conn.execute(select(L7R).where(
                L7R.c.l7policy_id.in_([p.id for p in policies]),
                L7R.c.provisioning_status != "PENDING_DELETE")
                .order_by(L7R.c.created_at, L7R.c.id)):
            rules.setdefault(row.l7policy_id, []).append({
                "id": row.id, "type": row.type, "compare_type": row.compare_type,
                "key": row.key, "value": row.value, "invert": row.invert,
                "admin_state_up": row.admin_state_up})
    for row in policies:
        found[row.listener_id].append({
            "id": row.id, "action": row.action, "position": row.position,
            "redirect_url": row.redirect_url, "redirect_prefix": row.redirect_prefix,
            "redirect_pool_id": row.redirect_pool_id,
            "redirect_http_code": row.redirect_http_code,
            "admin_state_up": row.admin_state_up, "rules": rules.get(row.id, [])})
    return found


def _listener(row: Row) -> ListenerSyncData:
    return {"id": row.id, "protocol": row.protocol, "protocol_port": row.protocol_port,
            "connection_limit": row.connection_limit, "admin_state_up": row.admin_state_up,
            "default_pool_id": row.default_pool_id,
            "timeout_client_data": row.timeout_client_data,
            "timeout_member_connect": row.timeout_member_connect,
            "timeout_member_data": row.timeout_member_data,
            "timeout_tcp_inspect": row.timeout_tcp_inspect,
            "insert_headers": {}, "allowed_cidrs": None, "l7policies": []}


def sync_data(plugin: Any, conn: Connection, lb: Row) -> LoadBalancerSyncData:
    """``lb``'s whole tree as its agent needs it (objects being deleted left out)."""
    pool_rows = conn.execute(select(PO).where(PO.c.loadbalancer_id == lb.id)
                             .order_by(PO.c.created_at, PO.c.id)).all()
    pool_ids = [row.id for row in pool_rows]
    members: dict[str, list[MemberSyncData]] = {pool_id: [] for pool_id in pool_ids}
    monitors: dict[str, HealthMonitorSyncData] = {}
    if pool_ids:
        for row in conn.execute(select(ME).where(ME.c.pool_id.in_(pool_ids))
                                .order_by(ME.c.created_at, ME.c.id)):
            if row.provisioning_status != "PENDING_DELETE":
                members[row.pool_id].append(_member(row))
        for row in conn.execute(select(HM).where(HM.c.pool_id.in_(pool_ids))):
            if row.provisioning_status != "PENDING_DELETE":
                monitors[row.pool_id] = _monitor(row)
    pools: list[PoolSyncData] = [
        {"id": row.id, "protocol": row.protocol, "lb_algorithm": row.lb_algorithm,
         "session_persistence": row.session_persistence,
         "admin_state_up": row.admin_state_up, "members": members[row.id],
         "healthmonitor": monitors.get(row.id)}
        for row in pool_rows if row.provisioning_status != "PENDING_DELETE"]
    kept = {pool["id"] for pool in pools}
    rows = [row for row in conn.execute(select(LI).where(LI.c.loadbalancer_id == lb.id)
                                        .order_by(LI.c.created_at, LI.c.id))
            if row.provisioning_status != "PENDING_DELETE"]
    policies = _policies(conn, [row.id for row in rows])
    listeners = []
    for row in rows:
        listener = _listener(row)
        if listener["default_pool_id"] not in kept:
            listener["default_pool_id"] = None
        listener["l7policies"] = [policy for policy in policies[row.id]
                                  if policy["redirect_pool_id"] in (None, *kept)]
        listeners.append(listener)
    return {"id": lb.id, "revision_number": lb.revision_number,
            "admin_state_up": lb.admin_state_up,
            "provisioning_status": lb.provisioning_status,
            "vip": _vip(plugin.core, conn, lb), "listeners": listeners, "pools": pools,
            "flavor": _flavor(plugin.catalog.options(conn, FLAVORS, lb.flavor_id))}


def _flavor(options: dict[str, Any]) -> FlavorSyncData:
    """The flavor's options HAProxy is given (the provider checked them)."""
    found: FlavorSyncData = {}
    if "maxconn" in options:
        found["maxconn"] = int(options["maxconn"])
    if "nbthread" in options:
        found["nbthread"] = int(options["nbthread"])
    return found


class LbaasRpc:
    """``n-lbaasv2-plugin``: what the load-balancer agents call."""

    def __init__(self, provider: HaproxyProvider):
        self.provider = provider
        self.plugin = provider.plugin
        self.db = provider.db

    def get_ready_devices(self, context: dict[str, Any], host: str) -> list[str]:
        def work(conn: Connection) -> list[str]:
            agent = enabled_agent(conn, host, AGENT_TYPE)
            return [] if agent is None else scheduling.hosted_by(conn, LBAAS, agent.id)

        with self.db.reader() as conn:
            return work(conn)

    def get_loadbalancer(self, context: dict[str, Any], loadbalancer_id: str
                         ) -> LoadBalancerSyncData | None:
        with self.db.reader() as conn:
            lb = conn.execute(select(LB).where(LB.c.id == loadbalancer_id)).first()
            if lb is None or lb.provider != PROVIDER:
                return None
            try:
                return sync_data(self.plugin, conn, lb)
            except exc.NotFound as error:  # the VIP port or subnet went on the other API
                LOG.warning("load balancer %s cannot be run: %s", loadbalancer_id, error)
                return None

    def update_status(self, context: dict[str, Any], host: str, report: StatusReport) -> None:
        """The report of the tree at ``report["revision_number"]``: a newer tree's
        pending work is not completed by it (that tree's own report will)."""
        lb_id = report["loadbalancer_id"]
        observed = {item["id"]: item["operating_status"]
                    for key in ("listeners", "pools", "members") for item in report[key]}
        observed[lb_id] = report["loadbalancer"]
        after: list[Callable[[], None]] = []

        def work(conn: Connection) -> None:
            after.clear()
            stmt = select(LB).where(LB.c.id == lb_id)
            if conn.dialect.name != "sqlite":
                stmt = stmt.with_for_update()
            lb = conn.execute(stmt).first()
            if lb is None:
                return
            current = lb.revision_number == report["revision_number"]
            if report["applied"]:
                _store_stats(conn, lb_id, report.get("stats") or {})
            if lb.provisioning_status not in PENDING:
                if report["applied"]:
                    self.plugin.observe(conn, lb_id, observed)
            elif not current:
                return
            elif report["applied"]:
                self.plugin.complete(conn, lb, after, observed)
            else:
                LOG.error("load balancer %s failed on %s: %s", lb_id, host, report["error"])
                _fail(conn, lb_id)

        self.db.write(work)
        for call in after:
            call()


def _count(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _store_stats(conn: Connection, lb_id: str, stats: Mapping[str, Mapping[str, object]]
                 ) -> None:
    """The counters of the load balancer's listeners, as reported (others ignored)."""
    listeners = set(conn.execute(select(LI.c.id).where(LI.c.loadbalancer_id == lb_id))
                    .scalars())
    rows = [{"listener_id": listener_id, **{key: _count(counters.get(key))
                                            for key in STATS}}
            for listener_id, counters in stats.items() if listener_id in listeners]
    if rows:
        conn.execute(delete(ST).where(ST.c.listener_id.in_([r["listener_id"] for r in rows])))
        conn.execute(ST.insert(), rows)


def _fail(conn: Connection, lb_id: str) -> None:
    """The pending objects of the tree, and the load balancer, in ERROR."""
    pools = select(PO.c.id).where(PO.c.loadbalancer_id == lb_id)
    stamp = now()
    for table, scope in ((ME, ME.c.pool_id.in_(pools)), (HM, HM.c.pool_id.in_(pools)),
                         (LI, LI.c.loadbalancer_id == lb_id),
                         (PO, PO.c.loadbalancer_id == lb_id), (LB, LB.c.id == lb_id)):
        conn.execute(update(table).where(scope, table.c.provisioning_status.in_(PENDING))
                     .values(provisioning_status="ERROR", updated_at=stamp))
    conn.execute(update(LB).where(LB.c.id == lb_id).values(operating_status="ERROR"))
