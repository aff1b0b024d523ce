"""The metering plugin: labels that count traffic on routers and their rules
(``service_plugins = metering``), with Neutron's checks and errors.

A label counts on every router of its project, a shared label on every
router. Each change commits whole (a rule's label is locked while its
overlap check runs), then the L3 agents hosting the affected routers are told
(``routers_updated``); the labels and rules reach them in the routers' sync
data (``_metering_labels``, added through the ``extend_router_sync``
hook), which the agents' ``metering`` extension turns into iptables counters.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, find_row
from neutrino.definitions import metering as mdef
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc.contracts.l3 import METERING_LABELS, L3AgentNotifier
from neutrino.rpc.notifier import Notifier
from neutrino.services.l3 import agents_notify
from neutrino.services.metering import store

LOG = logging.getLogger(__name__)
R = models.routers


def _prefix(data: dict[str, Any], name: str) -> str | None:
    """The rule's ``name`` prefix as stored (``10.0.0.1`` is ``10.0.0.1/32``), or
    Neutron's Invalid naming it."""
    value = data.get(name)
    if value is None or value == "":
        return None
    try:
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not a string")
        return str(ipaddress.ip_interface(value))
    except ValueError as error:
        raise mdef.Invalid(error_message=f"{name}: {value} is invalid [{error}].") from None


def checked_rule(data: dict[str, Any]) -> dict[str, Any]:
    """The prefixes of a new rule, checked as Neutron checks them: each one
    valid, ``remote_ip_prefix`` (deprecated) alone, at least one given."""
    remote, source, destination = (_prefix(data, name) for name in mdef.PREFIXES)
    if remote and (source or destination):
        raise mdef.Invalid(error_message=(
            "Cannot use 'remote-ip-prefix' in conjunction with 'source-ip-prefix' or "
            "'destination-ip-prefix'."))
    if not (remote or source or destination):
        raise mdef.Invalid(error_message=(
            "You must define at least one of the following parameters 'remote_ip_prefix', "
            "or 'source_ip_prefix' or 'destination_ip_prefix'."))
    if source and destination and (ipaddress.ip_interface(source).version
                                   != ipaddress.ip_interface(destination).version):
        raise mdef.Invalid(error_message=(
            "source_ip_prefix and destination_ip_prefix must be of the same IP version."))
    return {"remote_ip_prefix": remote, "source_ip_prefix": source,
            "destination_ip_prefix": destination}


