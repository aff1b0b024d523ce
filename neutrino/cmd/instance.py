"""``neutrino-instance``: an instance without a hypervisor, for trying the
dataplane on one machine (root).

    neutrino-instance plug PORT_ID [--host HOST] [--host-netns NS] [--url URL]
                           [--ovs-db REMOTE [--ovs-bridge BRIDGE]]
    neutrino-instance unplug PORT_ID [--host-netns NS] [--ovs-db REMOTE [--ovs-bridge BRIDGE]]

``plug`` does what a hypervisor does: it binds the port to ``--host``
(``binding:host_id``); a port without a device becomes an instance's, as Nova
makes it (a ``device_id``, which the metadata service sends Nova as
``X-Instance-ID``, and, if it has no owner, ``device_owner =
compute:<--availability-zone>``); it makes a network namespace ``inst-<port
id[:11]>`` (the instance) with a veth whose outer end is the port's tap, ``tap<port
id[:11]>``, in the host's namespace (``--host-netns``, for a host emulated in
a namespace; the current one by default) and whose inner end, ``eth0``,
carries the port's MAC and its network's MTU; then it runs a DHCP client in
the instance and prints the address it got. The host's L2 agent finds the tap
and wires it.

On an Open vSwitch host (``--ovs-db``: its ovsdb-server's remote, as
``unix:/path/db.sock``) ``plug`` also adds the tap to the integration bridge
(``--ovs-bridge``, br-int), as Nova's os-vif does, with the Interface's
``external_ids`` the OVS agent looks for: ``iface-id`` (the port),
``attached-mac``, ``iface-status=active`` and ``vm-uuid`` (the device id, else
the port id); and it turns off transmit checksum offload on ``eth0``: OVS's
userspace datapath would forward the instance's TCP and UDP with partial
checksums, which the receiver drops (docs/ovs-userspace.md). ``unplug``
removes the port from the bridge (``--ovs-db`` again) before the rest.

A trunk's parent (a port with ``trunk_details``) is plugged as Nova plugs it:
into the trunk's own bridge, ``tbr-<trunk id[:11]>``, made on the spot with
the integration bridge's datapath type; the OVS agent patches it to br-int,
one patch per subport, and removes it once the instance's port has left it.
The instance sends the parent's traffic untagged and each subport's tagged
with its segmentation id: with no 8021q here for VLAN sub-interfaces, it is
a namespace per VLAN behind a VLAN-splitting OVS bridge (``instance_vlans``):
``inst-<parent id[:11]>`` untagged, ``inst-<subport id[:11]>`` for each
subport the trunk has at the plug, its eth0 with the subport's MAC (no
address: set one, or run a DHCP client there). ``unplug`` of the parent
removes them all.

A port with IPv6 addresses gets them too, after IPv4's DHCP, as a guest
would: on a SLAAC or DHCPv6-stateless subnet the kernel makes it from router
advertisements (eth0 accepts them; ``plug`` waits until the address is there
and usable), on any other IPv6 subnet a DHCPv6 client (ISC ``dhclient -6``)
asks for it. ``plug`` prints ``inst-<id>`` and the addresses, IPv4 first, then
IPv6 in the port's order. ``unplug`` removes the namespace (and so the tap),
unbinds the port and clears the device and owner ``plug`` gave it. Talks to
the API at ``--url`` (``--token`` for keystone).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyroute2 import NetlinkError

from neutrino import cli
from neutrino.cmd import instance_vlans
from neutrino.linux.ip import IpNetns, add_namespace, delete_namespace, set_ipv6_conf
from neutrino.linux.names import tap_name
from neutrino.rpc.contracts.trunk import trunk_bridge_name

#: applies what udhcpc got with ``ip`` (busybox's own script would rewrite the
#: machine's /etc/resolv.conf): the address, the router, and the classless
#: static routes (option 121, ``$staticroutes``: "destination gateway" pairs,
#: gateway 0.0.0.0 for on-link), which carry 169.254.169.254 on isolated networks
DHCP_SCRIPT = """#!/bin/sh
case "$1" in
  deconfig) ip -4 addr flush dev "$interface"; ip link set "$interface" up ;;
  bound|renew)
    ip -4 addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    [ -n "$router" ] && ip route replace default via "${router%% *}" dev "$interface"
    set -- $staticroutes
    while [ $# -ge 2 ]; do
      if [ "$2" = 0.0.0.0 ]; then ip route replace "$1" dev "$interface"
      else ip route replace "$1" via "$2" dev "$interface"; fi
      shift 2
    done
    echo "$ip" > "$NEUTRINO_LEASE_FILE" ;;
esac
exit 0
"""

#: applies what ``dhclient -6`` got with ``ip -6`` and records it; dhclient gives
#: its script no environment of ours, so the lease file's path is written in
DHCP6_SCRIPT = """#!/bin/sh
case "$reason" in
  BOUND6|RENEW6|REBIND6|REBOOT6)
    ip -6 addr replace "$new_ip6_address/$new_ip6_prefixlen" dev "$interface"
    echo "$new_ip6_address" >> '{lease}' ;;
