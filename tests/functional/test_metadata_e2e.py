"""Metadata end to end on an isolated network, and on a routed one: an
instance's curl to 169.254.169.254 crosses the DHCP namespace's proxy (or the
router namespace's, behind its REDIRECT) and the host's metadata
agent (which asks the server, over RabbitMQ, which port it is) to a fake Nova
on the host's loopback, which records what it was told. Root only: everything
happens in namespaces the test makes and removes."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from neutrino.linux.metadata_proxy import proxy_pid
from neutrino.metadata.handler import sign
from tests.dataplane import run, sandbox, skip_unless_root, wait_until
from tests.functional.emulated_hosts import Deployment

pytestmark = pytest.mark.slow

SECRET = "metadata-secret"
NOVA_PORT = 8775
METADATA_URL = "http://169.254.169.254/latest/meta-data/instance-id"

#: Nova's metadata API, as far as this test needs: it records each request's
#: path and headers (a JSON line each) and answers with the instance id it was given
FAKE_NOVA = """
import http.server, json, sys
port, out = int(sys.argv[1]), sys.argv[2]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(out, "a") as f:
            f.write(json.dumps({"path": self.path, "headers": dict(self.headers)}) + "\\n")
        body = (self.headers.get("X-Instance-ID") or "").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


@pytest.fixture
def deployment(tmp_path, rabbit_url):
    skip_unless_root("ip", "socat", "curl", "udhcpc", "dnsmasq")
    with sandbox() as box:
        deployment = Deployment(box, tmp_path, rabbit_url)
        try:
            yield deployment
        finally:
            deployment.close()


def curl(namespace: str, url: str = METADATA_URL) -> tuple[int, str]:
    """(HTTP status, body) of a GET from ``namespace``; status 0: no answer."""
    done = run("curl", "-s", "-m", "5", "-w", "\n%{http_code}", url, namespace=namespace,
               check=False)
    body, _, status = done.stdout.rpartition("\n")
    return int(status or 0), body


def proxies(namespace: str) -> list[int]:
    """The metadata proxies running in ``namespace``."""
    found = []
    for pid in run("ip", "netns", "pids", namespace, check=False).stdout.split():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"neutrino.metadata.proxy" in argv:
            found.append(int(pid))
    return found


def serving(network_id: str, header: str = "X-Neutron-Network-ID") -> list[int]:
    """The metadata proxies for the network (or, with ``header``
    X-Neutron-Router-ID, the router), wherever they run."""
    wanted = f"--header={header}={network_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and wanted in (entry / "cmdline").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def assert_nova_saw(recorded: Path, instance_id: str, port: dict, address: str,
                    secret: str = SECRET) -> None:
    """The last request the fake Nova got asked for the instance id, as that
    port's instance, from its address, signed with the shared secret."""
    nova_saw = json.loads(recorded.read_text().splitlines()[-1])
    headers = nova_saw["headers"]
    assert nova_saw["path"] == "/latest/meta-data/instance-id"
    assert headers["X-Instance-ID"] == instance_id
    assert headers["X-Tenant-ID"] == port["project_id"]
    assert headers["X-Forwarded-For"] == address
    assert headers["X-Instance-ID-Signature"] == sign(instance_id, secret)


