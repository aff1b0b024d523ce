"""The agents API (/v2.0/agents) and the availability zones derived from the
agents (/v2.0/availability_zones).

ML2 brings this plugin along (a companion). Agents are made by their state
reports (``rpc.ReportStateEndpoint``), never through the API; admins may
read, enable or disable, describe and delete them. Only admins see agents
and zones at all (Neutron's get_agent and get_availability_zone policies).
"""

from __future__ import annotations

import datetime
from typing import Any

from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db.query import CollectionQuery
from neutrino.db.util import now
from neutrino.definitions.agent import AgentNotFound
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc import topics
from neutrino.rpc.contracts.reports import AgentUpdatedNotifier
from neutrino.rpc.notifier import Notifier
from neutrino.services.agents import db as agents_db
from neutrino.services.agents.rpc import ReportStateEndpoint


class AgentsPlugin(Plugin):
    supported_extension_aliases = ("agent", "agent-resources-synced", "agent_sort_key",
                                   "availability_zone", "availability_zone_filter")

    def __init__(self, env: Environment):
        super().__init__(env)
        self.down_time: int = env.conf.DEFAULT.agent_down_time
        self.notifier = AgentUpdatedNotifier(Notifier(env.bus))
        env.hooks.agent_reports = self

    def record(self, states: list[dict[str, Any]]) -> None:
        when = now()
        enable = self.conf.DEFAULT.enable_new_agents

        def work(conn: Connection) -> None:
            for state in states:
                agents_db.report(conn, state, when, self.down_time, enable)

        self.db.write(work)

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        """The agents' state reports, on ``q-reports-plugin``."""
        return {topics.REPORTS: [ReportStateEndpoint(self.db, self.conf, self.env.hooks)]}

    def _alive_since(self) -> datetime.datetime:
        return agents_db.cutoff(now(), self.down_time)

    # --- agents ------------------------------------------------------------------------

    def create_agent(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        # As Neutron: a 400, agents are not made through the API.
        raise exc.BadRequest(resource="agent",
                             msg="agents register themselves by reporting their state")

    def get_agent(self, ctx: Context, agent_id: str) -> dict[str, Any]:
        if not ctx.is_admin:
            raise AgentNotFound(agent_id=agent_id)
        since = self._alive_since()
        return self._read(lambda conn: agents_db.view(agents_db.get_row(conn, agent_id),
                                                      since))

    def get_agents(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        if not ctx.is_admin:
            return []
        since = self._alive_since()
        return self._read(lambda conn: agents_db.list_(conn, query, since))

    def update_agent(self, ctx: Context, agent_id: str, data: dict[str, Any],
                     if_revision: int | None = None) -> dict[str, Any]:
        if not ctx.is_admin:
            raise AgentNotFound(agent_id=agent_id)
        before = self.db.write(lambda conn: agents_db.update_(conn, agent_id, data))
        enabled = data.get("admin_state_up", before.admin_state_up)
        if enabled != before.admin_state_up:  # its work changes: it reads it again
            self.notifier.agent_updated(before.topic, before.host, enabled)
        return self.get_agent(ctx, agent_id)

    def delete_agent(self, ctx: Context, agent_id: str, if_revision: int | None = None
                     ) -> None:
        if not ctx.is_admin:
            raise AgentNotFound(agent_id=agent_id)
        self.db.write(lambda conn: agents_db.delete_(conn, agent_id))

    # --- availability zones ----------------------------------------------------------------

    def get_availability_zones(self, ctx: Context, query: CollectionQuery
                               ) -> list[dict[str, Any]]:
        if not ctx.is_admin:
            return []
        # As Neutron: zones are not sorted (nor paged: they have no id to page by).
        found = self._read(agents_db.zones)
        items = [{"name": name, "resource": resource, "state": state}
                 for (name, resource), state in sorted(found.items())]
        return [item for item in items
                if all(item[key] in wanted for key, wanted in query.filters.items())]

    def get_availability_zone(self, ctx: Context, name: str) -> dict[str, Any]:
        raise exc.HTTPNotFound()
