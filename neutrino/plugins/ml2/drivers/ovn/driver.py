"""The ``ovn`` mechanism driver: networks, subnets, ports and security groups
written into OVN's Northbound database, where ovn-northd and every chassis'
ovn-controller take them; no L2, DHCP or L3 agent is involved.

When it writes: each API call's changes, after its database transaction has
committed (postcommit), in one Northbound transaction per resource, over a
JSON-RPC connection that keeps no replica (``neutrino.ovn.northbound``). Before the
database transaction (precommit) the driver makes sure the Northbound
database answers, so a call made while it is down fails with 503 and leaves
nothing behind; a create whose Northbound write then fails is undone by ML2.
What is missed anyway (the database went away between the two, a server was
killed) is found by the maintenance task, which compares the two databases
(``sync.py``).

The server processes that run the periodic tasks (each API worker, or the rpc
workers when there are some) also watch the Northbound database for ports
coming up (``Logical_Switch_Port.up``, set by ovn-northd once a chassis has
bound the port) and mark them ACTIVE, and keep the chassis of the Southbound
database in ``/v2.0/agents``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from neutrino import exceptions as exc
from neutrino.config import Config
from neutrino.context import Context
from neutrino.ovn import names
from neutrino.ovn.commands import (
    DeleteRow,
    MissingRows,
    ReplaceChildren,
    SetMembership,
    WriteRow,
)
from neutrino.ovn.northbound import Northbound
from neutrino.ovn.ovsdb import NB_API, OvnDatabase, OvnUnavailable, OvnUnavailableError
from neutrino.plugins.ml2.api import NETWORK_TYPE, NetworkContext, PortContext, SubnetContext
from neutrino.plugins.ml2.drivers.mech_agent import AgentMechanismDriver
from neutrino.plugins.ml2.drivers.ovn import rows
from neutrino.plugins.ml2.drivers.ovn.maintenance import Maintenance

if TYPE_CHECKING:
    from neutrino.plugins.ml2.plugin import Ml2Plugin

LOG = logging.getLogger(__name__)
#: the network types a logical switch can carry
SUPPORTED_TYPES = ("geneve", "flat", "vlan")
#: what the processes that run the periodic tasks replicate: the ports that
#: are up, and nothing of the others (a port create costs them nothing)
WATCHED_COLUMNS = {"Logical_Switch_Port": ("name", "type", "up")}
WATCHED_ROWS = {"Logical_Switch_Port": [["up", "==", True]]}


class OvnMechanismDriver(AgentMechanismDriver):
    name = "ovn"
    agent_type = names.CONTROLLER_AGENT
    also_binds_on = (names.GATEWAY_AGENT,)  # a gateway chassis hosts instances too
    vif_type = "ovs"
    mapping_keys = ("bridge_mappings",)
    supported_types = SUPPORTED_TYPES

    def __init__(self, conf: Config):
        super().__init__(conf)
        self.options = conf.ovn
        self.plugin: Ml2Plugin | None = None
        self.nb = Northbound(self.options.ovn_nb_connection,
                             timeout=self.options.ovsdb_connection_timeout)
        #: the ports' ``up``, replicated where the periodic tasks run (only there)
        self.ups = OvnDatabase(self.options.ovn_nb_connection, "OVN_Northbound", NB_API,
                               columns=WATCHED_COLUMNS, conditions=WATCHED_ROWS,
                               timeout=self.options.ovsdb_connection_timeout,
                               watched=("Logical_Switch_Port",), on_change=self._row_changed)
        #: set where the periodic tasks run: there it acts on events
        self._watching = threading.Event()
        self._ups: dict[str, bool] = {}
        self._ups_lock = threading.Lock()
        self._catch_up = False
        self.maintenance = Maintenance(self)

    def vif_details(self, agent: Mapping[str, Any]) -> dict[str, Any]:
        return {"port_filter": True, "connectivity": "l2"}

    # --- life ------------------------------------------------------------------------

    def initialize(self, plugin: Ml2Plugin) -> None:
        self.plugin = plugin
        plugin.env.hooks.after_security_groups_change.append(self.security_groups_changed)
        plugin.env.hooks.after_address_groups_change.append(self.address_groups_changed)
        plugin.env.hooks.ovn_northbound = self.nb

    def start(self) -> None:
        self.nb.start()

    def stop(self) -> None:
        self.maintenance.stop()
        if self._watching.is_set():
            self.ups.stop()
        self.nb.stop()

    def periodic_tasks(self) -> list[tuple[float, Callable[[], None]]]:
        return [(0.25, self._apply_port_states), *self.maintenance.tasks()]

    # --- what OVN cannot express is refused ------------------------------------------

    def create_network_precommit(self, context: NetworkContext) -> None:
        for segment in context.segments:
            if segment.get(NETWORK_TYPE) not in SUPPORTED_TYPES:
                raise exc.InvalidInput(error_message=(
                    f"Network type {segment.get(NETWORK_TYPE)} is not supported by OVN "
                    f"(supported: {', '.join(SUPPORTED_TYPES)})"))
        if context.current.get("vlan_transparent"):
            raise exc.InvalidInput(
                error_message="VLAN transparency is not supported by the ovn driver")
        self.nb.require_for_api()

    def update_network_precommit(self, context: NetworkContext) -> None:
        self.nb.require_for_api()

    def delete_network_precommit(self, context: NetworkContext) -> None:
        self.nb.require_for_api()

    def create_subnet_precommit(self, context: SubnetContext) -> None:
        self.nb.require_for_api()

    update_subnet_precommit = create_subnet_precommit
    delete_subnet_precommit = create_subnet_precommit

    def create_port_precommit(self, context: PortContext) -> None:
        self.nb.require_for_api()
        assert self.plugin is not None
        # read here, in the create's own transaction: no second read for the write
        context.subnets = self.plugin.subnet_facts(
            [ip["subnet_id"] for ip in context.current["fixed_ips"]], context.conn)

    def update_port_precommit(self, context: PortContext) -> None:
        self.nb.require_for_api()

    delete_port_precommit = update_port_precommit

    # --- writes ----------------------------------------------------------------------

    def _transact(self, commands: list[Any], what: str) -> list[Any]:
        try:
            return self.nb.transact(commands, what)
        except OvnUnavailable as error:
            raise OvnUnavailableError(reason=str(error)) from None

    def _or_later(self, work: Callable[[], None], what: str) -> None:
        """A committed change's write: if OVN cannot take it now, the change stays
        (it is committed) and the maintenance task writes it once OVN is back."""
        try:
            work()
        except (OvnUnavailableError, OvnUnavailable) as error:
            LOG.warning("%s is not in OVN yet (%s); the maintenance task will write it",
                        what, error)
            self.maintenance.soon()

    def _exists(self, key: rows.Key) -> bool:
        try:
            return self.nb.exists(key)
        except OvnUnavailable as error:
            raise OvnUnavailableError(reason=str(error)) from None

    def write_commands(self, row: rows.Row, new: bool = False) -> list[Any]:
        commands: list[Any] = [WriteRow(row.key, row.columns, row.revision, row.parent, new)]
        if row.groups is not None:
            commands.append(SetMembership(row.key, "Port_Group", "ports", set(row.groups),
                                          lambda name: name.startswith("pg_")
                                          or name == names.DROP_PORT_GROUP))
        return commands

    def write_network(self, network: Mapping[str, Any], segments: Iterable[Mapping[str, Any]]
                      ) -> None:
        commands = self.write_commands(rows.switch(network))
        for port in rows.localnet_ports(network, segments):
            commands += self.write_commands(port)
        self._transact(commands, f"writing network {network['id']}")

    def _segments(self, context: NetworkContext) -> list[Any]:
        assert self.plugin is not None
        return context.segments or self.plugin.segments_of(context.current["id"])

    def create_network_postcommit(self, context: NetworkContext) -> None:
        self.write_network(context.current, self._segments(context))
        # a project's first network makes its default group, in the network's
        # transaction: the group's port group now, before any port needs it
        assert self.plugin is not None and self.plugin.env.hooks.security_groups is not None
        project = context.current.get("project_id")
        default = self.plugin.env.hooks.security_groups.default_of(project) if project else None
        if default is not None and not self._exists(rows.port_group_key(default)):
            self.security_groups_changed({default})

    def update_network_postcommit(self, context: NetworkContext) -> None:
        def work() -> None:
            self.write_network(context.current, self._segments(context))
            assert self.plugin is not None
            # the DHCP options of its subnets say its MTU
            for subnet in self.plugin.subnets_by_id(context.current.get("subnets") or []).values():
                self.write_subnet(subnet, context.current)

        self._or_later(work, f"network {context.current['id']}")

    def delete_network_postcommit(self, context: NetworkContext) -> None:
        def work() -> None:
            # its subnets went with it, without a delete of their own
            self._transact([DeleteRow(rows.switch_key(context.current["id"])),
                            *(DeleteRow(rows.dhcp_key(subnet))
                              for subnet in context.current.get("subnets") or [])],
                           f"deleting network {context.current['id']}")

        self._or_later(work, f"the delete of network {context.current['id']}")

    def write_subnet(self, subnet: Mapping[str, Any], network: Mapping[str, Any],
                     metadata_ip: str | None = None) -> None:
        if metadata_ip is None and self.options.ovn_metadata_enabled:
            metadata_ip = rows.metadata_address(self._metadata_port(subnet["network_id"]),
                                                subnet["id"])
        row = rows.dhcp_options(subnet, network, metadata_ip=metadata_ip,
                                dns_servers=self.options.dns_servers)
        if row is None:
            self._transact([DeleteRow(rows.dhcp_key(subnet["id"]))],
                           f"clearing the DHCP options of subnet {subnet['id']}")
            return
        self._transact(self.write_commands(row), f"writing subnet {subnet['id']}")

    def _network(self, context: SubnetContext) -> Mapping[str, Any]:
        assert self.plugin is not None
        if context.network is not None:
            return context.network
        return self.plugin.get_network(Context.admin(), context.current["network_id"])

    def create_subnet_postcommit(self, context: SubnetContext) -> None:
        subnet = context.current
        if self.options.ovn_metadata_enabled and rows.serves_dhcp(subnet):
            self._ensure_metadata_port(subnet)
        self.write_subnet(subnet, self._network(context))
        self._rewrite_ports_of(subnet["network_id"])

    def update_subnet_postcommit(self, context: SubnetContext) -> None:
        def work() -> None:
            self.write_subnet(context.current, self._network(context))
            if context.original is None or (context.original.get("enable_dhcp")
                                            != context.current.get("enable_dhcp")):
                self._rewrite_ports_of(context.current["network_id"])  # their DHCP options

        self._or_later(work, f"subnet {context.current['id']}")

    def delete_subnet_postcommit(self, context: SubnetContext) -> None:
        def work() -> None:
            self._transact([DeleteRow(rows.dhcp_key(context.current["id"]))],
                           f"deleting subnet {context.current['id']}")
            self._rewrite_ports_of(context.current["network_id"])  # their addresses went

        self._or_later(work, f"the delete of subnet {context.current['id']}")

    # --- metadata ----------------------------------------------------------------------

    def _metadata_port(self, network_id: str) -> dict[str, Any] | None:
        """The network's metadata port (``network:distributed``), if it has one."""
        assert self.plugin is not None
        return next(iter(self.plugin.ports_of_networks([network_id], rows.METADATA_OWNER)),
                    None)

    def _ensure_metadata_port(self, subnet: Mapping[str, Any]) -> None:
        """The network's metadata port, with an address on ``subnet``: where
        neutrino-ovn-metadata-agent answers its instances (a localport, present
        on every chassis), and where DHCP routes 169.254.169.254."""
        assert self.plugin is not None
        admin = Context.admin()
        port = self._metadata_port(subnet["network_id"])
        if port is None:
            network = self.plugin.get_network(admin, subnet["network_id"])
            self.plugin.create_port(admin, {
                "network_id": subnet["network_id"], "project_id": network["project_id"],
                "device_owner": rows.METADATA_OWNER,
                "device_id": names.metadata_namespace(subnet["network_id"]),
                "fixed_ips": [{"subnet_id": subnet["id"]}]})
        elif rows.metadata_address(port, subnet["id"]) is None:
            self.plugin.update_port(admin, port["id"], {"fixed_ips": [
                *({"subnet_id": ip["subnet_id"], "ip_address": ip["ip_address"]}
                  for ip in port["fixed_ips"]), {"subnet_id": subnet["id"]}]})

    def _rewrite_ports_of(self, network_id: str) -> None:
        """A network's ports again (a new DHCP subnet changes their options)."""
        assert self.plugin is not None
        for port in self.plugin.ports_of_networks([network_id]):
            self.write_port(port)

    def write_port(self, port: Mapping[str, Any],
                   subnets: Mapping[str, Mapping[str, Any]] | None = None,
                   new: bool = False) -> None:
        """``new``: the port was just created (OVN has no row of it yet)."""
        assert self.plugin is not None
        if subnets is None:
            subnets = self.plugin.subnet_facts([ip["subnet_id"] for ip in port["fixed_ips"]])
        row = rows.switch_port(port, subnets)
        what = f"writing port {port['id']}"
        try:
            result = self._transact(self.write_commands(row, new), what)
        except MissingRows as missing:  # a project's default group, on its first port, say
            if names.DROP_PORT_GROUP in missing.names:
                self.ensure_drop_group()
            self.security_groups_changed({ident for name in missing.names
                                          if (ident := names.security_group_of(name))})
            try:
                result = self._transact(self.write_commands(row, new), what)
            except MissingRows as still:  # their writes failed (OVN went away, say)
                raise OvnUnavailableError(
                    reason=f"{what}: port groups {still} are missing") from None
        if result[0] == "missing-parent":
            raise OvnUnavailableError(reason=f"the logical switch of network "
                                             f"{port['network_id']} is missing")

    def create_port_postcommit(self, context: PortContext) -> None:
        self.write_port(context.current, context.subnets, new=True)

    def update_port_postcommit(self, context: PortContext) -> None:
        port = context.current
        self._or_later(lambda: self.write_port(port), f"port {port['id']}")
        assert self.plugin is not None
        routers = self.plugin.env.hooks.ovn_routers
        if routers is not None and port["device_owner"] in rows.ROUTER_OWNERS:
            # a router's port renumbered: its Logical_Router_Port follows
            self._or_later(lambda: routers.write_router(port["device_id"]),
                           f"router {port['device_id']}")

    def delete_port_postcommit(self, context: PortContext) -> None:
        def work() -> None:
            port = context.current
            self._transact([DeleteRow(rows.switch_port_key(port["id"]),
                                      rows.Parent(rows.switch_key(port["network_id"]), "ports"))],
                           f"deleting port {port['id']}")

        self._or_later(work, f"the delete of port {context.current['id']}")

    def forget(self, kind: str, ident: str) -> None:
        """Remove what OVN holds of a resource neutrino no longer has."""
        if kind == "port":
            found = self.nb.select("Logical_Switch_Port", [["name", "==", ident]],
                                   ("external_ids",))
            switch = found[0]["external_ids"].get(names.NETWORK_NAME, "") if found else ""
            command = DeleteRow(rows.switch_port_key(ident),
                                rows.Parent(rows.Key("Logical_Switch", "name", switch), "ports"))
        elif kind == "address group":
            self.write_address_groups({ident: None})
            return
        else:
            command = DeleteRow({"network": rows.switch_key, "subnet": rows.dhcp_key,
                                 "security group": rows.port_group_key}[kind](ident))
        self._transact([command], f"removing {kind} {ident}")

    # --- security groups -------------------------------------------------------------

    def address_groups(self) -> dict[str, list[str]]:
        """Every address group's addresses."""
        assert self.plugin is not None and self.plugin.env.hooks.security_groups is not None
        return self.plugin.env.hooks.security_groups.address_groups()

    def write_address_groups(self, changed: Mapping[str, list[str] | None]) -> None:
        """Address groups' address sets as their addresses say (None: deleted)."""
        self._transact([WriteRow(row.key, row.columns) if addresses is not None
                        else DeleteRow(row.key)
                        for ident, addresses in changed.items()
                        for row in rows.address_sets(ident, addresses or [])],
                       f"writing address groups {', '.join(sorted(changed))}")

    def address_groups_changed(self, changed: dict[str, list[str] | None]) -> None:
        """After a committed change of address groups (created, their addresses
        changed, deleted)."""
        self._or_later(lambda: self.write_address_groups(changed),
                       f"address groups {', '.join(sorted(changed))}")

    def write_security_group(self, group: dict[str, Any]) -> None:
        row, acls = rows.port_group(group)
        self._transact([
            WriteRow(row.key, {**row.columns, "name": row.key.value}, row.revision),
            ReplaceChildren(row.key, "acls", "ACL", names.SECURITY_GROUP_RULE, acls)],
            f"writing security group {group['id']}")

    def ensure_drop_group(self) -> None:
        key = rows.Key("Port_Group", "name", names.DROP_PORT_GROUP)
        self._transact([WriteRow(key, {"name": names.DROP_PORT_GROUP}),
                        ReplaceChildren(key, "acls", "ACL", "neutron:drop",
                                        rows.drop_group_acls())], "writing the drop group")

    def security_groups(self, group_ids: Iterable[str] | None) -> list[dict[str, Any]]:
        """The groups ``group_ids`` (all: None) with their rules, as an admin sees them."""
        assert self.plugin is not None
        reader = self.plugin.env.hooks.security_groups
        assert reader is not None  # a companion of ML2
        return reader.views(None if group_ids is None else list(group_ids))

    def security_groups_changed(self, group_ids: set[str]) -> None:
        """After a security group or its rules changed (or it was deleted)."""
        found = {group["id"]: group for group in self.security_groups(group_ids)}

        def work() -> None:
            for group_id in group_ids:
                if group_id in found:
                    self.write_security_group(found[group_id])
                else:
                    self._transact([DeleteRow(rows.port_group_key(group_id))],
                                   f"deleting security group {group_id}")

        self._or_later(work, f"security groups {', '.join(sorted(group_ids))}")

    # --- ports coming up -------------------------------------------------------------

    def _row_changed(self, event: str, table: str, row: Any, old: Any) -> None:
        """On the connection's thread: the replica holds the ports that are up, so
        a port that appears in it came up and one that leaves it went down (or
        is gone). A new port is DOWN until it comes up."""
        if self._watching.is_set() and event != "update":
            with self._ups_lock:
                self._ups[row.name] = event == "create"

    def _apply_port_states(self) -> None:
        """Periodic: the ports whose ``up`` changed become ACTIVE or DOWN
        (nothing OVN holds changes with them)."""
        if not self._watching.is_set():
            self._watching.set()
            self.ups.start()
            self._catch_up = True
        if self._catch_up and self.nb.connected:  # what changed before this process watched
            try:
                found = self.nb.select("Logical_Switch_Port", [["type", "==", ""]],
                                       ("name", "up"))
            except OvnUnavailable as error:
                LOG.warning("ports' states not read yet: %s", error)
                return
            self._catch_up = False
            with self._ups_lock:
                for lsp in found:
                    self._ups.setdefault(lsp["name"], lsp["up"] is True)
        with self._ups_lock:
            ups, self._ups = self._ups, {}
        if not ups:
            return
        assert self.plugin is not None
        changed = self.plugin.set_ports_status(
            [port for port, up in ups.items() if up],
            [port for port, up in ups.items() if not up])
        if changed:
            LOG.debug("ports up or down in OVN: %s", ", ".join(changed))
