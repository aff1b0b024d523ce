"""Agents for API tests: state reports made in the test process, as an agent's
would arrive, straight into the server's database."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from sqlalchemy import select, update

from neutrino import config
from neutrino.db import models
from neutrino.db.engine import Database
from neutrino.plugins.hooks import Hooks
from neutrino.services.agents.rpc import TIME_FORMAT, ReportStateEndpoint

OVS = "Open vSwitch agent"
DHCP = "DHCP agent"
L3 = "L3 agent"
BINARIES = {OVS: "neutrino-openvswitch-agent", DHCP: "neutrino-dhcp-agent",
            L3: "neutrino-l3-agent"}
TOPICS = {OVS: "N/A", DHCP: "dhcp_agent", L3: "l3_agent"}


def sent_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime(TIME_FORMAT)


def state(host: str, agent_type: str = OVS, **extra: Any) -> dict[str, Any]:
    return {"agent_type": agent_type, "binary": BINARIES.get(agent_type, "neutrino-agent"),
            "host": host, "topic": TOPICS.get(agent_type, "N/A"),
            "configurations": {"bridge_mappings": {"physnet1": "br-ex"}}, **extra}


def unique_host() -> str:
    return f"host-{uuid.uuid4().hex[:12]}"


class Reporter:
    """Reports agents' states to one server's database."""

    def __init__(self, db_url: str, conf: config.Config | None = None,
                 hooks: Hooks | None = None):
        """``hooks``: what the server would run with each report (its plugins')."""
        self.db = Database(db_url, pool_size=4)
        self.endpoint = ReportStateEndpoint(self.db, conf or config.load([]), hooks)

    def report(self, host: str, agent_type: str = OVS, **extra: Any) -> str | None:
        return self.endpoint.report_state({}, {"agent_state": state(host, agent_type, **extra)},
                                          sent_now())

    def agent(self, host: str, agent_type: str = OVS, **extra: Any) -> str:
        """Report a new agent on ``host``; its id."""
        assert self.report(host, agent_type, **extra) == "new"
        t = models.agents
        with self.db.reader() as conn:
            return conn.execute(select(t.c.id).where(
                t.c.host == host, t.c.agent_type == agent_type)).scalar_one()

    def set_times(self, agent_id: str, **times: datetime.datetime) -> None:
        """Move an agent's heartbeat_timestamp / started_at, as if time had passed."""
        t = models.agents
        self.db.write(lambda conn: conn.execute(update(t).where(t.c.id == agent_id)
                                                .values(**times)))

    def close(self) -> None:
        self.db.dispose()


def ago(seconds: int) -> datetime.datetime:
    return (datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
            - datetime.timedelta(seconds=seconds))
