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
import logging
import os
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any

from neutrino.agents.base import Agent, converge_each, named
from neutrino.agents.cmd import main as run_agent
from neutrino.agents.process_monitor import ProcessMonitor
from neutrino.config import Config, Opt, OptGroup, int_range, parse_bool, parse_list
from neutrino.linux import dnsmasq, host_check, interface, ip, metadata_proxy, process
from neutrino.linux.dnsmasq import Network
from neutrino.linux.metadata_proxy import METADATA_CIDR, METADATA_IP, METADATA_PORT
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts import dhcp as contract
from neutrino.rpc.contracts.dhcp import DHCP_OWNER, DhcpPluginApi, dhcp_device_id

LOG = logging.getLogger(__name__)

NAMESPACE = "qdhcp-"


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
    interface.OVS_OPTIONS,
)


def namespace_name(network_id: str) -> str:
    return NAMESPACE + network_id


def _cidrs(network: Network, port: dict[str, Any]) -> list[str]:
    """The DHCP port's addresses on DHCP subnets, with their subnets' prefixes."""
    prefixes = {s["id"]: s["cidr"].split("/")[1] for s in dnsmasq.dhcp_subnets(network)}
    return sorted(f"{fixed['ip_address']}/{prefixes[fixed['subnet_id']]}"
                  for fixed in port["fixed_ips"] if fixed["subnet_id"] in prefixes)


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


class DhcpDataplane:
    """The host side of serving networks: blocking calls (netlink, files,
    processes), which the agent runs in threads."""

    def __init__(self, confs_dir: str, settings: dnsmasq.Settings,
                 driver: interface.InterfaceDriver,
                 metadata_socket: str | None = None):
        """``metadata_socket``: the metadata agent's socket, when isolated
        networks get metadata here (None: they do not)."""
        self.confs_dir = confs_dir
        self.settings = settings
        self.driver = driver
        self.metadata_socket = metadata_socket

    def conf_dir(self, network_id: str) -> str:
        return os.path.join(self.confs_dir, network_id)

    def present(self) -> set[str]:
        """The networks set up here (even partly): those with a directory."""
        try:
            return {name for name in os.listdir(self.confs_dir)
                    if os.path.isdir(self.conf_dir(name))}
        except FileNotFoundError:
            return set()

    def serve(self, network: Network, port: dict[str, Any]) -> None:
        """Make the namespace, the port's device and dnsmasq match ``network``
        (whose ports include ``port``, the DHCP port): new files are a SIGHUP,
        a new command line a restart, nothing new nothing at all."""
        conf_dir = self.conf_dir(network["id"])
        dnsmasq.make_conf_dir(conf_dir)  # first: it is how a network is known here
        namespace = namespace_name(network["id"])
        ip.add_namespace(namespace)
        with ip.IpNetns(namespace) as inside:
            inside.set("lo", up=True)
        device = self.driver.plug(port["id"], port["mac_address"], network.get("mtu") or 1500,
                                  namespace)
        routes = dnsmasq.metadata_routes(network, port) if self.metadata_socket else {}
        self._set_addresses(device, _cidrs(network, port), bool(routes), namespace)
        for other in self.driver.devices(namespace):
            if other != device:  # an earlier DHCP port's
                self.driver.unplug(other, namespace)
        changed = dnsmasq.write_files(conf_dir, dnsmasq.files(network, self.settings, routes))
        argv = dnsmasq.command(network, device, conf_dir, self.settings)
        daemon = dnsmasq.Dnsmasq(conf_dir, namespace)
        running = daemon.argv()
        if running is None:
            LOG.info("network %s: starting dnsmasq", network["id"])
            self.driver.wait_usable(device, namespace)
            daemon.start(argv)
        elif running != argv:
            LOG.info("network %s: its subnets or routers changed, restarting dnsmasq",
                     network["id"])
            self.driver.wait_usable(device, namespace)
            daemon.restart(argv)
        elif changed:
            LOG.debug("network %s: ports changed, dnsmasq reloads", network["id"])
            daemon.reload()
        self._metadata(network["id"], bool(routes))

    def _set_addresses(self, device: str, cidrs: list[str], metadata: bool,
                       namespace: str) -> None:
        """The port's addresses, and 169.254.169.254 while metadata is served
        (kept by ``set_addresses`` as a link-local address: removed here)."""
        self.driver.set_addresses(device, [*cidrs, *([METADATA_CIDR] if metadata else [])],
                                  namespace)
        if not metadata:
            with ip.IpNetns(namespace) as inside:
                present = METADATA_CIDR in inside.addresses(device)
            if present:
                subprocess.run(["ip", "-n", namespace, "addr", "del", METADATA_CIDR, "dev",
                                device], check=True, capture_output=True, timeout=10)

    def _metadata(self, network_id: str, wanted: bool) -> None:
        """The network's metadata proxy running (started again if it died) or not."""
        conf_dir = self.conf_dir(network_id)
        if not wanted:
            if metadata_proxy.proxy_pid(conf_dir) is not None:
                LOG.info("network %s: a router serves its metadata now, or nothing does: "
                         "stopping the metadata proxy", network_id)
            metadata_proxy.stop_proxy(conf_dir)
            return
        assert self.metadata_socket is not None
        metadata_proxy.start_proxy(namespace_name(network_id), METADATA_PORT,
                                   metadata_proxy.NETWORK_HEADER, network_id,
                                   self.metadata_socket, conf_dir, listen_host=METADATA_IP)

    def daemons(self, network_id: str) -> dict[str, int | None]:
        """The network's daemons that should run (dnsmasq once it is set up
        here, the metadata proxy once started and not stopped since), by name:
        their pid, or None for one that does not run."""
        conf_dir = self.conf_dir(network_id)
        if not os.path.isdir(conf_dir):
            return {}
        found = {"dnsmasq": dnsmasq.Dnsmasq(conf_dir, namespace_name(network_id)).pid()}
        if os.path.exists(os.path.join(conf_dir, metadata_proxy.PID)):
            found["metadata proxy"] = metadata_proxy.proxy_pid(conf_dir)
        return found

    def dead(self, network_ids: list[str]) -> list[str]:
        """Those of ``network_ids`` (served here) whose dnsmasq or metadata proxy
        should run and does not."""
        return [network_id for network_id in network_ids
                if None in self.daemons(network_id).values()]

    def retire(self, network_id: str) -> None:
        """Take everything of the network away, whatever is left of it."""
        conf_dir = self.conf_dir(network_id)
        namespace = namespace_name(network_id)
        metadata_proxy.stop_proxy(conf_dir)
        dnsmasq.Dnsmasq(conf_dir, namespace).stop()
        if namespace in ip.namespaces():
            for device in self.driver.devices(namespace):
                self.driver.unplug(device, namespace)
            for pid in ip.namespace_pids(namespace):  # anything else we left there
                process.terminate(pid, 2.0)
            ip.delete_namespace(namespace)
        shutil.rmtree(conf_dir, ignore_errors=True)
        LOG.info("network %s: DHCP taken down", network_id)


