"""The metrics: bounded labels, and each recording point counting what it should.

Values are read from this process's registry (``prometheus_client.REGISTRY``)
before and after, so tests that ran earlier in the process do not matter.
"""

from __future__ import annotations

import asyncio
import subprocess
import urllib.request
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from neutrino import config, metrics
from neutrino.agents.base import AGENT_OPTIONS
from neutrino.agents.linuxbridge import LinuxBridgeAgent
from neutrino.agents.openvswitch import OpenvswitchAgent
from neutrino.agents.process_monitor import ProcessMonitor
from neutrino.api.metrics import RequestLabels
from neutrino.cmd.server import build_app, load_config
from neutrino.db.engine import Database
from neutrino.exceptions import RetryRequest
from neutrino.linux.iptables_firewall import IptablesFirewall
from neutrino.linux.names import tap_name
from neutrino.rpc.bus import Bus
from neutrino.rpc.server import RpcServer
from neutrino.rpc.topics import REPORTS
from neutrino.rpc.transport import get_transport
from tests.fakes.agent_conf import agent_conf
from tests.fakes.iptables import FakeIptables
from tests.fakes.openflow import FakeSwitch
from tests.fakes.ovsdb import FakeOvsdb
from tests.fakes.server import FakeServer, serving
from tests.harness import free_port

ID = "0f2b1e9c-8d1a-4c55-9a55-0b7c1f0e6a11"
SERVICES = "router,firewall_v2,qos,trunk,conntrack_helper,vpnaas,metering"


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture(scope="module")
def labels(tmp_path_factory) -> RequestLabels:
    """The labels of a server that serves what a typical cloud loads."""
    tmp = tmp_path_factory.mktemp("labels")
    (tmp / "n.conf").write_text(f"[DEFAULT]\nstate_path = {tmp}\nservice_plugins = {SERVICES}\n")
    app = build_app(load_config([str(tmp / "n.conf")]), serve_rpc=False)
    try:
        assert app.metrics is not None
        return app.metrics.labels
    finally:
        app.on_shutdown()


@pytest.mark.parametrize(("method", "path", "expected"), [
    ("GET", "/", ("versions", "show")),
    ("GET", "//", ("versions", "show")),
    ("GET", "/v2.0/", ("resources", "list")),
    ("GET", "/v2.0//ports/", ("ports", "list")),  # as the Router reads it
    ("GET", "/metrics", ("metrics", "show")),
    ("GET", "/v2.0/ports", ("ports", "list")),
    ("POST", "/v2.0/ports.json", ("ports", "create")),
    ("GET", f"/v2.0/ports/{ID}", ("ports", "show")),
    ("GET", f"/v2.0/ports/{ID}.json", ("ports", "show")),
    ("PUT", f"/v2.0/ports/{ID}", ("ports", "update")),
    ("DELETE", f"/v2.0/ports/{ID}", ("ports", "delete")),
    ("PATCH", f"/v2.0/ports/{ID}", ("ports", "other")),
    ("GET", "/v2.0/fwaas/firewall_groups", ("fwaas/firewall_groups", "list")),
    ("DELETE", f"/v2.0/fwaas/firewall_groups/{ID}", ("fwaas/firewall_groups", "delete")),
    ("PUT", f"/v2.0/routers/{ID}/add_router_interface", ("routers", "add_router_interface")),
    ("GET", f"/v2.0/trunks/{ID}/get_subports", ("trunks", "get_subports")),
    ("GET", f"/v2.0/routers/{ID}/conntrack_helpers/{ID}",
     ("routers/conntrack_helpers", "show")),
    ("POST", f"/v2.0/qos/policies/{ID}/bandwidth_limit_rules",
     ("qos/policies/bandwidth_limit_rules", "create")),
    ("PUT", f"/v2.0/networks/{ID}/tags/blue", ("networks", "tags")),
    ("GET", f"/v2.0/agents/{ID}/dhcp-networks", ("agents/dhcp-networks", "list")),
    ("GET", f"/v2.0/routers/{ID}/l3-agents", ("routers/l3-agents", "list")),
    ("GET", "/v2.0/extensions/router", ("extensions", "show")),
    ("GET", f"/v2.0/quotas/{ID}", ("quotas", "show")),
    # what the Router does not serve: never the path's words
    ("GET", f"/v2.0/{ID}", ("other", "other")),
    ("GET", f"/{ID}", ("other", "other")),
    ("GET", f"/v2.0/fwaas/{ID}", ("other", "other")),
    ("PUT", f"/v2.0/ports/{ID}/{ID}", ("ports", "other")),
    ("GET", f"/v2.0/ports/{ID}/a/b/c", ("ports", "other")),
])
def test_a_request_is_labelled_by_collection_and_action(labels, method, path, expected):
    assert labels(method, path) == expected


