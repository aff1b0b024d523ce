"""The network segment ranges' plugin (``service_plugins = network_segment_range``;
alias ``network-segment-range``): admin-only CRUD of ``/v2.0/network_segment_ranges``
with Neutron's checks and errors, and the pools the core plugin's type drivers
allocate from (it sets itself in ``hooks.segment_ranges``).

What the allocation does with them:
- at start-up, in the core plugin's sync, the default ranges become those
  configured ([ml2_type_vlan] network_vlan_ranges, [ml2_type_vxlan]
  vni_ranges, ...), and the allocation table's free rows follow every range;
- a range made, changed or deleted makes the free rows of the ids it touched
  follow the ranges, in its transaction (taken ids stay, whatever happens);
- a project's network takes a free id within its project's own ranges, else
  within the shared ones less the other projects': the pools, read in one
  statement per network created (``hooks.SegmentRanges.pools``).

Not as Neutron: a bad range is a 400 (Neutron's NetworkVlanRangeError and
NetworkTunnelRangeError are 500s there); a range of a tunnel type given a
physical network is refused rather than stored without it; a range holds
``MAX_IDS`` ids at most (each has an allocation row); a range whose lowest or
highest used id is in use may still be renamed (Neutron refuses any update
then), its bounds may not move onto or past its used ids.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db.query import CollectionQuery, select_page
from neutrino.db.util import bump, check_revision
from neutrino.definitions import network_segment_range as nsr
from neutrino.plugins.base import Environment, Plugin
from neutrino.plugins.hooks import IdRange, SegmentPools
from neutrino.services.network_segment_range import store

#: ids a range may hold: each is a row of the allocation table, made at once
MAX_IDS = 2 ** 20
RESOURCE = nsr.RESOURCE.name
USAGE = ("available", "used")


def check_range(network_type: str, limits: tuple[int, int], first: int, last: int) -> None:
    """Neutron's checks of a range's ids (plugin_utils' verify_*_range), and ours
    of its size."""
    low, high = limits
    for ident in (first, last):
        if not low <= ident <= high:
            raise nsr.range_error(network_type, first, last,
                                  f"{ident} is not a valid VLAN tag" if network_type == nsr.VLAN
                                  else f"{ident} is not a valid {network_type} identifier")
    if last < first:
        what = "VLAN" if network_type == nsr.VLAN else "tunnel"
        raise nsr.range_error(network_type, first, last,
                              f"End of {what} range is less than start of {what} range")
    if last - first + 1 > MAX_IDS:
        raise nsr.range_error(network_type, first, last,
                              f"a range holds {MAX_IDS} identifiers at most")


class NetworkSegmentRangePlugin(Plugin):
    supported_extension_aliases = (nsr.EXTENSION.alias,)

    def __init__(self, env: Environment):
        super().__init__(env)
        env.hooks.segment_ranges = self

    def taggable_tables(self) -> dict[str, Any]:
        return {nsr.RESOURCE.collection: store.R}

    # --- what the core plugin's type drivers ask (hooks.SegmentRanges) ----------------

    def follow_config(self, conn: Connection, configured: dict[str, list[IdRange]]
                      ) -> dict[str, list[IdRange]]:
        store.follow_config(conn, configured)
        return store.ranges_of_types(conn, configured)

    def pools(self, conn: Connection, project_id: str | None) -> SegmentPools:
        return store.pools(conn, project_id)

    # --- the API (an admin's: others see no range) ---------------------------------------

    def _types(self) -> dict[str, tuple[int, int]]:
        return self.env.core.segment_range_types()

    def _follow(self, conn: Connection, network_type: str, changed: list[IdRange]) -> None:
        """The allocation rows of the ids a change touched follow the ranges."""
        ranges = store.ranges_of_types(conn, [network_type])[network_type]
        self.env.core.follow_segment_ranges_in(conn, network_type, ranges, changed)

    def _new(self, types: dict[str, tuple[int, int]], data: dict[str, Any]) -> dict[str, Any]:
        network_type = data["network_type"]
        limits = types.get(network_type)
        if limits is None:
            raise nsr.NetworkSegmentRangeNetTypeNotSupported(type=network_type)
        check_range(network_type, limits, data["minimum"], data["maximum"])
        physnet = data.get("physical_network") or None  # "" is none, as Neutron takes it
        if network_type == nsr.VLAN and physnet is None:
            raise exc.BadRequest(resource=RESOURCE, msg=(
                f"Network type {nsr.VLAN} requires 'physical_network' to be specified while "
                "creating new range"))
        if network_type != nsr.VLAN and physnet is not None:
            raise exc.BadRequest(resource=RESOURCE, msg=(
                f"Network type {network_type} has no physical network: 'physical_network' "
                f"is only allowed with network type {nsr.VLAN}"))
        shared = data["shared"]
        project_id = None if shared else data.get("project_id") or None
        if not shared and project_id is None:
            raise exc.BadRequest(resource=RESOURCE, msg=(
                "A network segment range that is not shared must have a project_id"))
        return {**data, "physical_network": physnet, "project_id": project_id}

    def _create(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        types = self._types()
        wanted = [self._new(types, data) for data in items]

        def work(conn: Connection) -> list[dict[str, Any]]:
            made = []
            for values in wanted:
                network_type, physnet = values["network_type"], values["physical_network"]
                first, last = values["minimum"], values["maximum"]
                overlaps = store.overlapping(conn, (network_type, physnet, first, last))
                if overlaps:
                    raise nsr.NetworkSegmentRangeOverlaps(range_id=", ".join(overlaps))
                made.append(store.insert(conn, values))
                self._follow(conn, network_type, [(physnet, first, last)])
            return store.views(conn, store.rows_by_id(conn, made))

        return self.db.write(work)

    def create_network_segment_range(self, ctx: Context, data: dict[str, Any]
                                     ) -> dict[str, Any]:
        return self._create([data])[0]

    def create_network_segment_range_bulk(self, ctx: Context, items: list[dict[str, Any]]
                                          ) -> list[dict[str, Any]]:
        return self._create(items)

    def get_network_segment_range(self, ctx: Context, range_id: str) -> dict[str, Any]:
        if not ctx.is_admin:
            raise nsr.NetworkSegmentRangeNotFound(range_id=range_id)
        return self._read(lambda conn: store.views(conn, [store.row(conn, range_id)])[0])

    def get_network_segment_ranges(self, ctx: Context, query: CollectionQuery
                                   ) -> list[dict[str, Any]]:
        if not ctx.is_admin:
            return []
        usage = query.fields is None or any(name in query.fields for name in USAGE)
        return self._read(lambda conn: store.views(
            conn, select_page(conn, store.R, store.COLUMNS, query), usage))

    def update_network_segment_range(self, ctx: Context, range_id: str, data: dict[str, Any],
                                     if_revision: int | None = None) -> dict[str, Any]:
        if not ctx.is_admin:
            raise nsr.NetworkSegmentRangeNotFound(range_id=range_id)

        def work(conn: Connection) -> dict[str, Any]:
            row = store.row(conn, range_id, for_update=True)
            if row.default:
                raise nsr.NetworkSegmentRangeDefaultReadOnly(range_id=range_id)
            first, last = data.get("minimum", row.minimum), data.get("maximum", row.maximum)
            moved = (first, last) != (row.minimum, row.maximum)
            if moved:
                self._check_move(conn, row, first, last)
            bump(conn, store.R, range_id, if_revision, dict(data))
            if moved:
                self._follow(conn, row.network_type, [
                    (row.physical_network, row.minimum, row.maximum),
                    (row.physical_network, first, last)])
            return store.views(conn, [store.row(conn, range_id)])[0]

        return self.db.write(work)

    def _check_move(self, conn: Connection, row: Any, first: int, last: int) -> None:
        """New bounds for a range: not onto or past the ids its networks use (as
        Neutron compares them), valid for its type, overlapping no other range."""
        used = store.used_bounds(conn, store.span(row))
        if used is not None and ((first != row.minimum and first >= used[0])
                                 or (last != row.maximum and last <= used[1])):
            raise nsr.NetworkSegmentRangeReferencedByProject(range_id=row.id)
        limits = self._types().get(row.network_type)
        if limits is None:  # its type driver is no longer loaded
            raise nsr.NetworkSegmentRangeNetTypeNotSupported(type=row.network_type)
        check_range(row.network_type, limits, first, last)
        overlaps = store.overlapping(conn, (row.network_type, row.physical_network, first, last),
                                     but=row.id)
        if overlaps:
            raise nsr.NetworkSegmentRangeOverlaps(range_id=", ".join(overlaps))

    def delete_network_segment_range(self, ctx: Context, range_id: str,
                                     if_revision: int | None = None) -> None:
        if not ctx.is_admin:
            raise nsr.NetworkSegmentRangeNotFound(range_id=range_id)

        def work(conn: Connection) -> None:
            row = store.row(conn, range_id, for_update=True)
            if row.default:
                raise nsr.NetworkSegmentRangeDefaultReadOnly(range_id=range_id)
            check_revision(conn, store.R, range_id, if_revision)
            if store.used_bounds(conn, store.span(row)) is not None:
                raise nsr.NetworkSegmentRangeReferencedByProject(range_id=range_id)
            store.delete_(conn, range_id)
            self._follow(conn, row.network_type,
                         [(row.physical_network, row.minimum, row.maximum)])

        self.db.write(work)
