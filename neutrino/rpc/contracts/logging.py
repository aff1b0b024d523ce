"""L2 agents' ``log`` extension <-> server: packet logs of security groups.

Agents -> server on Neutron's topic and namespace (``logging-plugin``),
version 1.0: ``get_sg_log_info_for_ports`` says which enabled logs reach each of
the agent's ports (Neutron asks one port at a time and gets the rules too; the
agent already has the rules from ``security_group_info_for_devices``, so one call
per sync for all its ports, and logs only).

Server -> every L2 agent, fanned out on ``q-agent-notifier-log-update``:
``logs_updated`` once a log's create, update or delete has committed; an agent
asks again about the ports it has (a hint, as every notification).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from neutrino.rpc import topics
from neutrino.rpc.contracts.base import Api
from neutrino.rpc.notifier import Notifier

TOPIC = topics.LOGGING_PLUGIN
NAMESPACE = topics.LOGGING_NAMESPACE
VERSION = "1.0"
NOTIFICATION_VERSION = "1.0"

Event = Literal["ACCEPT", "DROP", "ALL"]


class LogInfo(TypedDict):
    """One log that reaches a port: what its lines name."""
    id: str
    project_id: str
    event: Event


class LoggingPluginApi(Api):
    """The agent's end of ``logging-plugin``."""

    topic = TOPIC
    version = VERSION
    namespace = NAMESPACE

    async def get_sg_log_info_for_ports(self, ctx: dict[str, Any], port_ids: list[str]
                                        ) -> dict[str, list[LogInfo]]:
        """port id -> the enabled ``security_group`` logs that reach it."""
        return await self.caller.call(ctx, "get_sg_log_info_for_ports", port_ids=port_ids)


class LoggingAgentNotifier:
    """The server's end of ``LOG_UPDATE``."""

    def __init__(self, notifier: Notifier):
        self._fanout = notifier.fanout

    def logs_updated(self, log_ids: list[str]) -> None:
        if log_ids:
            self._fanout(topics.LOG_UPDATE, "logs_updated", log_ids=sorted(log_ids))
