"""Highly available routers in the database (``l3-ha``), as Neutron keeps them.

Each project with an HA router has an HA network (``HA network tenant
<project>``, of no project, so that only admins see it) with one subnet of
``l3_ha_net_cidr``; its HA routers' hosts exchange VRRP adverts there. An HA
router has a virtual router id on that network (1 to 255, the lowest free)
and, for each L3 agent that hosts it, a port there (``network:router_ha_interface``,
bound to the agent's host) with what the agent last said of its role: active,
standby or unknown. The last HA router of a project gone, its HA network goes.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models

HR, HN, HB = models.ha_routers, models.ha_router_networks, models.ha_router_agent_port_bindings
HA_INTERFACE = "network:router_ha_interface"
NETWORK_NAME, SUBNET_NAME, PORT_NAME = ("HA network tenant %s", "HA subnet tenant %s",
                                        "HA port tenant %s")
VR_IDS = range(1, 256)
ACTIVE, STANDBY, UNKNOWN = "active", "standby", "unknown"
ADMIN = Context.admin()


class NoVRIDAvailable(exc.Conflict):
    message = ("No more Virtual Router Identifier (VRID) available when creating router "
               "%(router_id)s. The limit of number of HA Routers per tenant is 254.")


class HANotEnoughAvailableAgents(exc.Conflict):
    message = ("Not enough l3 agents available to ensure HA. Minimum required "
               "%(min_agents)s, available %(num_agents)s.")


class DuplicatedHANetwork(exc.Conflict):
    message = "Project %(project_id)s already has a HA network."


def network_of(conn: Connection, project_id: str) -> str | None:
    return conn.execute(select(HN.c.network_id).where(HN.c.project_id == project_id)).scalar()


def ensure_network(core: Any, settings: Any, project_id: str) -> str:
    """The project's HA network, made with its subnet when it has none (in
    transactions of their own, before the router's, as Neutron does); two
    routers made at once keep one of the two networks."""
    with core.db.reader() as conn:
        found = network_of(conn, project_id)
    if found is not None:
        return found
    data: dict[str, Any] = {"name": NETWORK_NAME % project_id, "project_id": "",
                            "admin_state_up": True, "shared": False}
    if settings.l3_ha_network_type:
        data["provider:network_type"] = settings.l3_ha_network_type
        if settings.l3_ha_network_physical_name:
            data["provider:physical_network"] = settings.l3_ha_network_physical_name
    network = core.create_network(ADMIN, data)
    core.create_subnet(ADMIN, {"name": SUBNET_NAME % project_id, "project_id": "",
                               "network_id": network["id"], "ip_version": 4,
                               "cidr": settings.l3_ha_net_cidr, "enable_dhcp": False,
                               "gateway_ip": None})

    def claim(conn: Connection) -> str:
        current = network_of(conn, project_id)
        if current is None:
            conn.execute(HN.insert().values(project_id=project_id,
                                            network_id=network["id"]))
            return str(network["id"])
        return current

    kept = core.db.write(claim)
    if kept != network["id"]:
        core.delete_network(ADMIN, network["id"])
    return kept


def mark_network(conn: Connection, network_id: str, data: dict[str, Any],
                 created: bool) -> None:
    """A network created with ``ha`` (``network_ha``) is its project's HA
    network, in the network's transaction, as Neutron binds it: a project has
    one (DuplicatedHANetwork). ``ensure_network`` claims the ones it makes."""
    if not created or not data.get("ha"):
        return
    project_id = data.get("project_id") or ""
    if network_of(conn, project_id) is not None:
        raise DuplicatedHANetwork(project_id=project_id)
    conn.execute(HN.insert().values(project_id=project_id, network_id=network_id))


def make_ha(conn: Connection, router_id: str, network_id: str) -> int:
    """The router HA on ``network_id``, with the lowest free virtual router id."""
    taken = set(conn.execute(select(HR.c.vr_id).where(HR.c.network_id == network_id))
                .scalars())
    vr_id = next((n for n in VR_IDS if n not in taken), None)
    if vr_id is None:
        raise NoVRIDAvailable(router_id=router_id)
    conn.execute(HR.insert().values(router_id=router_id, network_id=network_id, vr_id=vr_id))
    return vr_id


def is_ha(conn: Connection, router_ids: list[str]) -> dict[str, tuple[str, int]]:
    """router id -> (its HA network, its vr_id), for the HA ones."""
    if not router_ids:
        return {}
    return {row.router_id: (row.network_id, row.vr_id) for row in conn.execute(
        select(HR).where(HR.c.router_id.in_(router_ids)))}


def ports_of(conn: Connection, router_id: str) -> dict[str | None, str]:
    """agent id -> the router's HA port for it."""
    return {agent_id: port_id for port_id, agent_id in conn.execute(
        select(HB.c.port_id, HB.c.l3_agent_id).where(HB.c.router_id == router_id))}


