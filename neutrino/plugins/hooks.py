"""Explicit, typed hooks between plugins.

A plugin that must veto or follow another's operation registers a callable
under a named hook declared here, so every cross-plugin dependency is
findable with grep; there is no open publish/subscribe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.engine import Connection

from neutrino.context import Context
from neutrino.db.query import Page
from neutrino.plugins.providers import Provider

if TYPE_CHECKING:
    from neutrino.ovn.northbound import Northbound
    from neutrino.ovn.ovsdb import OvnDatabase

# (conn, ctx, id) -> None, or what to do once the delete has committed (tell the
# agents what it changed on hosts); raise a NeutronException to veto
DeleteCheck = Callable[[Connection, Context, str], Callable[[], None] | None]
# (conn, ctx, port as it is about to be committed, port as it was) -> None, when its
# fixed IPs were given; raise to veto the update
PortUpdateCheck = Callable[[Connection, Context, dict[str, Any], dict[str, Any]], None]
# (conn, the port as it is about to be committed, the create's or update's data)
# -> None: inside the port's transaction, once the extension drivers ran, as the
# qos plugin checks that the port's driver supports its policy's rules; raise to veto
PortWrite = Callable[[Connection, dict[str, Any], dict[str, Any]], None]


# (conn, port id) -> None: the port is being removed, by the API or by the plugin
# that owns it (a router's interface): what hangs on it follows, in the transaction
PortRemoved = Callable[[Connection, str], None]
# (network id) -> None: a change of the network or of one of its subnets has
# committed (what hosts built on it, routers say, may have to follow)
NetworkChanged = Callable[[str], None]
# (conn, views) -> None: add a plugin's attributes to floating IP views (one read
# for all of them), as the port forwarding plugin adds port_forwardings
ViewsExtender = Callable[[Connection, list[dict[str, Any]]], None]
# (conn, port views, the page they were read as) -> None: add a service plugin's
# attributes to port views, in one read for the page (the trunk plugin adds
# trunk_details to its parent ports); run by the core plugin wherever it
# completes port views, so with no plugin registered a port read costs nothing more
PortViewsExtender = Callable[[Connection, list[dict[str, Any]], Page], None]
# (conn, the sync data of a chunk of routers) -> None: add a service's part of
# each router to what its L3 agent is sent (``sync_routers``), in a read or two
# for the whole chunk: the firewall groups on its ports, its metering labels
RouterSyncExtender = Callable[[Connection, list[dict[str, Any]]], None]
# (the logs created, deleted or switched on or off) -> None: once committed, the
# plugin of their resources tells its agents (the firewall plugin, its routers')
LogsChanged = Callable[[list[dict[str, Any]]], None]
# (conn, network id, the create or update's data, created) -> None: inside the
# network's transaction, as the RBAC plugin turns ``shared`` and
# ``router:external`` into its entries; raise to veto
NetworkWrite = Callable[[Connection, str, dict[str, Any], bool], None]
# (conn, floating IP id, the create or update's data, created) -> None: inside the
# floating IP's transaction, once its row is written, as the qos plugin binds its
# ``qos_policy_id``; raise to veto
FloatingIpWrite = Callable[[Connection, str, dict[str, Any], bool], None]
# (conn, router id, its project, the gateway as given, or None when it is
# cleared) -> None: inside the router's create or update, once its gateway is
# written, as the qos plugin binds the gateway's ``qos_policy_id``; raise to veto
RouterGatewayWrite = Callable[[Connection, str, str | None, dict[str, Any] | None], None]
# (conn, router id, the create's or update's data, created) -> None: inside the
# router's transaction, once its gateway and routes are written, as the ndp_proxy
# plugin settles the router's ``enable_ndp_proxy``; raise to veto
RouterWrite = Callable[[Connection, str, dict[str, Any], bool], None]
# (conn, router id) -> None: inside the transaction that takes a router's gateway
# away (cleared, moved to another network, the router deleted); raise to veto, as
# the VPN plugin does while the router has VPN services
RouterGatewayRemoval = Callable[[Connection, str], None]
# (conn, router id, the subnets leaving it) -> None: inside the transaction that
# removes a router interface; raise to veto, as the VPN plugin does for a subnet
# its services or connections use
RouterInterfaceRemoval = Callable[[Connection, str, list[str]], None]
# (security group ids) -> None: once a change of the groups or their rules (a
# group's delete too) has committed, as the ovn driver rewrites their port groups
SecurityGroupsChanged = Callable[[set[str]], None]
# after a committed change of address groups: id -> its addresses (None: deleted)
AddressGroupsChanged = Callable[[dict[str, "list[str] | None"]], None]
# (conn, an agent's reported state) -> None: inside the transaction that records
# an agent's report, as ML2 maps hosts to the segments they reach
AgentReported = Callable[[Connection, dict[str, Any]], None]


@dataclass(frozen=True)
class DhcpTargets:
    """Whom a change's DHCP notification goes to: read inside the change's
    transaction, it saves the notification a transaction of its own."""

    hosts: list[str]
    needs_agents: bool = False  # and scheduling could give the network one it lacks


@dataclass(frozen=True)
class JoinedTargets:
    """A ``DhcpTargets`` read as a subquery, outer-joined (``ON true``) to a
    statement the caller sends anyway, of its network's row: at least one row
    per network, its columns named ``dhcp_*``, ordered by ``order_by``."""

    rows: Any  # the subquery; parameters network_id and those of ``params``
    order_by: Any
    params: Callable[[], dict[str, Any]]
    # (the joined statement's rows, the parameters ``params`` gave it)
    read: Callable[[list[Any], dict[str, Any]], DhcpTargets]


class DhcpNotifications(Protocol):
    """What the core plugin tells the DHCP agents' scheduler, and asks it."""

    def notify(self, method: str, payload: dict[str, Any], network_id: str,
               hosts: list[str] | None = None, targets: DhcpTargets | None = None
               ) -> None:
        """A committed change of the network (``hosts``: those serving it before a
        delete took its bindings; ``targets``: as ``targets`` read them)."""

    def targets(self, conn: Connection, method: str, network_id: str) -> DhcpTargets | None:
        """Whom ``notify`` would tell of ``method`` now, read in the caller's
        transaction (None: ``notify`` reads it itself)."""
        return None

    def joined_targets(self) -> JoinedTargets | None:
        """``targets`` after a change that schedules (a port create), for a caller
        that reads the network's row in its transaction anyway: the rows to join
        to it, to save the round trip (None: not offered; call ``targets``)."""
        return None

    def hosts_of(self, network_id: str) -> list[str]:
        """The hosts whose DHCP agents serve the network now."""
        return []

    def active_networks(self, host: str) -> list[str]:
        """The networks the DHCP agent on ``host`` should serve."""
        return []


