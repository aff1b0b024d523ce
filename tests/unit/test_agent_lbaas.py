"""The load-balancer agent's sync against a fake dataplane and a fake server on
the in-memory bus: which trees it serves, takes down and reports. No root."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from neutrino.agents.lbaas import LbaasAgent
from neutrino.linux.errors import HostError
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts import lbaas as contract
from neutrino.rpc.contracts.lbaas import LoadBalancerSyncData, StatusReport
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport
from tests.fakes.agent_conf import agent_conf

LB1, LB2 = "11111111-0000-4000-8000-000000000001", "22222222-0000-4000-8000-000000000002"


def tree(lb_id: str, revision: int = 0, status: str = "PENDING_CREATE"
         ) -> LoadBalancerSyncData:
    return {"id": lb_id, "revision_number": revision, "admin_state_up": True,
            "provisioning_status": status,
            "vip": {"port_id": "p-" + lb_id, "mac_address": "fa:16:3e:00:00:01",
                    "address": "10.0.0.10", "prefixlen": 24, "gateway_ip": "10.0.0.1",
                    "network_id": "n1", "mtu": 1450, "host_routes": []},
            "listeners": [], "pools": []}


class FakeLbaasServer:
    """The server's side of ``n-lbaasv2-plugin``, from dicts."""

    rpc_version = contract.VERSION

    def __init__(self) -> None:
        self.trees: dict[str, LoadBalancerSyncData] = {}
        self.hosted: set[str] = set()
        self.reports: list[StatusReport] = []

    def get_ready_devices(self, context: dict, host: str) -> list[str]:
        return sorted(self.hosted)

    def get_loadbalancer(self, context: dict, loadbalancer_id: str) -> Any:
        return self.trees.get(loadbalancer_id)

    def update_status(self, context: dict, host: str, report: StatusReport) -> None:
        self.reports.append(report)


class FakeDataplane:
    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir
        self.served: dict[str, LoadBalancerSyncData] = {}
        self.broken: set[str] = set()

    def present(self) -> set[str]:
        return set(self.served)

    def serve(self, lb: LoadBalancerSyncData) -> None:
        if lb["id"] in self.broken:
            raise HostError(f"haproxy refused the configuration of {lb['id']}")
        self.served[lb["id"]] = lb

    def observe(self, lb: LoadBalancerSyncData) -> dict[str, Any]:
        return {"loadbalancer_id": lb["id"], "revision_number": lb["revision_number"],
                "applied": True, "error": "", "loadbalancer": "ONLINE", "listeners": [],
                "pools": [], "members": [], "stats": {}}

    def retire(self, lb_id: str) -> None:
        self.served.pop(lb_id, None)


@asynccontextmanager
async def serving(server: FakeLbaasServer) -> AsyncIterator[Bus]:
    url = f"memory://{uuid.uuid4().hex}"
    server_bus, agent_bus = Bus(get_transport(url), timeout=5), Bus(get_transport(url), timeout=5)
    await server_bus.start()
    await agent_bus.start()
    await RpcServer(server_bus, contract.TOPIC, "server", [server]).start()
    try:
        yield agent_bus
    finally:
        await agent_bus.close()
        await server_bus.close()


def run(tmp_path, server: FakeLbaasServer, host: FakeDataplane,
        scenario: Callable[[LbaasAgent], Awaitable[None]]) -> LbaasAgent:
    async def main() -> LbaasAgent:
        async with serving(server) as bus:
            agent = LbaasAgent(agent_conf(tmp_path, LbaasAgent, ""), bus,
                               dataplane=host)
            await scenario(agent)
            return agent
    return asyncio.run(main())


def test_a_scheduled_tree_is_served_and_reported_applied(tmp_path):
    server, host = FakeLbaasServer(), FakeDataplane(str(tmp_path))
    server.trees[LB1] = tree(LB1, revision=3)
    server.hosted.add(LB1)
    agent = run(tmp_path, server, host, lambda a: a.sync(True, set()))
    assert host.served[LB1]["revision_number"] == 3
    assert [(r["loadbalancer_id"], r["revision_number"], r["applied"])
            for r in server.reports] == [(LB1, 3, True)]
    assert set(agent.running) == {LB1}


def test_a_tree_no_longer_scheduled_here_is_taken_down_without_a_report(tmp_path):
    server, host = FakeLbaasServer(), FakeDataplane(str(tmp_path))
    host.served[LB2] = tree(LB2)  # left by an earlier run; moved away since
    server.trees[LB2] = tree(LB2, status="ACTIVE")
    run(tmp_path, server, host, lambda a: a.sync(True, set()))
    assert host.served == {} and server.reports == []


def test_a_deleted_tree_is_taken_down_and_its_delete_reported(tmp_path):
    server, host = FakeLbaasServer(), FakeDataplane(str(tmp_path))
    host.served[LB1] = tree(LB1)
    server.trees[LB1] = tree(LB1, revision=7, status="PENDING_DELETE")
    server.hosted.add(LB1)
    run(tmp_path, server, host, lambda a: a.sync(False, {("loadbalancer", LB1)}))
    assert host.served == {}
    assert [(r["revision_number"], r["applied"]) for r in server.reports] == [(7, True)]


def test_a_tree_the_host_refuses_is_reported_failed_and_retried(tmp_path):
    server, host = FakeLbaasServer(), FakeDataplane(str(tmp_path))
    server.trees[LB1] = tree(LB1, revision=2)
    server.hosted.add(LB1)
    host.broken.add(LB1)

    async def scenario(agent: LbaasAgent) -> None:
        try:
            await agent.sync(True, set())
        except Exception as error:  # the loop logs it and resyncs in full
            assert "not converged" in str(error)
        else:
            raise AssertionError("a failed load balancer must fail the sync")
        host.broken.clear()
        await agent.sync(True, set())

    run(tmp_path, server, host, scenario)
    assert [(r["applied"], r["error"]) for r in server.reports] == [
        (False, f"haproxy refused the configuration of {LB1}"), (True, "")]