@settings(max_examples=300, deadline=None)
@given(method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]),
       words=st.lists(st.text(st.characters(blacklist_characters="/"), min_size=1,
                              max_size=12), max_size=6),
       start=st.sampled_from([[], ["v2.0"], ["v2.0", "ports"], ["v2.0", "fwaas"],
                              ["v2.0", "routers", ID], ["v2.0", "qos", "policies", ID],
                              ["v2.0", "agents", ID], ["metrics"]]))
def test_labels_are_bounded_whatever_the_path(labels, method, words, start):
    """However wild the path, a label is a collection the server serves or one of
    a few fixed words, so no id, project or address can become one."""
    path = "/" + "/".join(start + words)
    resource, action = labels(method, path)
    served = labels.collections | {"versions", "resources", "extensions", "other",
                                   *labels.pages}
    served |= {name for below in labels.below.values() for name in below.values()}
    actions = {"list", "show", "create", "update", "delete", "tags", "other",
               *(name for names in labels.members.values() for name in names)}
    assert resource in served
    assert action in actions


def test_a_request_records_its_count_and_time():
    recorder = metrics.RequestRecorder()
    before = value("neutrino_api_requests_total", resource="ports", action="create",
                   status="201")
    seconds = value("neutrino_api_request_duration_seconds_count", resource="ports",
                    action="create", status="201")
    recorder.record("ports", "create", 201, 0.004)
    recorder.record("ports", "create", 201, 0.002)
    assert value("neutrino_api_requests_total", resource="ports", action="create",
                 status="201") == before + 2
    assert value("neutrino_api_request_duration_seconds_count", resource="ports",
                 action="create", status="201") == seconds + 2


def test_the_bind_address_is_host_and_port_or_a_one_line_error(tmp_path):
    assert metrics.parse_bind_address(" 127.0.0.1:9601 ") == "127.0.0.1:9601"
    assert metrics.parse_bind_address("[::1]:9601") == "[::1]:9601"
    assert metrics.parse_bind_address("") == ""
    path = tmp_path / "agent.conf"
    for bad in ("9601", "localhost:", ":9601", "localhost:99999", "localhost:http"):
        path.write_text(f"[agent]\nmetrics_bind_address = {bad}\n")
        with pytest.raises(config.ConfigError) as raised:
            config.load([str(path)], [AGENT_OPTIONS])
        assert "metrics_bind_address" in str(raised.value)
        assert "\n" not in str(raised.value)


def test_the_multiprocess_directory_cannot_be_chosen_once_the_library_is_loaded(tmp_path):
    """Values already in memory would be missing from the sums: refused, not ignored."""
    with pytest.raises(RuntimeError):
        metrics.use_multiprocess_directory(str(tmp_path / "metrics"))
    assert not (tmp_path / "metrics").exists()


def test_a_daemon_that_dies_counts_as_a_restart_by_its_name():
    async def scenario() -> list[tuple[str, str]]:
        ended: list[tuple[str, str]] = []
        monitor = ProcessMonitor(lambda key, name: ended.append((key, name)))
        child = subprocess.Popen(["sleep", "0.2"])
        monitor.watch("net-1", {"dnsmasq": child.pid, "metadata proxy": None})
        deadline = asyncio.get_running_loop().time() + 5
        while len(ended) < 2 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        child.wait()
        monitor.close()
        return ended

    dnsmasq = value("neutrino_agent_daemon_restarts_total", daemon="dnsmasq")
    proxy = value("neutrino_agent_daemon_restarts_total", daemon="metadata proxy")
    assert sorted(asyncio.run(scenario())) == [("net-1", "dnsmasq"),
                                               ("net-1", "metadata proxy")]
    assert value("neutrino_agent_daemon_restarts_total", daemon="dnsmasq") == dnsmasq + 1
    assert value("neutrino_agent_daemon_restarts_total",
                 daemon="metadata proxy") == proxy + 1
    other = value("neutrino_agent_daemon_restarts_total", daemon="other")
    metrics.daemon_restart(f"dnsmasq-{ID}")  # a name no daemon has: not a new series
    assert value("neutrino_agent_daemon_restarts_total", daemon="other") == other + 1
    assert value("neutrino_agent_daemon_restarts_total", daemon=f"dnsmasq-{ID}") == 0


def test_writing_the_firewall_is_timed():
    before = value("neutrino_dataplane_programming_duration_seconds_count", kind="iptables")
    IptablesFirewall(runner=FakeIptables()).apply({"ports": [], "security_groups": {}})
    assert value("neutrino_dataplane_programming_duration_seconds_count",
                 kind="iptables") == before + 1


