"""neutrino-status as a process, on a database that neutrino's migrations made
and agents reported into (through the server's own report_state endpoint).

What it shows is checked against what was put there: the package's version,
the migrations' head, the configured plugins, an alive and a dead agent with
the last sync the alive one reported, the agents table on top of the counts.
It only reads: the SQLite file is byte for byte the same afterwards, and a
missing one is not made. Mistakes are one line: a bad option exits 2 naming
it, a database or a bus out of reach exits 1 saying which.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.exc import DBAPIError

from neutrino.cmd import status
from neutrino.db import migrate, models
from tests.api.agent_reports import DHCP, L3, OVS, Reporter, ago
from tests.harness import create_database, free_port

STATUS = str(Path(sys.executable).parent / "neutrino-status")
VERSION = metadata.version("neutrino")
HEAD = migrate.head()
SYNCED = "2026-12-06 12:34:56"
#: alive L3 agents besides the DHCP one: the agents table then outnumbers every other
L3_HOSTS = [f"net-{n}" for n in range(10)]


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STATUS, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})}, cwd=cwd)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(params=["sqlite", "postgresql"])
def deployment(request, tmp_path):
    """A config file and its database at head, with 12 agents, one of them dead."""
    url, drop = create_database(request.param, tmp_path)
    migrate.upgrade(url)
    reporter = Reporter(url)
    try:
        reporter.agent("net-a", DHCP, configurations={"last_sync": SYNCED,
                                                      "last_full_sync": SYNCED})
        reporter.set_times(reporter.agent("compute-b", OVS), heartbeat_timestamp=ago(600))
        for host in L3_HOSTS:
            reporter.agent(host, L3)
    finally:
        reporter.close()
    shown_url = url
    if request.param == "postgresql":  # trust auth: the password only has to be hidden
        shown_url = url.replace("postgres@", "postgres:hunter2@")
    conf = tmp_path / "neutrino.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\nservice_plugins = router\n"
                    f"[database]\nconnection = {shown_url}\n")
    yield conf, url
    drop()


def test_the_screen_and_the_json_show_the_deployment(deployment):
    conf, url = deployment
    sqlite_file = Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite") else None
    before = digest(sqlite_file) if sqlite_file else None

    done = run("--config-file", str(conf))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    screen = done.stdout
    assert all(len(line) <= 100 for line in screen.splitlines()), screen
    assert f"neutrino {VERSION}" in screen
    assert f"reachable; schema at {HEAD} (head)" in screen
    assert "hunter2" not in screen
    assert "core: ml2 (Ml2Plugin)" in screen and "services: router (L3RouterPlugin)" in screen
    assert "memory://" in screen and "inside the server process" in screen
    assert "11 alive, 1 dead" in screen
    rows = {host: [line.split() for line in screen.splitlines() if f" {host} " in line]
            for host in ("net-a", "compute-b")}
    assert rows["net-a"] == [["DHCP", "agent", "net-a", "yes", "up", *rows["net-a"][0][5:7],
                              *SYNCED.split()]]
    assert rows["compute-b"][0][:6] == ["Open", "vSwitch", "agent", "compute-b", "DEAD", "up"]
    assert rows["compute-b"][0][-1] == "-"
    tables = screen.split("Largest tables")[1].splitlines()[1:11]
    assert tables[0].split() == ["agents", "12"]

    done = run("--config-file", str(conf), "--format", "json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["version"] == VERSION and found["ok"] is True
    database = found["database"]
    assert (database["revision"], database["head"], database["schema"]) == (HEAD, HEAD,
                                                                            "at head")
    assert database["reachable"] is True and database["error"] is None
    assert database["backend"].startswith(url.partition(":")[0].partition("+")[0])
    assert "hunter2" not in done.stdout
    assert found["bus"] == {"url": "memory://", "reachable": None, "error": None}
    assert [(p["role"], p["name"]) for p in found["plugins"]][0] == ("core", "ml2")
    assert ("service", "router") in [(p["role"], p["name"]) for p in found["plugins"]]
    assert {"router", "agent", "security-group", "external-net"} <= set(found["extensions"])
    assert "fwaas_v2" not in found["extensions"]  # not configured
    agents = {a["host"]: a for a in found["agents"]}
    assert set(agents) == {"net-a", "compute-b", *L3_HOSTS}
    assert agents["net-a"]["alive"] is True and agents["net-a"]["last_full_sync"] == SYNCED
    assert agents["compute-b"]["alive"] is False and agents["compute-b"]["last_sync"] is None
    assert agents["compute-b"]["agent_type"] == OVS
    counts = {t["name"]: t["rows"] for t in found["tables"]}
    assert found["tables"][0] == {"name": "agents", "rows": 12}
    assert counts["networks"] == 0 and counts["security_group_default_rules"] > 0
    assert [t["rows"] for t in found["tables"]] == sorted(counts.values(), reverse=True)

    if sqlite_file:  # read-only: not a byte changed
        assert digest(sqlite_file) == before
    engine = status.read_only_engine(url)  # and it could not have written
    try:
        with engine.connect() as conn, pytest.raises(DBAPIError, match="read-?only"):
            conn.execute(update(models.agents).values(description="written"))
    finally:
        engine.dispose()


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("neutrino-status: "), done.stderr
    return lines[0]


@pytest.mark.parametrize(("setting", "named"), [
    ("[DEFAULT]\nagent_down_time = soon\n", "option agent_down_time in [DEFAULT] of"),
    ("[DEFAULT]\nservice_plugins = router,nope\n", "set by service_plugins in [DEFAULT] of"),
    ("[DEFAULT]\ntransport_url = carrier-pigeon://\n", "set by transport_url in [DEFAULT] of"),
])
def test_a_configuration_mistake_is_one_line_naming_the_option(tmp_path, setting, named):
    conf = tmp_path / "bad.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\n" + setting)
    line = _one_line(run("--config-file", str(conf)), 2)
    assert named in line and str(conf) in line, line


def test_a_missing_sqlite_file_is_unreachable_and_not_made(tmp_path):
    """(The config file named by the environment, as the other commands take it.)"""
    conf = tmp_path / "neutrino.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\n")
    done = run(env={"NEUTRINO_CONFIG_FILES": json.dumps([str(conf)])})
    line = _one_line(done, 1)
    assert line == (f"neutrino-status: cannot read the database of state_path in [DEFAULT] of "
                    f"{conf}: no database file {tmp_path / 'state' / 'neutrino.db'}")
    assert "UNREACHABLE: no database file" in done.stdout
    assert not (tmp_path / "state" / "neutrino.db").exists()


def test_a_database_server_and_a_broker_out_of_reach_are_one_line(tmp_path):
    conf = tmp_path / "neutrino.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\n"
                    f"transport_url = rabbit://guest:hunter2@127.0.0.1:{free_port()}/\n"
                    "[database]\n"
                    f"connection = postgresql+psycopg2://postgres:hunter2@127.0.0.1:"
                    f"{free_port()}/neutrino\n")
    done = run("--config-file", str(conf), "--format", "json")
    line = _one_line(done, 1)
    assert line.startswith("neutrino-status: cannot read the database of connection in "
                           f"[database] of {conf}: ")
    assert "; cannot reach the bus: cannot connect to rabbit://guest:***@127.0.0.1:" in line
    assert "hunter2" not in done.stdout + done.stderr
    found = json.loads(done.stdout)
    assert found["ok"] is False
    assert found["database"]["reachable"] is False and found["bus"]["reachable"] is False
    assert found["agents"] is None and found["tables"] is None
