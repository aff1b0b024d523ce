"""Northbound writes, as ovsdbapp commands: the ``ovn`` mechanism driver's and
the OVN router plugin's.

Every write says the whole row as neutrino wants it (never a delta against
what the API call changed), so the same command creates, updates and repairs:
the maintenance task and ``neutrino-ovn-db-sync`` re-run it for drift.

The revision check: a row that carries a revision (``neutron:revision_number``
in its ``external_ids``) is written only when the Northbound one is not newer.
The command reads the row's ``external_ids`` with an OVSDB *verify*: if another
writer changes them before this transaction commits, the server refuses it,
ovsdbapp runs the commands again on the new contents, and the comparison is
made afresh. Two API workers updating one port can so commit in either order
and the Northbound database still ends with the newer revision.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from neutrino.ovn import names
from neutrino.ovn.ovsdb import Atom, BaseCommand, UuidType, idlutils

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Key:
    """How a row is found: by ``column`` == ``value`` (an indexed name), or, for
    ``external_ids:<k>``, by that key's value (a scan), ``without`` keys absent."""

    table: str
    column: str
    value: str
    without: tuple[str, ...] = ()

    def find(self, api: Any) -> Any:
        table = api.tables[self.table]
        if not self.column.startswith("external_ids:"):
            return idlutils.row_by_value(api.idl, self.table, self.column, self.value, None)
        key = self.column.split(":", 1)[1]
        for row in table.rows.values():
            ids = row.external_ids
            if ids.get(key) == self.value and not any(k in ids for k in self.without):
                return row
        return None


@dataclass(frozen=True)
class Parent:
    """The row whose set ``column`` holds a non-root row (a switch's ports)."""

    key: Key
    column: str


@dataclass(frozen=True)
class Ref:
    """A column value that is another row, found when the transaction runs
    (an empty set when it is not there)."""

    key: Key


@dataclass(frozen=True)
class Row:
    """A row as neutrino wants it: which, its columns, the revision it is of and
    where it hangs; ``groups``: the port groups (by name) a switch port belongs to."""

    key: Key
    columns: dict[str, Any]
    revision: int | None = None
    parent: Parent | None = None
    groups: frozenset[str] | None = field(default=None, compare=False)


def revision_of(row: Any) -> int:
    try:
        return int(row.external_ids.get(names.REVISION, -1))
    except ValueError:
        return -1


class WriteRow(BaseCommand):
    """Make the row ``key`` finds hold ``columns`` (created if missing, in
    ``parent`` if given); skipped when the Northbound row is newer than
    ``revision``. Result: "written", "stale" or "missing-parent"."""

    def __init__(self, api: Any, key: Key, columns: Mapping[str, Any],
                 revision: int | None = None, parent: Parent | None = None):
        super().__init__(api)
        self.key = key
        self.columns = columns
        self.revision = revision
        self.parent = parent

    def run_idl(self, txn: Any) -> None:
        parent_row = None
        if self.parent is not None:
            parent_row = self.parent.key.find(self.api)
            if parent_row is None:
                self.result = "missing-parent"
                return
        row = self.key.find(self.api)
        if row is None:
            row = txn.insert(self.api.tables[self.key.table])
            if not self.key.column.startswith("external_ids:"):
                setattr(row, self.key.column, self.key.value)
        elif self.revision is not None:
            row.verify("external_ids")
            if revision_of(row) > self.revision:
                LOG.debug("not writing %s %s: revision %s is older than the Northbound's",
                          self.key.table, self.key.value, self.revision)
                self.result = "stale"
                return
        for column, value in self.columns.items():
            setattr(row, column, _resolve(self.api, value))
        if parent_row is not None and self.parent is not None:
            parent_row.addvalue(self.parent.column, row)
        self.result = "written"


class KeepOnly(BaseCommand):
    """The set ``column`` of the row ``parent`` finds keeps only the members whose
    ``name`` is in ``names`` (the router ports a router still has)."""

    def __init__(self, api: Any, parent: Key, column: str, names: set[str]):
        super().__init__(api)
        self.parent = parent
        self.column = column
        self.names = names

    def run_idl(self, txn: Any) -> None:
        row = self.parent.find(self.api)
        if row is None or row._data is None:
            return
        for member in list(getattr(row, self.column)):
            if member.name not in self.names:
                row.delvalue(self.column, member)


class SetBalancers(BaseCommand):
    """The router ``router`` finds uses exactly the load balancers named in
    ``names`` among those of its own (``neutron:router_name`` is its id); a
    load balancer of its no longer used is deleted (they are root rows)."""

    def __init__(self, api: Any, router: Key, names: set[str]):
        super().__init__(api)
        self.router = router
        self.names = names

    def run_idl(self, txn: Any) -> None:
        router_id = self.router.value[len("neutron-"):]
        found = self.router.find(self.api)
        mine = [lb for lb in self.api.tables["Load_Balancer"].rows.values()
                if lb.external_ids.get(names.ROUTER_NAME) == router_id]
        if found is not None:
            have = getattr(found, "load_balancer", []) if found._data is not None else []
            for lb in mine:
                if lb.name in self.names and lb not in have:
                    found.addvalue("load_balancer", lb)
        for lb in mine:
            if lb.name not in self.names:
                if found is not None and found._data is not None:
                    found.delvalue("load_balancer", lb)
                lb.delete()


