"""The ``auto_allocate`` service plugin (auto-allocated-topology, Neutron's "get
me a network"): on a project's first request, a network with a subnet from
each default subnet pool (IPv4, IPv6, or both) and a router with its gateway
on the default external network and an interface on each subnet; later
requests answer with the same network. ``?fields=dry-run`` only checks that
the deployment has what a topology needs.

It builds through the core and router plugins as a user of the API would:
each body filled in with the API's defaults for the loaded extensions, each
call its own transaction (quotas counted, the default security group and
DHCP as for any network). So a build that fails midway takes down what it
made, newest first, before it answers. Two requests building for one project
at once both build; the first to record its topology wins, the other takes
its own down and answers with the winner's.

The default external network is the one whose ``is_default`` is set (the
networks table's column, written by the core plugin); this plugin keeps it
to one (``on_network_write``). Requires the ``router`` service plugin.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery
from neutrino.definitions.auto_allocated_topology import (
    ALIAS,
    DRY_RUN_PASSED,
    IS_DEFAULT,
    AutoAllocationFailure,
    DefaultExternalNetworkExists,
)
from neutrino.plugins.base import Environment, Plugin, RouterPlugin

LOG = logging.getLogger(__name__)
N, T = models.networks, models.auto_allocated_topologies
ADMIN = Context.admin()
#: the names of what a topology is made of, as Neutron gives them
NETWORK_NAME = "auto_allocated_network"
ROUTER_NAME = "auto_allocated_router"
#: why a build failed, by the step that failed (other errors are answered as they are)
NO_NETWORK = "Unable to provide project private network"
NO_CONNECTIVITY = "Unable to provide external connectivity"


@dataclass
class Built:
    """What a build has made so far, to take down should a later step fail."""

    network_id: str | None = None
    router_id: str | None = None
    attached: list[str] = field(default_factory=list)  # subnets with a router interface


class AutoAllocatePlugin(Plugin):
    plugin_type = ALIAS
    supported_extension_aliases = (ALIAS,)

    def __init__(self, env: Environment):
        super().__init__(env)
        env.hooks.default_external_network = True
        env.hooks.on_network_write.append(one_default)

    @property
    def routers(self) -> RouterPlugin:
        # the extension requires 'router': without its plugin the server does not start
        assert self.env.routers is not None
        return self.env.routers

    def _body(self, path: str, item: dict[str, Any]) -> dict[str, Any]:
        """``item`` as the API would hand it to the plugin of ``path``."""
        return self.env.resources[path].create_body(item)

    # --- the API ---------------------------------------------------------------------

    def get_auto_allocated_topology(self, ctx: Context, project_id: str) -> dict[str, Any]:
        """The project's topology; built now if it has none."""
        found = self._read(lambda conn: topology_of(conn, project_id))
        if found is not None:
            return view(found.network_id, project_id)
        external = self._read(default_external_network)
        pools = self._default_pools(ctx)
        return view(self._build(ctx, project_id, external, pools), project_id)

    def validate_auto_allocated_topology(self, ctx: Context, project_id: str
                                         ) -> dict[str, Any]:
        """Whether a topology could be built for the project (``dry-run``)."""
        self._read(default_external_network)
        self._default_pools(ctx)
        return view(DRY_RUN_PASSED, project_id)

    def delete_auto_allocated_topology(self, ctx: Context, project_id: str) -> None:
        """Take the project's topology down: nothing to do if it has none."""
        found = self._read(lambda conn: topology_of(conn, project_id))
        if found is None:
            return
        network_id = found.network_id
        query = CollectionQuery(filters={"network_id": [network_id]})
        subnets = self._read(lambda conn: self.env.core.subnets_in(conn, ADMIN, query))
        self._take_down(Built(network_id, found.router_id,
                              [subnet["id"] for subnet in subnets]), quietly=False)
        # the network's delete took the record (ON DELETE CASCADE) where the
        # database enforces it; one made again meanwhile is another topology's
        self.db.write(lambda conn: conn.execute(delete(T).where(
            T.c.project_id == project_id, T.c.network_id == network_id)))

    # --- building ----------------------------------------------------------------------

    def _default_pools(self, ctx: Context) -> list[dict[str, Any]]:
        """The default subnet pools the caller may use, IPv4's first."""
        pools = self.env.core.get_subnetpools(ctx, CollectionQuery(
            filters={"is_default": [True]}))
        if not pools:
            raise AutoAllocationFailure(reason="No default subnetpools defined")
        return sorted(pools, key=lambda pool: pool["ip_version"])

    def _build(self, ctx: Context, project_id: str, external_id: str,
               pools: list[dict[str, Any]]) -> str:
        """Make the topology, step by step; the network it answers with."""
        built = Built()
        failing = NO_NETWORK
        try:
            network = self.env.core.create_network(ctx, self._body("networks", {
                "name": NETWORK_NAME, "project_id": project_id,
                "admin_state_up": False, "shared": False}))
            built.network_id = network["id"]
            subnets = [self.env.core.create_subnet(ctx, self._body("subnets", {
                "name": f"auto_allocated_subnet_v{pool['ip_version']}",
                "project_id": project_id, "network_id": network["id"],
                "ip_version": pool["ip_version"], "subnetpool_id": pool["id"]}))
                for pool in pools]
            failing = NO_CONNECTIVITY
            router = self.routers.create_router(ctx, self._body("routers", {
                "name": ROUTER_NAME, "project_id": project_id, "admin_state_up": True,
                "external_gateway_info": {"network_id": external_id}}))
            built.router_id = router["id"]
            for subnet in subnets:
                self.routers.add_router_interface(ctx, router["id"], {"subnet_id": subnet["id"]})
                built.attached.append(subnet["id"])
            winner = self.db.write(lambda conn: record(conn, project_id, network["id"],
                                                       router["id"]))
            if winner != network["id"]:
                LOG.info("project %s got its topology from a concurrent request; "
                         "taking down network %s and router %s", project_id,
                         network["id"], router["id"])
                self._take_down(built)
                return winner
            # as Neutron: the network comes up once its topology is whole
            self.env.core.update_network(ctx, network["id"], {"admin_state_up": True})
            return network["id"]
        except Exception as error:
            LOG.warning("auto-allocating a topology for project %s failed (%s: %s); "
                        "taking down what was made", project_id, type(error).__name__, error)
            self._take_down(built)
            if failing == NO_NETWORK and isinstance(
                    error, exc.BadRequest | exc.NotFound | exc.SubnetAllocationError):
                raise AutoAllocationFailure(reason=failing) from None
            if failing == NO_CONNECTIVITY and isinstance(error, exc.BadRequest):
                raise AutoAllocationFailure(reason=failing) from None
            raise  # as it is: over quota, say

    def _take_down(self, built: Built, quietly: bool = True) -> None:
        """Remove what ``built`` names, newest first. What is gone already is
        skipped (a concurrent delete); other errors stop a delete (``quietly``
        False: the API's) or are logged (undoing a failed build, whose own error
        is the answer)."""
        steps: list[tuple[Any, tuple[Any, ...]]] = []
        if built.router_id is not None:
            steps += [(self.routers.remove_router_interface,
                       (ADMIN, built.router_id, {"subnet_id": subnet_id}))
                      for subnet_id in reversed(built.attached)]
            steps.append((self.routers.delete_router, (ADMIN, built.router_id)))
        if built.network_id is not None:
            steps.append((self.env.core.delete_network, (ADMIN, built.network_id)))
        for step, args in steps:
            try:
                step(*args)
            except exc.NotFound:
                continue
            except exc.NeutronException as error:
                if not quietly:
                    raise
                LOG.warning("could not undo %s%s: %s", step.__name__, args[1:], error)


