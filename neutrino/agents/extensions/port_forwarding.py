"""Floating IP port forwardings on the L3 agent's routers (Neutron's
``port_forwarding`` L3 agent extension).

The server sends each router's forwardings with its sync data
(``_port_forwardings``, each with its floating IP's address), and tells the
router's agent when they change (``routers_updated``), so this extension needs
no calls of its own: it has the router carry the floating IPs that have
forwardings on its gateway (their statuses reported as the router's other
floating IPs'), and adds a DNAT rule per forwarding to the router's NAT
chains, written with them in one ``iptables-restore``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

from neutrino.agents.extensions.api import AgentHandles, L3AgentExtension
from neutrino.linux import nat, router

PORT_FORWARDINGS = "_port_forwardings"


def forwarding(pf: Mapping[str, Any]) -> nat.Forwarding:
    return nat.Forwarding(
        address=pf["floating_ip_address"], protocol=pf["protocol"],
        external=(pf["external_port_start"], pf["external_port_end"]),
        internal_ip=pf["internal_ip_address"],
        internal=(pf["internal_port_start"], pf["internal_port_end"]))


class PortForwardingExtension(L3AgentExtension):
    def initialize(self, handles: AgentHandles) -> None:
        """Nothing to keep: everything comes with the routers' data."""

    def floating_ips(self, data: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
        forwarded = {pf["floatingip_id"] for pf in data.get(PORT_FORWARDINGS, ())}
        return [fip for fip in data.get("_floatingips", ())
                if fip["id"] in forwarded
                and ipaddress.ip_address(fip["floating_ip_address"]).version == 4]

    def router_spec(self, data: Mapping[str, Any], spec: router.Router) -> router.Router:
        if spec.nat.gateway is None:
            return spec  # no gateway: nothing is translated
        added = tuple(forwarding(pf) for pf in data.get(PORT_FORWARDINGS, ()))
        return dataclasses.replace(spec, nat=dataclasses.replace(
            spec.nat, forwardings=spec.nat.forwardings + added))