def test_an_isolated_networks_instance_gets_its_own_metadata(deployment: Deployment,
                                                             tmp_path: Path):
    d, api = deployment, deployment.api
    host = d.add_host("h1", 1)
    recorded = tmp_path / "nova.jsonl"
    nova = subprocess.Popen(["ip", "netns", "exec", host, sys.executable, "-c", FAKE_NOVA,
                             str(NOVA_PORT), str(recorded)])
    try:
        d.start_l2_agent("h1")
        d.start_dhcp_agent("h1", text=(
            "check_child_processes_interval = 1\n[dhcp]\nenable_isolated_metadata = true\n"),
            default=f"metadata_proxy_socket = {d.metadata_socket('h1')}\n")
        d.start_metadata_agent("h1", NOVA_PORT, SECRET)
        for agent_type in ("Linux bridge agent", "DHCP agent", "Metadata agent"):
            wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, f"the {agent_type}")

        net = api.network()
        subnet = api.subnet(net["id"], "10.40.0.0/24")
        instance_id = str(uuid.uuid4())
        port = api.port(net["id"], device_id=instance_id, device_owner="compute:nova")
        address = d.plug("h1", port["id"], dhcp=True)
        assert address == port["fixed_ips"][0]["ip_address"]
        [dhcp_port] = api.get("/v2.0/ports", params={
            "network_id": net["id"], "device_owner": "network:dhcp"}).json()["ports"]
        dhcp_ip = dhcp_port["fixed_ips"][0]["ip_address"]
        inst, qdhcp = f"inst-{port['id'][:11]}", f"qdhcp-{net['id']}"

        # DHCP gave the instance its way to 169.254.169.254: the DHCP port
        assert f"via {dhcp_ip}" in run("ip", "route", "show", "169.254.169.254",
                                       namespace=inst).stdout
        assert "169.254.169.254/32" in run("ip", "-o", "addr", namespace=qdhcp).stdout
        assert curl(inst) == (200, instance_id)
        assert_nova_saw(recorded, instance_id, port, address)

        # an address no port has (port security off lets it out) gets a 404
        stranger = api.port(net["id"], port_security_enabled=False)
        d.plug("h1", stranger["id"])
        other = f"inst-{stranger['id'][:11]}"
        nobodys = api.unused_address(subnet)
        run("ip", "addr", "add", f"{nobodys}/24", "dev", "eth0", namespace=other)
        run("ip", "route", "add", "169.254.169.254/32", "via", dhcp_ip, namespace=other)
        assert wait_until(lambda: curl(other)[0] or None, 15, "an answer") == 404
        asked = len(recorded.read_text().splitlines())
        assert asked == 1  # Nova was not asked for the stranger

        # a proxy that dies is started again
        [pid] = proxies(qdhcp)
        run("kill", "-9", str(pid))
        wait_until(lambda: proxies(qdhcp) and proxies(qdhcp) != [pid], 20,
                   "the proxy to be started again")
        assert wait_until(lambda: curl(inst)[0] == 200, 10, "metadata again")

        # once a router holds the gateway, metadata is the router's: the DHCP
        # namespace stops serving it
        router = api.create("routers", name="r1")
        added = api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                        json={"subnet_id": subnet["id"]})
        assert added.status_code == 200, added.text
        wait_until(lambda: not proxies(qdhcp), 20, "the DHCP namespace's proxy to stop")
        assert "169.254.169.254" not in run("ip", "-o", "addr", namespace=qdhcp).stdout
        # and back, once the router is gone
        removed = api.put(f"/v2.0/routers/{router['id']}/remove_router_interface",
                          json={"subnet_id": subnet["id"]})
        assert removed.status_code == 200, removed.text
        wait_until(lambda: proxies(qdhcp), 20, "the DHCP namespace's proxy to come back")
        assert wait_until(lambda: curl(inst)[0] == 200, 10, "metadata again")

        # the network goes, and its proxy with it
        for each in (port, stranger):
            assert api.delete(f"/v2.0/ports/{each['id']}").status_code == 204
        assert api.delete(f"/v2.0/networks/{net['id']}").status_code == 204
        wait_until(lambda: qdhcp not in run("ip", "netns", "list").stdout, 20,
                   "the DHCP namespace to go")
        assert not serving(net["id"])
    finally:
        nova.kill()
        nova.wait()


