"""Load balancing as Octavia's v2 API has it: load balancers (each with a VIP
port made on the Networking API's side), their listeners, pools, members and
health monitors.

Every change to a load balancer's tree marks the changed objects PENDING_*
and the load balancer PENDING_UPDATE, in one transaction with the load
balancer's row locked; a load balancer that is PENDING_* refuses further
changes (409), as Octavia's does. The load balancer's provider then says
whether the work completes at once (``noop``) or stays pending.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.config import Opt, OptGroup, int_range, parse_host, parse_list
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.util import now, timestamp
from neutrino.definitions.validators import new_uuid
from neutrino.plugins.base import Plugin
from neutrino.plugins.loader import find
from neutrino.services.octavia import errors
from neutrino.services.octavia.catalog import FLAVORS, ZONES, Catalog
from neutrino.services.octavia.providers import Provider

LOG = logging.getLogger(__name__)
T = TypeVar("T")
ADMIN = Context.admin()
PROVIDERS_GROUP = "neutrino.octavia.providers"
#: the VIP port's device_owner, as Octavia sets it
VIP_OWNER = "Octavia"

LB = models.lbaas_loadbalancers
LI = models.lbaas_listeners
PO = models.lbaas_pools
ME = models.lbaas_members
HM = models.lbaas_healthmonitors
ST = models.lbaas_listener_stats
L7P = models.lbaas_l7policies
L7R = models.lbaas_l7rules
QU = models.lbaas_quotas
#: Octavia's statistics, each a column of ST
STATS = ("active_connections", "bytes_in", "bytes_out", "request_errors",
         "total_connections")

ACTIVE, ERROR = "ACTIVE", "ERROR"
PENDING_CREATE, PENDING_UPDATE, PENDING_DELETE = (
    "PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE")
PENDING = (PENDING_CREATE, PENDING_UPDATE, PENDING_DELETE)
ONLINE, OFFLINE = "ONLINE", "OFFLINE"


def _drivers(entries: list[str]) -> dict[str, str]:
    """``enabled_provider_drivers``' ``name:description`` entries, by name."""
    drivers = {}
    for entry in entries:
        name, _, description = entry.partition(":")
        drivers[name.strip()] = description.strip()
    return drivers


def _port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise ValueError(f"{value} is not a port (1-65535)")
    return value


OPTIONS = OptGroup("api_settings", [
    Opt("bind_host", parse_host, "127.0.0.1",
        "Address the load-balancer API (Octavia v2) listens on, when the octavia service "
        "plugin is loaded."),
    Opt("bind_port", _port, 9876, "Port the load-balancer API (Octavia v2) listens on."),
    Opt("enabled_provider_drivers", parse_list,
        ["noop:The no-op driver: everything ACTIVE at once (no dataplane)."],
        "Provider drivers load balancers may name, as name:description pairs separated "
        "by commas; each name an entry point (neutrino.octavia.providers) or a dotted "
        "class path."),
    Opt("default_provider_driver", str, "noop",
        "The provider of a load balancer created without one."),
])



def _reserved(text: str) -> list[str]:
    """``reserved_ips``: addresses, kept as Octavia compares them (expanded, upper case)."""
    return [ipaddress.ip_address(item).exploded.upper() for item in parse_list(text)]


NETWORKING_OPTIONS = OptGroup("networking", [
    Opt("reserved_ips", _reserved, ["169.254.169.254"],
        "Addresses no member may have (Octavia's option): a comma-separated list."),
])

#: Octavia's quotas: name -> the table counted, and the name its error gives
QUOTAS: dict[str, tuple[Any, str]] = {
    "load_balancer": (LB, "Load Balancer"), "listener": (LI, "Listener"),
    "member": (ME, "Member"), "pool": (PO, "Pool"),
    "health_monitor": (HM, "Health Monitor"), "l7policy": (L7P, "L7 Policy"),
    "l7rule": (L7R, "L7 Rule")}
QUOTA_OPTIONS = OptGroup("quotas", [
    Opt(f"default_{name}_quota", int_range(-1), -1,
        f"{label}s per project on the load-balancer API, where an admin set none "
        "(-1: unlimited).")
    for name, (_, label) in QUOTAS.items()])

STANDARD = ("id", "name", "description", "project_id", "provisioning_status",
            "operating_status", "admin_state_up", "tags")


def _standard(row: Row) -> dict[str, Any]:
    view = {key: getattr(row, key) for key in STANDARD}
    view["tags"] = list(row.tags or [])
    view["created_at"] = timestamp(row.created_at)
    view["updated_at"] = timestamp(row.updated_at)
    return view


