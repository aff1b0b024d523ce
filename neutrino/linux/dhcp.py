"""The host side of a DHCP agent: per network, a namespace ``qdhcp-<network
id>``, the DHCP port's device there (the interface driver's), dnsmasq serving
the network's ports, and, for isolated networks, a metadata proxy.

``DhcpDataplane`` makes blocking calls (netlink, files, processes); the agent
(``neutrino.agents.dhcp``) decides what to serve and runs these in threads.
A network set up here is known by its directory under ``confs_dir``.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from typing import Any

from neutrino.linux import dnsmasq, interface, ip, metadata_proxy, process
from neutrino.linux.dnsmasq import Network
from neutrino.linux.metadata_proxy import METADATA_CIDR, METADATA_IP, METADATA_PORT

LOG = logging.getLogger(__name__)

NAMESPACE = "qdhcp-"


def namespace_name(network_id: str) -> str:
    return NAMESPACE + network_id


def _cidrs(network: Network, port: dict[str, Any]) -> list[str]:
    """The DHCP port's addresses on DHCP subnets, with their subnets' prefixes."""
    prefixes = {s["id"]: s["cidr"].split("/")[1] for s in dnsmasq.dhcp_subnets(network)}
    return sorted(f"{fixed['ip_address']}/{prefixes[fixed['subnet_id']]}"
                  for fixed in port["fixed_ips"] if fixed["subnet_id"] in prefixes)


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
