"""The ``trunk`` service plugin (``service_plugins = trunk``): trunks, whose
parent port carries its subports' traffic tagged with their segmentation ids,
with Neutron's checks and errors; and trunk-details, the ``trunk_details`` a
trunk's parent port shows.

A port is the parent of one trunk at most and a subport of one at most, never
both; a subport's network's MTU is not above the parent's. A disabled trunk
(``admin_state_up: false``) takes no subport change and is not deleted
(TrunkDisabled); one in ERROR takes no subport (TrunkInErrorState). A port
that is a trunk's parent or subport is not deleted (PortInUseAsTrunkParent,
PortInUseAsSubPort), through the core plugin's ``before_port_delete`` hook.
A bound parent is allowed, as Neutron's drivers that trunk bound ports
(Open vSwitch, OVN) allow it.

A subport takes ``device_owner: trunk:subport`` and the trunk's id as its
``device_id`` when it is added, and gives both back (and its binding) when it
is removed, in the trunk's transaction; the drivers' postcommit and the agents
hear of it once committed. A trunk is DOWN when made and after each subport
change, and stays so until the agent that wires its parent reports BUILD,
ACTIVE, DEGRADED or ERROR (``trunk_rpc``, which also gives the subports their
parent's ``binding:host_id``); once a subport change or a delete has
committed, and once a trunk is made, every L2 agent hears ``trunk_changed``
and the one that has its parent wires it again.

Each write is one transaction; the trunk's row is locked before its subports
change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection, Row

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db import models, tags
from neutrino.db.query import CollectionQuery, Page, api_columns, find_row, owned, select_page
from neutrino.db.util import bump, check_revision, now, timestamp
from neutrino.definitions import trunk as tdef
from neutrino.definitions.validators import new_uuid
from neutrino.plugins.base import Environment, Plugin
from neutrino.rpc.contracts import trunk as contract
from neutrino.rpc.notifier import Notifier
from neutrino.services.trunk_rpc import TrunkRpcCallback

T, S, P, N = models.trunks, models.subports, models.ports, models.networks
SEG = models.network_segments
COLUMNS = api_columns(T, "port_id", "status", "admin_state_up")
ADMIN = Context.admin()
DETAILS = frozenset({"trunk_details"})


# --- rows and views -----------------------------------------------------------------------

def trunk_row(conn: Connection, ctx: Context, trunk_id: str, for_update: bool = False) -> Row:
    return find_row(conn, T, trunk_id, owned(T, ctx),
                    lambda: tdef.TrunkNotFound(trunk_id=trunk_id), for_update)


def subport_view(row: Any) -> dict[str, Any]:
    return {"port_id": row.port_id, "segmentation_type": row.segmentation_type,
            "segmentation_id": row.segmentation_id}


def view(row: Any, subports: list[dict[str, Any]], tag_list: list[str]) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "description": row.description,
            "project_id": row.project_id, "tenant_id": row.project_id,
            "port_id": row.port_id, "admin_state_up": bool(row.admin_state_up),
            "status": row.status, "sub_ports": subports, "tags": tag_list,
            "created_at": timestamp(row.created_at), "updated_at": timestamp(row.updated_at),
            "revision_number": row.revision_number}


def subports_of(conn: Connection, page: Page) -> dict[str, list[dict[str, Any]]]:
    """trunk id -> its subports, by port id, for the trunks of ``page``."""
    found: dict[str, list[dict[str, Any]]] = {}
    for row in page.read(conn, select(S).order_by(S.c.trunk_id, S.c.port_id), S.c.trunk_id):
        found.setdefault(row.trunk_id, []).append(subport_view(row))
    return found


def views(conn: Connection, rows: list[Row]) -> list[dict[str, Any]]:
    page = Page.of([r.id for r in rows])
    found = subports_of(conn, page) if rows else {}
    tag_map = tags.load(conn, page) if rows else {}
    return [view(r, found.get(r.id, []), tag_map.get(r.id, [])) for r in rows]


def trunk(conn: Connection, ctx: Context, trunk_id: str) -> dict[str, Any]:
    return views(conn, [trunk_row(conn, ctx, trunk_id)])[0]


def trunk_details(conn: Connection, page: Page) -> dict[str, dict[str, Any]]:
    """parent port id -> its trunk_details, for the ports of ``page`` that are a
    trunk's parent: one statement."""
    stmt = (select(T.c.port_id.label("parent"), T.c.id.label("trunk_id"), S.c.port_id,
                   S.c.segmentation_type, S.c.segmentation_id, P.c.mac_address)
            .select_from(T.outerjoin(S, S.c.trunk_id == T.c.id)
                         .outerjoin(P, P.c.id == S.c.port_id))
            .order_by(T.c.port_id, S.c.port_id))
    found: dict[str, dict[str, Any]] = {}
    for row in page.read(conn, stmt, T.c.port_id):
        details = found.setdefault(row.parent, {"trunk_id": row.trunk_id, "sub_ports": []})
        if row.port_id is not None:
            details["sub_ports"].append({**subport_view(row), "mac_address": row.mac_address})
    return found


