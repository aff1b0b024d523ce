"""Agents: made by their state reports (report_state, called here as the RPC server
would), read, enabled, described and deleted by admins only."""

from __future__ import annotations

import asyncio
import datetime
import re
import threading
import uuid

import pytest
from sqlalchemy import func, select

from neutrino import config
from neutrino.db import models
from neutrino.rpc.bus import Bus
from neutrino.rpc.client import RpcClient
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport
from neutrino.services.agents.rpc import ReportStateEndpoint
from tests.api.agent_reports import DHCP, OVS, Reporter, ago, sent_now, state, unique_host
from tests.harness import expect_error

AGENT_KEYS = {
    "id", "agent_type", "binary", "topic", "host", "admin_state_up", "description",
    "configurations", "resources_synced", "availability_zone", "created_at", "started_at",
    "heartbeat_timestamp", "alive",
}
TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
MISSING = "00000000-0000-0000-0000-000000000000"


@pytest.fixture(scope="module")
def reporter(server):
    made = Reporter(server.db_url)
    yield made
    made.close()


def agents(client, **params) -> list[dict]:
    resp = client.get("/v2.0/agents", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()["agents"]


def only(client, host: str) -> dict:
    [agent] = agents(client, host=host)
    return agent


# --- state reports ----------------------------------------------------------------------

def test_first_report_makes_an_alive_agent(admin, reporter):
    host = unique_host()
    assert reporter.report(host, DHCP, availability_zone="nova") == "new"
    agent = only(admin, host)
    assert set(agent) == AGENT_KEYS
    assert (agent["agent_type"], agent["binary"], agent["topic"], agent["host"]) == (
        DHCP, "neutrino-dhcp-agent", "dhcp_agent", host)
    assert agent["alive"] is True and agent["admin_state_up"] is True
    assert agent["description"] is None and agent["resources_synced"] is None
    assert agent["availability_zone"] == "nova"
    assert agent["configurations"] == {"bridge_mappings": {"physnet1": "br-ex"}}
    assert TIME.match(agent["heartbeat_timestamp"])
    assert agent["created_at"] == agent["started_at"] == agent["heartbeat_timestamp"]
    assert admin.show("agents", agent["id"]) == agent


def test_reports_refresh_the_heartbeat_and_a_restart_the_start_time(admin, reporter):
    host = unique_host()
    agent_id = reporter.agent(host)
    reporter.set_times(agent_id, heartbeat_timestamp=ago(30), started_at=ago(60))
    before = only(admin, host)
    assert reporter.report(host, configurations={"devices": 3}) == "alive"
    after = only(admin, host)
    assert after["heartbeat_timestamp"] > before["heartbeat_timestamp"]
    assert after["started_at"] == before["started_at"]
    assert after["configurations"] == {"devices": 3}
    assert reporter.report(host, start_flag=True) == "alive"
    restarted = only(admin, host)
    assert restarted["started_at"] == restarted["heartbeat_timestamp"] > before["started_at"]
    assert restarted["created_at"] == before["created_at"] and restarted["id"] == agent_id


def test_report_keeps_what_the_admin_set(admin, reporter):
    host = unique_host()
    agent_id = reporter.agent(host, resources_synced=False)
    resp = admin.put(f"/v2.0/agents/{agent_id}", json={"agent": {
        "admin_state_up": False, "description": "rack 7"}})
    assert resp.status_code == 200, resp.text
    reporter.report(host, availability_zone="az-b", resources_synced=True)
    agent = only(admin, host)
    assert (agent["admin_state_up"], agent["description"]) == (False, "rack 7")
    assert (agent["availability_zone"], agent["resources_synced"]) == ("az-b", True)


def test_an_old_heartbeat_is_a_dead_agent_and_a_report_revives_it(admin, reporter):
    host = unique_host()
    agent_id = reporter.agent(host)
    down_time = 75  # the default agent_down_time
    reporter.set_times(agent_id, heartbeat_timestamp=ago(down_time - 10))
    assert only(admin, host)["alive"] is True
    reporter.set_times(agent_id, heartbeat_timestamp=ago(down_time + 10))
    assert only(admin, host)["alive"] is False
    assert [a["id"] for a in agents(admin, host=host, alive="false")] == [agent_id]
    assert agents(admin, host=host, alive="true") == []
    assert reporter.report(host) == "revived"
    assert only(admin, host)["alive"] is True
    assert reporter.report(host) == "alive"


def test_revived_by_the_clock(admin, reporter):
    """The endpoint's clock decides what has aged past agent_down_time (75 s)."""
    times = [datetime.datetime.now(datetime.UTC).replace(tzinfo=None)]
    endpoint = ReportStateEndpoint(reporter.db, config.load([]), clock=lambda: times[0])
    host = unique_host()

    def report() -> str | None:
        return endpoint.report_state({}, {"agent_state": state(host)}, sent_now())

    assert report() == "new"
    times[0] += datetime.timedelta(seconds=70)
    assert report() == "alive"
    times[0] += datetime.timedelta(seconds=80)
    assert report() == "revived"
    assert report() == "alive"


def test_new_agents_start_disabled_when_so_configured(admin, server, tmp_path):
    conf_file = tmp_path / "agents.conf"
    conf_file.write_text("[DEFAULT]\nenable_new_agents = false\n")
    disabled = Reporter(server.db_url, config.load([str(conf_file)]))
    try:
        host = unique_host()
        assert disabled.report(host) == "new"
        assert only(admin, host)["admin_state_up"] is False
    finally:
        disabled.close()


def test_a_report_sent_before_the_server_started_is_dropped(admin, reporter):
    host = unique_host()
    before = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5))
    status = reporter.endpoint.report_state(
        {}, {"agent_state": state(host)}, before.strftime("%Y-%m-%dT%H:%M:%S.%f"))
    assert status is None
    assert agents(admin, host=host) == []


