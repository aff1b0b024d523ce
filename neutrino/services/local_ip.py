"""The ``local_ip`` service plugin (``service_plugins = ...,local_ip``):
Neutron's Local IPs, addresses that an instance reaches on its own host only,
where they lead to the port associated with them there (as an anycast
address would: many ports on many hosts may share one local IP).

A local IP takes its address from a port: one given (``local_port_id``,
which the caller must see; of several addresses, the one asked for), or one
made for it on ``network_id`` (device owner ``network:local_ip``, device id
the local IP's, in its project), which needs an IPv4 subnet there and goes
with the local IP. Only the name and the description change afterwards. A
local IP with associations cannot be deleted (LocalIPInUse), nor can its
port be deleted through the port API while it exists (ServicePortInUse).

A port association (``/local_ips/{id}/port_associations``, one per port,
named by the port's id) leads the local IP to one of the port's fixed IPs
(the one given, or its only one). It goes with its port. Only the Open
vSwitch agent enforces it (its ``local_ip`` extension, as in Neutron): a
port bound by the Linux bridge driver is refused (409). The agents ask for
their ports' associations (``get_associations``) and are told, once an
association was made or removed, which ports changed (``associations_updated``).

Deviations from Neutron: a second association of a port to the same local
IP is a 409 (LocalIPPortAssociationExists; Neutron logs it and fails with a
500), an association to a port the caller cannot see a 400 (Neutron fails
reading the missing port); a port made on a network with IPv4 and IPv6
subnets gives the local IP its IPv4 address (Neutron takes the port's first,
whichever); associations are listed whole (filters and sorts apply, limits
do not).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db.query import CollectionQuery, api_columns, find_row, owned, read_page
from neutrino.db.util import bump, check_revision, now, timestamp
from neutrino.definitions import local_ip as lipdef
from neutrino.definitions.l3 import ServicePortInUse
from neutrino.definitions.validators import new_uuid
from neutrino.plugins.base import CorePlugin, Environment, Plugin
from neutrino.rpc.contracts import local_ip as contract
from neutrino.rpc.notifier import Notifier

LIP, LIA = models.local_ips, models.local_ip_associations
P, B, S = models.ports, models.port_bindings, models.subnets
COLUMNS = api_columns(LIP, "local_port_id", "network_id", "local_ip_address", "ip_mode")
ADMIN = Context.admin()
#: the ``binding:vif_type`` of ports the Linux bridge driver binds
LINUX_BRIDGE_VIF = "bridge"

After = list[Callable[[], None]]


def _canonical(address: str) -> str:
    return str(ipaddress.ip_address(address))


# --- rows and views -----------------------------------------------------------------------

def view(row: Any, tag_list: list[str]) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "description": row.description,
            "project_id": row.project_id, "tenant_id": row.project_id,
            "local_port_id": row.local_port_id, "network_id": row.network_id,
            "local_ip_address": row.local_ip_address, "ip_mode": row.ip_mode,
            "tags": tag_list, "created_at": timestamp(row.created_at),
            "updated_at": timestamp(row.updated_at), "revision_number": row.revision_number}


def views(conn: Connection, rows: list[Row]) -> list[dict[str, Any]]:
    tag_map = tags.load(conn, [row.id for row in rows]) if rows else {}
    return [view(row, tag_map.get(row.id, [])) for row in rows]


def local_ip_row(conn: Connection, ctx: Context, local_ip_id: str,
                 for_update: bool = False) -> Row:
    return find_row(conn, LIP, local_ip_id, owned(LIP, ctx),
                    lambda: lipdef.LocalIPNotFound(id=local_ip_id), for_update)


def active_bindings(conn: Connection, port_ids: list[str]) -> dict[str, Row]:
    """port id -> (host, vif_type) of its active binding."""
    if not port_ids:
        return {}
    return {row.port_id: row for row in conn.execute(
        select(B.c.port_id, B.c.host, B.c.vif_type).where(
            B.c.port_id.in_(port_ids), B.c.status == "ACTIVE"))}


def association_views(conn: Connection, local_ip: Row, fixed_port_id: str | None = None
                      ) -> list[dict[str, Any]]:
    """The local IP's associations (the one of ``fixed_port_id``), as the API shows them."""
    stmt = select(LIA).where(LIA.c.local_ip_id == local_ip.id)
    if fixed_port_id is not None:
        stmt = stmt.where(LIA.c.fixed_port_id == fixed_port_id)
    rows = list(conn.execute(stmt.order_by(LIA.c.fixed_port_id)))
    bound = active_bindings(conn, [row.fixed_port_id for row in rows])
    return [{"local_ip_id": local_ip.id, "local_ip_address": local_ip.local_ip_address,
             "fixed_port_id": row.fixed_port_id, "fixed_ip": row.fixed_ip,
             "host": bound[row.fixed_port_id].host if row.fixed_port_id in bound else "",
             "project_id": local_ip.project_id} for row in rows]


