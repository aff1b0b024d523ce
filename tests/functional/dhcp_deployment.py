"""A DHCP agent against a real server on RabbitMQ, for the DHCP dataplane tests.

The agent runs as a process whose DHCP ports' taps go into a namespace
standing in for the host (it talks to RabbitMQ from where it runs); the test
plays the Linux bridge agent (a bridge, the taps plugged in) and the instances
(namespaces whose ``eth0`` carries a port's MAC).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.dataplane import run, sandbox, skip_unless_root, wait_until
from tests.harness import ApiClient, create_database, start_server

# The DHCP agent, its taps in the namespace argv[2] (tests only: nothing
# configures that, since a real agent's host is where it runs).
RUNNER = """
import sys
import tempfile
from neutrino.agents.cmd import main
from neutrino.agents.dhcp import DhcpAgent

class InHostNamespace(DhcpAgent):
    def __init__(self, conf, bus):
        super().__init__(conf, bus, agent_namespace=sys.argv[2])

main(InHostNamespace, ["--config-file", sys.argv[1]])
"""

# udhcpc's script: record the lease, apply the address (never the default script:
# it rewrites /etc/resolv.conf)
LEASE_SCRIPT = """#!/bin/sh
case "$1" in
  bound|renew)
    ip addr replace "$ip/$mask" dev "$interface"
    echo "$ip $router $mask $serverid" > "{out}"
    ;;
