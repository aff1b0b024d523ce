"""Routers to L3 agents (the l3_agent_scheduler extension): the admin's say,
automatic scheduling, failover, and what the L3 agents are told.

A legacy router lives on one L3 agent; an HA router on
``max_l3_agents_per_router`` of them (0: every one that can), each with its
port on the project's HA network (``neutrino.services.l3.ha``). A router gets
its agents whenever it changes and has too few (and, with
``router_auto_schedule``, when an agent asks for its work); with
``allow_automatic_l3agent_failover`` legacy routers of agents silent for twice
``agent_down_time`` move to alive ones (HA routers' VRRP moves them). An agent
takes a router only if it can: routers without a gateway need
``handle_internal_only_routers``, and an agent with a
``gateway_external_network_id`` serves only that network's.
"""

from __future__ import annotations

import datetime
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.util import now
from neutrino.definitions.agent import AGENT_TYPE_L3
from neutrino.definitions.agent_scheduler import (
    InvalidL3Agent,
    RouterHostedByL3Agent,
    RouterNotHostedByL3Agent,
)
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc.contracts.l3 import L3AgentNotifier
from neutrino.rpc.notifier import Notifier
from neutrino.services.agents import db as agents_db
from neutrino.services.agents import scheduling
from neutrino.services.agents.dhcp_scheduler import enabled_agent
from neutrino.services.agents.scheduling import L3
from neutrino.services.l3 import ha

LOG = logging.getLogger(__name__)
ADMIN = Context.admin()
R = models.routers
# A legacy router is served by one agent.
AGENTS_PER_ROUTER = 1


def gateway_networks(conn: Connection, router_ids: Sequence[str]) -> dict[str, str | None]:
    """router id -> the network of its gateway, or None."""
    rows = conn.execute(select(R.c.id, models.ports.c.network_id)
                        .outerjoin(models.ports, models.ports.c.id == R.c.gw_port_id)
                        .where(R.c.id.in_(list(router_ids))))
    return dict(rows.all())


def can_host(agent: Row, gateway_network: str | None) -> bool:
    """Whether ``agent`` (by what it reports) may serve a router with that gateway."""
    configurations = agent.configurations or {}
    if gateway_network is None:
        return configurations.get("handle_internal_only_routers", True)
    wanted = configurations.get("gateway_external_network_id") or None
    return wanted is None or wanted == gateway_network


def _role(agent: dict[str, Any], roles: dict[str, str]) -> str:
    """What an agent's role is taken to be: a dead agent's is not known; a
    disabled one has let its routers go (standby), whatever it said last."""
    if not agent["alive"]:
        return ha.UNKNOWN
    if not agent["admin_state_up"]:
        return ha.STANDBY
    return roles.get(agent["id"], ha.UNKNOWN)


