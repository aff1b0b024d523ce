"""The security group API: /v2.0/security-groups and /v2.0/security-group-rules.

ML2 brings this plugin along (a companion); the ports' ``security_groups`` are
kept by this service's ML2 extension driver (``extension_driver``) over the same tables.
Every call is one short write transaction, retried on conflict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

from neutrino.context import Context
from neutrino.db.query import CollectionQuery
from neutrino.db.util import bump
from neutrino.definitions import securitygroup as sg
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc.contracts.l2 import L2AgentNotifier
from neutrino.rpc.notifier import Notifier
from neutrino.services.secgroups import (
    address_groups,
    checks,
    default_rules,
    groups,
    rules,
    statefulness,
)


class SecurityGroupPlugin(Plugin):
    supported_extension_aliases = (
        "security-group", "stateful-security-group", "security-groups-normalized-cidr",
        "security-groups-shared-filtering", "security-groups-remote-address-group",
        "security-groups-default-rules", "security-groups-rules-belongs-to-default-sg",
        "port-security-groups-filtering", "security-groups-default-statefulness",
    )

    def __init__(self, env: Environment):
        super().__init__(env)
        self.notifier = L2AgentNotifier(Notifier(env.bus))
        self.quota = env.quota
        self.quota.register("security_group", groups.G)
        self.quota.register("security_group_rule", rules.R)
        env.hooks.security_groups = self

    def views(self, group_ids: list[str] | None) -> list[dict[str, Any]]:
        query = CollectionQuery(filters={} if group_ids is None else {"id": list(group_ids)})
        return self._read(lambda conn: groups.list_(conn, Context.admin(), query))

    def default_of(self, project_id: str) -> str | None:
        return self._read(lambda conn: groups.default_id(conn, project_id))

    def address_groups(self) -> dict[str, list[str]]:
        return self._read(address_groups.every_group_addresses)

    def taggable_tables(self) -> dict[str, Any]:
        return {"security_groups": groups.G}

    def ensure_default(self, project_id: str | None) -> None:
        """Give the project its default group unless it has one (a write only then)."""
        if not project_id or "\x00" in project_id or len(project_id) > 255:
            return  # no project can have such an id
        if self._read(lambda conn: groups.default_id(conn, project_id)) is None:
            made = self.db.write(lambda conn: groups.ensure_default(conn, project_id,
                                                                    self.quota))
            self._groups_made([made])

    def _ensure_for_list(self, ctx: Context, query: CollectionQuery) -> None:
        """As Neutron: a list makes the default group of the project it is about."""
        wanted = query.filters.get("project_id") or query.filters.get("tenant_id")
        project = wanted[0] if wanted and ctx.is_admin else ctx.project_id
        self.ensure_default(project)

    # --- groups ------------------------------------------------------------------------

    def _make_groups(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        defaults: set[str] = set()

        def work(conn: Connection) -> list[dict[str, Any]]:
            made = []
            defaults.clear()
            for item in items:
                defaults.add(groups.ensure_default(conn, item["project_id"], self.quota))
                made.append(self.quota.create(conn, "security_group", item, self._insert_group))
            return made

        made = self.db.write(work)
        self._groups_made([*defaults, *(group["id"] for group in made)])
        return made

    def _groups_made(self, group_ids: list[str]) -> None:
        """Committed: the backends that follow groups hear of new ones (the agents
        need not: no port is in them yet)."""
        for changed in self.env.hooks.after_security_groups_change:
            changed(set(group_ids))

    def _insert_group(self, conn: Connection, item: dict[str, Any]) -> dict[str, Any]:
        """A new group, once its default rules fit in the rules' quota too."""
        project = item["project_id"]
        self.quota.check(conn, project, "security_group_rule",
                         groups.initial_rule_count(conn, False))
        stateful = item.get("stateful")
        if stateful is None:
            stateful = statefulness.default_for(conn, project)
        return groups.insert(conn, project, item.get("name", ""), item.get("description", ""),
                             stateful)

    def create_security_group(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._make_groups(ctx, [data])[0]

    def create_security_group_bulk(self, ctx: Context, items: list[dict[str, Any]]
                                   ) -> list[dict[str, Any]]:
        return self._make_groups(ctx, items)

    # --- the stateful value of new groups (security-groups-default-statefulness) --------

    def create_security_groups_default_statefulness(self, ctx: Context, data: dict[str, Any]
                                                    ) -> dict[str, Any]:
        return self.db.write(lambda conn: statefulness.create(conn, data))

    def get_security_groups_default_statefulness(
            self, ctx: Context, wanted: CollectionQuery | str) -> Any:
        """One name for the list and for one setting (the resource's singular and
        plural are the same word): a query lists, an id shows."""
        if isinstance(wanted, CollectionQuery):
            return self._read(lambda conn: statefulness.list_(conn, ctx, wanted))
        return self._read(lambda conn: statefulness.view(
            statefulness.get_row(conn, ctx, wanted)))

    def update_security_groups_default_statefulness(
            self, ctx: Context, setting_id: str, data: dict[str, Any],
            if_revision: int | None = None) -> dict[str, Any]:
        return self.db.write(lambda conn: statefulness.update_(conn, ctx, setting_id, data))

    def delete_security_groups_default_statefulness(
            self, ctx: Context, setting_id: str, if_revision: int | None = None) -> None:
        self.db.write(lambda conn: statefulness.delete_(conn, ctx, setting_id))

    def get_security_group(self, ctx: Context, group_id: str) -> dict[str, Any]:
        return self._read(lambda conn: groups.get(conn, ctx, group_id))

    def get_security_groups(self, ctx: Context, query: CollectionQuery
                            ) -> list[dict[str, Any]]:
        self._ensure_for_list(ctx, query)
        return self._read(lambda conn: groups.list_(conn, ctx, query))

    def update_security_group(self, ctx: Context, group_id: str, data: dict[str, Any],
                              if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            groups.update(conn, ctx, group_id, data, if_revision)
            return groups.get(conn, ctx, group_id)

        updated = self.db.write(work)
        if "stateful" in data:  # the same rules, filtered with or without conntrack
            self._rules_changed({group_id})
        return updated

    def delete_security_group(self, ctx: Context, group_id: str,
                              if_revision: int | None = None) -> None:
        def work(conn: Connection) -> tuple[list[Callable[[], None]], set[str]]:
            then = self.env.hooks.run(self.env.hooks.before_security_group_delete, conn, ctx,
                                      group_id)
            return then, groups.delete_(conn, ctx, group_id, if_revision)

        then, naming = self.db.write(work)
        for after in then:
            after()
        # the groups whose rules named it as remote lost them
        if naming:
            self._rules_changed(naming)
        for changed in self.env.hooks.after_security_groups_change:
            changed({group_id})

    # --- rules -------------------------------------------------------------------------

    def _make_rules(self, ctx: Context, items: list[dict[str, Any]]) -> list[dict]:
        if len({item["security_group_id"] for item in items}) > 1:
            raise sg.SecurityGroupNotSingleGroupRules()
        if len({item["project_id"] for item in items}) > 1:
            raise sg.SecurityGroupRulesNotSingleTenant()
        wanted = [checks.canonical(item) for item in items]
        for rule in wanted:
            checks.check(rule)
        group_id = wanted[0]["security_group_id"]

        def work(conn: Connection) -> list[dict[str, Any]]:
            for rule in wanted:
                if rule.get("remote_group_id") is not None:
                    groups.get_row(conn, ctx, rule["remote_group_id"])
                if rule.get("remote_address_group_id") is not None:
                    address_groups.get_row(conn, ctx, rule["remote_address_group_id"])
            group = groups.get_row(conn, ctx, group_id, for_update=True)
            self.quota.check(conn, group.project_id, "security_group_rule", len(wanted))
            made = rules.add(conn, group.id, group.project_id, wanted,
                             groups.default_id(conn, group.project_id) == group.id)
            bump(conn, groups.G, group.id)  # a group's revision follows its rules
            return made

        made = self.db.write(work)
        self._rules_changed({group_id})
        return made

    def create_security_group_rule(self, ctx: Context, data: dict[str, Any]
                                   ) -> dict[str, Any]:
        return self._make_rules(ctx, [data])[0]

    def create_security_group_rule_bulk(self, ctx: Context, items: list[dict[str, Any]]
                                        ) -> list[dict[str, Any]]:
        return self._make_rules(ctx, items)

    def get_security_group_rule(self, ctx: Context, rule_id: str) -> dict[str, Any]:
        return self._read(lambda conn: rules.get(conn, ctx, rule_id))

    def get_security_group_rules(self, ctx: Context, query: CollectionQuery
                                 ) -> list[dict[str, Any]]:
        self._ensure_for_list(ctx, query)
        return self._read(lambda conn: rules.list_(conn, ctx, query))

    def delete_security_group_rule(self, ctx: Context, rule_id: str,
                                   if_revision: int | None = None) -> None:
        def work(conn: Connection) -> str:
            group_id = rules.delete_(conn, ctx, rule_id, if_revision)
            bump(conn, groups.G, group_id)
            return group_id

        self._rules_changed({self.db.write(work)})

    def _rules_changed(self, group_ids: set[str]) -> None:
        """Committed: the agents, and the backends that follow groups, hear of it."""
        self.notifier.security_groups_rule_updated(group_ids)
        for changed in self.env.hooks.after_security_groups_change:
            changed(group_ids)

    # --- the template of new groups' rules ---------------------------------------------

    def _make_default_rules(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        wanted = []
        for item in items:
            rule = checks.canonical(item)
            checks.check(rule)
            wanted.append(rule)
        return self.db.write(lambda conn: default_rules.add(conn, wanted))

    def create_default_security_group_rule(self, ctx: Context, data: dict[str, Any]
                                           ) -> dict[str, Any]:
        return self._make_default_rules([data])[0]

    def create_default_security_group_rule_bulk(self, ctx: Context,
                                                items: list[dict[str, Any]]
                                                ) -> list[dict[str, Any]]:
        return self._make_default_rules(items)

    def get_default_security_group_rule(self, ctx: Context, rule_id: str) -> dict[str, Any]:
        return self._read(lambda conn: default_rules.get(conn, rule_id))

    def get_default_security_group_rules(self, ctx: Context, query: CollectionQuery
                                         ) -> list[dict[str, Any]]:
        return self._read(lambda conn: default_rules.list_(conn, query))

    def delete_default_security_group_rule(self, ctx: Context, rule_id: str,
                                           if_revision: int | None = None) -> None:
        self.db.write(lambda conn: default_rules.delete_(conn, rule_id))
