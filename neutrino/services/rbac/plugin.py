"""The RBAC policy API: /v2.0/rbac-policies, for networks, security groups,
subnet pools, address scopes and address groups.

A companion of the core plugin (its ``companion_plugins``): the entries decide
who sees and uses those objects; a network's ``shared`` / ``router:external``
and a pool's or scope's ``shared`` are written through them.
"""

from __future__ import annotations

from typing import Any

from neutrino.context import Context
from neutrino.db.query import CollectionQuery
from neutrino.definitions import rbac as r
from neutrino.plugins.base import Environment, Plugin
from neutrino.services.rbac import db, entries, objects


class RbacPlugin(Plugin):
    supported_extension_aliases = ("rbac-policies", "rbac-security-groups",
                                   "rbac-subnetpool", "rbac-address-scope",
                                   "rbac-address-group")

    def __init__(self, env: Environment):
        super().__init__(env)
        # the entries a project owns, whatever their type
        env.quota.register("rbac_policy", entries.ALL)
        env.hooks.on_network_write.append(db.network_flags)

    def create_rbac_policy(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        def make(conn: Any, item: dict[str, Any]) -> dict[str, Any]:
            if item["object_type"] == "network":
                return db.create(conn, ctx, item)
            return objects.create(conn, ctx, item)

        return self.db.write(lambda conn: self.env.quota.create(
            conn, "rbac_policy", data, make))

    def get_rbac_policy(self, ctx: Context, policy_id: str) -> dict[str, Any]:
        return self._read(lambda conn: r.view(entries.find(conn, ctx, policy_id)))

    def get_rbac_policies(self, ctx: Context, query: CollectionQuery
                          ) -> list[dict[str, Any]]:
        return self._read(lambda conn: entries.list_(conn, ctx, query))

    def update_rbac_policy(self, ctx: Context, policy_id: str, data: dict[str, Any],
                           if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Any) -> dict[str, Any]:
            entry = entries.find(conn, ctx, policy_id)
            target = data.get("target_tenant", entry.target_project)
            if entry.object_type == "network":
                db.update_target(conn, entry, target)
            elif target != entry.target_project:
                objects.update_target(conn, entry, target)
            return r.view(entries.find(conn, ctx, policy_id))

        return self.db.write(work)

    def delete_rbac_policy(self, ctx: Context, policy_id: str,
                           if_revision: int | None = None) -> None:
        def work(conn: Any) -> None:
            entry = entries.find(conn, ctx, policy_id)
            if entry.object_type == "network":
                db.delete_(conn, entry)
            else:
                objects.delete_(conn, entry)

        self.db.write(work)
