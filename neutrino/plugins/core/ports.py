"""Ports in the database: MAC and fixed IP allocation, views, filters."""

from __future__ import annotations

import collections
import functools
import random
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from sqlalchemy import and_, bindparam, delete, or_, select, true
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql import ColumnElement

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db.prepared import Prepared
from neutrino.db.query import CollectionQuery, Page, api_columns, read_page
from neutrino.db.util import bump, check_revision, now, timestamp
from neutrino.definitions.portbindings import HOST_ID
from neutrino.definitions.validators import canonical_ip, new_uuid
from neutrino.ipam import allocator, routed
from neutrino.plugins.core import networks

P = models.ports
IA = models.ip_allocations

COLUMNS = api_columns(P, "network_id", "mac_address", "admin_state_up", "status",
                      "device_id", "device_owner")
EXTRA_FILTERS = ("fixed_ips",)


def visible(ctx: Context) -> list:
    """A project sees its ports and every port on the networks it owns."""
    if ctx.is_admin:
        return []
    owned = select(models.networks.c.id).where(
        models.networks.c.project_id == ctx.project_id)
    return [or_(P.c.project_id == ctx.project_id, P.c.network_id.in_(owned))]


def view(row: Any, fixed_ips: list[dict[str, str]], tag_list: list[str]) -> dict[str, Any]:
    found = {
        "id": row.id, "name": row.name, "network_id": row.network_id,
        "tenant_id": row.project_id, "project_id": row.project_id,
        "mac_address": row.mac_address, "admin_state_up": row.admin_state_up,
        "status": row.status, "device_id": row.device_id, "device_owner": row.device_owner,
        "fixed_ips": fixed_ips, "description": row.description, "tags": tag_list,
        "created_at": timestamp(row.created_at), "updated_at": timestamp(row.updated_at),
        "revision_number": row.revision_number,
    }
    if row.ip_allocation:  # routed networks: a port whose address waits, or has none
        found["ip_allocation"] = row.ip_allocation
    return found


@functools.lru_cache(maxsize=8)
def _row_type(fields: tuple[str, ...]) -> Any:
    return collections.namedtuple("PortRow", fields)


def _plain(rows: list[Row]) -> list[Any]:
    """Rows as named tuples, whose attributes ``view`` reads many times faster."""
    if not rows:
        return rows
    make = _row_type(tuple(rows[0]._fields))._make
    return [make(row) for row in rows]


def get_row(conn: Connection, ctx: Context, port_id: str) -> Row:
    row = conn.execute(select(P).where(P.c.id == port_id, *visible(ctx))).first()
    if row is None:
        raise exc.PortNotFound(port_id=port_id)
    return row


def _fixed_ips(conn: Connection, page: Page) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {}
    for port_id, subnet_id, address in page.read(
            conn, select(IA.c.port_id, IA.c.subnet_id, IA.c.ip_address), IA.c.port_id):
        found.setdefault(port_id, []).append({"subnet_id": subnet_id, "ip_address": address})
    return found


def get(conn: Connection, ctx: Context, port_id: str) -> dict[str, Any]:
    row = get_row(conn, ctx, port_id)
    return view(row, _fixed_ips(conn, Page([port_id])).get(port_id, []),
                tags.of(conn, port_id))


def list_(conn: Connection, ctx: Context, query: CollectionQuery, extra: Sequence = ()
          ) -> list[dict[str, Any]]:
    return list_page(conn, ctx, query, extra)[0]


def list_page(conn: Connection, ctx: Context, query: CollectionQuery, extra: Sequence = (),
              fields: set[str] | None = None) -> tuple[list[dict[str, Any]], Page]:
    """The ports, and their page (for the reads of their extensions' attributes).
    ``extra``: the core plugin's own clauses, for attributes of its extensions;
    ``fields``: the attributes wanted (None: all), the others may be left empty."""
    where = [*visible(ctx), *extra]
    fixed_filters = query.pop_filter("fixed_ips")
    if fixed_filters:
        where.append(_fixed_ips_clause(fixed_filters))
    if query.marker is not None:
        get_row(conn, ctx, query.marker)
    selected = () if fields is None else _columns_for(fields)
    found, page = read_page(conn, P, COLUMNS, query, where, selected)
    ips = _fixed_ips(conn, page) if fields is None or "fixed_ips" in fields else {}
    tag_map = tags.load(conn, page) if fields is None or "tags" in fields else {}
    if fields is None:
        return [view(r, ips.get(r.id, []), tag_map.get(r.id, [])) for r in _plain(found)], page
    return _partial_views(found, fields, ips, tag_map), page


