"""DHCP agents <-> server (Neutron's DHCP agent API and wire format).

Agents -> server in the ``dhcp`` namespace on topic ``q-plugin`` (Neutron's
RPC_NAMESPACE_DHCP_PLUGIN), version 1.8: the networks a host serves, one
network's subnets and ports, and the agents' own DHCP ports. History, as
Neutron's: 1.1 get_active_networks_info, create_dhcp_port and update_dhcp_port;
1.5 dhcp_ready_on_ports; 1.7 get_networks; 1.8 get_dhcp_port.

Server -> the agents hosting a network, cast on ``dhcp_agent.<host>``,
version 1.0: ``<resource>_<create|update|delete>_end`` with a payload naming
what changed; agents treat each as a hint to look at that network again.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, TypedDict

from neutrino.rpc import topics
from neutrino.rpc.contracts.base import Api
from neutrino.rpc.notifier import Notifier

TOPIC = topics.PLUGIN
NAMESPACE = topics.DHCP_NAMESPACE
VERSION = "1.8"
AGENT_TOPIC = topics.DHCP_AGENT
NOTIFICATION_VERSION = "1.0"

#: the device_owner of DHCP ports
DHCP_OWNER = "network:dhcp"
#: the device_id of a DHCP port no agent holds (its agent went; the next takes it)
RESERVED_DHCP_PORT = "reserved_dhcp_port"

#: what the server casts to DHCP agents
NOTIFICATIONS = tuple(f"{resource}_{event}_end" for resource in ("network", "subnet", "port")
                      for event in ("create", "update", "delete"))


def dhcp_device_id(network_id: str, host: str) -> str:
    """The device_id a DHCP agent gives its port on ``network_id``, as Neutron's
    agents make it: ``dhcp`` + a UUID5 of the host's short name + the network."""
    host_uuid = uuid.uuid5(uuid.NAMESPACE_DNS, host.split(".")[0])
    return f"dhcp{host_uuid}-{network_id}"


class NetworkInfo(TypedDict, total=False):
    """One network as a DHCP agent sees it: the network's API view with its
    ``subnets`` and ``ports`` (API views too) added."""

    id: str
    project_id: str
    admin_state_up: bool
    mtu: int
    subnets: list[dict[str, Any]]
    ports: list[dict[str, Any]]


class DhcpPluginApi(Api):
    """The agent's end of the ``dhcp`` namespace."""

    topic = TOPIC
    version = VERSION
    namespace = NAMESPACE

    async def get_active_networks_info(self, ctx: dict[str, Any], host: str
                                       ) -> list[NetworkInfo]:
        return await self.caller.call(ctx, "get_active_networks_info", host=host)

    async def get_active_networks(self, ctx: dict[str, Any], host: str) -> list[str]:
        return await self.caller.call(ctx, "get_active_networks", host=host)

    async def get_network_info(self, ctx: dict[str, Any], network_id: str, host: str
                               ) -> NetworkInfo | None:
        """None when the network went meanwhile."""
        return await self.caller.call(ctx, "get_network_info", network_id=network_id,
                                      host=host)

    async def create_dhcp_port(self, ctx: dict[str, Any], host: str, port: dict[str, Any]
                               ) -> dict[str, Any] | None:
        """``port`` is ``{"port": {...}}``; None when the network or subnet went."""
        return await self.caller.call(ctx, "create_dhcp_port", host=host, port=port)

    async def update_dhcp_port(self, ctx: dict[str, Any], host: str, port_id: str,
                               port: dict[str, Any]) -> dict[str, Any] | None:
        return await self.caller.call(ctx, "update_dhcp_port", host=host, port_id=port_id,
                                      port=port)

    async def release_dhcp_port(self, ctx: dict[str, Any], network_id: str, device_id: str,
                                host: str) -> None:
        await self.caller.call(ctx, "release_dhcp_port", network_id=network_id,
                               device_id=device_id, host=host)

    async def dhcp_ready_on_ports(self, ctx: dict[str, Any], port_ids: list[str]) -> None:
        await self.caller.call(ctx, "dhcp_ready_on_ports", port_ids=port_ids)


class DhcpAgentNotifier:
    """The server's end of ``dhcp_agent``: casts to the hosts that serve a network."""

    def __init__(self, notifier: Notifier):
        self._cast = notifier.cast

    def notify(self, hosts: Iterable[str], method: str, payload: dict[str, Any]) -> None:
        if method not in NOTIFICATIONS:
            raise ValueError(f"{method!r} is not a DHCP agent notification")
        for host in hosts:
            self._cast(AGENT_TOPIC, host, method, payload=payload)
