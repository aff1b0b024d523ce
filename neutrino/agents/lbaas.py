"""The load-balancer agent: HAProxy in a namespace ``qlbaas-<id>`` per load balancer.

It runs the load balancers of the Octavia API's ``haproxy`` provider that the
server scheduled to its host (``rpc.contracts.lbaas``). For each it keeps the
namespace, the VIP port's device there (the interface driver's, wired by the
host's L2 agent like a DHCP port) and one HAProxy (``neutrino.linux.lbaas``).
A notification marks a load balancer dirty; a sync reads its tree again, makes
the host run it (unchanged: nothing done; changed: HAProxy reloaded without
dropping connections) and reports what came of it, which completes the
pending work on the server, or puts it in ERROR. Every ``periodic_interval``
seconds it reads each HAProxy's stats socket and reports operating statuses
that changed (a member whose health checks fail goes ERROR).

HAProxy outlives the agent: a restarted agent finds it by its pid file and
leaves it alone when its configuration is unchanged. A load balancer set up
here that the server no longer schedules here (deleted, or moved to another
agent while this one was away) is taken down on the next full sync.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, cast

from neutrino.agents.base import Agent, converge_each, named
from neutrino.agents.cmd import main as run_agent
from neutrino.config import Config, Opt, OptGroup, int_range
from neutrino.linux import host_check, interface
from neutrino.linux.errors import HostError
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts import lbaas as contract
from neutrino.rpc.contracts.lbaas import LbaasPluginApi, LoadBalancerSyncData, StatusReport

LOG = logging.getLogger(__name__)
KIND = "loadbalancer"

OPTIONS = (
    OptGroup("DEFAULT", [
        Opt("interface_driver", interface.parse_driver, "",
            "How the VIP port's device is made: linuxbridge or openvswitch. Unset, the "
            "agent registers but runs no load balancer."),
        Opt("periodic_interval", int_range(1), 10,
            "Seconds between reads of each HAProxy's statuses (members' health)."),
        Opt("num_sync_threads", int_range(1), 4, "Load balancers set up at the same time."),
    ]),
    OptGroup("haproxy", [
        Opt("loadbalancer_state_path", str, "",
            "Directory of the load balancers' HAProxy files (default: $state_path/lbaas)."),
    ]),
    interface.OVS_OPTIONS,
)


class Dataplane(Protocol):
    """How load balancers are run on the host (``neutrino.linux.lbaas``; a fake
    in the agent's unit tests)."""

    state_dir: str

    def present(self) -> set[str]: ...
    def serve(self, lb: LoadBalancerSyncData) -> None: ...
    def observe(self, lb: LoadBalancerSyncData) -> dict[str, Any]: ...
    def retire(self, lb_id: str) -> None: ...


class LbaasNotifications:
    """What the server casts to this agent (``n-lbaasv2_agent.<host>``)."""

    rpc_version = contract.VERSION

    def __init__(self, agent: Agent):
        self._agent = agent

    async def loadbalancer_updated(self, context: dict, loadbalancer_id: str) -> None:
        self._agent.mark_dirty((KIND, loadbalancer_id))

    async def loadbalancer_deleted(self, context: dict, loadbalancer_id: str) -> None:
        self._agent.mark_dirty((KIND, loadbalancer_id))


class LbaasAgent(Agent):
    agent_type = contract.AGENT_TYPE
    binary = contract.BINARY
    topic = contract.AGENT_TOPIC
    option_groups = OPTIONS

    def __init__(self, conf: Config, bus: Bus, agent_namespace: str | None = None,
                 dataplane: Dataplane | None = None):
        """``agent_namespace``: where the VIP ports' taps go (None: where the agent
        runs; tests give a namespace standing in for the host). ``dataplane``: how
        load balancers run on the host (None: this host's, from ``interface_driver``)."""
        super().__init__(conf, bus)
        self._plugin = LbaasPluginApi.on(bus)
        self._limit = asyncio.Semaphore(conf.DEFAULT.num_sync_threads)
        #: the trees running here, as last served, and what was last reported of each
        self.running: dict[str, LoadBalancerSyncData] = {}
        self._reported: dict[str, StatusReport] = {}
        self.dataplane: Dataplane | None = dataplane
        if dataplane is None and conf.DEFAULT.interface_driver:
            from neutrino.linux.lbaas import LbaasDataplane

            state = conf.haproxy.loadbalancer_state_path or os.path.join(
                conf.DEFAULT.state_path, "lbaas")
            self.dataplane = LbaasDataplane(os.path.abspath(state),
                                            interface.make_driver(conf, agent_namespace))
        elif dataplane is None:
            LOG.error("no interface_driver configured: this agent runs no load balancer")

    def configurations(self) -> dict[str, Any]:
        return {"device_drivers": ["haproxy"], "instances": len(self.running)}

    def endpoints(self) -> list[Any]:
        return [LbaasNotifications(self)]

    def host_needs(self) -> host_check.Needs:
        needs = host_check.Needs()
        if self.dataplane is None:
            return needs
        needs.tool(self.conf.setting("DEFAULT", "interface_driver"),
                   host_check.IP, host_check.SYSCTL, host_check.HAPROXY)
        option = ("loadbalancer_state_path" if self.conf.haproxy.loadbalancer_state_path
                  else "state_path")
        group = "haproxy" if option == "loadbalancer_state_path" else "DEFAULT"
        needs.directories.append((self.dataplane.state_dir, self.conf.source(group, option)))
        return needs

    def background(self) -> list[Callable[[], Coroutine[Any, Any, None]]]:
        return [] if self.dataplane is None else [self._watch_statuses]

    # --- what the server wants -------------------------------------------------------------

    async def sync(self, full: bool, dirty: set[Any]) -> None:
        """Every load balancer scheduled here and every one set up here, or the
        dirty ones; each served, or taken down when it is no longer ours."""
        if self.dataplane is None:
            return
        hosted = set(await self._plugin.get_ready_devices(self.host))
        if full:
            changed = hosted | set(self.running) | await asyncio.to_thread(
                self.dataplane.present)
        else:
            changed = named(dirty, KIND)
        if changed:
            await converge_each(sorted(changed), self._limit,
                                lambda lb_id: self._converge(lb_id, lb_id in hosted), KIND)

    async def _converge(self, lb_id: str, hosted: bool) -> None:
        assert self.dataplane is not None
        tree = await self._plugin.get_loadbalancer(lb_id) if hosted else None
        if tree is None or tree["provisioning_status"] == "PENDING_DELETE":
            await self._retire(lb_id)
            if tree is not None:  # the delete is done here: the server completes it
                await self._report(self._gone(tree))
            return
        try:
            await asyncio.to_thread(self.dataplane.serve, tree)
        except HostError as error:
            await self._report(self._failed(tree, str(error)))
            raise
        self.running[lb_id] = tree
        await self._report(await self._observe(tree))

    async def _retire(self, lb_id: str) -> None:
        assert self.dataplane is not None
        self.running.pop(lb_id, None)
        self._reported.pop(lb_id, None)
        if lb_id in await asyncio.to_thread(self.dataplane.present):
            LOG.info("load balancer %s: taken down", lb_id)
            await asyncio.to_thread(self.dataplane.retire, lb_id)

    async def _observe(self, tree: LoadBalancerSyncData) -> StatusReport:
        assert self.dataplane is not None
        # the host seam imports nothing of the bus: it makes the contract's shape
        return cast(StatusReport, await asyncio.to_thread(self.dataplane.observe, tree))

    async def _report(self, report: StatusReport) -> None:
        await self._plugin.update_status(self.host, report)
        if report["applied"] and report["loadbalancer_id"] in self.running:
            self._reported[report["loadbalancer_id"]] = report

    @staticmethod
    def _gone(tree: LoadBalancerSyncData) -> StatusReport:
        return {"loadbalancer_id": tree["id"], "revision_number": tree["revision_number"],
                "applied": True, "error": "", "loadbalancer": "OFFLINE", "listeners": [],
                "pools": [], "members": [], "stats": {}}

    @staticmethod
    def _failed(tree: LoadBalancerSyncData, error: str) -> StatusReport:
        return {"loadbalancer_id": tree["id"], "revision_number": tree["revision_number"],
                "applied": False, "error": error, "loadbalancer": "ERROR", "listeners": [],
                "pools": [], "members": [], "stats": {}}

    async def _watch_statuses(self) -> None:
        """Each running load balancer's statuses, reported when they change."""
        assert self.dataplane is not None
        while True:
            await asyncio.sleep(self.conf.DEFAULT.periodic_interval)
            for lb_id, tree in list(self.running.items()):
                try:
                    report = await self._observe(tree)
                except HostError as error:
                    LOG.warning("load balancer %s: statuses not read: %s", lb_id, error)
                    self.mark_dirty((KIND, lb_id))  # its HAProxy may be gone: start it
                    continue
                if report != self._reported.get(lb_id) and lb_id in self.running:
                    try:
                        await self._report(report)
                    except Exception as error:  # the bus is away: the next round tells
                        LOG.warning("load balancer %s: statuses not reported: %s",
                                    lb_id, error)


def main() -> None:
    run_agent(LbaasAgent)
