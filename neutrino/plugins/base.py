"""The plugin contract.

A plugin is constructed with an ``Environment`` (configuration, database,
hooks, quotas; no globals) and declares what it serves: extension aliases,
resources and taggable tables; it registers its quota resources. The API calls its
methods by name: ``<action>_<resource>`` with a Context first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, cast

from sqlalchemy.engine import Connection, Row

from neutrino.config import Config, OptGroup
from neutrino.context import Context
from neutrino.db.engine import Database
from neutrino.db.query import CollectionQuery
from neutrino.db.quota import QuotaEngine
from neutrino.definitions.base import Resource
from neutrino.plugins.hooks import Hooks, IdRange
from neutrino.plugins.providers import ServiceProviders
from neutrino.rpc.bus import Bus

T = TypeVar("T")


class CorePlugin(Protocol):
    """What a service plugin may call on the core plugin: the API's reads and
    writes, and the table reads and port changes it makes inside its own
    transaction (``*_in``: on the caller's connection, so a failed call leaves
    nothing behind). The port changes' ``*_in`` return what the matching
    ``port_*`` call takes once the transaction has committed."""

    def get_network(self, ctx: Context, network_id: str) -> dict[str, Any]: ...
    def get_networks(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]: ...
    def create_network(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]: ...
    def update_network(self, ctx: Context, network_id: str, data: dict[str, Any],
                       if_revision: int | None = None) -> dict[str, Any]: ...
    def delete_network(self, ctx: Context, network_id: str,
                       if_revision: int | None = None) -> None: ...
    def create_subnet(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]: ...
    def get_subnetpools(self, ctx: Context, query: CollectionQuery
                        ) -> list[dict[str, Any]]: ...
    def update_port(self, ctx: Context, port_id: str, data: dict[str, Any],
                    if_revision: int | None = None) -> dict[str, Any]: ...

    # reads inside the caller's transaction (NotFound for what ``ctx`` may not see)
    def network_row_in(self, conn: Connection, ctx: Context, network_id: str) -> Row: ...
    def port_row_in(self, conn: Connection, ctx: Context, port_id: str) -> Row: ...
    def port_in(self, conn: Connection, ctx: Context, port_id: str) -> dict[str, Any]: ...
    def ports_by_id(self, conn: Connection, port_ids: list[str]) -> list[dict[str, Any]]: ...
    def subnet_in(self, conn: Connection, ctx: Context, subnet_id: str) -> dict[str, Any]: ...
    def subnets_in(self, conn: Connection, ctx: Context, query: CollectionQuery
                   ) -> list[dict[str, Any]]: ...
    def networks_visible_to(self, ctx: Context) -> Any:
        """A where clause on the networks table for what ``ctx`` may see (None: all)."""

    # ports a service plugin owns, changed inside its transaction
    def create_port_in(self, conn: Connection, ctx: Context, data: dict[str, Any]
                       ) -> dict[str, Any]: ...
    def port_created(self, ctx: Context, view: dict[str, Any]) -> None: ...
    def update_port_in(self, conn: Connection, ctx: Context, port_id: str,
                       data: dict[str, Any]) -> Any: ...
    def port_updated(self, context: Any) -> None: ...
    def delete_port_in(self, conn: Connection, ctx: Context, port_id: str) -> Any: ...
    def port_deleted(self, context: Any) -> None: ...

    # QoS, for the qos plugin
    def qos_rule_types(self) -> dict[str, frozenset[str]]:
        """Mechanism driver -> the QoS rule types it supports (none: no QoS driver)."""
        ...

    def qos_rule_types_by_vif_type(self) -> dict[str, frozenset[str]]:
        """The ``binding:vif_type`` of each mechanism driver that binds ports ->
        the QoS rule types it supports: what a bound port's policy may hold."""
        ...

    # segmentation ids, for the network segment ranges' plugin
    def segment_range_types(self) -> dict[str, tuple[int, int]]:
        """Network type -> its lowest and highest id, of each loaded type driver
        whose ids come from ranges (vlan, vxlan, gre, geneve)."""
        ...

    def follow_segment_ranges_in(self, conn: Connection, network_type: str,
                                 ranges: list[IdRange], changed: list[IdRange]) -> None:
        """After a change of the type's ranges, in its transaction: the free ids
        within ``changed`` (the spans it touched) follow ``ranges``, every range of
        the type; ids taken stay."""
        ...


class RouterPlugin(Protocol):
    """What a service plugin may call on the router plugin (the ``router``
    extension's): the API's calls, each its own transaction."""

    def create_router(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]: ...
    def delete_router(self, ctx: Context, router_id: str,
                      if_revision: int | None = None) -> None: ...
    def add_router_interface(self, ctx: Context, router_id: str, body: dict[str, Any]
                             ) -> dict[str, Any]: ...
    def remove_router_interface(self, ctx: Context, router_id: str, body: dict[str, Any]
                                ) -> dict[str, Any]: ...


@dataclass
class Environment:
    """What every plugin is given: configuration, database, hooks, quotas."""

    conf: Config
    db: Database
    hooks: Hooks
    quota: QuotaEngine
    # the core plugin, for service plugins (set once it is built, before them)
    core: CorePlugin = cast(CorePlugin, None)
    # the message bus, to notify agents (started with the server's event loop)
    bus: Bus | None = None
    # [service_providers]: the drivers a service plugin picks from
    providers: ServiceProviders = field(default_factory=ServiceProviders)
    # the ``plugin_type`` of every plugin the server loads (what a flavor may serve)
    plugin_types: frozenset[str] = frozenset()
    # the plugin serving routers, for the services that build on them (set once
    # every plugin is built; None without one)
    routers: RouterPlugin | None = None
    # the API's resources by path, each with its loaded extensions' attributes
    # (set once every plugin is built): what a service that creates through
    # another plugin fills a body in with, as the API would (create_body)
    resources: dict[str, Resource] = field(default_factory=dict)


class Plugin:
    #: extension aliases this plugin implements; two plugins may not share one
    #: (a plugin may add to its class's, as ML2 does for its extension drivers)
    supported_extension_aliases: tuple[str, ...] = ()
    #: option groups this plugin reads, registered before construction
    option_groups: ClassVar[tuple[OptGroup, ...]] = ()
    #: the service it offers, in Neutron's words (its plugin type: ``L3_ROUTER_NAT``,
    #: ``METERING``, ...), which a flavor's ``service_type`` names; None for none
    plugin_type: ClassVar[str | None] = None

    def __init__(self, env: Environment):
        self.env = env
        self.conf = env.conf
        self.db = env.db

    def _read(self, work: Callable[[Connection], T]) -> T:
        """``work`` on a read-only connection."""
        with self.db.reader() as conn:
            return work(conn)

    def taggable_tables(self) -> dict[str, Any]:
        """collection -> table whose rows can carry tags."""
        return {}

    #: collection -> query parameters accepted beyond the resource attributes
    extra_filters: ClassVar[dict[str, tuple[str, ...]]] = {}

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        """topic -> objects whose methods agents call over the bus."""
        return {}

    def sync_database(self) -> None:
        """Bring plugin-owned tables in line with the configuration; run once at
        start-up, before the API serves (idempotent, safe with many servers)."""

    def periodic_tasks(self) -> list[tuple[float, Callable[[], None]]]:
        """(interval in seconds, work) to run in the server while it serves."""
        return []

    def start(self) -> None:
        """Called once the API is assembled (after migrations)."""

    def stop(self) -> None:
        """Called when the server stops: let go of what ``start`` took."""