class DhcpAgent(Agent):
    agent_type = "DHCP agent"
    binary = "neutrino-dhcp-agent"
    topic = contract.AGENT_TOPIC
    option_groups = OPTIONS

    def __init__(self, conf: Config, bus: Bus, agent_namespace: str | None = None):
        """``agent_namespace``: where the DHCP ports' taps go (None: where the agent
        runs; tests give a namespace standing in for the host)."""
        super().__init__(conf, bus)
        self._plugin = DhcpPluginApi.on(bus)
        #: the networks this agent serves, as the server gave them (with subnets, ports)
        self.networks: dict[str, dict[str, Any]] = {}
        #: network id -> the ports told ready (dhcp_ready_on_ports) since the agent started
        self._ready: dict[str, set[str]] = {}
        self._limit = asyncio.Semaphore(conf.DEFAULT.num_sync_threads)
        self._monitor = ProcessMonitor(self._daemon_ended)
        self.dataplane: DhcpDataplane | None = None
        if conf.DEFAULT.interface_driver:
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
        else:
            LOG.error("no interface_driver configured: this agent serves no network")

    def configurations(self) -> dict[str, Any]:
        nets = self.networks.values()
        return {"dhcp_driver": "dnsmasq", "networks": len(nets),
                "subnets": sum(len(net["subnets"]) for net in nets),
                "ports": sum(len(net["ports"]) for net in nets),
                "enable_isolated_metadata": self.conf.dhcp.enable_isolated_metadata}

    def endpoints(self) -> list[Any]:
        return [DhcpNotifications(self)]

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

    def background(self) -> list[Callable[[], Awaitable[None]]]:
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
            self.networks = {net["id"]: net for net in found}
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

    async def _dhcp_port(self, network: Network) -> dict[str, Any] | None:
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

    async def _serve(self, network: Network) -> None:
        assert self.dataplane is not None
        port = await self._dhcp_port(network)
        if port is None:
            LOG.info("network %s went away while its DHCP port was made", network["id"])
            return
        view = {**network, "ports": [*(p for p in network["ports"] if p["id"] != port["id"]),
                                     port]}
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


def main() -> None:
    run_agent(DhcpAgent)
