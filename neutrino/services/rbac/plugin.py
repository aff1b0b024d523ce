"""The RBAC policy API: /v2.0/rbac-policies, for networks.

A companion of the core plugin (its ``companion_plugins``): the entries decide who sees and uses its
networks, and ``shared`` / ``router:external`` are written through them.
"""

from __future__ import annotations

from typing import Any

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery
from neutrino.plugins.base import Environment, Plugin
from neutrino.services.rbac import db


class RbacPlugin(Plugin):
    supported_extension_aliases = ("rbac-policies",)

    def __init__(self, env: Environment):
        super().__init__(env)
        env.quota.register("rbac_policy", models.networkrbacs)  # the entries a project owns
        env.hooks.on_network_write.append(db.network_flags)

    def create_rbac_policy(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self.db.write(lambda conn: self.env.quota.create(
            conn, "rbac_policy", data, lambda c, item: db.create(c, ctx, item)))

    def get_rbac_policy(self, ctx: Context, policy_id: str) -> dict[str, Any]:
        return self._read(lambda conn: db.view(db.get_row(conn, ctx, policy_id)))

    def get_rbac_policies(self, ctx: Context, query: CollectionQuery
                          ) -> list[dict[str, Any]]:
        return self._read(lambda conn: db.list_(conn, ctx, query))

    def update_rbac_policy(self, ctx: Context, policy_id: str, data: dict[str, Any],
                           if_revision: int | None = None) -> dict[str, Any]:
        return self.db.write(lambda conn: db.update_(conn, ctx, policy_id, data))

    def delete_rbac_policy(self, ctx: Context, policy_id: str,
                           if_revision: int | None = None) -> None:
        self.db.write(lambda conn: db.delete_(conn, ctx, policy_id))
