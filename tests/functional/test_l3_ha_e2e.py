"""A highly available router end to end: three emulated network hosts, each
with a Linux bridge and an L3 agent and a namespace registry of its own
(the router's namespace has one name on each), the router on two of them
(``max_l3_agents_per_router = 2``), an instance on a compute host behind it
with a floating IP, and the external host on the flat external network. The active host dies
(its L3 agent killed, what runs in its router namespace killed, the
namespace's links down): the external host reaches the floating IP again
through the other host, whose agent reports itself active; the dead host
comes back and stays standby. The standby's keepalived and conntrackd killed
are started again; an admin disabling the active agent moves the role at
once. The agents run conntrackd (``ha_conntrackd_enabled``): TCP connections
held open through the router, one to the floating IP and one from the
instance out, carry on over the failover. Root only."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

import pytest

from tests.dataplane import pings, run, skip_unless_root, wait_until
from tests.functional.emulated_hosts import PHYSNET, Deployment, deployed

pytestmark = pytest.mark.slow

LB, L3 = "Linux bridge agent", "L3 agent"
EXTERNAL_CIDR, UPSTREAM = "203.0.113.0/24", "203.0.113.1"
HOSTS = ("h1", "h2", "h3")
SERVER = "[DEFAULT]\nservice_plugins = router\nmax_l3_agents_per_router = 2\n"
L3_CONF = "ha_conntrackd_enabled = true\n"
ECHO_PORT = 7000


@pytest.fixture
def ha_lab(tmp_path, rabbit_url):
    skip_unless_root("ip", "socat", "ping", "keepalived", "conntrackd", "nsenter", "unshare",
                     "findmnt")
    with deployed(tmp_path, rabbit_url, SERVER) as d:
        agents = {}
        for index, name in enumerate(HOSTS, start=1):
            d.add_host(name, index, own_namespaces=True)
            d.start_l2_agent(name, firewall="noop")
            agents[name] = d.start_l3_agent(name, default=L3_CONF)
        d.add_host("c1", len(HOSTS) + 1)  # a compute host
        d.start_l2_agent("c1", firewall="noop")
        for name in HOSTS:
            for kind in (LB, L3):
                wait_until(lambda n=name, k=kind: d.agent_alive(n, k), 30, f"{kind} of {name}")
        wait_until(lambda: d.agent_alive("c1", LB), 30, "the compute host's agent")
        external = d.add_external_host(f"{UPSTREAM}/24")
        yield d, agents, external


def roles(d: Deployment, router_id: str) -> dict[str, str]:
    """host name -> its agent's ha_state."""
    hosts = {d.hosts[name]["host"]: name for name in HOSTS}
    found = d.api.get(f"/v2.0/routers/{router_id}/l3-agents").json()["agents"]
    return {hosts[agent["host"]]: agent["ha_state"] for agent in found}


def active(d: Deployment, router_id: str) -> list[str]:
    return [name for name, role in roles(d, router_id).items() if role == "active"]


def pids_in(d: Deployment, host: str, namespace: str) -> list[str]:
    """What runs in ``namespace`` of ``host``."""
    return subprocess.run(
        ["nsenter", "-t", str(d.hosts[host]["anchor"].pid), "-m", "ip", "netns", "pids",
         namespace], capture_output=True, text=True).stdout.split()


def keepalived_pids(d: Deployment, host: str, namespace: str) -> list[str]:
    """keepalived's parent process in the namespace (its VRRP child is another)."""
    found = []
    for pid in pids_in(d, host, namespace):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            name, ppid = stat.split("(", 1)[1].split(")")[0], stat.rsplit(")", 1)[1].split()[1]
            parent = Path(f"/proc/{ppid}/comm").read_text().strip()
        except FileNotFoundError:  # gone meanwhile
            continue
        if name == "keepalived" and parent != "keepalived":
            found.append(pid)
    return found


def conntrackd_pids(d: Deployment, host: str, namespace: str) -> list[str]:
    found = []
    for pid in pids_in(d, host, namespace):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "conntrackd":
                found.append(pid)
        except FileNotFoundError:  # gone meanwhile
            continue
    return found


