"""``neutrino-all-in-one``: the server with the L2 and DHCP agents in one process
on the in-process bus. It runs in a namespace standing for the machine; the
test reaches its API through a UNIX socket (socat at both ends)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.dataplane import as_a_host, pings, run, sandbox, skip_unless_root, wait_until
from tests.harness import ApiClient, free_port

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


@pytest.fixture
def machine(tmp_path):
    skip_unless_root("ip", "socat", "ping", "dnsmasq", "udhcpc")
    confs = Path(tempfile.mkdtemp(prefix="neutrino-dhcp-"))  # dnsmasq reads as nobody
    confs.chmod(0o755)
    procs: list[subprocess.Popen] = []

    def spawn(argv: list[str], log: str) -> subprocess.Popen:
        proc = subprocess.Popen(argv, stdout=(tmp_path / log).open("wb"),
                                stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        procs.append(proc)
        return proc

    try:
        with sandbox() as box:
            ns = box.namespace("aio")
            conf = tmp_path / "aio.conf"
            conf.write_text(
                f"[DEFAULT]\nhost = {ns}\nbind_port = 9696\nstate_path = {tmp_path}\n"
                f"interface_driver = linuxbridge\ndhcp_confs = {confs}\n"
                f"[agent]\nreport_interval = 2\npolling_interval = 1\n"
                f"[database]\nconnection = sqlite:///{tmp_path / 'aio.db'}\n")
            spawn([*as_a_host(ns), str(BIN / "neutrino-all-in-one"), "--config-file",
                   str(conf)], "aio.log")
            sock, port = tmp_path / "api.sock", free_port()
            spawn(["ip", "netns", "exec", ns, "socat", f"UNIX-LISTEN:{sock},fork",
                   "TCP:127.0.0.1:9696"], "api-inside.log")
            spawn(["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr",
                   f"UNIX-CONNECT:{sock}"], "api-outside.log")
            url = f"http://127.0.0.1:{port}"

            def answers() -> bool:
                try:
                    return httpx.get(url + "/v2.0/networks", timeout=1).status_code == 200
                except httpx.HTTPError:
                    return False

            wait_until(answers, 60, lambda: "the API: " + (tmp_path / "aio.log").read_text())
            try:
                yield box, ns, url, tmp_path
            finally:
                for proc in procs:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
                for network_id in os.listdir(confs):  # dnsmasq goes with its namespace
                    box.adopt(f"qdhcp-{network_id}")
    finally:
        shutil.rmtree(confs, ignore_errors=True)


def test_one_command_serves_the_api_and_a_working_dataplane(machine):
    box, ns, url, tmp = machine
    api = ApiClient(url, {"X-Project-Id": "demo"})
    agents = wait_until(lambda: len(api.get("/v2.0/agents").json()["agents"]) == 4 and
                        api.get("/v2.0/agents").json()["agents"], 30, "the four agents")
    assert {agent["agent_type"] for agent in agents} == {
        "Linux bridge agent", "DHCP agent", "L3 agent", "Metadata agent"}
    assert {agent["host"] for agent in agents} == {ns}

    net = api.network()
    api.subnet(net["id"], "10.50.0.0/24")
    ports = [api.port(net["id"]) for _ in range(2)]
    for port in ports:
        box.adopt(f"inst-{port['id'][:11]}")
        done = subprocess.run(
            [str(BIN / "neutrino-instance"), "--url", url, "plug", port["id"], "--host", ns,
             "--host-netns", ns], capture_output=True, text=True, timeout=90)
        assert done.returncode == 0, done.stderr + (tmp / "aio.log").read_text()
        assert done.stdout.split() == [f"inst-{port['id'][:11]}",
                                       port["fixed_ips"][0]["ip_address"]]
    for port in ports:
        wait_until(lambda p=port: api.show("ports", p["id"])["status"] == "ACTIVE", 20,
                   "ACTIVE ports")
        plugged = api.show("ports", port["id"])  # an instance's port, as Nova makes it
        assert plugged["device_id"] and plugged["device_owner"] == "compute:nova"
    first = f"inst-{ports[0]['id'][:11]}"
    assert wait_until(lambda: pings(first, ports[1]["fixed_ips"][0]["ip_address"]), 15,
                      "the instances to reach each other")
    # unplug: the namespace goes, the port is unbound and DOWN
    done = subprocess.run([str(BIN / "neutrino-instance"), "--url", url, "unplug",
                           ports[1]["id"], "--host-netns", ns], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert f"inst-{ports[1]['id'][:11]}" not in run("ip", "netns", "list").stdout
    wait_until(lambda: api.show("ports", ports[1]["id"])["status"] == "DOWN", 20, "DOWN")
    unplugged = api.show("ports", ports[1]["id"])
    assert (unplugged["binding:host_id"], unplugged["device_id"],
            unplugged["device_owner"]) == ("", "", "")
