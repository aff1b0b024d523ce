"""The address group API: /v2.0/address-groups, with the member actions
``add_addresses`` and ``remove_addresses`` (each all or nothing).

Once a change of members has committed, the L2 agents hear that the rules
naming the group (as their remote address group) mean other addresses now:
``security_groups_rule_updated`` for the security groups holding such rules,
as for a change of those rules themselves.
"""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db.query import CollectionQuery
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc.contracts.l2 import L2AgentNotifier
from neutrino.rpc.notifier import Notifier
from neutrino.services.secgroups import address_groups


def _addresses_of(body: dict[str, Any]) -> Any:
    """``{"address_group": {"addresses": [...]}}`` (the API reference's form) or
    ``{"addresses": [...]}``."""
    inner = body.get("address_group", body)
    if not isinstance(inner, dict) or "addresses" not in inner:
        raise exc.HTTPBadRequest(msg="Invalid input for operation: 'addresses' is required.")
    return inner["addresses"]


class AddressGroupPlugin(Plugin):
    supported_extension_aliases = ("address-group",)

    def __init__(self, env: Environment):
        super().__init__(env)
        self.notifier = L2AgentNotifier(Notifier(env.bus))

    def _followed(self, changed: dict[str, list[str] | None]) -> None:
        """A backend that keeps address groups of its own (OVN's address sets)
        hears of each committed change."""
        for followed in self.env.hooks.after_address_groups_change:
            followed(changed)

    def create_address_group(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        made = self.db.write(lambda conn: address_groups.create(conn, data))
        self._followed({made["id"]: made["addresses"]})
        return made

    def create_address_group_bulk(self, ctx: Context, items: list[dict[str, Any]]
                                  ) -> list[dict[str, Any]]:
        made = self.db.write(lambda conn: [address_groups.create(conn, d) for d in items])
        self._followed({group["id"]: group["addresses"] for group in made})
        return made

    def get_address_group(self, ctx: Context, group_id: str) -> dict[str, Any]:
        with self.db.reader() as conn:
            return address_groups.get(conn, ctx, group_id)

    def get_address_groups(self, ctx: Context, query: CollectionQuery
                           ) -> list[dict[str, Any]]:
        with self.db.reader() as conn:
            return address_groups.list_(conn, ctx, query)

    def update_address_group(self, ctx: Context, group_id: str, data: dict[str, Any],
                             if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Any) -> dict[str, Any]:
            address_groups.update(conn, ctx, group_id, data, if_revision)
            return address_groups.get(conn, ctx, group_id)

        return self.db.write(work)

    def delete_address_group(self, ctx: Context, group_id: str,
                             if_revision: int | None = None) -> None:
        self.db.write(lambda conn: address_groups.delete_(conn, ctx, group_id, if_revision))
        self._followed({group_id: None})

    def _change(self, ctx: Context, group_id: str, body: dict[str, Any], add: bool
                ) -> dict[str, Any]:
        addresses = _addresses_of(body)

        def work(conn: Any) -> tuple[dict[str, Any], set[str]]:
            address_groups.change(conn, ctx, group_id, addresses, add)
            return ({"address_group": address_groups.get(conn, ctx, group_id)},
                    address_groups.naming_security_groups(conn, group_id))

        changed, naming = self.db.write(work)
        self._followed({group_id: changed["address_group"]["addresses"]})
        self.notifier.security_groups_rule_updated(naming)
        for followed in self.env.hooks.after_security_groups_change:
            followed(naming)  # their rules match other addresses now
        return changed

    def add_address_group_addresses(self, ctx: Context, group_id: str,
                                    body: dict[str, Any]) -> dict[str, Any]:
        return self._change(ctx, group_id, body, add=True)

    def remove_address_group_addresses(self, ctx: Context, group_id: str,
                                       body: dict[str, Any]) -> dict[str, Any]:
        return self._change(ctx, group_id, body, add=False)
