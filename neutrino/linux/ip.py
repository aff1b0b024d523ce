"""Links, addresses, routes, neighbours and bridge FDB entries, over netlink.

One ``IpNetns`` holds one netlink socket (pyroute2) into one network
namespace (``None``: the agent's own) and is reused for every call: no process
per command on the agents' hot paths. Names are the kernel's (``IFNAMSIZ``:
15 characters). Methods that remove things tolerate their absence, so that a
reconciler can call them without looking first.
"""

from __future__ import annotations

import builtins
import errno
import ipaddress
import logging
import os
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pyroute2.config
from pyroute2 import IPRoute, NetlinkError, NetNS, netns
from pyroute2.netlink.rtnl import RTMGRP_LINK

from neutrino.linux.errors import HostError

LOG = logging.getLogger(__name__)

# pyroute2 forks a helper to open a socket in (or create) a named namespace and
# stops it with SIGTERM; the helper inherits asyncio's signal wakeup fd, so
# without this the agent's loop takes the helper's SIGTERM for its own, and stops.
pyroute2.config.disable_mp_signal = True

#: the most characters a link name may have
IFNAMSIZ = 15
#: the all-zero MAC: an FDB entry with it floods (broadcast, unknown unicast)
FLOOD_MAC = "00:00:00:00:00:00"
VXLAN_PORT = 4789
SYSFS = "/sys/class/net"
#: address flags (``ifa_flags``): duplicate address detection still running, or failed
IFA_F_DADFAILED = 0x08
IFA_F_TENTATIVE = 0x40
#: the routing table ``ip route`` shows by default
MAIN_TABLE = 254


@dataclass(frozen=True)
class Link:
    name: str
    index: int
    kind: str | None  # bridge, veth, vxlan, ... or None for a plain device
    master: int | None  # the index of the bridge it is plugged into
    mac: str
    mtu: int
    up: bool  # administratively


def namespaces() -> list[str]:
    return netns.listnetns()


def add_namespace(name: str) -> None:
    if name not in netns.listnetns():
        netns.create(name)


def delete_namespace(name: str) -> None:
    if name in netns.listnetns():
        netns.remove(name)


def namespace_pids(name: str) -> list[int]:
    """The processes whose network namespace is the named one (what must go
    before the namespace can be gone for good)."""
    try:
        wanted = os.stat(os.path.join("/run/netns", name))
    except OSError:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            seen = os.stat(f"/proc/{entry}/ns/net")
        except OSError:
            continue
        if (seen.st_dev, seen.st_ino) == (wanted.st_dev, wanted.st_ino):
            found.append(int(entry))
    return sorted(found)