def test_a_report_without_its_identity_is_refused(reporter):
    with pytest.raises(ValueError, match="host"):
        reporter.endpoint.report_state({}, {"agent_state": {
            "agent_type": OVS, "binary": "b", "topic": "t"}}, sent_now())
    with pytest.raises(ValueError):
        reporter.endpoint.report_state({}, {"agent_type": OVS}, sent_now())
    with pytest.raises(ValueError, match="time"):
        reporter.endpoint.report_state({}, {"agent_state": state(unique_host())}, "noon")


def test_the_server_is_alive(reporter):
    assert reporter.endpoint.has_alive_neutron_server({}) is True
    assert reporter.endpoint.rpc_version == "1.2"


def test_concurrent_first_reports_make_one_agent(reporter):
    """Every report of a new agent racing to insert it: one row, one "new"."""
    host, count = unique_host(), 8
    barrier = threading.Barrier(count)
    statuses: list[str | None] = []

    def first_report() -> None:
        barrier.wait()
        statuses.append(reporter.report(host))

    threads = [threading.Thread(target=first_report) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == ["alive"] * (count - 1) + ["new"]
    t = models.agents
    with reporter.db.reader() as conn:
        rows = conn.execute(select(func.count()).select_from(t).where(t.c.host == host))
        assert rows.scalar() == 1


def test_report_state_over_the_bus(admin, server, reporter):
    """An agent's call on the reports topic reaches the endpoint and gets its answer."""
    host = unique_host()

    async def scenario() -> list:
        bus = Bus(get_transport(f"memory://{uuid.uuid4().hex}"), timeout=10)
        await bus.start()
        endpoint = ReportStateEndpoint(reporter.db, config.load([]))
        await RpcServer(bus, "q-reports-plugin", "server", [endpoint]).start()
        client = RpcClient(bus, "q-reports-plugin", "1.2")
        answers = [await client.call({}, "has_alive_neutron_server")]
        for extra in ({"start_flag": True}, {}):
            answers.append(await client.call(
                {}, "report_state", agent_state={"agent_state": state(host, **extra)},
                time=sent_now()))
        await bus.close()
        return answers

    assert asyncio.run(scenario()) == [True, "new", "alive"]
    assert only(admin, host)["alive"] is True


# --- the API -----------------------------------------------------------------------------

def test_filters(admin, reporter):
    host = unique_host()
    ovs = reporter.agent(host, OVS, availability_zone="az-f")
    dhcp = reporter.agent(host, DHCP)
    admin.put(f"/v2.0/agents/{dhcp}", json={"agent": {"admin_state_up": False,
                                                      "description": "spare"}})

    def ids(**params) -> set[str]:
        return {a["id"] for a in agents(admin, host=host, **params)}

    assert ids() == {ovs, dhcp}
    assert ids(agent_type=DHCP) == {dhcp}
    assert ids(binary="neutrino-openvswitch-agent") == {ovs}
    assert ids(topic="dhcp_agent") == {dhcp}
    assert ids(admin_state_up="false") == {dhcp} and ids(admin_state_up="True") == {ovs}
    assert ids(availability_zone="az-f") == {ovs}
    assert ids(description="spare") == {dhcp}
    assert ids(id=ovs) == {ovs}
    assert ids(alive="true") == {ovs, dhcp}
    expect_error(admin.get("/v2.0/agents", params={"alive": "maybe"}), 400, "InvalidInput",
                 "Invalid input for operation: 'maybe' cannot be converted to boolean.")
    for name in ("configurations", "heartbeat_timestamp", "resources_synced", "color"):
        expect_error(admin.get("/v2.0/agents", params={name: "x"}), 400, "HTTPBadRequest",
                     f"['{name}'] is invalid attribute for filtering")


def test_sorting_and_pages(admin, reporter):
    host = unique_host()
    made = {reporter.agent(host, kind) for kind in (OVS, DHCP, "L3 agent")}
    listed = agents(admin, host=host, sort_key="agent_type", sort_dir="desc")
    assert [a["agent_type"] for a in listed] == [OVS, "L3 agent", DHCP]
    first = admin.get("/v2.0/agents", params={"host": host, "limit": 2,
                                              "sort_key": "agent_type", "sort_dir": "asc"})
    page = first.json()
    assert [a["agent_type"] for a in page["agents"]] == [DHCP, "L3 agent"]
    assert page["agents_links"][0]["rel"] == "next"
    rest = agents(admin, host=host, limit=2, sort_key="agent_type", sort_dir="asc",
                  marker=page["agents"][-1]["id"])
    assert [a["agent_type"] for a in rest] == [OVS]
    assert {a["id"] for a in agents(admin, host=host, sort_key="alive",
                                    sort_dir="asc")} == made
    expect_error(admin.get("/v2.0/agents", params={"sort_key": "configurations",
                                                   "sort_dir": "asc"}),
                 400, "HTTPBadRequest", "['configurations'] is invalid attribute for sort_keys")


def test_fields(admin, reporter):
    host = unique_host()
    agent_id = reporter.agent(host)
    resp = admin.get(f"/v2.0/agents/{agent_id}", params=[("fields", "host"),
                                                           ("fields", "alive")])
    assert resp.json()["agent"] == {"host": host, "alive": True}


def test_update_admin_state_and_description(admin, reporter):
    host = unique_host()
    agent_id = reporter.agent(host)
    resp = admin.put(f"/v2.0/agents/{agent_id}", json={"agent": {
        "admin_state_up": "false", "description": "draining"}})
    assert resp.status_code == 200, resp.text
    updated = resp.json()["agent"]
    assert (updated["admin_state_up"], updated["description"]) == (False, "draining")
    assert set(updated) == AGENT_KEYS and admin.show("agents", agent_id) == updated
    cleared = admin.put(f"/v2.0/agents/{agent_id}", json={"agent": {"description": None}})
    assert cleared.json()["agent"]["description"] is None


@pytest.mark.parametrize(("body", "message"), [
    ({"host": "elsewhere"}, "Cannot update read-only attribute host"),
    ({"alive": False}, "Cannot update read-only attribute alive"),
    ({"availability_zone": "az"}, "Cannot update read-only attribute availability_zone"),
    ({"heartbeat_timestamp": "2020-01-01 00:00:00"},
     "Cannot update read-only attribute heartbeat_timestamp"),
    ({"color": "red"}, "Unrecognized attribute(s) 'color'"),
    ({"description": "x" * 256}, "Invalid input for description. Reason: "
                                 f"'{'x' * 256}' exceeds maximum length of 255."),
    ({"description": 7}, "Invalid input for description. Reason: '7' is not a valid string."),
])
def test_update_refuses_other_attributes(admin, reporter, body, message):
    agent_id = reporter.agent(unique_host())
    expect_error(admin.put(f"/v2.0/agents/{agent_id}", json={"agent": body}), 400,
                 "HTTPBadRequest", message)


def test_update_refuses_a_bad_boolean(admin, reporter):
    agent_id = reporter.agent(unique_host())
    expect_error(admin.put(f"/v2.0/agents/{agent_id}",
                           json={"agent": {"admin_state_up": "sideways"}}),
                 400, "InvalidInput",
                 "Invalid input for operation: 'sideways' cannot be converted to boolean.")


def test_delete(admin, reporter):
    host = unique_host()
    agent_id = reporter.agent(host)
    assert admin.delete(f"/v2.0/agents/{agent_id}").status_code == 204
    assert agents(admin, host=host) == []
    expect_error(admin.delete(f"/v2.0/agents/{agent_id}"), 404, "AgentNotFound",
                 f"Agent {agent_id} could not be found.")
    # the agent comes back with its next report, as a new one
    assert reporter.report(host) == "new"


def test_unknown_agent_is_404(admin):
    for resp in (admin.get(f"/v2.0/agents/{MISSING}"),
                 admin.put(f"/v2.0/agents/{MISSING}", json={"agent": {"description": "x"}}),
                 admin.delete(f"/v2.0/agents/{MISSING}")):
        expect_error(resp, 404, "AgentNotFound", f"Agent {MISSING} could not be found.")


def test_agents_are_not_made_through_the_api(admin):
    expect_error(admin.post("/v2.0/agents", json={"agent": {}}), 400, "BadRequest")
    expect_error(admin.post("/v2.0/agents", json={"agent": {"host": "h"}}), 400,
                 "HTTPBadRequest", "Attribute 'host' not allowed in POST")


def test_only_admins_see_or_touch_agents(admin, user, reporter):
    """As Neutron: others list none, and an agent is not there for them (404)."""
    host = unique_host()
    agent_id = reporter.agent(host)
    assert agents(user, host=host) == [] and agents(user) == []
    not_found = f"Agent {agent_id} could not be found."
    expect_error(user.get(f"/v2.0/agents/{agent_id}"), 404, "AgentNotFound", not_found)
    expect_error(user.put(f"/v2.0/agents/{agent_id}", json={"agent": {
        "admin_state_up": False}}), 404, "AgentNotFound", not_found)
    expect_error(user.delete(f"/v2.0/agents/{agent_id}"), 404, "AgentNotFound", not_found)
    assert only(admin, host)["admin_state_up"] is True


def test_extensions_are_announced(user):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert {"agent", "agent-resources-synced", "agent_sort_key"} <= aliases
