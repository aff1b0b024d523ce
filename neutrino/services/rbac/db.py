"""Network RBAC entries in the database, and the network flags they stand for.

An entry lets ``target_project`` ("*": every project) use a network it does not
own, as shared (ports) or as external (router gateways, floating IPs). Taking
access away is refused while the project still has something on the network
that needs it and no other entry keeps it (for external access, as Neutron:
router gateways only). ``networks.shared`` and ``networks.router_external`` are
kept in step here, in the same transaction: the first external entry makes a
network external, removing the last one makes it internal again. Each change
of an entry is a change of its network (revision_number), as in Neutron.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.util import bump
from neutrino.definitions import external_net
from neutrino.definitions import rbac as r
from neutrino.definitions.l3 import FLOATINGIP, ROUTER_GATEWAY
from neutrino.definitions.validators import new_uuid

R = models.networkrbacs
N = models.networks
P = models.ports


def _network(conn: Connection, network_id: str) -> Row:
    """Read as admin: the caller's right to it is checked apart."""
    stmt = select(N).where(N.c.id == network_id)
    if conn.dialect.name != "sqlite":
        stmt = stmt.with_for_update()  # entries of one network change one at a time
    row = conn.execute(stmt).first()
    if row is None:
        raise exc.NetworkNotFound(net_id=network_id)
    return row


def _exists(conn: Connection, network_id: str, target: str, action: str) -> bool:
    return conn.execute(select(R.c.id).where(
        R.c.object_id == network_id, R.c.target_project == target, R.c.action == action)
    ).first() is not None


def _insert(conn: Connection, network: Any, project_id: str, target: str, action: str
            ) -> dict[str, Any]:
    """Add an entry and what it implies. A duplicate found here is a 409; one
    committed meanwhile fails the unique key, and the write retries into the 409."""
    if _exists(conn, network.id, target, action):
        raise r.DuplicateRbacPolicy()
    row = {"id": new_uuid(), "project_id": project_id, "object_id": network.id,
           "target_project": target, "action": action}
    conn.execute(R.insert().values(**row))
    _mirror_shared(conn, network.id)
    return r.view(SimpleNamespace(object_type="network", **row))


def _mirror_shared(conn: Connection, network_id: str) -> None:
    conn.execute(update(N).where(N.c.id == network_id).values(
        shared=_exists(conn, network_id, r.WILDCARD, r.ACCESS_SHARED)))


def _port_users(conn: Connection, network_id: str, project: str | None) -> set[str]:
    """Projects (all, or just ``project``) with ports of their own on the network."""
    stmt = select(P.c.project_id).distinct().where(
        P.c.network_id == network_id, P.c.device_owner.not_like("network:%"))
    if project is not None:
        stmt = stmt.where(P.c.project_id == project)
    return {p for p in conn.execute(stmt).scalars() if p is not None}


def losing_user(conn: Connection, network: Any, target: str,
                new_target: str | None = None) -> str | None:
    """A project with ports on the network that would lose access to it if the
    shared entry for ``target`` went (or moved to ``new_target``); None if none would."""
    if target in (network.project_id, new_target):
        return None
    kept = set(conn.execute(select(R.c.target_project).where(
        R.c.object_id == network.id, R.c.action == r.ACCESS_SHARED,
        R.c.target_project != target)).scalars())
    kept |= {network.project_id} | ({new_target} if new_target else set())
    if r.WILDCARD in kept:
        return None
    users = _port_users(conn, network.id, None if target == r.WILDCARD else target)
    losing = sorted(users - kept)
    return losing[0] if losing else None


def _gateway_owners(conn: Connection, network_id: str) -> set[str]:
    """Projects of the routers with their gateway on the network."""
    routers = models.routers
    return set(conn.execute(select(routers.c.project_id).distinct().join(
        P, P.c.id == routers.c.gw_port_id).where(P.c.network_id == network_id)).scalars())


def _external_in_use(conn: Connection, network: Any, target: str,
                     new_target: str | None) -> bool:
    """As Neutron: an external entry is needed while routers of its project (of
    a project without an entry of its own, for '*') have their gateway on the
    network; a '*' entry covers every project. Floating IPs do not count."""
    others = set(conn.execute(select(R.c.target_project).where(
        R.c.object_id == network.id, R.c.action == r.ACCESS_EXTERNAL,
        R.c.target_project != target)).scalars())
    if target != r.WILDCARD:
        return r.WILDCARD not in others and target in _gateway_owners(conn, network.id)
    covered = others | ({new_target} if new_target else set())
    return bool(_gateway_owners(conn, network.id) - covered)


