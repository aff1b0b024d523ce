"""The DHCP agent: dnsmasq in a namespace ``qdhcp-<network id>`` per network.

For each network scheduled to it with a DHCP-enabled subnet, the agent keeps
a DHCP port (its own, asked of the server), the namespace, the port's device
there (the interface driver's), and a dnsmasq serving the network's ports.
Notifications mark networks dirty; a sync fetches them again and converges
each one (``DhcpDataplane.serve`` is idempotent: it changes only what
differs). The networks it has set up are known by their directories under
``dhcp_confs``: one without a wanted network behind it (deleted, moved, its
DHCP disabled, while the agent ran or not) is taken down on the next sync.
dnsmasq outlives the agent: a restarted agent leaves an unchanged one alone.

IPv6 (what dnsmasq serves, and when it sends router advertisements: see
``neutrino.linux.dnsmasq``): the DHCP port holds an address on every DHCP
subnet, SLAAC ones included (the server gives it its EUI-64 address there,
which is also what dnsmasq's RAs need: it advertises the prefixes of its
interface's addresses); the kernel adds the link-local one. The port's device
does no duplicate address detection, and dnsmasq is started only once none of
its addresses is tentative: binding to one fails, which would stop it.

Metadata (``[dhcp] enable_isolated_metadata``): while a network has an
isolated IPv4 subnet (see ``neutrino.linux.dnsmasq``), its DHCP port's device
also holds 169.254.169.254/32 and a metadata proxy
(``neutrino.linux.metadata_proxy``) listens there on port 80, forwarding to
the host's metadata agent with ``X-Neutron-Network-ID``; once a router holds
every subnet's gateway, the proxy and the address go. Every
``[agent] check_child_processes_interval`` seconds the agent looks for
networks whose dnsmasq or proxy died and marks them dirty: their next sync
starts them again; ``neutrino.agents.process_monitor`` hears of their end at
once, and the check is its safety net.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any

from neutrino.agents.base import Agent, converge_each, named
from neutrino.agents.cmd import main as run_agent
from neutrino.agents.extensions.api import AgentHandles, DhcpAgentExtension
from neutrino.agents.extensions.manager import EXTENSION_OPTIONS, Extensions
from neutrino.agents.process_monitor import ProcessMonitor
from neutrino.config import Config, Opt, OptGroup, int_range, parse_bool, parse_list
from neutrino.linux import dnsmasq, host_check, interface, metadata_proxy
from neutrino.linux.dhcp import DhcpDataplane
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts import dhcp as contract
from neutrino.rpc.contracts.dhcp import DHCP_OWNER, DhcpPluginApi, dhcp_device_id

LOG = logging.getLogger(__name__)


def parse_lease(text: str) -> int:
    value = int_range(-1)(text)
    if value == 0:
        raise ValueError("must be a number of seconds, or -1 for infinite")
    return value


OPTIONS = (
    OptGroup("DEFAULT", [
        Opt("interface_driver", interface.parse_driver, "",
            "How the DHCP port's device is made: linuxbridge or openvswitch. Unset, "
            "the agent registers but serves no network."),
        Opt("dhcp_confs", str, "",
            "Directory of the networks' dnsmasq files (default: $state_path/dhcp)."),
        Opt("dhcp_lease_duration", parse_lease, 86400,
            "DHCP lease time in seconds; -1: infinite."),
        Opt("dnsmasq_dns_servers", parse_list, [],
            "Resolvers dnsmasq forwards DNS queries to."),
        Opt("num_sync_threads", int_range(1), 4, "Networks set up at the same time."),
        metadata_proxy.SOCKET_OPTION,
    ]),
    OptGroup("dhcp", [
        Opt("enable_isolated_metadata", parse_bool, False,
            "Serve metadata in the DHCP namespace of networks without a router."),
    ]),
    OptGroup("agent", [
        Opt("check_child_processes_interval", int_range(0), 60,
            "Seconds between checks that each network's dnsmasq and metadata proxy "
            "still run (one that died is started again); 0: no checks."),
    ]),
    EXTENSION_OPTIONS,
    interface.OVS_OPTIONS,
)


class DhcpNotifications:
    """What the server tells DHCP agents (on ``dhcp_agent`` and ``dhcp_agent.host``)."""

    rpc_version = contract.NOTIFICATION_VERSION

    def __init__(self, agent: Agent):
        self._agent = agent

    def _network(self, payload: dict[str, Any]) -> None:
        for key in ("network", "subnet", "port"):
            item = payload.get(key)
            if isinstance(item, dict):
                network_id = item.get("network_id") or item.get("id")
                self._agent.mark_dirty(("network", network_id))
                return
        if "network_id" in payload:
            self._agent.mark_dirty(("network", payload["network_id"]))

    async def network_create_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def network_update_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def network_delete_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def subnet_create_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def subnet_update_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def subnet_delete_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def port_create_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def port_update_end(self, context: dict, payload: dict) -> None:
        self._network(payload)

    async def port_delete_end(self, context: dict, payload: dict) -> None:
        self._network(payload)


class DhcpAgent(Agent):
    agent_type = "DHCP agent"
    binary = "neutrino-dhcp-agent"
    topic = contract.AGENT_TOPIC
    option_groups = OPTIONS
    extension_kind = "dhcp"
    extensions: Extensions[DhcpAgentExtension]

    def __init__(self, conf: Config, bus: Bus, agent_namespace: str | None = None,
                 dataplane: DhcpDataplane | None = None):
        """``agent_namespace``: where the DHCP ports' taps go (None: where the agent
        runs; tests give a namespace standing in for the host). ``dataplane``: how
        networks are served on the host (None: this host's, from
        ``interface_driver``; the agent unit tests give a fake)."""
        super().__init__(conf, bus)
        self._plugin = DhcpPluginApi.on(bus)
        #: the networks this agent serves, as the server gave them (with subnets, ports)
        self.networks: dict[str, contract.NetworkInfo] = {}
        #: network id -> the ports told ready (dhcp_ready_on_ports) since the agent started
        self._ready: dict[str, set[str]] = {}
        self._limit = asyncio.Semaphore(conf.DEFAULT.num_sync_threads)
        self._monitor = ProcessMonitor(self._daemon_ended)
        self.dataplane: DhcpDataplane | None = dataplane
        if dataplane is None and conf.DEFAULT.interface_driver:
            default = conf.DEFAULT
            settings = dnsmasq.Settings(domain=default.dns_domain,
                                        lease_duration=default.dhcp_lease_duration,
                                        dns_servers=tuple(default.dnsmasq_dns_servers))
            confs = default.dhcp_confs or os.path.join(default.state_path, "dhcp")
            socket = (metadata_proxy.socket_path(conf) if conf.dhcp.enable_isolated_metadata
                      else None)
            self.dataplane = DhcpDataplane(os.path.abspath(confs), settings,
                                           interface.make_driver(conf, agent_namespace),
                                           socket)
        elif dataplane is None:
            LOG.error("no interface_driver configured: this agent serves no network")

    def configurations(self) -> dict[str, Any]:
        nets = self.networks.values()
        return {"dhcp_driver": "dnsmasq", "networks": len(nets),
                "subnets": sum(len(net["subnets"]) for net in nets),
                "ports": sum(len(net["ports"]) for net in nets),
                "enable_isolated_metadata": self.conf.dhcp.enable_isolated_metadata}

    def endpoints(self) -> list[Any]:
        return [DhcpNotifications(self)]

    def extension_handles(self) -> AgentHandles:
        return dataclasses.replace(super().extension_handles(), dataplane=self.dataplane,
                                   state=self.networks)

    def host_needs(self) -> host_check.Needs:
        needs = host_check.Needs()
        if self.dataplane is None:
            return needs  # serves no network: runs nothing
        default = self.conf.DEFAULT
        needs.tool(self.conf.setting("DEFAULT", "interface_driver"),
                   host_check.IP, host_check.SYSCTL, host_check.DNSMASQ)
        option = "dhcp_confs" if default.dhcp_confs else "state_path"
        needs.directories.append((self.dataplane.confs_dir,
                                  self.conf.source("DEFAULT", option)))
        return needs

    def background(self) -> list[Callable[[], Coroutine[Any, Any, None]]]:
        if self.dataplane is None or not self.conf.agent.check_child_processes_interval:
            return []
        return [self._watch_processes]

    def _daemon_ended(self, network_id: str, name: str) -> None:
        LOG.warning("network %s: its %s ended; starting it again", network_id, name)
        self.mark_dirty(("network", network_id))

    async def _watch_processes(self) -> None:
        """Mark dirty the networks whose dnsmasq or metadata proxy died unheard
        of (the monitor's safety net): their next sync starts them again."""
        assert self.dataplane is not None
        while True:
            await asyncio.sleep(self.conf.agent.check_child_processes_interval)
            dead = await asyncio.to_thread(self.dataplane.dead, sorted(self._ready))
            if dead:
                LOG.warning("network(s) %s: dnsmasq or the metadata proxy died; "
                            "starting them again", ", ".join(dead))
                self.mark_dirty(*(("network", n) for n in dead))

    # --- what the server wants -------------------------------------------------------------

    async def sync(self, full: bool, dirty: set[Any]) -> None:
        """All the networks scheduled here, or the dirty ones again (dropping those
        no longer scheduled here: moved to another agent, or deleted); then the
        host made to match them."""
        if full:
            found = await self._plugin.get_active_networks_info(self.context,
                                            host=self.host)
            self.networks.clear()  # in place: the extensions hold it as their state
            self.networks.update((net["id"], net) for net in found)
            changed = set(self.networks)
            if self.dataplane is not None:
                changed |= await asyncio.to_thread(self.dataplane.present)
        else:
            changed = named(dirty, "network")
            if not changed:
                return
            hosted = set(await self._plugin.get_active_networks(self.context,
                                                 host=self.host))
            for network_id in changed:
                info = None
                if network_id in hosted:
                    info = await self._plugin.get_network_info(self.context,
                                                   network_id=network_id, host=self.host)
                if info is None:
                    self.networks.pop(network_id, None)
                else:
                    self.networks[network_id] = info
        if self.dataplane is not None:
            await self._converge(sorted(changed))

    async def _converge(self, network_ids: list[str]) -> None:
        """Each network served or retired, ``num_sync_threads`` at a time."""
        async def one(network_id: str) -> None:
            network = self.networks.get(network_id)
            if network is not None and dnsmasq.dhcp_subnets(network):
                await self._serve(network)
            else:
                await self._retire(network_id)

        await converge_each(network_ids, self._limit, one, "network")

    # --- one network -------------------------------------------------------------------------

    async def _dhcp_port(self, network: contract.NetworkInfo) -> dict[str, Any] | None:
        """This agent's DHCP port on the network, with an address on each DHCP
        subnet: the one the network has, completed if a subnet is new, or a new
        one. None if the network went away meanwhile."""
        device_id = dhcp_device_id(network["id"], self.host)
        wanted = [s["id"] for s in dnsmasq.dhcp_subnets(network)]
        port = next((p for p in network["ports"] if p["device_id"] == device_id
                     and p["device_owner"] == DHCP_OWNER), None)
        if port is None:
            return await self._plugin.create_dhcp_port(self.context, host=self.host,
                                           port={"port": {
                                               "network_id": network["id"],
                                               "device_id": device_id,
                                               "device_owner": DHCP_OWNER,
                                               "fixed_ips": [{"subnet_id": s} for s in wanted],
                                           }})
        held = [ip for ip in port["fixed_ips"] if ip["subnet_id"] in wanted]
        missing = [s for s in wanted if s not in {ip["subnet_id"] for ip in held}]
        if not missing:
            return port
        LOG.info("network %s: DHCP port %s gets an address on %s", network["id"], port["id"],
                 ", ".join(missing))
        return await self._plugin.update_dhcp_port(self.context, host=self.host,
                                       port_id=port["id"], port={"port": {
                                           "network_id": network["id"],
                                           "fixed_ips": [*held, *({"subnet_id": s}
                                                                  for s in missing)]}})

    async def _serve(self, network: contract.NetworkInfo) -> None:
        assert self.dataplane is not None
        port = await self._dhcp_port(network)
        if port is None:
            LOG.info("network %s went away while its DHCP port was made", network["id"])
            return
        others = (p for p in network["ports"] if p["id"] != port["id"])
        view: contract.NetworkInfo = {**network, "ports": [*others, port]}
        self.networks[network["id"]] = view
        self._monitor.forget(network["id"])  # what serving stops or restarts is no death
        await asyncio.to_thread(self.dataplane.serve, view, port)
        self._monitor.watch(network["id"], await asyncio.to_thread(
            self.dataplane.daemons, network["id"]))
        told = self._ready.setdefault(network["id"], set())
        new = sorted(set(dnsmasq.served_ports(view)) - told)
        if new:
            await self._plugin.dhcp_ready_on_ports(self.context, port_ids=new)
            told.update(new)
        await self.extensions.each("handle_network", lambda e: e.handle_network(view))

    async def _retire(self, network_id: str) -> None:
        """Take the network down here and give its DHCP port back (the server
        deletes it; it has already if the network itself is gone)."""
        assert self.dataplane is not None
        self._monitor.forget(network_id)
        had = self._ready.pop(network_id, None) is not None
        if network_id in await asyncio.to_thread(self.dataplane.present):
            had = True
            await asyncio.to_thread(self.dataplane.retire, network_id)
        if had:
            await self._plugin.release_dhcp_port(self.context, network_id=network_id,
                                    device_id=dhcp_device_id(network_id, self.host),
                                    host=self.host)
            await self.extensions.each("delete_network",
                                       lambda e: e.delete_network(network_id))


def main() -> None:
    run_agent(DhcpAgent)
