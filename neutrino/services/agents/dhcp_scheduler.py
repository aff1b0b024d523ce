"""Networks to DHCP agents (the dhcp_agent_scheduler extension): the admin's
say, automatic scheduling, failover away from dead agents, and what the DHCP
agents are told.

A network needs DHCP agents once it has a DHCP-enabled subnet. It gets
``dhcp_agents_per_network`` of them when such a subnet or a port is made on
it, and when an agent asks for its work (``network_auto_schedule``). With
``allow_automatic_dhcp_failover``, networks of agents silent for twice
``agent_down_time`` move to alive ones. ML2 calls ``notify`` after each
committed change; the hosting agents hear it on ``dhcp_agent.<host>``.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import bindparam, exists, func, select, true, update
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.prepared import Prepared
from neutrino.db.query import CollectionQuery
from neutrino.db.util import now
from neutrino.definitions.agent import AGENT_TYPE_DHCP
from neutrino.definitions.agent_scheduler import (
    InvalidDHCPAgent,
    NetworkHostedByDHCPAgent,
    NetworkNotHostedByDhcpAgent,
)
from neutrino.plugins.base import Environment, Plugin
from neutrino.plugins.hooks import DhcpTargets, JoinedTargets
from neutrino.rpc.contracts.dhcp import DHCP_OWNER, RESERVED_DHCP_PORT, DhcpAgentNotifier
from neutrino.rpc.notifier import Notifier
from neutrino.services.agents import db as agents_db
from neutrino.services.agents import scheduling
from neutrino.services.agents.scheduling import DHCP

LOG = logging.getLogger(__name__)
ADMIN = Context.admin()
S = models.subnets
P = models.ports
AG = models.agents
# Changes after which a network without agents gets some.
SCHEDULING_EVENTS = ("subnet_create_end", "subnet_update_end", "port_create_end")

# What every notification reads (a port create's, update's and delete's too):
# the network's agents; and after a change that may want scheduling, whether
# scheduling could add one: the network has a DHCP subnet and an agent is free
# (in the same statement: a row of these with each agent, or alone).
_AGENTS = (select(AG.c.host, AG.c.admin_state_up, AG.c.heartbeat_timestamp)
           .join(DHCP.table, DHCP.agent == AG.c.id)
           .where(DHCP.resource == bindparam("network_id")))
_HOSTING = Prepared(_AGENTS.order_by(DHCP.table.c.binding_index))
_FLAGS = select(
    exists().where(S.c.network_id == bindparam("network_id"), S.c.enable_dhcp.is_(True))
    .label("dhcp_subnet"),
    exists().where(AG.c.agent_type == AGENT_TYPE_DHCP, AG.c.admin_state_up.is_(True),
                   AG.c.heartbeat_timestamp >= bindparam("since")).label("free_agent"),
).subquery("flags")
_HOSTED = _AGENTS.add_columns(DHCP.table.c.binding_index).subquery("hosted")
_HOSTING_AND_FLAGS = Prepared(
    select(_HOSTED.c.host, _HOSTED.c.admin_state_up, _HOSTED.c.heartbeat_timestamp,
           _FLAGS.c.dhcp_subnet, _FLAGS.c.free_agent)
    .select_from(_FLAGS.outerjoin(_HOSTED, true()))
    .order_by(_HOSTED.c.binding_index))
# the same, for a port create to join to its read of the network
_JOINABLE = (
    select(_HOSTED.c.host.label("dhcp_host"),
           _HOSTED.c.admin_state_up.label("dhcp_admin_state_up"),
           _HOSTED.c.heartbeat_timestamp.label("dhcp_heartbeat_timestamp"),
           _HOSTED.c.binding_index.label("dhcp_binding_index"),
           _FLAGS.c.dhcp_subnet, _FLAGS.c.free_agent.label("dhcp_free_agent"))
    .select_from(_FLAGS.outerjoin(_HOSTED, true()))
    .subquery("dhcp"))


def networks_wanting_agents(conn: Connection, wanted: int) -> list[str]:
    """Networks with a DHCP-enabled subnet and fewer than ``wanted`` agents."""
    count = (select(func.count()).where(DHCP.resource == S.c.network_id)
             .scalar_subquery())
    return list(conn.execute(select(S.c.network_id).distinct().where(
        S.c.enable_dhcp.is_(True), count < wanted)).scalars())


def enabled_agent(conn: Connection, host: str, agent_type: str) -> Row | None:
    """The agent of ``agent_type`` on ``host``, if it exists and is enabled."""
    row = conn.execute(select(models.agents).where(
        models.agents.c.agent_type == agent_type, models.agents.c.host == host)).first()
    return row if row is not None and row.admin_state_up else None


class DhcpSchedulerPlugin(Plugin):
    supported_extension_aliases = ("dhcp_agent_scheduler",)

    def __init__(self, env: Environment):
        super().__init__(env)
        conf = env.conf.DEFAULT
        self.per_network: int = conf.dhcp_agents_per_network
        self.auto_schedule: bool = conf.network_auto_schedule
        self.failover: bool = conf.allow_automatic_dhcp_failover
        self.down_time: int = conf.agent_down_time
        self.notifier = DhcpAgentNotifier(Notifier(env.bus))
        self.started = now()
        env.hooks.dhcp = self  # the core plugin tells it of every change
        self._joined = JoinedTargets(_JOINABLE, _JOINABLE.c.dhcp_binding_index,
                                     self._targets_params, self._joined_targets)

    def _alive_since(self) -> datetime.datetime:
        return agents_db.cutoff(now(), self.down_time)

    def _cast(self, hosts: list[str], method: str, payload: dict[str, Any]) -> None:
        self.notifier.notify(hosts, method, payload)

    # --- the admin's API ---------------------------------------------------------------

    def _network(self, network_id: str) -> dict[str, Any]:
        return self.env.core.get_network(ADMIN, network_id)  # NetworkNotFound: 404

    def _dhcp_agent(self, conn: Connection, agent_id: str) -> Row:
        row = agents_db.get_row(conn, agent_id)
        if row.agent_type != AGENT_TYPE_DHCP or not row.admin_state_up:
            raise InvalidDHCPAgent(id=agent_id)
        return row

    def list_networks_on_dhcp_agent(self, ctx: Context, agent_id: str
                                    ) -> list[dict[str, Any]]:
        def work(conn: Connection) -> list[str]:
            agents_db.get_row(conn, agent_id)
            return scheduling.hosted_by(conn, DHCP, agent_id)

        ids = self._read(work)
        if not ids:
            return []
        return self.env.core.get_networks(ADMIN, CollectionQuery(filters={"id": ids}))

    def list_dhcp_agents_hosting_network(self, ctx: Context, network_id: str
                                         ) -> list[dict[str, Any]]:
        self._network(network_id)
        since = self._alive_since()
        return self._read(lambda conn: [
            agents_db.view(row, since)
            for row in scheduling.agents_hosting(conn, DHCP, [network_id])[network_id]])

    def add_network_to_dhcp_agent(self, ctx: Context, agent_id: str, network_id: str) -> None:
        network = self._network(network_id)

        def work(conn: Connection) -> str:
            agent = self._dhcp_agent(conn, agent_id)
            hosting = scheduling.agents_hosting(conn, DHCP, [network_id])[network_id]
            if any(row.id == agent_id for row in hosting):
                raise NetworkHostedByDHCPAgent(network_id=network_id, agent_id=agent_id)
            scheduling.bind(conn, DHCP, network_id, agent_id)
            return agent.host

        host = self.db.write(work)
        self._cast([host], "network_create_end", {"network": {"id": network["id"]}})

    def remove_network_from_dhcp_agent(self, ctx: Context, agent_id: str, network_id: str
                                       ) -> None:
        self._network(network_id)

        def work(conn: Connection) -> str:
            agent = agents_db.get_row(conn, agent_id)
            if not scheduling.unbind(conn, DHCP, network_id, agent_id):
                raise NetworkNotHostedByDhcpAgent(network_id=network_id, agent_id=agent_id)
            reserve_dhcp_ports(conn, network_id, agent.host)
            return agent.host

        host = self.db.write(work)
        self._cast([host], "network_delete_end", {"network_id": network_id})

    # --- scheduling and notifying --------------------------------------------------------

    def notify(self, method: str, payload: dict[str, Any], network_id: str,
               hosts: list[str] | None = None, targets: DhcpTargets | None = None
               ) -> None:
        """Tell the network's DHCP agents about a committed change (``hosts``: the
        agents it had before a delete took its bindings; ``targets``: read in the
        change's transaction), giving it agents first when it needs them."""
        if hosts is None:
            if targets is None:
                targets = self._read(lambda conn: self.targets(conn, method, network_id))
            hosts = targets.hosts
            if targets.needs_agents:
                since = self._alive_since()
                hosts = self.db.write(lambda conn: self._schedule(conn, network_id, since))
        self._cast(hosts, method, {**payload, "network_id": network_id})

    def targets(self, conn: Connection, method: str, network_id: str) -> DhcpTargets:
        """The hosts of the network's alive agents, and (after ``method``s that
        schedule) whether scheduling could give it one it lacks: one statement."""
        params = {"network_id": network_id, **self._targets_params()}
        if method not in SCHEDULING_EVENTS:
            hosting = [(row.host, row.admin_state_up, row.heartbeat_timestamp)
                       for row in _HOSTING.rows(conn, params)]
            return self._targets(params["since"], hosting)
        rows = _HOSTING_AND_FLAGS.rows(conn, params)
        return self._targets(
            params["since"], [(row.host, row.admin_state_up, row.heartbeat_timestamp)
                              for row in rows if row.host is not None],
            bool(rows[0].dhcp_subnet) and bool(rows[0].free_agent))

    def joined_targets(self) -> JoinedTargets:
        return self._joined

    def _targets_params(self) -> dict[str, Any]:
        return {"since": self._alive_since()}

    def _joined_targets(self, rows: list[Any], params: dict[str, Any]) -> DhcpTargets:
        """``targets`` of a scheduling event from the rows of a statement that
        joined ``_JOINABLE`` (at least one) with ``params``."""
        first = rows[0]
        return self._targets(
            params["since"], [(row.dhcp_host, row.dhcp_admin_state_up,
                                row.dhcp_heartbeat_timestamp)
                               for row in rows if row.dhcp_host is not None],
            bool(first.dhcp_subnet) and bool(first.dhcp_free_agent))

    def _targets(self, since: datetime.datetime, hosting: list[tuple[str, bool, Any]],
                 could_schedule: bool = False) -> DhcpTargets:
        """``hosting``: the network's agents (host, enabled, last heartbeat);
        ``could_schedule``: it has a DHCP subnet and an agent is free."""
        hosts = [host for host, up, heartbeat in hosting if up and heartbeat >= since]
        return DhcpTargets(hosts, len(hosting) < self.per_network and could_schedule)

    def _schedule(self, conn: Connection, network_id: str, since: datetime.datetime
                  ) -> list[str]:
        added = scheduling.schedule(conn, DHCP, network_id, self.per_network, since)
        if added:
            LOG.info("network %s scheduled to the DHCP agents on %s", network_id,
                     ", ".join(row.host for row in added))
        return self._serving(conn, network_id, since)

    def hosts_of(self, network_id: str) -> list[str]:
        """The hosts of the network's alive, enabled agents (to keep before a delete)."""
        return self._read(lambda conn: self._serving(conn, network_id, self._alive_since()))

    @staticmethod
    def _serving(conn: Connection, network_id: str, since: datetime.datetime) -> list[str]:
        return [row.host for row in scheduling.agents_hosting(conn, DHCP, [network_id])
                [network_id] if row.admin_state_up and row.heartbeat_timestamp >= since]

    def active_networks(self, host: str) -> list[str]:
        """What the DHCP agent on ``host`` should serve: the networks bound to it,
        after giving it those without enough agents (``network_auto_schedule``).
        Nothing for an unknown or disabled agent."""
        since = self._alive_since()

        def work(conn: Connection) -> list[str]:
            agent = enabled_agent(conn, host, AGENT_TYPE_DHCP)
            if agent is None:
                return []
            if self.auto_schedule and agent.heartbeat_timestamp >= since:
                for network_id in networks_wanting_agents(conn, self.per_network):
                    hosting = scheduling.agents_hosting(conn, DHCP, [network_id])[network_id]
                    if all(row.id != agent.id for row in hosting):
                        scheduling.bind(conn, DHCP, network_id, agent.id,
                                        limit=self.per_network)
            return scheduling.hosted_by(conn, DHCP, agent.id)

        return self.db.write(work)

    # --- failover ------------------------------------------------------------------------

    def periodic_tasks(self) -> list[tuple[float, Callable[[], None]]]:
        if not self.failover:
            return []
        return [(max(self.down_time / 2, 1), self.reschedule_from_dead_agents)]

    def reschedule_from_dead_agents(self) -> None:
        """Move networks off agents silent for twice agent_down_time (not before
        this server has run that long: agents need time to report to it)."""
        when = now()
        dead_since = when - datetime.timedelta(seconds=2 * self.down_time)
        if self.started > dead_since:
            return
        since = self._alive_since()

        def work(conn: Connection) -> list[tuple[str, str, list[str]]]:
            moves = []
            for binding in scheduling.dead_bindings(conn, DHCP, dead_since):
                scheduling.unbind(conn, DHCP, binding.resource_id, binding.id)
                reserve_dhcp_ports(conn, binding.resource_id, binding.host)
                added = scheduling.schedule(conn, DHCP, binding.resource_id,
                                            self.per_network, since)
                moves.append((binding.resource_id, binding.host, [r.host for r in added]))
            return moves

        for network_id, old, new in self.db.write(work):
            LOG.warning("network %s moved from the dead DHCP agent on %s to %s", network_id,
                        old, ", ".join(new) or "no agent (none alive)")
            self._cast([old], "network_delete_end", {"network_id": network_id})
            self._cast(new, "network_create_end", {"network": {"id": network_id}})


def reserve_dhcp_ports(conn: Connection, network_id: str, host: str) -> None:
    """Keep the DHCP ports ``host``'s agent had on the network for the next agent
    (its addresses stay what clients know)."""
    bound_here = exists().where(models.port_bindings.c.port_id == P.c.id,
                                models.port_bindings.c.host == host)
    conn.execute(update(P).where(
        P.c.network_id == network_id, P.c.device_owner == DHCP_OWNER,
        P.c.device_id != RESERVED_DHCP_PORT, bound_here).values(device_id=RESERVED_DHCP_PORT))
