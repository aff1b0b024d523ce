"""The flows of the ``local_ip`` extension (``local_ip``'s docstring says
what they do), on the Open vSwitch agent's integration bridge: pure, and
imported by that agent only (the Linux bridge agent never imports ovsdbapp).

They sit where a packet has been let out by its sender and not yet handed
to its receiver: table 0 without the openvswitch firewall (below the QoS
stages, above the agent's NORMAL), table 60 with it (after the sender's
egress rules, before the receiver's ingress rules). A translated packet
comes back to the same table through conntrack with ``reg7`` set, so that
it goes on as any other from there. The NAT has a conntrack zone of its own
per network, apart from the firewall's (the local VLANs): the firewall sees
the sender's connection to the local IP on its way out and the receiver's
from the fixed IP on its way in, each with its own rules, and the replies
of both as replies.
"""

from __future__ import annotations

import ipaddress
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from neutrino.linux.ovs import cookie_of, flow_key
from neutrino.linux.ovs_firewall import LOCAL
from neutrino.rpc.contracts import local_ip as contract

#: the table without the firewall (where the agent's NORMAL is), and with it
#: (its local delivery, after the egress rules)
PLAIN_TABLE, FIREWALL_TABLE = 0, LOCAL
#: above the firewall's local delivery (100), below the QoS stages (200)
PRIORITY = 110
#: set on a packet translated: it goes on as any other
MARK = "reg7"
#: conntrack zones of local IPs: above every local VLAN (the firewall's zones)
ZONES = (4096, 65535)


def zone_of(network_id: str) -> int:
    """The network's conntrack zone for its local IPs, the same on every run."""
    low, high = ZONES
    return low + zlib.crc32(network_id.encode()) % (high - low + 1)


def arp_answer(mac: str, ip: str) -> str:
    """Actions that answer an ARP request for ``ip`` with ``mac``, back where it
    came from (OpenFlow 1.3's spelling, as the switch gives it back)."""
    return ("move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],"
            f"set_field:{mac}->eth_src,set_field:2->arp_op,"
            "move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],"
            f"set_field:{mac}->arp_sha,set_field:{ip}->arp_spa,IN_PORT")


def _ipv4(address: str) -> bool:
    return ipaddress.ip_address(address).version == 4


def _wired(port: Mapping[str, Any]) -> bool:
    return bool(port.get("admin_state_up")) and port.get("ofport") is not None


def local_ip_flows(ports: Mapping[str, Mapping[str, Any]],
                   associations: Mapping[str, Sequence[contract.Association]],
                   firewall: bool = False) -> list[str]:
    """br-int's flows for ``associations`` (port id -> its associations) of
    ``ports`` (the agent's: port id -> details with ``ofport``); ``firewall``:
    the openvswitch firewall's pipeline is br-int's."""
    table = FIREWALL_TABLE if firewall else PLAIN_TABLE
    neighbours: dict[str, list[Mapping[str, Any]]] = {}
    for port_id in sorted(ports):
        if _wired(ports[port_id]):
            neighbours.setdefault(ports[port_id]["network_id"], []).append(
                {**ports[port_id], "port_id": port_id})
    flows: dict[str, str] = {}  # by match: the first port (by id) wins

    def add(flow: str) -> None:
        flows.setdefault(flow_key(flow), flow)

    for port_id in sorted(associations):
        port = ports.get(port_id)
        if port is None or not _wired(port):
            continue
        mac, network_id = port["mac_address"], port["network_id"]
        zone, cookie = zone_of(network_id), f"cookie={cookie_of(port_id):#x}"
        at = f"{cookie},table={table},priority={PRIORITY},{MARK}=0"
        mark = f"set_field:1->{MARK}"
        for association in associations[port_id]:
            local_ip, fixed_ip = association["local_ip_address"], association["fixed_ip"]
            if not (_ipv4(local_ip) and _ipv4(fixed_ip)):
                continue
            for other in neighbours.get(network_id, []):
                if other["port_id"] == port_id:
                    continue  # the port itself reaches the local IP's owner
                add(f"{at},in_port={other['ofport']},arp,arp_tpa={local_ip},arp_op=1,"
                    f"actions={arp_answer(mac, local_ip)}")
                add(f"{at},in_port={other['ofport']},ip,nw_dst={local_ip},"
                    f"actions={mark},set_field:{mac}->eth_dst,"
                    f"ct(commit,zone={zone},table={table},nat(dst={fixed_ip}))")
            # what the port sends from that address: replies to translated
            # packets come back from the local IP (the rest passes unchanged)
            add(f"{at},in_port={port['ofport']},ip,nw_src={fixed_ip},"
                f"actions={mark},ct(zone={zone},table={table},nat)")
    return list(flows.values())
