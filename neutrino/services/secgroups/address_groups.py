"""Address groups in the database: named sets of CIDRs kept without host bits."""

from __future__ import annotations

import ipaddress
from types import SimpleNamespace
from typing import Any

from sqlalchemy import bindparam, delete, select
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db import rbac as shared
from neutrino.db.query import CollectionQuery, api_columns, find_row, select_page
from neutrino.db.util import bump, check_revision, chunked, now, timestamp
from neutrino.definitions import address_group as ag
from neutrino.definitions import validators as v
from neutrino.definitions.validators import new_uuid

AG = models.address_groups
AA = models.address_group_addresses
COLUMNS = api_columns(AG)


TYPE = "address_group"


def visible(ctx: Context) -> list:
    """The project's groups and those shared with it (rbac-address-group)."""
    return shared.visible(AG, TYPE, ctx)


def get_row(conn: Connection, ctx: Context, group_id: str, for_update: bool = False) -> Row:
    return find_row(conn, AG, group_id, visible(ctx),
                    lambda: ag.AddressGroupNotFound(address_group_id=group_id), for_update)


def view(row: Any, addresses: list[str]) -> dict[str, Any]:
    return {
        "id": row.id, "name": row.name, "description": row.description,
        "project_id": row.project_id, "tenant_id": row.project_id, "addresses": addresses,
        "created_at": timestamp(row.created_at), "updated_at": timestamp(row.updated_at),
        "revision_number": row.revision_number,
    }


_OF_GROUPS = select(AA.c.address_group_id, AA.c.address).where(
    AA.c.address_group_id.in_(bindparam("ids", expanding=True))).order_by(AA.c.address)


def addresses_of(conn: Connection, group_ids: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for chunk in chunked(group_ids):
        for group_id, address in conn.execute(_OF_GROUPS, {"ids": list(chunk)}):
            found.setdefault(group_id, []).append(address)
    for addresses in found.values():
        addresses.sort(key=_order)
    return found


def every_group_addresses(conn: Connection) -> dict[str, list[str]]:
    """Every address group's addresses (none: an empty list), by group."""
    ids = list(conn.execute(select(AG.c.id)).scalars())
    return {ident: [] for ident in ids} | addresses_of(conn, ids)


def _order(cidr: str) -> tuple:
    net = ipaddress.ip_network(cidr)
    return net.version, net.network_address, net.prefixlen


def get(conn: Connection, ctx: Context, group_id: str) -> dict[str, Any]:
    row = get_row(conn, ctx, group_id)
    return view(row, addresses_of(conn, [row.id]).get(row.id, []))


def list_(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    if query.marker is not None:
        get_row(conn, ctx, query.marker)
    rows = select_page(conn, AG, COLUMNS, query, visible(ctx))
    found = addresses_of(conn, [r.id for r in rows])
    return [view(r, found.get(r.id, [])) for r in rows]


def normalised(addresses: Any, bare_addresses: bool = False) -> set[str]:
    """Checked CIDRs without host bits: ``10.0.0.5/24`` is ``10.0.0.0/24``.

    ``bare_addresses``: a lone address is its host route (``10.0.0.5/32``) and a
    repeated item counts once, as Neutron's add_addresses and remove_addresses
    take them (its create does neither)."""
    if bare_addresses and isinstance(addresses, list):
        addresses = [_with_prefix(a) for a in addresses]
        if all(isinstance(a, str) for a in addresses):
            addresses = list(dict.fromkeys(addresses))
    error = v.subnet_cidr_list(addresses)
    if error:
        raise exc.InvalidInput(error_message=error)
    return {str(ipaddress.ip_network(a, strict=False)) for a in addresses}


def _with_prefix(address: Any) -> Any:
    if not isinstance(address, str) or "/" in address:
        return address
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address  # the validator names it
    return f"{address}/{ip.max_prefixlen}"


def create(conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
    when = now()
    row = {"id": new_uuid(), "project_id": data["project_id"], "name": data.get("name", ""),
           "description": data.get("description", ""), "created_at": when,
           "updated_at": when, "revision_number": 0}
    conn.execute(AG.insert().values(**row))
    wanted = sorted(normalised(data.get("addresses") or []), key=_order)
    if wanted:
        conn.execute(AA.insert(), [{"address_group_id": row["id"], "address": a}
                                   for a in wanted])
    return view(SimpleNamespace(**row), wanted)


def update(conn: Connection, ctx: Context, group_id: str, data: dict[str, Any],
           if_revision: int | None) -> None:
    get_row(conn, ctx, group_id, for_update=True)
    values: dict[str, Any] = {k: data[k] for k in ("name", "description") if k in data}
    bump(conn, AG, group_id, if_revision, values)


def change(conn: Connection, ctx: Context, group_id: str, addresses: Any, add: bool) -> None:
    """Add all of ``addresses`` (none may be there yet) or remove all (each must be)."""
    get_row(conn, ctx, group_id, for_update=True)
    wanted = normalised(addresses, bare_addresses=True)
    present = set(conn.execute(select(AA.c.address).where(
        AA.c.address_group_id == group_id)).scalars())
    if add:
        clash = sorted(wanted & present, key=_order)
        if clash:
            raise ag.AddressesAlreadyExist(addresses=clash, address_group_id=group_id)
        if wanted:
            conn.execute(AA.insert(), [{"address_group_id": group_id, "address": a}
                                       for a in sorted(wanted)])
    else:
        absent = sorted(wanted - present, key=_order)
        if absent:
            raise ag.AddressesNotFound(addresses=absent, address_group_id=group_id)
        if wanted:
            conn.execute(delete(AA).where(AA.c.address_group_id == group_id,
                                          AA.c.address.in_(wanted)))
    bump(conn, AG, group_id)


def naming_security_groups(conn: Connection, group_id: str) -> set[str]:
    """The security groups with a rule whose remote address group is ``group_id``."""
    R = models.security_group_rules
    return set(conn.execute(select(R.c.security_group_id).distinct().where(
        R.c.remote_address_group_id == group_id)).scalars())


def delete_(conn: Connection, ctx: Context, group_id: str, if_revision: int | None) -> None:
    get_row(conn, ctx, group_id, for_update=True)
    R = models.security_group_rules
    if conn.execute(select(R.c.id).where(R.c.remote_address_group_id == group_id)
                    .limit(1)).first() is not None:
        raise ag.AddressGroupInUse(address_group_id=group_id)
    check_revision(conn, AG, group_id, if_revision)
    conn.execute(delete(AA).where(AA.c.address_group_id == group_id))
    shared.forget(conn, TYPE, group_id)
    conn.execute(delete(AG).where(AG.c.id == group_id))