class NoDhcpAgents(DhcpNotifications):
    """No DHCP scheduler is loaded: nobody to tell, nothing to serve."""


# Segmentation ids first to last of a physical network (None: of a tunnel type)
IdRange = tuple[str | None, int, int]
# network type -> where a network takes its segmentation id: groups of ranges,
# in order of preference (an id of the first group that has a free one)
SegmentPools = dict[str, list[list[IdRange]]]


class SegmentRanges(Protocol):
    """The network segment ranges (network-segment-range) the core plugin's type
    drivers allocate from, once the plugin serving them sets itself in
    ``Hooks.segment_ranges``; without it, the configured ranges only."""

    def follow_config(self, conn: Connection, configured: dict[str, list[IdRange]]
                      ) -> dict[str, list[IdRange]]:
        """At start-up, in the core plugin's sync: the default ranges become
        ``configured`` (network type -> the ranges its type driver is configured
        with); every range of those types, which their free ids follow."""
        ...

    def pools(self, conn: Connection, project_id: str | None) -> SegmentPools:
        """Where a network of ``project_id`` takes its id, per network type: the
        project's own ranges, then the shared ones less other projects' (one read)."""
        ...


class FlavorProviders(Protocol):
    """What a service that serves flavors asks the flavors plugin."""

    def provider_in(self, conn: Connection, flavor_id: str, service_type: str,
                    lock: bool = False) -> Provider:
        """The provider serving a new resource of the flavor, read in the caller's
        transaction (``lock``: the flavor's row held until it ends, so that it
        is not deleted under it); Neutron's errors when it serves none."""
        ...


class SecurityGroupViews(Protocol):
    """What the security groups' plugin shows a backend that follows the groups."""

    def views(self, group_ids: list[str] | None) -> list[dict[str, Any]]:
        """The groups ``group_ids`` (every group: None) with their rules, as an
        admin sees them."""
        ...

    def default_of(self, project_id: str) -> str | None:
        """The project's default group, if it has one yet."""
        ...

    def address_groups(self) -> dict[str, list[str]]:
        """Every address group's addresses, by address group."""
        ...


class AgentReports(Protocol):
    """The agents' plugin, recording reports a backend makes for agents of its
    own (the ovn driver, for the chassis of OVN's Southbound database)."""

    def record(self, states: list[dict[str, Any]]) -> None:
        """Each state as an agent's report (a heartbeat now), in one transaction."""
        ...


