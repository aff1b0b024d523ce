"""The L3 agent's vpnaas extension on a fake charon: NAT exemptions in the
router's chains, what it loads, and what it tells the server (only what
changed; ERROR and a retry when charon refuses; a dead charon restarted)."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Sequence

import pytest

from neutrino.agents.extensions.api import AgentHandles
from neutrino.agents.extensions.manager import Extensions
from neutrino.agents.extensions.vpn import VpnExtension, exemptions, parse_device_drivers
from neutrino.agents.l3 import L3Agent, router_spec
from neutrino.linux import nat, strongswan
from neutrino.linux.host_check import HostCheckError, Needs
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts.vpn import TOPIC, VPN_SERVICES, VpnServiceSyncData
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport
from tests.fakes.agent_conf import agent_conf
from tests.unit.test_l3_router import sync_data as router_data
from tests.unit.test_strongswan_conf import CONN, SERVICE, connection, service

OTHER = "cccccccc-3333-4333-8333-333333333333"


class FakeCharon:
    """A charon that loads what it is given, except ``refuse``; ``up`` are
    the connections whose SAs are established."""

    def __init__(self) -> None:
        self.loaded: list[str] = []
        self.up: set[str] = set()
        self.refuse: dict[str, str] = {}
        self.running = False
        self.starts = 0
        self.fail_start = ""

    def converge(self, tunnels: Sequence[strongswan.Tunnel]) -> strongswan.LoadResult:
        if self.fail_start:
            raise strongswan.StrongSwanError(self.fail_start)
        started = not self.running
        self.running = True
        self.starts += started
        wanted = [tunnel.id for tunnel in tunnels]
        self.loaded = [c for c in wanted if c not in self.refuse]
        return strongswan.LoadResult(started=started, loaded=True,
                                     failed={c: self.refuse[c] for c in wanted
                                             if c in self.refuse})

    def established(self) -> dict[str, bool]:
        if not self.running:
            raise strongswan.StrongSwanError("no charon")
        return {c: c in self.up for c in self.loaded}

    def pid(self) -> int | None:
        return None  # the monitor is told at once: "it died", as a real dead one

    def stop(self, remove: bool = True, wait: float = 5.0) -> None:
        self.running = False
        self.loaded = []


class Plugin:
    rpc_version = "1.0"

    def __init__(self) -> None:
        self.got: list[list[dict]] = []

    async def update_status(self, context: dict, status: list[dict]) -> None:
        self.got.append(status)


def vpn_router(*services: VpnServiceSyncData) -> dict:
    return {**router_data(), VPN_SERVICES: list(services)}


def test_nat_exemptions_come_before_snat():
    data = vpn_router(service(connection(local_cidrs=["10.1.0.0/24", "fd00::/64"])))
    extensions = Extensions([("vpnaas", VpnExtension(charons=lambda ns, d: FakeCharon()))])
    spec = router_spec(data, extensions=extensions)
    assert spec.nat.exempt == (("10.1.0.0/24", "10.2.0.0/24"), ("10.1.0.0/24", "10.3.0.0/24"))
    post = nat.chains(spec.nat)["nat", "neutrino-l3-POST"]
    assert post[1:3] == ["-A neutrino-l3-POST -s 10.1.0.0/24 -d 10.2.0.0/24 -j ACCEPT",
                         "-A neutrino-l3-POST -s 10.1.0.0/24 -d 10.3.0.0/24 -j ACCEPT"]
    assert "SNAT" in post[3]  # the floating IP's, then the router's
    text = nat.restore_text(nat.chains(spec.nat), set())
    assert nat.saved_chains(text)["nat", "neutrino-l3-POST"] == post  # round trip


def test_no_exemption_for_what_is_down_or_without_a_gateway():
    down = vpn_router(service(connection(admin_state_up=False)))
    assert exemptions(down) == ()
    no_gateway = {**vpn_router(service(connection())), "gw_port": None}
    extension = VpnExtension(charons=lambda ns, d: FakeCharon())
    assert router_spec(no_gateway, extensions=Extensions([("vpnaas", extension)])).nat.exempt == ()


@pytest.mark.parametrize("text,ok", [
    ("strongswan", True),
    ("neutron_vpnaas.services.vpn.device_drivers.strongswan_ipsec.StrongSwanDriver", True),
    ("neutron_vpnaas.services.vpn.device_drivers.libreswan_ipsec.LibreSwanDriver", False),
    ("", False)])
def test_device_driver(text, ok):
    if ok:
        assert parse_device_drivers(text) == ["strongswan"]
    else:
        with pytest.raises(ValueError):
            parse_device_drivers(text)


def test_extension_reports_what_changed(tmp_path):
    conf = agent_conf(tmp_path, L3Agent, "[agent]\nextensions = vpnaas\n")
    charon = FakeCharon()
    made: list[tuple[str, str]] = []
    dirty: list[tuple] = []

    def make(namespace: str, directory: str) -> FakeCharon:
        made.append((namespace, directory))
        return charon

    async def scenario() -> None:
        bus = Bus(get_transport(f"memory://{uuid.uuid4().hex}"), timeout=5)
        await bus.start()
        plugin = Plugin()
        await RpcServer(bus, TOPIC, None, [plugin]).start()
        extension = VpnExtension(charons=make)
        data = vpn_router(service(connection(), connection(id=OTHER, admin_state_up=False)))
        extension.initialize(AgentHandles(conf=conf, bus=bus, host="h1", agent_type="L3 agent",
                                          context={}, mark_dirty=lambda *a: dirty.extend(a),
                                          request_full_sync=lambda: None,
                                          state={"r1": data}))
        extension.retry_after = 0.01

        # pending on the server, not yet up: DOWN (the admin-down one too), said once
        await extension.handle_router(data)
        assert made == [("qrouter-r1", str(tmp_path / "state" / "l3" / "r1" / "ipsec"))]
        assert charon.loaded == [CONN]
        await asyncio.sleep(0.05)  # the monitor: pid None, "it died": router dirty
        assert ("router", "r1") in dirty
        [[report]] = plugin.got
        assert report == {"id": SERVICE, "status": "ACTIVE", "updated_pending_status": True,
                          "ipsec_site_connections": {
                              CONN: {"status": "DOWN", "updated_pending_status": True},
                              OTHER: {"status": "DOWN", "updated_pending_status": True}}}
        await extension.read("r1")
        assert len(plugin.got) == 1  # nothing changed: nothing said

        charon.up.add(CONN)
        await extension.read("r1")
        [report] = plugin.got[-1]
        assert report["ipsec_site_connections"][CONN] == {"status": "ACTIVE",
                                                          "updated_pending_status": False}

        # the periodic reading tells what changed by itself
        extension.interval = 0.02
        [loop] = extension.background()
        task = asyncio.create_task(loop())
        charon.up.discard(CONN)
        for _ in range(100):
            if plugin.got[-1][0]["ipsec_site_connections"][CONN]["status"] == "DOWN":
                break
            await asyncio.sleep(0.01)
        assert plugin.got[-1][0]["ipsec_site_connections"][CONN]["status"] == "DOWN"
        charon.up.add(CONN)
        for _ in range(100):
            if plugin.got[-1][0]["ipsec_site_connections"][CONN]["status"] == "ACTIVE":
                break
            await asyncio.sleep(0.01)
        task.cancel()
        assert plugin.got[-1][0]["ipsec_site_connections"][CONN]["status"] == "ACTIVE"

        # the server shows what it was told: a resync of the same says nothing
        shown = copy.deepcopy(data)
        shown[VPN_SERVICES][0]["status"] = "ACTIVE"
        for conn in shown[VPN_SERVICES][0]["ipsec_site_connections"]:
            conn["status"] = "ACTIVE" if conn["id"] == CONN else "DOWN"
        count = len(plugin.got)
        await extension.handle_router(shown)
        assert len(plugin.got) == count

        # charon refuses the connection: ERROR, and the router synced again soon
        charon.refuse[CONN] = "invalid value for: proposals"
        dirty.clear()
        await extension.handle_router(shown)
        assert plugin.got[-1][0]["ipsec_site_connections"][CONN]["status"] == "ERROR"
        await asyncio.sleep(0.05)
        assert ("router", "r1") in dirty
        del charon.refuse[CONN]
        shown[VPN_SERVICES][0]["ipsec_site_connections"][0]["status"] = "ERROR"  # as told
        await extension.handle_router(shown)
        assert plugin.got[-1][0]["ipsec_site_connections"][CONN]["status"] == "ACTIVE"

        # charon cannot start: the service is ERROR
        charon.fail_start = "charon did not start"
        charon.running = False
        await extension.handle_router(shown)
        assert plugin.got[-1][0]["status"] == "ERROR"
        charon.fail_start = ""

        # no service left: charon stopped, nothing more read
        await extension.handle_router({**shown, VPN_SERVICES: []})
        assert not charon.running and extension.charons == {}
        await bus.close()

    asyncio.run(scenario())


def test_host_needs_name_the_tools_and_check_the_mode(tmp_path):
    conf = agent_conf(tmp_path, L3Agent, "[agent]\nextensions = vpnaas\n")
    needs = Needs()
    VpnExtension().host_needs(conf, needs)
    assert {tool.name for tool, _ in needs.tools} >= {"charon-systemd", "swanctl"}
    assert all("extensions" in why for _, why in needs.tools)
    assert len(needs.checks) == 1  # the mode, decided when the host is checked
    faked = Needs()
    VpnExtension(charons=lambda ns, d: FakeCharon()).host_needs(conf, faked)
    assert faked.checks == []


def test_a_failed_check_is_one_line():
    def no_esp() -> None:
        raise strongswan.StrongSwanError("the kernel cannot do ESP, asked by x = kernel")
    with pytest.raises(HostCheckError, match="^the kernel cannot do ESP, asked by x = kernel$"):
        Needs(checks=[no_esp]).check()