def _trunk_of_parent(conn: Connection, port_id: str) -> str | None:
    return conn.execute(select(T.c.id).where(T.c.port_id == port_id)).scalar()


def _trunk_of_subport(conn: Connection, port_id: str) -> str | None:
    return conn.execute(select(S.c.trunk_id).where(S.c.port_id == port_id)).scalar()


def _mtus(conn: Connection, port_ids: list[str]) -> dict[str, int]:
    """port id -> the MTU of its network."""
    return dict(conn.execute(select(P.c.id, N.c.mtu).join(N, N.c.id == P.c.network_id)
                             .where(P.c.id.in_(port_ids))).all())


def _segments(conn: Connection, port_ids: list[str]) -> dict[str, list[Row]]:
    """port id -> the segments of its network."""
    found: dict[str, list[Row]] = {}
    stmt = (select(P.c.id.label("port_id"), SEG.c.network_type, SEG.c.segmentation_id)
            .join(SEG, SEG.c.network_id == P.c.network_id).where(P.c.id.in_(port_ids))
            .order_by(SEG.c.segment_index))
    for row in conn.execute(stmt):
        found.setdefault(row.port_id, []).append(row)
    return found


def _inherited(item: dict[str, Any], segments: list[Row]) -> dict[str, Any]:
    """An ``inherit`` subport with its network's segmentation (Neutron's; a type
    no driver trunks, or a network of several segments, is refused)."""
    if len(segments) != 1 or segments[0].segmentation_id is None:
        raise exc.InvalidInput(error_message=(
            f"Cannot inherit the segmentation of port {item['port_id']}: its network has "
            "no single segment with a segmentation id"))
    kind, seg_id = segments[0].network_type, segments[0].segmentation_id
    if kind not in tdef.SEGMENTATION_TYPES:
        raise exc.InvalidInput(error_message=f"Unknown segmentation_type '{kind}'")
    low, high = tdef.SEGMENTATION_TYPES[kind]
    if not low <= seg_id <= high:
        raise exc.InvalidInput(error_message=f"Segmentation ID '{seg_id}' is not in range")
    return {"port_id": item["port_id"], "segmentation_type": kind, "segmentation_id": seg_id}


# --- the plugin ---------------------------------------------------------------------------

