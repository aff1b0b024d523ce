"""Load balancing end to end: the Octavia API's haproxy provider on an
emulated host running the Linux bridge, L3 and load-balancer agents.

Three instances answer HTTP with their names; a load balancer in front of
them spreads a client's requests over all three, a member whose server stops
goes ERROR through its health monitor and gets no more traffic, a floating
IP on the VIP serves the external network, HAProxy keeps serving through a
``kill -9`` of the agent (and the restarted agent leaves it alone), and a
load balancer deleted while its agent is down leaves no namespace or process
behind once the agent is back. Root only:
everything happens in namespaces the test makes and removes."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from neutrino.linux import process
from tests.dataplane import run, sandbox, skip_unless_root, wait_until
from tests.functional.emulated_hosts import PHYSNET, Deployment
from tests.harness import ApiClient, free_port

pytestmark = pytest.mark.slow

LBAAS, L2, L3 = "Loadbalancerv2 agent", "Linux bridge agent", "L3 agent"
OVS = "Open vSwitch agent"
EXTERNAL_CIDR, UPSTREAM = "203.0.113.0/24", "203.0.113.1"
TENANT_CIDR = "10.61.0.0/24"
SERVER_EXTRA = ("[DEFAULT]\nservice_plugins = router,octavia\n"
                "[api_settings]\nenabled_provider_drivers = haproxy:HAProxy on an agent\n"
                "default_provider_driver = haproxy\n")
LBS = "/v2/lbaas"


def http_get(namespace: str, url: str) -> str:
    """The body ``url`` answers in ``namespace`` ('' when nothing answers)."""
    done = subprocess.run(["ip", "netns", "exec", namespace, "curl", "-s", "-m", "2", url],
                          capture_output=True, text=True, timeout=10)
    return done.stdout.strip()


def http_answer(namespace: str, url: str) -> str:
    """``<status> <Location>`` of ``url``'s answer in ``namespace``."""
    done = subprocess.run(["ip", "netns", "exec", namespace, "curl", "-s", "-o", "/dev/null",
                           "-m", "2", "-w", "%{http_code} %{redirect_url}", url],
                          capture_output=True, text=True, timeout=10)
    return done.stdout.strip()


def serve_http(d: Deployment, namespace: str, name: str) -> subprocess.Popen:
    """An HTTP server on port 80 of ``namespace`` answering its name to any
    request (read whole first: a close with unread data would reset the reply)."""
    script = d.tmp / f"http-{name}.sh"
    script.write_text(
        "#!/bin/sh\n"
        "while read -r line; do [ \"$line\" = \"$(printf '\\r')\" ] && break; done\n"
        f"printf 'HTTP/1.0 200 OK\\r\\nContent-Length: {len(name)}\\r\\n\\r\\n{name}'\n")
    script.chmod(0o755)
    return d._spawn(["socat", "TCP-LISTEN:80,fork,reuseaddr", f"EXEC:{script}"],
                    f"http-{name}", namespace=namespace)


def settle(lb: ApiClient, lb_id: str) -> dict[str, Any]:
    """Wait until the load balancer is no longer PENDING; it must be ACTIVE."""
    shown: dict[str, Any] = {}

    def done() -> bool:
        shown.update(lb.get(f"{LBS}/loadbalancers/{lb_id}").json()["loadbalancer"])
        return not shown["provisioning_status"].startswith("PENDING")
    wait_until(done, 30, lambda: f"load balancer {lb_id} to settle ({shown})")
    assert shown["provisioning_status"] == "ACTIVE", shown
    return shown


def made(lb: ApiClient, collection: str, body: dict[str, Any], lb_id: str) -> dict[str, Any]:
    resp = lb.post(f"{LBS}/{collection}", json=body)
    assert resp.status_code == 201, resp.text
    settle(lb, lb_id)
    [item] = resp.json().values()
    return item


