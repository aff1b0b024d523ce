"""What an agent extension implements, and what its agent hands it.

An extension is found by name (``[agent] extensions``) in its agent's entry
point group (``GROUPS``), or by dotted path. The agent builds it with no
arguments, then calls ``initialize`` once, before its first sync, with its
handles: the configuration, the bus, the host's name and what the agent
drives the host with. Then the agent calls the hooks as its sync goes:

- ``before_full_sync`` and ``after_full_sync`` around each full sync (at start,
  after the bus came back, every ``resync_interval``);
- per item, once the agent's own work on it is done: ``handle_port`` /
  ``delete_port`` (L2 agents), ``handle_network`` / ``delete_network`` (DHCP),
  ``handle_router`` / ``delete_router`` (L3);
- the Linux bridge agent asks, when it writes its firewall, what its ports'
  filters log (``firewall_logging``: pure); the Open vSwitch agent, when it
  writes br-int's flows, which flows the extensions add (``flows``: pure);
- the L3 agent also asks, while it computes a router, which floating IPs an
  extension has the router carry (``floating_ips``) and what it adds to the
  router (``router_spec``): both pure, so that the router is still written to
  the host in one go, as before extensions existed.

What an extension runs on the host is checked with the agent's own needs,
before it starts (``host_needs``: tools, and checks of its own).

An extension may serve calls of its own: ``rpc_endpoints`` gives the topics
and the objects whose public methods the server calls there; and run work of
its own beside the agent's loops: ``background`` (the metering extension's
counter readings).

A hook that raises is logged in one line naming the extension and the hook;
the agent's sync goes on (a pure L3 hook that fails adds nothing). The hooks
are async: blocking host work belongs in ``handles.run`` (a thread).
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from neutrino.config import Config
from neutrino.linux import firewall_log, router
from neutrino.linux.host_check import Needs

if TYPE_CHECKING:  # agents without Open vSwitch never import ovsdbapp
    from neutrino.linux.ovs import OpenFlow, Ovsdb
from neutrino.rpc.bus import Bus

T = TypeVar("T")

#: agent kind -> the entry point group its extensions are found in
GROUPS = {"l2": "neutrino.agent.l2.extensions",
          "dhcp": "neutrino.agent.dhcp.extensions",
          "l3": "neutrino.agent.l3.extensions"}


async def _in_thread(work: Callable[..., T], *args: Any) -> T:
    return await asyncio.to_thread(work, *args)


@dataclass(frozen=True)
class OvsBridge:
    """The Open vSwitch agent's ``dataplane``: its switch's database (opened on
    first use) and its integration bridge's flows."""

    db: Callable[[], Ovsdb]
    openflow: OpenFlow


@dataclass(frozen=True)
class AgentHandles:
    """What an agent gives its extensions. ``dataplane``: what the agent
    drives the host with (the L3 agent's ``RouterDataplane``, the DHCP agent's
    dataplane; None when the agent sets up nothing), ``state``: the agent's
    view of what it serves (routers, networks or ports by id), read-only."""

    conf: Config
    bus: Bus
    host: str
    agent_type: str
    context: Mapping[str, Any]
    #: mark items dirty (``("router", id)``, ``("network", id)``, ``("port", id)``)
    mark_dirty: Callable[..., None]
    request_full_sync: Callable[[], None]
    dataplane: Any = None
    state: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: runs blocking host work where the agent runs its own
    run: Callable[..., Awaitable[Any]] = _in_thread


class AgentExtension(abc.ABC):
    """The hooks every agent calls; each does nothing unless overridden."""

    #: which agents take it: "l2", "dhcp" or "l3"
    kind: ClassVar[str] = ""

    @abc.abstractmethod
    def initialize(self, handles: AgentHandles) -> None:
        """Once, before the first sync: keep what is needed of ``handles``."""

    def host_needs(self, conf: Config, needs: Needs) -> None:
        """Before ``initialize``: add to ``needs`` what the extension, as
        ``conf`` says, will use on the host (checked with the agent's)."""
        return None

    def rpc_endpoints(self) -> Sequence[tuple[str, Sequence[object]]]:
        """(topic, objects) to serve on the bus besides the agent's own."""
        return ()

    def background(self) -> Sequence[Callable[[], Coroutine[Any, Any, None]]]:
        """Work to run beside the agent's loops while it runs (started after
        ``initialize``, cancelled when the agent stops)."""
        return ()

    async def before_full_sync(self) -> None:
        """A full sync starts: what is known may be stale."""
        return None

    async def after_full_sync(self) -> None:
        """A full sync ended (whether each item converged or not)."""
        return None


class L2AgentExtension(AgentExtension):
    """Hooks of the Linux bridge and Open vSwitch agents."""

    kind = "l2"

    async def handle_port(self, port: Mapping[str, Any]) -> None:
        """``port`` (the server's device details) is wired on this host."""

    async def delete_port(self, port: Mapping[str, Any]) -> None:
        """``port`` (its last details) left this host."""

    def firewall_logging(self) -> firewall_log.Logging | None:
        """Pure: what the ports' filters log (packet logging; None: nothing of
        this extension's)."""
        return None

    def flows(self) -> list[str]:
        """Pure: the flows this extension adds to br-int (Open vSwitch agent),
        as the agent writes its own (``ovs-ofctl`` syntax, with cookies)."""
        return []


class DhcpAgentExtension(AgentExtension):
    """Hooks of the DHCP agent."""

    kind = "dhcp"

    async def handle_network(self, network: Mapping[str, Any]) -> None:
        """``network`` (as the server gave it, with subnets and ports) is served."""

    async def delete_network(self, network_id: str) -> None:
        """The network is served here no more."""


class L3AgentExtension(AgentExtension):
    """Hooks of the L3 agent."""

    kind = "l3"

    def floating_ips(self, data: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
        """Pure: the floating IPs (of ``data["_floatingips"]``) that this
        extension has the router carry on its gateway; their statuses are
        reported as the router's own."""
        return ()

    def router_spec(self, data: Mapping[str, Any], spec: router.Router) -> router.Router:
        """Pure: ``spec`` (what the router is to be on the host) with what this
        extension adds to it, from ``sync_routers`` data ``data``."""
        return spec

    async def handle_router(self, data: Mapping[str, Any]) -> None:
        """The router of ``data`` (``sync_routers``) is set up on this host."""

    async def delete_router(self, router_id: str) -> None:
        """The router is not on this host any more."""
