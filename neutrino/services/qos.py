"""The ``qos`` service plugin (``service_plugins = qos``): QoS policies, their
rules (under their policy and by their own id), and the rule types that the
loaded ML2 mechanism drivers support, with Neutron's checks and errors.

A policy is its project's, seen by its project, by every project when
``shared`` (a '*' RBAC entry) and by those an RBAC entry (``object_type:
qos_policy``) shares it with. A policy holds at most one rule of a kind per
direction (one DSCP marking rule): another is QoSRulesConflict. A minimum
rate above the limit of the same direction, or a limit below the minimum, is
QoSRuleParameterConflict; so is mixing an ``any``-direction minimum packet
rate rule with a directed one.

The agents' ``qos`` extensions enforce the rules: they ask for the rules of
the policies they use (``get_policies``, ``neutrino.rpc.contracts.qos``) and
hear when a policy's rules change (``policies_updated``, after the commit). Networks
and ports take a ``qos_policy_id`` through the ``qos`` ML2 extension driver
(``neutrino.services.qos_extension_driver``), floating IPs through the L3
plugin's hooks (``qos-fip``, when the router plugin is loaded); a policy
bound to any is in use and is not deleted (QosPolicyInUse).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, delete, false, or_, select, update
from sqlalchemy.engine import Connection, Row
from sqlalchemy.sql import ColumnElement

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models, rbac, tags
from neutrino.db.query import CollectionQuery, api_columns, find_row, read_page, select_page
from neutrino.db.util import bump, check_revision, now, timestamp
from neutrino.definitions import qos as qdef
from neutrino.definitions.validators import new_uuid
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc.contracts import qos as contract
from neutrino.rpc.notifier import Notifier
from neutrino.services.qos_extension_driver import check_usable

Q = models.qos_policies
D = models.qos_default_policies
TYPE = "qos_policy"  # its RBAC entries' object_type
ROUTERS = "L3_ROUTER_NAT"  # the plugin type serving floating IPs
FB = models.qos_fip_policy_bindings
PB, NB, P = models.qos_port_policy_bindings, models.qos_network_policy_bindings, models.ports
GB = models.qos_router_gw_policy_bindings
COLUMNS = api_columns(Q, "shared")
TABLES: dict[str, Any] = {kind.rule_type: models.metadata.tables[kind.table]
                          for kind in qdef.RULE_KINDS.values()}


# --- rows and views -----------------------------------------------------------------------

def visible(ctx: Context) -> list[ColumnElement]:
    """Every policy for an admin; the project's own and those shared with it
    (with every project, ``shared``, or with it by an RBAC entry) for others."""
    return rbac.visible(Q, TYPE, ctx)


def policy_row(conn: Connection, ctx: Context, policy_id: str,
               for_update: bool = False) -> Row:
    return find_row(conn, Q, policy_id, visible(ctx),
                    lambda: qdef.QosPolicyNotFound(policy_id=policy_id), for_update)


def rule_view(kind: qdef.RuleKind, row: Any) -> dict[str, Any]:
    return {"id": row.id, **{name: getattr(row, name) for name in kind.params}}


def rules_of(conn: Connection, policy_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """policy id -> its rules as the policy's view shows them (with type and policy)."""
    found: dict[str, list[dict[str, Any]]] = {}
    if not policy_ids:
        return found
    for rule_type, table in TABLES.items():
        kind = qdef.RULE_KINDS[rule_type]
        for row in conn.execute(select(table).where(table.c.qos_policy_id.in_(policy_ids))
                                .order_by(table.c.id)):
            found.setdefault(row.qos_policy_id, []).append(
                {**rule_view(kind, row), "qos_policy_id": row.qos_policy_id,
                 "type": rule_type})
    return found


def policy_view(row: Any, rules: list[dict[str, Any]], tag_list: list[str], is_default: bool,
                shared_with_caller: bool = False) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "description": row.description,
            "project_id": row.project_id, "tenant_id": row.project_id,
            "shared": bool(row.shared) or shared_with_caller, "is_default": is_default,
            "rules": rules, "tags": tag_list,
            "created_at": timestamp(row.created_at), "updated_at": timestamp(row.updated_at),
            "revision_number": row.revision_number}