def set_ipv6_conf(namespace: str | None, device: str, **values: int) -> None:
    """Set ``net.ipv6.conf.<device>.<name>`` sysctls. /proc/sys/net shows the
    namespace of the process reading it, so another namespace's are written by
    ``sysctl`` run inside it (``ip netns exec``)."""
    if "." in device or "/" in device:
        raise ValueError(f"no sysctl path for a device named {device!r}")
    if namespace is None:
        for name, value in values.items():
            with open(f"/proc/sys/net/ipv6/conf/{device}/{name}", "w", encoding="ascii") as f:
                f.write(str(value))
        return
    settings = [f"net.ipv6.conf.{device}.{name}={value}" for name, value in values.items()]
    done = subprocess.run(["ip", "netns", "exec", namespace, "sysctl", "-q", "-w", *settings],
                          capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise OSError(f"sysctl in {namespace}: {done.stderr.strip() or done.returncode}")


def _link_local(cidr: str) -> bool:
    return ipaddress.ip_interface(cidr).ip.is_link_local


def _missing(error: NetlinkError) -> bool:
    return error.code in (errno.ENODEV, errno.ENOENT, errno.ESRCH, errno.EADDRNOTAVAIL)


class NoSuchDevice(HostError, LookupError):
    """The link is not there (any more): not found by name, or removed between
    finding it and using it (the kernel's ENODEV). Another agent may remove a
    device a moment before this one touches it; where the device was to go
    anyway, that is the desired state, and the caller treats it so."""


@contextmanager
def _on(name: str, namespace: str | None) -> Iterator[None]:
    """ENODEV from the kernel while working on ``name``: ``NoSuchDevice``."""
    try:
        yield
    except NetlinkError as error:
        if error.code == errno.ENODEV:
            raise NoSuchDevice(f"no link {name} in namespace {namespace or '(own)'} "
                               f"(gone meanwhile)") from error
        raise


class IpNetns:
    """The links of one network namespace, through one netlink socket."""

    def __init__(self, namespace: str | None = None):
        self.namespace = namespace
        self._ip: IPRoute = NetNS(namespace) if namespace else IPRoute()

    def close(self) -> None:
        self._ip.close()

    def __enter__(self) -> IpNetns:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- links ---------------------------------------------------------------------------

    def links(self) -> dict[str, Link]:
        found = {}
        for msg in self._ip.get_links():
            name = msg.get("ifname")
            found[name] = Link(name=name, index=msg["index"],
                               kind=msg.get_nested("IFLA_LINKINFO", "IFLA_INFO_KIND"),
                               master=msg.get("master"), mac=msg.get("address") or "",
                               mtu=msg.get("mtu") or 0, up=bool(msg["flags"] & 1))
        return found

    # Reads of the agent's own namespace come from sysfs: a netlink dump costs
    # pyroute2 about half a millisecond of parsing per link, a directory listing
    # next to nothing, and agents list links on every sync.

    def names(self) -> set[str]:
        """The names of the links."""
        if self.namespace is None:
            return set(os.listdir(SYSFS))
        return set(self.links())

    def master_of(self, name: str) -> str | None:
        """The bridge the link is plugged into, if any."""
        if self.namespace is None:
            try:
                return os.path.basename(os.readlink(f"{SYSFS}/{name}/master"))
            except OSError:
                return None
        links = self.links()
        link = links.get(name)
        return next((other.name for other in links.values()
                     if link is not None and other.index == link.master), None)

    def index(self, name: str) -> int | None:
        found = self._ip.link_lookup(ifname=name)
        return found[0] if found else None

    def _index(self, name: str) -> int:
        index = self.index(name)
        if index is None:
            raise NoSuchDevice(f"no link {name} in namespace {self.namespace or '(own)'}")
        return index

    def exists(self, name: str) -> bool:
        return self.index(name) is not None

    def add_bridge(self, name: str) -> None:
        """A bridge that forwards at once (no STP, no forwarding delay)."""
        if not self.exists(name):
            self._ip.link("add", ifname=name, kind="bridge", br_stp_state=0,
                          br_forward_delay=0)

    def add_veth(self, name: str, peer: str, peer_namespace: str | None = None) -> None:
        """A veth pair; the ``peer`` end moved into ``peer_namespace`` when given."""
        if self.exists(name):
            return
        self._ip.link("add", ifname=name, kind="veth", peer={"ifname": peer})
        if peer_namespace:
            self._ip.link("set", index=self._index(peer), net_ns_fd=peer_namespace)

    def add_vxlan(self, name: str, vni: int, local_ip: str, *, group: str | None = None,
                  device: str | None = None, port: int = VXLAN_PORT, ttl: int | None = None,
                  tos: int | None = None, learning: bool = False) -> None:
        """A VXLAN device: unicast (peers from FDB entries) unless ``group``."""
        if self.exists(name):
            return
        spec: dict[str, Any] = {"ifname": name, "kind": "vxlan", "vxlan_id": vni,
                                "vxlan_local": local_ip, "vxlan_port": port,
                                "vxlan_learning": int(learning)}
        if group:
            spec["vxlan_group"] = group
        if device:
            spec["vxlan_link"] = self._index(device)
        if ttl is not None:
            spec["vxlan_ttl"] = ttl
        if tos is not None:
            spec["vxlan_tos"] = tos
        self._ip.link("add", **spec)

    def add_vlan(self, name: str, parent: str, vlan_id: int) -> None:
        if not self.exists(name):
            self._ip.link("add", ifname=name, kind="vlan", link=self._index(parent),
                          vlan_id=vlan_id)

    def set(self, name: str, *, up: bool | None = None, mtu: int | None = None,
            master: str | None = None, mac: str | None = None) -> None:
        changes: dict[str, Any] = {}
        if mtu is not None:
            changes["mtu"] = mtu
        if master is not None:
            changes["master"] = self._index(master)
        if mac is not None:
            changes["address"] = mac
        if up is not None:
            changes["state"] = "up" if up else "down"
        if changes:
            with _on(name, self.namespace):
                self._ip.link("set", index=self._index(name), **changes)

    def rename(self, name: str, new_name: str) -> None:
        """Rename a link (taken down first, as the kernel requires)."""
        index = self._index(name)
        self._ip.link("set", index=index, state="down")
        self._ip.link("set", index=index, ifname=new_name)

    def unplug(self, name: str) -> None:
        """Take the link out of its bridge (a link that is gone is out of it)."""
        index = self.index(name)
        if index is None:
            return
        try:
            self._ip.link("set", index=index, master=0)
        except NetlinkError as error:
            if error.code != errno.ENODEV:
                raise

    def delete(self, name: str) -> None:
        index = self.index(name)
        if index is None:
            return
        try:
            self._ip.link("del", index=index)
        except NetlinkError as error:
            if not _missing(error):
                raise

    def bridge_ports(self, bridge: str) -> list[str]:
        if self.namespace is None:
            try:
                return sorted(os.listdir(f"{SYSFS}/{bridge}/brif"))
            except OSError:
                return []
        index = self.index(bridge)
        return sorted(link.name for link in self.links().values()
                      if index is not None and link.master == index)

    # --- addresses and routes ---------------------------------------------------------------

    def addresses(self, name: str) -> list[str]:
        """The link's addresses as ``address/prefixlen``."""
        with _on(name, self.namespace):
            return sorted(f"{msg.get('IFA_ADDRESS')}/{msg['prefixlen']}"
                          for msg in self._ip.get_addr(index=self._index(name)))

    def all_addresses(self, links: dict[str, Link] | None = None) -> dict[str, list[str]]:
        """Every link's addresses (``address/prefixlen``), by link name, in one
        dump: what a reconciler of many devices reads once (``links``: as just
        read, if so)."""
        names = {link.index: link.name for link in (links or self.links()).values()}
        found: dict[str, list[str]] = {name: [] for name in names.values()}
        for msg in self._ip.get_addr():
            name = names.get(msg["index"])
            if name is not None:
                found[name].append(f"{msg.get('IFA_ADDRESS')}/{msg['prefixlen']}")
        return {name: sorted(cidrs) for name, cidrs in found.items()}

    def tentative(self, name: str) -> list[str]:
        """The link's addresses not yet usable: IPv6 duplicate address detection
        still running (or failed). Binding to one fails until it is done."""
        pending = IFA_F_TENTATIVE | IFA_F_DADFAILED
        return sorted(f"{msg.get('IFA_ADDRESS')}/{msg['prefixlen']}"
                      for msg in self._ip.get_addr(index=self._index(name))
                      if (msg.get("IFA_FLAGS") or msg["flags"]) & pending)

    def set_addresses(self, name: str, wanted: list[str], have: list[str] | None = None
                      ) -> None:
        """Make the link's addresses exactly ``wanted`` (IPv6 link-local kept);
        ``have``: its addresses, when the caller has just read them."""
        current = set(self.addresses(name) if have is None else have)
        stale = sorted(c for c in current - set(wanted) if not _link_local(c))
        missing = [c for c in wanted if c not in current]
        self._change_addresses(name, stale, missing)

    def remove_addresses(self, name: str, stale: list[str]) -> None:
        """Those of ``stale`` (address/prefix) the link has, removed."""
        self._change_addresses(name, [c for c in self.addresses(name) if c in set(stale)], [])

    def _change_addresses(self, name: str, stale: list[str], missing: list[str]) -> None:
        if not stale and not missing:
            return
        index = self._index(name)
        with _on(name, self.namespace):
            for action, cidrs in (("del", stale), ("add", missing)):
                for cidr in cidrs:
                    address, prefix = cidr.split("/")
                    self._ip.addr(action, index=index, address=address, prefixlen=int(prefix))

    def replace_route(self, destination: str, gateway: str | None = None,
                      device: str | None = None) -> None:
        spec: dict[str, Any] = {"dst": destination}
        if gateway:
            spec["gateway"] = gateway
        if device:
            spec["oif"] = self._index(device)
        self._ip.route("replace", **spec)

    def gateway_routes(self) -> dict[str, str]:
        """The main table's routes through a gateway, IPv4 and IPv6, as
        ``destination/prefixlen -> gateway`` (what a router adds; the routes of
        its subnets the kernel adds with their addresses)."""
        found = {}
        for family, anywhere in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
            for msg in self._ip.get_routes(family=family, table=MAIN_TABLE):
                gateway = msg.get("RTA_GATEWAY")
                if gateway:
                    found[f"{msg.get('RTA_DST') or anywhere}/{msg['dst_len']}"] = gateway
        return found

    def delete_route(self, destination: str) -> None:
        try:
            self._ip.route("del", dst=destination, table=MAIN_TABLE)
        except NetlinkError as error:
            if not _missing(error):
                raise

    # --- neighbours and forwarding entries ------------------------------------------------------

    def fdb(self, name: str) -> builtins.set[tuple[str, str]]:
        """The (MAC, remote IP) entries of a VXLAN device."""
        index = self._index(name)
        return {(msg.get("NDA_LLADDR"), msg.get("NDA_DST"))
                for msg in self._ip.fdb("dump", ifindex=index)
                if msg["ifindex"] == index and msg.get("NDA_DST")}

    def fdb_add(self, name: str, mac: str, remote_ip: str) -> None:
        """Send frames for ``mac`` (the flood MAC: broadcasts too) to ``remote_ip``."""
        try:
            with _on(name, self.namespace):
                self._ip.fdb("append", ifindex=self._index(name), lladdr=mac, dst=remote_ip)
        except NetlinkError as error:
            if error.code != errno.EEXIST:
                raise

    def fdb_delete(self, name: str, mac: str, remote_ip: str) -> None:
        index = self.index(name)
        if index is None:
            return
        try:
            self._ip.fdb("del", ifindex=index, lladdr=mac, dst=remote_ip)
        except NetlinkError as error:
            if not _missing(error):
                raise

    def neigh_replace(self, name: str, ip: str, mac: str) -> None:
        """A permanent neighbour entry (ARP or NDP answered locally)."""
        self._ip.neigh("replace", ifindex=self._index(name), dst=ip, lladdr=mac,
                       state="permanent")

    def neigh_delete(self, name: str, ip: str) -> None:
        index = self.index(name)
        if index is None:
            return
        try:
            self._ip.neigh("del", ifindex=index, dst=ip)
        except NetlinkError as error:
            if not _missing(error):
                raise


def watch_links(prefix: str, changed: Callable[[str], object]) -> threading.Thread:
    """Call ``changed(name)`` (from a thread of its own) whenever a link whose
    name starts with ``prefix`` appears or disappears in this namespace: the
    kernel says so at once, where a scan would see it only at its next turn."""
    def watch() -> None:
        ip = IPRoute()
        try:
            ip.bind(groups=RTMGRP_LINK)
            known = {msg.get("ifname") for msg in ip.get_links()}
            while True:
                for msg in ip.get():
                    name = msg.get("ifname")
                    if not name or not name.startswith(prefix):
                        continue
                    if msg["event"] == "RTM_DELLINK":
                        known.discard(name)
                    elif name not in known:
                        known.add(name)
                    else:
                        continue  # a change of a link we know: not ours to report
                    changed(name)
        except Exception:
            LOG.exception("watching links stopped; the scans go on")
        finally:
            ip.close()

    thread = threading.Thread(target=watch, name="link-watch", daemon=True)
    thread.start()
    return thread
