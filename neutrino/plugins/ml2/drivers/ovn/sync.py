"""Drift between neutrino's database and the Northbound database: found by
comparing what each row holds with what neutrino would write, repaired by
writing the rows again.

One pass over both sides finds what is missing (a row never written, or
deleted behind the server's back), what differs (a write that failed, a server
killed between its commit and its write, a hand edit with ``ovn-nbctl``) and
what is left over (a resource deleted while the Northbound database was away).
Rows are compared by content, the revision they were written from aside:
much bumps a revision that changes nothing OVN holds (a network's subnets, its
tags, its RBAC entries). The maintenance task runs it periodically in
``repair`` mode; ``neutrino-ovn-db-sync`` runs it once, in ``log`` or
``repair`` mode.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db.query import CollectionQuery
from neutrino.ovn import names
from neutrino.ovn.commands import differences
from neutrino.ovn.ovsdb import NB_API, OvnDatabase
from neutrino.plugins.ml2.drivers.ovn import rows

if TYPE_CHECKING:
    from neutrino.plugins.ml2.drivers.ovn.driver import OvnMechanismDriver

LOG = logging.getLogger(__name__)
#: the Northbound tables a comparison reads
NB_TABLES = ("Logical_Switch", "Logical_Switch_Port", "DHCP_Options", "Port_Group", "ACL",
             "Address_Set", "Logical_Router", "Logical_Router_Port",
             "Logical_Router_Static_Route", "NAT", "Gateway_Chassis", "Load_Balancer")


@contextlib.contextmanager
def full_replica(driver: OvnMechanismDriver, wait: float | None = None
                 ) -> Iterator[OvnDatabase]:
    """A replica of the Northbound tables neutrino writes, for one comparison:
    the server keeps none (its writes need none, and a replica parses every
    change of every row). ``wait``: seconds to wait for it (default: the
    transaction timeout), OvnUnavailable after."""
    options = driver.options
    replica = OvnDatabase(options.ovn_nb_connection, "OVN_Northbound", NB_API,
                          tables=NB_TABLES, timeout=options.ovsdb_connection_timeout)
    replica.start()
    try:
        replica.wait_connected(options.ovsdb_connection_timeout if wait is None else wait)
        yield replica
    finally:
        replica.stop()


@dataclass(frozen=True)
class Drift:
    kind: str  # network, subnet, port, security group, address group, router
    id: str
    problem: str  # missing, differs, extra
    detail: str = ""

    def __str__(self) -> str:
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.kind} {self.id}: {self.problem}{detail}"


class NorthboundSync:
    """One comparison of the two databases, and its repair."""

    def __init__(self, driver: OvnMechanismDriver, replica: OvnDatabase):
        self.driver = driver
        self.replica = replica
        assert driver.plugin is not None
        self.plugin = driver.plugin
        self.networks: dict[str, dict[str, Any]] = {}
        self.subnets: dict[str, dict[str, Any]] = {}
        self.ports: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, dict[str, Any]] = {}
        self.address_groups: dict[str, list[str]] = {}
        self.segments: dict[str, list[dict[str, Any]]] = {}

    def _read(self) -> None:
        admin = Context.admin()
        self.networks = {n["id"]: n for n in self.plugin.get_networks(admin, CollectionQuery())}
        self.subnets = {s["id"]: s for s in self.plugin.get_subnets(admin, CollectionQuery())}
        self.ports = {p["id"]: p for p in self.plugin.get_ports(admin, CollectionQuery())}
        self.groups = {g["id"]: g for g in self.driver.security_groups(None)}
        self.address_groups = self.driver.address_groups()
        self.segments = self.plugin.segments_by_network(None)

    def find(self) -> list[Drift]:
        """What differs now. The Northbound database's rows are listed before
        neutrino's are read: a resource made meanwhile is then missing from the
        first (and written again), never taken for one left over (and deleted)."""
        nb = self.replica
        present = nb.read(_present)
        routers = self.plugin.env.hooks.ovn_routers
        if routers is not None:
            present["router"] = routers.present_router_ids(nb)
        self._read()
        found = nb.read(lambda api: self._compare(api, present))
        if routers is not None:
            known = routers.router_ids()
            for ident in sorted(known):
                drift = routers.drift(ident, nb)
                if drift is not None:
                    found.append(Drift("router", ident, *(
                        ("missing", "") if drift == "missing" else ("differs", drift))))
            found += [Drift("router", ident, "extra")
                      for ident in sorted(present["router"] - known)]
        return found

    def _compare(self, api: Any, present: Mapping[str, Any]) -> list[Drift]:
        groups_of: dict[Any, set[str]] = {}
        for group in api.tables["Port_Group"].rows.values():
            for member in group.ports:
                groups_of.setdefault(member.uuid, set()).add(group.name)
        found: list[Drift] = []

        def check(kind: str, ident: str, row: rows.Row) -> None:
            have = row.key.find(api)
            if have is None:
                found.append(Drift(kind, ident, "missing"))
                return
            columns = differences(api, have, row.columns)
            if row.groups is not None and groups_of.get(have.uuid, set()) != row.groups:
                columns.append(f"port groups: {sorted(groups_of.get(have.uuid, ()))} instead "
                               f"of {sorted(row.groups)}")
            if columns:
                found.append(Drift(kind, ident, "differs", "; ".join(columns)))

        for ident, network in self.networks.items():
            check("network", ident, rows.switch(network))
            for localnet in rows.localnet_ports(network, self.segments.get(ident, [])):
                check("network", ident, localnet)
        metadata_ports = {port["network_id"]: port for port in self.ports.values()
                          if port["device_owner"] == rows.METADATA_OWNER
                          and self.driver.options.ovn_metadata_enabled}
        for ident, subnet in self.subnets.items():
            metadata_ip = rows.metadata_address(metadata_ports.get(subnet["network_id"]), ident)
            wanted = rows.dhcp_options(subnet, self.networks[subnet["network_id"]],
                                       metadata_ip=metadata_ip,
                                       dns_servers=self.driver.options.dns_servers)
            if wanted is not None:
                check("subnet", ident, wanted)
        for ident, port in self.ports.items():
            check("port", ident, rows.switch_port(port, self.subnets))
        for ident, addresses in self.address_groups.items():
            for address_set in rows.address_sets(ident, addresses):
                check("address group", ident, address_set)
        for ident, group in self.groups.items():
            row, acls = rows.port_group(group)
            check("security group", ident, row)
            have = row.key.find(api)
            if have is not None and _acls(have.acls) != _acls(acls):
                found.append(Drift("security group", ident, "differs",
                                   f"acls: {sorted(_acls(have.acls) - _acls(acls))} instead "
                                   f"of {sorted(_acls(acls) - _acls(have.acls))}"))
        return found + self._extra(present)

    def _extra(self, present: Mapping[str, set[str]]) -> list[Drift]:
        """Rows of neutrino's in the Northbound database with no resource behind them."""
        dhcp = {ident for ident, subnet in self.subnets.items() if subnet.get("enable_dhcp")}
        return [Drift(kind, ident, "extra")
                for kind, known in (("network", set(self.networks)), ("subnet", dhcp),
                                    ("port", set(self.ports)),
                                    ("security group", set(self.groups)),
                                    ("address group", set(self.address_groups)))
                for ident in sorted(present[kind] - known)]

    def repair(self, drifts: list[Drift]) -> int:
        """Write again what ``drifts`` name (networks first: their ports hang on
        them; deletes last); the number repaired. Each resource is read again
        first: one changed or deleted since ``find`` is written as it is now."""
        order = {"address group": 0, "network": 1, "security group": 2, "subnet": 3,
                 "port": 4, "router": 5}
        repaired = 0
        self.driver.ensure_drop_group()
        for drift in sorted(drifts, key=lambda d: (d.problem == "extra", order[d.kind])):
            try:
                self._repair(drift)
                repaired += 1
            except Exception as error:  # noqa: BLE001 - the next drift may still go
                LOG.warning("could not repair %s: %s", drift, error)
        return repaired

    def _repair(self, drift: Drift) -> None:
        driver, admin = self.driver, Context.admin()
        routers = self.plugin.env.hooks.ovn_routers
        if drift.kind == "router" and routers is not None:
            if drift.id in routers.router_ids():
                routers.write_router(drift.id)
            else:
                routers.forget(drift.id)
            return
        current = self._current(drift)
        if current is None:  # gone: what OVN holds of it goes too
            driver.forget(drift.kind, drift.id)
        elif drift.kind == "network":
            driver.write_network(current, self.plugin.segments_of(drift.id))
        elif drift.kind == "subnet":
            driver.write_subnet(current, self.plugin.get_network(admin, current["network_id"]))
        elif drift.kind == "port":
            driver.write_port(current)
        elif drift.kind == "security group":
            driver.write_security_group(current)
        else:
            driver.write_address_groups({drift.id: current["addresses"]})

    def _current(self, drift: Drift) -> dict[str, Any] | None:
        """The resource as it is now; None once deleted."""
        admin = Context.admin()
        if drift.kind == "address group":
            addresses = self.driver.address_groups().get(drift.id)
            return None if addresses is None else {"id": drift.id, "addresses": addresses}
        try:
            if drift.kind == "network":
                return self.plugin.get_network(admin, drift.id)
            if drift.kind == "subnet":
                return self.plugin.get_subnet(admin, drift.id)
            if drift.kind == "port":
                return self.plugin.get_port(admin, drift.id)
        except exc.NotFound:
            return None
        found = self.driver.security_groups([drift.id])
        return found[0] if found else None