class OvnRouters(Protocol):
    """The ovn-router plugin, as the ovn driver's drift check asks it of routers."""

    def router_ids(self) -> set[str]:
        """Every router's id (neutrino's database)."""
        ...

    def present_router_ids(self, replica: OvnDatabase) -> set[str]:
        """The routers OVN holds rows of."""
        ...

    def drift(self, router_id: str, replica: OvnDatabase) -> str | None:
        """How OVN's rows of the router differ ("missing"...); None when in step."""
        ...

    def write_router(self, router_id: str) -> None:
        """Write the router, whole, as it is now."""

    def routers_updated(self, router_ids: Sequence[str]) -> None:
        """After a committed change of these routers (a service plugin's, as the
        port forwardings'): written, or left to the maintenance task if OVN is away."""

    def forget(self, router_id: str) -> None:
        """Remove OVN's rows of a router neutrino no longer has."""


@dataclass
class Hooks:
    before_network_delete: list[DeleteCheck] = field(default_factory=list)
    before_subnet_delete: list[DeleteCheck] = field(default_factory=list)
    before_port_delete: list[DeleteCheck] = field(default_factory=list)
    on_port_removed: list[PortRemoved] = field(default_factory=list)
    # inside the group's delete, before it: the logging plugin deletes its logs
    before_security_group_delete: list[DeleteCheck] = field(default_factory=list)
    after_security_groups_change: list[SecurityGroupsChanged] = field(default_factory=list)
    after_address_groups_change: list[AddressGroupsChanged] = field(default_factory=list)
    after_network_change: list[NetworkChanged] = field(default_factory=list)
    before_port_update_commit: list[PortUpdateCheck] = field(default_factory=list)
    before_port_write: list[PortWrite] = field(default_factory=list)
    extend_floatingips: list[ViewsExtender] = field(default_factory=list)
    on_floatingip_write: list[FloatingIpWrite] = field(default_factory=list)
    # the routers' views (API and agents' sync data): what a service adds to them
    extend_routers: list[ViewsExtender] = field(default_factory=list)
    on_router_gateway_write: list[RouterGatewayWrite] = field(default_factory=list)
    on_router_write: list[RouterWrite] = field(default_factory=list)
    # attribute -> SQL expression over the routers table: what a service adds to
    # the routers' filters (the ndp_proxy plugin's ``enable_ndp_proxy``)
    router_filters: dict[str, Any] = field(default_factory=dict)
    # each with the attributes it adds (a list asked for other fields skips it)
    extend_ports: list[tuple[frozenset[str], PortViewsExtender]] = field(
        default_factory=list)
    extend_router_sync: list[RouterSyncExtender] = field(default_factory=list)
    after_logs_change: list[LogsChanged] = field(default_factory=list)
    on_network_write: list[NetworkWrite] = field(default_factory=list)
    before_router_gateway_remove: list[RouterGatewayRemoval] = field(default_factory=list)
    before_router_interface_remove: list[RouterInterfaceRemoval] = field(
        default_factory=list)
    on_agent_report: list[AgentReported] = field(default_factory=list)
    # inside a flavor's delete, before it: a service whose resources name the
    # flavor vetoes with FlavorInUse (the router plugin, for its routers' flavor_id)
    before_flavor_delete: list[DeleteCheck] = field(default_factory=list)
    # the flavors plugin (it sets itself here when it is built): None without it
    flavors: FlavorProviders | None = None
    # the security groups' and the agents' plugins (ML2's companions: always
    # there with ML2; each sets itself here when it is built)
    security_groups: SecurityGroupViews | None = None
    agent_reports: AgentReports | None = None
    # OVN's Northbound database, when ML2's ovn driver is loaded (it sets it):
    # the OVN router plugin writes routers into the same connection
    ovn_northbound: Northbound | None = None
    # the ovn-router plugin, when loaded: the drift check covers its routers
    ovn_routers: OvnRouters | None = None
    # the DHCP agents' scheduler (one; it sets itself here when it is built)
    dhcp: DhcpNotifications = field(default_factory=NoDhcpAgents)
    # the network segment ranges (one; their plugin sets itself here when it is
    # built): None allocates from the configured ranges
    segment_ranges: SegmentRanges | None = None
    # set by the auto_allocate plugin: external networks show ``is_default``, the
    # networks table's column, written by the core plugin with the rest of the
    # network (only an external network is the default); that plugin vetoes a
    # second default through on_network_write
    default_external_network: bool = False

    def run(self, hook: list[Any], *args: Any) -> list[Callable[[], None]]:
        """Each check in turn; what they gave to do once committed."""
        then = []
        for check in hook:
            after = check(*args)
            if after is not None:
                then.append(after)
        return then