esac
exit 0
"""


class Deployment:
    def __init__(self, tmp: Path, rabbit_url: str, box, server):
        self.tmp = tmp
        self.rabbit_url = rabbit_url
        self.box = box
        self.server = server
        self.client: ApiClient = server.client(None)
        self.host_ns = box.namespace("host")
        self.host = f"dhcp-{box.tag}"
        # dnsmasq reads its files as nobody: not under pytest's private tmp_path
        self.confs = Path(tempfile.mkdtemp(prefix=f"neutrino-dhcp-{box.tag}-"))
        self.confs.chmod(0o755)
        self.agents: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    # --- the agent ---------------------------------------------------------------------

    def start_agent(self) -> subprocess.Popen:
        conf = self.tmp / "dhcp-agent.conf"
        conf.write_text(f"[DEFAULT]\nhost = {self.host}\ntransport_url = {self.rabbit_url}\n"
                        f"state_path = {self.tmp}\ndhcp_confs = {self.confs}\n"
                        "interface_driver = linuxbridge\n"
                        "[agent]\nreport_interval = 1\n")
        log = self.tmp / f"dhcp-agent-{len(self.logs)}.log"
        self.logs.append(log)
        proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(conf), self.host_ns],
                                stdout=log.open("wb"), stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.agents.append(proc)
        wait_until(lambda: self.client.get("/v2.0/agents", params={"host": self.host})
                   .json()["agents"], 20, "the DHCP agent to register")
        return proc

    def stop(self) -> None:
        for proc in self.agents:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.confs, ignore_errors=True)

    # --- what it made ------------------------------------------------------------------

    def network(self, cidr: str = "10.0.0.0/24") -> tuple[dict, dict]:
        net = self.client.network()
        self.box.adopt(f"qdhcp-{net['id']}")  # removed with its dnsmasq if the test fails
        return net, self.client.subnet(net["id"], cidr)

    def dhcp_ports(self, network_id: str) -> list[dict]:
        return self.client.get("/v2.0/ports", params={
            "network_id": network_id, "device_owner": "network:dhcp"}).json()["ports"]

    def conf_dir(self, network_id: str) -> Path:
        return self.confs / network_id

    def dnsmasq_pid(self, network_id: str) -> int | None:
        try:
            pid = int((self.conf_dir(network_id) / "pid").read_text())
        except (OSError, ValueError):
            return None
        return pid if alive(pid) else None

    def wait_taken_down(self, network_id: str, pid: int, seconds: float) -> None:
        """dnsmasq, the namespace and the files all gone (the files go last)."""
        wait_until(lambda: not self.conf_dir(network_id).exists(), seconds,
                   "the network's files to go")
        assert f"qdhcp-{network_id}" not in run("ip", "netns", "list").stdout
        assert not alive(pid)

    def wire(self, network_id: str) -> str:
        """What the Linux bridge agent would do: the network's bridge, with the
        DHCP port's tap in it; the bridge's name."""
        [port] = wait_until(lambda: self.dhcp_ports(network_id), 20, "the DHCP port")
        tap = "tap" + port["id"][:11]
        wait_until(lambda: run("ip", "link", "show", tap, namespace=self.host_ns,
                               check=False).returncode == 0, 20, f"{tap} in the host")
        bridge = "brq" + network_id[:11]
        run("ip", "link", "add", bridge, "type", "bridge", "forward_delay", "0",
            namespace=self.host_ns)
        run("ip", "link", "set", bridge, "up", namespace=self.host_ns)
        run("ip", "link", "set", tap, "master", bridge, namespace=self.host_ns)
        wait_until(lambda: self.dnsmasq_pid(network_id), 20, "dnsmasq")
        return bridge

    def instance(self, bridge: str, role: str, mac: str) -> str:
        """A namespace whose eth0, with ``mac``, is plugged into ``bridge``."""
        namespace = self.box.namespace(role)
        outside = f"v{self.box.tag}{role}"[:15]
        run("ip", "link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns",
            namespace, namespace=self.host_ns)
        run("ip", "link", "set", outside, "master", bridge, "up", namespace=self.host_ns)
        run("ip", "link", "set", "eth0", "address", mac, "up", namespace=namespace)
        return namespace

    def plug(self, bridge: str, port: dict) -> list[str]:
        """``neutrino-instance plug`` of ``port`` (the instance asks for its
        addresses while the test plays the L2 agent, putting its tap in
        ``bridge``); what it printed, split."""
        self.box.adopt(f"inst-{port['id'][:11]}")
        tap = "tap" + port["id"][:11]
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "neutrino-instance"), "--url", self.server.url,
             "plug", port["id"], "--host", self.host, "--host-netns", self.host_ns],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: proc.poll() is not None or run(
                "ip", "link", "show", tap, namespace=self.host_ns, check=False).returncode == 0,
                20, f"{tap} in the host")
            if proc.poll() is None:
                run("ip", "link", "set", tap, "master", bridge, namespace=self.host_ns)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, err
        return out.split()

    def lease(self, namespace: str) -> dict[str, str]:
        """Ask for an address on ``namespace``'s eth0: what the server offered."""
        out = self.tmp / f"lease-{namespace}"
        out.unlink(missing_ok=True)
        script = self.tmp / f"udhcpc-{namespace}.sh"
        script.write_text(LEASE_SCRIPT.format(out=out))
        script.chmod(0o755)
        run("udhcpc", "-i", "eth0", "-n", "-q", "-f", "-t", "5", "-T", "1", "-s", str(script),
            namespace=namespace)
        ip, router, mask, server = out.read_text().split()
        return {"ip": ip, "router": router, "mask": mask, "server": server}


def alive(pid: int) -> bool:
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())  # a zombie's is empty
    except OSError:
        return False


def address(port: dict) -> str:
    [fixed] = port["fixed_ips"]
    return fixed["ip_address"]


@contextmanager
def dhcp_deployment(tmp_path: Path, rabbit_url: str, *tools: str) -> Iterator[Deployment]:
    """A server (SQLite, the test's RabbitMQ vhost) and a sandbox for DHCP agents
    and instances; everything removed at the end, the agents' logs printed."""
    skip_unless_root("ip", "dnsmasq", "udhcpc", "ping", *tools)
    url, drop = create_database("sqlite", tmp_path)
    server = start_server(tmp_path, url, auth="noauth",
                          extra=f"transport_url = {rabbit_url}\n")
    try:
        with sandbox() as box:
            deployment = Deployment(tmp_path, rabbit_url, box, server)
            try:
                yield deployment
            finally:
                deployment.stop()
                for log in deployment.logs:
                    print(f"--- {log.name}\n{log.read_text()}")
    finally:
        server.stop()
        drop()
