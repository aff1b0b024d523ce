"""neutrino-status's parts that need no process: the read-only engine, the
masking of passwords, the screen's layout; and the agents' last sync times
that it shows, as an agent reports them."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from neutrino.cmd import status
from neutrino.rpc.bus import Bus
from neutrino.rpc.server import RpcServer
from neutrino.rpc.topics import REPORTS
from neutrino.rpc.transport import get_transport
from tests.unit.test_agent_framework import RecordingAgent, Reports, make_conf, until


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql+psycopg2://neutrino:s3cr:et@db.example:5432/neutrino",
     "postgresql+psycopg2://neutrino:***@db.example:5432/neutrino"),
    ("rabbit://guest:guest@127.0.0.1:5672/vhost", "rabbit://guest:***@127.0.0.1:5672/vhost"),
    ("mysql+pymysql://root@127.0.0.1/neutrino", "mysql+pymysql://root@127.0.0.1/neutrino"),
    ("sqlite:////var/lib/neutrino/neutrino.db", "sqlite:////var/lib/neutrino/neutrino.db"),
    ("memory://", "memory://"),
])
def test_passwords_are_masked(url, shown):
    assert status.masked_url(url) == shown


def test_the_engine_reads_sqlite_and_cannot_write_it(tmp_path):
    path = tmp_path / "neutrino.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")
        conn.execute("INSERT INTO t VALUES (1)")
    engine = status.read_only_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT a FROM t")).scalar() == 1
            with pytest.raises(OperationalError, match="readonly database"):
                conn.execute(text("INSERT INTO t VALUES (2)"))
    finally:
        engine.dispose()


def test_a_missing_or_in_memory_sqlite_database_is_not_made(tmp_path):
    with pytest.raises(status.Unreachable, match="no database file"):
        status.read_only_engine(f"sqlite:///{tmp_path / 'none.db'}")
    assert not (tmp_path / "none.db").exists()
    with pytest.raises(status.Unreachable, match="in-memory"):
        status.read_only_engine("sqlite://")


def agent(host: str, alive: bool = True) -> status.AgentStatus:
    return status.AgentStatus("Open vSwitch agent", host, alive, True, "2026-12-06 13:00:00",
                              True, None, None)


def sample(agents: list[status.AgentStatus], schema: str = "at head") -> status.Status:
    database = status.DatabaseStatus("sqlite:////x.db", "sqlite, pysqlite", "state_path",
                                     True, None, "0001", "0002", schema)
    return status.Status("1.0", database, status.BusStatus("memory://", None),
                         [status.PluginStatus("core", "ml2", "a.b.Ml2Plugin")],
                         ["agent", "router"], 75, agents, [("agents", len(agents))])


def test_many_agents_and_long_names_fit_the_screen_dead_ones_first():
    agents = [agent(f"compute-{n:03d}." + "very-long-domain." * 6, alive=n % 10 != 3)
              for n in range(30)]
    screen = status.as_text(sample(agents))
    lines = screen.splitlines()
    assert max(len(line) for line in lines) <= status.WIDTH
    assert "27 alive, 3 dead" in screen
    rows = [line for line in lines if line.startswith("  Open vSwitch agent")]
    assert len(rows) == status.SHOWN_AGENTS
    assert [" DEAD " in row for row in rows[:4]] == [True, True, True, False]
    assert "  ... and 10 more alive (--format json lists every agent)" in lines


def test_a_schema_behind_head_says_what_to_run():
    screen = " ".join(status.as_text(sample([], schema="behind head")).split())
    assert "schema at 0001, behind head 0002: run neutrino-db-manage upgrade head" in screen


def test_the_agent_reports_when_it_last_synced(tmp_path):
    """Not before a sync succeeded; a full sync sets both times, a partial one
    only ``last_sync``."""

    class Flaky(RecordingAgent):
        fail = True

        async def sync(self, full, dirty):
            await super().sync(full, dirty)
            if self.fail:
                raise RuntimeError("not yet")

    async def scenario():
        url = f"memory://{uuid.uuid4().hex}"
        server_bus = Bus(get_transport(url), timeout=2)
        await server_bus.start()
        reports = Reports()
        await RpcServer(server_bus, REPORTS, "server", [reports]).start()
        flaky = Flaky(make_conf(tmp_path), Bus(get_transport(url), timeout=2))
        stop = asyncio.Event()
        running = asyncio.create_task(flaky.run(stop))

        await until(lambda: reports.states and flaky.syncs)
        assert "last_sync" not in reports.states[0]["configurations"]
        assert flaky.synced_at == {}  # the first sync failed
        flaky.fail = False
        await until(lambda: "last_full_sync" in flaky.synced_at, seconds=3)
        full = dict(flaky.synced_at)
        assert full["last_sync"] == full["last_full_sync"]
        await until(lambda: reports.states[-1]["configurations"].get("last_full_sync"),
                    seconds=3)
        assert reports.states[-1]["configurations"]["interface_mappings"]  # still there

        flaky.synced_at["last_sync"] = flaky.synced_at["last_full_sync"] = "earlier"
        flaky.mark_dirty(("port", "p1"))
        await until(lambda: flaky.synced_at["last_sync"] != "earlier")
        assert flaky.synced_at["last_full_sync"] == "earlier"  # a partial sync

        stop.set()
        await asyncio.wait_for(running, 5)
        await server_bus.close()

    asyncio.run(scenario())
