"""Subnet pools: prefix sets that subnets are carved from."""

from __future__ import annotations

import ipaddress
from types import SimpleNamespace
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db import rbac as shared
from neutrino.db.query import CollectionQuery, api_columns, select_page
from neutrino.db.util import bump, check_revision, now, timestamp
from neutrino.definitions import address_scope as a
from neutrino.definitions import validators as v
from neutrino.definitions.validators import new_uuid
from neutrino.plugins.core import address_scopes

SP = models.subnetpools
SPP = models.subnetpool_prefixes
S = models.subnets

COLUMNS = api_columns(SP, "ip_version", "default_prefixlen", "min_prefixlen",
                      "max_prefixlen", "default_quota", "shared", "is_default",
                      "address_scope_id")


class IllegalSubnetPoolPrefixBounds(exc.BadRequest):
    message = ("Illegal prefix bounds: %(prefix_type)s=%(prefixlen)s, "
               "%(base_prefix_type)s=%(base_prefixlen)s.")


class IllegalSubnetPoolPrefixUpdate(exc.BadRequest):
    message = "Illegal update to prefixes: %(msg)s."


class EmptySubnetPoolPrefixList(exc.BadRequest):
    message = "Empty subnet pool prefix list."


class PrefixVersionMismatch(exc.BadRequest):
    message = "Cannot mix IPv4 and IPv6 prefixes in a subnet pool."


class SubnetPoolDeleteError(exc.BadRequest):
    message = "Unable to delete subnet pool: %(reason)s."


class MaxPrefixSubnetAllocationError(exc.BadRequest):
    message = ("Unable to allocate subnet with prefix length %(prefixlen)s, maximum allowed "
               "prefix is %(max_prefixlen)s.")


class MinPrefixSubnetAllocationError(exc.BadRequest):
    message = ("Unable to allocate subnet with prefix length %(prefixlen)s, minimum allowed "
               "prefix is %(min_prefixlen)s.")


class SubnetPoolQuotaExceeded(exc.Conflict):
    message = "Per-project subnet pool prefix quota exceeded."


class NetworkSubnetPoolAffinityError(exc.BadRequest):
    message = "Subnets hosted on the same network must be allocated from the same subnet pool."


TYPE = "subnetpool"


def visible(ctx: Context) -> list:
    return shared.visible(SP, TYPE, ctx)


def get_row(conn: Connection, ctx: Context, pool_id: str) -> Row:
    row = conn.execute(select(SP).where(SP.c.id == pool_id, *visible(ctx))).first()
    if row is None:
        raise exc.SubnetPoolNotFound(subnetpool_id=pool_id)
    return row


