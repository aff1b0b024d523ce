"""Agents -> server: state reports (topic ``q-reports-plugin``); and server ->
an agent: ``agent_updated``, when an admin enables or disables it.

Version history, as Neutron's: 1.1 made ``report_state`` answer the agent's
status (``new``, ``alive``, ``revived``); 1.2 added ``has_alive_neutron_server``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from neutrino.rpc import topics
from neutrino.rpc.contracts.base import Api
from neutrino.rpc.notifier import Notifier

TOPIC = topics.REPORTS
NAMESPACE: str | None = None
#: what the server serves
VERSION = "1.2"
#: what the agents ask for (any 1.x server answers it)
CLIENT_VERSION = "1.0"

Status = Literal["new", "alive", "revived"]


class AgentState(TypedDict):
    """One report: who the agent is and what it serves."""

    agent_type: str
    binary: str
    host: str
    topic: str
    configurations: dict[str, Any]
    start_flag: NotRequired[bool]
    availability_zone: NotRequired[str]
    resource_versions: NotRequired[dict[str, Any]]


class StateReportApi(Api):
    """The agent's end: ``report_state`` answers the status, or None for a
    report the server dropped as stale."""

    topic = TOPIC
    version = CLIENT_VERSION
    namespace = NAMESPACE

    async def report_state(self, ctx: dict[str, Any], state: dict[str, Any], time: str,
                           timeout: float | None = None) -> Status | None:
        return await self.caller.call(ctx, "report_state", agent_state={"agent_state": state},
                                      time=time, timeout=timeout)


# --- server -> one agent, about itself ----------------------------------------------------

#: the topic an agent without an RPC server of its own reports (Neutron's)
NO_TOPIC = "N/A"


class AgentUpdatedNotifier:
    """The server's end of ``agent_updated`` (Neutron's): cast on the agent's
    own topic at its host when an admin enables or disables it, so that it
    reads its work again at once (a disabled agent is given none)."""

    def __init__(self, notifier: Notifier):
        self._cast = notifier.cast

    def agent_updated(self, topic: str, host: str, admin_state_up: bool) -> None:
        if topic and topic != NO_TOPIC:
            self._cast(topic, host, "agent_updated",
                       payload={"admin_state_up": admin_state_up})
