"""HAProxy in a load balancer's namespace, run by ``neutrino.linux.haproxy``.

A load-balancer namespace (``qlbaas-<id>``, the VIP on its link), three
backend namespaces, each serving HTTP that names it, and a client namespace,
all on one Linux bridge in a "switch" namespace of their own (nothing in the
root namespace; no traffic leaves the test's namespaces). The client's
requests spread over the three round-robin; a stopped backend goes DOWN in
``statuses`` within the monitor's timings and gets no more requests; L7
policies reject, redirect and route by a header with a nasty value; a reload
does not cut a download under way; a config HAProxy cannot bind is refused
with its words while the old HAProxy serves on; a new ``Haproxy`` object (an
agent restart) finds the running one and changes nothing; ``stop`` leaves no
process and no file. Root only.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from neutrino.linux import haproxy
from neutrino.linux.haproxy import Haproxy
from neutrino.rpc.contracts.lbaas import LoadBalancerSyncData, MemberSyncData
from tests.dataplane import Sandbox, run, sandbox, skip_unless_root, wait_until

pytestmark = pytest.mark.slow

NET = "172.31.201"
VIP, CLIENT = f"{NET}.10", f"{NET}.100"
BACKENDS = {"b1": f"{NET}.11", "b2": f"{NET}.12", "b3": f"{NET}.13"}
PORT = 8080
NASTY = "a b \"c' d"  # a header value with a space and both quotes
SLOW_CHUNKS, SLOW_CHUNK = 25, 100

#: each backend: its name for /, 200 for /health, a slow body for /slow
SERVER = r"""
import http.server, sys, time
name, port, chunks, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        try:
            self.answer()
        except OSError:  # health checks hang up without reading
            pass
    def answer(self):
        if self.path == "/slow":
            self.send_response(200)
            self.send_header("Content-Length", str(chunks * chunk))
            self.end_headers()
            for _ in range(chunks):
                self.wfile.write(b"x" * chunk)
                self.wfile.flush()
                time.sleep(0.1)
            return
        body = (name + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("0.0.0.0", port), Handler)
print("ready", flush=True)
server.serve_forever()
"""

#: ``count`` requests, one connection each: a JSON line per answer
CLIENT_SCRIPT = r"""
import http.client, json, sys
host, path, count, headers = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
for _ in range(count):
    connection = http.client.HTTPConnection(host, 80, timeout=5)
    connection.request("GET", path, headers=headers)
    answer = connection.getresponse()
    print(json.dumps({"status": answer.status, "body": answer.read().decode().strip(),
                      "location": answer.getheader("Location")}), flush=True)
    connection.close()
