"""The ML2 core plugin: networks, subnets, ports and subnet pools.

Each API call is one short write transaction (retried on conflict) over the
table code in ``plugins/core``. Type drivers give networks their segments;
mechanism drivers are called inside the transaction (precommit) and after it
(postcommit), as ``plugins/ml2/api.py`` states.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.config import ConfigError
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, Page, select_page
from neutrino.db.util import bump, check_revision
from neutrino.definitions.portbindings import (
    HOST_ID,
    PROFILE,
    VIF_DETAILS,
    VIF_TYPE,
    VIF_TYPE_BINDING_FAILED,
    VNIC_TYPE,
)
from neutrino.definitions.segment import SegmentNotFound
from neutrino.ipam import routed
from neutrino.plugins import loader
from neutrino.plugins.base import Environment, Plugin
from neutrino.plugins.core import address_scopes, networks, ports, subnetpools, subnets
from neutrino.plugins.hooks import DhcpNotifications, DhcpTargets, IdRange
from neutrino.plugins.ml2 import bindings, host_segments, segments
from neutrino.plugins.ml2.api import NetworkContext, PortContext, SubnetContext
from neutrino.plugins.ml2.config import OPTION_GROUPS
from neutrino.plugins.ml2.dhcp_rpc import DhcpRpcCallback
from neutrino.plugins.ml2.l2pop import L2Population
from neutrino.plugins.ml2.mechanisms import MechanismDriverError, MechanismManager
from neutrino.plugins.ml2.metadata_rpc import MetadataRpcCallback
from neutrino.plugins.ml2.port_network import PortNetworkReader
from neutrino.plugins.ml2.rpc import Ml2RpcCallbacks
from neutrino.plugins.ml2.types import TypeManager, check_requested_mtu
from neutrino.rpc import topics
from neutrino.rpc.contracts.l2 import L2AgentNotifier, L2PopulationNotifier
from neutrino.rpc.notifier import Notifier

LOG = logging.getLogger(__name__)

# Extension drivers ML2 always loads after the configured ones: the port
# attributes Neutron's ML2 offers without configuration.
BUILTIN_EXTENSION_DRIVERS: tuple[str, ...] = ("allowed_address_pairs", "extra_dhcp_opt",
                                              "security_group", "network_availability_zone")


class Ml2Plugin(Plugin):
    supported_extension_aliases = (
        "external-net", "subnet-external-network", "net-mtu", "standard-attr-tag",
        "tag-creation", "tag-ports-during-bulk-creation", "quotas",
        "quota_details", "quota-check-limit", "quota-check-limit-default",
        "project-id", "pagination", "sorting", "filter-validation",
        "standard-attr-description", "standard-attr-revisions", "revision-if-match",
        "standard-attr-timestamp",
        "subnet_allocation", "default-subnetpools", "ip-substring-filtering",
        "empty-string-filtering", "provider", "multi-provider", "net-mtu-writable",
        "binding", "binding-extended", "segment", "standard-attr-segment", "l2_adjacency",
        "port-mac-address-regenerate",
        "subnetpool-prefix-ops", "subnet_onboard", "address-scope", "subnet-service-types",
        # the allowed-address-pairs driver is always loaded (BUILTIN_EXTENSION_DRIVERS)
        "aap-reject-multicast",
    )
    option_groups = OPTION_GROUPS
    #: service plugins (by entry point name) built with this one, as Neutron's ML2
    #: brings them: security groups, address groups, network RBAC, /v2.0/agents and
    #: availability zones, and the DHCP agents' scheduler, which ML2 tells of every
    #: change through ``hooks.dhcp``
    companion_plugins: ClassVar[tuple[str, ...]] = (
        "security_group", "address_group", "rbac", "agent", "dhcp_agent_scheduler")
    extra_filters: ClassVar[dict[str, tuple[str, ...]]] = {"ports": ports.EXTRA_FILTERS}

    def __init__(self, env: Environment):
        super().__init__(env)
        conf = env.conf
        self.settings = conf.DEFAULT
        for resource, table in (("network", models.networks), ("subnet", models.subnets),
                                ("port", models.ports), ("subnetpool", models.subnetpools)):
            env.quota.register(resource, table)
        def driver_class(group: str, name: str, option: str) -> Any:
            """A driver's class; one that is not there names the option and file."""
            try:
                return loader.find(group, name)
            except loader.PluginLoadError as error:
                raise ConfigError(f"{error}, set by {conf.source('ml2', option)}") from None

        type_drivers = {name: driver_class(loader.ML2_TYPE_GROUP, name, "type_drivers")(conf)
                        for name in conf.ml2.type_drivers}
        try:
            self.types = TypeManager(type_drivers, conf.ml2.tenant_network_types,
                                     conf.DEFAULT.global_physnet_mtu, env.hooks)
        except ValueError as error:
            raise ConfigError(f"[ml2] {error}, set by "
                              f"{conf.source('ml2', 'tenant_network_types')}") from None
        self.mechanisms = MechanismManager([
            driver_class(loader.ML2_MECHANISM_GROUP, name, "mechanism_drivers")(conf)
            for name in conf.ml2.mechanism_drivers])
        names = [*conf.ml2.extension_drivers,
                 *(n for n in BUILTIN_EXTENSION_DRIVERS if n not in conf.ml2.extension_drivers)]
        self.extension_drivers = [
            driver_class(loader.ML2_EXTENSION_GROUP, name, "extension_drivers")(conf)
            for name in names]
        self.supported_extension_aliases = type(self).supported_extension_aliases + tuple(
            alias for driver in self.extension_drivers
            for alias in (driver.extension_alias, *driver.extension_aliases) if alias)
        self.notifier = L2AgentNotifier(Notifier(env.bus))
        #: routed networks (the segments service plugin): subnets on segments
        self.routed = subnets.routed_networks(conf.DEFAULT)
        if self.routed:
            env.hooks.on_agent_report.append(host_segments.AgentReports())
        self.l2pop = (L2Population(L2PopulationNotifier(Notifier(env.bus)))
                      if "l2population" in conf.ml2.mechanism_drivers else None)
        for driver in self.mechanisms.drivers:
            driver.initialize(self)

    @property
    def dhcp(self) -> DhcpNotifications:
        """The DHCP agents' scheduler (a companion): told of every change."""
        return self.env.hooks.dhcp

    @functools.cached_property
    def _port_network(self) -> PortNetworkReader:
        """Made at the first port create, once every plugin has set its hooks."""
        return PortNetworkReader(self.env.quota, self.dhcp)

    def sync_database(self) -> None:
        self.db.write(self.types.sync_allocations)

    def start(self) -> None:
        for driver in self.mechanisms.drivers:
            driver.start()

    def stop(self) -> None:
        for driver in self.mechanisms.drivers:
            driver.stop()

    def periodic_tasks(self) -> list[tuple[float, Callable[[], None]]]:
        return [task for driver in self.mechanisms.drivers for task in driver.periodic_tasks()]

    def taggable_tables(self) -> dict[str, Any]:
        return {"networks": models.networks, "subnets": models.subnets,
                "ports": models.ports, "subnetpools": models.subnetpools}

    # --- plumbing ------------------------------------------------------------------

    def _create(self, ctx: Context, resource: str, items: list[dict[str, Any]],
                make: Callable[[Connection, dict[str, Any]], dict[str, Any]],
                postcommit: Callable[[dict[str, Any]], Any] | None = None,
                undo: Callable[[dict[str, Any]], None] | None = None,
                quota_checked: bool = False) -> list[dict[str, Any]]:
        """Create ``items`` in one transaction; then the drivers' postcommit, and if
        that fails, ``undo`` every created item and report the failure.
        ``quota_checked``: ``make`` checks the quota itself."""
        created = self._insert(resource, items, make, quota_checked)
        if postcommit is not None:
            try:
                for view in created:
                    self.mechanisms.call(f"create_{resource}_postcommit", postcommit(view))
            except MechanismDriverError:
                if undo is not None:
                    for view in created:
                        undo(view)
                raise
        return created

    def _insert(self, resource: str, items: list[dict[str, Any]],
                make: Callable[[Connection, dict[str, Any]], dict[str, Any]],
                quota_checked: bool = False) -> list[dict[str, Any]]:
        quota = self.env.quota

        def work(conn: Connection) -> list[dict[str, Any]]:
            return [quota.create(conn, resource, item, make, quota_checked) for item in items]

        return self.db.write(work)

    def _extension_filters(self, collection: str, query: CollectionQuery) -> list:
        return [clause for driver in self.extension_drivers
                for clause in driver.filter_clauses(collection, query)]

    # --- networks ------------------------------------------------------------------

    def _make_network(self, conn: Connection, ctx: Context, data: dict[str, Any]
                      ) -> dict[str, Any]:
        wanted = segments.requested(data)
        if wanted is None:
            segs = [self.types.allocate_tenant_segment(conn, data.get("project_id"))]
        else:
            for segment in wanted:
                self.types.validate_provider_segment(segment)
            segs = [self.types.reserve_provider_segment(conn, s, data.get("project_id"))
                    for s in wanted]
        max_mtu = self.types.network_mtu(segs)
        check_requested_mtu(data.get("mtu"), max_mtu)
        view = networks.create(conn, data, data.get("mtu") or max_mtu)
        for write in self.env.hooks.on_network_write:  # shared, router:external
            write(conn, view["id"], data, True)
        stored = segments.add(conn, view["id"], segs)
        if self.routed:
            host_segments.map_segments(conn, stored)
        view.update(segments.provider_view(stored))
        self._is_default(view)
        for driver in self.extension_drivers:
            driver.process_create_network(conn, data, view)
        self.mechanisms.call("create_network_precommit",
                             NetworkContext(conn, ctx, view, segments=stored))
        return view

    def _network_creator(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        return self._create(
            ctx, "network", items, lambda conn, d: self._make_network(conn, ctx, d),
            postcommit=lambda view: NetworkContext(None, ctx, view),
            undo=lambda view: self._undo(self.delete_network, view))

    def create_network(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._network_creator(ctx, [data])[0]

    def create_network_bulk(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        return self._network_creator(ctx, items)

    def _extend_networks(self, conn: Connection, views: list[dict[str, Any]]
                         ) -> list[dict[str, Any]]:
        ids = [v["id"] for v in views]
        by_network = segments.of_networks(conn, None if len(ids) > 200 else ids)
        for view in views:
            view.update(segments.provider_view(by_network.get(view["id"], [])))
            self._is_default(view)
        page = Page.of(ids)
        for driver in self.extension_drivers:
            driver.extend_networks(conn, views, page)
        return views

    def _is_default(self, view: dict[str, Any]) -> None:
        """``is_default`` is auto-allocated-topology's, and only external networks
        have it (as in Neutron): elsewhere the view does not show it."""
        if not self.env.hooks.default_external_network:
            view.pop("is_default", None)

    def _network(self, conn: Connection, ctx: Context, network_id: str) -> dict[str, Any]:
        return self._extend_networks(conn, [networks.get(conn, ctx, network_id)])[0]

    def get_network(self, ctx: Context, network_id: str) -> dict[str, Any]:
        return self._read(lambda conn: self._network(conn, ctx, network_id))

    def get_networks(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        where = segments.filter_clauses(query) + self._extension_filters("networks", query)
        return self._read(lambda conn: self._extend_networks(
            conn, networks.list_(conn, ctx, query, where)))

    def update_network(self, ctx: Context, network_id: str, data: dict[str, Any],
                       if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> tuple[dict, dict]:
            original = self._network(conn, ctx, network_id)
            changed = {k: v for k, v in data.items() if k in segments.PROVIDER_KEYS + (
                "segments",) and v != original.get(k)}
            if changed:
                raise exc.InvalidInput(error_message="Plugin does not support updating the "
                                                     "following provider network attributes: "
                                                     f"{sorted(changed)}")
            values = data
            if "mtu" in data:
                networks.check_mtu_for_subnets(network_id, data["mtu"],
                                               networks.subnet_versions(conn, network_id))
                segs = segments.of_networks(conn, [network_id]).get(network_id, [])
                max_mtu = self.types.network_mtu(segs)
                check_requested_mtu(data["mtu"], max_mtu)
                values = {**data, "mtu": data["mtu"] or max_mtu}  # 0: the most they carry
            networks.update(conn, ctx, network_id, values, if_revision)
            for write in self.env.hooks.on_network_write:
                write(conn, network_id, data, False)
            for driver in self.extension_drivers:
                driver.process_update_network(conn, data, {
                    "id": network_id, "project_id": original["project_id"]})
            current = self._network(conn, ctx, network_id)
            self.mechanisms.call("update_network_precommit",
                                 NetworkContext(conn, ctx, current, original))
            return original, current

        original, current = self.db.write(work)
        self.mechanisms.call("update_network_postcommit",
                             NetworkContext(None, ctx, current, original), keep_going=True)
        self.notifier.network_update(current)
        self.dhcp.notify("network_update_end", {"network": current}, network_id)
        self._network_changed(network_id, data)
        return current

    def _network_changed(self, network_id: str, data: dict[str, Any]) -> None:
        """Service plugins follow a change of the network or of its subnets that
        hosts may see (not of names, descriptions, tags)."""
        if set(data) - {"name", "description", "tags"}:
            self.env.hooks.run(self.env.hooks.after_network_change, network_id)

    def delete_network(self, ctx: Context, network_id: str,
                       if_revision: int | None = None) -> None:
        dhcp_hosts = self.dhcp.hosts_of(network_id)  # the delete takes the bindings

        def work(conn: Connection) -> NetworkContext:
            # a retried attempt starts afresh
            then[:] = self.env.hooks.run(self.env.hooks.before_network_delete, conn, ctx,
                                         network_id)
            context = NetworkContext(conn, ctx, self._network(conn, ctx, network_id))
            context.segments = segments.of_networks(conn, [network_id]).get(network_id, [])
            self.mechanisms.call("delete_network_precommit", context)
            networks.delete_(conn, ctx, network_id, if_revision)
            for segment in context.segments:
                self.types.release_segment(conn, segment)
            return context

        then: list[Callable[[], None]] = []
        context = self.db.write(work)
        for after in then:  # the service plugins' own deletes (floating IPs' ports)
            after()
        context.conn = None
        self._postcommit_quietly("delete_network_postcommit", context)
        self.notifier.network_delete(network_id)
        self.dhcp.notify("network_delete_end", {}, network_id, hosts=dhcp_hosts)

    def _postcommit_quietly(self, method: str, context: Any) -> None:
        """What is committed stands; a driver failing after it is only logged."""
        try:
            self.mechanisms.call(method, context, keep_going=True)
        except MechanismDriverError:
            LOG.warning("%s failed for %s; the change stands", method, context.current["id"])

    @staticmethod
    def _undo(delete: Callable[..., None], view: dict[str, Any]) -> None:
        try:
            delete(Context.admin(), view["id"])
        except exc.NotFound:
            pass

    # --- subnets -------------------------------------------------------------------

    def _make_subnet(self, conn: Connection, ctx: Context, data: dict[str, Any]
                     ) -> dict[str, Any]:
        view = subnets.create(conn, ctx, data, self.settings)
        self.mechanisms.call("create_subnet_precommit", SubnetContext(conn, ctx, view))
        return view

    def _subnet_creator(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        created = self._create(
            ctx, "subnet", items, lambda conn, d: self._make_subnet(conn, ctx, d),
            postcommit=lambda view: SubnetContext(None, ctx, view),
            undo=lambda view: self._undo(self.delete_subnet, view))
        for view in created:
            self.dhcp.notify("subnet_create_end", {"subnet": view}, view["network_id"])
        return created

    def create_subnet(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._subnet_creator(ctx, [data])[0]

    def create_subnet_bulk(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        return self._subnet_creator(ctx, items)

    def get_subnet(self, ctx: Context, subnet_id: str) -> dict[str, Any]:
        return self._read(lambda conn: subnets.get(conn, ctx, subnet_id))

    def get_subnets(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: subnets.list_(conn, ctx, query))

    def update_subnet(self, ctx: Context, subnet_id: str, data: dict[str, Any],
                      if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> SubnetContext:
            original = subnets.get(conn, ctx, subnet_id)
            subnets.update(conn, ctx, subnet_id, data, if_revision, self.settings)
            context = SubnetContext(conn, ctx, subnets.get(conn, ctx, subnet_id), original)
            self.mechanisms.call("update_subnet_precommit", context)
            return context

        context = self.db.write(work)
        context.conn = None
        self.mechanisms.call("update_subnet_postcommit", context, keep_going=True)
        self.dhcp.notify("subnet_update_end", {"subnet": context.current},
                         context.current["network_id"])
        self._network_changed(context.current["network_id"], data)
        return context.current

    def delete_subnet(self, ctx: Context, subnet_id: str,
                      if_revision: int | None = None) -> None:
        def work(conn: Connection) -> SubnetContext:
            self.env.hooks.run(self.env.hooks.before_subnet_delete, conn, ctx, subnet_id)
            context = SubnetContext(conn, ctx, subnets.get(conn, ctx, subnet_id))
            self.mechanisms.call("delete_subnet_precommit", context)
            subnets.delete_(conn, ctx, subnet_id, if_revision)
            return context

        context = self.db.write(work)
        context.conn = None
        self._postcommit_quietly("delete_subnet_postcommit", context)
        self.dhcp.notify("subnet_delete_end", {"subnet_id": subnet_id},
                         context.current["network_id"])

    # --- ports ---------------------------------------------------------------------

    def _make_port(self, conn: Connection, ctx: Context, data: dict[str, Any],
                   network: Any = None, contexts: dict[str, PortContext] | None = None
                   ) -> dict[str, Any]:
        """``network``: its row, when the caller read it in this transaction;
        ``contexts``: where to keep the drivers' precommit context, by port id."""
        view = ports.create(conn, ctx, data, self.settings.base_mac,
                            self.settings.max_fixed_ips_per_port, self.routed, network)
        self._ip_allocation([view])
        view.update(bindings.request(conn, view["id"], {}, data) or bindings.view(None))
        for driver in self.extension_drivers:
            driver.process_create_port(conn, data, view)
        for check in self.env.hooks.before_port_write:
            check(conn, view, data)
        context = PortContext(conn, ctx, view)
        self.mechanisms.call("create_port_precommit", context)
        if contexts is not None:
            contexts[view["id"]] = context
        return view

    def _port_creator(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        targets: dict[str, DhcpTargets | None] = {}  # by network, read once in the transaction
        # the postcommit context is the precommit's: what a driver noted there stays
        contexts: dict[str, PortContext] = {}

        def make(conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
            read = self._port_network.read(conn, ctx, data)  # the quota checked too
            view = self._make_port(conn, ctx, data, read.network, contexts)
            network_id = view["network_id"]
            if network_id not in targets:
                targets[network_id] = (read.dhcp if read.dhcp is not None else
                                       self.dhcp.targets(conn, "port_create_end", network_id))
            return view

        created = self._create(
            ctx, "port", items, make,
            postcommit=lambda view: replace(contexts[view["id"]], conn=None),
            undo=lambda view: self._undo(self.delete_port, view), quota_checked=True)
        for view in created:
            if view[HOST_ID]:
                self._bind(ctx, view)
            self._dhcp_port("port_create_end", view, targets.get(view["network_id"]))
            self._members_changed(None, view)
        return created

    def _members_changed(self, before: dict[str, Any] | None,
                         after: dict[str, Any] | None) -> None:
        """Tell the agents of the groups a port joined or left, or in which its
        addresses changed (rules with them as remote group now mean other IPs)."""
        def groups(port: dict[str, Any] | None) -> set[str]:
            return set(port.get("security_groups") or ()) if port else set()

        def addresses(port: dict[str, Any] | None) -> Any:
            if port is None:
                return None
            return (port["mac_address"], port["fixed_ips"], port.get("allowed_address_pairs"))

        if groups(before) != groups(after) or addresses(before) != addresses(after):
            self.notifier.security_groups_member_updated(groups(before) | groups(after))

    def _dhcp_port(self, method: str, port: dict[str, Any],
                   targets: DhcpTargets | None = None) -> None:
        self.dhcp.notify(method, {"port": port}, port["network_id"], targets=targets)

    def _dhcp_port_gone(self, port: dict[str, Any], targets: DhcpTargets | None = None
                        ) -> None:
        self.dhcp.notify("port_delete_end", {"port_id": port["id"],
                                             "fixed_ips": port["fixed_ips"]},
                         port["network_id"], targets=targets)

    def _bind(self, ctx: Context, view: dict[str, Any]) -> None:
        """Ask the mechanism drivers to bind the port on its host; store the outcome.

        Runs after the port's transaction: binding may take a driver time and
        must not hold the database."""
        host, network_id = view[HOST_ID], view["network_id"]
        with self.db.reader() as conn:
            agents = bindings.agents_on(conn, host, self.settings.agent_down_time)
            segs = segments.of_networks(conn, [network_id]).get(network_id, [])
            if self.routed and view["fixed_ips"] and len(segs) > 1:
                # the segment of its addresses first (a host may reach several)
                own = segments.of_subnets(conn, [ip["subnet_id"] for ip in view["fixed_ips"]])
                segs.sort(key=lambda segment: segment["id"] not in own)
        context = PortContext(None, ctx, view, host=host, vnic_type=view[VNIC_TYPE],
                              profile=view[PROFILE], agents=agents, segments_to_bind=segs)
        if self.mechanisms.bind_port(context):
            # bound: a driver's set_binding gave both
            assert context.bound_segment is not None and context.vif_type is not None
            result = (context.vif_type, context.vif_details, context.bound_segment.get("id"))
        else:
            LOG.warning("port %s could not be bound on host %s", view["id"], host)
            result = (VIF_TYPE_BINDING_FAILED, {}, None)
        self.db.write(lambda conn: bindings.store(conn, view["id"], host, *result))
        view.update({VIF_TYPE: result[0], VIF_DETAILS: result[1]})

    def create_port(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._port_creator(ctx, [data])[0]

    def create_port_bulk(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        return self._port_creator(ctx, items)

    def _extend_ports(self, conn: Connection, views: list[dict[str, Any]],
                      page: Page | None = None, fields: set[str] | None = None
                      ) -> list[dict[str, Any]]:
        """The bindings' and drivers' attributes; with ``fields``, only theirs
        that are wanted (a list asked for a few fields reads less)."""
        page = page or Page.of([v["id"] for v in views])
        self._ip_allocation(views)
        if fields is None or fields.intersection(bindings.VIEW_KEYS):
            rows = bindings.of_ports(conn, page)
            for view in views:
                view.update(bindings.view(rows.get(view["id"])))
        for driver in self.extension_drivers:
            if fields is None or driver.port_attributes is None or (
                    fields & driver.port_attributes):
                driver.extend_ports(conn, views, page)
        for names, extend in self.env.hooks.extend_ports:  # the service plugins'
            if fields is None or fields & names:
                extend(conn, views, page)
        return views

    def _ip_allocation(self, views: list[dict[str, Any]]) -> None:
        """``ip_allocation`` is an attribute of routed networks (the segments
        plugin's): with them every port shows it, "immediate" unless its row
        says otherwise; without them only a port made while they were on."""
        if self.routed:
            for view in views:
                view.setdefault("ip_allocation", routed.IMMEDIATE)

    def _port_fields(self, wanted: list[str] | None) -> set[str] | None:
        """The attributes a read must fill for ``wanted`` (None: all): those, and
        what the drivers' wanted attributes follow (dns_assignment: fixed_ips)."""
        if not wanted:
            return None
        fields = set(wanted)
        for driver in self.extension_drivers:
            if driver.port_attributes is None or fields & driver.port_attributes:
                fields |= driver.port_follows
        return fields

    def _port(self, conn: Connection, ctx: Context, port_id: str) -> dict[str, Any]:
        return self._extend_ports(conn, [ports.get(conn, ctx, port_id)])[0]

    # --- what service plugins read inside their transactions (CorePlugin) ---------------

    def network_row_in(self, conn: Connection, ctx: Context, network_id: str) -> Any:
        return networks.get_row(conn, ctx, network_id)

    def port_row_in(self, conn: Connection, ctx: Context, port_id: str) -> Any:
        return ports.get_row(conn, ctx, port_id)

    def port_in(self, conn: Connection, ctx: Context, port_id: str) -> dict[str, Any]:
        """The port's core attributes (no driver's extensions: cheap)."""
        return ports.get(conn, ctx, port_id)

    def subnet_in(self, conn: Connection, ctx: Context, subnet_id: str) -> dict[str, Any]:
        return subnets.get(conn, ctx, subnet_id)

    def subnets_in(self, conn: Connection, ctx: Context, query: CollectionQuery
                   ) -> list[dict[str, Any]]:
        return subnets.list_(conn, ctx, query)

    @staticmethod
    def networks_visible_to(ctx: Context) -> Any:
        return networks.visible(ctx)

    def ports_by_id(self, conn: Connection, port_ids: list[str]) -> list[dict[str, Any]]:
        """Full views of ``port_ids`` (as admin), for the agents' calls."""
        if not port_ids:
            return []
        query = CollectionQuery(filters={"id": list(port_ids)})
        return self._extend_ports(conn, ports.list_(conn, Context.admin(), query))

    # --- what a backend driver reads (the ovn driver: what it writes, and repairs) -----

    def ports_by_ids(self, port_ids: list[str]) -> list[dict[str, Any]]:
        return self._read(lambda conn: self.ports_by_id(conn, port_ids))

    def ports_of_networks(self, network_ids: list[str], device_owner: str | None = None
                          ) -> list[dict[str, Any]]:
        """The networks' ports (of ``device_owner`` only, when given), as an admin sees them."""
        filters: dict[str, list[Any]] = {"network_id": list(network_ids)}
        if device_owner is not None:
            filters["device_owner"] = [device_owner]
        query = CollectionQuery(filters=filters)
        return self._read(lambda conn: self._extend_ports(
            conn, ports.list_(conn, Context.admin(), query)))

    def subnets_by_id(self, subnet_ids: list[str]) -> dict[str, dict[str, Any]]:
        if not subnet_ids:
            return {}
        query = CollectionQuery(filters={"id": list(set(subnet_ids))})
        return {subnet["id"]: subnet for subnet in self._read(
            lambda conn: subnets.list_(conn, Context.admin(), query))}

    def subnet_facts(self, subnet_ids: list[str], conn: Connection | None = None
                     ) -> dict[str, dict[str, Any]]:
        """The few facts of subnets a port's backend write needs (``subnets.facts``);
        ``conn``: read in that transaction."""
        if not subnet_ids:
            return {}
        if conn is not None:
            return subnets.facts(conn, subnet_ids)
        return self._read(lambda conn: subnets.facts(conn, subnet_ids))

    def segments_by_network(self, network_ids: list[str] | None
                            ) -> dict[str, list[dict[str, Any]]]:
        """The segments of ``network_ids`` (of every network: None), by network."""
        return self._read(lambda conn: segments.of_networks(conn, network_ids))

    def segments_of(self, network_id: str) -> list[dict[str, Any]]:
        return self.segments_by_network([network_id]).get(network_id, [])

    def set_ports_status(self, up: list[str], down: list[str]) -> list[str]:
        """Ports a backend saw come up or go down (as an agent reports them); the
        ids whose status changed."""
        callbacks = Ml2RpcCallbacks(self)
        return [*callbacks.set_status(up, "ACTIVE", None),
                *callbacks.set_status(down, "DOWN", None)]

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        return {topics.PLUGIN: [Ml2RpcCallbacks(self), DhcpRpcCallback(self),
                                MetadataRpcCallback(self)]}

    def get_port(self, ctx: Context, port_id: str) -> dict[str, Any]:
        return self._read(lambda conn: self._port(conn, ctx, port_id))

    def get_ports(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        where = bindings.filter_clauses(query) + self._extension_filters("ports", query)
        fields = self._port_fields(query.fields)
        return self._read(lambda conn: self._extend_ports(
            conn, *ports.list_page(conn, ctx, query, where, fields), fields))

    def update_port(self, ctx: Context, port_id: str, data: dict[str, Any],
                    if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> tuple[PortContext, bool, list, DhcpTargets | None]:
            context, rebind = self._change_port(conn, ctx, port_id, data, if_revision)
            network_id = context.current["network_id"]
            return (context, rebind, segments.of_networks(conn, [network_id]).get(network_id, []),
                    self.dhcp.targets(conn, "port_update_end", network_id))

        context, rebind, segs, targets = self.db.write(work)
        context.conn = None
        self.mechanisms.call("update_port_postcommit", context, keep_going=True)
        if rebind and context.current[HOST_ID]:
            self._bind(ctx, context.current)
        self._tell_agents_of_update(context, segs, targets)
        return context.current

    def _tell_agents_of_update(self, context: PortContext, segs: list[dict[str, Any]],
                               targets: DhcpTargets | None = None) -> None:
        self.notifier.port_update(context.current, segs[0] if segs else None)
        self._moved_while_up(context)
        self._dhcp_port("port_update_end", context.current, targets)
        self._members_changed(context.original, context.current)

    def _moved_while_up(self, context: PortContext) -> None:
        """An ACTIVE port bound to another host (an HA router's ports follow its
        active host): l2population's entries move with it."""
        original, current = context.original, context.current
        if not self.l2pop or original is None or current["status"] != "ACTIVE" \
                or original.get(HOST_ID) == current.get(HOST_ID):
            return
        with self.db.reader() as conn:
            if original.get(HOST_ID):
                self.l2pop.ports_down(conn, [original], original[HOST_ID])
            if current.get(HOST_ID):
                self.l2pop.ports_up(conn, [current["id"]])

    def _change_port(self, conn: Connection, ctx: Context, port_id: str,
                     data: dict[str, Any], if_revision: int | None
                     ) -> tuple[PortContext, bool]:
        """Update inside the transaction; the context, and whether to bind again."""
        original = self._port(conn, ctx, port_id)
        if "mac_address" in data:
            data = self._new_mac(original, data)
        ports.update(conn, original, data, if_revision, self.settings.max_fixed_ips_per_port)
        host = data.get(HOST_ID)
        if self.routed and host and host != original[HOST_ID] and "fixed_ips" not in data:
            if original.get("ip_allocation") == routed.DEFERRED and not original["fixed_ips"]:
                ports.take_deferred(conn, original, host, self.settings.max_fixed_ips_per_port)
                data = {**data, "fixed_ips": None}  # its addresses are to be read again
            else:
                ports.check_host(conn, original, host)
        rebind = bindings.request(conn, port_id, original, data) is not None
        for driver in self.extension_drivers:
            driver.process_update_port(conn, data, {
                "id": port_id, "project_id": original["project_id"],
                "network_id": original["network_id"]})
        context = PortContext(conn, ctx, self._updated(conn, ctx, original, data, rebind),
                              original)
        for check in self.env.hooks.before_port_write:
            check(conn, context.current, data)
        if "fixed_ips" in data:
            self.env.hooks.run(self.env.hooks.before_port_update_commit, conn, ctx,
                               context.current, original)
        self.mechanisms.call("update_port_precommit", context)
        return context, rebind

    def _new_mac(self, original: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with a MAC made for ``mac_address: null``
        (port-mac-address-regenerate); a bound port keeps its MAC, as in Neutron."""
        mac = data["mac_address"] or ports.random_mac(self.settings.base_mac)
        vif_type = original.get(VIF_TYPE) or "unbound"
        if mac != original["mac_address"] and vif_type not in ("unbound", "binding_failed"):
            raise exc.PortBound(port_id=original["id"], vif_type=vif_type,
                                old_mac=original["mac_address"], new_mac=mac)
        return {**data, "mac_address": mac}

    def _updated(self, conn: Connection, ctx: Context, original: dict[str, Any],
                 data: dict[str, Any], rebind: bool) -> dict[str, Any]:
        """The port after ``data``: read again where it may have changed (its row,
        addresses, tags; its binding if asked again; the drivers whose attributes,
        or what they follow, ``data`` names), the rest as it was."""
        current = ports.get(conn, ctx, original["id"])
        self._ip_allocation([current])
        page = Page([original["id"]])
        if rebind:
            current.update(bindings.view(bindings.of_ports(conn, page).get(original["id"])))
        else:
            current.update({key: original[key] for key in bindings.VIEW_KEYS})
        touched = set(data) | ({"fixed_ips"} if "mac_address" in data else set())
        for names, _ in self.env.hooks.extend_ports:  # the service plugins' (a trunk's)
            current.update({key: original[key] for key in names if key in original})
        for driver in self.extension_drivers:
            kept = driver.port_attributes
            if kept is None or touched & (kept | driver.port_follows):
                driver.extend_ports(conn, [current], page)
            else:
                current.update({key: original[key] for key in kept if key in original})
        return current

    def delete_port(self, ctx: Context, port_id: str, if_revision: int | None = None) -> None:
        def work(conn: Connection) -> tuple[PortContext, DhcpTargets | None]:
            # a retried attempt starts afresh
            then[:] = self.env.hooks.run(self.env.hooks.before_port_delete, conn, ctx, port_id)
            context = self._remove_port(conn, ctx, port_id, if_revision)
            return context, self.dhcp.targets(conn, "port_delete_end",
                                              context.current["network_id"])

        then: list[Callable[[], None]] = []
        self.port_deleted(*self.db.write(work))
        for after in then:  # the service plugins tell their agents (routers, say)
            after()

    def _remove_port(self, conn: Connection, ctx: Context, port_id: str,
                     if_revision: int | None) -> PortContext:
        context = PortContext(conn, ctx, self._port(conn, ctx, port_id))
        self.mechanisms.call("delete_port_precommit", context)
        for removed in self.env.hooks.on_port_removed:
            removed(conn, port_id)
        ports.delete_(conn, port_id, if_revision)
        return context

    # --- ports of service plugins (routers, floating IPs), in their transaction -----------

    def create_port_in(self, conn: Connection, ctx: Context, data: dict[str, Any]
                       ) -> dict[str, Any]:
        """Make a port inside the caller's transaction (drivers' precommit runs);
        once committed the caller calls ``port_created``."""
        return self._make_port(conn, ctx, data)

    def port_created(self, ctx: Context, view: dict[str, Any]) -> None:
        self._postcommit_quietly("create_port_postcommit", PortContext(None, ctx, view))
        self._dhcp_port("port_create_end", view)
        self._members_changed(None, view)

    def update_port_in(self, conn: Connection, ctx: Context, port_id: str,
                       data: dict[str, Any]) -> PortContext:
        return self._change_port(conn, ctx, port_id, data, None)[0]

    def port_updated(self, context: PortContext) -> None:
        context.conn = None
        self._postcommit_quietly("update_port_postcommit", context)
        network_id = context.current["network_id"]
        with self.db.reader() as conn:
            segs = segments.of_networks(conn, [network_id]).get(network_id, [])
        self._tell_agents_of_update(context, segs)

    def delete_port_in(self, conn: Connection, ctx: Context, port_id: str) -> PortContext:
        """Delete a port its owner (a service plugin) no longer needs: no veto hooks."""
        return self._remove_port(conn, ctx, port_id, None)

    def port_deleted(self, context: PortContext, targets: DhcpTargets | None = None) -> None:
        context.conn = None
        self._postcommit_quietly("delete_port_postcommit", context)
        self._dhcp_port_gone(context.current, targets)
        self.notifier.port_delete(context.current["id"], context.current["network_id"])
        self._members_changed(context.current, None)
        if self.l2pop and context.current["status"] == "ACTIVE" and context.current[HOST_ID]:
            with self.db.reader() as conn:
                self.l2pop.ports_down(conn, [context.current], context.current[HOST_ID])

    # --- a port's bindings on several hosts (binding-extended) -------------------------

    def get_port_bindings(self, ctx: Context, port_id: str, query: CollectionQuery
                          ) -> list[dict[str, Any]]:
        def work(conn: Connection) -> Sequence[Any]:
            ports.get(conn, ctx, port_id)
            return bindings.all_of_port(conn, port_id)

        views = [bindings.extended_view(row) for row in self._read(work) if row.host]
        return [view for view in views
                if all(view.get(key) in wanted for key, wanted in query.filters.items())]

    def get_port_binding(self, ctx: Context, port_id: str, host: str) -> dict[str, Any]:
        def work(conn: Connection) -> Any:
            ports.get(conn, ctx, port_id)
            return bindings.one(conn, port_id, host)

        return bindings.extended_view(self._read(work))

    def _bind_extended(self, ctx: Context, port_id: str, host: str) -> dict[str, Any]:
        """Bind the port's binding on ``host`` through the mechanism drivers."""
        with self.db.reader() as conn:
            port = self._port(conn, ctx, port_id)
            row = bindings.one(conn, port_id, host)
        self._bind(ctx, {**port, HOST_ID: host, VNIC_TYPE: row.vnic_type,
                         PROFILE: row.profile})
        return self.get_port_binding(ctx, port_id, host)

    def create_port_binding(self, ctx: Context, port_id: str, data: dict[str, Any]
                            ) -> dict[str, Any]:
        def work(conn: Connection) -> None:
            ports.get(conn, ctx, port_id)
            bindings.add(conn, port_id, data["host"], data["vnic_type"], data["profile"])
            bump(conn, models.ports, port_id)

        self.db.write(work)
        return self._bind_extended(ctx, port_id, data["host"])

    def update_port_binding(self, ctx: Context, port_id: str, host: str,
                            data: dict[str, Any], if_revision: int | None = None
                            ) -> dict[str, Any]:
        self.db.write(lambda conn: bindings.change(conn, port_id, host, data))
        return self._bind_extended(ctx, port_id, host)

    def activate_port_binding(self, ctx: Context, port_id: str, host: str, body: dict[str, Any]
                 ) -> dict[str, Any]:
        def work(conn: Connection) -> None:
            bindings.activate(conn, port_id, host)
            bump(conn, models.ports, port_id)

        self.db.write(work)
        return {"binding": self.get_port_binding(ctx, port_id, host)}

    def delete_port_binding(self, ctx: Context, port_id: str, host: str,
                            if_revision: int | None = None) -> None:
        self.db.write(lambda conn: bindings.remove(conn, port_id, host))

    # --- segments (admin only: others see none) ----------------------------------------

    def create_segment(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        wanted = {k: data.get(k) for k in ("network_type", "physical_network",
                                           "segmentation_id")}
        self.types.validate_provider_segment(wanted)

        def work(conn: Connection) -> dict[str, Any]:
            networks.get_row(conn, ctx, data["network_id"])
            reserved = self.types.reserve_provider_segment(conn, dict(wanted))
            made = segments.append(conn, data["network_id"], reserved, data.get("name"),
                                   data.get("description", ""))
            if self.routed:
                host_segments.map_segments(conn, [made])
            return made

        return self.db.write(work)

    def get_segment(self, ctx: Context, segment_id: str) -> dict[str, Any]:
        if not ctx.is_admin:
            raise SegmentNotFound(segment_id=segment_id)
        return self._read(lambda conn: segments.view(segments.get_row(conn, segment_id)))

    def get_segments(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        if not ctx.is_admin:
            return []
        return self._read(lambda conn: [segments.view(r) for r in select_page(
            conn, segments.SEG, segments.COLUMNS, query)])

    def update_segment(self, ctx: Context, segment_id: str, data: dict[str, Any],
                       if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            segments.get_row(conn, segment_id)
            values: dict[str, Any] = {k: data[k] for k in ("name", "description") if k in data}
            bump(conn, segments.SEG, segment_id, if_revision, values)
            return segments.view(segments.get_row(conn, segment_id))

        return self.db.write(work)

    def delete_segment(self, ctx: Context, segment_id: str,
                       if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            row = segments.get_row(conn, segment_id)
            check_revision(conn, segments.SEG, segment_id, if_revision)
            segments.remove(conn, row)
            self.types.release_segment(conn, segments.view(row))

        self.db.write(work)

    # --- QoS, for the qos plugin ---------------------------------------------------------

    def qos_rule_types(self) -> dict[str, frozenset[str]]:
        return {d.name: d.qos_rule_types for d in self.mechanisms.drivers}

    def qos_rule_types_by_vif_type(self) -> dict[str, frozenset[str]]:
        found: dict[str, frozenset[str]] = {}
        for driver in self.mechanisms.drivers:
            vif_type = getattr(driver, "vif_type", "")
            if vif_type:
                found[vif_type] = found.get(vif_type, frozenset()) | driver.qos_rule_types
        return found

    # --- segmentation ids, for the network segment ranges' plugin ----------------------

    def segment_range_types(self) -> dict[str, tuple[int, int]]:
        return self.types.range_types()

    def follow_segment_ranges_in(self, conn: Connection, network_type: str,
                                 ranges: list[IdRange], changed: list[IdRange]) -> None:
        self.types.follow_ranges(conn, network_type, ranges, changed)

    # --- address scopes ------------------------------------------------------------

    def create_address_scope(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self.db.write(lambda conn: address_scopes.create(conn, data))

    def get_address_scope(self, ctx: Context, scope_id: str) -> dict[str, Any]:
        return self._read(lambda conn: address_scopes.get(conn, ctx, scope_id))

    def get_address_scopes(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: address_scopes.list_(conn, ctx, query))

    def update_address_scope(self, ctx: Context, scope_id: str, data: dict[str, Any],
                             if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            address_scopes.update(conn, ctx, scope_id, data)
            return address_scopes.get(conn, ctx, scope_id)

        return self.db.write(work)

    def delete_address_scope(self, ctx: Context, scope_id: str,
                             if_revision: int | None = None) -> None:
        self.db.write(lambda conn: address_scopes.delete_(conn, ctx, scope_id))

    # --- subnet pools --------------------------------------------------------------

    def create_subnetpool(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._create(ctx, "subnetpool", [data],
                            lambda conn, d: subnetpools.create(conn, ctx, d))[0]

    def create_subnetpool_bulk(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        return self._create(ctx, "subnetpool", items,
                            lambda conn, d: subnetpools.create(conn, ctx, d))

    def get_subnetpool(self, ctx: Context, pool_id: str) -> dict[str, Any]:
        return self._read(lambda conn: subnetpools.get(conn, ctx, pool_id))

    def get_subnetpools(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: subnetpools.list_(conn, ctx, query))

    def update_subnetpool(self, ctx: Context, pool_id: str, data: dict[str, Any],
                          if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> tuple[dict[str, Any], list[str]]:
            rescoped = subnetpools.update(conn, ctx, pool_id, data, if_revision)
            return (subnetpools.get(conn, ctx, pool_id, text_lengths=False),
                    subnetpools.networks_of(conn, pool_id) if rescoped else [])

        updated, networks = self.db.write(work)
        for network_id in networks:  # their routers route by the new scope
            self.env.hooks.run(self.env.hooks.after_network_change, network_id)
        return updated

    def add_subnetpool_prefixes(self, ctx: Context, pool_id: str, body: dict[str, Any]
                                ) -> dict[str, Any]:
        prefixes = subnetpools.operation_prefixes(body)
        return {"prefixes": self.db.write(
            lambda conn: subnetpools.add_prefixes(conn, ctx, pool_id, prefixes))}

    def remove_subnetpool_prefixes(self, ctx: Context, pool_id: str, body: dict[str, Any]
                                   ) -> dict[str, Any]:
        prefixes = subnetpools.operation_prefixes(body)
        return {"prefixes": self.db.write(
            lambda conn: subnetpools.remove_prefixes(conn, ctx, pool_id, prefixes))}

    def onboard_network_subnets(self, ctx: Context, pool_id: str, body: dict[str, Any]
                                ) -> list[dict[str, str]]:
        return self.db.write(lambda conn: subnetpools.onboard(conn, ctx, pool_id, body))

    def delete_subnetpool(self, ctx: Context, pool_id: str,
                          if_revision: int | None = None) -> None:
        self.db.write(lambda conn: subnetpools.delete_(conn, ctx, pool_id, if_revision))