def policy_views(conn: Connection, ctx: Context, rows: list[Row]) -> list[dict[str, Any]]:
    """The policies as ``ctx`` sees them: ``shared`` when shared with every project
    or with the caller's (as Neutron shows it)."""
    ids = [r.id for r in rows]
    mine = rbac.shared_with(conn, TYPE, ids, ctx.project_id)
    rules = rules_of(conn, ids)
    tag_map = tags.load(conn, ids)
    defaults = set(conn.execute(select(D.c.qos_policy_id).where(
        D.c.qos_policy_id.in_(ids))).scalars()) if ids else set()
    return [policy_view(r, rules.get(r.id, []), tag_map.get(r.id, []), r.id in defaults,
                        r.id in mine) for r in rows]


def set_default(conn: Connection, row: Any, wanted: bool) -> None:
    """The policy becomes its project's default (another one is
    QoSPolicyDefaultAlreadyExists), or stops being it."""
    current = conn.execute(select(D.c.qos_policy_id).where(
        D.c.project_id == row.project_id)).scalar()
    if wanted and current is None:
        conn.execute(D.insert().values(project_id=row.project_id, qos_policy_id=row.id))
    elif wanted and current != row.id:
        raise qdef.QoSPolicyDefaultAlreadyExists(project_id=row.project_id)
    elif not wanted and current == row.id:
        conn.execute(delete(D).where(D.c.project_id == row.project_id))


def _policy_rules(conn: Connection, policy_id: str) -> list[tuple[str, Row]]:
    """(rule type, row) of every rule of a policy."""
    return [(rule_type, row) for rule_type, table in TABLES.items()
            for row in conn.execute(select(table).where(table.c.qos_policy_id == policy_id))]


def check_conflicts(conn: Connection, kind: qdef.RuleKind, policy_id: str,
                    values: dict[str, Any], rule_id: str | None) -> None:
    """Neutron's checks of a rule (new, or ``rule_id`` changed to ``values``)
    against the other rules of its policy."""
    direction = values.get("direction")
    for rule_type, other in _policy_rules(conn, policy_id):
        if other.id == rule_id:
            continue
        other_direction = getattr(other, "direction", None)
        if rule_type == kind.rule_type and (not kind.directed or other_direction == direction):
            raise qdef.QoSRulesConflict(new_rule_type=kind.rule_type, rule_id=other.id,
                                        policy_id=policy_id)
        if other_direction != direction:
            if kind.rule_type == rule_type == qdef.MINIMUM_PACKET_RATE \
                    and qdef.ANY in (direction, other_direction):
                raise qdef.QoSRuleParameterConflict(
                    rule_value=direction, policy_id=policy_id, existing_rule=rule_type,
                    existing_value=other_direction)
            continue
        if rule_type == qdef.MINIMUM_BANDWIDTH and "max_kbps" in values \
                and other.min_kbps > values["max_kbps"]:
            raise qdef.QoSRuleParameterConflict(
                rule_value=values["max_kbps"], policy_id=policy_id, existing_rule=rule_type,
                existing_value=other.min_kbps)
        if rule_type == qdef.BANDWIDTH_LIMIT and "min_kbps" in values \
                and other.max_kbps < values["min_kbps"]:
            raise qdef.QoSRuleParameterConflict(
                rule_value=values["min_kbps"], policy_id=policy_id, existing_rule=rule_type,
                existing_value=other.max_kbps)


#: the vif types of ports no driver has bound (yet)
UNBOUND = (None, "", "unbound", "binding_failed")


def rule_types_of(conn: Connection, policy_id: str) -> list[str]:
    return sorted({rule_type for rule_type, _ in _policy_rules(conn, policy_id)})


def following(policy_id: str) -> ColumnElement:
    """The ports that follow a policy: their own, or their network's when they
    have none of their own (as Neutron counts them, its services' ports too)."""
    own = select(PB.c.port_id)
    return or_(P.c.id.in_(own.where(PB.c.policy_id == policy_id)),
               and_(P.c.network_id.in_(select(NB.c.network_id).where(
                   NB.c.policy_id == policy_id)), P.c.id.not_in(own)))


