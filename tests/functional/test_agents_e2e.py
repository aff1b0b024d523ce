"""Agent processes and a server process on RabbitMQ: registration, heartbeats,
notifications, death, and a server restart the agents live through."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.harness import create_database, start_server, wait_until

BIN = Path(sys.executable).parent


@pytest.fixture
def deployment(tmp_path, rabbit_url):
    """A server on RabbitMQ with a short agent_down_time, and a way to start agents."""
    url, drop = create_database("sqlite", tmp_path)
    server = start_server(tmp_path, url, auth="noauth",
                          extra=f"transport_url = {rabbit_url}\nagent_down_time = 3\n"
                                "allow_automatic_l3agent_failover = true\n")
    server.rabbit = rabbit_url
    agents: list[subprocess.Popen] = []

    def start_agent(binary: str, host: str, more: str = "") -> subprocess.Popen:
        conf = tmp_path / f"{host}.conf"
        conf.write_text(f"[DEFAULT]\nhost = {host}\ntransport_url = {rabbit_url}\n"
                        f"state_path = {tmp_path / host}\n"
                        f"[agent]\nreport_interval = 1\n{more}")
        log = (tmp_path / f"{host}.log").open("wb")
        proc = subprocess.Popen([str(BIN / binary), "--config-file", str(conf)],
                                stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        agents.append(proc)
        return proc

    yield server, start_agent
    for proc in agents:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    server.stop()
    drop()


def agents_on(server, host: str) -> list[dict]:
    client = server.client(None)
    return client.get("/v2.0/agents", params={"host": host}).json()["agents"]


def test_agent_registers_is_alive_and_dies(deployment):
    server, start_agent = deployment
    host = f"e2e-{uuid.uuid4().hex[:8]}"
    # a mapping names a device the host has (the agent refuses one it has not),
    # and no firewall: nothing to need of the host's tools
    proc = start_agent("neutrino-linuxbridge-agent", host,
                       "[linux_bridge]\nphysical_interface_mappings = physnet1:lo\n"
                       "[securitygroup]\nfirewall_driver = noop\n")
    [agent] = wait_until(lambda: agents_on(server, host), what="the agent to register")
    assert agent["agent_type"] == "Linux bridge agent"
    assert agent["binary"] == "neutrino-linuxbridge-agent"
    assert agent["configurations"]["interface_mappings"] == {"physnet1": "lo"}
    assert agent["alive"] is True
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_until(lambda: not agents_on(server, host)[0]["alive"], 15, "the agent to be dead")


def test_graceful_stop_on_sigterm(deployment):
    server, start_agent = deployment
    host = f"e2e-{uuid.uuid4().hex[:8]}"
    proc = start_agent("neutrino-dhcp-agent", host)
    wait_until(lambda: agents_on(server, host), what="the DHCP agent to register")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


def test_every_agent_command_registers(deployment):
    server, start_agent = deployment
    # not the Open vSwitch agent: it refuses to start without an OVS database
    # (test_startup_checks); test_ovs_e2e sees it register on an OVS of its own
    names = {"neutrino-l3-agent": "L3 agent", "neutrino-metadata-agent": "Metadata agent"}
    hosts = {}
    for binary in names:
        host = f"e2e-{uuid.uuid4().hex[:8]}"
        hosts[binary] = host
        start_agent(binary, host)
    for binary, agent_type in names.items():
        [agent] = wait_until(lambda h=hosts[binary]: agents_on(server, h), what=binary)
        assert agent["agent_type"] == agent_type


def test_port_changes_reach_an_l2_agent(deployment, tmp_path):
    """The server fans port updates and deletes out, and security group changes
    (rules; members: ports joining, leaving, changing addresses); an agent marks
    what they name dirty."""
    import asyncio

    from neutrino import config
    from neutrino.agents.base import AGENT_OPTIONS
    from neutrino.agents.linuxbridge import LinuxBridgeAgent
    from neutrino.rpc.bus import Bus
    from neutrino.rpc.transport import get_transport

    server, _ = deployment
    client = server.client(None)
    net = client.network()
    client.subnet(net["id"], "10.0.0.0/24")
    port = client.port(net["id"])

    class Recording(LinuxBridgeAgent):
        seen: set = set()

        async def sync(self, full, dirty):
            self.seen |= dirty

    path = tmp_path / "inproc.conf"
    path.write_text(f"[DEFAULT]\nhost = inproc-{uuid.uuid4().hex[:8]}\n"
                    f"transport_url = {server.rabbit}\nstate_path = {tmp_path / 'inproc'}\n"
                    "[agent]\nreport_interval = 1\n")
    conf = config.load([str(path)])
    conf.register((AGENT_OPTIONS, *LinuxBridgeAgent.option_groups))

    async def scenario():
        agent = Recording(conf, Bus(get_transport(server.rabbit), timeout=5))
        stop = asyncio.Event()
        running = asyncio.create_task(agent.run(stop))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, lambda: wait_until(
            lambda: agents_on(server, agent.host), what="registration"))
        await loop.run_in_executor(None, lambda: client.put(
            f"/v2.0/ports/{port['id']}", json={"port": {"name": "renamed"}}))

        async def told(*items, seconds=10):
            deadline = loop.time() + seconds
            while not set(items) <= agent.seen:
                assert loop.time() < deadline, (items, agent.seen)
                await asyncio.sleep(0.05)
            agent.seen.clear()

        await told(("port", port["id"]))
        [default] = port["security_groups"]
        other = client.post("/v2.0/security-groups", json={"security_group": {
            "name": "other"}}).json()["security_group"]
        rule = await loop.run_in_executor(None, lambda: client.post(
            "/v2.0/security-group-rules", json={"security_group_rule": {
                "security_group_id": other["id"], "direction": "ingress",
                "protocol": "tcp", "port_range_min": 22, "port_range_max": 22}}))
        assert rule.status_code == 201, rule.text
        await told(("security_group", other["id"]))
        # the port leaves the default group for the other: both hear of it
        await loop.run_in_executor(None, lambda: client.put(
            f"/v2.0/ports/{port['id']}", json={"port": {"security_groups": [other["id"]]}}))
        await told(("port", port["id"]), ("security_group", default),
                   ("security_group", other["id"]))
        await loop.run_in_executor(None, lambda: client.delete(
            f"/v2.0/security-group-rules/{rule.json()['security_group_rule']['id']}"))
        await told(("security_group", other["id"]))
        await loop.run_in_executor(None, lambda: client.delete(f"/v2.0/ports/{port['id']}"))
        await told(("port", port["id"]), ("security_group", other["id"]))
        stop.set()
        await running

    asyncio.run(scenario())


def test_rpc_workers_serve_the_agents(tmp_path, rabbit_url):
    """With rpc_workers the agents' calls are served by processes of their own,
    started and stopped with the server."""
    url, drop = create_database("sqlite", tmp_path)
    server = start_server(tmp_path, url, auth="noauth", extra=(
        f"transport_url = {rabbit_url}\nrpc_workers = 2\n"))
    proc = None
    try:
        children = wait_until(lambda: _children(server.proc.pid) if len(
            _children(server.proc.pid)) >= 2 else None, what="two rpc workers")
        host = f"e2e-{uuid.uuid4().hex[:8]}"
        conf = tmp_path / "agent.conf"
        conf.write_text(f"[DEFAULT]\nhost = {host}\ntransport_url = {rabbit_url}\n"
                        f"state_path = {tmp_path / host}\n[agent]\nreport_interval = 1\n")
        proc = subprocess.Popen([str(BIN / "neutrino-l3-agent"), "--config-file", str(conf)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        [agent] = wait_until(lambda: agents_on(server, host), what="the agent to register")
        assert agent["alive"] is True
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        server.stop()
        drop()
    # the workers go with the server
    wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in children), 15,
             "the rpc workers to stop")


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (multiprocessing's helpers included)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _configurations(server, host: str) -> dict:
    found = agents_on(server, host)
    return found[0]["configurations"] if found and found[0]["alive"] else {}


def test_networks_and_routers_follow_their_agents(deployment):
    """DHCP and L3 agent processes are given what is scheduled to them (the counts
    they report show it), and take over what a dead agent had."""
    server, start_agent = deployment
    client = server.client(None)
    tag = uuid.uuid4().hex[:8]
    first = {"dhcp": f"dhcp-a-{tag}", "l3": f"l3-a-{tag}"}
    procs = {first["dhcp"]: start_agent("neutrino-dhcp-agent", first["dhcp"]),
             first["l3"]: start_agent("neutrino-l3-agent", first["l3"])}
    for host in first.values():
        wait_until(lambda h=host: agents_on(server, h), what=f"{host} to register")

    net = client.network()
    subnet = client.subnet(net["id"], "10.0.0.0/24")
    client.port(net["id"])
    resp = client.post("/v2.0/routers", json={"router": {"name": "r"}})
    assert resp.status_code == 201, resp.text
    router = resp.json()["router"]
    resp = client.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                      json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text

    last: dict[str, dict] = {}

    def serves(host: str, **counts: int) -> bool:
        last[host] = conf = _configurations(server, host)
        return all(conf.get(key) == value for key, value in counts.items())

    # the instance port and the router interface (the DHCP port comes with the dataplane)
    wait_until(lambda: serves(first["dhcp"], networks=1, subnets=1, ports=2), 20,
             lambda: f"the DHCP agent to serve the network ({last})")
    wait_until(lambda: serves(first["l3"], routers=1, interfaces=1), 20,
             lambda: f"the L3 agent to serve the router ({last})")

    second = {"dhcp": f"dhcp-b-{tag}", "l3": f"l3-b-{tag}"}
    start_agent("neutrino-dhcp-agent", second["dhcp"])
    start_agent("neutrino-l3-agent", second["l3"])
    for host in second.values():
        wait_until(lambda h=host: agents_on(server, h), what=f"{host} to register")
    assert serves(second["dhcp"], networks=0) and serves(second["l3"], routers=0)

    for proc in procs.values():
        proc.kill()
        proc.wait()
    # silent for twice agent_down_time (3 s), then moved; the new agents are told
    wait_until(lambda: serves(second["dhcp"], networks=1, subnets=1), 30,
             lambda: f"the network to move to the second DHCP agent ({last})")
    wait_until(lambda: serves(second["l3"], routers=1, interfaces=1), 30,
             lambda: f"the router to move to the second L3 agent ({last})")
    hosting = client.get(f"/v2.0/networks/{net['id']}/dhcp-agents").json()["agents"]
    assert [agent["host"] for agent in hosting] == [second["dhcp"]]
    hosting = client.get(f"/v2.0/routers/{router['id']}/l3-agents").json()["agents"]
    assert [agent["host"] for agent in hosting] == [second["l3"]]