def _prefixes(conn: Connection, ids: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    if not ids:
        return found
    for pool_id, cidr in conn.execute(select(SPP.c.subnetpool_id, SPP.c.cidr)
                                      .where(SPP.c.subnetpool_id.in_(ids))):
        found.setdefault(pool_id, []).append(cidr)
    for cidrs in found.values():
        cidrs.sort(key=lambda c: ipaddress.ip_network(c))
    return found


def view(row: Any, prefixes: list[str], tag_list: list[str], text_lengths: bool = True,
         shared_with_caller: bool = False) -> dict[str, Any]:
    """Neutron shows the three prefix lengths as strings, except in the answer
    to an update (``text_lengths=False``), which it builds another way.
    ``shared_with_caller``: an RBAC entry shares it with the caller's project."""
    shown = str if text_lengths else int
    return {
        "id": row.id, "name": row.name, "tenant_id": row.project_id,
        "project_id": row.project_id, "prefixes": prefixes, "ip_version": row.ip_version,
        "default_prefixlen": shown(row.default_prefixlen),
        "min_prefixlen": shown(row.min_prefixlen),
        "max_prefixlen": shown(row.max_prefixlen), "default_quota": row.default_quota,
        "shared": row.shared or shared_with_caller, "is_default": row.is_default,
        "address_scope_id": row.address_scope_id, "description": row.description,
        "tags": tag_list, "created_at": timestamp(row.created_at),
        "updated_at": timestamp(row.updated_at), "revision_number": row.revision_number,
    }


def get(conn: Connection, ctx: Context, pool_id: str, text_lengths: bool = True
        ) -> dict[str, Any]:
    row = get_row(conn, ctx, pool_id)
    return view(row, _prefixes(conn, [row.id]).get(row.id, []), tags.of(conn, row.id),
                text_lengths, bool(shared.shared_with(conn, TYPE, [row.id], ctx.project_id)))


def list_(conn: Connection, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
    columns = {**COLUMNS, "shared": SP.c.id.in_(shared.granted(TYPE, ctx.project_id))}
    rows = select_page(conn, SP, columns, query, visible(ctx))
    ids = [r.id for r in rows]
    prefixes = _prefixes(conn, ids)
    tag_map = tags.load(conn, ids)
    mine = shared.shared_with(conn, TYPE, ids, ctx.project_id)
    return [view(r, prefixes.get(r.id, []), tag_map.get(r.id, []), shared_with_caller=r.id in mine)
            for r in rows]


def _collapse(prefixes: list[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    nets = [ipaddress.ip_network(p, strict=False) for p in prefixes]
    if not nets:
        raise EmptySubnetPoolPrefixList()
    if len({n.version for n in nets}) > 1:
        raise PrefixVersionMismatch()
    return sorted(ipaddress.collapse_addresses(nets))  # type: ignore[type-var]


def _bounds(version: int, min_len: int | None, max_len: int | None,
            default_len: int | None) -> tuple[int, int, int]:
    bits = 32 if version == 4 else 128
    min_len = (8 if version == 4 else 64) if min_len is None else min_len
    max_len = bits if max_len is None else max_len
    default_len = min_len if default_len is None else default_len
    if min_len > max_len:
        raise IllegalSubnetPoolPrefixBounds(prefix_type="min_prefixlen", prefixlen=min_len,
                                            base_prefix_type="max_prefixlen",
                                            base_prefixlen=max_len)
    if max_len > bits:
        raise IllegalSubnetPoolPrefixBounds(prefix_type="max_prefixlen", prefixlen=max_len,
                                            base_prefix_type="ip_version_max",
                                            base_prefixlen=bits)
    for name, limit, broken in (("min_prefixlen", min_len, default_len < min_len),
                                ("max_prefixlen", max_len, default_len > max_len)):
        if broken:
            raise IllegalSubnetPoolPrefixBounds(prefix_type="default_prefixlen",
                                                prefixlen=default_len,
                                                base_prefix_type=name, base_prefixlen=limit)
    return min_len, max_len, default_len


def _check_default(conn: Connection, version: int, pool_id: str | None) -> None:
    other = conn.execute(select(SP.c.id).where(SP.c.is_default, SP.c.ip_version == version,
                                               SP.c.id != (pool_id or ""))).first()
    if other is not None:
        raise exc.InvalidInput(error_message=(
            "A default subnetpool for this IP family has already been set. Only one "
            "default may exist per IP family"))


def create(conn: Connection, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
    nets = _collapse(data["prefixes"])
    version = nets[0].version
    min_len, max_len, default_len = _bounds(version, data.get("min_prefixlen"),
                                            data.get("max_prefixlen"),
                                            data.get("default_prefixlen"))
    if data.get("is_default"):
        _check_default(conn, version, None)
    when = now()
    row = {
        "id": new_uuid(), "project_id": data["project_id"], "name": data.get("name", ""),
        "description": data.get("description", ""), "ip_version": version,
        "default_prefixlen": default_len, "min_prefixlen": min_len, "max_prefixlen": max_len,
        "default_quota": data.get("default_quota"), "shared": False,
        "is_default": data.get("is_default", False),
        "address_scope_id": data.get("address_scope_id"),
        "created_at": when, "updated_at": when, "revision_number": 0,
    }
    address_scopes.check_pool_association(conn, ctx, row["id"], row["address_scope_id"],
                                          version, [str(n) for n in nets], rescoped=False)
    conn.execute(SP.insert().values(**row))
    conn.execute(SPP.insert(), [{"subnetpool_id": row["id"], "cidr": str(n)} for n in nets])
    if data.get("shared"):
        shared.set_shared(conn, TYPE, SimpleNamespace(**row), True)
        row["shared"], row["revision_number"] = True, 1
    return view(SimpleNamespace(**row), [str(n) for n in nets], [])


def update(conn: Connection, ctx: Context, pool_id: str, data: dict[str, Any],
           if_revision: int | None) -> bool:
    """Change the pool; whether it moved to another address scope."""
    row = get_row(conn, ctx, pool_id)
    address_scopes.check_pool_update_allowed(conn, ctx, row)
    current = [ipaddress.ip_network(c) for c in _prefixes(conn, [pool_id]).get(pool_id, [])]
    nets = current
    if "prefixes" in data:
        nets = _collapse(data["prefixes"])
        if nets[0].version != row.ip_version:
            raise PrefixVersionMismatch()
        for old in current:
            if not any(_subnet_of(old, new) for new in nets):
                raise IllegalSubnetPoolPrefixUpdate(
                    msg="Existing prefixes must be a subset of the new prefixes")
    min_len, max_len, default_len = _bounds(
        row.ip_version, data.get("min_prefixlen", row.min_prefixlen),
        data.get("max_prefixlen", row.max_prefixlen),
        data.get("default_prefixlen", row.default_prefixlen))
    if data.get("is_default"):
        _check_default(conn, row.ip_version, pool_id)
    scope_id = data.get("address_scope_id", row.address_scope_id)
    address_scopes.check_pool_association(conn, ctx, pool_id, scope_id, row.ip_version,
                                          [str(n) for n in nets],
                                          rescoped=scope_id != row.address_scope_id)
    if "prefixes" in data:
        conn.execute(delete(SPP).where(SPP.c.subnetpool_id == pool_id))
        conn.execute(SPP.insert(), [{"subnetpool_id": pool_id, "cidr": str(n)} for n in nets])
    values: dict[str, Any] = {k: data[k] for k in (
        "name", "description", "default_quota", "is_default", "address_scope_id") if k in data}
    values.update(min_prefixlen=min_len, max_prefixlen=max_len, default_prefixlen=default_len)
    bump(conn, SP, pool_id, if_revision, values)
    return scope_id != row.address_scope_id


def networks_of(conn: Connection, pool_id: str) -> list[str]:
    """The networks with subnets from the pool."""
    return list(conn.execute(select(S.c.network_id).distinct().where(
        S.c.subnetpool_id == pool_id).order_by(S.c.network_id)).scalars())


def operation_prefixes(body: dict[str, Any]) -> list[str]:
    """The prefixes of an add_prefixes or remove_prefixes body."""
    prefixes = body.get("prefixes")
    if not isinstance(prefixes, list):
        raise exc.InvalidInput(error_message="the body must be {'prefixes': [<CIDR>, ...]}")
    error = v.subnet_cidr_list(prefixes)
    if error:
        raise exc.InvalidInput(error_message=f"Invalid prefixes: {error}")
    return prefixes


def add_prefixes(conn: Connection, ctx: Context, pool_id: str, prefixes: list[str]
                 ) -> list[str]:
    """The pool's prefixes with ``prefixes`` joined in (collapsed)."""
    current = _prefixes(conn, [get_row(conn, ctx, pool_id).id]).get(pool_id, [])
    if prefixes:
        update(conn, ctx, pool_id, {"prefixes": current + prefixes}, None)
    return _prefixes(conn, [pool_id]).get(pool_id, [])


def remove_prefixes(conn: Connection, ctx: Context, pool_id: str, prefixes: list[str]
                    ) -> list[str]:
    """The pool's prefixes less ``prefixes``, none of whose addresses a subnet
    of the pool may use (400); the last one cannot go."""
    row = get_row(conn, ctx, pool_id)
    current = [ipaddress.ip_network(c) for c in _prefixes(conn, [pool_id]).get(pool_id, [])]
    leaving = [ipaddress.ip_network(p, strict=False) for p in prefixes]
    if not any(a.version == b.version and a.overlaps(b)
               for a in current for b in leaving):
        return [str(n) for n in current]
    used = [ipaddress.ip_network(c) for c in conn.execute(
        select(S.c.cidr).where(S.c.subnetpool_id == pool_id)).scalars()]
    if any(a.version == b.version and a.overlaps(b)
           for a in used for b in leaving):
        raise IllegalSubnetPoolPrefixUpdate(
            msg="One or more the prefixes to be removed is in use by a subnet")
    kept: list[Any] = list(current)
    for gone in leaving:
        kept = [piece for net in kept for piece in _without(net, gone)]
    if not kept:
        raise EmptySubnetPoolPrefixList()
    nets = sorted(ipaddress.collapse_addresses(kept))
    conn.execute(delete(SPP).where(SPP.c.subnetpool_id == pool_id))
    conn.execute(SPP.insert(), [{"subnetpool_id": pool_id, "cidr": str(n)} for n in nets])
    bump(conn, SP, row.id, None, {})
    return [str(n) for n in nets]


class IllegalSubnetPoolUpdate(exc.BadRequest):
    message = "Illegal subnetpool update : %(reason)s."


def onboard(conn: Connection, ctx: Context, pool_id: str, body: dict[str, Any]
            ) -> list[dict[str, str]]:
    """The network's subnets of the pool's IP version join it, their CIDRs
    added to its prefixes (subnet_onboard); none may overlap a subnet the
    pool has already. Only the network's owner (or an admin) moves them."""
    network_id = body.get("network_id")
    if not isinstance(network_id, str) or not network_id:
        raise exc.InvalidInput(error_message="network_id must be specified.")
    owner = conn.execute(select(models.networks.c.project_id).where(
        models.networks.c.id == network_id)).first()
    if owner is None:
        raise exc.NetworkNotFound(net_id=network_id)
    if not ctx.is_admin and owner.project_id != ctx.project_id:
        raise exc.NotAuthorized()
    row = get_row(conn, ctx, pool_id)
    joining = conn.execute(select(S.c.id, S.c.cidr).where(
        S.c.network_id == network_id, S.c.ip_version == row.ip_version)
        .order_by(S.c.created_at, S.c.id)).all()
    allocated = [ipaddress.ip_network(c) for c in conn.execute(
        select(S.c.cidr).where(S.c.subnetpool_id == pool_id)).scalars()]
    for subnet_id, cidr in joining:
        if any(ipaddress.ip_network(cidr).overlaps(taken) for taken in allocated):
            raise IllegalSubnetPoolUpdate(reason=(
                f"Onboarding subnet {subnet_id}: {cidr} conflicts with allocated prefixes "
                f"in subnet pool {pool_id}"))
    if joining:
        current = _prefixes(conn, [pool_id]).get(pool_id, [])
        update(conn, ctx, pool_id, {"prefixes": current + [c for _, c in joining]}, None)
        conn.execute(S.update().where(S.c.id.in_([i for i, _ in joining])).values(
            subnetpool_id=pool_id))
    return [{"id": subnet_id, "cidr": cidr} for subnet_id, cidr in joining]


def _without(net: Any, gone: Any) -> list[Any]:
    """``net`` less the addresses of ``gone``."""
    if net.version != gone.version or not net.overlaps(gone):
        return [net]
    if net.subnet_of(gone):
        return []
    return list(net.address_exclude(gone))


def delete_(conn: Connection, ctx: Context, pool_id: str, if_revision: int | None) -> None:
    row = get_row(conn, ctx, pool_id)
    check_revision(conn, SP, row.id, if_revision)
    if conn.execute(select(S.c.id).where(S.c.subnetpool_id == pool_id).limit(1)).first():
        raise SubnetPoolDeleteError(reason="Subnet pool has existing allocations")
    shared.forget(conn, TYPE, pool_id)
    conn.execute(delete(models.tags).where(models.tags.c.resource_id == pool_id))
    conn.execute(delete(SP).where(SP.c.id == pool_id))


# --- subnets from pools ----------------------------------------------------------------


def cidr_for_subnet(conn: Connection, ctx: Context, data: dict[str, Any], version: int,
                    network_id: str) -> tuple[str, str | None]:
    """The subnet's cidr and pool: as given, or carved from the named or default pool."""
    pool_id = data.get("subnetpool_id")
    cidr = data.get("cidr")
    if cidr is not None and data.get("prefixlen") is not None:
        raise exc.BadRequest(resource="subnets",
                             msg="cidr and prefixlen must not be supplied together")
    if pool_id is not None and data.get("use_default_subnetpool"):
        raise exc.BadRequest(resource="subnets", msg="subnetpool_id and "
                             "use_default_subnetpool cannot both be specified")
    if cidr is None and data.get("allocation_pools") is not None:
        raise exc.BadRequest(resource="subnets", msg="allocation_pools allowed only for "
                             "specific subnet requests.")
    if pool_id is None and data.get("use_default_subnetpool"):
        pool_id = conn.execute(select(SP.c.id).where(
            SP.c.is_default, SP.c.ip_version == version)).scalar()
        if pool_id is None:
            raise exc.BadRequest(resource="subnets",
                                 msg=f"No default subnetpool found for IPv{version}")
    if pool_id is None:
        if cidr is None:
            raise exc.BadRequest(resource="subnets", msg="a subnetpool must be specified "
                                 "in the absence of a cidr")
        _check_affinity(conn, network_id, version, None)
        return str(ipaddress.ip_network(cidr, strict=False)), None
    pool = get_row(conn, ctx, pool_id)
    chosen = _carve(conn, data, version, pool)
    _check_affinity(conn, network_id, version, pool)
    return chosen, pool_id


def _carve(conn: Connection, data: dict[str, Any], version: int, pool: Row) -> str:
    """The requested cidr, checked against the pool, or the first free block that fits."""
    cidr = data.get("cidr")
    pool_id = pool.id
    if pool.ip_version != version:
        raise exc.BadRequest(resource="subnets", msg=(
            f"Cannot allocate IPv{version} subnet from IPv{pool.ip_version} subnet pool"))
    if conn.dialect.name != "sqlite":  # serialise carving from one pool
        conn.execute(select(SP.c.id).where(SP.c.id == pool_id).with_for_update())
    prefixes = [ipaddress.ip_network(c) for c in _prefixes(conn, [pool_id]).get(pool_id, [])]
    used = [ipaddress.ip_network(c) for c in conn.execute(
        select(S.c.cidr).where(S.c.subnetpool_id == pool_id)).scalars()]
    prefixlen = data.get("prefixlen")
    prefixlen = pool.default_prefixlen if prefixlen is None else prefixlen
    if cidr is None and data.get("gateway_ip") is not None:
        # A gateway without a cidr asks for the block around the gateway.
        _check_prefixlen(pool, prefixlen)
        cidr = f"{data['gateway_ip']}/{prefixlen}"
    if cidr is not None:
        wanted = ipaddress.ip_network(cidr, strict=False)
        _check_prefixlen(pool, wanted.prefixlen)
        if not any(_subnet_of(wanted, p) for p in prefixes) or any(
                wanted.overlaps(u) for u in used):
            raise exc.SubnetAllocationError(reason="Cannot allocate requested subnet from "
                                                   "the available set of prefixes")
        _check_pool_quota(conn, pool, data["project_id"], wanted)
        return str(wanted)
    _check_prefixlen(pool, prefixlen)
    free = list(prefixes)
    for taken in used:
        free = [piece for block in free for piece in _exclude(block, taken)]
    # The most specific free block that fits first, so big blocks stay whole.
    for block in sorted(free, key=lambda b: (-b.prefixlen, b.network_address)):
        if block.prefixlen <= prefixlen:
            chosen = next(block.subnets(new_prefix=prefixlen))
            _check_pool_quota(conn, pool, data["project_id"], chosen)
            return str(chosen)
    raise exc.SubnetAllocationError(reason=f"Insufficient prefix space to allocate subnet "
                                           f"size /{prefixlen}")


def _check_prefixlen(pool: Row, prefixlen: int) -> None:
    if prefixlen < pool.min_prefixlen:
        raise MinPrefixSubnetAllocationError(prefixlen=prefixlen,
                                             min_prefixlen=pool.min_prefixlen)
    if prefixlen > pool.max_prefixlen:
        raise MaxPrefixSubnetAllocationError(prefixlen=prefixlen,
                                             max_prefixlen=pool.max_prefixlen)


def _subnet_of(net: ipaddress.IPv4Network | ipaddress.IPv6Network,
               other: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    """``net.subnet_of(other)``, which typing allows once both are known to be of
    one IP version (a TypeError otherwise, as ipaddress gives)."""
    if isinstance(net, ipaddress.IPv4Network) and isinstance(other, ipaddress.IPv4Network):
        return net.subnet_of(other)
    if isinstance(net, ipaddress.IPv6Network) and isinstance(other, ipaddress.IPv6Network):
        return net.subnet_of(other)
    raise TypeError(f"{net} and {other} are not of the same IP version")


def _units(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> int:
    """Quota units: addresses for IPv4, /64s for IPv6."""
    return net.num_addresses if net.version == 4 else 2 ** max(0, 64 - net.prefixlen)


def _check_pool_quota(conn: Connection, pool: Row, project_id: str, new) -> None:
    if pool.default_quota is None:
        return
    held = [ipaddress.ip_network(c) for c in conn.execute(select(S.c.cidr).where(
        S.c.subnetpool_id == pool.id, S.c.project_id == project_id)).scalars()]
    if sum(_units(n) for n in held) + _units(new) > pool.default_quota:
        raise SubnetPoolQuotaExceeded()


def _check_affinity(conn: Connection, network_id: str, version: int,
                    pool: Row | None) -> None:
    """Subnets of one IP version on a network are in one address scope, or
    (without one) come from one pool (or none)."""
    found = conn.execute(select(S.c.subnetpool_id, SP.c.address_scope_id).select_from(S)
                         .outerjoin(SP, SP.c.id == S.c.subnetpool_id).where(
        S.c.network_id == network_id, S.c.ip_version == version)).all()
    if not found:
        return
    scope = next((scope for _, scope in found if scope is not None), None)
    if scope is not None:
        if pool is None or pool.address_scope_id != scope:
            raise a.NetworkAddressScopeAffinityError()
    elif {pool_id for pool_id, _ in found} != {None if pool is None else pool.id}:
        raise NetworkSubnetPoolAffinityError()


def _exclude(block, taken):
    if not block.overlaps(taken):
        return [block]
    if block.subnet_of(taken):
        return []
    return list(block.address_exclude(taken))
