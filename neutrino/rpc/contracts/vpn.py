"""L3 agents' VPN extension <-> server (VPNaaS, IPsec site-to-site).

A router's VPN services come with its sync data (``_vpnservices``:
``VpnServiceSyncData``, everything its strongSwan needs, PSKs included: the
bus is the cloud's own), and a change of a service, a connection or a policy
they use reaches the agents as ``routers_updated`` for the routers concerned.
The agents report what their strongSwan makes of each service and connection
on ``ipsec_driver`` (version 1.0, Neutron's ``update_status``), on change and
every ``[vpnagent] status_interval`` seconds.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from neutrino.rpc.contracts.base import Api

TOPIC = "ipsec_driver"  # Neutron's IPSEC_DRIVER_TOPIC
VERSION = "1.0"
#: the key of a router's VPN services in its sync data
VPN_SERVICES = "_vpnservices"

Status = Literal["ACTIVE", "DOWN", "ERROR"]


class IkePolicySyncData(TypedDict):
    auth_algorithm: str  # sha1, sha256, sha384, sha512, aes-xcbc, aes-cmac
    encryption_algorithm: str  # 3des, aes-128, aes-192, aes-256, aes-128-ctr, ...
    ike_version: str  # v1 or v2
    lifetime_value: int  # seconds
    pfs: str  # group2, group5, group14, ...
    phase1_negotiation_mode: str  # main (aggressive: v1 only)


class IpsecPolicySyncData(TypedDict):
    transform_protocol: str  # esp, ah, ah-esp
    auth_algorithm: str
    encryption_algorithm: str
    encapsulation_mode: str  # tunnel or transport
    lifetime_value: int  # seconds
    pfs: str


class DpdSyncData(TypedDict):
    action: str  # hold, clear, restart, disabled, restart-by-peer
    interval: int  # seconds
    timeout: int


class SiteConnectionSyncData(TypedDict):
    id: str
    status: str  # as the server has it (PENDING_CREATE, ACTIVE, ...)
    admin_state_up: bool
    peer_address: str
    peer_id: str
    local_id: str  # "" when unset: the router's external address
    psk: str
    initiator: str  # bi-directional or response-only
    mtu: int
    dpd: DpdSyncData
    local_cidrs: list[str]
    peer_cidrs: list[str]
    ikepolicy: IkePolicySyncData
    ipsecpolicy: IpsecPolicySyncData


class VpnServiceSyncData(TypedDict):
    id: str
    status: str
    admin_state_up: bool
    router_id: str
    external_ip: str | None  # the router's gateway address the tunnels leave from
    ipsec_site_connections: list[SiteConnectionSyncData]


class ConnectionStatus(TypedDict):
    status: Status
    updated_pending_status: bool


class ServiceStatus(TypedDict):
    id: str
    status: Status
    updated_pending_status: bool
    ipsec_site_connections: dict[str, ConnectionStatus]


class VpnPluginApi(Api):
    """The agent's end of ``ipsec_driver``."""

    topic = TOPIC
    version = VERSION

    async def update_status(self, ctx: dict[str, Any], status: list[ServiceStatus]) -> None:
        await self.caller.call(ctx, "update_status", status=status)