esac
exit 0
"""
#: address modes whose addresses the kernel makes from router advertisements
AUTO_ADDRESS_MODES = ("slaac", "dhcpv6-stateless")
#: the instance ids ``plug`` makes are UUIDs named by the port's id in this space
INSTANCE_IDS = uuid.UUID("6f1c2a4e-93d5-4b8e-a0f7-2c51e8d9b364")
#: Nova's default availability zone, in ``device_owner = compute:<zone>``
DEFAULT_ZONE = "nova"


class ApiError(Exception):
    pass


class OvsError(Exception):
    """ovs-vsctl failed, or OVS could not open the tap."""


@dataclass(frozen=True)
class Ovs:
    """The integration bridge of an Open vSwitch host, through its ovsdb-server
    (``db``: an OVSDB remote, ``unix:/path/db.sock`` or ``tcp:IP:PORT``)."""

    db: str
    bridge: str = "br-int"

    def vsctl(self, *args: str) -> str:
        try:
            done = subprocess.run(["ovs-vsctl", f"--db={self.db}", "--timeout=10", *args],
                                  capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            raise OvsError(f"ovs-vsctl --db={self.db}: no answer") from None
        if done.returncode != 0:
            raise OvsError(f"ovs-vsctl {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout.strip()

    def attach(self, port: dict[str, Any]) -> None:
        """The port's tap (already in the host's namespace) on the bridge (a
        trunk parent's: on its trunk's bridge, made with the bridge's datapath
        type, in the same transaction), with the external_ids that tell the
        agent which port it is. ovs-vsctl waits until ovs-vswitchd has taken it:
        then its ``error`` column says whether it could open the tap (the
        command succeeds regardless)."""
        tap, bridge = tap_name(port["id"]), self.bridge
        make_bridge: list[str] = []
        trunk = port.get("trunk_details")
        if trunk:
            bridge = trunk_bridge_name(trunk["trunk_id"])
            datapath = self.vsctl("get", "Bridge", self.bridge, "datapath_type").strip('"')
            make_bridge = ["--may-exist", "add-br", bridge, "--", "set", "Bridge", bridge,
                           f"datapath_type={datapath or 'system'}", "--"]
        self.vsctl(*make_bridge, "--may-exist", "add-port", bridge, tap, "--", "set",
                   "Interface", tap,
                   f"external_ids:iface-id={port['id']}",
                   f"external_ids:attached-mac={port['mac_address']}",
                   "external_ids:iface-status=active",
                   f"external_ids:vm-uuid={port.get('device_id') or port['id']}")
        error = self.vsctl("get", "Interface", tap, "error")
        if error not in ("[]", '""'):
            raise OvsError(f"{tap} on {bridge}: {error}")

    def detach(self, port_id: str) -> None:
        """The tap off whichever bridge holds it (a trunk parent's is not on br-int)."""
        self.vsctl("--if-exists", "del-port", tap_name(port_id))


class Api:
    def __init__(self, url: str, token: str | None):
        self.url = url.rstrip("/")
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            self.headers["X-Auth-Token"] = token

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            raise ApiError(f"{method} {path}: {error.code} {error.read().decode()}") from None
        except urllib.error.URLError as error:
            raise ApiError(f"cannot reach {self.url}: {error.reason}") from None
        return json.loads(text) if text else None


def instance_namespace(port_id: str) -> str:
    return f"inst-{port_id[:11]}"


def instance_id(port_id: str) -> str:
    """The id of the instance ``plug`` makes for a port without a device: made
    from the port's id, so that ``unplug`` knows it set it."""
    return str(uuid.uuid5(INSTANCE_IDS, port_id))


def plug_changes(port: dict[str, Any], host: str, zone: str) -> dict[str, Any]:
    """What ``plug`` changes on the port, as Nova does: the binding to ``host``
    and, if the port has no device, an instance's ``device_id`` (which the
    metadata service sends Nova as X-Instance-ID) and, if it has no owner,
    ``device_owner = compute:<zone>``."""
    changes: dict[str, Any] = {}
    if port.get("binding:host_id") != host:
        changes["binding:host_id"] = host
    if not port.get("device_id"):
        changes["device_id"] = instance_id(port["id"])
        if not port.get("device_owner"):
            changes["device_owner"] = f"compute:{zone}"
    return changes


def unplug_changes(port: dict[str, Any]) -> dict[str, Any]:
    """What ``unplug`` changes back: the binding, and the device and owner if
    ``plug`` set them (a device_id of its own making), as Nova clears them."""
    changes: dict[str, Any] = {"binding:host_id": ""}
    if port.get("device_id") == instance_id(port["id"]):
        changes["device_id"] = ""
        if str(port.get("device_owner", "")).startswith("compute:"):
            changes["device_owner"] = ""
    return changes


def plug(api: Api, port_id: str, host: str, host_netns: str | None, dhcp: bool,
         timeout: int, ovs: Ovs | None = None, zone: str = DEFAULT_ZONE) -> list[str]:
    """Bind, make the instance, wire its veth (onto ``ovs``'s bridge, on an
    Open vSwitch host); the addresses DHCP (and, for IPv6, router
    advertisements) gave: IPv4 first. None asked: none."""
    port = api.call("GET", f"/v2.0/ports/{port_id}")["port"]
    network = api.call("GET", f"/v2.0/networks/{port['network_id']}")["network"]
    changes = plug_changes(port, host, zone)
    if changes:
        port = api.call("PUT", f"/v2.0/ports/{port_id}", {"port": changes})["port"]
    fixed = port.get("fixed_ips") or []
    v6 = [ip for ip in fixed if ":" in ip["ip_address"]]
    namespace = instance_namespace(port_id)
    make_instance(port, network.get("mtu") or None, host_netns, ipv6=bool(v6 and dhcp),
                  ovs=ovs)
    if not dhcp:
        return []
    got = []
    if len(v6) < len(fixed) or not v6:  # IPv4 to ask for (or nothing known: as ever)
        address = dhcp_client(namespace, timeout)
        if address is None:
            raise NoAddress(f"{namespace} got no address by DHCP")
        got.append(address)
    return got + ipv6_addresses(api, namespace, v6, timeout)


def make_instance(port: dict[str, Any], mtu: int | None, host_netns: str | None,
                  ipv6: bool = False, ovs: Ovs | None = None) -> None:
    """The instance's namespace, its eth0 up with the port's MAC (``port``: its
    ``id``, ``mac_address``, maybe ``device_id``), the tap beside it (on
    ``ovs``'s bridge, if given); with ``ipv6``, eth0 sure to take RAs and make
    EUI-64 addresses (a guest's defaults, which the server's SLAAC addresses
    assume)."""
    if ovs is not None and port.get("trunk_details"):
        _make_trunk_instance(port, mtu, host_netns, ipv6, ovs)
        return
    namespace = instance_namespace(port["id"])
    add_namespace(namespace)
    tap, inner = tap_name(port["id"]), f"i{port['id'][:11]}"
    with IpNetns(host_netns) as outside:
        outside.add_veth(tap, inner, peer_namespace=namespace)
        outside.set(tap, mtu=mtu, up=True)
    with IpNetns(namespace) as inside:
        if inside.exists(inner):
            inside.rename(inner, "eth0")
        inside.set("eth0", mac=port["mac_address"], mtu=mtu)
        if ipv6:
            set_ipv6_conf(namespace, "eth0", accept_ra=1, autoconf=1, use_tempaddr=0)
        inside.set("eth0", up=True)
        inside.set("lo", up=True)
    if ovs is not None:
        _no_tx_checksum_offload(namespace, "eth0")
        ovs.attach(port)


def _make_trunk_instance(port: dict[str, Any], mtu: int | None, host_netns: str | None,
                         ipv6: bool, ovs: Ovs) -> None:
    """A trunk parent's instance: a namespace per VLAN (``instance_vlans``), the
    tap on the trunk's bridge."""
    instance_vlans.split(ovs, port, mtu, host_netns)
    if ipv6:
        set_ipv6_conf(instance_namespace(port["id"]), "eth0", accept_ra=1, autoconf=1,
                      use_tempaddr=0)
    ovs.attach(port)


def _no_tx_checksum_offload(namespace: str, device: str) -> None:
    """The device's packets leave with full checksums (the kernel computes
    them): the userspace datapath reads a veth as a packet socket and passes a
    partial checksum on as it is."""
    done = subprocess.run(["ip", "netns", "exec", namespace, "ethtool", "-K", device, "tx",
                           "off"], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise OvsError(f"ethtool -K {device} tx off in {namespace}: {done.stderr.strip()}")


def dhcp_client(namespace: str, timeout: int) -> str | None:
    """One DHCP exchange on eth0; the IPv4 address it configured."""
    with tempfile.TemporaryDirectory(prefix="neutrino-instance-") as tmp:
        script, lease = Path(tmp) / "dhcp.sh", Path(tmp) / "lease"
        script.write_text(DHCP_SCRIPT)
        script.chmod(0o755)
        done = subprocess.run(
            ["ip", "netns", "exec", namespace, "udhcpc", "-i", "eth0", "-n", "-q", "-f",
             "-O", "staticroutes",
             "-t", str(max(1, timeout)), "-T", "1", "-A", "1", "-s", str(script)],
            env={**os.environ, "NEUTRINO_LEASE_FILE": str(lease)}, capture_output=True,
            text=True, timeout=timeout * 3 + 10)
        if done.returncode != 0 or not lease.exists():
            return None
        return lease.read_text().strip()


class NoAddress(Exception):
    """The instance did not get an address it should have."""


def ipv6_addresses(api: Api, namespace: str, fixed_ips: list[dict[str, Any]],
                   timeout: int) -> list[str]:
    """The port's IPv6 addresses on eth0, in the port's order: SLAAC ones waited
    for, the others asked for by DHCPv6."""
    if not fixed_ips:
        return []
    subnets = {ip["subnet_id"]: api.call("GET", f"/v2.0/subnets/{ip['subnet_id']}")["subnet"]
               for ip in fixed_ips}
    auto = {ip["ip_address"] for ip in fixed_ips if _auto_address(subnets[ip["subnet_id"]])}
    asked = [ip for ip in fixed_ips if ip["ip_address"] not in auto]
    deadline = time.monotonic() + timeout
    with IpNetns(namespace) as inside:
        got = set()
        if asked:
            prefix = min(int(subnets[ip["subnet_id"]]["cidr"].split("/")[1]) for ip in asked)
            got = dhcp6_client(inside, prefix, deadline)
        if not _wait_until(lambda: auto <= _usable(inside), deadline):
            raise NoAddress(f"{namespace} got no SLAAC address {', '.join(sorted(auto))} "
                            "from router advertisements")
    missing = [ip["ip_address"] for ip in asked if ip["ip_address"] not in got]
    if missing:
        raise NoAddress(f"{namespace} got no address {', '.join(missing)} by DHCPv6")
    return [ip["ip_address"] for ip in fixed_ips]


def _auto_address(subnet: dict[str, Any]) -> bool:
    """Whether the kernel makes the subnet's address from RAs (by either mode, as
    the server chose the EUI-64 address)."""
    return (subnet.get("ipv6_address_mode") in AUTO_ADDRESS_MODES
            or subnet.get("ipv6_ra_mode") in AUTO_ADDRESS_MODES)


def _usable(inside: IpNetns) -> set[str]:
    """eth0's addresses that are done with duplicate address detection."""
    pending = set(inside.tentative("eth0"))
    return {cidr.split("/")[0] for cidr in inside.addresses("eth0") if cidr not in pending}


def _wait_until(check: Callable[[], bool], deadline: float) -> bool:
    """Poll ``check`` until it holds or ``deadline`` (monotonic) passes; whether it held."""
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def dhcp6_client(inside: IpNetns, prefix: int, deadline: float) -> set[str]:
    """A DHCPv6 exchange on eth0 (a DUID from its MAC: dnsmasq's hosts lines are
    by MAC), stopped once it has an address; the addresses it configured."""
    def link_local() -> bool:
        return any(address.startswith("fe80:") for address in _usable(inside))

    if shutil.which("dhclient") is None:
        raise NoAddress("DHCPv6 needs dhclient (Debian: isc-dhcp-client)")
    if not _wait_until(link_local, deadline):
        return set()  # dhclient cannot bind before the link-local address is usable
    with tempfile.TemporaryDirectory(prefix="neutrino-instance-") as tmp:
        script, lease = Path(tmp) / "dhcp6.sh", Path(tmp) / "lease6"
        script.write_text(DHCP6_SCRIPT.format(lease=lease))
        script.chmod(0o755)
        client = subprocess.Popen(
            ["ip", "netns", "exec", str(inside.namespace), "dhclient", "-6", "-d", "-D", "LL",
             "--address-prefix-len", str(prefix), "-lf", f"{tmp}/dhclient.leases",
             "-pf", f"{tmp}/dhclient.pid", "-sf", str(script), "eth0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_until(lambda: lease.exists() or client.poll() is not None, deadline)
        finally:
            client.kill()  # no release: the lease stays, as a guest's would
            client.wait()
        return set(lease.read_text().split()) if lease.exists() else set()


def unplug(api: Api | None, port_id: str, host_netns: str | None,
           ovs: Ovs | None = None) -> None:
    """Remove the instance (its port from ``ovs``'s bridge first), then, if
    there is an ``api``, unbind the port and undo what ``plug`` set."""
    try:
        if ovs is not None:
            ovs.detach(port_id)
            instance_vlans.unsplit(ovs, port_id)  # a trunk parent's VLAN namespaces
    finally:  # the instance goes even if OVS is gone
        delete_namespace(instance_namespace(port_id))
        with IpNetns(host_netns) as outside:
            outside.delete(tap_name(port_id))
    if api is not None:
        port = api.call("GET", f"/v2.0/ports/{port_id}")["port"]
        api.call("PUT", f"/v2.0/ports/{port_id}", {"port": unplug_changes(port)})


def main(argv: list[str] | None = None) -> None:
    parser = cli.parser("neutrino-instance", cli.describe(__doc__), config_files=False)
    parser.add_argument("--url", default="http://127.0.0.1:9696",
                        help="the Networking API's root URL (default: %(default)s)")
    parser.add_argument("--token", default=os.environ.get("OS_TOKEN"),
                        help="a keystone token (default: $OS_TOKEN)")
    host_options = argparse.ArgumentParser(add_help=False)
    host_options.add_argument("--host-netns", help="the namespace of an emulated host")
    host_options.add_argument("--ovs-db", metavar="REMOTE",
                              help="an Open vSwitch host: its OVSDB (unix:/path/db.sock)")
    host_options.add_argument("--ovs-bridge", default="br-int",
                              help="the Open vSwitch integration bridge (default: br-int)")
    sub = parser.add_subparsers(dest="command", required=True)
    plug_cmd = sub.add_parser("plug", parents=[host_options],
                              help="bind the port and plug an instance into it",
                              description="Bind the port to --host, make the instance "
                                          "(namespace inst-<port id[:11]>) on a veth to the "
                                          "port's tap, run DHCP in it, and print the "
                                          "namespace and the addresses it got.")
    plug_cmd.add_argument("port_id", help="the port's id")
    plug_cmd.add_argument("--host", default=socket.gethostname(),
                          help="the binding:host_id (the L2 agent's host; default: this "
                               "machine's name, %(default)s)")
    plug_cmd.add_argument("--no-dhcp", dest="dhcp", action="store_false",
                          help="leave eth0 without an address")
    plug_cmd.add_argument("--timeout", type=int, default=15,
                          help="DHCP tries, 1 s each (default: %(default)s)")
    plug_cmd.add_argument("--availability-zone", default=DEFAULT_ZONE,
                          help="the zone in device_owner compute:<zone>, for a port without "
                               f"a device (default: {DEFAULT_ZONE})")
    unplug_cmd = sub.add_parser("unplug", parents=[host_options],
                                help="remove the instance, unbind the port, clear the "
                                     "device plug set")
    unplug_cmd.add_argument("port_id", help="the port's id")
    unplug_cmd.add_argument("--keep-binding", action="store_true",
                            help="leave the port as it is (binding:host_id, device_id)")
    args = parser.parse_args(argv)
    api = Api(args.url, args.token)
    ovs = Ovs(args.ovs_db, args.ovs_bridge) if args.ovs_db else None
    try:
        if args.command == "plug":
            addresses = plug(api, args.port_id, args.host, args.host_netns, args.dhcp,
                             args.timeout, ovs, args.availability_zone)
            print(" ".join([instance_namespace(args.port_id), *addresses]))
        else:
            unplug(None if args.keep_binding else api, args.port_id, args.host_netns, ovs)
    except (ApiError, NoAddress, OvsError, OSError, LookupError, NetlinkError) as error:
        sys.exit(f"neutrino-instance: {error}")