def bound_ports(conn: Connection, which: ColumnElement) -> list[tuple[str, str | None]]:
    """(port id, vif type of its active binding) of the ports ``which`` names
    that a driver has bound."""
    B = models.port_bindings
    return [(port_id, vif_type) for port_id, vif_type in conn.execute(
        select(P.c.id, B.c.vif_type).join(B, B.c.port_id == P.c.id)
        .where(which, B.c.status == "ACTIVE", B.c.vif_type.not_in(UNBOUND[2:]))
        .order_by(P.c.id))]


#: what a policy may be bound to, as QosPolicyInUse names it, and the column naming it
BOUND_TO = (("network", models.qos_network_policy_bindings.c.network_id),
            ("port", models.qos_port_policy_bindings.c.port_id),
            ("floatingip", models.qos_fip_policy_bindings.c.fip_id),
            ("router", models.qos_router_gw_policy_bindings.c.router_id))


def check_unused(conn: Connection, policy_id: str) -> None:
    """QosPolicyInUse if anything is bound to the policy."""
    for object_type, column in BOUND_TO:
        found = conn.execute(select(column).where(
            column.table.c.policy_id == policy_id).limit(1)).scalar()
        if found is not None:
            raise qdef.QosPolicyInUse(policy_id=policy_id, object_type=object_type,
                                      object_id=found)


def find_rule(conn: Connection, kind: qdef.RuleKind, rule_id: str, policy_id: str | None,
              for_update: bool = False) -> Row:
    """A rule of ``kind`` (of ``policy_id`` when given), else QosRuleNotFound."""
    table = TABLES[kind.rule_type]
    where = [] if policy_id is None else [table.c.qos_policy_id == policy_id]
    return find_row(conn, table, rule_id, where, lambda: qdef.QosRuleNotFound(
        rule_id=rule_id, policy_id=policy_id or ""), for_update)


