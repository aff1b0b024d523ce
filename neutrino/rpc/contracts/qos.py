"""Agents' ``qos`` extensions <-> server: the rules of QoS policies.

Agents -> server on ``q-qos-plugin``, version 1.0: ``get_policies`` gives the
rules of the policies the agent's ports (or floating IPs and gateways) name.
Neutron's agents pull versioned objects (``QosPolicy``) through its generic
resources RPC; neutrino's extensions ask for what they enforce only: each
rule's type and parameters. A policy gone is absent from the answer.

Server -> every agent, fanned out on ``q-agent-notifier-qos-policy-update``:
``policies_updated`` once a policy or one of its rules changed; an agent asks
again about the policies it uses (a hint, as every notification). A port's or
network's change of policy arrives as the port or network update it is.
"""

from __future__ import annotations

from typing import Any, TypedDict

from neutrino.rpc import topics
from neutrino.rpc.contracts.base import Api
from neutrino.rpc.notifier import Notifier

TOPIC = topics.QOS_PLUGIN
VERSION = "1.0"
NOTIFICATION_VERSION = "1.0"


class Rule(TypedDict, total=False):
    """One rule: ``type`` (``bandwidth_limit``, ``dscp_marking``, ...) and its
    parameters as the API shows them (``max_kbps``, ``direction``, ...)."""

    type: str
    max_kbps: int
    max_burst_kbps: int
    min_kbps: int
    max_kpps: int
    max_burst_kpps: int
    min_kpps: int
    dscp_mark: int
    direction: str


class QosPluginApi(Api):
    """The agent's end of ``q-qos-plugin``."""

    topic = TOPIC
    version = VERSION

    async def get_policies(self, ctx: dict[str, Any], policy_ids: list[str]
                           ) -> dict[str, list[Rule]]:
        """policy id -> its rules, for the policies of ``policy_ids`` that exist."""
        return await self.caller.call(ctx, "get_policies", policy_ids=policy_ids)


class QosAgentNotifier:
    """The server's end of ``QOS_POLICY_UPDATE``."""

    def __init__(self, notifier: Notifier):
        self._fanout = notifier.fanout

    def policies_updated(self, policy_ids: list[str]) -> None:
        if policy_ids:
            self._fanout(topics.QOS_POLICY_UPDATE, "policies_updated",
                         policy_ids=sorted(policy_ids))