def _check_removal(conn: Connection, network: Any, entry: Any,
                   new_target: str | None = None) -> None:
    if entry.action == r.ACCESS_EXTERNAL and entry.target_project == r.WILDCARD \
            and network.is_default:
        # auto-allocated topologies of every project have their gateway there
        raise r.RbacPolicyInUse(object_id=network.id, details=(
            "Default external networks must be shared to everyone."))
    if entry.action == r.ACCESS_EXTERNAL:
        if _external_in_use(conn, network, entry.target_project, new_target):
            raise r.RbacPolicyInUse(object_id=network.id, details=(
                "There are routers attached to this network that depend on this policy "
                "for access."))
    elif losing_user(conn, network, entry.target_project, new_target):
        raise r.RbacPolicyInUse(object_id=network.id,
                                details=f"tenant_id={entry.target_project}")


# --- the API ---------------------------------------------------------------------


def create(conn: Connection, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
    network = _network(conn, data["object_id"])
    if not ctx.is_admin and network.project_id != ctx.project_id:
        raise exc.InvalidInput(
            error_message="Only admins can manipulate policies on networks they do not own")
    if data["action"] == r.ACCESS_EXTERNAL and not network.router_external:
        bump(conn, N, network.id, values={"router_external": True})  # as Neutron
    created = _insert(conn, network, data["project_id"], data["target_tenant"],
                      data["action"])
    bump(conn, N, network.id)  # the entry is part of the network
    return created


def update_target(conn: Connection, entry: Row, target: str) -> None:
    if target != entry.target_project:
        network = _network(conn, entry.object_id)
        _check_removal(conn, network, entry, target)
        if _exists(conn, network.id, target, entry.action):
            raise r.DuplicateRbacPolicy()
        conn.execute(update(R).where(R.c.id == entry.id).values(target_project=target))
        _mirror_shared(conn, network.id)
        bump(conn, N, network.id)


def delete_(conn: Connection, entry: Row) -> None:
    network = _network(conn, entry.object_id)
    _check_removal(conn, network, entry)
    conn.execute(delete(R).where(R.c.id == entry.id))
    _mirror_shared(conn, network.id)
    bump(conn, N, network.id)
    if entry.action == r.ACCESS_EXTERNAL and not _exists_any(conn, network.id,
                                                             r.ACCESS_EXTERNAL):
        # as Neutron: the last external entry gone, the network is internal, unless
        # a router (its owner's, say) still has its gateway there
        if not _gateway_owners(conn, network.id):
            bump(conn, N, network.id, values={"router_external": False, "is_default": False})


def _exists_any(conn: Connection, network_id: str, action: str) -> bool:
    return conn.execute(select(R.c.id).where(
        R.c.object_id == network_id, R.c.action == action).limit(1)).first() is not None


# --- the network's ``shared`` and ``router:external`` ------------------------------


def network_flags(conn: Connection, network_id: str, data: dict[str, Any],
                  created: bool = False) -> None:
    """Turn ``shared`` / ``router:external`` of a network create or update into
    '*' entries, owned by the network's project.

    shared=false is refused (InvalidSharedSetting) while a project with ports
    would lose access; router:external=false while gateways use the network.
    """
    if created and not data.get("shared") and not data.get("router:external"):
        return  # a new network has no entries yet, and wants none
    network = _network(conn, network_id)
    if "shared" in data:
        wildcard = _exists(conn, network_id, r.WILDCARD, r.ACCESS_SHARED)
        if data["shared"] and not wildcard:
            _insert(conn, network, network.project_id, r.WILDCARD, r.ACCESS_SHARED)
        elif not data["shared"] and wildcard:
            if losing_user(conn, network, r.WILDCARD):
                raise exc.InvalidSharedSetting(network=network_id)
            conn.execute(delete(R).where(R.c.object_id == network_id,
                                         R.c.target_project == r.WILDCARD,
                                         R.c.action == r.ACCESS_SHARED))
            _mirror_shared(conn, network_id)
    external = False if created else network.router_external
    wanted = data.get("router:external", external)
    if wanted and not external:
        if not _exists(conn, network_id, r.WILDCARD, r.ACCESS_EXTERNAL):
            _insert(conn, network, network.project_id, r.WILDCARD, r.ACCESS_EXTERNAL)
        conn.execute(update(N).where(N.c.id == network_id).values(router_external=True))
    elif external and not wanted:
        if conn.execute(select(P.c.id).where(
                P.c.network_id == network_id,
                P.c.device_owner.in_((ROUTER_GATEWAY, FLOATINGIP)))
                        .limit(1)).first() is not None:
            raise external_net.ExternalNetworkInUse(net_id=network_id)
        conn.execute(delete(R).where(R.c.object_id == network_id,
                                     R.c.action == r.ACCESS_EXTERNAL))
        conn.execute(update(N).where(N.c.id == network_id).values(router_external=False,
                                                                   is_default=False))
