"""l2population: telling L2 agents where the ports of their VXLAN networks are,
so that no multicast is needed (``[ml2] mechanism_drivers = ...,l2population``).

Entries are ``{network id: {"segment_id", "network_type", "ports": {tunnel IP:
[[MAC, IP], ...]}}}``, the tunnel IP being the ``tunneling_ip`` that the L2
agent of the port's host reports; ``[FLOOD_MAC, "0.0.0.0"]`` says "send
broadcasts there". Agents fetch the whole of their networks (``entries``,
served as ``get_fdb_entries``) when they start or wire a network, and hear
changes as they happen: a port going up or down, or deleted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.engine import Connection

from neutrino.db import models
from neutrino.plugins.ml2 import segments
from neutrino.plugins.ml2.api import MechanismDriver
from neutrino.rpc.contracts.l2 import L2PopulationNotifier

FLOOD_MAC = "00:00:00:00:00:00"
FLOOD = [FLOOD_MAC, "0.0.0.0"]
TUNNEL_TYPES = ("vxlan", "gre", "geneve")
P, B, IA, AG = models.ports, models.port_bindings, models.ip_allocations, models.agents


class L2PopulationMechanismDriver(MechanismDriver):
    """The name that turns l2population on; ML2 does the work (``L2Population``)."""

    name = "l2population"


def _tunnel_ips(conn: Connection, hosts: Iterable[str]) -> dict[str, str]:
    """host -> the tunnel IP its L2 agent reports."""
    found = {}
    for host, conf in conn.execute(select(AG.c.host, AG.c.configurations).where(
            AG.c.host.in_(sorted(set(hosts))), AG.c.admin_state_up)):
        ip = (conf or {}).get("tunneling_ip") or (conf or {}).get("tunnel_ip")
        if ip:
            found[host] = ip
    return found


class L2Population:
    def __init__(self, notifier: L2PopulationNotifier):
        self._notifier = notifier

    def entries(self, conn: Connection, network_ids: list[str],
                port_ids: list[str] | None = None) -> dict[str, Any]:
        """The entries of the ACTIVE, bound ports of ``network_ids`` (of
        ``port_ids`` only, when given) on tunnelled networks."""
        segs = segments.of_networks(conn, network_ids)
        tunnelled = {net: seg[0] for net, seg in segs.items()
                     if seg and seg[0]["network_type"] in TUNNEL_TYPES}
        if not tunnelled:
            return {}
        where = [P.c.network_id.in_(sorted(tunnelled)), P.c.status == "ACTIVE"]
        if port_ids is not None:
            where.append(P.c.id.in_(port_ids))
        rows = conn.execute(
            select(P.c.id, P.c.network_id, P.c.mac_address, B.c.host, IA.c.ip_address)
            .join(B, and_(B.c.port_id == P.c.id, B.c.status == "ACTIVE", B.c.host != ""))
            .outerjoin(IA, IA.c.port_id == P.c.id).where(*where)).all()
        ips = _tunnel_ips(conn, {row.host for row in rows})
        by_network: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        for row in rows:
            remote = ips.get(row.host)
            if remote is None:
                continue
            pairs = by_network[row.network_id][remote]
            if not pairs:
                pairs.append(FLOOD)
            if row.ip_address:
                pairs.append([row.mac_address, row.ip_address])
        return {net: {"segment_id": tunnelled[net]["segmentation_id"],
                      "network_type": tunnelled[net]["network_type"],
                      "ports": {ip: pairs for ip, pairs in ports.items()}}
                for net, ports in by_network.items()}

    def ports_up(self, conn: Connection, port_ids: list[str]) -> None:
        """Tell every agent of ports that went ACTIVE (with the flood entry of
        their host: harmless when it was there already)."""
        networks = list(conn.execute(select(P.c.network_id).where(P.c.id.in_(port_ids))
                                     .distinct()).scalars())
        found = self.entries(conn, networks, port_ids) if networks else {}
        if found:
            self._notifier.add_fdb_entries(found)

    def ports_down(self, conn: Connection, ports: list[dict[str, Any]], host: str) -> None:
        """Tell every agent that these ports (views taken while they were up, on
        ``host``) are gone; and the host's flood entry when it has no other port
        left on the network."""
        remote = _tunnel_ips(conn, [host]).get(host)
        if remote is None or not ports:
            return
        by_network: dict[str, list] = defaultdict(list)
        for port in ports:
            by_network[port["network_id"]] += [
                [port["mac_address"], ip["ip_address"]] for ip in port["fixed_ips"]]
        gone_ids = [port["id"] for port in ports]
        segs = segments.of_networks(conn, list(by_network))
        found = {}
        for network_id, pairs in by_network.items():
            seg = next(iter(segs.get(network_id) or ()), None)  # the first, if any
            if seg is None or seg["network_type"] not in TUNNEL_TYPES:
                continue
            others = conn.execute(
                select(P.c.id).join(B, and_(B.c.port_id == P.c.id, B.c.status == "ACTIVE"))
                .where(P.c.network_id == network_id, P.c.status == "ACTIVE",
                       B.c.host == host, P.c.id.not_in(gone_ids)).limit(1)).first()
            found[network_id] = {"segment_id": seg["segmentation_id"],
                                 "network_type": seg["network_type"],
                                 "ports": {remote: pairs if others else [FLOOD, *pairs]}}
        if found:
            self._notifier.remove_fdb_entries(found)
