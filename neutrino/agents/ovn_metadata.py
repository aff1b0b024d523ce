"""``neutrino-ovn-metadata-agent``: metadata for ML2/OVN's instances, on every chassis.

With ``[ovn] ovn_metadata_enabled``, the server gives each network with a
DHCPv4 subnet a metadata port (a ``localport``, present on every chassis)
and DHCP gives instances a route to 169.254.169.254 through its address. On
each chassis this agent serves that port for the networks that have an
instance there: a namespace ``ovnmeta-<network id>`` with a veth on OVN's
bridge bound as the metadata port, and a metadata proxy in it
(``neutrino.linux.ovn_metadata``). The proxies send their requests to the
agent's UNIX socket; the agent finds the instance in the Southbound
database (the port of that network bound to a chassis whose addresses hold
the request's source; its ``neutron:device_id`` and ``neutron:project_id``)
and forwards the request to Nova, signed (``neutrino.metadata.handler``).

What it reads and where, as Neutron's OVN metadata agent does:

- the local Open vSwitch database (``[ovs] ovsdb_connection``): this chassis'
  name (``external_ids:system-id``) and OVN's bridge (``ovn-bridge``), where
  it plugs the veths;
- the Southbound database (``[ovn] ovn_sb_connection``): ``Port_Binding``
  rows, watched. A change marks its network dirty; ``sync`` compares the
  networks with a VIF bound here (and a metadata port) with the datapaths this
  agent has, and provisions or tears down the difference. Full resync at
  start, after a failure and every ``resync_interval``. A proxy that dies is
  heard of at once (``neutrino.agents.process_monitor``) and its network
  provisioned again.

It talks to no neutrino server and uses no message bus: it is alive for
``/v2.0/agents`` by writing ``SB_Global.nb_cfg`` into its chassis'
``Chassis_Private`` ``external_ids`` (``neutron:ovn-metadata-sb-cfg``) each
time that changes (the server bumps it and reads it back), beside its agent id
(``neutron:ovn-metadata-id``, derived from the chassis name: the same after a
restart, and the same as Neutron's agent would show).

What it does not do (yet): IPv6 metadata (fe80::a9fe:a9fe), metadata ports'
MTU (the instance's TCP MSS keeps answers within its MTU), several workers.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from neutrino import metrics
from neutrino.agents.base import NotConverged, converge_each, named
from neutrino.agents.cmd import main as run_agent
from neutrino.agents.metadata import MetadataAgent
from neutrino.agents.ovn_metadata_options import BINARY, OPTIONS
from neutrino.agents.process_monitor import ProcessMonitor
from neutrino.config import Config
from neutrino.linux import host_check
from neutrino.linux.errors import HostError
from neutrino.linux.ovn_metadata import Datapaths, MetadataPort, chassis_config
from neutrino.linux.ovs import Ovsdb
from neutrino.metadata.handler import InstanceFinder, MetadataHandler
from neutrino.ovn import names
from neutrino.ovn.ovsdb import SB_API, OvnDatabase, OvnUnavailable
from neutrino.rpc.bus import Bus

LOG = logging.getLogger(__name__)
T = TypeVar("T")

SB_TABLES = ("SB_Global", "Chassis", "Chassis_Private", "Port_Binding", "Datapath_Binding")
WATCHED = ("Port_Binding", "SB_Global", "Chassis_Private")
#: the dirty item that asks for the liveness keys to be checked
LIVENESS = ("liveness",)
#: Port_Binding types of instances' ports
VIF_TYPES = ("", "external", "virtual")
#: the daemon each datapath runs, as the process monitor names it
PROXY = "metadata proxy"
#: datapaths provisioned or torn down at once
CONCURRENCY = 4
#: Neutron's namespace for chassis names that are not UUIDs: the agent id is the
#: one Neutron's OVN metadata agent would show for the chassis
CHASSIS_ID_NAMESPACE = uuid.UUID("d34bf9f6-da32-4871-9af8-15a4626b41ab")


class Southbound(Protocol):
    """What the agent uses of the Southbound database (``OvnDatabase``)."""

    remote: str
    api: Any  # ovsdbapp's Southbound API: its commands, for ``transact``

    @property
    def connected(self) -> bool: ...

    def read(self, work: Callable[[Any], T]) -> T: ...

    def transact(self, commands: Iterable[Any], what: str) -> list[Any]: ...


class Host(Protocol):
    """What the agent does on the host (``neutrino.linux.ovn_metadata.Datapaths``)."""

    def present(self) -> set[str]: ...

    def provision(self, port: MetadataPort) -> None: ...

    def teardown(self, network_id: str) -> None: ...

    def proxy_pid(self, network_id: str) -> int | None: ...


# --- the Southbound rows, as plain data --------------------------------------------------

@dataclass(frozen=True)
class Binding:
    """A Port_Binding row, as much of it as the agent reads."""

    logical_port: str
    network_id: str | None
    type: str = ""
    chassis: str | None = None
    #: the words of ``mac``'s value that starts with a MAC: it, then the addresses
    addresses: tuple[str, ...] = ()
    external_ids: Mapping[str, str] = field(default_factory=dict)
    #: where a port being live-migrated is bound too
    additional_chassis: tuple[str, ...] = ()

    def bound_to(self, chassis: str) -> bool:
        return self.chassis == chassis or chassis in self.additional_chassis


def network_of(row: Any) -> str | None:
    """The network of a Port_Binding row (its datapath is ``neutron-<id>``)."""
    try:
        datapath = row.datapath
        if isinstance(datapath, list):
            datapath = datapath[0] if datapath else None
        return names.network_of_switch(datapath.external_ids.get("name", "")) \
            if datapath is not None else None
    except (AttributeError, IndexError):  # a row gone meanwhile: no datapath
        return None


def read_bindings(api: Any, network_id: str | None = None) -> list[Binding]:
    """The Port_Binding rows (of ``network_id`` only, if given) of the replica."""
    found = []
    for row in api.tables["Port_Binding"].rows.values():
        network = network_of(row)
        if network is None or (network_id is not None and network != network_id):
            continue
        found.append(Binding(
            logical_port=row.logical_port, network_id=network, type=row.type,
            chassis=row.chassis[0].name if row.chassis else None,
            addresses=mac_and_addresses(row.mac),
            external_ids=dict(row.external_ids),
            additional_chassis=tuple(c.name for c in getattr(row, "additional_chassis", ()))))
    return found


def mac_and_addresses(values: Iterable[str]) -> tuple[str, ...]:
    """The MAC and addresses of a ``mac`` column (``["fa:16:3e:.. 10.0.0.5",
    "unknown"]``: a port without port security is also ``unknown``)."""
    for value in values:
        words = value.split()
        if words and words[0].count(":") == 5:
            return tuple(words)
    return ()


# --- the pure core -----------------------------------------------------------------------

def metadata_port(binding: Binding) -> MetadataPort | None:
    """The namespace's view of a network's metadata port; None for another
    port, or one without a MAC or an IPv4 address (nothing to serve on)."""
    if binding.type != "localport" or binding.network_id is None or not binding.addresses:
        return None
    if binding.external_ids.get(names.DEVICE_OWNER, names.METADATA_OWNER) != names.METADATA_OWNER:
        return None
    cidrs = tuple(sorted(
        cidr for cidr in binding.external_ids.get(names.CIDRS, "").split()
        if "/" in cidr and ipaddress.ip_interface(cidr).version == 4))
    if not cidrs:
        return None
    return MetadataPort(binding.network_id, binding.logical_port, binding.addresses[0], cidrs)


def wanted_ports(bindings: Iterable[Binding], chassis: str) -> dict[str, MetadataPort]:
    """Network id -> its metadata port, for the networks with an instance's
    port bound to ``chassis``."""
    bindings = list(bindings)
    here = {b.network_id for b in bindings
            if b.bound_to(chassis) and b.type in VIF_TYPES and b.network_id}
    wanted = {}
    for binding in bindings:
        if binding.network_id in here and (port := metadata_port(binding)) is not None:
            wanted[port.network_id] = port
    return wanted


def plan(wanted: Mapping[str, MetadataPort], present: set[str], dirty: set[str] | None
         ) -> tuple[list[MetadataPort], list[str]]:
    """(datapaths to provision, networks to tear down): all of them when
    ``dirty`` is None (a full sync), else those of the ``dirty`` networks."""
    scope = set(wanted) | present if dirty is None else dirty
    provision = [wanted[network] for network in sorted(scope & set(wanted))]
    teardown = sorted((scope & present) - set(wanted))
    return provision, teardown


def ports_at(bindings: Iterable[Binding], network_id: str, address: str) -> list[dict[str, Any]]:
    """The ports of the network bound to a chassis with ``address``, as the
    metadata handler reads a port (``device_id``, ``project_id``)."""
    return [{"id": b.logical_port, "network_id": network_id,
             "device_id": b.external_ids.get(names.DEVICE_ID, ""),
             "project_id": b.external_ids.get(names.PROJECT, "")}
            for b in bindings
            if b.network_id == network_id and b.chassis and address in b.addresses[1:]]


def agent_id(chassis: str) -> str:
    """The agent's id: stable for a chassis, the one Neutron's would have."""
    try:
        chassis_uuid = uuid.UUID(chassis)
    except ValueError:
        chassis_uuid = uuid.uuid5(CHASSIS_ID_NAMESPACE, chassis)
    return str(uuid.uuid5(chassis_uuid, "metadata_agent"))


def liveness_keys(nb_cfg: int, external_ids: Mapping[str, str], own_id: str
                  ) -> dict[str, str]:
    """The ``Chassis_Private`` external_ids to write so that the server sees
    the agent alive (empty: they are so already)."""
    wanted = {names.METADATA_SB_CFG: str(nb_cfg), names.METADATA_ID: own_id}
    return {k: v for k, v in wanted.items() if external_ids.get(k) != v}


# --- the agent ---------------------------------------------------------------------------

class OvnMetadataAgent(MetadataAgent):
    """The metadata agent whose ports come from the Southbound database, and
    which runs the proxies of its chassis itself."""

    agent_type = names.METADATA_AGENT
    binary = BINARY
    uses_bus = False  # it reports through the Southbound database
    # MetadataAgent's is inferred as a tuple of one group
    option_groups = OPTIONS  # type: ignore[assignment]

    def __init__(self, conf: Config, bus: Bus):
        super().__init__(conf, bus)
        self.handler = MetadataHandler(InstanceFinder(self._southbound_ports), self.handler.nova)
        self.proxies_dir = os.path.join(os.path.abspath(conf.DEFAULT.state_path),
                                        "ovn-metadata-proxy")
        self.chassis = ""
        self.agent_id = ""
        self.sb: Southbound | None = None
        self.datapaths: Host | None = None
        self._closers: list[Any] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self._monitor = ProcessMonitor(self._proxy_ended)

    # --- wiring --------------------------------------------------------------------------

    def connect(self) -> None:
        """Reach the chassis' Open vSwitch (its name and bridge; HostError if it
        cannot be read) and start reaching the Southbound database."""
        ovsdb = Ovsdb(self.conf.ovs.ovsdb_connection)
        self._closers.append(ovsdb.close)
        chassis, bridge = chassis_config(ovsdb)
        if chassis is None:
            setting = self.conf.setting("ovs", "ovsdb_connection")
            raise HostError(f"the Open vSwitch database at {ovsdb.remote} ({setting}) names "
                            "no OVN chassis (Open_vSwitch external_ids:system-id): is "
                            "ovn-controller configured on this host?")
        options = self.conf.ovn
        sb = OvnDatabase(options.ovn_sb_connection, "OVN_Southbound", SB_API, tables=SB_TABLES,
                         timeout=options.ovsdb_connection_timeout, watched=WATCHED,
                         on_change=self._on_change, on_connect=self._on_connect)
        self.attach(chassis, sb, Datapaths(ovsdb, bridge, self.socket_path, self.proxies_dir))
        self._closers.append(sb.stop)
        sb.start()

    def attach(self, chassis: str, sb: Southbound, datapaths: Host) -> None:
        """The agent's chassis, Southbound database and host (tests give stand-ins)."""
        self.chassis = chassis
        self.agent_id = agent_id(chassis)
        self.sb = sb
        self.datapaths = datapaths

    def _southbound(self) -> Southbound:
        if self.sb is None:
            raise RuntimeError("the agent is not connected (connect or attach first)")
        return self.sb

    def _host(self) -> Host:
        if self.datapaths is None:
            raise RuntimeError("the agent is not connected (connect or attach first)")
        return self.datapaths

    def close(self) -> None:
        for close in reversed(self._closers):
            try:
                close()
            except Exception as error:  # noqa: BLE001 - closing: say it, go on
                LOG.warning("closing: %s", error)
        self._closers.clear()

    def host_needs(self) -> host_check.Needs:
        needs = super().host_needs()
        needs.tool(self.conf.setting("ovn", "ovn_sb_connection"), host_check.IP)
        needs.directories.append((self.proxies_dir, self.conf.source("DEFAULT", "state_path")))
        return needs

    def configurations(self) -> dict[str, Any]:
        return {**super().configurations(), "chassis_name": self.chassis,
                "ovn_sb_connection": self.conf.ovn.ovn_sb_connection}

    # --- events (on the database's thread) ---------------------------------------------

    def _soon(self, callback: Any, *args: Any) -> None:
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(callback, *args)

    def _on_connect(self) -> None:
        self._soon(self.request_full_sync)

    def _on_change(self, event: str, table: str, row: Any, old: Any) -> None:
        if table == "Port_Binding":
            network = network_of(row)
            if network is not None:
                self._soon(self.mark_dirty, ("network", network))
        elif table == "SB_Global" or (table == "Chassis_Private"
                                      and getattr(row, "name", None) == self.chassis):
            self._soon(self.mark_dirty, LIVENESS)

    def _proxy_ended(self, network_id: str, name: str) -> None:
        LOG.warning("network %s: its %s ended; starting it again", network_id, name)
        self.mark_dirty(("network", network_id))

    # --- the metadata handler's port lookups ---------------------------------------------

    async def _southbound_ports(self, filters: dict[str, Any]) -> list[dict[str, Any]]:
        """``get_ports`` for ``InstanceFinder``, answered from the Southbound
        replica: ports by network and address (OVN's proxies are per network;
        a router's ports are never asked for)."""
        networks = filters.get("network_id") or []
        addresses = (filters.get("fixed_ips") or {}).get("ip_address") or []

        def lookup(api: Any) -> list[dict[str, Any]]:
            return [port for network in networks
                    for port in ports_at(read_bindings(api, network), network, addresses[0])]

        if not networks or len(addresses) != 1:
            return []
        return await asyncio.to_thread(self._southbound().read, lookup)

    # --- reconcile -----------------------------------------------------------------------

    async def sync(self, full: bool, dirty: set[Any]) -> None:
        sb, host = self._southbound(), self._host()
        if not sb.connected:  # it says so itself, and its reconnection syncs
            raise NotConverged(f"the Southbound database at {sb.remote} is not "
                               "reached yet", logging.DEBUG)
        networks = None if full else named(dirty, "network")
        try:
            if full or LIVENESS in dirty:
                await asyncio.to_thread(self.report_liveness)
            if networks == set():
                return
            bindings = await asyncio.to_thread(sb.read, read_bindings)
        except OvnUnavailable as error:
            raise NotConverged(str(error), logging.WARNING) from error
        present = await asyncio.to_thread(host.present)
        provision, teardown = plan(wanted_ports(bindings, self.chassis), present, networks)
        by_network = {port.network_id: port for port in provision}
        limit = asyncio.Semaphore(CONCURRENCY)

        async def up(network: str) -> None:
            self._monitor.forget(network)  # what provisioning restarts is no death
            await asyncio.to_thread(host.provision, by_network[network])
            self._monitor.watch(network, {PROXY: await asyncio.to_thread(
                host.proxy_pid, network)})

        async def down(network: str) -> None:
            self._monitor.forget(network)
            await asyncio.to_thread(host.teardown, network)

        await converge_each(sorted(by_network), limit, up, "network")
        await converge_each(teardown, limit, down, "network")

    def report_liveness(self) -> None:
        """The chassis' ``Chassis_Private`` says the agent has seen the current
        ``nb_cfg``; nothing until ovn-controller has registered the chassis."""
        def read(api: Any) -> tuple[Any, int, dict[str, str]] | None:
            row = next((r for r in api.tables["Chassis_Private"].rows.values()
                        if r.name == self.chassis), None)
            top = next(iter(api.tables["SB_Global"].rows.values()), None)
            if row is None or top is None:
                return None
            return row.uuid, top.nb_cfg, dict(row.external_ids)

        sb = self._southbound()
        found = sb.read(read)
        if found is None:
            LOG.info("chassis %s not in the Southbound database yet (ovn-controller "
                     "registers it)", self.chassis)
            return
        row_uuid, nb_cfg, external_ids = found
        changes = liveness_keys(nb_cfg, external_ids, self.agent_id)
        if changes:
            sb.transact([sb.api.db_set("Chassis_Private", row_uuid, ("external_ids", changes))],
                        f"reporting the metadata agent of chassis {self.chassis}")

    # --- the loop: no bus, no state reports ----------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Serve the proxies and reconcile until ``stop`` is set."""
        self.loop = asyncio.get_running_loop()
        if self.sb is None:
            await asyncio.to_thread(self.connect)
        metrics_address = self._serve_metrics()
        self._wakeup.set()  # the first, full sync
        tasks = [asyncio.create_task(work()) for work in (
            self._reconcile, self._periodic_resync, self._listen)]
        LOG.info("%s on chassis %s started", self.agent_type, self.chassis)
        try:
            await stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._monitor.close()
            if metrics_address:
                metrics.unserve(metrics_address)
            await asyncio.to_thread(self.close)
            LOG.info("%s on chassis %s stopped", self.agent_type, self.chassis)


def main(argv: list[str] | None = None) -> None:
    run_agent(OvnMetadataAgent, argv)


if __name__ == "__main__":
    main()
