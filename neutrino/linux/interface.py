"""Interface drivers: a service port's device (a DHCP port's, say) in its namespace.

Both drivers make a veth pair: ``tap<port id[:11]>`` stays in the agent's
namespace, ``ns-<port id[:11]>`` (routers' ``qr-``/``qg-``) goes into the
service's namespace with the port's MAC and addresses. Every method
converges (may_exist / if_exists), so a reconciler calls them blindly.

- ``linuxbridge``: the Linux bridge L2 agent finds the tap as it finds an
  instance's and plugs it into the network's bridge.
- ``openvswitch``: the driver adds the tap to the integration bridge with
  ``external_ids`` ``iface-id`` (the port's id), ``attached-mac`` and
  ``iface-status=active``, as a hypervisor plugs an instance; the OVS L2 agent
  finds it by its ``iface-id`` and gives it its network's local VLAN. Until
  then it is on the dead VLAN (4095), as in Neutron: an untagged port would be
  a trunk of every network. Veth pairs, not internal ports moved into the
  namespace (Neutron's ``ovs_use_veth``): those break when ovs-vswitchd
  restarts (it makes a new device in its own namespace; docs/ovs-userspace.md,
  "Internal ports moved into a namespace"). On the userspace datapath
  (``datapath_type=netdev``) the namespace end sends with full checksums
  (``ethtool -K <dev> tx off``): OVS reads a veth as a packet socket and passes
  a partial checksum on as it is, and TCP or UDP (DHCP) would be dropped
  ("veth checksums" there). One OVSDB connection per driver, made when first
  needed.

A new ``ns-`` device is told, before it comes up, to skip IPv6 duplicate
address detection (its addresses are the server's, unique by allocation; with
DAD a new address is unusable for a second or more, and dnsmasq cannot bind to
it) and to ignore router advertisements (a service port's addresses are the
server's; Neutron's DHCP agent turns them off too).
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from typing import TYPE_CHECKING

from neutrino.config import Config, Opt, OptGroup
from neutrino.linux.ip import IpNetns, set_ipv6_conf
from neutrino.linux.names import NS, device_name, tap_name, tap_of
from neutrino.linux.ovs_names import DEAD_VLAN, DEFAULT_OVSDB

if TYPE_CHECKING:
    from neutrino.linux.ovs import Ovsdb

LOG = logging.getLogger(__name__)

#: the drivers ``interface_driver`` may name
SUPPORTED = ("linuxbridge", "openvswitch")
#: Neutron's class paths for them, as Neutron's configuration files may give them
ALIASES = {"neutron.agent.linux.interface.BridgeInterfaceDriver": "linuxbridge",
           "neutron.agent.linux.interface.OVSInterfaceDriver": "openvswitch"}

#: the ``[ovs]`` options of agents with ``interface_driver = openvswitch``
OVS_OPTIONS = OptGroup("ovs", [
    Opt("integration_bridge", str, "br-int",
        "The OVS bridge the ports' taps go on (interface_driver = openvswitch)."),
    Opt("ovsdb_connection", str, DEFAULT_OVSDB,
        "Where ovsdb-server listens (interface_driver = openvswitch)."),
])


def _no_dad_no_ra(device: str, namespace: str) -> None:
    """Best effort: without it the device still works, once DAD is done."""
    try:
        set_ipv6_conf(namespace, device, accept_dad=0, accept_ra=0)
    except (OSError, subprocess.SubprocessError) as error:
        LOG.warning("%s in %s: IPv6 DAD and RAs left on: %s", device, namespace, error)


def parse_driver(text: str) -> str:
    """``interface_driver``: one of ``SUPPORTED`` (or Neutron's class path for
    it), or empty (no dataplane)."""
    value = ALIASES.get(text.strip(), text.strip())
    if value and value not in SUPPORTED:
        raise ValueError(f"must be one of {', '.join(SUPPORTED)}")
    return value


def make_driver(conf: Config, agent_namespace: str | None = None) -> InterfaceDriver:
    """The driver ``[DEFAULT] interface_driver`` names (set), from the agent's
    configuration (``[ovs]``: ``OVS_OPTIONS``)."""
    name = conf.DEFAULT.interface_driver
    if name == "openvswitch":
        return OvsInterfaceDriver(conf.ovs.integration_bridge, conf.ovs.ovsdb_connection,
                                  agent_namespace)
    if name == "linuxbridge":
        return LinuxBridgeInterfaceDriver(agent_namespace)
    raise ValueError(f"no interface driver {name!r}")


class InterfaceDriver:
    """Veth pairs between the agent's namespace (``agent_namespace``; None: the
    one it runs in) and service namespaces; a driver adds what its L2 agent
    needs to find the tap (``_attach``) and takes it away (``_detach``)."""

    def __init__(self, agent_namespace: str | None = None):
        self.agent_namespace = agent_namespace

    def plug(self, port_id: str, mac: str, mtu: int, namespace: str, prefix: str = NS) -> str:
        """The port's device (``prefix`` + 11 of its id) in ``namespace``, up with
        ``mac`` and ``mtu``, its tap up beside it; the device's name."""
        with IpNetns(self.agent_namespace) as host, IpNetns(namespace) as inside:
            return self.plug_with(host, inside, port_id, mac, mtu, prefix)

    def plug_with(self, host: IpNetns, inside: IpNetns, port_id: str, mac: str, mtu: int,
                  prefix: str = NS) -> str:
        """``plug`` through sockets the caller holds (``host``: the agent's
        namespace, ``inside``: the service's): opening one into a namespace
        costs more than the work, and a router plugs several devices."""
        assert inside.namespace is not None
        tap, device = tap_name(port_id), device_name(port_id, prefix)
        fresh = not inside.exists(device)
        if fresh:
            host.delete(tap)  # a pair left half-made
            host.add_veth(tap, device, peer_namespace=inside.namespace)
            _no_dad_no_ra(device, inside.namespace)
        inside.set(device, mac=mac, mtu=mtu, up=True)
        host.set(tap, mtu=mtu, up=True)
        self._attach(port_id, mac, device, inside.namespace, fresh)
        return device

    def _attach(self, port_id: str, mac: str, device: str, namespace: str,
                fresh: bool) -> None:
        """Make the pair of ``device`` (in ``namespace``; ``fresh``: just made)
        known to the L2 agent."""

    def _detach(self, device: str) -> None:
        """Undo ``_attach`` for the pair of ``device``, if it was done."""

    def set_addresses(self, device: str, cidrs: list[str], namespace: str) -> None:
        with IpNetns(namespace) as inside:
            inside.set_addresses(device, cidrs)

    def wait_usable(self, device: str, namespace: str, timeout: float = 10.0) -> None:
        """Until no address of the device is tentative (a device made before DAD
        was turned off for it, or by something else): a daemon binding to its
        addresses would fail until then."""
        deadline = time.monotonic() + timeout
        with IpNetns(namespace) as inside:
            while pending := inside.tentative(device):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{device} in {namespace}: duplicate address "
                                       f"detection not done for {', '.join(pending)}")
                time.sleep(0.05)

    def devices(self, namespace: str, prefixes: tuple[str, ...] = (NS,)) -> list[str]:
        """The devices this driver made in ``namespace`` (named with ``prefixes``)."""
        with IpNetns(namespace) as inside:
            return sorted(name for name in inside.links() if name.startswith(prefixes))

    def unplug(self, device: str, namespace: str) -> None:
        """Remove the pair (deleting one end takes the other)."""
        with IpNetns(namespace) as inside:
            self.unplug_with(inside, device)

    def unplug_with(self, inside: IpNetns, device: str) -> None:
        """``unplug`` through a socket the caller holds into the namespace."""
        self._detach(device)
        inside.delete(device)