def of_ports(conn: Connection, port_ids: list[str]) -> dict[str, list[contract.Association]]:
    """What the agents enforce: port id -> its associations."""
    found: dict[str, list[contract.Association]] = {}
    if not port_ids:
        return found
    for row in conn.execute(
            select(LIA.c.fixed_port_id, LIA.c.fixed_ip, LIP.c.id, LIP.c.local_ip_address,
                   LIP.c.ip_mode).join(LIP, LIP.c.id == LIA.c.local_ip_id)
            .where(LIA.c.fixed_port_id.in_(port_ids)).order_by(LIP.c.local_ip_address)):
        found.setdefault(row.fixed_port_id, []).append(contract.Association(
            local_ip_id=row.id, local_ip_address=row.local_ip_address, ip_mode=row.ip_mode,
            fixed_ip=row.fixed_ip))
    return found


def chosen_address(port: dict[str, Any], requested: str | None) -> str:
    """The address a local IP takes of an existing port: the one asked for, else
    its only one (Neutron's errors otherwise)."""
    addresses = [_canonical(ip["ip_address"]) for ip in port["fixed_ips"]]
    if not addresses:
        raise lipdef.LocalIPNoIP(port_id=port["id"])
    if requested is not None:
        if _canonical(requested) not in addresses:
            raise lipdef.LocalIPRequestedIPNotFound(port_id=port["id"], ip=requested)
        return _canonical(requested)
    if len(addresses) > 1:
        raise lipdef.LocalIPNoRequestedIP(port_id=port["id"])
    return addresses[0]


def _filtered(items: list[dict[str, Any]], query: CollectionQuery) -> list[dict[str, Any]]:
    """Filters and sorts applied to views (associations are few per local IP)."""
    kept = [item for item in items if all(
        str(item.get(key)) in {str(value) for value in values}
        for key, values in query.filters.items())]
    for key, ascending in reversed(query.sorts):  # stable: the first key decides last
        kept.sort(key=_sort_key(key), reverse=not ascending)
    return kept


def _sort_key(key: str) -> Callable[[dict[str, Any]], str]:
    def get(item: dict[str, Any]) -> str:
        return str(item.get(key) or "")
    return get


class LocalIpRpcCallbacks:
    """What the plugin serves the agents' ``local_ip`` extension on ``q-local-ip-plugin``."""

    rpc_version = contract.VERSION

    def __init__(self, plugin: LocalIpPlugin):
        self._plugin = plugin

    def get_associations(self, context: dict[str, Any], port_ids: list[str], **kwargs: Any
                         ) -> dict[str, list[contract.Association]]:
        if not isinstance(port_ids, list) or not all(isinstance(p, str) for p in port_ids):
            raise exc.InvalidInput(error_message="port_ids must be a list of port ids")
        return self._plugin._read(lambda conn: of_ports(conn, port_ids))


