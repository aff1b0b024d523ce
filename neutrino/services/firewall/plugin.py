"""The FWaaS v2 service plugin (``service_plugins = firewall_v2``): rules,
policies (ordered rules, ``insert_rule``/``remove_rule``) and groups (an
ingress and an egress policy on router ports), with neutron-fwaas's checks,
the per-project ``default`` group and its statuses.

Groups apply to router interface ports, enforced by the L3 agents' ``fwaas_v2``
extension in the routers' namespaces. A VM port is refused
(``FirewallGroupPortNotSupported``): no L2 agent enforces groups yet.

Once a change that alters what a router enforces has committed, the agents
hosting the routers concerned hear ``routers_updated``; the groups come with
the routers' sync data (the ``extend_router_sync`` hook) and the agents report
each group's status back (``set_firewall_group_status``). A group with ports
and a policy is PENDING_CREATE or PENDING_UPDATE until then, and refuses
changes meanwhile, as neutron-fwaas's do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from neutrino.config import Opt, OptGroup, parse_bool
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery
from neutrino.db.util import bump, check_revision
from neutrino.definitions import firewall as fw
from neutrino.definitions import validators as v
from neutrino.definitions.l3 import ROUTER_INTERFACE
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc import topics
from neutrino.rpc.contracts.firewall import FIREWALL_GROUPS
from neutrino.rpc.contracts.l3 import INTERFACES, L3AgentNotifier
from neutrino.rpc.notifier import Notifier
from neutrino.services.firewall import logs, store
from neutrino.services.l3 import agents_notify

LOG = logging.getLogger(__name__)
ADMIN = Context.admin()
DRIVER_NAME = "l3_agent"
#: the device owners of router ports a group may hold
ROUTER_PORT_OWNERS = (ROUTER_INTERFACE, "network:ha_router_replicated_interface",
                      "network:router_interface_distributed")

DEFAULT_RULES = OptGroup("default_fwg_rules", [
    Opt("ingress_action", str, "deny", "Action of the default group's ingress rules."),
    Opt("egress_action", str, "allow", "Action of the default group's egress rules."),
    Opt("shared", parse_bool, False, "Whether the default group's rules are shared."),
    Opt("enabled", parse_bool, True, "Whether the default group's rules are enabled."),
])


def _rule_info(body: dict[str, Any]) -> dict[str, Any]:
    """The body of insert_rule/remove_rule: bare, or under firewall_policy."""
    info = body.get("firewall_policy", body) if isinstance(body, dict) else None
    if not isinstance(info, dict) or "firewall_rule_id" not in info:
        raise fw.FirewallRuleInfoMissing()
    if not v.is_uuid(info["firewall_rule_id"]):
        raise fw.FirewallRuleNotFound(firewall_rule_id=info["firewall_rule_id"])
    return info


def check_rule(rule: dict[str, Any]) -> None:
    """neutron-fwaas's checks of a whole rule: ports only with TCP or UDP, and
    addresses of the rule's IP version."""
    protocol = rule.get("protocol")
    has_ports = rule.get("source_port") or rule.get("destination_port")
    if protocol and protocol not in fw.PORT_PROTOCOLS and has_ports:
        raise fw.FirewallRuleInvalidICMPParameter(param="Source, destination port")
    if not protocol and has_ports:
        raise fw.FirewallRuleWithPortWithoutProtocolInvalid()
    for side in ("source", "destination"):
        address = rule.get(f"{side}_ip_address")
        if address and fw.ip_version_of(address) != rule.get("ip_version", 4):
            raise fw.FirewallIpAddressConflict()
        store.port_bounds(rule.get(f"{side}_port"))