def test_a_routed_networks_instance_gets_its_metadata_from_the_router(
        deployment: Deployment, tmp_path: Path):
    d, api = deployment, deployment.api
    host = d.add_host("h1", 1)
    recorded = tmp_path / "nova.jsonl"
    nova = subprocess.Popen(["ip", "netns", "exec", host, sys.executable, "-c", FAKE_NOVA,
                             str(NOVA_PORT), str(recorded)])
    socket = f"metadata_proxy_socket = {d.metadata_socket('h1')}\n"
    try:
        d.start_l2_agent("h1")
        d.start_dhcp_agent("h1")  # no isolated metadata: the router is to serve it
        d.start_agent("h1", "neutrino-l3-agent", text="check_child_processes_interval = 1\n",
                      default=f"interface_driver = linuxbridge\nsend_arp_for_ha = 1\n{socket}")
        d.start_metadata_agent("h1", NOVA_PORT, SECRET)
        for agent_type in ("Linux bridge agent", "DHCP agent", "L3 agent", "Metadata agent"):
            wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, f"the {agent_type}")

        net = api.network()
        subnet = api.subnet(net["id"], "10.41.0.0/24")
        router = api.create("routers", name="r-md")
        qrouter = f"qrouter-{router['id']}"
        added = api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                        json={"subnet_id": subnet["id"]})
        assert added.status_code == 200, added.text
        # its pid file (the router's directory) names it once it runs
        state = str(tmp_path / "h1" / "l3" / router["id"])
        pid = wait_until(lambda: proxy_pid(state), 30, "the router's metadata proxy")
        assert proxies(qrouter) == [pid]

        instance_id = str(uuid.uuid4())
        port = api.port(net["id"], device_id=instance_id, device_owner="compute:nova")
        address = d.plug("h1", port["id"], dhcp=True)
        assert address == port["fixed_ips"][0]["ip_address"]
        inst = f"inst-{port['id'][:11]}"
        # no route of its own to 169.254.169.254: the default one, the router
        assert f"via {subnet['gateway_ip']}" in run("ip", "route", "show", "default",
                                                     namespace=inst).stdout
        assert "169.254.169.254" not in run("ip", "route", namespace=inst).stdout
        assert wait_until(lambda: (got := curl(inst))[0] == 200 and got, 15,
                          "metadata through the router") == (200, instance_id)
        assert_nova_saw(recorded, instance_id, port, address)
        # the router's proxy served it; the DHCP namespace has none
        assert not proxies(f"qdhcp-{net['id']}")
        assert serving(router["id"], "X-Neutron-Router-ID") == [pid]
        saved = run("iptables-save", namespace=qrouter).stdout
        assert "-d 169.254.169.254/32 -i qr-+ -p tcp -m tcp --dport 80 -j REDIRECT " \
               "--to-ports 9697" in saved

        # a router update is synced without touching the proxy
        def route(routes: list[dict]) -> None:
            done = api.put(f"/v2.0/routers/{router['id']}", json={"router": {"routes": routes}})
            assert done.status_code == 200, done.text

        route([{"destination": "10.99.0.0/24", "nexthop": "10.41.0.50"}])
        wait_until(lambda: "10.99.0.0/24" in run("ip", "route", namespace=qrouter).stdout, 20,
                   "the router's extra route")
        assert proxies(qrouter) == [pid]
        route([])
        wait_until(lambda: "10.99.0.0/24" not in run("ip", "route", namespace=qrouter).stdout,
                   20, "the extra route to go")
        assert proxies(qrouter) == [pid]

        # a proxy that dies is started again
        run("kill", "-9", str(pid))
        wait_until(lambda: proxy_pid(state) not in (None, pid), 20,
                   "the router's proxy to be started again")
        assert proxies(qrouter) == [proxy_pid(state)]
        assert wait_until(lambda: curl(inst)[0] == 200, 10, "metadata again")

        # the router's last interface goes: its proxy and redirect with it
        removed = api.put(f"/v2.0/routers/{router['id']}/remove_router_interface",
                          json={"subnet_id": subnet["id"]})
        assert removed.status_code == 200, removed.text
        wait_until(lambda: not proxies(qrouter), 20, "the router's proxy to stop")
        wait_until(lambda: "REDIRECT" not in run("iptables-save", namespace=qrouter).stdout,
                   10, "the redirect to go")
        # and the router goes, its namespace with it
        assert api.delete(f"/v2.0/routers/{router['id']}").status_code == 204
        wait_until(lambda: qrouter not in run("ip", "netns", "list").stdout, 20,
                   "the router's namespace to go")
        assert not serving(router["id"], "X-Neutron-Router-ID")
    finally:
        nova.kill()
        nova.wait()
