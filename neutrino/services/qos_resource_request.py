"""A port's ``resource_request`` (``port-resource-request``,
``port-resource-request-groups``): what a scheduler must find on a host for
the minimum bandwidth and packet rate rules of the port's policy, in
Placement's words, as Neutron shows it to Nova (admins only).

One request group per kind of minimum: bandwidth (``NET_BW_EGR/IGR_KILOBIT_
PER_SEC``, with the trait of the port's physical network, or of tunnels, and
of its vnic type) and packet rate (``NET_PACKET_RATE_[EGR_|IGR_]KILOPACKET_
PER_SEC``, with the vnic type's trait); the groups are to come from one
subtree (``same_subtree``). A group's id is derived from the port's and the
kind's, so that it is the same at every read. None when the policy has no
minimum. neutrino schedules nothing itself: this is for Nova.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from neutrino.db import models

BW, PPS = models.qos_minimum_bandwidth_rules, models.qos_minimum_packet_rate_rules
SEG = models.network_segments
BANDWIDTH = {"egress": "NET_BW_EGR_KILOBIT_PER_SEC", "ingress": "NET_BW_IGR_KILOBIT_PER_SEC"}
PACKET_RATE = {"egress": "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC",
               "ingress": "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC",
               "any": "NET_PACKET_RATE_KILOPACKET_PER_SEC"}
TUNNEL_TRAIT = "CUSTOM_NETWORK_TUNNEL_PROVIDER"


def trait(prefix: str, name: str) -> str:
    """A custom trait's name: upper case, what is not a letter or digit as _."""
    return prefix + re.sub(r"[^A-Z0-9_]", "_", name.upper())


def minimums(conn: Connection, policy_ids: list[str]
             ) -> dict[str, tuple[dict[str, int], dict[str, int]]]:
    """policy id -> (minimum kbit/s, minimum kpps) by direction, of the
    policies of ``policy_ids`` that have any."""
    found: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
    if not policy_ids:
        return found
    for index, table, column in ((0, BW, BW.c.min_kbps), (1, PPS, PPS.c.min_kpps)):
        for policy_id, direction, value in conn.execute(
                select(table.c.qos_policy_id, table.c.direction, column)
                .where(table.c.qos_policy_id.in_(policy_ids))):
            found.setdefault(policy_id, ({}, {}))[index][direction] = value
    return found


def request(port: Mapping[str, Any], bandwidth: dict[str, int], packet_rate: dict[str, int],
            segments: list[tuple[str, str | None]]) -> dict[str, Any] | None:
    """The resource request of ``port`` for these minimums, on a network of
    ``segments`` ((network type, physical network) each)."""
    vnic = trait("CUSTOM_VNIC_TYPE_", port.get("binding:vnic_type") or "normal")
    groups = []
    if bandwidth:
        physnets = sorted({trait("CUSTOM_PHYSNET_", physnet) for _, physnet in segments
                           if physnet})
        groups.append({"id": str(uuid.uuid5(uuid.UUID(port["id"]), "minimum_bandwidth")),
                       "required": [*(physnets or [TUNNEL_TRAIT]), vnic],
                       "resources": {BANDWIDTH[d]: v for d, v in sorted(bandwidth.items())}})
    if packet_rate:
        groups.append({"id": str(uuid.uuid5(uuid.UUID(port["id"]), "minimum_packet_rate")),
                       "required": [vnic],
                       "resources": {PACKET_RATE[d]: v for d, v in sorted(packet_rate.items())}})
    if not groups:
        return None
    return {"request_groups": groups, "same_subtree": [group["id"] for group in groups]}


def extend(conn: Connection, views: list[dict[str, Any]], policies: dict[str, str | None]
           ) -> None:
    """Set ``resource_request`` on ``views``, whose policies (their own, else
    their network's) ``policies`` gives by port id: no read at all when none
    has a policy, one more when none has minimums."""
    found = minimums(conn, sorted({p for p in policies.values() if p}))
    networks = sorted({view["network_id"] for view in views
                       if found.get(policies.get(view["id"]) or "")})
    segments: dict[str, list[tuple[str, str | None]]] = {}
    if networks:
        for network_id, network_type, physnet in conn.execute(
                select(SEG.c.network_id, SEG.c.network_type, SEG.c.physical_network)
                .where(SEG.c.network_id.in_(networks))):
            segments.setdefault(network_id, []).append((network_type, physnet))
    for view in views:
        bandwidth, packet_rate = found.get(policies.get(view["id"]) or "", ({}, {}))
        view["resource_request"] = request(view, bandwidth, packet_rate,
                                           segments.get(view["network_id"], []))
