"""The host side of ``neutrino-ovn-metadata-agent``: one network's metadata datapath.

For a network with instances on this chassis (``provision``):

- namespace ``ovnmeta-<network id>``;
- a veth pair: ``tap<id[:10]>0`` in the agent's namespace, on the OVN bridge
  with ``external_ids:iface-id`` = the network's metadata port (a
  ``localport``: ovn-controller delivers to it on this chassis what this
  chassis' instances send to its address), and ``tap<id[:10]>1`` in the
  namespace with the port's MAC, its addresses and 169.254.169.254/32 (the
  names are Neutron's, so that a host moved from Neutron keeps them);
- a metadata proxy in the namespace on 169.254.169.254:80 that adds
  ``X-Neutron-Network-ID`` and forwards to the agent's UNIX socket
  (``neutrino.linux.metadata_proxy``).

``teardown`` removes all of it. Every step converges (a half-made datapath is
completed, a missing piece skipped), so the agent calls them blindly.

What is this agent's: named namespaces are the host's, shared by whatever runs
on it (several emulated chassis on one test host, a DHCP agent's
``qdhcp-``...), so ``present`` trusts only what it marked itself: the OVS
ports carrying ``MARK`` in its bridge's database and the proxies' state
directories under its ``state_dir``; a namespace is never taken for ours by its
name alone.

On OVS's userspace datapath (``datapath_type=netdev``) the namespace end sends
full checksums (``ethtool -K tx off``): OVS passes a veth's partial checksums
on unfinished and the instance would drop the answers (docs/ovs-userspace.md).
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from neutrino.linux import ip
from neutrino.linux.interface import no_tx_checksum_offload
from neutrino.linux.ip import IpNetns
from neutrino.linux.metadata_proxy import (
    METADATA_CIDR,
    METADATA_IP,
    METADATA_PORT,
    NETWORK_HEADER,
    proxy_pid,
    start_proxy,
    stop_proxy,
)

if TYPE_CHECKING:
    from neutrino.linux.ovs import Ovsdb

LOG = logging.getLogger(__name__)

NAMESPACE_PREFIX = "ovnmeta-"
#: the ``external_ids`` key of the OVS interfaces this agent made: their network
MARK = "neutrino-ovn-metadata"
#: the OVS bridge OVN uses when ``external_ids:ovn-bridge`` does not say
DEFAULT_BRIDGE = "br-int"


@dataclass(frozen=True)
class MetadataPort:
    """A network's metadata port as the namespace needs it."""

    network_id: str
    #: the Logical_Switch_Port's name (the port's id): the veth's ``iface-id``
    logical_port: str
    mac: str
    #: its addresses with their prefix lengths (``10.0.0.2/24``)
    cidrs: tuple[str, ...]


def namespace(network_id: str) -> str:
    return NAMESPACE_PREFIX + network_id


def veth_names(network_id: str) -> tuple[str, str]:
    """(the end on the bridge, the end in the namespace)."""
    stem = f"tap{network_id[:10]}"
    return stem + "0", stem + "1"


def chassis_config(ovsdb: Ovsdb) -> tuple[str | None, str]:
    """This chassis' name (``Open_vSwitch`` ``external_ids:system-id``, None
    when unset: ovn-controller is not configured) and OVN's bridge."""
    ids = ovsdb.api.db_get("Open_vSwitch", ".", "external_ids").execute(check_error=True)
    return ids.get("system-id") or None, ids.get("ovn-bridge") or DEFAULT_BRIDGE


class Datapaths:
    """The metadata datapaths of this agent: namespaces, veths and proxies.

    ``socket_path``: where the proxies send requests (the agent's UNIX socket);
    ``state_dir``: one directory per network for its proxy's pid and log."""

    def __init__(self, ovsdb: Ovsdb, bridge: str, socket_path: str, state_dir: str):
        self.ovsdb = ovsdb
        self.bridge = bridge
        self.socket_path = socket_path
        self.state_dir = state_dir

    def proxy_dir(self, network_id: str) -> str:
        return os.path.join(self.state_dir, network_id)

    def present(self) -> set[str]:
        """The networks this agent has (part of) a datapath for."""
        marked = {row["external_ids"][MARK] for row in self.ovsdb.interfaces().values()
                  if MARK in row["external_ids"]}
        try:
            kept = {name for name in os.listdir(self.state_dir)
                    if os.path.isdir(os.path.join(self.state_dir, name))}
        except FileNotFoundError:
            kept = set()
        return marked | kept

    def provision(self, port: MetadataPort) -> None:
        """The network's datapath as ``port`` says, its proxy running."""
        network_id = port.network_id
        name = namespace(network_id)
        outside, inside = veth_names(network_id)
        # ours from the first step on: a failure half-way is completed, or undone
        os.makedirs(self.proxy_dir(network_id), exist_ok=True)
        ip.add_namespace(name)
        with IpNetns(None) as host, IpNetns(name) as inner:
            if not inner.exists(inside):
                host.delete(outside)  # the other half of a pair left half-made
                host.add_veth(outside, inside, peer_namespace=name)
                LOG.info("network %s: metadata veth %s/%s made", network_id, outside, inside)
            inner.set("lo", up=True)
            inner.set(inside, mac=port.mac, up=True)
            host.set(outside, up=True)
            inner.set_addresses(inside, [*port.cidrs, METADATA_CIDR])
        if self._userspace():
            no_tx_checksum_offload(name, inside)
        wanted = {"iface-id": port.logical_port, MARK: network_id}
        row = self.ovsdb.interfaces().get(outside)
        if (row is None or outside not in self.ovsdb.ports(self.bridge)
                or any(row["external_ids"].get(k) != v for k, v in wanted.items())):
            self.ovsdb.ensure_port(self.bridge, outside, external_ids=wanted)
        start_proxy(name, METADATA_PORT, NETWORK_HEADER, network_id, self.socket_path,
                    self.proxy_dir(network_id), listen_host=METADATA_IP)

    def proxy_pid(self, network_id: str) -> int | None:
        """The pid of the network's proxy, None if none runs."""
        return proxy_pid(self.proxy_dir(network_id))

    def teardown(self, network_id: str) -> None:
        """Nothing of the network's datapath left."""
        outside, _ = veth_names(network_id)
        state = self.proxy_dir(network_id)
        stop_proxy(state)
        self.ovsdb.delete_port(outside)
        with IpNetns(None) as host:
            host.delete(outside)  # takes the namespace's end with it
        ip.delete_namespace(namespace(network_id))
        shutil.rmtree(state, ignore_errors=True)
        LOG.info("network %s: metadata datapath removed", network_id)

    def _userspace(self) -> bool:
        return self.ovsdb.api.db_get("Bridge", self.bridge, "datapath_type").execute(
            check_error=True) == "netdev"
