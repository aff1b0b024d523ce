"""Conntrack helpers end to end: an instance behind a router's SNAT fetches a
file from an FTP server on the external host in active mode, which only
works while the router has an ``ftp`` helper on port 21 (the helper rewrites
the private address the client announces and lets the server's data
connection in). Root only: everything happens in namespaces."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dataplane import run, skip_unless_root, wait_until
from tests.functional import ftp
from tests.functional.emulated_hosts import PHYSNET, deployed
from tests.functional.test_l3_e2e import (
    EXTERNAL_CIDR,
    L3,
    LB,
    UPSTREAM,
    Lab,
    add_interface,
    instance,
    router_with_gateway,
    tenant_subnet,
)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FTP_PORT = 21


@pytest.fixture
def lab(tmp_path, rabbit_url) -> Iterator[Lab]:
    skip_unless_root("ip", "socat", "iptables")
    with deployed(tmp_path, rabbit_url,
                  "[DEFAULT]\nservice_plugins = router,conntrack_helper\n") as d:
        host = d.add_host("h1", 1)
        d.start_l2_agent("h1", firewall="noop")
        l3 = d.start_l3_agent("h1", text="extensions = conntrack_helper\n")
        external = d.add_external_host(f"{UPSTREAM}/24")
        ext_net = d.api.network(**{"router:external": True, "provider:network_type": "flat",
                                   "provider:physical_network": PHYSNET})
        d.api.subnet(ext_net["id"], EXTERNAL_CIDR, gateway_ip=UPSTREAM, enable_dhcp=False,
                     allocation_pools=[{"start": "203.0.113.10", "end": "203.0.113.200"}])
        server = subprocess.Popen(
            ["ip", "netns", "exec", external, sys.executable, "-m", "tests.functional.ftp",
             "serve", str(FTP_PORT)], cwd=ROOT, stdout=subprocess.DEVNULL,
            stderr=(tmp_path / "ftp.log").open("wb"))
        try:
            for agent_type in (LB, L3):
                wait_until(lambda t=agent_type: d.agent_alive("h1", t), 30, f"the {agent_type}")
            yield Lab(d, host, external, ext_net, l3)
        finally:
            server.kill()
            server.wait()


def fetch(namespace: str) -> str:
    """What an active-mode fetch from the external host's server brought."""
    done = subprocess.run(["ip", "netns", "exec", namespace, sys.executable, "-m",
                           "tests.functional.ftp", "fetch", UPSTREAM, str(FTP_PORT)],
                          cwd=ROOT, capture_output=True, text=True, timeout=20)
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


def helper_rules(router: dict) -> str:
    saved = run("iptables-save", "-t", "raw", namespace=f"qrouter-{router['id']}").stdout
    return "\n".join(line for line in saved.splitlines() if "CT --helper" in line)


def test_ftp_needs_the_routers_helper(lab):
    api = lab.api
    router = router_with_gateway(lab)
    net, subnet = tenant_subnet(lab, "10.33.0.0/24")
    add_interface(lab, router, subnet)
    _, inst = instance(lab, net, subnet, "a")
    seen = [""]

    def answered() -> bool:  # the control connection gets through SNAT
        seen[0] = fetch(inst)
        return seen[0].startswith("425") or seen[0] == ftp.DATA
    wait_until(answered, 30, lambda: f"the FTP server to answer (got {seen[0]!r})")
    assert seen[0].startswith("425 no data connection to ('10.33.0."), seen[0]

    path = f"/v2.0/routers/{router['id']}/conntrack_helpers"
    resp = api.post(path, json={"conntrack_helper": {"protocol": "tcp", "port": FTP_PORT,
                                                     "helper": "ftp"}})
    assert resp.status_code == 201, resp.text
    helper = resp.json()["conntrack_helper"]
    # the agent hears of it (no resync): the rule, for both IP versions
    def v6() -> str:
        return run("ip6tables-save", "-t", "raw", namespace=f"qrouter-{router['id']}").stdout

    # (IPv4's rule is written first: both are waited for)
    wait_until(lambda: "--dport 21 -j CT --helper ftp" in helper_rules(router)
               and "-A neutrino-l3-CTH -p tcp -m tcp --dport 21 -j CT --helper ftp" in v6(), 15,
               lambda: lab.d.log("h1-neutrino-l3-agent")[-2000:])
    assert fetch(inst) == ftp.DATA

    # gone again: the data connection is refused again
    assert api.delete(f"{path}/{helper['id']}").status_code == 204
    wait_until(lambda: helper_rules(router) == "", 15, "the rule to go")
    assert fetch(inst).startswith("425")