class FirewallPlugin(Plugin):
    plugin_type = "FIREWALL_V2"
    supported_extension_aliases = tuple(ext.alias for ext in fw.EXTENSIONS)
    option_groups: ClassVar[tuple[OptGroup, ...]] = (DEFAULT_RULES,)

    def __init__(self, env: Environment):
        super().__init__(env)
        self.notifier = L3AgentNotifier(Notifier(env.bus))
        self.defaults = env.conf.group("default_fwg_rules")
        env.quota.register("firewall_rule", models.firewall_rules)
        env.quota.register("firewall_policy", models.firewall_policies)
        env.quota.register("firewall_group", models.firewall_groups)
        env.hooks.extend_router_sync.append(self._extend_router_sync)
        env.hooks.on_port_removed.append(self._port_removed)
        env.hooks.after_logs_change.append(self._logs_changed)

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        return {topics.FIREWALL_PLUGIN: [FirewallRpcCallback(self)]}

    # --- what agents are told -------------------------------------------------------

    def _write(self, work: Callable[[Connection, set[str]], Any]) -> Any:
        """``work(conn, groups)`` in one transaction, where it adds the groups
        whose enforcement changed; then their routers' agents are told."""
        def attempt(conn: Connection) -> tuple[Any, list[str]]:
            changed: set[str] = set()
            result = work(conn, changed)
            return result, self._routers_of_groups(conn, changed)

        result, router_ids = self.db.write(attempt)
        agents_notify.routers_updated(self.db, self.notifier, router_ids)
        return result

    @staticmethod
    def _routers_of_groups(conn: Connection, group_ids: Iterable[str]) -> list[str]:
        """The routers with an interface in the groups (read before a change of
        their ports too: a port that leaves must lose its rules)."""
        wanted = sorted(set(group_ids))
        if not wanted:
            return []
        RP = models.router_ports
        return sorted(set(conn.execute(
            select(RP.c.router_id).join(store.FGP, store.FGP.c.port_id == RP.c.port_id)
            .where(store.FGP.c.firewall_group_id.in_(wanted))).scalars()))

    def _logs_changed(self, views: list[dict[str, Any]]) -> None:
        """firewall_group logs changed: the routers of their groups log anew."""
        def routers(conn: Connection) -> list[str]:
            return self._routers_of_groups(conn, logs.groups_named(conn, views))

        agents_notify.routers_updated(self.db, self.notifier, self._read(routers))

    def _extend_router_sync(self, conn: Connection, views: list[dict[str, Any]]) -> None:
        found = store.routers_groups(conn, {view["id"]: [p["id"] for p in view[INTERFACES]]
                                            for view in views})
        for view in views:
            view[FIREWALL_GROUPS] = found.get(view["id"], [])

    @staticmethod
    def _port_removed(conn: Connection, port_id: str) -> None:
        """A group that loses its last port has nothing left to enforce."""
        group_id = store.groups_of_ports(conn, [port_id]).get(port_id)
        if group_id is not None:
            conn.execute(delete(store.FGP).where(store.FGP.c.port_id == port_id))
            if not store.ports_of_groups(conn, [group_id]):
                store.set_status(conn, group_id, fw.INACTIVE)

    # --- rules ----------------------------------------------------------------------

    def get_firewall_rule(self, ctx: Context, rule_id: str) -> dict[str, Any]:
        return self._read(lambda conn: store.rule(conn, ctx, rule_id))

    def get_firewall_rules(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        self._ensure_default_group(ctx, query)
        return self._read(lambda conn: store.rules(conn, ctx, query))

    def create_firewall_rule(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        check_rule(data)
        return self.db.write(lambda conn: self.env.quota.create(
            conn, "firewall_rule", data, store.insert_rule_row))

    def update_firewall_rule(self, ctx: Context, rule_id: str, data: dict[str, Any],
                             if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection, changed: set[str]) -> dict[str, Any]:
            row = store.rule_row(conn, ctx, rule_id, for_update=True)
            merged = {**store.rule_view(row), **data}
            check_rule(merged)
            policy_ids = store.policies_of_rules(conn, [rule_id]).get(rule_id, [])
            groups = store.groups_using_policies(conn, policy_ids)
            self._not_pending(groups)
            if data.get("shared") is False and row.shared:
                self._still_shareable(conn, rule_id, policy_ids)
            bump(conn, store.FR, rule_id, if_revision, store.rule_values(data))
            for policy_id in policy_ids:
                bump(conn, store.FP, policy_id, values={"audited": False})
            self._enforced_anew(conn, policy_ids, changed)
            return store.rule(conn, ctx, rule_id)

        return self._write(work)

    @staticmethod
    def _still_shareable(conn: Connection, rule_id: str, policy_ids: Sequence[str]) -> None:
        """A rule in a shared policy stays shared."""
        for policy_id in policy_ids:
            if store.policy_row(conn, ADMIN, policy_id).shared:
                raise fw.FirewallPolicySharingConflict(firewall_policy_id=policy_id,
                                                       firewall_rule_id=rule_id)

    def delete_firewall_rule(self, ctx: Context, rule_id: str,
                             if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            store.rule_row(conn, ctx, rule_id, for_update=True)
            if store.policies_of_rules(conn, [rule_id]):
                raise fw.FirewallRuleInUse(firewall_rule_id=rule_id)
            check_revision(conn, store.FR, rule_id, if_revision)
            conn.execute(delete(store.FR).where(store.FR.c.id == rule_id))

        self.db.write(work)

    # --- policies -------------------------------------------------------------------

    def get_firewall_policy(self, ctx: Context, policy_id: str) -> dict[str, Any]:
        return self._read(lambda conn: store.policy(conn, ctx, policy_id))

    def get_firewall_policies(self, ctx: Context, query: CollectionQuery
                              ) -> list[dict[str, Any]]:
        self._ensure_default_group(ctx, query)
        return self._read(lambda conn: store.policies(conn, ctx, query))

    @staticmethod
    def _not_reserved_policy_name(name: Any) -> None:
        if name in (fw.DEFAULT_INGRESS_POLICY, fw.DEFAULT_EGRESS_POLICY):
            raise fw.FirewallDefaultParameterExists(resource_type="Firewall Policy", name=name)

    def _checked_rules(self, conn: Connection, ctx: Context, rule_ids: Sequence[str],
                       policy_id: str, project_id: str, shared: bool) -> None:
        """Rules a policy may hold: visible, its project's or shared, and shared
        if the policy is."""
        for rule_id in rule_ids:
            row = store.rule_row(conn, ctx, rule_id)
            if shared and not row.shared:
                raise fw.FirewallRuleSharingConflict(firewall_rule_id=rule_id,
                                                     firewall_policy_id=policy_id)
            if not row.shared and row.project_id != project_id:
                raise fw.FirewallRuleConflict(firewall_rule_id=rule_id,
                                              project_id=row.project_id)

    def create_firewall_policy(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        self._not_reserved_policy_name(data.get("name"))

        def make(conn: Connection, item: dict[str, Any]) -> dict[str, Any]:
            policy_id = store.insert_policy_row(conn, item)
            rule_ids = item.get("firewall_rules") or []
            self._checked_rules(conn, ctx, rule_ids, policy_id, item["project_id"],
                                item.get("shared", False))
            store.set_policy_rules(conn, policy_id, rule_ids)
            return store.policy(conn, ADMIN, policy_id)

        return self.db.write(lambda conn: self.env.quota.create(
            conn, "firewall_policy", data, make))

    def update_firewall_policy(self, ctx: Context, policy_id: str, data: dict[str, Any],
                               if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection, changed: set[str]) -> dict[str, Any]:
            row = store.policy_row(conn, ctx, policy_id, for_update=True)
            if row.name in (fw.DEFAULT_INGRESS_POLICY, fw.DEFAULT_EGRESS_POLICY):
                raise fw.FirewallDefaultObjectUpdateRestricted(
                    resource_type="Firewall Policy", resource_id=policy_id)
            self._not_reserved_policy_name(data.get("name"))
            groups = store.groups_using_policies(conn, [policy_id])
            self._not_pending(groups)
            shared = data.get("shared", row.shared)
            if not shared and any(g.project_id != row.project_id for g in groups):
                raise fw.FirewallPolicyInUse(firewall_policy_id=policy_id)
            rule_ids = data.get("firewall_rules")
            if rule_ids is None and shared and not row.shared:
                rule_ids_now = store.rules_of_policies(conn, [policy_id]).get(policy_id, [])
                for rule_id in rule_ids_now:
                    if not store.rule_row(conn, ADMIN, rule_id).shared:
                        raise fw.FirewallPolicySharingConflict(
                            firewall_policy_id=policy_id, firewall_rule_id=rule_id)
            if rule_ids is not None:
                self._checked_rules(conn, ctx, rule_ids, policy_id, row.project_id, shared)
                store.set_policy_rules(conn, policy_id, rule_ids)
            values: dict[str, Any] = {k: data[k] for k in (
                "name", "description", "shared", "audited")
                      if k in data}
            values.setdefault("audited", False)
            bump(conn, store.FP, policy_id, if_revision, values)
            if rule_ids is not None:
                self._enforced_anew(conn, [policy_id], changed)
            return store.policy(conn, ADMIN, policy_id)

        return self._write(work)

    def delete_firewall_policy(self, ctx: Context, policy_id: str,
                               if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            store.policy_row(conn, ctx, policy_id, for_update=True)
            if store.groups_using_policies(conn, [policy_id]):
                raise fw.FirewallPolicyInUse(firewall_policy_id=policy_id)
            check_revision(conn, store.FP, policy_id, if_revision)
            store.set_policy_rules(conn, policy_id, [])
            conn.execute(delete(store.FP).where(store.FP.c.id == policy_id))

        self.db.write(work)

    def insert_rule(self, ctx: Context, policy_id: str, body: dict[str, Any]
                    ) -> dict[str, Any]:
        info = _rule_info(body)
        rule_id = info["firewall_rule_id"]

        def work(conn: Connection, changed: set[str]) -> dict[str, Any]:
            row = store.policy_row(conn, ctx, policy_id, for_update=True)
            ordered = store.rules_of_policies(conn, [policy_id]).get(policy_id, [])
            if rule_id in ordered:
                raise fw.FirewallRuleAlreadyAssociated(firewall_rule_id=rule_id,
                                                       firewall_policy_id=policy_id)
            self._checked_rules(conn, ctx, [rule_id], policy_id, row.project_id, row.shared)
            self._not_pending(store.groups_using_policies(conn, [policy_id]))
            reference, before = info.get("insert_before"), True
            if not reference:
                reference, before = info.get("insert_after"), False
            if reference:
                if reference not in ordered:
                    raise fw.FirewallRuleNotAssociatedWithPolicy(
                        firewall_rule_id=reference, firewall_policy_id=policy_id)
                at = ordered.index(reference) + (0 if before else 1)
            else:
                at = 0  # no reference: at the top, as neutron-fwaas does
            ordered.insert(at, rule_id)
            return self._reorder(conn, policy_id, ordered, changed)

        return self._write(work)

    def remove_rule(self, ctx: Context, policy_id: str, body: dict[str, Any]
                    ) -> dict[str, Any]:
        rule_id = _rule_info(body)["firewall_rule_id"]

        def work(conn: Connection, changed: set[str]) -> dict[str, Any]:
            store.policy_row(conn, ctx, policy_id, for_update=True)
            store.rule_row(conn, ctx, rule_id)
            ordered = store.rules_of_policies(conn, [policy_id]).get(policy_id, [])
            if rule_id not in ordered:
                raise fw.FirewallRuleNotAssociatedWithPolicy(firewall_rule_id=rule_id,
                                                             firewall_policy_id=policy_id)
            self._not_pending(store.groups_using_policies(conn, [policy_id]))
            ordered.remove(rule_id)
            return self._reorder(conn, policy_id, ordered, changed)

        return self._write(work)

    def _reorder(self, conn: Connection, policy_id: str, ordered: list[str],
                 changed: set[str]) -> dict[str, Any]:
        store.set_policy_rules(conn, policy_id, ordered)
        bump(conn, store.FP, policy_id, values={"audited": False})
        self._enforced_anew(conn, [policy_id], changed)
        return store.policy(conn, ADMIN, policy_id)

    @staticmethod
    def _enforced_anew(conn: Connection, policy_ids: Iterable[str], changed: set[str]
                       ) -> None:
        """The groups enforcing these policies on ports wait for their agents."""
        for group in store.groups_using_policies(conn, policy_ids):
            if store.ports_of_groups(conn, [group.id]):
                store.set_status(conn, group.id, fw.PENDING_UPDATE)
                changed.add(group.id)

    @staticmethod
    def _not_pending(groups: Iterable[Any]) -> None:
        for group in groups:
            if group.status in fw.PENDING:
                raise fw.FirewallGroupInPendingState(firewall_id=group.id,
                                                     pending_state=group.status)

    # --- groups ---------------------------------------------------------------------

    def get_firewall_group(self, ctx: Context, group_id: str) -> dict[str, Any]:
        return self._read(lambda conn: store.group(conn, ctx, group_id))

    def get_firewall_groups(self, ctx: Context, query: CollectionQuery
                            ) -> list[dict[str, Any]]:
        self._ensure_default_group(ctx, query)
        return self._read(lambda conn: store.groups(conn, ctx, query))

    def _checked_policies(self, conn: Connection, ctx: Context, data: dict[str, Any],
                          project_id: str) -> None:
        for key in ("ingress_firewall_policy_id", "egress_firewall_policy_id"):
            if data.get(key):
                row = store.policy_row(conn, ctx, data[key])
                if row.project_id != project_id and not row.shared:
                    raise fw.FirewallPolicyConflict(firewall_policy_id=data[key])

    def _checked_ports(self, conn: Connection, ctx: Context, port_ids: Sequence[str],
                       group_id: str | None) -> None:
        """Router interface ports, in no other group."""
        for port_id in port_ids:
            owner = self.env.core.port_row_in(conn, ctx, port_id).device_owner or ""
            if owner.startswith("compute:"):
                raise fw.FirewallGroupPortNotSupported(port_id=port_id,
                                                       driver_name=DRIVER_NAME)
            if owner not in ROUTER_PORT_OWNERS:
                raise fw.FirewallGroupPortInvalid(port_id=port_id)
        taken = sorted(p for p, g in store.groups_of_ports(conn, port_ids).items()
                       if g != group_id)
        if taken:
            raise fw.FirewallGroupPortInUse(port_ids=taken)

    @staticmethod
    def _status(ports: Sequence[str], data: dict[str, Any], pending: str) -> str:
        """INACTIVE with nothing to enforce, else ``pending`` until an agent says."""
        if not ports or not (data.get("ingress_firewall_policy_id")
                             or data.get("egress_firewall_policy_id")):
            return fw.INACTIVE
        return pending

    def create_firewall_group(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        if data.get("name") == fw.DEFAULT_GROUP:
            raise fw.FirewallDefaultParameterExists(resource_type="Firewall Group",
                                                    name=data["name"])
        self._make_default_group(data["project_id"])

        def make(conn: Connection, item: dict[str, Any], changed: set[str]
                 ) -> dict[str, Any]:
            ports = item.get("ports") or []
            self._checked_policies(conn, ctx, item, item["project_id"])
            group_id = store.insert_group_row(
                conn, item, self._status(ports, item, fw.PENDING_CREATE))
            self._checked_ports(conn, ctx, ports, group_id)
            store.set_group_ports(conn, group_id, ports)
            changed.add(group_id)
            return store.group(conn, ADMIN, group_id)

        return self._write(lambda conn, changed: self.env.quota.create(
            conn, "firewall_group", data, lambda c, item: make(c, item, changed)))

    def update_firewall_group(self, ctx: Context, group_id: str, data: dict[str, Any],
                              if_revision: int | None = None) -> dict[str, Any]:
        if data.get("name") == fw.DEFAULT_GROUP:
            raise fw.FirewallDefaultParameterExists(resource_type="Firewall Group",
                                                    name=data["name"])

        def work(conn: Connection, changed: set[str]) -> dict[str, Any]:
            row = store.group_row(conn, ctx, group_id, for_update=True)
            self._not_pending([row])
            if row.name == fw.DEFAULT_GROUP:
                fixed = ["name"] if ctx.is_admin else [
                    "name", "description", "admin_state_up", "ingress_firewall_policy_id",
                    "egress_firewall_policy_id"]
                if any(key in data for key in fixed):
                    raise fw.FirewallDefaultObjectUpdateRestricted(
                        resource_type="Firewall Group", resource_id=group_id)
            self._checked_policies(conn, ctx, data, row.project_id)
            before = store.ports_of_groups(conn, [group_id]).get(group_id, [])
            ports = data.get("ports", before)
            if "ports" in data:
                self._checked_ports(conn, ctx, ports, group_id)
            merged = {**store.group_view(row, before), **data}
            affects = (set(ports) != set(before) or any(
                merged[key] != getattr(row, key) for key in (
                    "ingress_firewall_policy_id", "egress_firewall_policy_id",
                    "admin_state_up")))
            values: dict[str, Any] = {k: data[k] for k in (
                "name", "description", "admin_state_up", "shared",
                "ingress_firewall_policy_id", "egress_firewall_policy_id") if k in data}
            if affects:
                values["status"] = self._status(ports, merged, fw.PENDING_UPDATE)
                changed.add(group_id)  # the routers of the ports it had hear too
                changed_routers_before[:] = self._routers_of_groups(conn, [group_id])
            bump(conn, store.FG, group_id, if_revision, values)
            if "ports" in data:
                store.set_group_ports(conn, group_id, ports)
            return store.group(conn, ADMIN, group_id)

        changed_routers_before: list[str] = []
        updated = self._write(work)
        agents_notify.routers_updated(self.db, self.notifier, changed_routers_before)
        return updated

    def delete_firewall_group(self, ctx: Context, group_id: str,
                              if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            row = store.group_row(conn, ctx, group_id, for_update=True)
            if store.ports_of_groups(conn, [group_id]):
                raise fw.FirewallGroupInUse(firewall_id=group_id)
            check_revision(conn, store.FG, group_id, if_revision)
            logs.delete_of_group(conn, group_id)
            conn.execute(delete(store.FG).where(store.FG.c.id == group_id))
            if row.name == fw.DEFAULT_GROUP and store.default_group_id(
                    conn, row.project_id) in (group_id, None):
                if not ctx.is_admin:
                    raise fw.FirewallGroupCannotRemoveDefault()
                self._drop_default_policies(conn, row)

        self.db.write(work)

    @staticmethod
    def _drop_default_policies(conn: Connection, row: Any) -> None:
        """The default group's policies, and their rules unless used elsewhere."""
        for policy_id in (row.ingress_firewall_policy_id, row.egress_firewall_policy_id):
            if policy_id is None or store.groups_using_policies(conn, [policy_id]):
                continue
            rule_ids = store.rules_of_policies(conn, [policy_id]).get(policy_id, [])
            store.set_policy_rules(conn, policy_id, [])
            conn.execute(delete(store.FP).where(store.FP.c.id == policy_id))
            used = store.policies_of_rules(conn, rule_ids)
            unused = [rule_id for rule_id in rule_ids if rule_id not in used]
            if unused:
                conn.execute(delete(store.FR).where(store.FR.c.id.in_(unused)))

    # --- the default group ------------------------------------------------------------

    def _ensure_default_group(self, ctx: Context, query: CollectionQuery) -> None:
        """Looking makes a project's default group, as in neutron-fwaas: the
        caller's project, or for an admin the one filtered on (if it can be one)."""
        wanted = query.filters.get("project_id") or query.filters.get("tenant_id")
        project_id = ctx.project_id
        if ctx.is_admin and wanted and len(wanted) == 1:
            project_id = wanted[0]
        if project_id and isinstance(project_id, str) and v.project_id(project_id) is None:
            self._make_default_group(project_id)

    def _make_default_group(self, project_id: str) -> None:
        if self._read(lambda conn: store.default_group_id(conn, project_id)) is not None:
            return
        # two made at once: the second's insert fails and, retried, finds the first
        self.db.write(lambda conn: self._default_group_in(conn, project_id))

    def _default_group_in(self, conn: Connection, project_id: str) -> None:
        if store.default_group_id(conn, project_id) is not None:
            return
        d = self.defaults
        made: dict[str, list[str]] = {"ingress": [], "egress": []}
        for direction, action in (("ingress", d.ingress_action), ("egress", d.egress_action)):
            for version in (4, 6):
                made[direction].append(store.insert_rule_row(conn, {
                    "project_id": project_id, "name": f"default {direction} ipv{version}",
                    "description": f"default {direction} rule for IPv{version}",
                    "shared": d.shared, "ip_version": version, "action": action,
                    "enabled": d.enabled})["id"])
        policies = {}
        for direction, name in (("ingress", fw.DEFAULT_INGRESS_POLICY),
                                ("egress", fw.DEFAULT_EGRESS_POLICY)):
            policies[direction] = store.insert_policy_row(conn, {
                "project_id": project_id, "name": name,
                "description": f"{direction.capitalize()} firewall policy"})
            store.set_policy_rules(conn, policies[direction], made[direction])
        group_id = store.insert_group_row(conn, {
            "project_id": project_id, "name": fw.DEFAULT_GROUP,
            "description": "Default firewall group",
            "ingress_firewall_policy_id": policies["ingress"],
            "egress_firewall_policy_id": policies["egress"]}, fw.INACTIVE)
        conn.execute(store.DFG.insert().values(project_id=project_id,
                                               firewall_group_id=group_id))


class FirewallRpcCallback:
    """What the L3 agents' firewall extension calls on ``q-firewall-plugin``."""

    rpc_version = "1.0"

    def __init__(self, plugin: FirewallPlugin):
        self.db = plugin.db

    def set_firewall_group_status(self, context: dict, fwg_id: str, status: str,
                                  host: str | None = None, **_: Any) -> bool:
        """ACTIVE, DOWN or INACTIVE as the agent says, anything else ERROR; a
        group being deleted keeps its status. True if set and not ERROR."""
        wanted = status if status in (fw.ACTIVE, fw.DOWN, fw.INACTIVE) else fw.ERROR
        done = self.db.write(lambda conn: store.set_status(conn, fwg_id, wanted))
        if done:
            LOG.debug("firewall group %s is %s on %s", fwg_id, wanted, host)
        return done and wanted != fw.ERROR
