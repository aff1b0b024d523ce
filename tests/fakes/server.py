"""The server's side of the agents' RPC, played from desired state held in
dicts, on a real in-memory bus: the agents under test call it as they call
the server, with the same topics, namespaces, versions and payload shapes.

A test says what the server wants (ports with their details, security
groups, DHCP networks, routers) and reads back what agents told it (port
statuses, floating IP statuses, DHCP ports made and released).
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from neutrino.rpc import topics
from neutrino.rpc.bus import Bus
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport


class FakeServer:
    def __init__(self) -> None:
        #: port id -> its details, as get_devices_details_list gives them
        self.ports: dict[str, dict[str, Any]] = {}
        #: security group id -> its rules
        self.groups: dict[str, list[dict[str, Any]]] = {}
        #: port id -> ACTIVE / DOWN, as the L2 agent reported it
        self.status: dict[str, str] = {}
        #: network id -> its DHCP view (``subnets``, ``ports``), for DHCP agents
        self.networks: dict[str, dict[str, Any]] = {}
        self.released: list[str] = []  # networks whose DHCP port was given back
        self.ready: set[str] = set()  # ports told ready (dhcp_ready_on_ports)
        #: router id -> its sync_routers data, for L3 agents
        self.routers: dict[str, dict[str, Any]] = {}
        self.fip_status: dict[str, str] = {}
        self.calls: list[str] = []

    # --- the L2 agents' calls (q-plugin) ---------------------------------------------

    def _port_of(self, device: str) -> dict[str, Any] | None:
        """A device is a port id (OVS) or a tap name (``tap`` + 11 of the id)."""
        if device in self.ports:
            return self.ports[device]
        found = [p for p in self.ports.values() if device.startswith("tap")
                 and p["port_id"].startswith(device[3:])]
        return found[0] if len(found) == 1 else None

    def get_devices_details_list(self, devices: list[str]) -> list[dict[str, Any]]:
        self.calls.append("get_devices_details_list")
        answer = []
        for device in devices:
            port = self._port_of(device)
            answer.append({**port, "device": device} if port else {"device": device})
        return answer

    def update_device_list(self, devices_up: list[str], devices_down: list[str]) -> dict:
        self.calls.append("update_device_list")
        for devices, status in ((devices_up, "ACTIVE"), (devices_down, "DOWN")):
            for device in devices:
                port = self._port_of(device)
                self.status[port["port_id"] if port else device] = status
        return {"devices_up": devices_up, "failed_devices_up": [],
                "devices_down": devices_down, "failed_devices_down": []}

    def security_group_info_for_devices(self, devices: list[str]) -> dict[str, Any]:
        self.calls.append("security_group_info_for_devices")
        details = [d for d in self.get_devices_details_list(devices) if "port_id" in d]
        used = {g for d in details for g in d.get("security_groups") or ()}
        remotes = {r["remote_group_id"] for g in used for r in self.groups.get(g, ())
                   if r.get("remote_group_id")}
        members: dict[str, dict[str, list[str]]] = {}
        for group in remotes:
            for port in self.ports.values():
                if group in (port.get("security_groups") or ()):
                    for fixed in port["fixed_ips"]:
                        version = ipaddress.ip_address(fixed["ip_address"]).version
                        members.setdefault(group, {}).setdefault(f"IPv{version}", []).append(
                            fixed["ip_address"])
        return {"devices": {d["port_id"]: d for d in details},
                "security_groups": {g: list(self.groups.get(g, ())) for g in used},
                "sg_member_ips": members, "address_group_ips": {}}

    # --- the DHCP agents' calls (q-plugin, namespace dhcp) ------------------------------

    def _allocate(self, network_id: str, subnet_id: str) -> str:
        subnet = next(s for s in self.networks[network_id]["subnets"] if s["id"] == subnet_id)
        taken = {f["ip_address"] for p in self.networks[network_id]["ports"]
                 for f in p["fixed_ips"]} | {subnet.get("gateway_ip")}
        return next(str(a) for a in ipaddress.ip_network(subnet["cidr"]).hosts()
                    if str(a) not in taken)

    def create_dhcp_port(self, port: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("create_dhcp_port")
        wanted = port["port"]
        network_id = wanted["network_id"]
        made = {"id": str(uuid.uuid4()), "network_id": network_id,
                "mac_address": "fa:16:3e:dd:00:01", "device_id": wanted["device_id"],
                "device_owner": wanted["device_owner"],
                "fixed_ips": [{"subnet_id": f["subnet_id"],
                               "ip_address": self._allocate(network_id, f["subnet_id"])}
                              for f in wanted["fixed_ips"]]}
        self.networks[network_id]["ports"].append(made)
        return made

    def update_dhcp_port(self, port_id: str, port: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("update_dhcp_port")
        wanted = port["port"]
        network = self.networks[wanted["network_id"]]
        found = next(p for p in network["ports"] if p["id"] == port_id)
        found["fixed_ips"] = [f if "ip_address" in f else {
            "subnet_id": f["subnet_id"],
            "ip_address": self._allocate(network["id"], f["subnet_id"])}
            for f in wanted["fixed_ips"]]
        return found

    def release_dhcp_port(self, network_id: str, device_id: str) -> None:
        self.calls.append("release_dhcp_port")
        self.released.append(network_id)
        network = self.networks.get(network_id)
        if network is not None:
            network["ports"] = [p for p in network["ports"] if p["device_id"] != device_id]


class _Reports:
    rpc_version = "1.2"

    async def report_state(self, context: dict, agent_state: dict, time: str) -> str:
        return "alive"


class _L2:
    rpc_version = "1.9"

    def __init__(self, server: FakeServer):
        self.s = server

    async def get_devices_details_list(self, context: dict, devices: list[str],
                                       **_: Any) -> list[dict[str, Any]]:
        return self.s.get_devices_details_list(devices)

    async def update_device_list(self, context: dict, devices_up: list[str],
                                 devices_down: list[str], **_: Any) -> dict[str, Any]:
        return self.s.update_device_list(devices_up, devices_down)

    async def security_group_info_for_devices(self, context: dict, devices: list[str],
                                              **_: Any) -> dict[str, Any]:
        return self.s.security_group_info_for_devices(devices)

    async def get_fdb_entries(self, context: dict, network_ids: list[str],
                              **_: Any) -> dict[str, Any]:
        return {}


class _Dhcp:
    rpc_version = "1.8"
    rpc_namespace = topics.DHCP_NAMESPACE

    def __init__(self, server: FakeServer):
        self.s = server

    def _view(self, network_id: str) -> dict[str, Any]:
        network = self.s.networks[network_id]
        return {**network, "subnets": [dict(s) for s in network["subnets"]],
                "ports": [dict(p) for p in network["ports"]]}

    async def get_active_networks_info(self, context: dict, **_: Any) -> list[dict]:
        return [self._view(n) for n in sorted(self.s.networks)]

    async def get_active_networks(self, context: dict, **_: Any) -> list[str]:
        return sorted(self.s.networks)

    async def get_network_info(self, context: dict, network_id: str, **_: Any) -> dict | None:
        return self._view(network_id) if network_id in self.s.networks else None

    async def create_dhcp_port(self, context: dict, port: dict, **_: Any) -> dict:
        return self.s.create_dhcp_port(port)

    async def update_dhcp_port(self, context: dict, port_id: str, port: dict,
                               **_: Any) -> dict:
        return self.s.update_dhcp_port(port_id, port)

    async def dhcp_ready_on_ports(self, context: dict, port_ids: list[str]) -> None:
        self.s.ready.update(port_ids)

    async def release_dhcp_port(self, context: dict, network_id: str, device_id: str,
                                **_: Any) -> None:
        self.s.release_dhcp_port(network_id, device_id)


class _L3:
    rpc_version = "1.12"

    def __init__(self, server: FakeServer):
        self.s = server

    async def get_router_ids(self, context: dict, **_: Any) -> list[str]:
        return sorted(self.s.routers)

    async def sync_routers(self, context: dict, router_ids: list[str],
                           **_: Any) -> list[dict[str, Any]]:
        return [self.s.routers[r] for r in router_ids if r in self.s.routers]

    async def update_floatingip_statuses(self, context: dict, router_id: str,
                                         fip_statuses: dict[str, str]) -> None:
        self.s.fip_status.update(fip_statuses)


@asynccontextmanager
async def serving(server: FakeServer) -> AsyncIterator[Bus]:
    """``server`` answering on a fresh in-memory bus; the agent's bus to it."""
    url = f"memory://{uuid.uuid4().hex}"
    server_bus, agent_bus = Bus(get_transport(url), timeout=5), Bus(get_transport(url), timeout=5)
    await server_bus.start()
    await agent_bus.start()
    for topic, endpoints in ((topics.REPORTS, [_Reports()]),
                             (topics.PLUGIN, [_L2(server), _Dhcp(server)]),
                             (topics.L3_PLUGIN, [_L3(server)])):
        await RpcServer(server_bus, topic, "server", endpoints).start()
    try:
        yield agent_bus
    finally:
        await agent_bus.close()
        await server_bus.close()