class LinuxBridgeInterfaceDriver(InterfaceDriver):
    """The Linux bridge L2 agent plugs the taps, as it plugs instances' taps."""


class OvsInterfaceDriver(InterfaceDriver):
    """The taps on the integration bridge (``bridge``) of the ovsdb-server at
    ``ovsdb`` (an OVSDB remote: ``unix:/path/db.sock``, ``tcp:IP:PORT``)."""

    def __init__(self, bridge: str = "br-int", ovsdb: str = DEFAULT_OVSDB,
                 agent_namespace: str | None = None):
        super().__init__(agent_namespace)
        self.bridge = bridge
        self.ovsdb = ovsdb
        self._db: Ovsdb | None = None
        self._connecting = threading.Lock()  # agents plug from several threads

    @property
    def db(self) -> Ovsdb:
        with self._connecting:
            if self._db is None:
                # imported here: the ovs library pulls in eventlet where it is
                # installed, and agents plugging with linuxbridge never need it
                from neutrino.linux.ovs import Ovsdb
                self._db = Ovsdb(self.ovsdb)
            return self._db

    def close(self) -> None:
        with self._connecting:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _attach(self, port_id: str, mac: str, device: str, namespace: str,
                fresh: bool) -> None:
        """The tap on the bridge, last: a port on the bridge is a pair whose
        namespace end is ready (so a plug that failed half-way is done again)."""
        db, tap = self.db, tap_of(device)
        external_ids = {"iface-id": port_id, "attached-mac": mac, "iface-status": "active"}
        if fresh:
            # a row left by a pair that went: OVS would not open the new tap for it
            db.delete_port(tap)
        else:
            found = db.api.db_list("Interface", [tap], columns=["external_ids"],
                                   if_exists=True).execute(check_error=True)
            if found:
                if any(found[0]["external_ids"].get(k) != v for k, v in external_ids.items()):
                    db.ensure_port(self.bridge, tap, external_ids=external_ids)
                return
        if self.userspace():
            no_tx_checksum_offload(namespace, device)
        db.ensure_port(self.bridge, tap, tag=DEAD_VLAN, external_ids=external_ids)

    def _detach(self, device: str) -> None:
        self.db.delete_port(tap_of(device), self.bridge)

    def userspace(self) -> bool:
        """Whether the bridge is on OVS's userspace datapath (``netdev``)."""
        return self.db.api.db_get("Bridge", self.bridge, "datapath_type").execute(
            check_error=True) == "netdev"


def no_tx_checksum_offload(namespace: str, device: str) -> None:
    """The device's packets leave with full checksums (the kernel computes them)."""
    done = subprocess.run(["ip", "netns", "exec", namespace, "ethtool", "-K", device, "tx",
                           "off"], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise OSError(f"ethtool -K {device} tx off in {namespace}: "
                      f"{done.stderr.strip() or done.returncode}")