class LocalIpPlugin(Plugin):
    plugin_type = "LOCAL_IP"
    supported_extension_aliases = (lipdef.ALIAS,)

    def __init__(self, env: Environment):
        super().__init__(env)
        self.notifier = contract.LocalIpAgentNotifier(Notifier(env.bus))
        env.hooks.before_port_delete.append(self._before_port_delete)
        env.hooks.on_port_removed.append(self._port_removed)

    def taggable_tables(self) -> dict[str, Any]:
        return {lipdef.LOCAL_IP.collection: LIP}

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        return {contract.TOPIC: [LocalIpRpcCallbacks(self)]}

    # --- ports: a local IP's stays, an associated one takes its associations --------------

    @staticmethod
    def _before_port_delete(conn: Connection, ctx: Context, port_id: str
                            ) -> Callable[[], None] | None:
        if conn.execute(select(LIP.c.id).where(LIP.c.local_port_id == port_id)
                        .limit(1)).first() is not None:
            raise ServicePortInUse(port_id=port_id, reason="still referenced by Local IPs")
        return None

    @staticmethod
    def _port_removed(conn: Connection, port_id: str) -> None:
        conn.execute(delete(LIA).where(LIA.c.fixed_port_id == port_id))

    # --- local IPs ------------------------------------------------------------------------

    def _own_port(self, conn: Connection, ctx: Context, local_ip_id: str,
                  data: dict[str, Any], after: After) -> tuple[dict[str, Any], str]:
        """A port made for the local IP on ``network_id``, and its address."""
        network_id, requested = data["network_id"], data.get("local_ip_address")
        self.core.network_row_in(conn, ctx, network_id)
        if conn.execute(select(S.c.id).where(S.c.network_id == network_id, S.c.ip_version == 4)
                        .limit(1)).first() is None:
            raise exc.BadRequest(resource="local_ip",
                                 msg=f"Network {network_id} does not contain any IPv4 subnet")
        port = self.core.create_port_in(conn, ADMIN, {
            "project_id": data["project_id"], "network_id": network_id, "name": "",
            "admin_state_up": True, "device_id": local_ip_id,
            "device_owner": lipdef.DEVICE_OWNER,
            "fixed_ips": [{"ip_address": requested}] if requested is not None else None})
        # never bound anywhere: as Neutron's, its status says so
        conn.execute(update(P).where(P.c.id == port["id"]).values(status="N/A"))
        port["status"] = "N/A"
        after.append(lambda: self.core.port_created(ADMIN, port))
        addresses = [ip["ip_address"] for ip in port["fixed_ips"]]
        v4 = [a for a in addresses if ipaddress.ip_address(a).version == 4]
        return port, _canonical((v4 or addresses)[0])

    @property
    def core(self) -> CorePlugin:
        return self.env.core

    def create_local_ip(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        def work(conn: Connection) -> tuple[dict[str, Any], After]:
            after: After = []
            local_ip_id = new_uuid()
            if data.get("local_port_id") is not None:
                try:
                    port = self.core.port_in(conn, ctx, data["local_port_id"])
                except exc.NotFound:
                    raise exc.BadRequest(resource="local_ip", msg=(
                        f"Port {data['local_port_id']} not found")) from None
                address = chosen_address(port, data.get("local_ip_address"))
            elif data.get("network_id") is not None:
                port, address = self._own_port(conn, ctx, local_ip_id, data, after)
            else:
                raise lipdef.LocalIPPortOrNetworkRequired()
            at = now()
            conn.execute(LIP.insert().values(
                id=local_ip_id, project_id=data.get("project_id"), name=data.get("name") or "",
                description=data.get("description") or "", local_port_id=port["id"],
                network_id=port["network_id"], local_ip_address=address,
                ip_mode=data.get("ip_mode") or lipdef.TRANSLATE, created_at=at, updated_at=at,
                revision_number=0))
            return views(conn, [local_ip_row(conn, ADMIN, local_ip_id)])[0], after

        created, after = self.db.write(work)
        for then in after:
            then()
        return created

    def get_local_ip(self, ctx: Context, local_ip_id: str) -> dict[str, Any]:
        return self._read(lambda conn: views(conn, [local_ip_row(conn, ctx, local_ip_id)])[0])

    def get_local_ips(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        def work(conn: Connection) -> list[dict[str, Any]]:
            if query.marker is not None:
                local_ip_row(conn, ctx, query.marker)
            rows, _ = read_page(conn, LIP, COLUMNS, query, owned(LIP, ctx))
            return views(conn, rows)

        return self._read(work)

    def update_local_ip(self, ctx: Context, local_ip_id: str, data: dict[str, Any],
                        if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            row = local_ip_row(conn, ctx, local_ip_id, for_update=True)
            bump(conn, LIP, row.id, if_revision,
                 {k: data[k] for k in ("name", "description") if k in data})
            return views(conn, [local_ip_row(conn, ctx, row.id)])[0]

        return self.db.write(work)  # nothing the agents use changed

    def delete_local_ip(self, ctx: Context, local_ip_id: str,
                        if_revision: int | None = None) -> None:
        def work(conn: Connection) -> After:
            row = local_ip_row(conn, ctx, local_ip_id, for_update=True)
            check_revision(conn, LIP, row.id, if_revision)
            if conn.execute(select(LIA.c.fixed_port_id).where(LIA.c.local_ip_id == row.id)
                            .limit(1)).first() is not None:
                raise lipdef.LocalIPInUse(id=row.id)
            tags.remove(conn, row.id)
            conn.execute(delete(LIP).where(LIP.c.id == row.id))
            owner = conn.execute(select(P.c.device_owner).where(
                P.c.id == row.local_port_id)).scalar()
            shared = conn.execute(select(LIP.c.id).where(
                LIP.c.local_port_id == row.local_port_id).limit(1)).first() is not None
            if owner != lipdef.DEVICE_OWNER or shared:
                return []
            context = self.core.delete_port_in(conn, ADMIN, row.local_port_id)
            return [lambda: self.core.port_deleted(context)]

        for then in self.db.write(work):
            then()

    # --- port associations ----------------------------------------------------------------

    def create_local_ip_port_association(self, ctx: Context, local_ip_id: str,
                                         data: dict[str, Any]) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            local_ip = local_ip_row(conn, ctx, local_ip_id, for_update=True)  # one at a time
            port_id = data["fixed_port_id"]
            try:
                port = self.core.port_in(conn, ctx, port_id)
            except exc.NotFound:
                raise exc.BadRequest(resource="local_ip_port_association",
                                     msg=f"Port {port_id} not found") from None
            addresses = [_canonical(ip["ip_address"]) for ip in port["fixed_ips"]]
            fixed_ip = data.get("fixed_ip")
            if fixed_ip is not None:
                if _canonical(fixed_ip) not in addresses:
                    raise lipdef.LocalIPRequestedIPNotFound(port_id=port_id, ip=fixed_ip)
                fixed_ip = _canonical(fixed_ip)
            elif not addresses:
                raise lipdef.LocalIPNoIP(port_id=port_id)
            elif len(addresses) > 1:
                raise lipdef.LocalIPNoRequestedIP(port_id=port_id)
            else:
                fixed_ip = addresses[0]
            binding = active_bindings(conn, [port_id]).get(port_id)
            if binding is not None and binding.vif_type == LINUX_BRIDGE_VIF:
                raise lipdef.LocalIPNotSupportedOnLinuxBridge(port_id=port_id)
            if conn.execute(select(LIA.c.fixed_ip).where(
                    LIA.c.local_ip_id == local_ip.id, LIA.c.fixed_port_id == port_id)
                    ).first() is not None:
                raise lipdef.LocalIPPortAssociationExists(local_ip_id=local_ip.id,
                                                          port_id=port_id)
            conn.execute(LIA.insert().values(local_ip_id=local_ip.id, fixed_port_id=port_id,
                                             fixed_ip=fixed_ip))
            return association_views(conn, local_ip, port_id)[0]

        created = self.db.write(work)
        self.notifier.associations_updated([created["fixed_port_id"]])
        return created

    def get_local_ip_port_associations(self, ctx: Context, local_ip_id: str,
                                       query: CollectionQuery) -> list[dict[str, Any]]:
        def work(conn: Connection) -> list[dict[str, Any]]:
            return association_views(conn, local_ip_row(conn, ctx, local_ip_id))

        return _filtered(self._read(work), query)

    def _association(self, conn: Connection, ctx: Context, local_ip_id: str,
                     fixed_port_id: str, for_update: bool = False) -> dict[str, Any]:
        local_ip = local_ip_row(conn, ctx, local_ip_id, for_update)
        found = association_views(conn, local_ip, fixed_port_id)
        if not found:
            raise lipdef.LocalIPAssociationNotFound(local_ip_id=local_ip_id,
                                                    port_id=fixed_port_id)
        return found[0]

    def get_local_ip_port_association(self, ctx: Context, local_ip_id: str,
                                      fixed_port_id: str) -> dict[str, Any]:
        return self._read(lambda conn: self._association(conn, ctx, local_ip_id,
                                                         fixed_port_id))

    def delete_local_ip_port_association(self, ctx: Context, local_ip_id: str,
                                         fixed_port_id: str,
                                         if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            self._association(conn, ctx, local_ip_id, fixed_port_id, for_update=True)
            conn.execute(delete(LIA).where(LIA.c.local_ip_id == local_ip_id,
                                           LIA.c.fixed_port_id == fixed_port_id))

        self.db.write(work)
        self.notifier.associations_updated([fixed_port_id])
