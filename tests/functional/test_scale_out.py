"""Two servers behind HAProxy on one PostgreSQL database and one RabbitMQ vhost.

The topology of docs/deployment.md, on one machine: two ``neutrino-server``
processes ("hosts" ``server-a`` and ``server-b``: state directories, ports and
``host`` of their own), an HAProxy of the test's own in front of them
(roundrobin, ``GET /`` health checks) and a DHCP agent that reaches them only
through the broker. Clients create ports through the balancer from several
threads while server A is killed (SIGKILL, no goodbye) and after. What must
hold: every port acknowledged (201) is in the database with the address and
MAC it was given, no address or MAC twice; the only failures are HAProxy's
5xx or broken connections, and only between the kill and HAProxy taking A
out; the agent stays alive (its heartbeats answered by B) and keeps
converging (a network made after the kill gets its DHCP port, asked of B over
the bus). A started again on its port gets requests again.

The agent's host is ``tests.fakes.dhcp`` (in memory: no root, no dnsmasq);
what it serves it reports in its ``configurations``, which the test reads
back through the API.
"""

from __future__ import annotations

import datetime
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from neutrino.rpc.contracts.dhcp import DHCP_OWNER, dhcp_device_id
from tests.haproxy import HaProxy
from tests.harness import (
    ROOT,
    ApiClient,
    Server,
    assert_no_traceback,
    create_database,
    free_port,
    rabbit_vhost,
    start_server,
    wait_until,
)

pytestmark = pytest.mark.slow

CLIENTS = 6

# A DHCP agent whose host is the in-memory fake: it needs no root and runs nothing.
AGENT = """
import sys
from neutrino.agents.cmd import main
from neutrino.agents.dhcp import DhcpAgent
from neutrino.linux import host_check
from tests.fakes.dhcp import FakeDhcpDataplane

class InMemoryDhcpAgent(DhcpAgent):
    def __init__(self, conf, bus):
        super().__init__(conf, bus, dataplane=FakeDhcpDataplane())

    def host_needs(self):
        return host_check.Needs()

main(InMemoryDhcpAgent, ["--config-file", sys.argv[1]])
"""

@dataclass
class Outcome:
    """One port create as its client saw it."""

    name: str
    started: float
    ended: float
    status: int | None  # None: no HTTP answer (the connection broke)
    served_by: str | None = None  # HAProxy's name of the server that answered
    port: dict | None = None
    error: str = ""


@dataclass
class Load:
    """``CLIENTS`` threads creating ports through ``url`` one after another, until stopped."""

    url: str
    network_id: str
    outcomes: list[Outcome] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        self.threads = [threading.Thread(target=self._client, args=(n,), daemon=True)
                        for n in range(CLIENTS)]
        for thread in self.threads:
            thread.start()

    def _client(self, number: int) -> None:
        with httpx.Client(base_url=self.url, headers={"X-Project-Id": "scale-out"},
                          timeout=60) as http:
            sent = 0
            while not self.stopping.is_set():
                sent += 1
                name = f"c{number}-{sent}"
                started = time.monotonic()
                try:
                    resp = http.post("/v2.0/ports", json={"port": {
                        "network_id": self.network_id, "name": name}})
                except httpx.TransportError as error:
                    self.outcomes.append(Outcome(name, started, time.monotonic(), None,
                                                 error=repr(error)))
                    continue
                outcome = Outcome(name, started, time.monotonic(), resp.status_code,
                                  resp.headers.get("x-served-by"), error=resp.text[:300])
                if resp.status_code == 201:
                    outcome.port, outcome.error = resp.json()["port"], ""
                self.outcomes.append(outcome)  # list.append: safe across threads

    def ok(self, since: float = 0.0) -> list[Outcome]:
        return [o for o in list(self.outcomes) if o.status == 201 and o.started >= since]

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(90)
        assert not any(thread.is_alive() for thread in self.threads), "a client hung"