def add_port(conn: Connection, changes: Any, router_id: str, network_id: str,
             project_id: str, agent_id: str, host: str) -> None:
    """The router's HA port for the L3 agent on ``host``, bound there."""
    port = changes.create(conn, {
        "network_id": network_id, "device_owner": HA_INTERFACE, "device_id": router_id,
        "name": PORT_NAME % project_id, "binding:host_id": host})
    conn.execute(HB.insert().values(port_id=port["id"], router_id=router_id,
                                    l3_agent_id=agent_id, state=STANDBY))


def remove_ports(conn: Connection, changes: Any, router_id: str,
                 agent_ids: list[str] | None = None) -> None:
    """The router's HA ports (those of ``agent_ids``, when given) deleted."""
    for agent_id, port_id in ports_of(conn, router_id).items():
        if agent_ids is None or agent_id in agent_ids:
            changes.delete(conn, port_id)


def release(conn: Connection, changes: Any, router_id: str) -> str | None:
    """The router legacy again (or gone): its ports and vr_id freed; the
    project whose HA network is left without a router, if so."""
    found = conn.execute(select(HR.c.network_id).where(HR.c.router_id == router_id)).scalar()
    if found is None:  # a legacy router: one read, nothing to free
        return None
    remove_ports(conn, changes, router_id)
    conn.execute(delete(HR).where(HR.c.router_id == router_id))
    left = conn.execute(select(func.count()).select_from(HR).where(
        HR.c.network_id == found)).scalar()
    if left:
        return None
    return conn.execute(select(HN.c.project_id).where(HN.c.network_id == found)).scalar()


def drop_network(core: Any, project_id: str) -> None:
    """The project's HA network deleted, if it still has no HA router."""
    def forget(conn: Connection) -> str | None:
        network_id = network_of(conn, project_id)
        if network_id is None or conn.execute(select(HR.c.router_id).where(
                HR.c.network_id == network_id).limit(1)).first() is not None:
            return None
        conn.execute(delete(HN).where(HN.c.project_id == project_id))
        return network_id

    network_id = core.db.write(forget)
    if network_id is not None:
        core.delete_network(ADMIN, network_id)


def states(conn: Connection, router_ids: list[str]) -> dict[str, dict[str, str]]:
    """router id -> {agent id: its role}."""
    found: dict[str, dict[str, str]] = {}
    if router_ids:
        for router_id, agent_id, state in conn.execute(
                select(HB.c.router_id, HB.c.l3_agent_id, HB.c.state)
                .where(HB.c.router_id.in_(router_ids))):
            found.setdefault(router_id, {})[agent_id] = state
    return found


def set_states(conn: Connection, agent_id: str, roles: dict[str, str]) -> None:
    """What the agent says of its role in each router."""
    for router_id, state in roles.items():
        if state in (ACTIVE, STANDBY, UNKNOWN):
            conn.execute(update(HB).where(HB.c.router_id == router_id,
                                          HB.c.l3_agent_id == agent_id).values(state=state))
