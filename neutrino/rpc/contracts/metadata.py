"""Metadata agent -> server: find the port behind an instance's request
(namespace ``metadata`` on topic ``q-plugin``, Neutron's RPC_NAMESPACE_METADATA)."""

from __future__ import annotations

from typing import Any

from neutrino.rpc import topics
from neutrino.rpc.contracts.base import Api

TOPIC = topics.PLUGIN
NAMESPACE = topics.METADATA_NAMESPACE
VERSION = "1.0"


class MetadataPluginApi(Api):
    topic = TOPIC
    version = VERSION
    namespace = NAMESPACE

    async def get_ports(self, ctx: dict[str, Any], filters: dict[str, list[str]],
                        timeout: float | None = None) -> list[dict[str, Any]]:
        """Ports (as the API shows them) matching ``filters``: attribute -> values."""
        return await self.caller.call(ctx, "get_ports", filters=filters, timeout=timeout)