#: read for every list, whatever its fields: the list's policy checks need them
_ALWAYS_READ = ("id", "project_id", "network_id", "device_owner")
_TIMES = ("created_at", "updated_at")


def _columns_for(fields: set[str]) -> list[Any]:
    """The port columns a list of ``fields`` reads: a narrow list reads less."""
    names = set(_ALWAYS_READ) | {name for name in fields if name in P.c}
    return [P.c[name] for name in sorted(names)]


def _partial_views(rows: list[Row], fields: set[str], ips: dict[str, list],
                   tag_map: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Views holding the read columns and the wanted attributes made of them
    (the controller keeps only the wanted ones)."""
    if not rows:
        return []
    names = rows[0]._fields
    views = [dict(zip(names, row, strict=True)) for row in rows]
    times = [name for name in _TIMES if name in names]
    for item in views:
        for name in times:
            item[name] = timestamp(item[name])
    if "tenant_id" in fields:
        for item in views:
            item["tenant_id"] = item["project_id"]
    if "fixed_ips" in fields:
        for item in views:
            item["fixed_ips"] = ips.get(item["id"], [])
    if "tags" in fields:
        for item in views:
            item["tags"] = tag_map.get(item["id"], [])
    if "ip_allocation" in fields:
        for item in views:
            item["ip_allocation"] = item["ip_allocation"] or routed.IMMEDIATE
    return views


def _fixed_ips_clause(values: list[str]):
    """``fixed_ips=ip_address=X``, ``subnet_id=Y``, ``ip_address_substr=Z``: each kind
    must match some address of the port (values of one kind are OR-ed)."""
    wanted: dict[str, list[str]] = {}
    for value in values:
        key, sep, item = value.partition("=")
        if not sep:
            raise exc.InvalidInput(error_message=f"'{value}' is not of the form "
                                                 "<key>=[value]")
        wanted.setdefault(key, []).append(item)
    conds: list[ColumnElement[bool]] = []
    if "ip_address" in wanted:
        conds.append(IA.c.ip_address.in_(wanted["ip_address"]))
    if "subnet_id" in wanted:
        conds.append(IA.c.subnet_id.in_(wanted["subnet_id"]))
    if "ip_address_substr" in wanted:
        conds.append(or_(*[IA.c.ip_address.contains(sub, autoescape=True)
                           for sub in wanted["ip_address_substr"]]))
    return and_(true(), *[P.c.id.in_(select(IA.c.port_id).where(cond)) for cond in conds])


def random_mac(base_mac: str) -> str:
    """The first three octets of ``base_mac``, its fourth unless it is 00, then random."""
    parts = base_mac.lower().split(":")[:4]
    if parts[3] == "00":
        parts[3] = f"{random.randrange(256):02x}"
    parts += [f"{random.randrange(256):02x}" for _ in range(2)]
    return ":".join(parts)


_MAC_TAKEN = Prepared(select(P.c.id).where(P.c.network_id == bindparam("network_id"),
                                            P.c.mac_address == bindparam("mac")))


def _check_mac(conn: Connection, network_id: str, mac: str) -> None:
    if _MAC_TAKEN.first(conn, {"network_id": network_id, "mac": mac}) is not None:
        raise exc.MacAddressInUse(net_id=network_id, mac=mac)


# Inserts take every column's value.
_INSERT_PORT = Prepared(P.insert())
_INSERT_IPS = Prepared(IA.insert())


def create(conn: Connection, ctx: Context, data: dict[str, Any], base_mac: str,
           max_ips: int, routed_networks: bool = False, network: Any = None
           ) -> dict[str, Any]:
    """``routed_networks``: subnets on segments give addresses to the ports of
    the hosts that reach them (``neutrino.ipam.routed``). ``network``: its row,
    when the caller read it in this transaction."""
    if network is None:
        network = networks.get_row(conn, ctx, data["network_id"])
    port_id = new_uuid()
    mac = data.get("mac_address")
    if mac is not None:
        _check_mac(conn, network.id, mac)
    else:
        mac = random_mac(base_mac)  # a collision fails the unique key; the write retries
    subnets = allocator.load_subnets(conn, network.id)
    allocation = None
    if routed_networks:
        subnets, allocation = routed.eligible(conn, network.id, subnets, data.get("fixed_ips"),
                                              data.get(HOST_ID))
    fixed = allocator.allocate(conn, network.id, subnets, data.get("fixed_ips"), mac,
                               data.get("device_owner", ""), max_ips)
    when = now()
    row = {
        "id": port_id, "project_id": data["project_id"], "name": data.get("name", ""),
        "description": data.get("description", ""), "network_id": network.id,
        "mac_address": mac, "admin_state_up": data.get("admin_state_up", True),
        "status": "DOWN", "device_id": data.get("device_id", ""),
        "device_owner": data.get("device_owner", ""),
        "ip_allocation": None if allocation == routed.IMMEDIATE else allocation,
        "created_at": when, "updated_at": when, "revision_number": 1,
    }
    _INSERT_PORT.run(conn, row)
    _INSERT_IPS.run_many(conn, [{**f, "port_id": port_id, "network_id": network.id}
                                for f in fixed])
    return view(SimpleNamespace(**row), fixed, [])


_UPDATABLE = ("name", "description", "admin_state_up", "device_id", "device_owner",
              "mac_address")


def update(conn: Connection, port: dict[str, Any], data: dict[str, Any],
           if_revision: int | None, max_ips: int) -> None:
    """Update ``port`` (its view, read by the caller in this transaction)."""
    port_id, network_id = port["id"], port["network_id"]
    values = {k: data[k] for k in _UPDATABLE if k in data}
    mac = values.get("mac_address")
    requested = data.get("fixed_ips")
    if mac is not None and mac != port["mac_address"]:
        _check_mac(conn, network_id, mac)
        if requested is None:
            # A new MAC means new EUI-64 addresses on the auto-address subnets.
            requested = [dict(ip) for ip in port["fixed_ips"]]
    if requested is not None:
        _replace_fixed_ips(conn, port_id, network_id, requested,
                           values.get("device_owner", port["device_owner"]),
                           mac or port["mac_address"], max_ips)
    bump(conn, P, port_id, if_revision, values)


def take_deferred(conn: Connection, port: dict[str, Any], host: str, max_ips: int) -> bool:
    """A port whose allocation waited for its host (``deferred``), bound now:
    its addresses from the subnets of the host's segments. Whether it took any."""
    subnets = allocator.load_subnets(conn, port["network_id"])
    subnets, _ = routed.eligible(conn, port["network_id"], subnets, None, host)
    fixed = allocator.allocate(conn, port["network_id"], subnets, None, port["mac_address"],
                               port["device_owner"], max_ips)
    _INSERT_IPS.run_many(conn, [{**f, "port_id": port["id"], "network_id": port["network_id"]}
                                for f in fixed])
    conn.execute(P.update().where(P.c.id == port["id"]).values(ip_allocation=None))
    return bool(fixed)


def check_host(conn: Connection, port: dict[str, Any], host: str) -> None:
    """A port with addresses on a routed network goes only to a host of their segment."""
    if port["fixed_ips"]:
        routed.check_host(conn, port["id"], allocator.load_subnets(conn, port["network_id"]),
                          port["fixed_ips"], host)


def _replace_fixed_ips(conn: Connection, port_id: str, network_id: str,
                       requested: list[dict[str, Any]], device_owner: str, mac: str,
                       max_ips: int) -> None:
    current = {(s, a) for s, a in conn.execute(
        select(IA.c.subnet_id, IA.c.ip_address).where(IA.c.port_id == port_id))}
    subnets = allocator.load_subnets(conn, network_id)
    # As Neutron: an entry naming an address keeps it (when the port has it); an
    # entry naming only a subnet keeps one of the port's addresses there that no
    # entry named, or asks for a new address.
    named = {canonical_ip(item["ip_address"]) for item in requested
             if "ip_address" in item}
    unclaimed: dict[str, list[str]] = {}
    for subnet_id, address in sorted(current):
        if address not in named:
            unclaimed.setdefault(subnet_id, []).append(address)
    wanted = []
    for item in requested:
        subnet_id = item.get("subnet_id")
        spare = unclaimed.get(subnet_id) if subnet_id and "ip_address" not in item else None
        if spare:
            wanted.append({"subnet_id": item["subnet_id"], "ip_address": spare.pop()})
        else:
            wanted.append(item)
    conn.execute(delete(IA).where(IA.c.port_id == port_id))
    fixed = allocator.allocate(conn, network_id, subnets, wanted, mac, device_owner,
                               max_ips, keep=current)
    _INSERT_IPS.run_many(conn, [{**f, "port_id": port_id, "network_id": network_id}
                                for f in fixed])


def delete_(conn: Connection, port_id: str, if_revision: int | None) -> None:
    """Delete a port the caller has read in this transaction (so may see)."""
    check_revision(conn, P, port_id, if_revision)
    conn.execute(delete(IA).where(IA.c.port_id == port_id))
    conn.execute(delete(models.tags).where(models.tags.c.resource_id == port_id))
    conn.execute(delete(P).where(P.c.id == port_id))