def test_a_sync_of_the_ovs_agent_times_its_flows_and_counts_its_devices(tmp_path):
    """Against a fake OVSDB, flow table and server: one full sync, one write of
    the bridges' flows timed, one device handled."""
    server = FakeServer()
    server.ports = {ID: {
        "port_id": ID, "network_id": ID, "mac_address": "fa:16:3e:00:00:05",
        "admin_state_up": True, "network_type": "local", "segmentation_id": None,
        "physical_network": None, "mtu": 1500, "device_owner": "compute:nova",
        "fixed_ips": [{"subnet_id": "s", "ip_address": "10.0.0.5"}],
        "allowed_address_pairs": [], "port_security_enabled": False,
        "security_groups": []}}
    db = FakeOvsdb()
    switch = FakeSwitch(db)
    db.plug("br-int", tap_name(ID), ID, "fa:16:3e:00:00:05")
    kind = OpenvswitchAgent.agent_type

    async def main() -> None:
        async with serving(server) as bus:
            agent = OpenvswitchAgent(
                agent_conf(tmp_path, OpenvswitchAgent, "[securitygroup]\nfirewall_driver = noop\n"),
                bus, db=db, openflow=switch.openflow)  # type: ignore[arg-type]
            try:
                agent.start_extensions()
                await agent.sync_with_extensions(True, set())
            finally:
                agent._host.shutdown()

    flows = value("neutrino_dataplane_programming_duration_seconds_count", kind="openflow")
    syncs = value("neutrino_agent_sync_duration_seconds_count", agent_type=kind, sync="full")
    asyncio.run(main())
    assert value("neutrino_dataplane_programming_duration_seconds_count",
                 kind="openflow") == flows + 1
    assert value("neutrino_agent_sync_duration_seconds_count", agent_type=kind,
                 sync="full") == syncs + 1
    assert value("neutrino_agent_resources", agent_type=kind, resource="devices") == 1


def test_a_transaction_run_again_counts_as_a_retry(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'db.sqlite'}", max_retries=3)
    attempts: list[int] = []

    def work(conn) -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise RetryRequest()
        return "done"

    retried = value("neutrino_db_transaction_retries_total", outcome="retried")
    assert db.write(work) == "done"
    assert value("neutrino_db_transaction_retries_total", outcome="retried") == retried + 2
    db.dispose()


class Reports:
    """The server's report_state endpoint."""

    rpc_version = "1.2"

    async def report_state(self, context, agent_state, time):
        return "alive"


class QuietAgent(LinuxBridgeAgent):
    """A Linux bridge agent whose sync touches no host: it handles two devices."""

    async def sync(self, full, dirty):
        self.ports.update({"tap1": {}, "tap2": {}})


def scrape(address: str) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_an_agent_serves_its_syncs_resources_and_calls(tmp_path: Path):
    address = f"127.0.0.1:{free_port()}"
    path = tmp_path / "agent.conf"
    path.write_text(f"[DEFAULT]\nhost = host-1\n[agent]\nreport_interval = 1\n"
                    f"metrics_bind_address = {address}\n"
                    "[linux_bridge]\nphysical_interface_mappings = physnet1:eth1\n")
    conf = config.load([str(path)])
    conf.register((AGENT_OPTIONS, *LinuxBridgeAgent.option_groups))
    kind = "Linux bridge agent"

    async def scenario() -> dict[tuple[str, tuple], float]:
        url = f"memory://{uuid.uuid4().hex}"
        server_bus = Bus(get_transport(url), timeout=2)
        await server_bus.start()
        await RpcServer(server_bus, REPORTS, "server", [Reports()]).start()
        agent = QuietAgent(conf, Bus(get_transport(url), timeout=2))
        stop = asyncio.Event()
        running = asyncio.create_task(agent.run(stop))
        deadline = asyncio.get_running_loop().time() + 10
        while not (agent.resources_synced and agent._first_report is False):
            assert asyncio.get_running_loop().time() < deadline, "the agent did not start"
            await asyncio.sleep(0.02)
        found = await asyncio.to_thread(scrape, address)
        stop.set()
        await asyncio.wait_for(running, 5)
        await server_bus.close()
        return found

    found = asyncio.run(scenario())
    assert found[("neutrino_agent_sync_duration_seconds_count",
                  (("agent_type", kind), ("sync", "full")))] >= 1
    assert found[("neutrino_agent_resources",
                  (("agent_type", kind), ("resource", "devices")))] == 2
    assert found[("neutrino_rpc_messages_total",
                  (("kind", "call"), ("method", "report_state"), ("outcome", "ok"),
                   ("topic", REPORTS)))] >= 1
    assert found[("neutrino_rpc_call_duration_seconds_count",
                  (("method", "report_state"), ("topic", REPORTS)))] >= 1
    with pytest.raises(OSError):  # stopped with the agent
        scrape(address)
