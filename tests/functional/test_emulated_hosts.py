"""Emulated hosts with namespace registries of their own (what HA routers'
tests need: one router's namespace on several hosts): a name made on one is
not seen on the other nor on the machine, an agent's router namespace is
reached through ``inside``, and nothing of it is left at the end. Root only."""

from __future__ import annotations

import subprocess
import uuid

import pytest

from tests.dataplane import run, skip_unless_root, wait_until
from tests.functional.emulated_hosts import deployed

pytestmark = pytest.mark.slow


def machine_namespaces() -> list[str]:
    return run("ip", "netns", "list").stdout.split()


def test_hosts_name_their_namespaces_apart(tmp_path, rabbit_url):
    skip_unless_root("ip", "socat", "nsenter", "unshare", "findmnt")
    name = f"same-{uuid.uuid4().hex[:6]}"
    with deployed(tmp_path, rabbit_url, "[DEFAULT]\nservice_plugins = router\n") as d:
        for index, host in enumerate(("h1", "h2"), start=1):
            d.add_host(host, index, own_namespaces=True)
            anchor = str(d.hosts[host]["anchor"].pid)
            subprocess.run(["nsenter", "-t", anchor, "-m", "ip", "netns", "add", name],
                           check=True)
        assert name not in machine_namespaces()
        d.inside("h1", name, "ip", "link", "set", "lo", "up")
        assert "UNKNOWN" in d.inside("h1", name, "ip", "-br", "link").stdout
        assert "DOWN" in d.inside("h2", name, "ip", "-br", "link").stdout  # another one

        d.start_l2_agent("h1", firewall="noop")
        d.start_l3_agent("h1")
        wait_until(lambda: d.agent_alive("h1", "L3 agent"), 30, "the L3 agent")
        router = d.api.create("routers", name="r")
        net = d.api.network()
        subnet = d.api.subnet(net["id"], "10.60.0.0/24")
        resp = d.api.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                         json={"subnet_id": subnet["id"]})
        assert resp.status_code == 200, resp.text
        ns = f"qrouter-{router['id']}"
        wait_until(lambda: "10.60.0.1/24" in d.inside("h1", ns, "ip", "-br", "addr",
                                                      check=False).stdout, 30,
                   lambda: d.log("h1-neutrino-l3-agent")[-2000:])
        assert ns not in machine_namespaces()
        anchors = [d.hosts[h]["anchor"] for h in ("h1", "h2")]
    assert all(anchor.poll() is not None for anchor in anchors)
    assert name not in machine_namespaces() and ns not in machine_namespaces()
    leftover = run("pgrep", "-f", str(tmp_path), check=False).stdout.split()
    assert leftover == [], leftover