def _acls(acls: Any) -> set[tuple[str, ...]]:
    """ACLs (rows, or the columns of rows to write) by what they do: rule,
    direction, priority, match and action."""
    found = set()
    for acl in acls:
        columns = acl if isinstance(acl, Mapping) else {
            c: getattr(acl, c) for c in ("external_ids", "direction", "priority", "match",
                                         "action")}
        found.add((str(columns["external_ids"].get(names.SECURITY_GROUP_RULE, "")),
                   *(str(columns[c]) for c in ("direction", "priority", "match", "action"))))
    return found


def _present(api: Any) -> dict[str, set[str]]:
    """The ids of the resources the Northbound database holds rows of, by kind."""
    tables = api.tables
    return {
        "network": {ident for row in tables["Logical_Switch"].rows.values()
                    if (ident := names.network_of_switch(row.name)) is not None},
        "subnet": {row.external_ids[names.SUBNET] for row in tables["DHCP_Options"].rows.values()
                   if names.SUBNET in row.external_ids and names.PORT not in row.external_ids},
        "port": {row.name for row in tables["Logical_Switch_Port"].rows.values()
                 if names.REVISION in row.external_ids},
        "security group": {ident for row in tables["Port_Group"].rows.values()
                           if (ident := names.security_group_of(row.name)) is not None},
        "address group": {row.external_ids[rows.ADDRESS_GROUP]
                          for row in tables["Address_Set"].rows.values()
                          if rows.ADDRESS_GROUP in row.external_ids},
    }