"""

#: one slow download: a line once the answer starts, then what arrived
SLOW_CLIENT = r"""
import http.client, sys
connection = http.client.HTTPConnection(sys.argv[1], 80, timeout=10)
connection.request("GET", "/slow")
answer = connection.getresponse()
print("started", flush=True)
print(answer.status, len(answer.read()), flush=True)
"""


@dataclass
class Site:
    box: Sandbox
    lb_id: str
    namespace: str
    client: str
    state: Path
    servers: dict[str, subprocess.Popen] = field(default_factory=dict)

    def requests(self, count: int, path: str = "/",
                 headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
        done = run(sys.executable, "-c", CLIENT_SCRIPT, VIP, path, str(count),
                   json.dumps(headers or {}), namespace=self.client, timeout=60)
        return [json.loads(line) for line in done.stdout.splitlines()]

    def served(self, count: int, **kwargs: Any) -> Counter[str]:
        answers = self.requests(count, **kwargs)
        assert {answer["status"] for answer in answers} == {200}, answers
        return Counter(answer["body"] for answer in answers)


def plug(box: Sandbox, switch: str, namespace: str, role: str, address: str) -> None:
    outside = f"p-{role}"
    run("ip", "link", "add", outside, "netns", switch, "type", "veth", "peer", "name", "eth0",
        "netns", namespace)
    run("ip", "link", "set", outside, "master", "br0", "up", namespace=switch)
    run("ip", "addr", "add", f"{address}/24", "dev", "eth0", namespace=namespace)
    run("ip", "link", "set", "eth0", "up", namespace=namespace)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    skip_unless_root("ip", haproxy.HAPROXY)
    with sandbox() as box:
        switch = box.namespace("sw")
        run("ip", "link", "add", "br0", "type", "bridge", namespace=switch)
        run("ip", "link", "set", "br0", "up", namespace=switch)
        lb_id = str(uuid.uuid4())
        namespace = f"qlbaas-{lb_id}"
        run("ip", "netns", "add", namespace)
        box.adopt(namespace)
        run("ip", "link", "set", "lo", "up", namespace=namespace)
        plug(box, switch, namespace, "lb", VIP)
        client = box.namespace("client")
        plug(box, switch, client, "client", CLIENT)
        site = Site(box, lb_id, namespace, client, tmp_path / "lbaas")
        try:
            for name, address in BACKENDS.items():
                inside = box.namespace(name)
                plug(box, switch, inside, name, address)
                server = subprocess.Popen(["ip", "netns", "exec", inside, sys.executable, "-c",
                                           SERVER, name, str(PORT), str(SLOW_CHUNKS),
                                           str(SLOW_CHUNK)], stdout=subprocess.PIPE, text=True)
                site.servers[name] = server
                assert server.stdout is not None and server.stdout.readline() == "ready\n"
            yield site
        finally:
            Haproxy(str(site.state / lb_id), namespace).stop()
            for server in site.servers.values():
                server.kill()
                server.wait()


def member(name: str, member_id: str = "", **changes: Any) -> MemberSyncData:
    found: MemberSyncData = {"id": member_id or f"member-{name}", "address": BACKENDS[name],
                             "protocol_port": PORT, "weight": 1, "backup": False,
                             "admin_state_up": True, "monitor_address": None,
                             "monitor_port": None}
    return {**found, **changes}  # type: ignore[typeddict-item]


def load_balancer(lb_id: str) -> LoadBalancerSyncData:
    rule: dict[str, Any] = {"admin_state_up": True, "invert": False, "key": None}
    policy: dict[str, Any] = {"admin_state_up": True, "redirect_url": None, "redirect_prefix": None,
              "redirect_pool_id": None, "redirect_http_code": None}
    return cast(LoadBalancerSyncData, {
        "id": lb_id, "revision_number": 1, "admin_state_up": True,
        "provisioning_status": "PENDING_CREATE",
        "vip": {"port_id": "vip-port", "mac_address": "fa:16:3e:00:00:10", "address": VIP,
                "prefixlen": 24, "gateway_ip": None, "network_id": "net", "mtu": 1500,
                "host_routes": []},
        "listeners": [{
            "id": "listener-http", "protocol": "HTTP", "protocol_port": 80,
            "connection_limit": -1, "admin_state_up": True, "default_pool_id": "pool-all",
            "timeout_client_data": 50000, "timeout_member_connect": 1000,
            "timeout_member_data": 50000, "timeout_tcp_inspect": 0,
            "insert_headers": {"X-Forwarded-For": "true"}, "allowed_cidrs": None,
            "l7policies": [
                {**policy, "id": "policy-b1", "action": "REDIRECT_TO_POOL", "position": 1,
                 "redirect_pool_id": "pool-b1",
                 "rules": [{**rule, "id": "rule-nasty", "type": "HEADER", "key": "X-Nasty",
                            "compare_type": "EQUAL_TO", "value": NASTY}]},
                {**policy, "id": "policy-reject", "action": "REJECT", "position": 2,
                 "rules": [{**rule, "id": "rule-private", "type": "PATH",
                            "compare_type": "STARTS_WITH", "value": "/private"}]},
                {**policy, "id": "policy-moved", "action": "REDIRECT_TO_URL", "position": 3,
                 "redirect_url": "http://new.example/it's%20here",
                 "rules": [{**rule, "id": "rule-old-host", "type": "HOST_NAME",
                            "compare_type": "EQUAL_TO", "value": "old.example"}]},
            ]}],
        "pools": [
            {"id": "pool-all", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
             "session_persistence": None, "admin_state_up": True,
             "members": [member(name) for name in BACKENDS],
             "healthmonitor": {"id": "hm", "type": "HTTP", "delay": 1, "timeout": 1,
                               "max_retries": 2, "max_retries_down": 2, "http_method": "GET",
                               "url_path": "/health", "expected_codes": "200",
                               "http_version": None, "domain_name": None,
                               "admin_state_up": True}},
            {"id": "pool-b1", "protocol": "HTTP", "lb_algorithm": "LEAST_CONNECTIONS",
             "session_persistence": None, "admin_state_up": True,
             "members": [member("b1", "member-b1-only")], "healthmonitor": None}],
    })


def operating(report: Any) -> dict[str, str]:
    found = {"loadbalancer": report["loadbalancer"]}
    for kind in ("listeners", "pools", "members"):
        found.update({item["id"]: item["operating_status"] for item in report[kind]})
    return found


def test_haproxy_serves_a_load_balancer(site: Site):
    lb = load_balancer(site.lb_id)
    directory = str(site.state / site.lb_id)
    lbaas = Haproxy(directory, site.namespace)
    assert lbaas.apply(lb) == "started"
    pid = lbaas.pid()
    assert pid is not None and haproxy.running(str(site.state)) == [site.lb_id]
    assert os.getsid(pid) != os.getsid(0)  # its own session: it outlives the agent
    assert operating(lbaas.statuses(lb)) == {
        "loadbalancer": "ONLINE", "listener-http": "ONLINE", "pool-all": "ONLINE",
        "pool-b1": "ONLINE", "member-b1": "ONLINE", "member-b2": "ONLINE",
        "member-b3": "ONLINE", "member-b1-only": "NO_MONITOR"}

    # round robin over the three
    spread = site.served(30)
    assert set(spread) == set(BACKENDS) and min(spread.values()) >= 5, spread
    stats = lbaas.stats(lb)["listener-http"]
    assert stats["total_connections"] >= 30 and stats["bytes_out"] > 0

    # L7: routed by a nasty header, rejected, redirected (the Location as given);
    # the first policy by position that matches wins, whatever its action
    assert site.served(6, headers={"X-Nasty": NASTY}) == Counter({"b1": 6})
    assert set(site.served(6, headers={"X-Nasty": NASTY.replace("'", "")})) == set(BACKENDS)
    assert {answer["status"] for answer in site.requests(2, "/private/x")} == {403}
    moved = site.requests(1, headers={"Host": "old.example"})[0]
    assert (moved["status"], moved["location"]) == (302, "http://new.example/it's%20here")
    assert site.requests(1, "/private/x", headers={"Host": "old.example"})[0]["status"] == 403
    assert site.served(2, path="/private/x", headers={"X-Nasty": NASTY}) == Counter({"b1": 2})

    # a backend stops: DOWN after two failed checks a second apart, no more traffic
    site.servers["b3"].kill()
    site.servers["b3"].wait()
    wait_until(lambda: operating(lbaas.statuses(lb))["member-b3"] == "ERROR", 6,
               "member-b3 seen DOWN")
    found = operating(lbaas.statuses(lb))
    assert (found["pool-all"], found["loadbalancer"], found["member-b1"]) == (
        "DEGRADED", "DEGRADED", "ONLINE")
    assert set(site.served(12)) == {"b1", "b2"}

    # a reload (a weight changed) while a download runs: the download completes
    slow = subprocess.Popen(["ip", "netns", "exec", site.client, sys.executable, "-c",
                             SLOW_CLIENT, VIP], stdout=subprocess.PIPE, text=True)
    try:
        assert slow.stdout is not None and slow.stdout.readline() == "started\n"
        heavier = copy.deepcopy(lb)
        heavier["pools"][0]["members"][0]["weight"] = 3
        assert lbaas.apply(heavier) == "reloaded"
        new_pid = lbaas.pid()
        assert new_pid not in (None, pid)
        assert len(lbaas.processes()) == 2  # the old one drains the download
        assert slow.stdout.readline() == f"200 {SLOW_CHUNKS * SLOW_CHUNK}\n"
    finally:
        slow.kill()
        slow.wait()
    wait_until(lambda: lbaas.processes() == [new_pid], 5, "the old HAProxy gone")
    assert set(site.served(8)) == {"b1", "b2"}

    # a config HAProxy cannot load (a VIP not in the namespace): refused, in its words
    moved_vip = copy.deepcopy(heavier)
    moved_vip["vip"]["address"] = f"{NET}.99"
    with pytest.raises(haproxy.HaproxyError, match=r"cannot bind.*172\.31\.201\.99:80"):
        lbaas.apply(moved_vip)
    assert lbaas.pid() == new_pid and f"{VIP}:80" in Path(lbaas.config).read_text()
    assert set(site.served(4)) == {"b1", "b2"}

    # the agent restarts: a new object finds HAProxy and leaves it alone
    lbaas = Haproxy(directory, site.namespace)
    assert lbaas.apply(heavier) == "unchanged"
    assert lbaas.pid() == new_pid and lbaas.processes() == [new_pid]
    assert haproxy.running(str(site.state)) == [site.lb_id]

    # stop: no process, no file
    lbaas.stop()
    assert lbaas.pid() is None and lbaas.processes() == []
    assert run("ip", "netns", "pids", site.namespace).stdout.split() == []
    assert not os.path.exists(directory) and not os.path.exists(lbaas.socket)
    assert haproxy.running(str(site.state)) == []


def test_a_disabled_load_balancer_runs_nothing(site: Site):
    lb = load_balancer(site.lb_id)
    lbaas = Haproxy(str(site.state / site.lb_id), site.namespace)
    assert lbaas.apply(lb) == "started"
    lb["admin_state_up"] = False
    assert lbaas.apply(lb) == "stopped"
    assert lbaas.processes() == [] and haproxy.running(str(site.state)) == []
    assert set(operating(lbaas.statuses(lb)).values()) == {"OFFLINE"}
    lb["admin_state_up"] = True
    assert lbaas.apply(lb) == "started"
    assert set(site.served(3)) == set(BACKENDS)