def agent_rules(conn: Connection, policy_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """policy id -> its rules as the agents take them (type and parameters),
    for the policies of ``policy_ids`` that exist."""
    present = list(conn.execute(select(Q.c.id).where(Q.c.id.in_(policy_ids)))
                   .scalars()) if policy_ids else []
    rules = rules_of(conn, present)
    return {policy_id: [{"type": rule["type"], **{
        k: v for k, v in rule.items() if k not in ("id", "qos_policy_id", "type")}}
        for rule in rules.get(policy_id, [])] for policy_id in present}


class QosRpcCallbacks:
    """What the plugin serves to the agents' extensions on ``q-qos-plugin``."""

    rpc_version = contract.VERSION

    def __init__(self, plugin: QosPlugin):
        self._plugin = plugin

    def get_policies(self, context: dict[str, Any], policy_ids: list[str], **kwargs: Any
                     ) -> dict[str, list[dict[str, Any]]]:
        if not isinstance(policy_ids, list) or not all(isinstance(p, str) for p in policy_ids):
            raise exc.InvalidInput(error_message="policy_ids must be a list of policy ids")

        return self._plugin._read(lambda conn: agent_rules(conn, policy_ids))


# --- the plugin ---------------------------------------------------------------------------

class QosPlugin(Plugin):
    supported_extension_aliases = tuple(e.alias for e in qdef.EXTENSIONS)
    plugin_type = "QOS"

    def __init__(self, env: Environment):
        super().__init__(env)
        for kind in qdef.RULE_KINDS.values():
            self._add_rule_methods(kind)
        self.notifier = contract.QosAgentNotifier(Notifier(env.bus))
        env.hooks.before_port_write.append(self._port_written)
        env.hooks.on_network_write.append(self._network_written)
        if ROUTERS in env.plugin_types:  # floating IPs' and gateways' qos_policy_id
            self.supported_extension_aliases += (qdef.FIP.alias, qdef.GATEWAY_IP.alias)
            hooks = env.hooks
            hooks.on_floatingip_write.append(self._fip_written)
            hooks.extend_floatingips.append(self._extend_fips)
            hooks.on_router_gateway_write.append(self._gateway_written)
            hooks.before_router_gateway_remove.append(self._gateway_removed)
            hooks.extend_routers.append(self._extend_routers)
            hooks.extend_router_sync.append(self._extend_router_sync)

    def taggable_tables(self) -> dict[str, Any]:
        return {qdef.POLICY.collection: Q}

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        return {contract.TOPIC: [QosRpcCallbacks(self)]}

    # --- policies -----------------------------------------------------------------------

    def create_policy(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            policy_id, at = new_uuid(), now()
            conn.execute(Q.insert().values(
                id=policy_id, project_id=data.get("project_id"), name=data.get("name", ""),
                description=data.get("description", ""), shared=False,
                created_at=at, updated_at=at, revision_number=0))
            row = policy_row(conn, Context.admin(), policy_id)
            if data.get("shared"):
                rbac.set_shared(conn, TYPE, row, True)
            if data.get("is_default"):
                set_default(conn, row, True)
            row = policy_row(conn, Context.admin(), policy_id)
            return policy_views(conn, ctx, [row])[0]

        return self.db.write(work)

    def get_policy(self, ctx: Context, policy_id: str) -> dict[str, Any]:
        return self._read(lambda conn: policy_views(
            conn, ctx, [policy_row(conn, ctx, policy_id)])[0])

    def get_policies(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        where = visible(ctx)
        defaults = query.pop_filter("is_default")
        if defaults is not None:
            parts = []
            if True in defaults:
                parts.append(Q.c.id.in_(select(D.c.qos_policy_id)))
            if False in defaults:
                parts.append(Q.c.id.not_in(select(D.c.qos_policy_id)))
            where.append(or_(*parts) if parts else false())

        def work(conn: Connection) -> list[dict[str, Any]]:
            rows, _ = read_page(conn, Q, COLUMNS, query, where)
            return policy_views(conn, ctx, rows)

        return self._read(work)

    def update_policy(self, ctx: Context, policy_id: str, data: dict[str, Any],
                      if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            row = policy_row(conn, ctx, policy_id, for_update=True)
            values: dict[str, Any] = {
                k: data[k] for k in ("name", "description") if k in data}
            if "shared" in data:
                rbac.set_shared(conn, TYPE, row, bool(data["shared"]))
            if "is_default" in data:
                set_default(conn, row, bool(data["is_default"]))
            bump(conn, Q, row.id, if_revision, values)
            return policy_views(conn, ctx, [policy_row(conn, ctx, row.id)])[0]

        view = self.db.write(work)
        self.notifier.policies_updated([view["id"]])
        return view

    def delete_policy(self, ctx: Context, policy_id: str,
                      if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            row = policy_row(conn, ctx, policy_id, for_update=True)
            check_revision(conn, Q, row.id, if_revision)
            check_unused(conn, row.id)
            tags.remove(conn, row.id)
            conn.execute(delete(D).where(D.c.qos_policy_id == row.id))
            rbac.forget(conn, TYPE, row.id)
            conn.execute(delete(Q).where(Q.c.id == row.id))

        self.db.write(work)

    # --- floating IPs (through the L3 plugin's hooks) ------------------------------------

    @staticmethod
    def _fip_written(conn: Connection, fip_id: str, data: dict[str, Any], created: bool
                     ) -> None:
        """Bind the policy given (the floating IP's project's or shared with it,
        else QosPolicyNotFound), or unbind with None."""
        if qdef.POLICY_ID not in data or (created and data[qdef.POLICY_ID] is None):
            return
        policy_id = data[qdef.POLICY_ID]
        if not created:
            conn.execute(delete(FB).where(FB.c.fip_id == fip_id))
        if policy_id is None:
            return
        project_id = conn.execute(select(models.floatingips.c.project_id).where(
            models.floatingips.c.id == fip_id)).scalar()
        check_usable(conn, policy_id, project_id)
        conn.execute(FB.insert().values(fip_id=fip_id, policy_id=policy_id))

    @staticmethod
    def _extend_fips(conn: Connection, views: list[dict[str, Any]]) -> None:
        ids = [view["id"] for view in views]
        bound = dict(conn.execute(select(FB.c.fip_id, FB.c.policy_id).where(
            FB.c.fip_id.in_(ids))).all()) if ids else {}
        for view in views:
            view[qdef.POLICY_ID] = bound.get(view["id"])

    # --- what the bound ports' drivers support (QosRuleNotSupported) ------------------

    def _supports(self, vif_type: str | None, rule_type: str) -> bool:
        """Whether the driver that bound a port (by its vif type) enforces
        ``rule_type``; for an unbound port, whether any driver does (Neutron's
        answer: the port may yet be bound by it)."""
        by_vif_type = self.env.core.qos_rule_types_by_vif_type()
        if vif_type in UNBOUND:
            return any(rule_type in types for types in by_vif_type.values())
        return rule_type in by_vif_type.get(vif_type or "", frozenset())

    def _check_ports(self, rule_types: list[str], ports: list[tuple[str, str | None]]
                     ) -> None:
        """QosRuleNotSupported for the first (port id, vif type) whose driver
        cannot enforce one of ``rule_types``."""
        for port_id, vif_type in ports:
            for rule_type in rule_types:
                if not self._supports(vif_type, rule_type):
                    raise qdef.QosRuleNotSupported(rule_type=rule_type, port_id=port_id)

    def _port_written(self, conn: Connection, port: dict[str, Any], data: dict[str, Any]
                      ) -> None:
        policy_id = data.get(qdef.POLICY_ID)
        if policy_id:
            self._check_ports(rule_types_of(conn, policy_id),
                              [(port["id"], port.get("binding:vif_type"))])

    def _network_written(self, conn: Connection, network_id: str, data: dict[str, Any],
                         created: bool) -> None:
        """A policy given to a network: each rule enforced by some driver
        (QosRuleNotSupportedByNetwork) and by the drivers of the network's
        bound ports that follow the network's policy (QosRuleNotSupported)."""
        policy_id = data.get(qdef.POLICY_ID)
        if not policy_id:
            return
        types = rule_types_of(conn, policy_id)
        for rule_type in types:
            if not self._supports(None, rule_type):
                raise qdef.QosRuleNotSupportedByNetwork(rule_type=rule_type,
                                                        network_id=network_id)
        if not created:
            self._check_ports(types, bound_ports(conn, P.c.network_id == network_id))

    # --- router gateways (qos-gateway-ip) and the L3 agents' data ---------------------

    @staticmethod
    def _gateway_written(conn: Connection, router_id: str, project_id: str | None,
                         gateway: dict[str, Any] | None) -> None:
        """Bind the policy given with the gateway (the router's project's or
        shared with it), or unbind with None; a gateway given without the key
        keeps its policy."""
        if gateway is not None and qdef.POLICY_ID not in gateway:
            return
        policy_id = gateway.get(qdef.POLICY_ID) if gateway else None
        conn.execute(delete(GB).where(GB.c.router_id == router_id))
        if policy_id is not None:
            check_usable(conn, policy_id, project_id)
            conn.execute(GB.insert().values(router_id=router_id, policy_id=policy_id))

    @staticmethod
    def _gateway_removed(conn: Connection, router_id: str) -> None:
        conn.execute(delete(GB).where(GB.c.router_id == router_id))

    @staticmethod
    def _extend_routers(conn: Connection, views: list[dict[str, Any]]) -> None:
        with_gateway = [view for view in views if view.get("external_gateway_info")]
        ids = [view["id"] for view in with_gateway]
        bound = dict(conn.execute(select(GB.c.router_id, GB.c.policy_id).where(
            GB.c.router_id.in_(ids))).all()) if ids else {}
        for view in with_gateway:
            view["external_gateway_info"][qdef.POLICY_ID] = bound.get(view["id"])

    def _extend_router_sync(self, conn: Connection, views: list[dict[str, Any]]) -> None:
        """What the L3 agents' ``fip_qos`` and ``gateway_ip_qos`` extensions
        enforce: each floating IP's and gateway's ``qos_policy_id``, and the
        rules of those policies (``_qos_policies``), read for the whole chunk."""
        self._extend_routers(conn, views)
        fips = [fip for view in views for fip in view.get("_floatingips", ())]
        self._extend_fips(conn, fips)
        def used_by(view: dict[str, Any]) -> set[str]:
            found = {fip[qdef.POLICY_ID] for fip in view.get("_floatingips", ())}
            found.add((view.get("external_gateway_info") or {}).get(qdef.POLICY_ID))
            return {policy_id for policy_id in found if policy_id}

        rules = agent_rules(conn, sorted(set().union(*map(used_by, views))))
        for view in views:
            view["_qos_policies"] = {p: rules[p] for p in sorted(used_by(view)) if p in rules}

    # --- rules, under their policy and by their own id ----------------------------------

    def _add_rule_methods(self, kind: qdef.RuleKind) -> None:
        """The generic controller's methods for one kind of rule:
        ``<verb>_policy_<kind>_rule[s]`` and ``<verb>_alias_<kind>_rule[s]``."""
        name = kind.name
        setattr(self, f"create_policy_{name}",
                lambda ctx, policy_id, data: self.create_rule(ctx, kind, policy_id, data))
        setattr(self, f"get_policy_{name}",
                lambda ctx, policy_id, rule_id: self.get_rule(ctx, kind, rule_id, policy_id))
        setattr(self, f"get_policy_{name}s",
                lambda ctx, policy_id, query: self.get_rules(ctx, kind, policy_id, query))
        setattr(self, f"update_policy_{name}",
                lambda ctx, policy_id, rule_id, data, if_revision=None: self.update_rule(
                    ctx, kind, rule_id, policy_id, data))
        setattr(self, f"delete_policy_{name}",
                lambda ctx, policy_id, rule_id, if_revision=None: self.delete_rule(
                    ctx, kind, rule_id, policy_id))
        setattr(self, f"get_alias_{name}",
                lambda ctx, rule_id: self.get_rule(ctx, kind, rule_id, None))
        setattr(self, f"get_alias_{name}s", self._no_alias_list)
        setattr(self, f"update_alias_{name}",
                lambda ctx, rule_id, data, if_revision=None: self.update_rule(
                    ctx, kind, rule_id, None, data))
        setattr(self, f"delete_alias_{name}",
                lambda ctx, rule_id, if_revision=None: self.delete_rule(
                    ctx, kind, rule_id, None))

    @staticmethod
    def _no_alias_list(ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        raise exc.HTTPNotFound()  # the aliases name one rule each; Neutron lists none

    def _rule_of(self, conn: Connection, ctx: Context, kind: qdef.RuleKind, rule_id: str,
                 policy_id: str | None, for_update: bool = False) -> tuple[Row, Row]:
        """(policy, rule), the policy visible to the caller, else a 404."""
        if policy_id is not None:
            policy = policy_row(conn, ctx, policy_id, for_update)
            return policy, find_rule(conn, kind, rule_id, policy.id, for_update)
        rule = find_rule(conn, kind, rule_id, None, for_update)
        try:
            policy = policy_row(conn, ctx, rule.qos_policy_id, for_update)
        except qdef.QosPolicyNotFound:
            raise qdef.QosRuleNotFound(rule_id=rule_id, policy_id="") from None
        return policy, rule

    def _view(self, policy: Row, kind: qdef.RuleKind, rule: Row, alias: bool
              ) -> dict[str, Any]:
        view = rule_view(kind, rule)
        if alias:
            view["tenant_id"] = policy.project_id
        return view

    def create_rule(self, ctx: Context, kind: qdef.RuleKind, policy_id: str,
                    data: dict[str, Any]) -> dict[str, Any]:
        table = TABLES[kind.rule_type]
        values = {name: data[name] for name in kind.params if name in data}

        def work(conn: Connection) -> dict[str, Any]:
            policy = policy_row(conn, ctx, policy_id, for_update=True)
            check_conflicts(conn, kind, policy.id, values, None)
            self._check_ports([kind.rule_type], bound_ports(conn, following(policy.id)))
            rule_id = new_uuid()
            conn.execute(table.insert().values(id=rule_id, qos_policy_id=policy.id, **values))
            bump(conn, Q, policy.id)
            return rule_view(kind, find_rule(conn, kind, rule_id, policy.id))

        view = self.db.write(work)
        self.notifier.policies_updated([policy_id])
        return view

    def get_rule(self, ctx: Context, kind: qdef.RuleKind, rule_id: str,
                 policy_id: str | None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            policy, rule = self._rule_of(conn, ctx, kind, rule_id, policy_id)
            return self._view(policy, kind, rule, policy_id is None)

        return self._read(work)

    def get_rules(self, ctx: Context, kind: qdef.RuleKind, policy_id: str,
                  query: CollectionQuery) -> list[dict[str, Any]]:
        table = TABLES[kind.rule_type]
        columns = {"id": table.c.id, **{name: table.c[name] for name in kind.params}}

        def work(conn: Connection) -> list[dict[str, Any]]:
            policy = policy_row(conn, ctx, policy_id)
            rows = select_page(conn, table, columns, query,
                               [table.c.qos_policy_id == policy.id])
            return [rule_view(kind, row) for row in rows]

        return self._read(work)

    def update_rule(self, ctx: Context, kind: qdef.RuleKind, rule_id: str,
                    policy_id: str | None, data: dict[str, Any]) -> dict[str, Any]:
        table = TABLES[kind.rule_type]
        changes = {name: data[name] for name in kind.params if name in data}

        def work(conn: Connection) -> tuple[str, dict[str, Any]]:
            policy, rule = self._rule_of(conn, ctx, kind, rule_id, policy_id, for_update=True)
            wanted = {**{name: getattr(rule, name) for name in kind.params}, **changes}
            check_conflicts(conn, kind, policy.id, {**changes, **{
                k: v for k, v in wanted.items() if k == "direction"}}, rule.id)
            if changes:
                conn.execute(update(table).where(table.c.id == rule.id).values(**changes))
                bump(conn, Q, policy.id)
            return policy.id, self._view(policy, kind, find_rule(
                conn, kind, rule.id, policy.id), policy_id is None)

        changed, view = self.db.write(work)
        self.notifier.policies_updated([changed])
        return view

    def delete_rule(self, ctx: Context, kind: qdef.RuleKind, rule_id: str,
                    policy_id: str | None) -> None:
        table = TABLES[kind.rule_type]

        def work(conn: Connection) -> str:
            policy, rule = self._rule_of(conn, ctx, kind, rule_id, policy_id, for_update=True)
            conn.execute(delete(table).where(table.c.id == rule.id))
            bump(conn, Q, policy.id)
            return str(policy.id)

        self.notifier.policies_updated([self.db.write(work)])

    # --- rule types ---------------------------------------------------------------------

    def _drivers(self) -> dict[str, frozenset[str]]:
        return self.env.core.qos_rule_types()

    def supported_rule_types(self, all_supported: bool = False, all_rules: bool = False
                             ) -> list[str]:
        """Neutron's answer: every type with ``all_rules``; those any loaded driver
        supports with ``all_supported``; else those every loaded QoS driver supports."""
        if all_rules:
            return list(qdef.RULE_TYPES)
        drivers = [types for types in self._drivers().values() if types]
        if not drivers:
            return []
        found = set.union(*map(set, drivers)) if all_supported \
            else set.intersection(*map(set, drivers))
        return [t for t in qdef.RULE_TYPES if t in found]

    def get_rule_types(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        def flag(name: str) -> bool:
            values = query.pop_filter(name) or [False]
            return bool(values[0])

        all_rules, all_supported = flag("all_rules"), flag("all_supported")
        if all_rules and all_supported:
            raise exc.BadRequest(resource="rule_types", msg=(
                '"all_rules" and "all_supported" cannot be used together'))
        return [{"type": t} for t in self.supported_rule_types(all_supported, all_rules)]

    def get_rule_type(self, ctx: Context, rule_type: str) -> dict[str, Any]:
        if not ctx.is_admin:
            raise exc.NotAuthorized()
        kind = qdef.RULE_KINDS.get(rule_type)
        if kind is None:
            raise qdef.QosRuleTypeNotFound(rule_type=rule_type)
        drivers = [{"name": name, "supported_parameters": kind.supported_parameters()}
                   for name, types in self._drivers().items() if rule_type in types]
        return {"type": rule_type, "drivers": drivers}