# --- the tables ------------------------------------------------------------------------


def view(network_id: str, project_id: str) -> dict[str, Any]:
    return {"id": network_id, "tenant_id": project_id, "project_id": project_id}


def topology_of(conn: Connection, project_id: str) -> Row | None:
    return conn.execute(select(T.c.network_id, T.c.router_id).where(
        T.c.project_id == project_id)).first()


def record(conn: Connection, project_id: str, network_id: str, router_id: str) -> str:
    """The project's topology network: the one given, unless another was
    recorded first (a race lost here retries, and then finds it)."""
    found = topology_of(conn, project_id)
    if found is not None:
        return found.network_id
    conn.execute(T.insert().values(project_id=project_id, network_id=network_id,
                                   router_id=router_id))
    return network_id


def default_external_network(conn: Connection) -> str:
    """The deployment's default external network (the oldest, should there be several)."""
    found = conn.execute(select(N.c.id).where(N.c.is_default, N.c.router_external)
                         .order_by(N.c.created_at, N.c.id).limit(1)).scalar()
    if found is None:
        raise AutoAllocationFailure(reason="No default router:external network")
    return found


def one_default(conn: Connection, network_id: str, data: dict[str, Any],
                created: bool) -> None:
    """Refuse a second default external network: inside the network's create
    or update, once the core plugin has written ``is_default`` (which it sets
    on external networks only)."""
    if not data.get(IS_DEFAULT):
        return
    defaults = list(conn.execute(select(N.c.id).where(N.c.is_default)).scalars())
    others = sorted(other for other in defaults if other != network_id)
    if network_id in defaults and others:
        raise DefaultExternalNetworkExists(net_id=others[0])
