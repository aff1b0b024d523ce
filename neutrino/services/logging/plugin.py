"""The logging API (``service_plugins = log``): /v2.0/log/logs and
/v2.0/log/loggable-resources, as Neutron's ``log`` service plugin serves them.

A log is checked by its resource type (``drivers.LoggableType``) inside the
create's transaction. Once a create, a delete, or an update of ``enabled``
has committed, every L2 agent hears ``logs_updated`` and asks again which logs
reach its ports (``get_sg_log_info_for_ports``, served here). Only ``name``,
``description`` and ``enabled`` can change, as in Neutron. A security group's
logs go with it (``before_security_group_delete``); a port's logs go with
the port (the foreign key).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db.query import CollectionQuery
from neutrino.definitions import logging as lg
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc.contracts import logging as contract
from neutrino.rpc.notifier import Notifier
from neutrino.services.logging import logs
from neutrino.services.logging.drivers import load_drivers, load_types
from neutrino.services.logging.security_group import logs_of_ports


class LoggingRpcCallback:
    """What the L2 agents' ``log`` extension calls (``rpc.contracts.logging``)."""

    rpc_version = contract.VERSION
    rpc_namespace = contract.NAMESPACE

    def __init__(self, plugin: LoggingPlugin):
        self._plugin = plugin

    def get_sg_log_info_for_ports(self, context: dict[str, Any], port_ids: list[str],
                                  **kwargs: Any) -> dict[str, list[contract.LogInfo]]:
        if not isinstance(port_ids, list) or not all(isinstance(p, str) for p in port_ids):
            raise exc.InvalidInput(error_message="port_ids must be a list of port ids")
        return self._plugin._read(lambda conn: logs_of_ports(conn, port_ids))


class LoggingPlugin(Plugin):
    plugin_type = "LOGGING"
    supported_extension_aliases = (lg.ALIAS,)

    def __init__(self, env: Environment):
        super().__init__(env)
        self.drivers = load_drivers(env.conf)
        self.types = load_types()
        self.notifier = contract.LoggingAgentNotifier(Notifier(env.bus))
        env.hooks.before_security_group_delete.append(self._group_deleted)

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        return {contract.TOPIC: [LoggingRpcCallback(self)]}

    def supported_types(self) -> list[str]:
        """The resource types a running driver logs and a loggable type checks."""
        return sorted(self.drivers.resource_types() & set(self.types))

    # --- logs ----------------------------------------------------------------------------

    def create_log(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        resource_type = data["resource_type"]
        if resource_type not in self.supported_types():
            raise lg.InvalidLogResourceType(resource_type=resource_type)
        kind = self.types[resource_type]

        def work(conn: Connection) -> dict[str, Any]:
            kind.validate(conn, ctx, data, self.drivers, self.env.core)
            return logs.create(conn, data)

        made = self.db.write(work)
        if made["enabled"]:
            self._changed([made])
        return made

    def get_log(self, ctx: Context, log_id: str) -> dict[str, Any]:
        return self._read(lambda conn: logs.get(conn, ctx, log_id))

    def get_logs(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: logs.list_(conn, ctx, query))

    def update_log(self, ctx: Context, log_id: str, data: dict[str, Any],
                   if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            logs.update(conn, ctx, log_id, data, if_revision)
            return logs.get(conn, ctx, log_id)

        updated = self.db.write(work)
        if "enabled" in data:
            self._changed([updated])
        return updated

    def delete_log(self, ctx: Context, log_id: str, if_revision: int | None = None) -> None:
        row = self.db.write(lambda conn: logs.delete_(conn, ctx, log_id, if_revision))
        if row.enabled:
            self._changed([logs.view(row)])

    def _changed(self, views: list[dict[str, Any]]) -> None:
        """Once committed: every L2 agent asks again (security group logs), and
        the plugins of other logged resources tell their own agents."""
        self.notifier.logs_updated([view["id"] for view in views])
        for tell in self.env.hooks.after_logs_change:
            tell(views)

    def _group_deleted(self, conn: Connection, ctx: Context, group_id: str
                       ) -> Callable[[], None] | None:
        logs.delete_of_resource(conn, lg.SECURITY_GROUP, group_id)
        return None  # a group being deleted has no ports: no agent to tell

    # --- loggable resources -----------------------------------------------------------

    def get_loggable_resources(self, ctx: Context, query: CollectionQuery
                               ) -> list[dict[str, Any]]:
        found = [{"type": t} for t in self.supported_types()
                 if t in query.filters.get("type", [t])]
        for key, ascending in reversed(query.sorts):
            found.sort(key=operator.itemgetter(key), reverse=not ascending)
        return found

    def get_loggable_resource(self, ctx: Context, type_: str) -> dict[str, Any]:
        raise exc.HTTPNotFound()  # Neutron serves the list only