def http_instance(d: Deployment, network_id: str, name: str, gateway: str | None = None
                  ) -> tuple[dict[str, Any], str, subprocess.Popen]:
    """An instance on host h1 answering HTTP with ``name``: its port, namespace
    and server."""
    port = d.api.port(network_id)
    d.plug("h1", port["id"])
    ns = f"inst-{port['id'][:11]}"
    run("ip", "addr", "add", f"{port['fixed_ips'][0]['ip_address']}/24", "dev", "eth0",
        namespace=ns)
    if gateway:
        run("ip", "route", "add", "default", "via", gateway, namespace=ns)
    return port, ns, serve_http(d, ns, name)


def open_to_the_vip(api: ApiClient, port: dict[str, Any]) -> None:
    """HTTP in from the tenant subnet to the members (of ``port``'s default group):
    as with Octavia, the members' groups must let the load balancer in, which
    connects (and checks their health) from the VIP, in no group."""
    rule = api.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": port["security_groups"][0], "direction": "ingress",
        "ethertype": "IPv4", "protocol": "tcp", "port_range_min": 80, "port_range_max": 80,
        "remote_ip_prefix": TENANT_CIDR}})
    assert rule.status_code == 201, rule.text


def http_listener_and_pool(lb_api: ApiClient, lb_id: str) -> tuple[dict, dict]:
    """An HTTP listener on port 80 and its round-robin pool, each ACTIVE."""
    listener = made(lb_api, "listeners", {"listener": {
        "loadbalancer_id": lb_id, "protocol": "HTTP", "protocol_port": 80}}, lb_id)
    pool = made(lb_api, "pools", {"pool": {
        "listener_id": listener["id"], "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}},
        lb_id)
    return listener, pool


def namespace_of(lb_id: str) -> str:
    return f"qlbaas-{lb_id}"


def namespaces() -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.strip()]


def haproxy_pid(d: Deployment, lb_id: str) -> int | None:
    state = d.tmp / "h1" / "lbaas" / lb_id
    for name in os.listdir(state) if state.is_dir() else ():
        if name.endswith(".pid"):
            text = (state / name).read_text().strip()
            return int(text) if text else None
    return None


@contextlib.contextmanager
def deployment(tmp_path, rabbit_url, start: Callable[[Deployment], None],
               agent_types: tuple[str, ...]) -> Iterator[Deployment]:
    """A host "h1" whose agents ``start`` starts, with a load-balancer agent,
    all alive."""
    with sandbox() as box:
        d = Deployment(box, tmp_path, rabbit_url, server_extra=SERVER_EXTRA,
                       octavia_port=free_port())
        try:
            d.add_host("h1", 1)
            start(d)
            for agent_type in (*agent_types, LBAAS):
                wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, f"the {agent_type}")
            yield d
        finally:
            d.close()


@pytest.fixture
def lab(tmp_path, rabbit_url):
    skip_unless_root("ip", "socat", "curl", "haproxy", "iptables", "conntrack")
    found = {}

    def start(d: Deployment) -> None:
        d.start_l2_agent("h1", firewall="iptables")
        d.start_l3_agent("h1")
        found["agent"] = d.start_lbaas_agent("h1")
        found["external"] = d.add_external_host(f"{UPSTREAM}/24")

    with deployment(tmp_path, rabbit_url, start, (L2, L3)) as d:
        yield d, found["external"], found["agent"]


