"""The ML2 core plugin: networks, subnets, ports and subnet pools.

Each API call is one short write transaction (retried on conflict) over the
table code in ``plugins/core``; type and mechanism drivers plug in here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from sqlalchemy.engine import Connection

from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db.query import CollectionQuery
from neutrino.plugins.base import Environment, Plugin
from neutrino.plugins.core import networks, ports, subnetpools, subnets

T = TypeVar("T")


class Ml2Plugin(Plugin):
    supported_extension_aliases = (
        "external-net", "net-mtu", "standard-attr-tag", "tag-creation", "quotas",
        "quota_details",
        "project-id", "pagination", "sorting", "filter-validation",
        "standard-attr-description", "standard-attr-revisions", "standard-attr-timestamp",
        "subnet_allocation", "default-subnetpools", "ip-substring-filtering",
        "empty-string-filtering",
    )
    extra_filters: ClassVar[dict[str, tuple[str, ...]]] = {"ports": ports.EXTRA_FILTERS}

    def __init__(self, env: Environment):
        super().__init__(env)
        self.settings = env.conf.DEFAULT
        for resource, table in (("network", models.networks), ("subnet", models.subnets),
                                ("port", models.ports), ("subnetpool", models.subnetpools)):
            env.quota.register(resource, table)

    def taggable_tables(self) -> dict[str, Any]:
        return {"networks": models.networks, "subnets": models.subnets,
                "ports": models.ports, "subnetpools": models.subnetpools}

    # --- plumbing ------------------------------------------------------------------

    def _read(self, work: Callable[[Connection], T]) -> T:
        with self.db.reader() as conn:
            return work(conn)

    def _create(self, ctx: Context, resource: str, items: list[dict[str, Any]],
                make: Callable[[Connection, dict[str, Any]], dict[str, Any]]
                ) -> list[dict[str, Any]]:
        quota = self.env.quota

        def work(conn: Connection) -> list[dict[str, Any]]:
            created = []
            for item in items:
                quota.check(conn, item["project_id"], resource)
                view = make(conn, item)
                if item.get("tags"):
                    tags.replace(conn, view["id"], item["tags"])
                    view["tags"] = sorted(set(item["tags"]))
                created.append(view)
            return created

        return self.db.write(work)

    # --- networks ------------------------------------------------------------------

    def _make_network(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        return networks.create(conn, data, self.settings.global_physnet_mtu)

    def create_network(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._create(ctx, "network", [data], self._make_network)[0]

    def create_network_bulk(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        return self._create(ctx, "network", items, self._make_network)

    def get_network(self, ctx: Context, network_id: str) -> dict[str, Any]:
        return self._read(lambda conn: networks.get(conn, ctx, network_id))

    def get_networks(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: networks.list_(conn, ctx, query))

    def update_network(self, ctx: Context, network_id: str, data: dict[str, Any],
                       if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            networks.update(conn, ctx, network_id, data, if_revision)
            return networks.get(conn, ctx, network_id)

        return self.db.write(work)

    def delete_network(self, ctx: Context, network_id: str,
                       if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            self.env.hooks.run(self.env.hooks.before_network_delete, conn, ctx, network_id)
            networks.delete_(conn, ctx, network_id, if_revision)

        self.db.write(work)

    # --- subnets -------------------------------------------------------------------

    def create_subnet(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._create(ctx, "subnet", [data],
                            lambda conn, d: subnets.create(conn, ctx, d, self.settings))[0]

    def create_subnet_bulk(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        return self._create(ctx, "subnet", items,
                            lambda conn, d: subnets.create(conn, ctx, d, self.settings))

    def get_subnet(self, ctx: Context, subnet_id: str) -> dict[str, Any]:
        return self._read(lambda conn: subnets.get(conn, ctx, subnet_id))

    def get_subnets(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: subnets.list_(conn, ctx, query))

    def update_subnet(self, ctx: Context, subnet_id: str, data: dict[str, Any],
                      if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            subnets.update(conn, ctx, subnet_id, data, if_revision, self.settings)
            return subnets.get(conn, ctx, subnet_id)

        return self.db.write(work)

    def delete_subnet(self, ctx: Context, subnet_id: str,
                      if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            self.env.hooks.run(self.env.hooks.before_subnet_delete, conn, ctx, subnet_id)
            subnets.delete_(conn, ctx, subnet_id, if_revision)

        self.db.write(work)

    # --- ports ---------------------------------------------------------------------

    def _port_maker(self, ctx: Context) -> Callable[[Connection, dict], dict]:
        base_mac, max_ips = self.settings.base_mac, self.settings.max_fixed_ips_per_port
        return lambda conn, data: ports.create(conn, ctx, data, base_mac, max_ips)

    def create_port(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._create(ctx, "port", [data], self._port_maker(ctx))[0]

    def create_port_bulk(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        return self._create(ctx, "port", items, self._port_maker(ctx))

    def get_port(self, ctx: Context, port_id: str) -> dict[str, Any]:
        return self._read(lambda conn: ports.get(conn, ctx, port_id))

    def get_ports(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: ports.list_(conn, ctx, query))

    def update_port(self, ctx: Context, port_id: str, data: dict[str, Any],
                    if_revision: int | None = None) -> dict[str, Any]:
        max_ips = self.settings.max_fixed_ips_per_port

        def work(conn: Connection) -> dict[str, Any]:
            ports.update(conn, ctx, port_id, data, if_revision, max_ips)
            return ports.get(conn, ctx, port_id)

        return self.db.write(work)

    def delete_port(self, ctx: Context, port_id: str, if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            self.env.hooks.run(self.env.hooks.before_port_delete, conn, ctx, port_id)
            ports.delete_(conn, ctx, port_id, if_revision)

        self.db.write(work)

    # --- subnet pools --------------------------------------------------------------

    def create_subnetpool(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._create(ctx, "subnetpool", [data],
                            lambda conn, d: subnetpools.create(conn, ctx, d))[0]

    def create_subnetpool_bulk(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        return self._create(ctx, "subnetpool", items,
                            lambda conn, d: subnetpools.create(conn, ctx, d))

    def get_subnetpool(self, ctx: Context, pool_id: str) -> dict[str, Any]:
        return self._read(lambda conn: subnetpools.get(conn, ctx, pool_id))

    def get_subnetpools(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: subnetpools.list_(conn, ctx, query))

    def update_subnetpool(self, ctx: Context, pool_id: str, data: dict[str, Any],
                          if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            subnetpools.update(conn, ctx, pool_id, data, if_revision)
            return subnetpools.get(conn, ctx, pool_id)

        return self.db.write(work)

    def delete_subnetpool(self, ctx: Context, pool_id: str,
                          if_revision: int | None = None) -> None:
        self.db.write(lambda conn: subnetpools.delete_(conn, ctx, pool_id, if_revision))
