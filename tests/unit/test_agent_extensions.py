"""Agent extensions: found by name or dotted path from ``[agent] extensions``,
an unknown name one line at start, and the hooks an agent's sync calls
(driven by the L3 agent's real sync, a router dataplane held in memory and
the server's L3 calls answered on the in-process bus). No root."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from neutrino import config
from neutrino.agents.base import AGENT_OPTIONS, Agent
from neutrino.agents.dhcp import DhcpAgent
from neutrino.agents.extensions.api import (
    AgentHandles,
    DhcpAgentExtension,
    L3AgentExtension,
)
from neutrino.agents.extensions.manager import ExtensionNotFound, load
from neutrino.agents.extensions.port_forwarding import PortForwardingExtension
from neutrino.agents.l3 import L3Agent
from neutrino.linux import router
from neutrino.rpc import topics
from neutrino.rpc.bus import Bus
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport

HERE = "tests.unit.test_agent_extensions"


class Recorder(L3AgentExtension):
    """Records every hook the agent calls, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.handles: AgentHandles | None = None

    def initialize(self, handles: AgentHandles) -> None:
        self.handles = handles
        self.calls.append(("initialize",))

    async def before_full_sync(self) -> None:
        self.calls.append(("before_full_sync",))

    async def after_full_sync(self) -> None:
        self.calls.append(("after_full_sync",))

    def floating_ips(self, data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        self.calls.append(("floating_ips", data["id"]))
        return []

    def router_spec(self, data: Mapping[str, Any], spec: router.Router) -> router.Router:
        self.calls.append(("router_spec", data["id"]))
        return spec

    async def handle_router(self, data: Mapping[str, Any]) -> None:
        self.calls.append(("handle_router", data["id"]))

    async def delete_router(self, router_id: str) -> None:
        self.calls.append(("delete_router", router_id))


class Broken(L3AgentExtension):
    """Fails in every hook but ``initialize``."""

    def initialize(self, handles: AgentHandles) -> None:
        pass

    async def before_full_sync(self) -> None:
        raise RuntimeError("before")

    def floating_ips(self, data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        raise RuntimeError("fips")

    def router_spec(self, data: Mapping[str, Any], spec: router.Router) -> router.Router:
        raise RuntimeError("spec")

    async def handle_router(self, data: Mapping[str, Any]) -> None:
        raise RuntimeError("handle")


class ForDhcp(DhcpAgentExtension):
    def initialize(self, handles: AgentHandles) -> None:
        pass


class NotAnExtension:
    pass


def conf_for(tmp_path: Path, agent: type[Agent], text: str) -> config.Config:
    path = tmp_path / "agent.ini"
    path.write_text(f"[DEFAULT]\nhost = h1\nstate_path = {tmp_path / 'state'}\n{text}")
    conf = config.load([str(path)])
    conf.register((AGENT_OPTIONS, *agent.option_groups))
    return conf


def names(tmp_path: Path, agent: type[Agent], text: str) -> list[str]:
    conf = conf_for(tmp_path, agent, text)
    return [name for name, _ in load(conf, agent.extension_kind, agent.default_extensions)]


# --- loading -----------------------------------------------------------------------------

def test_the_l3_agent_runs_port_forwarding_unless_told_otherwise(tmp_path):
    assert names(tmp_path, L3Agent, "") == ["port_forwarding"]
    assert names(tmp_path, L3Agent, "[agent]\nextensions = port_forwarding\n") == [
        "port_forwarding"]
    assert names(tmp_path, L3Agent, "[agent]\nextensions =\n") == []
    assert names(tmp_path, DhcpAgent, "") == []


def test_by_entry_point_name_or_dotted_path(tmp_path):
    conf = conf_for(tmp_path, L3Agent, f"[agent]\nextensions = port_forwarding, {HERE}:Recorder,"
                                       f" {HERE}.Broken\n")
    loaded = load(conf, "l3", ())
    assert [name for name, _ in loaded] == ["port_forwarding", f"{HERE}:Recorder",
                                            f"{HERE}.Broken"]
    assert [type(ext) for _, ext in loaded] == [PortForwardingExtension, Recorder, Broken]


def test_another_agents_extension_is_left_to_it(tmp_path):
    """One file (or one process, all-in-one) for several agents: each takes its own."""
    text = f"[agent]\nextensions = port_forwarding, {HERE}:ForDhcp\n"
    assert names(tmp_path, DhcpAgent, text) == [f"{HERE}:ForDhcp"]
    assert names(tmp_path, L3Agent, text) == ["port_forwarding"]


@pytest.mark.parametrize("value, says", [
    ("port_forwarding, nope", "no agent extension named 'nope' (known: log, port_forwarding"),
    (f"{HERE}:Missing", f"cannot import '{HERE}:Missing'"),
    ("no_such_module.Thing", "cannot import 'no_such_module.Thing'"),
    (f"{HERE}:NotAnExtension", "is not an agent extension"),
])
def test_a_name_found_nowhere_is_one_line_naming_the_option_and_file(tmp_path, value, says):
    conf = conf_for(tmp_path, L3Agent, f"[agent]\nextensions = {value}\n")
    with pytest.raises(ExtensionNotFound) as raised:
        L3Agent(conf, Bus(get_transport(f"memory://{uuid.uuid4().hex}")))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"extensions = {value} in [agent] of {tmp_path / 'agent.ini'}: ")
    assert says in message


def test_the_command_stops_at_start_with_one_line(tmp_path):
    path = tmp_path / "l3_agent.ini"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n[agent]\nextensions = nope\n")
    done = subprocess.run([sys.executable, "-c", "from neutrino.agents.l3 import main; main()",
                           "--config-file", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines == [f"neutrino-l3-agent: extensions = nope in [agent] of {path}: "
                     f"no agent extension named 'nope' (known: log, port_forwarding)"], done.stderr


# --- the hooks, as the L3 agent's sync calls them ---------------------------------------------

ROUTER = "11111111-0000-4000-8000-000000000001"


def router_data() -> dict[str, Any]:
    def port(port_id: str, address: str, cidr: str) -> dict[str, Any]:
        return {"id": port_id, "mac_address": "fa:16:3e:00:00:01", "mtu": 1500,
                "network_id": "n-" + port_id, "fixed_ips": [
                    {"subnet_id": "s-" + port_id, "ip_address": address}],
                "subnets": [{"id": "s-" + port_id, "cidr": cidr, "gateway_ip": None}]}
    return {"id": ROUTER, "enable_snat": True, "routes": [],
            "gw_port": port("gw0000000000", "203.0.113.10", "203.0.113.0/24"),
            "_interfaces": [port("qr0000000000", "10.0.0.1", "10.0.0.0/24")],
            "_floatingips": [{"id": "f1", "floating_ip_address": "203.0.113.21",
                              "fixed_ip_address": None}],
            "_port_forwardings": [{
                "id": "pf1", "floatingip_id": "f1", "floating_ip_address": "203.0.113.21",
                "protocol": "tcp", "internal_ip_address": "10.0.0.7",
                "external_port_start": 8080, "external_port_end": 8080,
                "internal_port_start": 80, "internal_port_end": 80}]}


class L3Server:
    """The server's L3 calls, answered from ``routers``."""

    rpc_version = "1.12"

    def __init__(self) -> None:
        self.routers: dict[str, dict[str, Any]] = {ROUTER: router_data()}
        self.fip_status: dict[str, str] = {}

    async def get_router_ids(self, context: dict, **_: Any) -> list[str]:
        return sorted(self.routers)

    async def sync_routers(self, context: dict, router_ids: list[str], **_: Any) -> list[dict]:
        return [self.routers[r] for r in router_ids if r in self.routers]

    async def update_floatingip_statuses(self, context: dict, router_id: str,
                                         fip_statuses: dict[str, str]) -> None:
        self.fip_status.update(fip_statuses)


class Dataplane:
    """Routers on a host, held in memory: what each was last served as."""

    state_dir = "/nonexistent"
    metadata_socket = None

    def __init__(self) -> None:
        self.served: dict[str, router.Router] = {}

    def present(self) -> set[str]:
        return set(self.served)

    def serve(self, spec: router.Router) -> list[str]:
        self.served[spec.id] = spec
        return []

    def daemons(self, router_id: str) -> dict[str, int | None]:
        return {}

    def dead(self, router_ids: list[str]) -> list[str]:
        return []

    def retire(self, router_id: str) -> None:
        del self.served[router_id]


def drive(tmp_path: Path, extensions: str, dataplane: Dataplane, server: L3Server,
          steps) -> L3Agent:
    async def main() -> L3Agent:
        url = f"memory://{uuid.uuid4().hex}"
        server_bus, agent_bus = Bus(get_transport(url), timeout=5), Bus(get_transport(url),
                                                                        timeout=5)
        await server_bus.start()
        await agent_bus.start()
        await RpcServer(server_bus, topics.L3_PLUGIN, "server", [server]).start()
        try:
            agent = L3Agent(conf_for(tmp_path, L3Agent, f"[agent]\nextensions = {extensions}\n"),
                            agent_bus, dataplane=dataplane)  # type: ignore[arg-type]
            agent.start_extensions()
            await steps(agent)
            return agent
        finally:
            await agent_bus.close()
            await server_bus.close()
    return asyncio.run(main())


def test_the_sync_calls_each_hook_in_turn(tmp_path):
    server, host = L3Server(), Dataplane()

    async def steps(agent: L3Agent) -> None:
        await agent.sync_with_extensions(True, set())
        del server.routers[ROUTER]
        await agent.sync_with_extensions(False, {("router", ROUTER)})

    agent = drive(tmp_path, f"{HERE}:Recorder", host, server, steps)
    [recorder] = agent.extensions
    assert recorder.calls == [
        ("initialize",), ("before_full_sync",), ("floating_ips", ROUTER),
        ("router_spec", ROUTER), ("handle_router", ROUTER), ("after_full_sync",),
        ("delete_router", ROUTER)]
    assert recorder.handles.host == "h1" and recorder.handles.dataplane is host
    assert host.served == {}


def test_port_forwarding_as_an_extension(tmp_path):
    """The router carries the forwarded floating IP, forwards the port, and
    the floating IP is reported ACTIVE; without the extension, none of it."""
    server, host = L3Server(), Dataplane()
    drive(tmp_path, "port_forwarding", host, server, lambda agent: agent.sync(True, set()))
    spec = host.served[ROUTER]
    assert "203.0.113.21/32" in spec.gateway.cidrs
    assert [(f.address, f.external, f.internal_ip, f.internal)
            for f in spec.nat.forwardings] == [("203.0.113.21", (8080, 8080), "10.0.0.7",
                                                (80, 80))]
    assert server.fip_status == {"f1": "ACTIVE"}

    server, host = L3Server(), Dataplane()
    drive(tmp_path, "", host, server, lambda agent: agent.sync(True, set()))
    assert host.served[ROUTER].nat.forwardings == ()
    assert server.fip_status == {}


def test_a_failing_extension_is_one_line_and_the_sync_goes_on(tmp_path, caplog):
    server, host = L3Server(), Dataplane()
    caplog.set_level(logging.ERROR, "neutrino.agents.extensions")
    drive(tmp_path, f"{HERE}:Broken, port_forwarding", host, server,
          lambda agent: agent.sync_with_extensions(True, set()))
    assert host.served[ROUTER].nat.forwardings  # the other extension still did its part
    assert server.fip_status == {"f1": "ACTIVE"}
    failed = [r.getMessage() for r in caplog.records if r.name.startswith(
        "neutrino.agents.extensions")]
    assert failed == [
        f"agent extension {HERE}:Broken: before_full_sync failed: RuntimeError: before",
        f"agent extension {HERE}:Broken: floating_ips failed: RuntimeError: fips",
        f"agent extension {HERE}:Broken: router_spec failed: RuntimeError: spec",
        f"agent extension {HERE}:Broken: handle_router failed: RuntimeError: handle"]
    assert all(r.exc_info is None for r in caplog.records if r.levelno >= logging.ERROR)
