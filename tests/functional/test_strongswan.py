"""IPsec between two routers' namespaces, by the vpnaas extension's charons.

Two "router" namespaces joined by a veth pair (the external network), each
with an "instance" namespace behind it on a private subnet. Each runs the
L3 agent's vpnaas extension, as the agent drives it, on contract-shaped
service data pointing at the other; the kernel here has no ESP, so charon
encrypts in userspace (``ipsec_mode = libipsec``). The instances ping each
other across the tunnel; what crosses the external link is ESP in UDP, not
ICMP; statuses reach a fake server; a peer that removes its connection makes
the other side DOWN; a killed charon is started again and the tunnel comes
back. Root only; everything is in namespaces the test makes and removes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neutrino.agents.extensions.api import AgentHandles
from neutrino.agents.extensions.vpn import VpnExtension
from neutrino.agents.l3 import L3Agent
from neutrino.linux import router, strongswan
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts.vpn import (
    TOPIC,
    SiteConnectionSyncData,
    VpnServiceSyncData,
)
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport
from tests.dataplane import Sandbox, pings, run, sandbox, skip_unless_root
from tests.fakes.agent_conf import agent_conf

pytestmark = pytest.mark.slow

OUTSIDE = {"a": "172.31.250.1", "b": "172.31.250.2"}
INSIDE = {"a": "10.91.1", "b": "10.91.2"}
OTHER = {"a": "b", "b": "a"}


def connection(side: str, conn_id: str) -> SiteConnectionSyncData:
    peer = OTHER[side]
    return {"id": conn_id, "status": "PENDING_CREATE", "admin_state_up": True,
            "peer_address": OUTSIDE[peer], "peer_id": OUTSIDE[peer], "local_id": "",
            "psk": "a shared secret, with \"quotes\"", "initiator": "bi-directional",
            "mtu": 1400, "dpd": {"action": "restart", "interval": 2, "timeout": 10},
            "local_cidrs": [f"{INSIDE[side]}.0/24"], "peer_cidrs": [f"{INSIDE[peer]}.0/24"],
            "ikepolicy": {"auth_algorithm": "sha256", "encryption_algorithm": "aes-128",
                          "ike_version": "v2", "lifetime_value": 3600, "pfs": "group14",
                          "phase1_negotiation_mode": "main"},
            "ipsecpolicy": {"transform_protocol": "esp", "auth_algorithm": "sha256",
                            "encryption_algorithm": "aes-256", "encapsulation_mode": "tunnel",
                            "lifetime_value": 3600, "pfs": "group14"}}


class Plugin:
    rpc_version = "1.0"

    def __init__(self) -> None:
        self.got: list[dict] = []

    async def update_status(self, context: dict, status: list[dict]) -> None:
        self.got.extend(status)

    def last(self, conn_id: str) -> str | None:
        for service in reversed(self.got):
            if conn_id in service["ipsec_site_connections"]:
                return service["ipsec_site_connections"][conn_id]["status"]
        return None


class Side:
    """One router of the two: its namespace, its instance, its extension."""

    def __init__(self, box: Sandbox, tag: str, name: str, tmp: Path):
        self.name = name
        self.router_id = f"vpn{tag}{name}"
        self.namespace = router.namespace_name(self.router_id)
        run("ip", "netns", "add", self.namespace)
        box.adopt(self.namespace)
        run("ip", "link", "set", "lo", "up", namespace=self.namespace)
        run("sysctl", "-qw", "net.ipv4.ip_forward=1", namespace=self.namespace)
        self.instance = box.namespace(f"vm{name}")
        inside = f"vi{tag}{name}"
        run("ip", "link", "add", inside, "netns", self.namespace, "type", "veth",
            "peer", "name", "eth0", "netns", self.instance)
        run("ip", "addr", "add", f"{INSIDE[name]}.1/24", "dev", inside, namespace=self.namespace)
        run("ip", "link", "set", inside, "up", namespace=self.namespace)
        run("ip", "addr", "add", f"{INSIDE[name]}.5/24", "dev", "eth0", namespace=self.instance)
        run("ip", "link", "set", "eth0", "up", namespace=self.instance)
        run("ip", "route", "add", "default", "via", f"{INSIDE[name]}.1",
            namespace=self.instance)
        self.gateway = f"vg{tag}{name}"
        self.tmp = tmp / name
        self.conn_id = str(uuid.uuid4())
        self.service: VpnServiceSyncData = {
            "id": str(uuid.uuid4()), "status": "PENDING_CREATE", "admin_state_up": True,
            "router_id": self.router_id, "external_ip": OUTSIDE[name],
            "ipsec_site_connections": [connection(name, self.conn_id)]}
        self.extension = VpnExtension()
        self.dirty: list[Any] = []

    def start(self, bus: Bus) -> None:
        self.tmp.mkdir(exist_ok=True)
        conf = agent_conf(self.tmp, L3Agent,
                          "[agent]\nextensions = vpnaas\n[strongswan]\nipsec_mode = libipsec\n"
                          "[vpnagent]\nstatus_interval = 1\n")
        self.extension.initialize(AgentHandles(
            conf=conf, bus=bus, host=f"host-{self.name}", agent_type="L3 agent", context={},
            mark_dirty=lambda *items: self.dirty.extend(items), request_full_sync=lambda: None,
            state={self.router_id: self.data()}))

    def data(self, services: list[VpnServiceSyncData] | None = None) -> dict:
        return {"id": self.router_id, "_vpnservices":
                [self.service] if services is None else services}

    def charon(self) -> strongswan.Charon:
        found = self.extension.charons[self.router_id]
        assert isinstance(found, strongswan.Charon)
        return found

    def counters(self) -> dict[str, int]:
        """Packets out of the external link, by kind (mangle POSTROUTING sees
        both what the router forwards and what charon sends)."""
        saved = run("iptables-save", "-c", "-t", "mangle", namespace=self.namespace).stdout
        found = {}
        for line in saved.splitlines():
            if line.startswith("[") and "-m comment --comment" in line:
                packets = int(line[1:].split(":")[0])
                found[line.split("--comment ")[1].split()[0].strip('"')] = packets
        return found


def count_outside(side: Side) -> None:
    for kind, match in (("icmp", ["-p", "icmp"]), ("esp", ["-p", "esp"]),
                        ("natt", ["-p", "udp", "--dport", "4500"])):
        run("iptables", "-t", "mangle", "-A", "POSTROUTING", "-o", side.gateway, *match,
            "-m", "comment", "--comment", kind, namespace=side.namespace)


async def until(check: Callable[[], Any], seconds: float, what: str) -> Any:
    """``check()`` (blocking: run in a thread) true within ``seconds``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        value = await asyncio.to_thread(check)
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {seconds:g}s waiting for {what}")
        await asyncio.sleep(0.2)


