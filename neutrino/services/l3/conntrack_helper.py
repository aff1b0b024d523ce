"""The conntrack helper service plugin: a router's CT target rules
(``service_plugins = router,conntrack_helper``), with Neutron's checks.

Only the helper/protocol pairs of ``[DEFAULT] allowed_conntrack_helpers`` are
taken, each combination once per router. A change locks its router row, so
concurrent requests on one router check for duplicates one after another (a
unique key backs them). Once a change has committed, the L3 agents hosting
the router are told (``routers_updated``); the helpers reach them in the
router's sync data (``_conntrack_helpers``), where Neutron's agents pull them
over an RPC of their own.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection, Row

from neutrino.config import Opt, OptGroup
from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, select_page
from neutrino.db.util import chunked
from neutrino.definitions import conntrack_helper as cthdef
from neutrino.definitions.validators import new_uuid
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc.contracts.l3 import CONNTRACK_HELPERS, L3AgentNotifier
from neutrino.rpc.notifier import Notifier
from neutrino.services.l3 import agents_notify, routers

CT = models.conntrack_helpers
COLUMNS = {name: CT.c[name] for name in ("id", "protocol", "port", "helper")}
FIELDS = ("protocol", "port", "helper")

Allowed = dict[str, list[str]]  # helper -> the protocols it may be used with


def parse_allowed(text: str) -> list[str]:
    """``helper:protocol`` pairs, comma separated; a helper may come again with
    another protocol (oslo.config's list of dicts, as Neutron reads it)."""
    pairs = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        helper, sep, protocol = item.partition(":")
        if not sep or not helper.strip() or not protocol.strip():
            raise ValueError(f"expected helper:protocol pairs, not {item!r}")
        pairs.append(f"{helper.strip()}:{protocol.strip()}")
    return pairs


def allowed_of(pairs: list[str]) -> Allowed:
    allowed: Allowed = {}
    for pair in pairs:
        helper, _, protocol = pair.partition(":")
        allowed.setdefault(helper, []).append(protocol)
    return allowed


OPTIONS = OptGroup("DEFAULT", [
    Opt("allowed_conntrack_helpers", parse_allowed, list(cthdef.DEFAULT_ALLOWED),
        "The conntrack helpers routers may use, as helper:protocol pairs (a helper "
        "may come once per protocol it is allowed with)."),
])


def view(row: Any) -> dict[str, Any]:
    return {"id": row.id, "protocol": row.protocol, "port": row.port, "helper": row.helper}


def of_routers(conn: Connection, router_ids: list[str]) -> dict[str, list[Row]]:
    """router id -> its helpers, for many routers in one read per chunk."""
    found: dict[str, list[Row]] = {}
    for chunk in chunked(router_ids):
        for row in conn.execute(select(CT).where(CT.c.router_id.in_(list(chunk)))
                                .order_by(CT.c.id)):
            found.setdefault(row.router_id, []).append(row)
    return found


class ConntrackHelperPlugin(Plugin):
    supported_extension_aliases = tuple(ext.alias for ext in cthdef.EXTENSIONS)
    option_groups: ClassVar[tuple[OptGroup, ...]] = (OPTIONS,)

    def __init__(self, env: Environment):
        super().__init__(env)
        self.allowed = allowed_of(env.conf.DEFAULT.allowed_conntrack_helpers)
        env.hooks.extend_routers.append(self._extend_routers)
        env.hooks.extend_router_sync.append(self._extend_router_sync)
        self.notifier = L3AgentNotifier(Notifier(env.bus))

    # --- what routers carry -------------------------------------------------------

    @staticmethod
    def _extend_routers(conn: Connection, routers_: list[dict[str, Any]]) -> None:
        """expose-l3-conntrack-helper: protocol, port and helper of each."""
        found = of_routers(conn, [router["id"] for router in routers_])
        for router in routers_:
            router["conntrack_helpers"] = [{name: getattr(row, name) for name in FIELDS}
                                           for row in found.get(router["id"], ())]

    @staticmethod
    def _extend_router_sync(conn: Connection, routers_: list[dict[str, Any]]) -> None:
        """What the agents' ``conntrack_helper`` extension applies (with ids)."""
        found = of_routers(conn, [router["id"] for router in routers_])
        for router in routers_:
            router[CONNTRACK_HELPERS] = [view(row) for row in found.get(router["id"], ())]

    def _tell(self, router_id: str) -> None:
        agents_notify.routers_updated(self.db, self.notifier, [router_id])

    # --- checks -------------------------------------------------------------------

    def _checked(self, conn: Connection, router_id: str, values: dict[str, Any],
                 exclude: str | None) -> None:
        helper, protocol = values["helper"], values["protocol"]
        if helper not in self.allowed:
            raise cthdef.ConntrackHelperNotAllowed(helper=helper)
        if protocol not in self.allowed[helper]:
            raise cthdef.InvalidProtocolForHelper(
                helper=helper, protocol=protocol,
                supported_protocols=", ".join(self.allowed[helper]))
        same = conn.execute(select(CT.c.id).where(
            CT.c.router_id == router_id, CT.c.protocol == protocol,
            CT.c.port == values["port"], CT.c.helper == helper)).scalars().all()
        if any(found != exclude for found in same):
            raise cthdef.duplicate({"router_id": router_id, "protocol": protocol,
                                    "port": values["port"], "helper": helper})

    @staticmethod
    def _row(conn: Connection, router_id: str, helper_id: str) -> Row:
        row = conn.execute(select(CT).where(CT.c.id == helper_id,
                                            CT.c.router_id == router_id)).first()
        if row is None:
            raise cthdef.ConntrackHelperNotFound(id=helper_id)
        return row

    # --- the API ------------------------------------------------------------------

    def get_router_conntrack_helpers(self, ctx: Context, router_id: str,
                                     query: CollectionQuery) -> list[dict[str, Any]]:
        def work(conn: Connection) -> list[dict[str, Any]]:
            routers.get_row(conn, ctx, router_id)
            return [view(row) for row in select_page(
                conn, CT, COLUMNS, query, [CT.c.router_id == router_id])]

        return self._read(work)

    def get_router_conntrack_helper(self, ctx: Context, router_id: str, helper_id: str
                                    ) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            routers.get_row(conn, ctx, router_id)
            return view(self._row(conn, router_id, helper_id))

        return self._read(work)

    def create_router_conntrack_helper(self, ctx: Context, router_id: str,
                                       data: dict[str, Any]) -> dict[str, Any]:
        return self.create_router_conntrack_helper_bulk(ctx, router_id, [data])[0]

    def create_router_conntrack_helper_bulk(self, ctx: Context, router_id: str,
                                            items: list[dict[str, Any]]
                                            ) -> list[dict[str, Any]]:
        """All or none, in one transaction (a duplicate within them too)."""
        def work(conn: Connection) -> list[dict[str, Any]]:
            routers.get_row(conn, ctx, router_id, for_update=True)
            made = []
            for data in items:
                values = {name: data[name] for name in FIELDS}
                self._checked(conn, router_id, values, exclude=None)
                row = {**values, "id": new_uuid(), "router_id": router_id}
                conn.execute(CT.insert().values(**row))
                made.append(view(self._row(conn, router_id, row["id"])))
            return made

        created = self.db.write(work)
        self._tell(router_id)
        return created

    def update_router_conntrack_helper(self, ctx: Context, router_id: str, helper_id: str,
                                       data: dict[str, Any],
                                       if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            routers.get_row(conn, ctx, router_id, for_update=True)
            current = self._row(conn, router_id, helper_id)
            values = {name: data.get(name, getattr(current, name)) for name in FIELDS}
            self._checked(conn, router_id, values, exclude=helper_id)
            conn.execute(update(CT).where(CT.c.id == helper_id).values(**values))
            return view(self._row(conn, router_id, helper_id))

        updated = self.db.write(work)
        self._tell(router_id)
        return updated

    def delete_router_conntrack_helper(self, ctx: Context, router_id: str, helper_id: str,
                                       if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            routers.get_row(conn, ctx, router_id, for_update=True)
            self._row(conn, router_id, helper_id)
            conn.execute(delete(CT).where(CT.c.id == helper_id))

        self.db.write(work)
        self._tell(router_id)
