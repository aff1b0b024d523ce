"""Every command of the package, as a user meets it: ``--version``, ``--help``,
the logging options, and the API's request log line.

The commands are the package's own ``[project.scripts]`` (from its installed
metadata), so a new command is checked without an edit here.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import httpx
import pytest

from neutrino.agents.base import AGENT_OPTIONS
from neutrino.cmd import db_manage
from tests.harness import free_port

BIN = Path(sys.executable).parent
SCRIPTS = {ep.name: ep for ep in metadata.distribution("neutrino").entry_points
           if ep.group == "console_scripts"}
VERSION = metadata.version("neutrino")
#: commands that read config files (all but the stand-in hypervisor)
CONFIGURED = sorted(set(SCRIPTS) - {"neutrino-instance"})
AGENTS = sorted(name for name in SCRIPTS if name.endswith("-agent"))


def run(*argv: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def test_every_command_is_known():
    assert {"neutrino-server", "neutrino-all-in-one", "neutrino-db-manage",
            "neutrino-instance", "neutrino-linuxbridge-agent", "neutrino-openvswitch-agent",
            "neutrino-dhcp-agent", "neutrino-l3-agent",
            "neutrino-metadata-agent"} <= set(SCRIPTS)


# --- --version and --help ----------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(SCRIPTS))
def test_version(command):
    done = run(command, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{command} {VERSION}\n"


def _sections(text: str) -> tuple[str, str]:
    """The description (the paragraph after usage) and the rest of --help."""
    paragraphs = text.split("\n\n")
    assert paragraphs[0].startswith("usage: "), text
    return " ".join(paragraphs[1].split()), "\n\n".join(paragraphs[2:])


@pytest.mark.parametrize("command", sorted(SCRIPTS))
def test_help_describes_the_command_and_its_options(command):
    done = run(command, "--help")
    assert done.returncode == 0, done.stderr
    description, rest = _sections(done.stdout)
    assert not description.startswith(("options:", "positional arguments:")), done.stdout
    assert len(description) > 30 and "``" not in description, description
    assert "--version" in rest
    if command in CONFIGURED:
        for option in ("--config-file FILE", "-d, --debug", "--log-file PATH", "--log-dir DIR",
                       "--use-syslog", "--use-json"):
            assert option in rest, (option, done.stdout)


@pytest.mark.parametrize("command", AGENTS)
def test_agent_help_names_the_sections_it_reads(command):
    module = importlib.import_module(SCRIPTS[command].module)
    classes = [value for value in vars(module).values()
               if isinstance(value, type) and getattr(value, "binary", None) == command]
    assert len(classes) == 1, command
    expected = dict.fromkeys(["DEFAULT", AGENT_OPTIONS.name,
                              *(group.name for group in classes[0].option_groups)])
    text = " ".join(run(command, "--help").stdout.split())
    shown = re.search(r"It reads (.*?) of the config files", text)
    assert shown, text
    assert shown.group(1) == ", ".join(f"[{name}]" for name in expected)


def test_db_manage_help_lists_its_subcommands():
    text = run("neutrino-db-manage", "--help").stdout
    # argparse keeps the subparsers in its private structures only
    subcommands = db_manage.make_parser()._subparsers._group_actions[0].choices
    assert set(subcommands) == {"upgrade", "current", "history", "check_migration",
                                "downgrade", "revision"}
    for name, parser in subcommands.items():
        assert re.search(rf"^    {name} +\S", text, re.M), (name, text)
        done = run("neutrino-db-manage", name, "--help")
        assert done.returncode == 0 and done.stdout.startswith(
            f"usage: neutrino-db-manage {name}"), done.stderr
        assert parser.description and " ".join(parser.description.split()) in " ".join(
            done.stdout.split())


def test_instance_help_lists_plug_and_unplug():
    text = run("neutrino-instance", "--help").stdout
    assert re.search(r"^    plug +bind the port", text, re.M), text
    assert re.search(r"^    unplug +remove the instance", text, re.M), text
    assert "--config-file" not in text  # it reads no configuration
    assert "port_id               the port's id" in run("neutrino-instance", "plug",
                                                         "--help").stdout


# --- logging options that cannot be used stop every command with one line ----------------


def _one_line(done: subprocess.CompletedProcess, command: str) -> str:
    assert done.returncode != 0, (done.stdout, done.stderr)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if line.startswith(f"{command}:")]
    assert len(lines) == 1, output
    return lines[0]


#: a command each of the kinds that read config files: the server and what
#: imports it, an agent, db-manage
STOPPED = ["neutrino-server", "neutrino-all-in-one", "neutrino-metadata-agent",
           "neutrino-db-manage"]


@pytest.mark.parametrize("command", STOPPED)
def test_a_log_dir_that_is_missing_stops_the_command(tmp_path, command):
    missing = tmp_path / "missing"
    conf = tmp_path / "log.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\nbind_port = {free_port()}\n"
                    f"log_dir = {missing}\n")
    args = [command, "--config-file", str(conf)] + (["current"] if "db-manage" in command
                                                    else [])
    line = _one_line(run(*args, cwd=tmp_path), command)
    assert line == (f"{command}: cannot open log file {missing}/{command}.log: No such file or "
                    f"directory, set by log_dir in [DEFAULT] of {conf}")


@pytest.mark.parametrize("command", STOPPED)
def test_an_unknown_level_stops_the_command(tmp_path, command):
    conf = tmp_path / "log.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\n"
                    "default_log_levels = sqlalchemy=LOUD\n")
    args = [command, "--config-file", str(conf)] + (["current"] if "db-manage" in command
                                                    else [])
    line = _one_line(run(*args, cwd=tmp_path), command)
    assert line.startswith(f"{command}: invalid value 'sqlalchemy=LOUD' for option "
                           f"default_log_levels in [DEFAULT] of {conf}: unknown level 'LOUD'")


def test_the_command_line_log_dir_is_named_when_it_fails(tmp_path):
    conf = tmp_path / "empty.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\n")
    line = _one_line(run("neutrino-server", "--config-file", str(conf), "--log-dir",
                         str(tmp_path / "nope"), cwd=tmp_path), "neutrino-server")
    assert line.endswith("set by --log-dir on the command line")


def test_db_manage_logs_where_it_is_told(tmp_path):
    """Its output is what it did; with --debug its log (alembic's lines) goes to --log-file."""
    conf = tmp_path / "db.conf"
    conf.write_text(f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\n")
    logged = tmp_path / "db-manage.log"
    done = run("neutrino-db-manage", "--config-file", str(conf), "--debug", "--log-file",
               str(logged), "upgrade", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("upgraded the schema from an empty database to ")
    assert done.stderr == ""
    assert "INFO alembic.runtime.migration Running upgrade  -> 0001" in logged.read_text()
    quiet = run("neutrino-db-manage", "--config-file", str(conf), "upgrade", cwd=tmp_path)
    assert quiet.stderr == "" and "nothing to do" in quiet.stdout


# --- the server's log: JSON lines, one per request -----------------------------------------


def test_server_logs_each_request_as_a_json_line(tmp_path):
    port = free_port()
    logged = tmp_path / "server.log"
    conf = tmp_path / "server.conf"
    conf.write_text(f"[DEFAULT]\nbind_port = {port}\nstate_path = {tmp_path / 'state'}\n"
                    f"log_file = {logged}\nuse_json = true\n")
    proc = subprocess.Popen([str(BIN / "neutrino-server"), "--config-file", str(conf)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            try:
                httpx.get(url + "/", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.1)
        asked = [
            httpx.get(f"{url}/v2.0/networks", params={"name": "a b", "fields": "id"}),
            httpx.post(f"{url}/v2.0/networks", json={"network": {"name": "logged"}}),
            httpx.get(f"{url}/v2.0/networks/no-such-network"),
            httpx.request("PATCH", f"{url}/v2.0/networks"),
        ]
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=30)
    assert output.decode() == "", "everything goes to log_file"
    records = [json.loads(line) for line in logged.read_text().splitlines()]
    assert all({"time", "level", "logger", "message", "process"} <= set(r) for r in records)
    requests = [r for r in records if r["logger"] == "neutrino.wsgi"]
    assert not [r for r in records if r["logger"].startswith("uvicorn.access")]
    expected = [('GET /v2.0/networks?name=a+b&fields=id', 200),
                ('POST /v2.0/networks', 201),
                ('GET /v2.0/networks/no-such-network', 404),
                ('PATCH /v2.0/networks', 405)]
    mine = [r for r in requests if '"GET / HTTP' not in r["message"]]  # not the polls
    for record, response, (target, status) in zip(mine, asked, expected, strict=True):
        assert response.status_code == status, response.text
        assert record["level"] == "INFO"
        assert record["request_id"] == response.headers["x-openstack-request-id"]
        assert re.fullmatch(
            rf'127\.0\.0\.1 "{re.escape(target)} HTTP/1\.1" status: {status} '
            rf'len: {len(response.content)} time: \d+\.\d{{4}}', record["message"]), record


def test_server_workers_log_as_the_command_line_says(tmp_path):
    """With api_workers = 2 the spawned worker sets logging up again: the
    command line's options reach it too. Connections are spread over both
    processes, each on its own socket, so some of 16 are answered by it."""
    port = free_port()
    logged = tmp_path / "cli.log"
    conf = tmp_path / "server.conf"
    conf.write_text(f"[DEFAULT]\nbind_port = {port}\nstate_path = {tmp_path / 'state'}\n"
                    "api_workers = 2\n")
    proc = subprocess.Popen([str(BIN / "neutrino-server"), "--config-file", str(conf),
                             "--log-file", str(logged), "--use-json"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None
            try:
                httpx.get(f"http://127.0.0.1:{port}/v2.0/networks", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.1)
        # a new connection each: the kernel hashes each to one process's socket
        answers = [httpx.get(f"http://127.0.0.1:{port}/v2.0/networks", timeout=10)
                   for _ in range(16)]
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=30)
    assert output.decode() == ""
    records = {r.get("request_id"): r for r in map(json.loads, logged.read_text().splitlines())}
    lines = [records[answer.headers["x-openstack-request-id"]] for answer in answers]
    assert {line["logger"] for line in lines} == {"neutrino.wsgi"}
    answered_by = {line["process"] for line in lines}
    assert len(answered_by) == 2 and proc.pid in answered_by, answered_by
