"""The openstack CLI (python-neutronclient's OSC plugin) on packet logs.
openstacksdk has no proxy for logs (its network proxy knows none).

The plugin builds its client from the endpoint OSC was given (OS_ENDPOINT):
a clouds.yaml's ``network_endpoint_override`` leaves it none, so this
session runs on the environment."""

from __future__ import annotations

import subprocess

import httpx
import pytest

from tests.compat.cli import MARK, OPENSTACK, Session, cli_env
from tests.harness import create_database, start_server


@pytest.fixture(scope="module")
def log_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-logging")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth",
                       extra="service_plugins = log\n[ml2]\nmechanism_drivers = linuxbridge\n")
    yield srv
    srv.stop()
    drop()


def test_openstack_cli_network_logs(log_server, tmp_path):
    made = httpx.post(f"{log_server.url}/v2.0/security-groups",
                      json={"security_group": {"name": "web"}})
    group = made.json()["security_group"]["id"]
    session = _session(log_server.url, tmp_path, [
        ("types", "network loggable resources list -f json"),
        ("create", "network log create --resource-type security_group "
                   f"--resource {group} --event DROP --description knocks -f json drops"),
        ("list", "network log list -f json"),
        ("set", "network log set --disable --name quiet drops"),
        ("show", "network log show -f json quiet"),
        ("delete", "network log delete quiet"),
        ("after", "network log list -f json"),
    ])
    assert session.json("types") == [{"Supported types": "security_group"}]
    created = session.json("create")
    assert (created["Name"], created["Event"], created["Resource"], created["Type"],
            created["Description"], created["Enabled"]) == (
        "drops", "DROP", group, "security_group", "knocks", True)
    assert [log["Name"] for log in session.json("list")] == ["drops"]
    shown = session.json("show")
    assert (shown["Name"], shown["Enabled"], shown["ID"]) == ("quiet", False, created["ID"])
    assert session.json("after") == []


def _session(endpoint: str, home, scenario: list[tuple[str, str]]) -> Session:
    script = "".join(f"{command}\n!echo {MARK}\n" for _, command in scenario)
    done = subprocess.run([OPENSTACK], input=script, capture_output=True, text=True,
                          cwd=home, timeout=180, env=cli_env(
                              home, OS_AUTH_TYPE="none", OS_ENDPOINT=endpoint))
    chunks = done.stdout.split(MARK + "\n")
    assert len(chunks) == len(scenario) + 1, done.stdout + done.stderr
    return Session({key: chunk for (key, _), chunk in zip(scenario, chunks, strict=False)})