class Connection:
    """A TCP connection held open from ``namespace`` (socat's stdin and
    stdout here) to an echo service; ended with the deployment."""

    def __init__(self, d: Deployment, namespace: str, address: str, port: int):
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", namespace, "socat", "-", f"TCP:{address}:{port}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            bufsize=0)
        d.procs.append(self.proc)

    def echo(self, line: str, timeout: float = 10) -> str:
        """``line`` sent; what comes back within ``timeout`` seconds."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line.encode() + b"\n")
        deadline, got = time.monotonic() + timeout, b""
        while not got.endswith(b"\n") and (left := deadline - time.monotonic()) > 0:
            if not select.select([self.proc.stdout], [], [], left)[0]:
                break
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:  # the connection ended
                break
            got += chunk
        return got.decode().strip()


def ha_topology(d: Deployment) -> tuple[dict, dict, str, str]:
    """An HA router with a gateway on the flat external network and an
    interface on 10.70.0.0/24; an instance there on c1, up, with a floating
    IP: the router, the instance's port, its namespace and the floating IP."""
    api = d.api
    ext_net = api.network(**{"router:external": True, "provider:network_type": "flat",
                             "provider:physical_network": PHYSNET})
    api.subnet(ext_net["id"], EXTERNAL_CIDR, gateway_ip=UPSTREAM, enable_dhcp=False,
               allocation_pools=[{"start": "203.0.113.10", "end": "203.0.113.200"}])
    router = api.create("routers", name="ha", ha=True,
                        external_gateway_info={"network_id": ext_net["id"]})
    net = api.network()
    subnet = api.subnet(net["id"], "10.70.0.0/24")
    resp = api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                   json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    port = api.port(net["id"])
    instance = f"inst-{port['id'][:11]}"
    d.plug("c1", port["id"])
    run("ip", "addr", "add", f"{port['fixed_ips'][0]['ip_address']}/24", "dev", "eth0",
        namespace=instance)
    run("ip", "route", "add", "default", "via", "10.70.0.1", namespace=instance)
    wait_until(lambda: api.show("ports", port["id"])["status"] == "ACTIVE", 20, "the instance")
    fip = api.create("floatingips", floating_network_id=ext_net["id"], port_id=port["id"])
    return router, port, instance, fip["floating_ip_address"]


