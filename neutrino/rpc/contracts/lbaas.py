"""Load-balancer agents <-> server (the ``haproxy`` provider of the Octavia v2 API).

A load balancer whose provider is ``haproxy`` is scheduled to one
``neutrino-lbaas-agent`` (agent type ``Loadbalancerv2 agent``, as Neutron's
LBaaS v2 agent reported itself). The agent runs one HAProxy per load balancer
in a namespace ``qlbaas-<load balancer id>`` holding the VIP port.

Agents -> server on topic ``n-lbaasv2-plugin``, version 1.0:
``get_ready_devices(host)`` (the load balancers scheduled to the host),
``get_loadbalancer(loadbalancer_id)`` (one load balancer's whole tree,
``LoadBalancerSyncData``, or None once it is gone), ``update_status`` (what
HAProxy made of a tree: the pending work done, or ERROR, and the operating
statuses read from its stats socket).

Server -> the agent hosting a load balancer, cast on ``n-lbaasv2_agent.<host>``,
version 1.0: ``loadbalancer_updated(loadbalancer_id)`` after any change to its
tree (a hint: the agent reads the tree again), ``loadbalancer_deleted`` once it
is gone.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from neutrino.rpc.contracts.base import Api

TOPIC = "n-lbaasv2-plugin"  # Neutron LBaaS v2's LOADBALANCER_PLUGINV2
AGENT_TOPIC = "n-lbaasv2_agent"  # and its LOADBALANCER_AGENTV2
VERSION = "1.0"
AGENT_TYPE = "Loadbalancerv2 agent"
BINARY = "neutrino-lbaas-agent"
#: the provider whose load balancers these agents realise
PROVIDER = "haproxy"

OperatingStatus = Literal["ONLINE", "OFFLINE", "DEGRADED", "ERROR", "NO_MONITOR"]


class VipSyncData(TypedDict):
    port_id: str
    mac_address: str
    address: str
    prefixlen: int  # of the VIP subnet
    gateway_ip: str | None  # the VIP subnet's: the namespace's default route
    network_id: str
    mtu: int
    #: the VIP port's other subnets' CIDRs (host routes are not needed: on link)
    host_routes: list[dict[str, str]]


class HealthMonitorSyncData(TypedDict):
    id: str
    type: str  # HTTP, HTTPS, TCP, PING, TLS-HELLO
    delay: int  # seconds between checks
    timeout: int  # seconds a check may take
    max_retries: int  # successes to go UP
    max_retries_down: int  # failures to go DOWN
    http_method: str | None
    url_path: str | None
    expected_codes: str | None  # "200", "200-204", "200,202"
    http_version: float | None
    domain_name: str | None
    admin_state_up: bool


class MemberSyncData(TypedDict):
    id: str
    address: str
    protocol_port: int
    weight: int  # 0: no new connections
    backup: bool
    admin_state_up: bool
    monitor_address: str | None
    monitor_port: int | None


class PoolSyncData(TypedDict):
    id: str
    protocol: str  # HTTP, HTTPS, TCP, PROXY, PROXYV2
    lb_algorithm: str  # ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP
    #: {"type": SOURCE_IP | HTTP_COOKIE | APP_COOKIE, "cookie_name": ...} or None
    session_persistence: dict[str, Any] | None
    admin_state_up: bool
    members: list[MemberSyncData]
    healthmonitor: HealthMonitorSyncData | None


class L7RuleSyncData(TypedDict):
    id: str
    type: str  # PATH, HOST_NAME, HEADER, COOKIE, FILE_TYPE
    compare_type: str  # EQUAL_TO, STARTS_WITH, ENDS_WITH, CONTAINS, REGEX
    key: str | None  # the header's or cookie's name
    value: str
    invert: bool
    admin_state_up: bool


class L7PolicySyncData(TypedDict):
    id: str
    action: str  # REDIRECT_TO_URL, REDIRECT_TO_POOL, REDIRECT_PREFIX, REJECT
    position: int
    redirect_url: str | None
    redirect_prefix: str | None
    redirect_pool_id: str | None
    redirect_http_code: int | None
    admin_state_up: bool
    rules: list[L7RuleSyncData]


class ListenerSyncData(TypedDict):
    id: str
    protocol: str  # HTTP, HTTPS (passed through), TCP
    protocol_port: int
    connection_limit: int  # -1: unlimited
    admin_state_up: bool
    default_pool_id: str | None
    timeout_client_data: int  # milliseconds
    timeout_member_connect: int
    timeout_member_data: int
    timeout_tcp_inspect: int
    insert_headers: dict[str, str]
    allowed_cidrs: list[str] | None
    l7policies: list[L7PolicySyncData]


class FlavorSyncData(TypedDict, total=False):
    """The options of the load balancer's flavor this provider applies."""

    maxconn: int  # HAProxy's global connection limit, below the listeners' sum
    nbthread: int  # HAProxy's threads


class LoadBalancerSyncData(TypedDict):
    id: str
    #: bumped by every change to the tree: a report names the one it applied
    revision_number: int
    admin_state_up: bool
    provisioning_status: str  # as the server has it (PENDING_*, ACTIVE, ERROR)
    vip: VipSyncData
    listeners: list[ListenerSyncData]
    pools: list[PoolSyncData]
    flavor: FlavorSyncData  # {} without a flavor (and from a server before flavors)


class ObjectStatus(TypedDict):
    id: str
    operating_status: OperatingStatus


class Stats(TypedDict):
    """Octavia's listener (and, summed, load-balancer) statistics."""

    bytes_in: int
    bytes_out: int
    active_connections: int
    total_connections: int
    request_errors: int


class StatusReport(TypedDict):
    """What an agent made of one load balancer's tree at ``revision_number``
    (a report of an older tree than the server's completes nothing).

    ``applied``: HAProxy runs the tree as read (the pending work is done);
    False with ``error``: it could not (the tree goes to ERROR, the agent
    retries). The operating statuses come from HAProxy's stats socket."""

    loadbalancer_id: str
    revision_number: int
    applied: bool
    error: str
    loadbalancer: OperatingStatus
    listeners: list[ObjectStatus]
    pools: list[ObjectStatus]
    members: list[ObjectStatus]
    #: listener id -> its counters since the agent runs the load balancer
    stats: dict[str, Stats]


class LbaasPluginApi(Api):
    """The agent's end of ``n-lbaasv2-plugin``."""

    topic = TOPIC
    version = VERSION

    async def get_ready_devices(self, host: str) -> list[str]:
        return await self.caller.call({}, "get_ready_devices", host=host)

    async def get_loadbalancer(self, loadbalancer_id: str) -> LoadBalancerSyncData | None:
        return await self.caller.call({}, "get_loadbalancer", loadbalancer_id=loadbalancer_id)

    async def update_status(self, host: str, report: StatusReport) -> None:
        await self.caller.call({}, "update_status", host=host, report=report)
