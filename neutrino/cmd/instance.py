"""``neutrino-instance``: an instance without a hypervisor, for trying the
dataplane on one machine (root).

    neutrino-instance plug PORT_ID [--host HOST] [--host-netns NS] [--url URL]
    neutrino-instance unplug PORT_ID [--host-netns NS]

``plug`` does what a hypervisor does: it binds the port to ``--host``
(``binding:host_id``), makes a network namespace ``inst-<port id[:11]>`` (the
instance) with a veth whose outer end is the port's tap, ``tap<port
id[:11]>``, in the host's namespace (``--host-netns``, for a host emulated in
a namespace; the current one by default) and whose inner end, ``eth0``,
carries the port's MAC and its network's MTU; then it runs a DHCP client in
the instance and prints the address it got. The host's L2 agent finds the tap
and wires it. ``unplug`` removes the namespace (and so the tap) and unbinds
the port. Talks to the API at ``--url`` (``--token`` for keystone).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pyroute2 import NetlinkError

from neutrino.linux.ip import IpNetns, add_namespace, delete_namespace

#: applies what udhcpc got with ``ip`` (busybox's own script would rewrite the
#: machine's /etc/resolv.conf)
DHCP_SCRIPT = """#!/bin/sh
case "$1" in
  deconfig) ip -4 addr flush dev "$interface"; ip link set "$interface" up ;;
  bound|renew)
    ip -4 addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    [ -n "$router" ] && ip route replace default via "${router%% *}" dev "$interface"
    echo "$ip" > "$NEUTRINO_LEASE_FILE" ;;
esac
exit 0
"""


class ApiError(Exception):
    pass


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


def tap_name(port_id: str) -> str:
    return f"tap{port_id[:11]}"


def plug(api: Api, port_id: str, host: str, host_netns: str | None, dhcp: bool,
         timeout: int) -> str | None:
    """Bind, make the instance, wire its veth; the address DHCP gave (or None)."""
    port = api.call("GET", f"/v2.0/ports/{port_id}")["port"]
    network = api.call("GET", f"/v2.0/networks/{port['network_id']}")["network"]
    if port.get("binding:host_id") != host:
        api.call("PUT", f"/v2.0/ports/{port_id}", {"port": {"binding:host_id": host}})
    namespace = instance_namespace(port_id)
    add_namespace(namespace)
    tap, inner = tap_name(port_id), f"i{port_id[:11]}"
    mtu = network.get("mtu") or None
    with IpNetns(host_netns) as outside:
        outside.add_veth(tap, inner, peer_namespace=namespace)
        outside.set(tap, mtu=mtu, up=True)
    with IpNetns(namespace) as inside:
        if inside.exists(inner):
            inside.rename(inner, "eth0")
        inside.set("eth0", mac=port["mac_address"], mtu=mtu)
        inside.set("eth0", up=True)
        inside.set("lo", up=True)
    return dhcp_client(namespace, timeout) if dhcp else None


def dhcp_client(namespace: str, timeout: int) -> str | None:
    """One DHCP exchange on eth0; the IPv4 address it configured."""
    with tempfile.TemporaryDirectory(prefix="neutrino-instance-") as tmp:
        script, lease = Path(tmp) / "dhcp.sh", Path(tmp) / "lease"
        script.write_text(DHCP_SCRIPT)
        script.chmod(0o755)
        done = subprocess.run(
            ["ip", "netns", "exec", namespace, "udhcpc", "-i", "eth0", "-n", "-q", "-f",
             "-t", str(max(1, timeout)), "-T", "1", "-A", "1", "-s", str(script)],
            env={**os.environ, "NEUTRINO_LEASE_FILE": str(lease)}, capture_output=True,
            text=True, timeout=timeout * 3 + 10)
        if done.returncode != 0 or not lease.exists():
            return None
        return lease.read_text().strip()


def unplug(api: Api | None, port_id: str, host_netns: str | None) -> None:
    delete_namespace(instance_namespace(port_id))
    with IpNetns(host_netns) as outside:
        outside.delete(tap_name(port_id))
    if api is not None:
        api.call("PUT", f"/v2.0/ports/{port_id}", {"port": {"binding:host_id": ""}})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="neutrino-instance", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:9696", help="the API")
    parser.add_argument("--token", default=os.environ.get("OS_TOKEN"),
                        help="a keystone token (default: $OS_TOKEN)")
    sub = parser.add_subparsers(dest="command", required=True)
    plug_cmd = sub.add_parser("plug", help="bind the port and plug an instance into it")
    plug_cmd.add_argument("port_id")
    plug_cmd.add_argument("--host", default=socket.gethostname(),
                          help="the binding:host_id (the L2 agent's host)")
    plug_cmd.add_argument("--host-netns", help="the namespace of an emulated host")
    plug_cmd.add_argument("--no-dhcp", dest="dhcp", action="store_false",
                          help="leave eth0 without an address")
    plug_cmd.add_argument("--timeout", type=int, default=15, help="DHCP tries (1 s each)")
    unplug_cmd = sub.add_parser("unplug", help="remove the instance, unbind the port")
    unplug_cmd.add_argument("port_id")
    unplug_cmd.add_argument("--host-netns", help="the namespace of an emulated host")
    unplug_cmd.add_argument("--keep-binding", action="store_true",
                            help="leave binding:host_id as it is")
    args = parser.parse_args(argv)
    api = Api(args.url, args.token)
    try:
        if args.command == "plug":
            address = plug(api, args.port_id, args.host, args.host_netns, args.dhcp,
                           args.timeout)
            namespace = instance_namespace(args.port_id)
            if args.dhcp and address is None:
                sys.exit(f"neutrino-instance: {namespace} got no address by DHCP")
            print(f"{namespace} {address or ''}".strip())
        else:
            unplug(None if args.keep_binding else api, args.port_id, args.host_netns)
    except (ApiError, OSError, LookupError, NetlinkError) as error:
        sys.exit(f"neutrino-instance: {error}")
