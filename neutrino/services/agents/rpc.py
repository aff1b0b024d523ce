"""The server side of the agents' state reports (Neutron's PluginReportStateAPI,
served there by AgentExtRpcCallback), for the RPC server to dispatch to.

An agent calls ``report_state`` every ``report_interval`` seconds with
``agent_state={"agent_state": {...}}`` and the time it sent the report; the
first report after the agent starts carries ``start_flag``. The answer tells
the agent how the server saw it: ``new`` (first report ever), ``alive``, or
``revived`` (it had been taken for dead, so it should resync everything).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from typing import Any

from neutrino.config import Config
from neutrino.db.engine import Database
from neutrino.plugins.hooks import Hooks
from neutrino.rpc.contracts import reports
from neutrino.services.agents import db as agents_db

LOG = logging.getLogger(__name__)

# How agents write ``time`` (Neutron's ISO8601_TIME_FORMAT, UTC).
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def parse_time(text: str) -> datetime.datetime:
    """An agent's send time, as naive UTC."""
    try:
        return datetime.datetime.strptime(text, TIME_FORMAT)
    except (TypeError, ValueError):
        pass
    try:
        sent = datetime.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ValueError(f"time {text!r} is not a time like 2026-01-02T03:04:05.000006"
                         ) from None
    if sent.tzinfo is not None:
        sent = sent.astimezone(datetime.UTC).replace(tzinfo=None)
    return sent


class ReportStateEndpoint:
    """API version 1.2: 1.1 made ``report_state`` answer the agent's status, 1.2
    added ``has_alive_neutron_server``."""

    rpc_version = reports.VERSION

    def __init__(self, db: Database, conf: Config, hooks: Hooks | None = None,
                 clock: Callable[[], datetime.datetime] = _utcnow):
        self.db = db
        self.hooks = hooks or Hooks()
        self.down_time: int = conf.DEFAULT.agent_down_time
        self.enable_new_agents: bool = conf.DEFAULT.enable_new_agents
        self.clock = clock
        # Reports sent before the server started are stale, as in Neutron.
        self.started = clock()

    def has_alive_neutron_server(self, context: dict[str, Any], **kwargs: Any) -> bool:
        """Agents ask this at start to wait for a server; answering is the proof."""
        return True

    def report_state(self, context: dict[str, Any], agent_state: dict[str, Any],
                     time: str) -> str | None:
        """Record the report; ``new``, ``alive`` or ``revived``, or None for a
        stale report (sent before this server started), which is dropped."""
        state = agent_state.get("agent_state") if isinstance(agent_state, dict) else None
        if not isinstance(state, dict):
            raise ValueError("agent_state must be {'agent_state': {...}}")
        missing = [key for key in agents_db.REPORTED if not isinstance(state.get(key), str)]
        if missing:
            raise ValueError(f"agent_state lacks {', '.join(missing)}")
        sent = parse_time(time)
        if state.get("start_flag"):
            self._check_clock(state, sent)
        if sent < self.started:
            LOG.debug("stale state report of %s on %s sent at %s, before the server "
                      "started at %s: dropped", state["agent_type"], state["host"],
                      sent.isoformat(), self.started.isoformat())
            return None
        when = self.clock().replace(microsecond=0)
        def work(conn: Any) -> str:
            status = agents_db.report(conn, state, when, self.down_time, self.enable_new_agents)
            self.hooks.run(self.hooks.on_agent_report, conn, state)
            return status

        status = self.db.write(work)
        configurations = state.get("configurations")
        if isinstance(configurations, dict) and configurations.get("log_agent_heartbeats"):
            LOG.info("heartbeat from %s agent on host %s, uuid %s, sent at %s: %s",
                     state["agent_type"], state["host"], state.get("uuid"),
                     sent.isoformat(), status)
        return status

    def _check_clock(self, state: dict[str, Any], sent: datetime.datetime) -> None:
        """An agent whose clock is off by more than agent_down_time would come and
        go: say so when it registers."""
        server = self.clock()
        skew = abs((server - sent).total_seconds())
        if skew > self.down_time:
            LOG.error("%s on host %s registered with a timestamp %s that differs from "
                      "the server's %s by %.0f seconds, more than agent_down_time (%s)",
                      state["agent_type"], state["host"], sent.isoformat(),
                      server.isoformat(), skew, self.down_time)