class TrunkPlugin(Plugin):
    plugin_type = "trunk"
    supported_extension_aliases = tuple(ext.alias for ext in tdef.EXTENSIONS)

    def __init__(self, env: Environment):
        super().__init__(env)
        self.core = env.core
        env.hooks.before_port_delete.append(self._before_port_delete)
        env.hooks.extend_ports.append((DETAILS, self._extend_ports))
        self.notifier = contract.TrunkAgentNotifier(Notifier(env.bus))

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        return {contract.TOPIC: [TrunkRpcCallback(self)]}

    def taggable_tables(self) -> dict[str, Any]:
        return {"trunks": T}

    # --- hooks --------------------------------------------------------------------------

    @staticmethod
    def _extend_ports(conn: Connection, port_views: list[dict[str, Any]], page: Page) -> None:
        """trunk-details: a trunk's parent port shows its trunk and subports."""
        found = trunk_details(conn, page)
        if found:
            for port in port_views:
                if port["id"] in found:
                    port["trunk_details"] = found[port["id"]]

    @staticmethod
    def _before_port_delete(conn: Connection, ctx: Context, port_id: str) -> None:
        trunk_id = _trunk_of_subport(conn, port_id)
        if trunk_id is not None:
            raise tdef.PortInUseAsSubPort(port_id=port_id, trunk_id=trunk_id)
        trunk_id = _trunk_of_parent(conn, port_id)
        if trunk_id is not None:
            raise tdef.PortInUseAsTrunkParent(port_id=port_id, trunk_id=trunk_id)

    # --- checks -------------------------------------------------------------------------

    def _check_parent(self, conn: Connection, ctx: Context, port_id: str) -> None:
        """The port exists, the caller sees it, and it is in no trunk."""
        self.core.port_row_in(conn, ctx, port_id)
        if _trunk_of_subport(conn, port_id) is not None:
            raise tdef.TrunkPortInUse(port_id=port_id)
        if _trunk_of_parent(conn, port_id) is not None:
            raise tdef.ParentPortInUse(port_id=port_id)

    def _checked_subports(self, conn: Connection, ctx: Context, trunk_id: str | None,
                          parent_id: str, items: list[dict[str, Any]]
                          ) -> list[dict[str, Any]]:
        """The subports to add (their segmentation settled), in Neutron's order of
        checks: each visible, not the parent, its MTU within the parent's, in no
        trunk, attached to no device; none taking a segmentation the trunk has."""
        ids = [item["port_id"] for item in items]
        rows = {port_id: self.core.port_row_in(conn, ctx, port_id) for port_id in ids}
        mtus = _mtus(conn, [parent_id, *ids])
        segments = _segments(conn, ids) if any(
            item.get("segmentation_type") == tdef.INHERIT for item in items) else {}
        settled = []
        for item in items:
            port_id = item["port_id"]
            if port_id == parent_id:
                raise tdef.ParentPortInUse(port_id=port_id)
            mtu, parent_mtu = mtus.get(port_id), mtus.get(parent_id)
            if mtu and parent_mtu and mtu > parent_mtu:
                raise tdef.SubPortMtuGreaterThanTrunkPortMtu(
                    port_id=port_id, port_mtu=mtu, trunk_id=parent_id, trunk_mtu=parent_mtu)
            if item.get("segmentation_type") == tdef.INHERIT:
                item = _inherited(item, segments.get(port_id, []))
            if _trunk_of_subport(conn, port_id) is not None:
                raise tdef.TrunkPortInUse(port_id=port_id)
            if _trunk_of_parent(conn, port_id) is not None:
                raise tdef.ParentPortInUse(port_id=port_id)
            port = rows[port_id]
            if port.device_id:
                raise exc.PortInUse(net_id=port.network_id, port_id=port_id,
                                    device_id=port.device_id)
            settled.append(item)
        taken = set() if trunk_id is None else {
            (r.segmentation_type, r.segmentation_id) for r in conn.execute(
                select(S.c.segmentation_type, S.c.segmentation_id).where(
                    S.c.trunk_id == trunk_id))}
        for item in settled:
            key = (item["segmentation_type"], item["segmentation_id"])
            if key in taken:
                raise tdef.DuplicateSubPort(segmentation_type=key[0], segmentation_id=key[1],
                                            trunk_id=trunk_id)
            taken.add(key)
        return settled

    def _attach(self, conn: Connection, trunk_id: str, items: list[dict[str, Any]],
                changed: list[Any]) -> None:
        """The subports join the trunk: their rows, their ports' owner."""
        if not items:
            return
        conn.execute(S.insert(), [{"trunk_id": trunk_id, "port_id": i["port_id"],
                                   "segmentation_type": i["segmentation_type"],
                                   "segmentation_id": i["segmentation_id"]} for i in items])
        for item in items:
            changed.append(self.core.update_port_in(conn, ADMIN, item["port_id"], {
                "device_owner": tdef.SUBPORT_OWNER, "device_id": trunk_id}))

    def _write(self, work: Callable[[Connection, list[Any]], Any]) -> Any:
        """``work`` in one transaction; then the changed ports' postcommit."""
        changed: list[Any] = []

        def attempt(conn: Connection) -> Any:
            changed.clear()  # a retried attempt starts afresh
            return work(conn, changed)

        result = self.db.write(attempt)
        for context in changed:
            self.core.port_updated(context)
        return result

    # --- trunks -------------------------------------------------------------------------

    def create_trunk(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        items = tdef.checked_subports(data.get("sub_ports") or [])

        def work(conn: Connection, changed: list[Any]) -> dict[str, Any]:
            self._check_parent(conn, ctx, data["port_id"])
            settled = self._checked_subports(conn, ctx, None, data["port_id"], items)
            trunk_id, when = new_uuid(), now()
            conn.execute(T.insert().values(
                id=trunk_id, project_id=data["project_id"], name=data.get("name") or "",
                description=data.get("description") or "", created_at=when,
                updated_at=when, revision_number=0,
                admin_state_up=data.get("admin_state_up", True), status=tdef.DOWN,
                port_id=data["port_id"]))
            self._attach(conn, trunk_id, settled, changed)
            return trunk(conn, ADMIN, trunk_id)

        return self._told(self._write(work))

    def get_trunk(self, ctx: Context, trunk_id: str) -> dict[str, Any]:
        return self._read(lambda conn: trunk(conn, ctx, trunk_id))

    def get_trunks(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        def work(conn: Connection) -> list[dict[str, Any]]:
            if query.marker is not None:
                trunk_row(conn, ctx, query.marker)
            return views(conn, list(select_page(conn, T, COLUMNS, query, owned(T, ctx))))

        return self._read(work)

    def update_trunk(self, ctx: Context, trunk_id: str, data: dict[str, Any],
                     if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            row = trunk_row(conn, ctx, trunk_id, for_update=True)
            values: dict[str, Any] = {k: data[k] for k in ("name", "description", "admin_state_up")
                      if k in data}
            bump(conn, T, row.id, if_revision, values)
            return trunk(conn, ADMIN, row.id)

        return self.db.write(work)

    def delete_trunk(self, ctx: Context, trunk_id: str, if_revision: int | None = None
                     ) -> None:
        def work(conn: Connection, changed: list[Any]) -> None:
            row = trunk_row(conn, ctx, trunk_id, for_update=True)
            if not row.admin_state_up:
                raise tdef.TrunkDisabled(trunk_id=trunk_id)
            check_revision(conn, T, row.id, if_revision)
            self._detach(conn, row.id, list(conn.execute(
                select(S.c.port_id).where(S.c.trunk_id == row.id)).scalars()), changed)
            tags.remove(conn, row.id)
            conn.execute(delete(T).where(T.c.id == row.id))
            return row.port_id

        parent = self._write(work)
        self.notifier.trunk_changed(trunk_id, parent)

    def _detach(self, conn: Connection, trunk_id: str, port_ids: list[str],
                changed: list[Any]) -> None:
        """The subports leave the trunk; their ports are nobody's again."""
        if not port_ids:
            return
        conn.execute(delete(S).where(S.c.trunk_id == trunk_id, S.c.port_id.in_(port_ids)))
        for port_id in sorted(port_ids):
            port = self.core.port_row_in(conn, ADMIN, port_id)
            if port.device_owner == tdef.SUBPORT_OWNER and port.device_id == trunk_id:
                changed.append(self.core.update_port_in(conn, ADMIN, port_id, {
                    "device_owner": "", "device_id": "", "binding:host_id": ""}))

    # --- subports -----------------------------------------------------------------------

    def _manageable(self, conn: Connection, ctx: Context, trunk_id: str) -> Row:
        row = trunk_row(conn, ctx, trunk_id, for_update=True)
        if not row.admin_state_up:
            raise tdef.TrunkDisabled(trunk_id=trunk_id)
        return row

    def add_subports(self, ctx: Context, trunk_id: str, body: dict[str, Any]
                     ) -> dict[str, Any]:
        items = tdef.checked_subports(tdef.subports_of(body))

        def work(conn: Connection, changed: list[Any]) -> dict[str, Any]:
            row = trunk_row(conn, ctx, trunk_id, for_update=True)
            settled = self._checked_subports(conn, ctx, row.id, row.port_id, items)
            if not row.admin_state_up:
                raise tdef.TrunkDisabled(trunk_id=trunk_id)
            if row.status == tdef.ERROR:
                raise tdef.TrunkInErrorState(trunk_id=trunk_id)
            self._attach(conn, row.id, settled, changed)
            bump(conn, T, row.id, values={"status": tdef.DOWN})
            return trunk(conn, ADMIN, row.id)

        return self._told(self._write(work))

    def remove_subports(self, ctx: Context, trunk_id: str, body: dict[str, Any]
                        ) -> dict[str, Any]:
        items = tdef.checked_subports(tdef.subports_of(body), segmentation=False)
        port_ids = list(dict.fromkeys(item["port_id"] for item in items))

        def work(conn: Connection, changed: list[Any]) -> dict[str, Any]:
            row = self._manageable(conn, ctx, trunk_id)
            present = set(conn.execute(select(S.c.port_id).where(
                S.c.trunk_id == row.id)).scalars())
            for port_id in port_ids:
                if port_id not in present:
                    raise tdef.SubPortNotFound(trunk_id=trunk_id, port_id=port_id)
            self._detach(conn, row.id, port_ids, changed)
            bump(conn, T, row.id, values={"status": tdef.DOWN})
            return trunk(conn, ADMIN, row.id)

        return self._told(self._write(work))

    def _told(self, view: dict[str, Any]) -> dict[str, Any]:
        """Once committed: the agent wiring the trunk wires it again."""
        self.notifier.trunk_changed(view["id"], view["port_id"])
        return view

    def get_subports(self, ctx: Context, trunk_id: str) -> dict[str, Any]:
        return {"sub_ports": self.get_trunk(ctx, trunk_id)["sub_ports"]}
