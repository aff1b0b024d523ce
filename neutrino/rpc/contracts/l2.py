"""L2 agents <-> server (Neutron's names and wire format).

Agents -> server on topic ``q-plugin`` (no namespace), version 1.9: port
details for the devices an agent finds, their statuses, the security group
rules that apply to them, and (l2population) where other hosts' ports are.

Server -> every L2 agent, fanned out on one topic per kind of change
(``q-agent-notifier-<resource>-<event>``), version 1.0: a port, network or
security group changed; l2population's forwarding entries were added or
removed. Agents treat each as a hint to look again.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict, final

from neutrino.rpc import topics
from neutrino.rpc.contracts.base import Api
from neutrino.rpc.notifier import Notifier

TOPIC = topics.PLUGIN
NAMESPACE: str | None = None
VERSION = "1.9"
NOTIFICATION_VERSION = "1.0"

IpVersion = Literal["IPv4", "IPv6"]


class FixedIp(TypedDict):
    subnet_id: str
    ip_address: str


class PortDetails(TypedDict):
    """What an agent needs to wire one device (one entry of
    ``get_devices_details_list``)."""

    device: str
    port_id: str
    network_id: str
    mac_address: str
    admin_state_up: bool
    network_type: str | None
    segmentation_id: int | None
    physical_network: str | None
    mtu: int | None
    fixed_ips: list[FixedIp]
    device_owner: str
    allowed_address_pairs: list[dict[str, Any]]
    port_security_enabled: bool
    security_groups: list[str]
    profile: dict[str, Any]
    qos_policy_id: NotRequired[str | None]  # the port's own QoS policy
    network_qos_policy_id: NotRequired[str | None]  # its network's


@final  # nothing more in it: a detail without "port_id" is one of these
class MissingDevice(TypedDict):
    """The answer for a device that names no port (or more than one)."""

    device: str


class DeviceListStatus(TypedDict):
    devices_up: list[str]
    failed_devices_up: list[str]
    devices_down: list[str]
    failed_devices_down: list[str]


class SecurityGroupRule(TypedDict):
    direction: str
    ethertype: str
    protocol: str | None
    port_range_min: int | None
    port_range_max: int | None
    remote_ip_prefix: str | None
    remote_group_id: str | None
    remote_address_group_id: str | None
    security_group_id: str
    stateful: NotRequired[bool]  # the group's; filtered without conntrack when false


class SecurityGroupInfo(TypedDict):
    """``security_group_info_for_devices``: the devices' ports (by port id), the
    rules of their groups, the addresses of the members of every remote group
    and of every address group a rule names."""

    devices: dict[str, PortDetails]
    security_groups: dict[str, list[SecurityGroupRule]]
    sg_member_ips: dict[str, dict[IpVersion, list[str]]]
    address_group_ips: dict[str, dict[IpVersion, list[str]]]


#: network id -> {"ports": {tunnel IP: [[MAC, IP], ...]}, "network_type": ...,
#: "segment_id": ...}; the all-zero MAC means "flood there"
FdbEntries = dict[str, dict[str, Any]]


class L2PluginApi(Api):
    """The agent's end of ``q-plugin``."""

    topic = TOPIC
    version = VERSION
    namespace = NAMESPACE

    async def get_devices_details_list(self, ctx: dict[str, Any], devices: list[str],
                                       agent_id: str, host: str
                                       ) -> list[PortDetails | MissingDevice]:
        return await self.caller.call(ctx, "get_devices_details_list", devices=devices,
                                      agent_id=agent_id, host=host)

    async def update_device_list(self, ctx: dict[str, Any], devices_up: list[str],
                                 devices_down: list[str], agent_id: str, host: str
                                 ) -> DeviceListStatus:
        return await self.caller.call(ctx, "update_device_list", devices_up=devices_up,
                                      devices_down=devices_down, agent_id=agent_id, host=host)

    async def security_group_info_for_devices(self, ctx: dict[str, Any], devices: list[str]
                                              ) -> SecurityGroupInfo:
        return await self.caller.call(ctx, "security_group_info_for_devices", devices=devices)

    async def get_fdb_entries(self, ctx: dict[str, Any], network_ids: list[str], host: str
                              ) -> FdbEntries:
        return await self.caller.call(ctx, "get_fdb_entries", network_ids=network_ids,
                                      host=host)


class L2AgentNotifier:
    """The server's end of the notification topics: port, network and security
    group changes fanned out to every L2 agent, once committed."""

    def __init__(self, notifier: Notifier):
        self._fanout = notifier.fanout

    def port_update(self, port: dict[str, Any], segment: dict[str, Any] | None) -> None:
        segment = segment or {}
        self._fanout(topics.PORT_UPDATE, "port_update", port=port,
                     network_type=segment.get("network_type"),
                     segmentation_id=segment.get("segmentation_id"),
                     physical_network=segment.get("physical_network"))

    def port_delete(self, port_id: str, network_id: str) -> None:
        self._fanout(topics.PORT_DELETE, "port_delete", port_id=port_id, network_id=network_id)

    def network_update(self, network: dict[str, Any]) -> None:
        self._fanout(topics.NETWORK_UPDATE, "network_update", network=network)

    def network_delete(self, network_id: str) -> None:
        self._fanout(topics.NETWORK_DELETE, "network_delete", network_id=network_id)

    def security_groups_rule_updated(self, group_ids: set[str]) -> None:
        """The rules of these groups changed (or what they mean: ``stateful``)."""
        if group_ids:
            self._fanout(topics.SECURITY_GROUP_UPDATE, "security_groups_rule_updated",
                         security_groups=sorted(group_ids))

    def security_groups_member_updated(self, group_ids: set[str]) -> None:
        """Ports joined or left these groups, or their addresses changed: rules
        whose remote group is one of them mean other addresses now."""
        if group_ids:
            self._fanout(topics.SECURITY_GROUP_UPDATE, "security_groups_member_updated",
                         security_groups=sorted(group_ids))


class L2PopulationNotifier:
    """l2population's forwarding entries, fanned out on ``L2POPULATION``."""

    def __init__(self, notifier: Notifier):
        self._fanout = notifier.fanout

    def add_fdb_entries(self, entries: FdbEntries) -> None:
        self._fanout(topics.L2POPULATION, "add_fdb_entries", fdb_entries=entries)

    def remove_fdb_entries(self, entries: FdbEntries) -> None:
        self._fanout(topics.L2POPULATION, "remove_fdb_entries", fdb_entries=entries)