def utcnow() -> datetime.datetime:
    """The servers' clock as /v2.0/agents shows it: naive UTC, whole seconds."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)


def heartbeat(agent: dict) -> datetime.datetime:
    return datetime.datetime.strptime(agent["heartbeat_timestamp"], "%Y-%m-%d %H:%M:%S")


def start_agent(tmp: Path, host: str, transport_url: str) -> subprocess.Popen:
    conf = tmp / f"{host}.conf"
    conf.write_text(f"[DEFAULT]\nhost = {host}\ntransport_url = {transport_url}\n"
                    f"state_path = {tmp / host}\nrpc_response_timeout = 10\n"
                    "[agent]\nreport_interval = 1\ncheck_child_processes_interval = 0\n")
    with (tmp / f"{host}.log").open("wb") as log:
        # the repository on the path: this tree's neutrino, and tests/fakes
        return subprocess.Popen([sys.executable, "-c", AGENT, str(conf)], cwd=tmp,
                                stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1",
                                     "PYTHONPATH": str(ROOT)})


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_a_server_killed_behind_haproxy_loses_nothing_acknowledged(tmp_path):
    if shutil.which("haproxy") is None:
        pytest.skip("haproxy is not installed (Debian package haproxy; .ci/run installs it)")
    with ExitStack() as stack:
        db_url, drop = create_database("postgresql", tmp_path)
        stack.callback(drop)
        transport_url = stack.enter_context(rabbit_vhost())
        ports = {"a": free_port(), "b": free_port()}
        dirs = {name: tmp_path / f"server-{name}" for name in ports}

        def start(name: str) -> Server:
            dirs[name].mkdir(exist_ok=True)
            server = start_server(dirs[name], db_url, port=ports[name], extra=(
                f"host = server-{name}\ntransport_url = {transport_url}\n"
                "agent_down_time = 10\n[quotas]\nquota_port = -1\n"))
            stack.callback(server.stop)
            return server

        servers = {name: start(name) for name in ports}  # one after the other: migrations
        lb = HaProxy(ports)
        stack.callback(lb.stop)
        lb.start()
        for name in ports:
            lb.wait_for(name, "UP")
        api = ApiClient(lb.url, {"X-Project-Id": "scale-out"})
        stack.callback(api.http.close)

        host = f"scale-dhcp-{uuid.uuid4().hex[:8]}"
        agent_proc = start_agent(tmp_path, host, transport_url)
        stack.callback(stop_process, agent_proc)

        def agent() -> dict:
            [found] = api.get("/v2.0/agents", params={"host": host}).json()["agents"] or [{}]
            return found

        wait_until(lambda: agent().get("alive"), 30, "the DHCP agent to register")
        net = api.network(name="load")
        api.subnet(net["id"], "10.8.0.0/21")

        # --- clients through the balancer; A killed in the middle ---------------------
        load = Load(lb.url, net["id"])
        stack.callback(load.stopping.set)
        load.start()
        wait_until(lambda: len(load.ok()) >= 40
                   and {o.served_by for o in load.ok()} == {"a", "b"}, 60,
                   lambda: f"creates through both: {Counter(o.status for o in load.outcomes)}")
        killed_at, killed_utc = time.monotonic(), utcnow()
        servers["a"].proc.send_signal(signal.SIGKILL)
        servers["a"].proc.wait(10)
        gone_at = time.monotonic()  # its sockets closed: HAProxy's connects are refused
        down_at = lb.wait_for("a", "DOWN")
        wait_until(lambda: len(load.ok(since=down_at)) >= 40, 60, "creates after the kill")
        load.stop()
        outcomes = list(load.outcomes)

        # only HAProxy's 5xx or broken connections, only of requests sent before A
        # was gone: a connect refused after that is sent to B (retries, redispatch)
        failed = [o for o in outcomes if o.status != 201]
        for o in failed:
            assert o.status is None or (o.status in (502, 503, 504) and o.served_by is None
                                        and "NeutronError" not in o.error), o
            assert o.started < gone_at and killed_at <= o.ended <= down_at + 1.0, (
                f"{o}: sent {o.started - killed_at:+.2f} s from the kill, failed "
                f"{o.ended - killed_at:+.2f} s; A was gone at {gone_at - killed_at:+.2f} s, "
                f"out of HAProxy at {down_at - killed_at:+.2f} s")
        after = [o for o in outcomes if o.status == 201 and o.started > down_at]
        assert after and {o.served_by for o in after} == {"b"}

        # every acknowledged port is in the database as it was answered; nothing twice
        listed = api.get("/v2.0/ports").json()["ports"]
        by_id = {p["id"]: p for p in listed}
        acked = [o.port for o in outcomes if o.port is not None]
        assert len({p["id"] for p in acked}) == len(acked)
        for port in acked:
            assert port["id"] in by_id, f"acknowledged port {port['id']} is not in the database"
            kept = by_id[port["id"]]
            assert (kept["mac_address"], kept["fixed_ips"]) == (port["mac_address"],
                                                                port["fixed_ips"])
        macs = Counter(p["mac_address"] for p in listed)
        ips = Counter(ip["ip_address"] for p in listed for ip in p["fixed_ips"])
        assert max(macs.values()) == 1 and max(ips.values()) == 1, (macs, ips)
        sent = {o.name for o in outcomes}
        made = {p["name"] for p in listed if p["device_owner"] != DHCP_OWNER}
        assert made <= sent and {o.name for o in outcomes if o.port} <= made
        done_unanswered = sorted(made & {o.name for o in failed})

        # --- the agent lives on through B ---------------------------------------------
        assert agent_proc.poll() is None, "the DHCP agent exited"
        seen = wait_until(lambda: (found := agent()).get("alive")
                          and heartbeat(found) > killed_utc and found, 20,
                          "a heartbeat after the kill")
        wait_until(lambda: heartbeat(agent()) > heartbeat(seen), 20, "the heartbeat to advance")
        late = api.network(name="after-the-kill")
        api.subnet(late["id"], "10.9.0.0/24")
        [dhcp_port] = wait_until(lambda: api.get("/v2.0/ports", params={
            "network_id": late["id"], "device_owner": DHCP_OWNER}).json()["ports"], 30,
            "the agent to make its DHCP port on a network made after the kill")
        assert dhcp_port["device_id"] == dhcp_device_id(late["id"], host)
        everything = len(api.get("/v2.0/ports", params={"fields": "id"}).json()["ports"])
        wait_until(lambda: (found := agent()["configurations"])["networks"] == 2
                   and found["ports"] == everything, 30,
                   lambda: f"the agent to serve both networks' {everything} ports: "
                           f"{agent()['configurations']}")

        # --- A again, on its port: requests go to both --------------------------------
        killed = servers["a"]
        assert killed.proc.returncode == -signal.SIGKILL
        killed.log = killed.log.rename(killed.log.with_name("killed-" + killed.log.name))
        assert_no_traceback(killed.log)
        servers["a"] = start("a")
        lb.wait_for("a", "UP")
        answered = []
        for n in range(10):
            resp = api.post("/v2.0/ports", json={"port": {"network_id": net["id"],
                                                          "name": f"again-{n}"}})
            assert resp.status_code == 201, resp.text
            answered.append(resp.headers["x-served-by"])
        assert set(answered) == {"a", "b"}, answered
        # both see one database
        direct = [{p["id"] for p in servers[name].client(None).get(
            "/v2.0/ports", params={"fields": "id"}).json()["ports"]} for name in ("a", "b")]
        assert direct[0] == direct[1] and len(direct[0]) == everything + 10

        assert_no_traceback(tmp_path / f"{host}.log")
        kinds = Counter(str(o.status) if o.status else o.error.split("(")[0] for o in failed)
        print(f"\nscale-out: {len(outcomes)} creates through HAProxy, {len(acked)} acknowledged; "
              f"HAProxy took A out {down_at - killed_at:.2f} s after the kill; {len(failed)} "
              f"failed {dict(kinds)}, {len(done_unanswered)} of them done all the same; after "
              f"the restart served by {dict(Counter(answered))}")
        for o in failed:
            print(f"  {o.name}: {o.status or o.error}, sent {o.started - killed_at:+.3f} s "
                  f"from the kill, failed {o.ended - killed_at:+.3f} s")