class DeleteRow(BaseCommand):
    """Remove the row ``key`` finds (from ``parent`` too); nothing if it is gone."""

    def __init__(self, api: Any, key: Key, parent: Parent | None = None):
        super().__init__(api)
        self.key = key
        self.parent = parent

    def run_idl(self, txn: Any) -> None:
        row = self.key.find(self.api)
        if row is None:
            return
        if self.parent is not None:
            parent_row = self.parent.key.find(self.api)
            if parent_row is not None:
                parent_row.delvalue(self.parent.column, row)
        row.delete()


class SetMembership(BaseCommand):
    """The row ``member`` finds belongs to the sets ``column`` of exactly the rows of
    ``table`` whose ``name`` is in ``wanted`` among those ``ours`` accepts."""

    def __init__(self, api: Any, member: Key, table: str, column: str, wanted: set[str],
                 ours: Callable[[str], bool]):
        super().__init__(api)
        self.member = member
        self.table = table
        self.column = column
        self.wanted = wanted
        self.ours = ours

    def run_idl(self, txn: Any) -> None:
        row = self.member.find(self.api)
        if row is None:
            return
        member = Atom(UuidType, row.uuid)
        for group in self.api.tables[self.table].rows.values():
            if not self.ours(group.name):
                continue
            holds = _holds(group, self.column, member)
            if group.name in self.wanted and not holds:
                group.addvalue(self.column, row)
            elif group.name not in self.wanted and holds:
                group.delvalue(self.column, row)


def _holds(row: Any, column: str, member: Any) -> bool:
    """Whether the committed set ``column`` of ``row`` holds ``member`` (an Atom),
    looked up in the replica's datum: reading the column would build and sort
    every member row, for every port write (a group like the drop group holds
    every port). A row inserted by this transaction holds nothing yet."""
    if row._data is None:
        return False
    return member in row._data[column].values


class ReplaceChildren(BaseCommand):
    """The set ``column`` of the row ``parent`` finds holds exactly ``children``
    (each the columns of a new row of ``table``), told apart by the ``by`` key of
    their ``external_ids``: unchanged ones stay, others are added or dropped."""

    def __init__(self, api: Any, parent: Key, column: str, table: str, by: str,
                 children: list[dict[str, Any]]):
        super().__init__(api)
        self.parent = parent
        self.column = column
        self.table = table
        self.by = by
        self.children = children

    def run_idl(self, txn: Any) -> None:
        parent = self.parent.find(self.api)
        if parent is None:
            self.result = "missing-parent"
            return
        present: dict[str | None, list[Any]] = {}
        # a row inserted by this transaction has no value to read yet
        for child in getattr(parent, self.column, ()) if parent._data is not None else ():
            present.setdefault(child.external_ids.get(self.by), []).append(child)
        for wanted in self.children:
            ident = wanted["external_ids"].get(self.by)
            rows = present.pop(ident, [])
            if len(rows) == 1 and _same(rows[0], wanted):
                continue
            for stale in rows:
                parent.delvalue(self.column, stale)
            row = txn.insert(self.api.tables[self.table])
            for column, value in wanted.items():
                setattr(row, column, value)
            parent.addvalue(self.column, row)
        for rows in present.values():
            for stale in rows:
                parent.delvalue(self.column, stale)
        self.result = "written"


def differences(api: Any, row: Any, wanted: Mapping[str, Any]) -> list[str]:
    """The columns of ``row`` that do not hold what ``wanted`` says, each as
    "column: <what it holds> instead of <what is wanted>"; the revision in
    ``external_ids`` aside (what was written matters, not from which revision)."""
    found = []
    for column, value in wanted.items():
        have, want = _normal(api, column, getattr(row, column)), _normal(api, column, value)
        if have != want:
            found.append(f"{column}: {have} instead of {want}")
    return found


def _normal(api: Any, column: str, value: Any) -> Any:
    """A column's value in one shape, whether the IDL's or ours: a set or an
    optional value as a sorted list, a row as its uuid."""
    if isinstance(value, Ref):
        found = value.key.find(api)
        value = [] if found is None else [found]
    if isinstance(value, Mapping):
        return {k: str(v) for k, v in value.items()
                if not (column == "external_ids" and k == names.REVISION)}
    if not isinstance(value, (list, tuple)):
        value = [value]
    return sorted(str(getattr(item, "uuid", item)) for item in value)


def _same(row: Any, wanted: Mapping[str, Any]) -> bool:
    return not differences(None, row, wanted)


def _resolve(api: Any, value: Any) -> Any:
    if isinstance(value, Ref):
        row = value.key.find(api)
        return [] if row is None else row
    return value