class OctaviaPlugin(Plugin):
    """The ``octavia`` service plugin: the state behind the load-balancer API."""

    option_groups = (OPTIONS, NETWORKING_OPTIONS, QUOTA_OPTIONS)

    def __init__(self, env: Any):
        super().__init__(env)
        self.core = env.core
        opts = self.conf.api_settings
        self.enabled: dict[str, str] = _drivers(opts.enabled_provider_drivers)
        self.default_provider: str = opts.default_provider_driver
        if self.default_provider not in self.enabled:
            raise exc.NeutronException(
                f"default_provider_driver {self.default_provider} is not one of "
                f"enabled_provider_drivers ({', '.join(self.enabled)})")
        self.providers: dict[str, Provider] = {
            name: find(PROVIDERS_GROUP, name)(self, name) for name in self.enabled}
        self.catalog = Catalog(self.provider_named)
        self.reserved_ips: frozenset[str] = frozenset(self.conf.networking.reserved_ips)

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = {}
        for provider in self.providers.values():
            for topic, objects in provider.rpc_endpoints().items():
                found.setdefault(topic, []).extend(objects)
        return found

    def periodic_tasks(self) -> list[tuple[float, Callable[[], None]]]:
        return [task for provider in self.providers.values()
                for task in provider.periodic_tasks()]

    # --- transactions -----------------------------------------------------------------

    def _write(self, work: Callable[[Connection, list[Callable[[], None]]], T]) -> T:
        """``work(conn, after)`` in one write transaction; ``after``'s calls run
        once it has committed (the VIP ports' drivers' postcommit)."""
        after: list[Callable[[], None]] = []

        def attempt(conn: Connection) -> T:
            after.clear()
            return work(conn, after)

        result = self.db.write(attempt)
        for call in after:
            call()
        return result

    def _lock_lb(self, conn: Connection, lb_id: str, what: str = "Load Balancer",
                 deleting: bool = False) -> Row:
        stmt = select(LB).where(LB.c.id == lb_id)
        if conn.dialect.name != "sqlite":
            stmt = stmt.with_for_update()
        row = conn.execute(stmt).first()
        if row is None:
            raise errors.NotFound(resource="Load Balancer", id=lb_id)
        if row.provisioning_status in PENDING:
            raise errors.Immutable(resource="Load Balancer", id=lb_id)
        return row

    def settle(self, conn: Connection, lb: Row, after: list[Callable[[], None]]) -> None:
        """The provider's turn: a completing one finishes the tree's pending work."""
        provider = self.providers[lb.provider]
        if provider.completes:
            self.complete(conn, lb, after)
        else:
            provider.pending(conn, lb, after)

    def complete(self, conn: Connection, lb: Row, after: list[Callable[[], None]],
                 observed: dict[str, str] | None = None) -> None:
        """The tree's pending work done: deletes carried out, the rest ACTIVE,
        ONLINE (OFFLINE when disabled) or, with ``observed`` (object id ->
        operating status, as a provider saw them), as observed."""
        stamp = now()
        members = select(PO.c.id).where(PO.c.loadbalancer_id == lb.id)
        for child in (ME, HM):
            conn.execute(delete(child).where(child.c.pool_id.in_(members),
                                             child.c.provisioning_status == PENDING_DELETE))
        listeners = select(LI.c.id).where(LI.c.loadbalancer_id == lb.id)
        policies = select(L7P.c.id).where(L7P.c.listener_id.in_(listeners))
        conn.execute(delete(L7R).where(L7R.c.l7policy_id.in_(policies),
                                       L7R.c.provisioning_status == PENDING_DELETE))
        conn.execute(delete(L7P).where(L7P.c.listener_id.in_(listeners),
                                       L7P.c.provisioning_status == PENDING_DELETE))
        _renumber(conn, listeners)
        gone_pools = select(PO.c.id).where(PO.c.loadbalancer_id == lb.id,
                                           PO.c.provisioning_status == PENDING_DELETE)
        # a policy sending to a pool that goes rejects instead, as in Octavia
        conn.execute(update(L7P).where(L7P.c.redirect_pool_id.in_(gone_pools))
                     .values(action="REJECT", redirect_pool_id=None))
        conn.execute(update(LI).where(LI.c.default_pool_id.in_(gone_pools))
                     .values(default_pool_id=None))
        conn.execute(delete(ME).where(ME.c.pool_id.in_(gone_pools)))
        conn.execute(delete(HM).where(HM.c.pool_id.in_(gone_pools)))
        conn.execute(delete(LI).where(LI.c.loadbalancer_id == lb.id,
                                      LI.c.provisioning_status == PENDING_DELETE))
        conn.execute(delete(PO).where(PO.c.loadbalancer_id == lb.id,
                                      PO.c.provisioning_status == PENDING_DELETE))
        current = conn.execute(select(LB.c.provisioning_status).where(
            LB.c.id == lb.id)).scalar_one()
        if current == PENDING_DELETE:
            self._remove_lb(conn, lb, after)
            return
        for table, scope in ((ME, ME.c.pool_id.in_(members)),
                             (HM, HM.c.pool_id.in_(members)),
                             (L7R, L7R.c.l7policy_id.in_(policies)),
                             (L7P, L7P.c.listener_id.in_(listeners)),
                             (LI, LI.c.loadbalancer_id == lb.id),
                             (PO, PO.c.loadbalancer_id == lb.id), (LB, LB.c.id == lb.id)):
            for enabled, status in ((True, ONLINE), (False, OFFLINE)):
                conn.execute(update(table).where(
                    scope, table.c.provisioning_status.in_(PENDING),
                    table.c.admin_state_up == enabled).values(
                    provisioning_status=ACTIVE, operating_status=status, updated_at=stamp))
        if observed:
            self.observe(conn, lb.id, observed)

    def observe(self, conn: Connection, lb_id: str, observed: dict[str, str]) -> None:
        """Operating statuses as a provider saw them (object id -> status), for
        the load balancer and its listeners, pools and members; others are ignored."""
        pools = select(PO.c.id).where(PO.c.loadbalancer_id == lb_id)
        by_status: dict[str, list[str]] = {}
        for object_id, status in observed.items():
            by_status.setdefault(status, []).append(object_id)
        for status, ids in by_status.items():
            for table, scope in ((ME, ME.c.pool_id.in_(pools)),
                                 (LI, LI.c.loadbalancer_id == lb_id),
                                 (PO, PO.c.loadbalancer_id == lb_id), (LB, LB.c.id == lb_id)):
                conn.execute(update(table).where(
                    scope, table.c.id.in_(ids), table.c.operating_status != status)
                    .values(operating_status=status))

    def _remove_lb(self, conn: Connection, lb: Row, after: list[Callable[[], None]]) -> None:
        pools = select(PO.c.id).where(PO.c.loadbalancer_id == lb.id)
        conn.execute(delete(ME).where(ME.c.pool_id.in_(pools)))
        conn.execute(delete(HM).where(HM.c.pool_id.in_(pools)))
        conn.execute(delete(LI).where(LI.c.loadbalancer_id == lb.id))
        conn.execute(delete(PO).where(PO.c.loadbalancer_id == lb.id))
        conn.execute(delete(LB).where(LB.c.id == lb.id))
        if lb.vip_port_id and not lb.vip_port_owned:
            self._give_back(conn, lb.vip_port_id, after)
        elif lb.vip_port_id:
            # a floating IP or port forwarding on the VIP lets go of it, as when
            # a port is deleted on the Networking API
            hooks = self.env.hooks
            told = hooks.run(hooks.before_port_delete, conn, ADMIN, lb.vip_port_id)
            try:
                context = self.core.delete_port_in(conn, ADMIN, lb.vip_port_id)
            except exc.NotFound:
                return  # someone removed it on the Networking API
            after.append(lambda: self.core.port_deleted(context))
            after.extend(told)

    def _give_back(self, conn: Connection, port_id: str, after: list[Callable[[], None]]
                   ) -> None:
        """A project's port that was a VIP, unused again (and unbound from the
        agent's host it was wired on)."""
        try:
            context = self.core.update_port_in(conn, ADMIN, port_id, {
                "device_id": "", "binding:host_id": ""})
        except exc.NotFound:
            return  # someone removed it on the Networking API
        after.append(lambda: self.core.port_updated(context))

    @staticmethod
    def _mark(conn: Connection, table: Any, row_id: str, status: str,
              values: dict[str, Any] | None = None) -> None:
        conn.execute(update(table).where(table.c.id == row_id).values(
            provisioning_status=status, updated_at=now(),
            revision_number=table.c.revision_number + 1, **(values or {})))

    def _touch_lb(self, conn: Connection, lb_id: str) -> None:
        self._mark(conn, LB, lb_id, PENDING_UPDATE)

    # --- load balancers ---------------------------------------------------------------

    def lb_view(self, conn: Connection, row: Row) -> dict[str, Any]:
        view = _standard(row)
        view.update(
            tenant_id=row.project_id, provider=row.provider, vip_address=row.vip_address,
            vip_port_id=row.vip_port_id, vip_subnet_id=row.vip_subnet_id,
            vip_network_id=row.vip_network_id, vip_qos_policy_id=None,
            flavor_id=row.flavor_id, availability_zone=row.availability_zone,
            vip_vnic_type="normal", additional_vips=[], vip_sg_ids=list(row.vip_sg_ids),
            listeners=[{"id": i} for i in conn.execute(
                select(LI.c.id).where(LI.c.loadbalancer_id == row.id)
                .order_by(LI.c.created_at, LI.c.id)).scalars()],
            pools=[{"id": i} for i in conn.execute(
                select(PO.c.id).where(PO.c.loadbalancer_id == row.id)
                .order_by(PO.c.created_at, PO.c.id)).scalars()])
        return view

    def get_lb_row(self, conn: Connection, lb_id: str) -> Row:
        row = conn.execute(select(LB).where(LB.c.id == lb_id)).first()
        if row is None:
            raise errors.NotFound(resource="Load Balancer", id=lb_id)
        return row

    def provider_named(self, name: str | None) -> Provider:
        """The enabled provider ``name`` (the default one for None)."""
        name = name or self.default_provider
        if name not in self.providers:
            raise errors.BadRequest(f"Provider '{name}' is not enabled.")
        return self.providers[name]

    def _offered(self, conn: Connection, data: dict[str, Any]) -> str:
        """A new load balancer's provider (the one asked for, else its flavor's,
        else the default), which must take its flavor's and availability
        zone's options, as Octavia decides."""
        flavor_id, zone = data.get("flavor_id"), data.get("availability_zone")
        flavor_provider: str | None = None
        flavor_options: dict[str, Any] = {}
        if flavor_id:
            flavor_provider, flavor_options = self.catalog.chosen(conn, FLAVORS, flavor_id)
            if data.get("provider") and data["provider"] != flavor_provider:
                raise errors.ProviderFlavorMismatch(flavor=flavor_id, provider=data["provider"])
        provider = self.provider_named(data.get("provider") or flavor_provider)
        if flavor_id:
            provider.validate_flavor(flavor_options)
        if zone:
            provider.validate_availability_zone(self.catalog.chosen(conn, ZONES, zone)[1])
        return provider.name

    def create_lb(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        """``data``: validated, with ``project_id`` decided."""

        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            provider = self._offered(conn, data)
            lb_id = new_uuid()
            given = bool(data.get("vip_port_id"))
            if given:
                network_id, fixed = self._given_vip(conn, ctx, lb_id, data, after)
            else:
                network_id = self._vip_network(conn, ctx, data)
            self._within_quota(conn, "load_balancer", data["project_id"])
            if not given:
                fixed = self._new_vip(conn, lb_id, network_id, data, after)
            stamp = now()
            conn.execute(insert(LB).values(
                id=lb_id, project_id=data["project_id"], name=data.get("name") or "",
                description=data.get("description") or "", created_at=stamp,
                updated_at=stamp, revision_number=0, provisioning_status=PENDING_CREATE,
                operating_status=OFFLINE, admin_state_up=data.get("admin_state_up", True),
                tags=data.get("tags") or [], provider=provider,
                vip_address=fixed.get("ip_address"), vip_port_id=fixed["port_id"],
                vip_subnet_id=fixed.get("subnet_id"), vip_network_id=network_id,
                vip_sg_ids=data.get("vip_sg_ids") or [],
                availability_zone=data.get("availability_zone"),
                flavor_id=data.get("flavor_id"),
                vip_port_owned=not given))
            row = self.get_lb_row(conn, lb_id)
            view = self.lb_view(conn, row)
            self.settle(conn, row, after)
            return view

        return self._write(work)

    def _vip_network(self, conn: Connection, ctx: Context, data: dict[str, Any]) -> str:
        """The VIP's network, from ``vip_subnet_id`` or ``vip_network_id``."""
        network_id: str = data.get("vip_network_id") or ""
        subnet_id = data.get("vip_subnet_id")
        if subnet_id:
            try:
                subnet = self.core.subnet_in(conn, ctx, subnet_id)
            except exc.NotFound:
                raise errors.BadRequest(f"Subnet {subnet_id} not found.") from None
            if network_id and subnet["network_id"] != network_id:
                raise errors.Validation(detail=f"Subnet {subnet_id} is not on network "
                                               f"{network_id}.")
            return subnet["network_id"]
        try:
            self.core.network_row_in(conn, ctx, network_id)
        except exc.NotFound:
            raise errors.BadRequest(f"Network {network_id} not found.") from None
        return network_id

    def _new_vip(self, conn: Connection, lb_id: str, network_id: str, data: dict[str, Any],
                 after: list[Callable[[], None]]) -> dict[str, Any]:
        """A VIP port made for the load balancer: its fixed IP, and its id."""
        wanted: dict[str, Any] = {}
        if data.get("vip_subnet_id"):
            wanted["subnet_id"] = data["vip_subnet_id"]
        if data.get("vip_address"):
            wanted["ip_address"] = data["vip_address"]
        port = self.core.create_port_in(conn, ADMIN, {
            "name": f"octavia-lb-{lb_id}", "admin_state_up": False,
            "project_id": data["project_id"], "network_id": network_id,
            "device_owner": VIP_OWNER, "device_id": f"lb-{lb_id}",
            "fixed_ips": [wanted] if wanted else None, **self._vip_filtering(data)})
        after.append(lambda: self.core.port_created(ADMIN, port))
        return {**(port["fixed_ips"][0] if port["fixed_ips"] else {}), "port_id": port["id"]}

    def _given_vip(self, conn: Connection, ctx: Context, lb_id: str, data: dict[str, Any],
                   after: list[Callable[[], None]]) -> tuple[str, dict[str, Any]]:
        """The project's own port as the VIP (``vip_port_id``), Octavia's way:
        unused, its address the one in ``vip_subnet_id`` or equal to
        ``vip_address``, or its only one. It is marked used by the load balancer
        (device_id) and given back when the load balancer goes."""
        port_id = data["vip_port_id"]
        try:
            port = self.core.port_in(conn, ctx, port_id)
        except exc.NotFound:
            raise errors.InvalidSubresource(resource="Port", id=port_id) from None
        if port["device_id"]:
            raise errors.Validation(detail=f"Port {port_id} is already used by device "
                                           f"{port['device_id']}")
        fixed_ips = port["fixed_ips"]
        if data.get("vip_subnet_id"):
            found = [ip for ip in fixed_ips if ip["subnet_id"] == data["vip_subnet_id"]]
            missing = "No VIP address found on the specified VIP port within the " \
                      "specified subnet."
        elif data.get("vip_address"):
            wanted = ipaddress.ip_address(data["vip_address"])
            found = [ip for ip in fixed_ips if ipaddress.ip_address(ip["ip_address"]) == wanted]
            missing = "Specified VIP address not found on the specified VIP port."
        else:
            found = fixed_ips if len(fixed_ips) == 1 else []
            missing = ("VIP port's subnet could not be determined. Please specify either "
                       "a VIP subnet or address.")
        if not found:
            raise errors.Validation(detail=missing)
        context = self.core.update_port_in(conn, ADMIN, port_id, {"device_id": f"lb-{lb_id}"})
        after.append(lambda: self.core.port_updated(context))
        return port["network_id"], {**found[0], "port_id": port_id}

    def _vip_filtering(self, data: dict[str, Any]) -> dict[str, Any]:
        """The VIP port's security groups: ``vip_sg_ids`` if given; else, as
        Octavia leaves a listener's port open to all (``allowed_cidrs`` aside,
        which the provider enforces), no filtering at all where ports may go
        without (the port is the load balancer's alone: only its listeners
        answer there)."""
        if data.get("vip_sg_ids"):
            return {"security_groups": data["vip_sg_ids"]}
        if "port-security" in self.core.supported_extension_aliases:
            return {"port_security_enabled": False, "security_groups": []}
        return {}

    def update_lb(self, lb_id: str, data: dict[str, Any]) -> dict[str, Any]:
        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            row = self._lock_lb(conn, lb_id)
            self._mark(conn, LB, lb_id, PENDING_UPDATE, data)
            view = self.lb_view(conn, self.get_lb_row(conn, lb_id))
            self.settle(conn, row, after)
            return view

        return self._write(work)

    def failover_lb(self, lb_id: str) -> None:
        """Octavia's failover: the load balancer PENDING_UPDATE, and run afresh
        by its provider (on another agent, for the haproxy provider)."""
        def work(conn: Connection, after: list[Callable[[], None]]) -> None:
            self._lock_lb(conn, lb_id)
            self._touch_lb(conn, lb_id)
            row = self.get_lb_row(conn, lb_id)
            self.providers[row.provider].failover(conn, row, after)

        self._write(work)

    def delete_lb(self, lb_id: str, cascade: bool) -> None:
        def work(conn: Connection, after: list[Callable[[], None]]) -> None:
            row = self._lock_lb(conn, lb_id)
            children = conn.execute(select(LI.c.id).where(LI.c.loadbalancer_id == lb_id)
                                    .union_all(select(PO.c.id).where(
                                        PO.c.loadbalancer_id == lb_id))).first()
            if children is not None and not cascade:
                raise errors.Validation(
                    detail=f"Cannot delete Load Balancer {lb_id} - it has children")
            pools = select(PO.c.id).where(PO.c.loadbalancer_id == lb_id)
            for table, scope in ((ME, ME.c.pool_id.in_(pools)),
                                 (HM, HM.c.pool_id.in_(pools)),
                                 (LI, LI.c.loadbalancer_id == lb_id),
                                 (PO, PO.c.loadbalancer_id == lb_id), (LB, LB.c.id == lb_id)):
                conn.execute(update(table).where(scope).values(
                    provisioning_status=PENDING_DELETE, updated_at=now()))
            # a provider's report on the tree before the delete must not complete it
            conn.execute(update(LB).where(LB.c.id == lb_id).values(
                revision_number=LB.c.revision_number + 1))
            self.settle(conn, row, after)

        self._write(work)

    # --- listeners --------------------------------------------------------------------

    def listener_view(self, conn: Connection, row: Row) -> dict[str, Any]:
        view = _standard(row)
        view.update(
            tenant_id=row.project_id, protocol=row.protocol,
            protocol_port=row.protocol_port, connection_limit=row.connection_limit,
            default_pool_id=row.default_pool_id, loadbalancers=[{"id": row.loadbalancer_id}],
            l7policies=[{"id": i} for i in conn.execute(
                select(L7P.c.id).where(L7P.c.listener_id == row.id)
                .order_by(L7P.c.position)).scalars()],
            insert_headers={}, default_tls_container_ref=None, sni_container_refs=[],
            client_ca_tls_container_ref=None, client_authentication="NONE",
            client_crl_container_ref=None,
            allowed_cidrs=None, tls_ciphers=None, tls_versions=None, alpn_protocols=None,
            timeout_client_data=row.timeout_client_data,
            timeout_member_connect=row.timeout_member_connect,
            timeout_member_data=row.timeout_member_data,
            timeout_tcp_inspect=row.timeout_tcp_inspect,
            hsts_max_age=None, hsts_include_subdomains=False, hsts_preload=False)
        return view

    def get_row(self, conn: Connection, table: Any, resource: str, row_id: str) -> Row:
        row = conn.execute(select(table).where(table.c.id == row_id)).first()
        if row is None:
            raise errors.NotFound(resource=resource, id=row_id)
        return row

    def _pool_for_listener(self, conn: Connection, pool_id: str, lb_id: str,
                           protocol: str) -> None:
        pool = conn.execute(select(PO).where(PO.c.id == pool_id)).first()
        if pool is None or pool.loadbalancer_id != lb_id:
            raise errors.NotFound(resource="Pool", id=pool_id)
        if pool.protocol not in POOL_PROTOCOLS_OF[protocol]:
            raise errors.Validation(
                detail=f"The pool protocol '{pool.protocol}' is invalid while the listener "
                       f"protocol is '{protocol}'.")

    def create_listener(self, data: dict[str, Any]) -> dict[str, Any]:
        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            lb = self._lock_lb(conn, data["loadbalancer_id"])
            self.providers[lb.provider].check("listener", data["protocol"])
            self._within_quota(conn, "listener", lb.project_id)
            clash = conn.execute(select(LI.c.id).where(
                LI.c.loadbalancer_id == lb.id, LI.c.protocol == data["protocol"],
                LI.c.protocol_port == data["protocol_port"])).first()
            if clash is not None:
                raise errors.DuplicateListener(protocol=data["protocol"],
                                               port=data["protocol_port"])
            if data.get("default_pool_id"):
                self._pool_for_listener(conn, data["default_pool_id"], lb.id,
                                        data["protocol"])
            listener_id = new_uuid()
            stamp = now()
            conn.execute(insert(LI).values(
                id=listener_id, project_id=lb.project_id, created_at=stamp,
                updated_at=stamp, revision_number=0, provisioning_status=PENDING_CREATE,
                operating_status=OFFLINE, **data))
            self._touch_lb(conn, lb.id)
            view = self.listener_view(conn, self.get_row(conn, LI, "Listener", listener_id))
            self.settle(conn, lb, after)
            return view

        return self._write(work)

    def update_listener(self, listener_id: str, data: dict[str, Any]) -> dict[str, Any]:
        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            row = self.get_row(conn, LI, "Listener", listener_id)
            lb = self._lock_lb(conn, row.loadbalancer_id)
            if data.get("default_pool_id"):
                self._pool_for_listener(conn, data["default_pool_id"], lb.id, row.protocol)
            self._mark(conn, LI, listener_id, PENDING_UPDATE, data)
            self._touch_lb(conn, lb.id)
            view = self.listener_view(conn, self.get_row(conn, LI, "Listener", listener_id))
            self.settle(conn, lb, after)
            return view

        return self._write(work)

    def delete_listener(self, listener_id: str) -> None:
        def work(conn: Connection, after: list[Callable[[], None]]) -> None:
            row = self.get_row(conn, LI, "Listener", listener_id)
            lb = self._lock_lb(conn, row.loadbalancer_id)
            self._mark(conn, LI, listener_id, PENDING_DELETE)
            self._touch_lb(conn, lb.id)
            self.settle(conn, lb, after)

        self._write(work)

    # --- pools ------------------------------------------------------------------------

    def pool_view(self, conn: Connection, row: Row) -> dict[str, Any]:
        view = _standard(row)
        view.update(
            tenant_id=row.project_id, protocol=row.protocol, lb_algorithm=row.lb_algorithm,
            session_persistence=row.session_persistence,
            loadbalancers=[{"id": row.loadbalancer_id}],
            listeners=[{"id": i} for i in conn.execute(
                select(LI.c.id).where(LI.c.default_pool_id == row.id)).scalars()],
            members=[{"id": i} for i in conn.execute(
                select(ME.c.id).where(ME.c.pool_id == row.id)
                .order_by(ME.c.created_at, ME.c.id)).scalars()],
            healthmonitor_id=conn.execute(select(HM.c.id).where(
                HM.c.pool_id == row.id)).scalar(), tls_enabled=False, tls_ciphers=None,
            tls_versions=None, alpn_protocols=None, ca_tls_container_ref=None,
            crl_container_ref=None, tls_container_ref=None)
        return view

    def create_pool(self, data: dict[str, Any]) -> dict[str, Any]:
        data = dict(data)
        listener_id = data.pop("listener_id", None)

        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            listener = None
            lb_id = data.get("loadbalancer_id")
            if listener_id:
                listener = self.get_row(conn, LI, "Listener", listener_id)
                if lb_id and lb_id != listener.loadbalancer_id:
                    raise errors.Validation(detail="The listener is not on load balancer "
                                                   f"{lb_id}.")
                lb_id = listener.loadbalancer_id
                if listener.default_pool_id:
                    raise errors.DuplicatePool()
                if data["protocol"] not in POOL_PROTOCOLS_OF[listener.protocol]:
                    raise errors.Validation(
                        detail=f"The pool protocol '{data['protocol']}' is invalid while "
                               f"the listener protocol is '{listener.protocol}'.")
            assert lb_id is not None
            lb = self._lock_lb(conn, lb_id)
            self.providers[lb.provider].check("pool", data["protocol"])
            self._within_quota(conn, "pool", lb.project_id)
            pool_id = new_uuid()
            stamp = now()
            conn.execute(insert(PO).values(
                id=pool_id, project_id=lb.project_id, created_at=stamp, updated_at=stamp,
                revision_number=0, provisioning_status=PENDING_CREATE,
                operating_status=OFFLINE, **{**data, "loadbalancer_id": lb_id}))
            if listener is not None:
                self._mark(conn, LI, listener.id, PENDING_UPDATE,
                           {"default_pool_id": pool_id})
            self._touch_lb(conn, lb_id)
            view = self.pool_view(conn, self.get_row(conn, PO, "Pool", pool_id))
            self.settle(conn, lb, after)
            return view

        return self._write(work)

    def update_pool(self, pool_id: str, data: dict[str, Any]) -> dict[str, Any]:
        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            row = self.get_row(conn, PO, "Pool", pool_id)
            lb = self._lock_lb(conn, row.loadbalancer_id)
            self._mark(conn, PO, pool_id, PENDING_UPDATE, data)
            self._touch_lb(conn, lb.id)
            view = self.pool_view(conn, self.get_row(conn, PO, "Pool", pool_id))
            self.settle(conn, lb, after)
            return view

        return self._write(work)

    def delete_pool(self, pool_id: str) -> None:
        def work(conn: Connection, after: list[Callable[[], None]]) -> None:
            row = self.get_row(conn, PO, "Pool", pool_id)
            lb = self._lock_lb(conn, row.loadbalancer_id)
            self._mark(conn, PO, pool_id, PENDING_DELETE)
            for child in (ME, HM):
                conn.execute(update(child).where(child.c.pool_id == pool_id).values(
                    provisioning_status=PENDING_DELETE))
            self._touch_lb(conn, lb.id)
            self.settle(conn, lb, after)

        self._write(work)

    # --- members ----------------------------------------------------------------------

    @staticmethod
    def member_view(row: Row) -> dict[str, Any]:
        view = _standard(row)
        del view["description"]  # Octavia's members have none
        view.update(
            tenant_id=row.project_id, address=row.address, protocol_port=row.protocol_port,
            weight=row.weight, backup=row.backup, subnet_id=row.subnet_id,
            monitor_address=row.monitor_address, monitor_port=row.monitor_port,
            vnic_type="normal")
        return view

    def _new_member(self, conn: Connection, ctx: Context, lb: Row, data: dict[str, Any]
                    ) -> None:
        """Octavia's checks of a member to be made: not at a reserved address
        (``[networking] reserved_ips``), on a subnet the caller sees if it
        names one; then its provider's (``Provider.check_member``)."""
        address = ipaddress.ip_address(data["address"]).exploded.upper()
        if address in self.reserved_ips:
            raise errors.InvalidOption(value=address, option="member address")
        subnet_id = data.get("subnet_id")
        if subnet_id:
            try:
                self.core.subnet_in(conn, ctx, subnet_id)
            except exc.NotFound:
                raise errors.InvalidSubresource(resource="Subnet", id=subnet_id) from None
        self.providers[lb.provider].check_member(conn, lb, data["address"])

    def create_member(self, ctx: Context, pool_id: str, data: dict[str, Any]
                      ) -> dict[str, Any]:
        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            pool = self.get_row(conn, PO, "Pool", pool_id)
            lb = self._lock_lb(conn, pool.loadbalancer_id)
            self._new_member(conn, ctx, lb, data)
            clash = conn.execute(select(ME.c.id).where(
                ME.c.pool_id == pool_id, ME.c.address == data["address"],
                ME.c.protocol_port == data["protocol_port"])).first()
            if clash is not None:
                raise errors.DuplicateMember(ip_address=data["address"],
                                             port=data["protocol_port"])
            self._within_quota(conn, "member", pool.project_id)
            member_id = new_uuid()
            stamp = now()
            conn.execute(insert(ME).values(
                id=member_id, project_id=pool.project_id, created_at=stamp,
                updated_at=stamp, revision_number=0, provisioning_status=PENDING_CREATE,
                operating_status=OFFLINE, pool_id=pool_id, description="", **data))
            self._mark(conn, PO, pool_id, PENDING_UPDATE)
            self._touch_lb(conn, lb.id)
            view = self.member_view(self.get_row(conn, ME, "Member", member_id))
            self.settle(conn, lb, after)
            return view

        return self._write(work)

    def member_row(self, conn: Connection, pool_id: str, member_id: str) -> Row:
        row = conn.execute(select(ME).where(ME.c.id == member_id,
                                            ME.c.pool_id == pool_id)).first()
        if row is None:
            raise errors.NotFound(resource="Member", id=member_id)
        return row

    def update_member(self, pool_id: str, member_id: str, data: dict[str, Any]
                      ) -> dict[str, Any]:
        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            self.member_row(conn, pool_id, member_id)
            pool = self.get_row(conn, PO, "Pool", pool_id)
            lb = self._lock_lb(conn, pool.loadbalancer_id)
            self._mark(conn, ME, member_id, PENDING_UPDATE, data)
            self._mark(conn, PO, pool_id, PENDING_UPDATE)
            self._touch_lb(conn, lb.id)
            view = self.member_view(self.member_row(conn, pool_id, member_id))
            self.settle(conn, lb, after)
            return view

        return self._write(work)

    def delete_member(self, pool_id: str, member_id: str) -> None:
        def work(conn: Connection, after: list[Callable[[], None]]) -> None:
            self.member_row(conn, pool_id, member_id)
            pool = self.get_row(conn, PO, "Pool", pool_id)
            lb = self._lock_lb(conn, pool.loadbalancer_id)
            self._mark(conn, ME, member_id, PENDING_DELETE)
            self._mark(conn, PO, pool_id, PENDING_UPDATE)
            self._touch_lb(conn, lb.id)
            self.settle(conn, lb, after)

        self._write(work)

    def batch_members(self, ctx: Context, pool_id: str, wanted: list[dict[str, Any]]) -> None:
        """The pool's members become ``wanted`` (matched by address and port):
        new ones made, listed ones updated, the rest deleted."""

        def work(conn: Connection, after: list[Callable[[], None]]) -> None:
            pool = self.get_row(conn, PO, "Pool", pool_id)
            lb = self._lock_lb(conn, pool.loadbalancer_id)
            have = {(r.address, r.protocol_port): r for r in conn.execute(
                select(ME).where(ME.c.pool_id == pool_id))}
            keys = {(data["address"], data["protocol_port"]) for data in wanted}
            self._within_quota(conn, "member", pool.project_id,
                               len(keys - set(have)) - len(set(have) - keys))
            seen = set()
            stamp = now()
            for data in wanted:
                key = (data["address"], data["protocol_port"])
                if key in seen:
                    raise errors.DuplicateMember(ip_address=key[0], port=key[1])
                seen.add(key)
                if key not in have:  # as Octavia: a kept member's address and subnet stay
                    self._new_member(conn, ctx, lb, data)
                if key in have:
                    changes = {k: v for k, v in data.items()
                               if k not in ("address", "protocol_port", "subnet_id")}
                    self._mark(conn, ME, have[key].id, PENDING_UPDATE, changes)
                else:
                    conn.execute(insert(ME).values(
                        id=new_uuid(), project_id=pool.project_id, created_at=stamp,
                        updated_at=stamp, revision_number=0,
                        provisioning_status=PENDING_CREATE, operating_status=OFFLINE,
                        pool_id=pool_id, description="", **{**MEMBER_DEFAULTS, **data}))
            for key, row in have.items():
                if key not in seen:
                    self._mark(conn, ME, row.id, PENDING_DELETE)
            self._mark(conn, PO, pool_id, PENDING_UPDATE)
            self._touch_lb(conn, lb.id)
            self.settle(conn, lb, after)

        self._write(work)

    # --- health monitors --------------------------------------------------------------

    @staticmethod
    def hm_view(_conn: Connection | None, row: Row) -> dict[str, Any]:
        view = _standard(row)
        del view["description"]
        view.update(
            tenant_id=row.project_id, pools=[{"id": row.pool_id}], type=row.type,
            delay=row.delay, timeout=row.timeout, max_retries=row.max_retries,
            max_retries_down=row.max_retries_down, http_method=row.http_method,
            url_path=row.url_path, expected_codes=row.expected_codes,
            http_version=float(row.http_version) if row.http_version else None,
            domain_name=row.domain_name)
        return view

    def create_hm(self, data: dict[str, Any], check: Callable[[Row], None]
                  ) -> dict[str, Any]:
        """``check(pool)``: what the monitor's type must suit in its pool."""

        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            pool = self.get_row(conn, PO, "Pool", data["pool_id"])
            lb = self._lock_lb(conn, pool.loadbalancer_id)
            check(pool)
            self.providers[lb.provider].check("healthmonitor", data["type"])
            self._within_quota(conn, "health_monitor", pool.project_id)
            if conn.execute(select(HM.c.id).where(HM.c.pool_id == pool.id)).first():
                raise errors.DuplicateHealthMonitor()
            hm_id = new_uuid()
            stamp = now()
            conn.execute(insert(HM).values(
                id=hm_id, project_id=pool.project_id, created_at=stamp, updated_at=stamp,
                revision_number=0, provisioning_status=PENDING_CREATE,
                operating_status=OFFLINE, description="", **data))
            self._mark(conn, PO, pool.id, PENDING_UPDATE)
            self._touch_lb(conn, lb.id)
            view = self.hm_view(conn, self.get_row(conn, HM, "Health Monitor", hm_id))
            self.settle(conn, lb, after)
            return view

        return self._write(work)

    def update_hm(self, hm_id: str, data: dict[str, Any], check: Callable[[Row], None]
                  ) -> dict[str, Any]:
        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            row = self.get_row(conn, HM, "Health Monitor", hm_id)
            pool = self.get_row(conn, PO, "Pool", row.pool_id)
            lb = self._lock_lb(conn, pool.loadbalancer_id)
            check(row)
            self._mark(conn, HM, hm_id, PENDING_UPDATE, data)
            self._mark(conn, PO, pool.id, PENDING_UPDATE)
            self._touch_lb(conn, lb.id)
            view = self.hm_view(conn, self.get_row(conn, HM, "Health Monitor", hm_id))
            self.settle(conn, lb, after)
            return view

        return self._write(work)

    def delete_hm(self, hm_id: str) -> None:
        def work(conn: Connection, after: list[Callable[[], None]]) -> None:
            row = self.get_row(conn, HM, "Health Monitor", hm_id)
            pool = self.get_row(conn, PO, "Pool", row.pool_id)
            lb = self._lock_lb(conn, pool.loadbalancer_id)
            self._mark(conn, HM, hm_id, PENDING_DELETE)
            self._mark(conn, PO, pool.id, PENDING_UPDATE)
            self._touch_lb(conn, lb.id)
            self.settle(conn, lb, after)

        self._write(work)

    # --- quotas -------------------------------------------------------------------------

    def quota_defaults(self) -> dict[str, int]:
        return {name: getattr(self.conf.quotas, f"default_{name}_quota") for name in QUOTAS}

    def quotas_of(self, conn: Connection, project_id: str) -> dict[str, int]:
        """The project's quotas: an admin's, else the defaults."""
        row = conn.execute(select(QU).where(QU.c.project_id == project_id)).first()
        defaults = self.quota_defaults()
        given = {} if row is None else row._mapping
        return {name: defaults[name] if given.get(name) is None else given[name]
                for name in QUOTAS}

    def quota_projects(self, conn: Connection, project_id: str | None) -> list[str]:
        """The projects an admin set quotas for (one of them, with ``project_id``)."""
        stmt = select(QU.c.project_id).order_by(QU.c.project_id)
        if project_id is not None:
            stmt = stmt.where(QU.c.project_id == project_id)
        return list(conn.execute(stmt).scalars())

    def set_quotas(self, project_id: str, values: dict[str, int | None]) -> dict[str, int]:
        def work(conn: Connection, _after: list[Callable[[], None]]) -> dict[str, int]:
            row = conn.execute(select(QU).where(QU.c.project_id == project_id)).first()
            if row is None:
                conn.execute(insert(QU).values(project_id=project_id, **values))
            elif values:
                conn.execute(update(QU).where(QU.c.project_id == project_id).values(values))
            return self.quotas_of(conn, project_id)

        return self._write(work)

    def reset_quotas(self, project_id: str) -> None:
        self._write(lambda conn, _after: conn.execute(
            delete(QU).where(QU.c.project_id == project_id)))

    def _within_quota(self, conn: Connection, name: str, project_id: str | None,
                      adding: int = 1) -> None:
        """``errors.QuotaMet`` if ``adding`` more of ``name`` passes the project's quota."""
        if project_id is None or adding <= 0:
            return
        limit = self.quotas_of(conn, project_id)[name]
        if limit < 0:
            return
        table, label = QUOTAS[name]
        count = conn.execute(select(func.count()).select_from(table)
                             .where(table.c.project_id == project_id)).scalar_one()
        if count + adding > limit:
            raise errors.QuotaMet(resource=label)

    # --- L7 policies and their rules --------------------------------------------------

    def l7policy_view(self, conn: Connection, row: Row) -> dict[str, Any]:
        view = _standard(row)
        view.update(
            tenant_id=row.project_id, listener_id=row.listener_id, action=row.action,
            position=row.position, redirect_url=row.redirect_url,
            redirect_prefix=row.redirect_prefix, redirect_pool_id=row.redirect_pool_id,
            redirect_http_code=row.redirect_http_code,
            rules=[{"id": i} for i in conn.execute(
                select(L7R.c.id).where(L7R.c.l7policy_id == row.id)
                .order_by(L7R.c.created_at, L7R.c.id)).scalars()])
        return view

    @staticmethod
    def l7rule_view(_conn: Connection | None, row: Row) -> dict[str, Any]:
        view = _standard(row)
        del view["name"], view["description"]  # Octavia's rules have neither
        view.update(tenant_id=row.project_id, type=row.type, compare_type=row.compare_type,
                    key=row.key, value=row.value, invert=row.invert)
        return view

    def _l7_target(self, conn: Connection, policy: dict[str, Any], lb_id: str) -> None:
        """What the policy's action needs, and a redirect pool of the same load
        balancer that the listener's protocol can send to."""
        action = policy["action"]
        needed = {"REDIRECT_TO_URL": "redirect_url", "REDIRECT_PREFIX": "redirect_prefix",
                  "REDIRECT_TO_POOL": "redirect_pool_id"}.get(action)
        if needed and not policy.get(needed):
            raise errors.Validation(detail=f"{needed} must be specified for the {action} "
                                           "action.")
        if action == "REDIRECT_TO_POOL":
            pool = conn.execute(select(PO).where(PO.c.id == policy["redirect_pool_id"])).first()
            if pool is None or pool.loadbalancer_id != lb_id:
                raise errors.NotFound(resource="Pool", id=policy["redirect_pool_id"])

    def create_l7policy(self, data: dict[str, Any]) -> dict[str, Any]:
        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            listener = self.get_row(conn, LI, "Listener", data["listener_id"])
            lb = self._lock_lb(conn, listener.loadbalancer_id)
            if listener.protocol not in ("HTTP", "TERMINATED_HTTPS"):
                raise errors.Validation(detail="L7 policies are only for HTTP listeners, "
                                               f"not {listener.protocol} ones.")
            self._l7_target(conn, data, lb.id)
            self._within_quota(conn, "l7policy", listener.project_id)
            values = _only_its_target(dict(data), None)
            count = len(_policies_of(conn, listener.id))
            position = min(values.pop("position", None) or count + 1, count + 1)
            conn.execute(update(L7P).where(L7P.c.listener_id == listener.id,
                                           L7P.c.position >= position)
                         .values(position=L7P.c.position + 1))
            policy_id = new_uuid()
            stamp = now()
            conn.execute(insert(L7P).values(
                id=policy_id, project_id=listener.project_id, created_at=stamp,
                updated_at=stamp, revision_number=0, provisioning_status=PENDING_CREATE,
                operating_status=OFFLINE, position=position, **values))
            self._mark(conn, LI, listener.id, PENDING_UPDATE)
            self._touch_lb(conn, lb.id)
            view = self.l7policy_view(conn, self.get_row(conn, L7P, "L7 Policy", policy_id))
            self.settle(conn, lb, after)
            return view

        return self._write(work)

    def update_l7policy(self, policy_id: str, data: dict[str, Any]) -> dict[str, Any]:
        def work(conn: Connection, after: list[Callable[[], None]]) -> dict[str, Any]:
            row = self.get_row(conn, L7P, "L7 Policy", policy_id)
            listener = self.get_row(conn, LI, "Listener", row.listener_id)
            lb = self._lock_lb(conn, listener.loadbalancer_id)
            self._l7_target(conn, {**row._asdict(), **data}, lb.id)
            values = (_only_its_target(dict(data), row.redirect_http_code)
                      if "action" in data else dict(data))
            position = values.pop("position", None)
            self._mark(conn, L7P, policy_id, PENDING_UPDATE, values)
            if position is not None:
                _move(conn, listener.id, policy_id, position)
            self._mark(conn, LI, listener.id, PENDING_UPDATE)
            self._touch_lb(conn, lb.id)
            view = self.l7policy_view(conn, self.get_row(conn, L7P, "L7 Policy", policy_id))
            self.settle(conn, lb, after)
            return view

        return self._write(work)

    def delete_l7policy(self, policy_id: str) -> None:
        def work(conn: Connection, after: list[Callable[[], None]]) -> None:
            row = self.get_row(conn, L7P, "L7 Policy", policy_id)
            listener = self.get_row(conn, LI, "Listener", row.listener_id)
            lb = self._lock_lb(conn, listener.loadbalancer_id)
            self._mark(conn, L7P, policy_id, PENDING_DELETE)
            conn.execute(update(L7R).where(L7R.c.l7policy_id == policy_id)
                         .values(provisioning_status=PENDING_DELETE))
            self._mark(conn, LI, listener.id, PENDING_UPDATE)
            self._touch_lb(conn, lb.id)
            self.settle(conn, lb, after)

        self._write(work)

    def l7rule_row(self, conn: Connection, policy_id: str, rule_id: str) -> Row:
        row = conn.execute(select(L7R).where(L7R.c.id == rule_id,
                                             L7R.c.l7policy_id == policy_id)).first()
        if row is None:
            raise errors.NotFound(resource="L7 Rule", id=rule_id)
        return row

    def _change_rule(self, policy_id: str, change: Callable[[Connection, Row, Row], T]) -> T:
        """``change(conn, policy, lb)`` with the policy's load balancer locked; the
        policy and its listener PENDING_UPDATE, and the provider's turn."""
        def work(conn: Connection, after: list[Callable[[], None]]) -> T:
            policy = self.get_row(conn, L7P, "L7 Policy", policy_id)
            listener = self.get_row(conn, LI, "Listener", policy.listener_id)
            lb = self._lock_lb(conn, listener.loadbalancer_id)
            result = change(conn, policy, lb)
            self._mark(conn, L7P, policy_id, PENDING_UPDATE)
            self._mark(conn, LI, listener.id, PENDING_UPDATE)
            self._touch_lb(conn, lb.id)
            self.settle(conn, lb, after)
            return result

        return self._write(work)

    def create_l7rule(self, policy_id: str, data: dict[str, Any]) -> dict[str, Any]:
        def change(conn: Connection, policy: Row, lb: Row) -> dict[str, Any]:
            self.providers[lb.provider].check("l7rule", data["type"])
            self._within_quota(conn, "l7rule", policy.project_id)
            rule_id = new_uuid()
            stamp = now()
            conn.execute(insert(L7R).values(
                id=rule_id, project_id=policy.project_id, name="", description="",
                created_at=stamp, updated_at=stamp, revision_number=0,
                provisioning_status=PENDING_CREATE, operating_status=OFFLINE,
                l7policy_id=policy_id, **data))
            return self.l7rule_view(conn, self.l7rule_row(conn, policy_id, rule_id))

        return self._change_rule(policy_id, change)

    def update_l7rule(self, policy_id: str, rule_id: str, data: dict[str, Any],
                      check: Callable[[Row], None]) -> dict[str, Any]:
        """``check(rule)``: what the rule, changed, must still be."""
        def change(conn: Connection, policy: Row, lb: Row) -> dict[str, Any]:
            row = self.l7rule_row(conn, policy_id, rule_id)
            check(row)
            if "type" in data:
                self.providers[lb.provider].check("l7rule", data["type"])
            self._mark(conn, L7R, rule_id, PENDING_UPDATE, data)
            return self.l7rule_view(conn, self.l7rule_row(conn, policy_id, rule_id))

        return self._change_rule(policy_id, change)

    def delete_l7rule(self, policy_id: str, rule_id: str) -> None:
        def change(conn: Connection, policy: Row, lb: Row) -> None:
            self.l7rule_row(conn, policy_id, rule_id)
            self._mark(conn, L7R, rule_id, PENDING_DELETE)

        self._change_rule(policy_id, change)

    # --- reads ------------------------------------------------------------------------

    @staticmethod
    def stats(conn: Connection, listener_ids: Any) -> dict[str, int]:
        """The counters of ``listener_ids`` (a select of them) added up: Octavia's
        stats of a listener or a load balancer (zero before any report)."""
        found = conn.execute(select(*(func.coalesce(func.sum(ST.c[key]), 0) for key in
                                      STATS)).where(ST.c.listener_id.in_(listener_ids))).one()
        return {key: int(value) for key, value in zip(STATS, found, strict=True)}

    def status_tree(self, conn: Connection, lb: Row) -> dict[str, Any]:
        """Octavia's status tree: the load balancer, its listeners, each with the
        pool it sends to, that pool's health monitor and members."""
        def brief(row: Row) -> dict[str, Any]:
            return {"id": row.id, "name": row.name,
                    "provisioning_status": row.provisioning_status,
                    "operating_status": row.operating_status}

        pools = {row.id: row for row in conn.execute(
            select(PO).where(PO.c.loadbalancer_id == lb.id))}
        members: dict[str, list[dict[str, Any]]] = {pool_id: [] for pool_id in pools}
        monitors: dict[str, dict[str, Any]] = {}
        if pools:
            for row in conn.execute(select(ME).where(ME.c.pool_id.in_(list(pools)))
                                    .order_by(ME.c.created_at, ME.c.id)):
                members[row.pool_id].append({**brief(row), "address": row.address,
                                             "protocol_port": row.protocol_port})
            for row in conn.execute(select(HM).where(HM.c.pool_id.in_(list(pools)))):
                monitors[row.pool_id] = {**brief(row), "type": row.type}

        def pool(pool_id: str) -> dict[str, Any]:
            view = {**brief(pools[pool_id]), "members": members[pool_id]}
            if pool_id in monitors:
                view["health_monitor"] = monitors[pool_id]
            return view

        listeners = [{**brief(row), "pools": [pool(row.default_pool_id)]
                      if row.default_pool_id in pools else []}
                     for row in conn.execute(select(LI).where(LI.c.loadbalancer_id == lb.id)
                                             .order_by(LI.c.created_at, LI.c.id))]
        return {"loadbalancer": {**brief(lb), "listeners": listeners}}

    def read(self, work: Callable[[Connection], T]) -> T:
        return self._read(work)


#: the pool protocols a listener's protocol can send to (Octavia's map)
POOL_PROTOCOLS_OF = {
    "HTTP": ("HTTP", "PROXY", "PROXYV2"),
    "HTTPS": ("HTTPS", "PROXY", "PROXYV2", "TCP"),
    "TCP": ("HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP"),
    "TERMINATED_HTTPS": ("HTTP", "PROXY", "PROXYV2"),
    "UDP": ("UDP",),
    "SCTP": ("SCTP",),
    "PROMETHEUS": (),
}

MEMBER_DEFAULTS: dict[str, Any] = {
    "name": "", "admin_state_up": True, "tags": [], "weight": 1,
    "backup": False, "subnet_id": None, "monitor_address": None, "monitor_port": None}


def _policies_of(conn: Connection, listener_id: str) -> list[str]:
    """The listener's policies that stay, in position order."""
    return list(conn.execute(select(L7P.c.id).where(
        L7P.c.listener_id == listener_id, L7P.c.provisioning_status != PENDING_DELETE)
        .order_by(L7P.c.position, L7P.c.created_at)).scalars())


def _move(conn: Connection, listener_id: str, policy_id: str, position: int) -> None:
    """The policy to ``position`` (at most last), the others shifted round it."""
    order = [i for i in _policies_of(conn, listener_id) if i != policy_id]
    order.insert(min(position, len(order) + 1) - 1, policy_id)
    for index, item in enumerate(order, start=1):
        conn.execute(update(L7P).where(L7P.c.id == item, L7P.c.position != index)
                     .values(position=index))


def _renumber(conn: Connection, listeners: Any) -> None:
    """Positions 1, 2, ... again once policies went."""
    for listener_id in conn.execute(listeners).scalars():
        for index, item in enumerate(_policies_of(conn, listener_id), start=1):
            conn.execute(update(L7P).where(L7P.c.id == item, L7P.c.position != index)
                         .values(position=index))


def _only_its_target(values: dict[str, Any], code: int | None) -> dict[str, Any]:
    """A policy's values with the targets of the other actions cleared, and a
    redirect's code (``code``, the one it had, or 302) only on a redirect."""
    for key, action in (("redirect_url", "REDIRECT_TO_URL"),
                        ("redirect_prefix", "REDIRECT_PREFIX"),
                        ("redirect_pool_id", "REDIRECT_TO_POOL")):
        if values["action"] != action:
            values[key] = None
    if values["action"] not in ("REDIRECT_TO_URL", "REDIRECT_PREFIX"):
        values["redirect_http_code"] = None
    elif values.get("redirect_http_code") is None:
        values["redirect_http_code"] = code or 302
    return values