def test_a_load_balancer_in_front_of_three_instances(lab):
    d, external, agent = lab
    api = d.api
    lb_api = d.server.octavia(None)
    ext_net = api.network(**{"router:external": True, "provider:network_type": "flat",
                             "provider:physical_network": PHYSNET})
    api.subnet(ext_net["id"], EXTERNAL_CIDR, gateway_ip=UPSTREAM, enable_dhcp=False,
               allocation_pools=[{"start": "203.0.113.10", "end": "203.0.113.200"}])
    net = api.network()
    subnet = api.subnet(net["id"], TENANT_CIDR)
    router = api.create("routers", name=f"r-{uuid.uuid4().hex[:6]}",
                        external_gateway_info={"network_id": ext_net["id"]})
    assert api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                   json={"subnet_id": subnet["id"]}).status_code == 200

    backends = {name: http_instance(d, net["id"], name, subnet["gateway_ip"])
                for name in ("alpha", "beta", "gamma")}
    client_port, client, _ = http_instance(d, net["id"], "client", subnet["gateway_ip"])
    open_to_the_vip(api, client_port)

    started = time.monotonic()
    lb = lb_api.post(f"{LBS}/loadbalancers", json={"loadbalancer": {
        "name": "web", "vip_subnet_id": subnet["id"]}}).json()["loadbalancer"]
    settle(lb_api, lb["id"])
    listener, pool = http_listener_and_pool(lb_api, lb["id"])
    members = {}
    for name, (port, _, _) in backends.items():
        members[name] = made(lb_api, f"pools/{pool['id']}/members", {"member": {
            "address": port["fixed_ips"][0]["ip_address"], "protocol_port": 80,
            "subnet_id": subnet["id"]}}, lb["id"])
    made(lb_api, "healthmonitors", {"healthmonitor": {
        "pool_id": pool["id"], "type": "HTTP", "delay": 1, "timeout": 1, "max_retries": 1,
        "max_retries_down": 1, "url_path": "/"}}, lb["id"])
    vip = f"http://{lb['vip_address']}/"
    wait_until(lambda: http_get(client, vip) in backends, 20, "the VIP to answer")
    first_answer = time.monotonic() - started

    seen = collections.Counter(http_get(client, vip) for _ in range(30))
    assert set(seen) == set(backends), seen
    assert all(count == 10 for count in seen.values()), seen  # round robin
    stats_url = f"{LBS}/listeners/{listener['id']}/stats"
    wait_until(lambda: lb_api.get(stats_url).json()["stats"]["total_connections"] >= 30, 10,
               "the listener's counters to be reported")

    # L7 policies: a REJECT on a path, a redirect of another, the rest as before
    for body, rule in (
            ({"action": "REJECT"}, {"type": "PATH", "compare_type": "STARTS_WITH",
                                    "value": "/admin"}),
            ({"action": "REDIRECT_TO_URL", "redirect_url": "https://example.com/new",
              "redirect_http_code": 301}, {"type": "PATH", "compare_type": "EQUAL_TO",
                                           "value": "/old"})):
        policy = made(lb_api, "l7policies", {"l7policy": {
            "listener_id": listener["id"], **body}}, lb["id"])
        made(lb_api, f"l7policies/{policy['id']}/rules", {"rule": rule}, lb["id"])
    assert http_answer(client, f"{vip}admin/users") == "403"
    assert http_answer(client, f"{vip}old") == "301 https://example.com/new"
    assert http_get(client, f"{vip}other") in backends

    # a member whose server stops goes ERROR and gets no more traffic
    backends["gamma"][2].kill()
    member_url = f"{LBS}/pools/{pool['id']}/members/{members['gamma']['id']}"
    wait_until(lambda: lb_api.get(member_url).json()["member"]["operating_status"]
               == "ERROR", 20, "the stopped member to go ERROR")
    assert lb_api.get(f"{LBS}/loadbalancers/{lb['id']}").json()["loadbalancer"][
        "operating_status"] == "DEGRADED"
    assert {http_get(client, vip) for _ in range(10)} == {"alpha", "beta"}

    # a floating IP on the VIP serves the external network
    fip = api.create("floatingips", floating_network_id=ext_net["id"],
                     port_id=lb["vip_port_id"])
    wait_until(lambda: http_get(external, f"http://{fip['floating_ip_address']}/")
               in ("alpha", "beta"), 30, "the floating IP to reach the load balancer")

    # HAProxy outlives its agent; the restarted agent leaves it be
    pid = haproxy_pid(d, lb["id"])
    assert pid is not None
    agent.send_signal(signal.SIGKILL)
    agent.wait()
    assert {http_get(client, vip) for _ in range(6)} == {"alpha", "beta"}
    agent = d.start_lbaas_agent("h1")
    time.sleep(3)  # a full sync and a status round
    assert haproxy_pid(d, lb["id"]) == pid
    assert settle(lb_api, lb["id"])["operating_status"] == "DEGRADED"

    # a load balancer deleted while its agent is down leaves nothing behind once
    # the agent is back (one deleted under a running agent: the OVS test below)
    agent.terminate()
    agent.wait(timeout=10)
    assert lb_api.delete(f"{LBS}/loadbalancers/{lb['id']}?cascade=true").status_code == 204
    time.sleep(1)
    assert lb_api.get(f"{LBS}/loadbalancers/{lb['id']}").json()["loadbalancer"][
        "provisioning_status"] == "PENDING_DELETE"  # nobody to do it yet
    assert process.cmdline(pid) is not None and namespace_of(lb["id"]) in namespaces()
    d.start_lbaas_agent("h1")
    wait_until(lambda: lb_api.get(f"{LBS}/loadbalancers/{lb['id']}").status_code == 404,
               20, "the load balancer to be deleted")
    assert namespace_of(lb["id"]) not in namespaces()
    assert process.cmdline(pid) is None  # gone (or a zombie no one has reaped yet)
    assert not (d.tmp / "h1" / "lbaas" / lb["id"]).exists()
    print(f"load balancer: first answer {first_answer:.2f} s after the create call")


