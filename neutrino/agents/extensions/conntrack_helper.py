"""Conntrack helpers on the L3 agent's routers (``[agent] extensions =
...,conntrack_helper``, Neutron's L3 agent extension of that name).

The server sends each router's helpers with its sync data
(``_conntrack_helpers``: protocol, port, helper) and tells the router's agent
when they change (``routers_updated``); Neutron's extension pulls them over
an RPC of its own instead. After each router is set up, its CT rules are made
to match (``neutrino.linux.conntrack_helpers``): a resync of an unchanged
router only reads them back. A router that goes takes its namespace, and its
rules with it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from neutrino.agents.extensions.api import AgentHandles, L3AgentExtension
from neutrino.config import Config
from neutrino.linux import conntrack_helpers, host_check, router
from neutrino.linux.iptables import Runner, namespace_runner
from neutrino.rpc.contracts.l3 import CONNTRACK_HELPERS

LOG = logging.getLogger(__name__)


def wanted(data: Mapping[str, Any]) -> list[conntrack_helpers.Helper]:
    """Pure: the router's helpers from its sync data."""
    return [conntrack_helpers.Helper(item["protocol"], int(item["port"]), item["helper"])
            for item in data.get(CONNTRACK_HELPERS, ())]


def _runner(namespace: str) -> Runner:
    return namespace_runner(namespace, timeout=30)


class ConntrackHelperExtension(L3AgentExtension):
    def __init__(self, runners: Callable[[str], Runner] = _runner):
        """``runners``: the tools of a router's namespace (tests give a fake host)."""
        self._runners = runners

    def host_needs(self, conf: Config, needs: host_check.Needs) -> None:
        needs.tool(conf.setting("agent", "extensions"), *host_check.IPTABLES,
                   *host_check.IP6TABLES)

    def initialize(self, handles: AgentHandles) -> None:
        self._handles = handles

    async def handle_router(self, data: Mapping[str, Any]) -> None:
        run = self._runners(router.namespace_name(data["id"]))
        if await self._handles.run(conntrack_helpers.apply, run, wanted(data)):
            LOG.info("router %s: conntrack helper rules written", data["id"])