def test_an_ha_router_fails_over(ha_lab):
    d, agents, external = ha_lab
    api = d.api
    router, port, instance, address = ha_topology(d)

    def logs() -> str:
        ports = api.get("/v2.0/ports", params={"device_id": router["id"]}).json()["ports"]
        seen = [(p["device_owner"], p["binding:host_id"], p["binding:vif_type"], p["status"])
                for p in ports]
        where = "\n".join(
            d.inside(n, f"qrouter-{router['id']}", "sh", "-c",
                     f"ip -br addr; ping -c1 -W1 {UPSTREAM} | grep -c ttl; "
                     f"ping -c1 -W1 {port['fixed_ips'][0]['ip_address']} | grep -c ttl",
                     check=False).stdout for n in roles(d, router["id"]))
        fdb = run("bridge", "fdb", "show", "br", "br-phys", namespace=d.underlay).stdout
        fdb = "\n".join(line for line in fdb.splitlines() if "fa:16:3e" in line)
        return f"{roles(d, router['id'])}\n{seen}\n{where}\n{fdb}\n" + "\n".join(
            d.log(f"{name}-neutrino-l3-agent")[-1500:] for name in HOSTS)

    assert len(roles(d, router["id"])) == 2
    first = wait_until(lambda: active(d, router["id"]), 30, logs)
    assert len(first) == 1, roles(d, router["id"])
    wait_until(lambda: pings(external, address), 30, logs)
    assert pings(instance, UPSTREAM)

    # the standby's keepalived dies: its agent starts another, still standby
    namespace = f"qrouter-{router['id']}"
    standby = next(name for name in roles(d, router["id"]) if name != first[0])
    [keepalived] = keepalived_pids(d, standby, namespace)
    run("kill", "-9", keepalived)
    wait_until(lambda: keepalived_pids(d, standby, namespace) not in ([], [keepalived]), 5,
               "the standby's keepalived to be started again")
    assert active(d, router["id"]) == first
    # and so is its conntrackd
    [conntrackd] = conntrackd_pids(d, standby, namespace)
    run("kill", "-9", conntrackd)
    wait_until(lambda: conntrackd_pids(d, standby, namespace) not in ([], [conntrackd]), 5,
               "the standby's conntrackd to be started again")

    # connections through the active host: to the floating IP, and from the
    # instance out (its floating IP's SNAT)
    d.serve_tcp(instance, ECHO_PORT, "cat")
    d.serve_tcp(external, ECHO_PORT, "cat")
    wait_until(lambda: all("LISTEN" in run("ss", "-Hltn", f"sport = :{ECHO_PORT}",
                                           namespace=ns).stdout for ns in (instance, external)),
               5, "the echo services")
    # the kernel picks up a TCP connection met mid-stream, and 1:1 NAT gives it
    # the same addresses again: without conntrackd the connections would carry
    # on too. Strict routers: packets of a connection they have no entry of
    # are invalid, so only the entries conntrackd copied carry them.
    for name in roles(d, router["id"]):
        d.inside(name, namespace, "sysctl", "-qw", "net.netfilter.nf_conntrack_tcp_loose=0")
    inbound = Connection(d, external, address, ECHO_PORT)
    outbound = Connection(d, instance, UPSTREAM, ECHO_PORT)
    assert inbound.echo("before, in") == "before, in"
    assert outbound.echo("before, out") == "before, out"

    # the active host dies: its L3 agent, what runs in the router's namespace
    # (keepalived, conntrackd, no goodbye advert), the namespace's links
    dead = first[0]
    agents[dead].kill()
    agents[dead].wait()
    inside_pids = pids_in(d, dead, namespace)
    started = time.monotonic()
    run("kill", "-9", *inside_pids)
    for link in d.inside(dead, namespace, "ip", "-o", "link").stdout.splitlines():
        device = link.split(": ")[1].split("@")[0]
        if device != "lo":
            d.inside(dead, namespace, "ip", "link", "set", device, "down")
    wait_until(lambda: pings(external, address, wait=0.5), 30, logs)
    print(f"floating IP reachable again {time.monotonic() - started:.1f} s after the "
          "active host died")
    survivor = next(name for name in roles(d, router["id"]) if name != dead)
    wait_until(lambda: roles(d, router["id"]).get(survivor) == "active", 15, logs)
    assert pings(instance, UPSTREAM)
    # the same connections, through the new master
    assert inbound.echo("after, in") == "after, in", logs()
    assert outbound.echo("after, out") == "after, out", logs()
    print(f"both TCP connections carried on {time.monotonic() - started:.1f} s after the "
          "active host died")

    # the host comes back: one active router still, the survivor
    agents[dead] = d.start_l3_agent(dead, default=L3_CONF)
    wait_until(lambda: roles(d, router["id"]).get(dead) == "standby", 40, logs)
    time.sleep(4)  # longer than the master-down interval: no second master
    assert active(d, router["id"]) == [survivor]
    back = time.monotonic()
    wait_until(lambda: pings(external, address, wait=0.5), 10, logs)
    print(f"reachable {time.monotonic() - back:.1f} s after checking the roles")

    # an admin disables the active agent: it lets its routers go, and the
    # other one takes over (keepalived's goodbye advert: at once)
    agent_id = api.get("/v2.0/agents", params={
        "host": d.hosts[survivor]["host"], "agent_type": L3}).json()["agents"][0]["id"]
    disabled = time.monotonic()
    resp = api.put(f"/v2.0/agents/{agent_id}", json={"agent": {"admin_state_up": False}})
    assert resp.status_code == 200, resp.text
    wait_until(lambda: roles(d, router["id"]) == {dead: "active", survivor: "standby"}, 20, logs)
    wait_until(lambda: pings(external, address, wait=0.5), 10, logs)
    print(f"reachable {time.monotonic() - disabled:.1f} s after the active agent was disabled")
    wait_until(lambda: namespace not in d.namespaces_of(survivor), 10,
               "the disabled agent's router namespace to go")
    assert pings(instance, UPSTREAM)