@pytest.fixture
def ovs_lab(tmp_path, rabbit_url):
    skip_unless_root("ip", "socat", "curl", "haproxy", "ovs-vswitchd", "ovsdb-server")

    def start(d: Deployment) -> None:
        d.add_ovs("h1")
        d.start_ovs_agent("h1")
        d.start_lbaas_agent("h1")

    with deployment(tmp_path, rabbit_url, start, (OVS,)) as d:
        yield d


def test_a_flavored_load_balancer_on_an_open_vswitch_host(ovs_lab):
    """The VIP plugged by the openvswitch interface driver; the flavor's limits
    and the zone's agents reach HAProxy."""
    d = ovs_lab
    api, lb_api = d.api, d.server.octavia(None)
    net = api.network()
    subnet = api.subnet(net["id"], TENANT_CIDR)
    servers = {name: http_instance(d, net["id"], name) for name in ("alpha", "beta")}
    client_port, client, _ = http_instance(d, net["id"], "client")
    open_to_the_vip(api, client_port)
    profile = made_in(lb_api, "flavorprofiles", {"flavorprofile": {
        "name": "small", "provider_name": "haproxy",
        "flavor_data": '{"maxconn": 500, "nbthread": 2}'}})
    flavor = made_in(lb_api, "flavors", {"flavor": {
        "name": "small", "flavor_profile_id": profile["id"]}})
    zone_profile = made_in(lb_api, "availabilityzoneprofiles", {"availability_zone_profile": {
        "name": "here", "provider_name": "haproxy",
        "availability_zone_data": '{"agent_availability_zone": "nova"}'}})
    made_in(lb_api, "availabilityzones", {"availability_zone": {
        "name": "here", "availability_zone_profile_id": zone_profile["id"]}})

    lb = made_in(lb_api, "loadbalancers", {"loadbalancer": {
        "vip_subnet_id": subnet["id"], "flavor_id": flavor["id"], "availability_zone": "here"}})
    settle(lb_api, lb["id"])
    listener, pool = http_listener_and_pool(lb_api, lb["id"])
    for port, _, _ in servers.values():
        made(lb_api, f"pools/{pool['id']}/members", {"member": {
            "address": port["fixed_ips"][0]["ip_address"], "protocol_port": 80}}, lb["id"])
    vip = f"http://{lb['vip_address']}/"
    wait_until(lambda: http_get(client, vip) in servers, 20, "the VIP to answer")
    seen = collections.Counter(http_get(client, vip) for _ in range(20))
    assert seen == {"alpha": 10, "beta": 10}, seen
    config = (d.tmp / "h1" / "lbaas" / lb["id"] / "haproxy.cfg").read_text()
    assert "    maxconn 500\n" in config and "    nbthread 2\n" in config

    assert lb_api.delete(f"{LBS}/loadbalancers/{lb['id']}?cascade=true").status_code == 204
    wait_until(lambda: f"qlbaas-{lb['id']}" not in subprocess.run(
        ["ip", "netns", "list"], capture_output=True, text=True).stdout, 20,
        "the load balancer's namespace to go")


def made_in(lb: ApiClient, collection: str, body: dict[str, Any]) -> dict[str, Any]:
    resp = lb.post(f"{LBS}/{collection}", json=body)
    assert resp.status_code == 201, resp.text
    [item] = resp.json().values()
    return item