class MeteringPlugin(Plugin):
    plugin_type = "METERING"
    supported_extension_aliases = tuple(ext.alias for ext in mdef.EXTENSIONS)

    def __init__(self, env: Environment):
        super().__init__(env)
        env.hooks.extend_router_sync.append(self._extend_routers)
        self.notifier = L3AgentNotifier(Notifier(env.bus))

    # --- what routers carry, and whom to tell ----------------------------------------

    @staticmethod
    def _extend_routers(conn: Connection, routers: list[dict[str, Any]]) -> None:
        found = store.labels_of_projects(conn, [r["project_id"] for r in routers
                                                if r.get("project_id")])
        for router in routers:
            router[METERING_LABELS] = found.get(router.get("project_id"), found.get(None, []))

    @staticmethod
    def _routers_of(conn: Connection, label: Row) -> list[str]:
        """The routers that count ``label``: its project's, or all when shared."""
        stmt = select(R.c.id)
        if not label.shared:
            stmt = stmt.where(R.c.project_id == label.project_id)
        return list(conn.execute(stmt).scalars())

    def _tell(self, router_ids: list[str]) -> None:
        """Tell the agents hosting the routers (after the commit)."""
        agents_notify.routers_updated(self.db, self.notifier, router_ids)

    # --- labels ----------------------------------------------------------------------

    def _create_labels(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        def work(conn: Connection) -> tuple[list[dict[str, Any]], list[str]]:
            made = [store.create_label(conn, data) for data in items]
            routers = {router for label in made for router in self._routers_of(
                conn, store.label_row(conn, Context.admin(), label["id"]))}
            return made, sorted(routers)

        made, routers = self.db.write(work)
        self._tell(routers)
        return made

    def create_metering_label(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        return self._create_labels([data])[0]

    def create_metering_label_bulk(self, ctx: Context, items: list[dict[str, Any]]
                                   ) -> list[dict[str, Any]]:
        return self._create_labels(items)

    def get_metering_label(self, ctx: Context, label_id: str) -> dict[str, Any]:
        return self._read(lambda conn: store.label_view(store.label_row(conn, ctx, label_id)))

    def get_metering_labels(self, ctx: Context, query: CollectionQuery
                            ) -> list[dict[str, Any]]:
        return self._read(lambda conn: store.labels(conn, ctx, query))

    def delete_metering_label(self, ctx: Context, label_id: str,
                              if_revision: int | None = None) -> None:
        def work(conn: Connection) -> list[str]:
            label = store.label_row(conn, ctx, label_id, for_update=True)
            routers = self._routers_of(conn, label)
            store.delete_label(conn, label_id)
            return routers

        self._tell(self.db.write(work))

    # --- rules -----------------------------------------------------------------------

    @staticmethod
    def _own_label(conn: Connection, ctx: Context, label_id: str) -> Row:
        """The rule's label, locked: one of the caller's project (any, for an admin)."""
        visible = [] if ctx.is_admin else [store.L.c.project_id == ctx.project_id]
        return find_row(conn, store.L, label_id, visible,
                        lambda: mdef.MeteringLabelNotFound(label_id=label_id), for_update=True)

    def _create_rule(self, conn: Connection, ctx: Context, data: dict[str, Any]
                     ) -> tuple[dict[str, Any], list[str]]:
        prefixes = checked_rule(data)
        label = self._own_label(conn, ctx, data["metering_label_id"])
        direction, excluded = data["direction"], bool(data.get("excluded", False))
        remote = prefixes["remote_ip_prefix"]
        if remote:
            for other in store.rules_of_label(conn, label.id, direction, excluded):
                if other.remote_ip_prefix and store.overlaps(other.remote_ip_prefix, remote):
                    raise mdef.MeteringLabelRuleOverlaps(remote_ip_prefix=remote)
            LOG.warning("metering label rule of label %s: remote_ip_prefix is deprecated, "
                        "as in Neutron: use source_ip_prefix and/or destination_ip_prefix",
                        label.id)
        rule_id = store.insert_rule(conn, {"metering_label_id": label.id,
                                           "direction": direction, "excluded": excluded,
                                           **prefixes})
        return store.rule(conn, Context.admin(), rule_id), self._routers_of(conn, label)

    def _create_rules(self, ctx: Context, items: list[dict[str, Any]]
                      ) -> list[dict[str, Any]]:
        def work(conn: Connection) -> tuple[list[dict[str, Any]], list[str]]:
            made, routers = [], set()
            for data in items:
                rule, affected = self._create_rule(conn, ctx, data)
                made.append(rule)
                routers.update(affected)
            return made, sorted(routers)

        made, routers = self.db.write(work)
        self._tell(routers)
        return made

    def create_metering_label_rule(self, ctx: Context, data: dict[str, Any]
                                   ) -> dict[str, Any]:
        return self._create_rules(ctx, [data])[0]

    def create_metering_label_rule_bulk(self, ctx: Context, items: list[dict[str, Any]]
                                        ) -> list[dict[str, Any]]:
        return self._create_rules(ctx, items)

    def get_metering_label_rule(self, ctx: Context, rule_id: str) -> dict[str, Any]:
        return self._read(lambda conn: store.rule(conn, ctx, rule_id))

    def get_metering_label_rules(self, ctx: Context, query: CollectionQuery
                                 ) -> list[dict[str, Any]]:
        return self._read(lambda conn: store.rules(conn, ctx, query))

    def delete_metering_label_rule(self, ctx: Context, rule_id: str,
                                   if_revision: int | None = None) -> None:
        def work(conn: Connection) -> list[str]:
            row = store.rule_row(conn, ctx, rule_id)
            label = self._own_label(conn, Context.admin(), row.metering_label_id)
            store.delete_rule(conn, rule_id)
            return self._routers_of(conn, label)

        self._tell(self.db.write(work))