@pytest.fixture
def sides(tmp_path):
    skip_unless_root("ip", "iptables", "ping", strongswan.CHARON, strongswan.SWANCTL)
    if strongswan.libipsec_missing():
        pytest.skip(strongswan.libipsec_missing() or "")
    with sandbox() as box:
        a, b = Side(box, box.tag, "a", tmp_path), Side(box, box.tag, "b", tmp_path)
        run("ip", "link", "add", a.gateway, "netns", a.namespace, "type", "veth", "peer",
            "name", b.gateway, "netns", b.namespace)
        for side in (a, b):
            run("ip", "addr", "add", f"{OUTSIDE[side.name]}/24", "dev", side.gateway,
                namespace=side.namespace)
            run("ip", "link", "set", side.gateway, "up", namespace=side.namespace)
            count_outside(side)
        try:
            yield a, b
        finally:
            for side in (a, b):  # charon goes with its namespace; its files with tmp_path
                charon = side.extension.__dict__.get("charons", {}).get(side.router_id)
                if charon is not None:
                    charon.stop()


def test_two_routers_tunnel_their_subnets(sides):
    a, b = sides

    async def scenario() -> None:
        bus = Bus(get_transport(f"memory://{uuid.uuid4().hex}"), timeout=10)
        await bus.start()
        plugin = Plugin()
        await RpcServer(bus, TOPIC, None, [plugin]).start()
        for side in (a, b):
            side.start(bus)
            await side.extension.handle_router(side.data())
        assert "kernel-libipsec" in (a.tmp / "state/l3" / a.router_id / "ipsec" /
                                     "strongswan.conf").read_text()
        assert oct(os.stat(a.charon().directory + "/swanctl.conf").st_mode & 0o777) == "0o600"

        def both_up() -> bool:
            return all(side.charon().established().get(side.conn_id) for side in (a, b))
        await until(both_up, 30, "both SAs established")
        sas = run("swanctl", "--list-sas", "--uri", f"unix://{a.charon().socket}").stdout
        assert "ESTABLISHED" in sas and "INSTALLED" in sas, sas
        for side in (a, b):
            await side.extension.read(side.router_id)
            assert plugin.last(side.conn_id) == "ACTIVE"

        before = a.counters()
        await until(lambda: pings(a.instance, f"{INSIDE['b']}.5"), 15, "a ping across")
        assert pings(a.instance, f"{INSIDE['b']}.5", count=3)
        assert pings(b.instance, f"{INSIDE['a']}.5", count=2)
        after = a.counters()
        assert after["icmp"] == before["icmp"]  # no clear ICMP outside
        assert after["natt"] - before["natt"] >= 3  # ESP in UDP (libipsec: always)

        # the agent restarts: the new one finds charon running and keeps its SA
        pid, sas = a.charon().pid(), a.charon().swanctl("--list-sas", "--raw").stdout
        a.extension = VpnExtension()
        a.start(bus)
        await a.extension.handle_router(a.data())
        assert a.charon().pid() == pid
        assert a.charon().swanctl("--list-sas", "--raw").stdout.split("uniqueid=")[1][:3] \
            == sas.split("uniqueid=")[1][:3]  # the same IKE SA

        # a killed charon: seen at once, its router synced again, the tunnel back
        pid = a.charon().pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await until(lambda: ("router", a.router_id) in a.dirty, 10, "the death noticed")
        await a.extension.handle_router(a.data())  # what the agent does with a dirty router
        assert a.charon().pid() not in (None, pid)
        await until(both_up, 30, "the SAs established again")
        await until(lambda: pings(a.instance, f"{INSIDE['b']}.5"), 15, "a ping again")

        # b removes its connection while its agent is down: a's side goes DOWN
        b_charon = b.charon()
        b.extension = VpnExtension()
        b.start(bus)
        await b.extension.handle_router(b.data([]))
        assert b.router_id not in b.extension.charons and b_charon.pid() is None
        await until(lambda: not a.charon().established().get(a.conn_id), 15, "a's SA gone")
        await a.extension.read(a.router_id)
        assert plugin.last(a.conn_id) == "DOWN"
        assert not pings(a.instance, f"{INSIDE['b']}.5")
        await bus.close()

    asyncio.run(scenario())