class L3AgentSchedulerPlugin(Plugin):
    supported_extension_aliases = ("l3_agent_scheduler",)

    def __init__(self, env: Environment, l3: Any):
        super().__init__(env)
        conf = env.conf.DEFAULT
        self.l3 = l3
        self.auto_schedule: bool = conf.router_auto_schedule
        self.ha_agents: int = conf.max_l3_agents_per_router
        self.failover: bool = conf.allow_automatic_l3agent_failover
        self.down_time: int = conf.agent_down_time
        self.notifier = L3AgentNotifier(Notifier(env.bus))
        self.started = now()

    def _alive_since(self) -> datetime.datetime:
        return agents_db.cutoff(now(), self.down_time)

    def alive_agents(self) -> int:
        """The L3 agents alive and enabled: those a router may be scheduled to."""
        since = self._alive_since()
        return self._read(lambda conn: len(scheduling.usable_agents(conn, L3, since)))

    def _wanted(self, conn: Connection, router_id: str) -> int:
        """How many agents the router is to have."""
        if not ha.is_ha(conn, [router_id]):
            return AGENTS_PER_ROUTER
        return self.ha_agents or 255

    def _ha_ports(self, conn: Connection, changes: Any, router_id: str,
                  agents: Sequence[Row]) -> None:
        """An HA router's ports for the agents it was just bound to."""
        found = ha.is_ha(conn, [router_id]).get(router_id)
        if found is None or not agents:
            return
        project_id = str(conn.execute(select(R.c.project_id).where(R.c.id == router_id))
                         .scalar())
        have = ha.ports_of(conn, router_id)
        for agent in agents:
            if agent.id not in have:
                ha.add_port(conn, changes, router_id, found[0], project_id, agent.id,
                            agent.host)

    def unschedule(self, conn: Connection, router_id: str) -> list[str]:
        """The router taken off every agent (it is being converted); their hosts."""
        hosting = scheduling.agents_hosting(conn, L3, [router_id])[router_id]
        for row in hosting:
            scheduling.unbind(conn, L3, router_id, row.id)
        return [row.host for row in hosting]

    # --- the admin's API ---------------------------------------------------------------

    def _router(self, router_id: str) -> dict[str, Any]:
        return self.l3.get_router(ADMIN, router_id)  # RouterNotFound: 404

    def list_routers_on_l3_agent(self, ctx: Context, agent_id: str) -> list[dict[str, Any]]:
        def work(conn: Connection) -> list[str]:
            agents_db.get_row(conn, agent_id)
            return scheduling.hosted_by(conn, L3, agent_id)

        ids = self._read(work)
        return [self._router(router_id) for router_id in ids]

    def list_l3_agents_hosting_router(self, ctx: Context, router_id: str
                                      ) -> list[dict[str, Any]]:
        self._router(router_id)
        since = self._alive_since()

        def work(conn: Connection) -> list[dict[str, Any]]:
            views = [agents_db.view(row, since)
                     for row in scheduling.agents_hosting(conn, L3, [router_id])[router_id]]
            roles = ha.states(conn, [router_id]).get(router_id)
            if roles is not None:  # an HA router: each agent's role, as Neutron shows it
                for view in views:
                    view["ha_state"] = _role(view, roles)
            return views

        return self._read(work)

    def add_router_to_l3_agent(self, ctx: Context, agent_id: str, router_id: str) -> None:
        """As Neutron: a router on another agent is refused, on this one a no-op."""
        self._router(router_id)

        def work(conn: Connection) -> str | None:
            agent = agents_db.get_row(conn, agent_id)
            if agent.agent_type != AGENT_TYPE_L3 or not agent.admin_state_up:
                raise InvalidL3Agent(id=agent_id)
            hosting = scheduling.agents_hosting(conn, L3, [router_id])[router_id]
            if any(row.id == agent_id for row in hosting):
                return None
            if hosting and not ha.is_ha(conn, [router_id]):
                raise RouterHostedByL3Agent(router_id=router_id, agent_id=hosting[0].id)
            if not can_host(agent, gateway_networks(conn, [router_id])[router_id]):
                raise InvalidL3Agent(id=agent_id)
            scheduling.bind(conn, L3, router_id, agent_id)
            self._ha_ports(conn, changes, router_id, [agent])
            return agent.host

        changes = self.l3.port_changes()
        host = self.db.write(work)
        changes.committed()
        if host is not None:
            self.notifier.router_added_to_agent(host, [router_id])

    def remove_router_from_l3_agent(self, ctx: Context, agent_id: str, router_id: str
                                    ) -> None:
        self._router(router_id)

        def work(conn: Connection) -> str:
            agent = agents_db.get_row(conn, agent_id)
            if not scheduling.unbind(conn, L3, router_id, agent_id):
                raise RouterNotHostedByL3Agent(router_id=router_id, agent_id=agent_id)
            ha.remove_ports(conn, changes, router_id, [agent_id])
            return agent.host

        changes = self.l3.port_changes()
        host = self.db.write(work)
        changes.committed()
        self.notifier.router_removed_from_agent(host, router_id)

    # --- scheduling and notifying --------------------------------------------------------

    def _schedule(self, conn: Connection, changes: Any, router_id: str,
                  since: datetime.datetime, gateway_network: str | None) -> list[Row]:
        added = scheduling.schedule(conn, L3, router_id, self._wanted(conn, router_id), since,
                                    lambda agent: can_host(agent, gateway_network))
        self._ha_ports(conn, changes, router_id, added)
        for agent in added:
            LOG.info("router %s scheduled to the L3 agent on %s", router_id, agent.host)
        return added

    def _short(self, conn: Connection, router_ids: Sequence[str]) -> dict[str, list[Row]]:
        """Those of the routers with fewer agents than they are to have, with
        the agents they have."""
        hosting = scheduling.agents_hosting(conn, L3, router_ids)
        several = ha.is_ha(conn, [rid for rid, rows in hosting.items() if rows])
        return {rid: rows for rid, rows in hosting.items()
                if len(rows) < (self.ha_agents or 255 if rid in several else 1)}

    def routers_updated(self, router_ids: Sequence[str]) -> None:
        """After a committed change to routers: give those without an agent one,
        then tell their agents."""
        since = self._alive_since()

        def serving(conn: Connection) -> dict[str, list[str]]:
            hosting = scheduling.agents_hosting(conn, L3, router_ids)
            return {rid: [row.host for row in rows
                          if row.admin_state_up and row.heartbeat_timestamp >= since]
                    for rid, rows in hosting.items()}

        changes = self.l3.port_changes()

        def work(conn: Connection) -> dict[str, list[str]]:
            short = list(self._short(conn, router_ids))
            gateways = gateway_networks(conn, short) if short else {}
            for router_id in short:
                if router_id in gateways:  # it still exists
                    self._schedule(conn, changes, router_id, since, gateways[router_id])
            return serving(conn)

        def needs_work(conn: Connection) -> bool:
            usable = scheduling.usable_agents(conn, L3, since)
            if not usable:
                return False
            return any(len(rows) < len(usable)
                       for rows in self._short(conn, router_ids).values())

        hosts = self.db.write(work) if self._read(needs_work) else self._read(serving)
        changes.committed()
        by_host: dict[str, list[str]] = {}
        for router_id, names in hosts.items():
            for host in names:
                by_host.setdefault(host, []).append(router_id)
        for host, ids in by_host.items():
            self.notifier.routers_updated([host], ids)

    def hosts_of(self, router_id: str) -> list[str]:
        """The hosts of the agents serving the router (to keep before a delete)."""
        return self._read(lambda conn: [
            row.host for row in scheduling.agents_hosting(conn, L3, [router_id])[router_id]])

    def router_deleted(self, router_id: str, hosts: Sequence[str]) -> None:
        self.notifier.router_deleted(hosts, router_id)

    def router_left(self, router_id: str, hosts: Sequence[str]) -> None:
        for host in hosts:
            self.notifier.router_removed_from_agent(host, router_id)

    def active_routers(self, host: str, router_ids: Sequence[str] | None = None
                       ) -> list[str]:
        """What the L3 agent on ``host`` should serve (of ``router_ids``, when
        given): the routers bound to it, after giving it those without an agent
        that it can serve (``router_auto_schedule``). Nothing for an unknown or
        disabled agent."""
        since = self._alive_since()

        changes = self.l3.port_changes()

        def work(conn: Connection) -> list[str]:
            agent = enabled_agent(conn, host, AGENT_TYPE_L3)
            if agent is None:
                return []
            if self.auto_schedule and agent.heartbeat_timestamp >= since:
                self._take_unhosted(conn, changes, agent, router_ids)
            hosted = scheduling.hosted_by(conn, L3, agent.id)
            if router_ids is not None:
                wanted = set(router_ids)
                hosted = [rid for rid in hosted if rid in wanted]
            return hosted

        hosted = self.db.write(work)
        changes.committed()
        return hosted

    def _take_unhosted(self, conn: Connection, changes: Any, agent: Row,
                       router_ids: Sequence[str] | None) -> None:
        """The routers without an agent, and the HA routers short of agents that
        this one does not host yet, that it can serve."""
        mine = select(L3.resource).where(L3.agent == agent.id)
        stmt = select(R.c.id).where(R.c.id.not_in(select(L3.resource))
                                    | (R.c.id.in_(select(ha.HR.c.router_id))
                                       & R.c.id.not_in(mine)))
        if router_ids is not None:
            stmt = stmt.where(R.c.id.in_(list(router_ids)))
        candidates = list(conn.execute(stmt).scalars())
        if not candidates:
            return
        gateways = gateway_networks(conn, candidates)
        for router_id in candidates:
            if can_host(agent, gateways.get(router_id)) and scheduling.bind(
                    conn, L3, router_id, agent.id, limit=self._wanted(conn, router_id)):
                self._ha_ports(conn, changes, router_id, [agent])

    # --- failover ------------------------------------------------------------------------

    def periodic_tasks(self) -> list[tuple[float, Callable[[], None]]]:
        if not self.failover:
            return []
        return [(max(self.down_time / 2, 1), self.reschedule_from_dead_agents)]

    def reschedule_from_dead_agents(self) -> None:
        """Move routers off agents silent for twice agent_down_time (not before this
        server has run that long: agents need time to report to it). A router no
        alive agent can take stays where it is."""
        dead_since = now() - datetime.timedelta(seconds=2 * self.down_time)
        if self.started > dead_since:
            return
        since = self._alive_since()

        def work(conn: Connection) -> list[tuple[str, str, str]]:
            moves = []
            bindings = scheduling.dead_bindings(conn, L3, dead_since)
            several = ha.is_ha(conn, sorted({b.resource_id for b in bindings}))
            for binding in bindings:
                router_id = binding.resource_id
                if router_id in several:
                    continue  # VRRP moved it: its other agents serve it
                gateway = gateway_networks(conn, [router_id]).get(router_id)
                candidates = scheduling.choose(
                    conn, L3, router_id, AGENTS_PER_ROUTER + 1, since,
                    functools.partial(can_host, gateway_network=gateway))
                if not candidates:
                    continue
                scheduling.unbind(conn, L3, router_id, binding.id)
                scheduling.bind(conn, L3, router_id, candidates[0].id,
                                limit=AGENTS_PER_ROUTER)
                moves.append((router_id, binding.host, candidates[0].host))
            return moves

        for router_id, old, new in self.db.write(work):
            LOG.warning("router %s moved from the dead L3 agent on %s to %s", router_id,
                        old, new)
            self.notifier.router_removed_from_agent(old, router_id)
            self.notifier.router_added_to_agent(new, [router_id])
