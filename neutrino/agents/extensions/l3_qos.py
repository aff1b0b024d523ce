"""Rate limits of floating IPs and router gateways on the L3 agent (Neutron's
``fip_qos`` and ``gateway_ip_qos`` L3 agent extensions).

The server sends, with each router's sync data, its floating IPs' and its
gateway's ``qos_policy_id`` and the rules of those policies
(``_qos_policies``). Each extension turns the bandwidth limits of its kind of
address into ``AddressLimit``s of the router (pure, ``router_spec``), which
the router's dataplane writes as tc on the gateway device with the rest of
the router (``neutrino.linux.qos_tc.Tc.shape_addresses``). Directions are
Neutron's: egress leaves through the floating IP (or the gateway's SNAT
address), ingress arrives for it.

When a policy changes, the server says so on ``q-agent-notifier-qos-policy-
update``; the routers that use it are marked dirty and synced again. Both
extensions note every policy of a router, whichever they enforce: when both
run, only one of them hears the notification (one endpoint per method).
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from neutrino.agents.extensions.api import AgentHandles, L3AgentExtension
from neutrino.agents.extensions.qos_drivers import wanted_of
from neutrino.linux import router
from neutrino.linux.qos_tc import AddressLimit
from neutrino.rpc import topics
from neutrino.rpc.contracts import qos as contract

POLICIES = "_qos_policies"
POLICY_ID = "qos_policy_id"


class RouterQosNotifications:
    """What the extension serves on ``QOS_POLICY_UPDATE``."""

    rpc_version = contract.NOTIFICATION_VERSION

    def __init__(self, extension: RouterQosExtension):
        self._extension = extension

    async def policies_updated(self, context: dict, policy_ids: list[str], **kwargs: Any
                               ) -> None:
        self._extension.policies_changed(policy_ids)


class RouterQosExtension(L3AgentExtension):
    """What both kinds share: the policies each router uses, and the limits."""

    def __init__(self) -> None:
        self.used: dict[str, set[str]] = {}  # router id -> the policies it uses

    def initialize(self, handles: AgentHandles) -> None:
        self.handles = handles

    def rpc_endpoints(self) -> Sequence[tuple[str, Sequence[object]]]:
        return [(topics.QOS_POLICY_UPDATE, [RouterQosNotifications(self)])]

    def addresses(self, data: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        """(IPv4 address, policy id) of the addresses of this kind with a policy."""
        raise NotImplementedError

    def router_spec(self, data: Mapping[str, Any], spec: router.Router) -> router.Router:
        policies = data.get(POLICIES) or {}
        self.used[data["id"]] = set(policies)
        if spec.gateway is None:
            return spec
        added = []
        for address, policy_id in self.addresses(data):
            wanted = wanted_of(policies.get(policy_id, ()))
            if wanted.egress or wanted.ingress:
                added.append(AddressLimit(address, wanted.egress, wanted.ingress))
        return dataclasses.replace(spec, limits=spec.limits + tuple(added)) if added else spec

    async def delete_router(self, router_id: str) -> None:
        self.used.pop(router_id, None)

    def policies_changed(self, policy_ids: list[str]) -> None:
        changed = set(policy_ids)
        self.handles.mark_dirty(*(("router", router_id) for router_id, used
                                  in sorted(self.used.items()) if used & changed))


def _ipv4(address: str) -> bool:
    return ipaddress.ip_address(address).version == 4


class FipQosExtension(RouterQosExtension):
    """Floating IPs' limits (``fip_qos``)."""

    def addresses(self, data: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        for fip in data.get("_floatingips", ()):
            if fip.get(POLICY_ID) and fip.get("fixed_ip_address") \
                    and _ipv4(fip["floating_ip_address"]):
                yield fip["floating_ip_address"], fip[POLICY_ID]


class GatewayIpQosExtension(RouterQosExtension):
    """The gateway's own addresses' limits (``gateway_ip_qos``): what the
    router's instances without floating IPs send and receive through SNAT."""

    def addresses(self, data: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        policy_id = (data.get("external_gateway_info") or {}).get(POLICY_ID)
        if policy_id:
            for fixed in (data.get("gw_port") or {}).get("fixed_ips", ()):
                if _ipv4(fixed["ip_address"]):
                    yield fixed["ip_address"], policy_id