def test_a_connection_charon_refuses_is_error_and_retried(sides):
    a, _ = sides

    async def scenario() -> None:
        bus = Bus(get_transport(f"memory://{uuid.uuid4().hex}"), timeout=10)
        await bus.start()
        plugin = Plugin()
        await RpcServer(bus, TOPIC, None, [plugin]).start()
        a.start(bus)
        a.extension.retry_after = 0.1
        bad = connection("a", a.conn_id)
        bad["ikepolicy"]["encryption_algorithm"] = "no-such-cipher"
        a.service["ipsec_site_connections"] = [bad]
        await a.extension.handle_router(a.data())
        assert plugin.last(a.conn_id) == "ERROR"
        await until(lambda: ("router", a.router_id) in a.dirty, 5, "a retry")
        a.service["ipsec_site_connections"] = [connection("a", a.conn_id)]
        a.service["ipsec_site_connections"][0]["status"] = "ERROR"  # as the server has it
        await a.extension.handle_router(a.data())
        assert plugin.last(a.conn_id) == "DOWN"  # loaded now; its peer is not there
        await bus.close()

    asyncio.run(scenario())


def test_the_mode_is_what_the_host_can_do():
    skip_unless_root("ip")
    if strongswan.detect_kernel_esp():
        assert strongswan.resolve_mode("auto", "[strongswan] ipsec_mode") == "kernel"
        return
    with pytest.raises(strongswan.StrongSwanError, match=r"cannot do ESP.*ipsec_mode = kernel"):
        strongswan.resolve_mode("kernel", "[strongswan] ipsec_mode = kernel")
    if strongswan.libipsec_missing() is None:
        assert strongswan.resolve_mode("auto", "[strongswan] ipsec_mode") == "libipsec"
    assert not any(name.startswith("neutrino-esp-probe") for name in
                   run("ip", "netns", "list").stdout.split())
