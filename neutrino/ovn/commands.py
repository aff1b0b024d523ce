"""Northbound writes: the ``ovn`` mechanism driver's and the OVN router plugin's.

A write is a list of commands, each saying a row (or a set of rows) as
neutrino wants it whole, never a delta against what the API call changed, so
the same command creates, updates and repairs: the maintenance task and
``neutrino-ovn-db-sync`` re-run it for drift. ``Northbound.transact`` reads
what the commands ask for (``wants``: one round trip for all of them), lets
each add its OVSDB operations to one transaction (``build``), and commits it.

The revision check: a row that carries a revision (``neutron:revision_number``
in its ``external_ids``) is written only when the Northbound one is not newer.
The transaction says the ``external_ids`` it read with an OVSDB *wait*: if
another writer changed them meanwhile, the server refuses the transaction and
it is made again on what is there now. Two API workers updating one port can
so commit in either order and the Northbound database still ends with the
newer revision.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from neutrino.ovn import names
from neutrino.ovn.ovsdb import idlutils

if TYPE_CHECKING:
    from neutrino.ovn.northbound import Txn

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


def revision_of(external_ids: Mapping[str, str]) -> int:
    try:
        return int(external_ids.get(names.REVISION, -1))
    except ValueError:
        return -1


class WriteRow:
    """Make the row ``key`` finds hold ``columns`` (created if missing, in
    ``parent`` if given); skipped when the Northbound row is newer than
    ``revision``. Result: "written", "stale" or "missing-parent".

    ``new``: an API create's row, whose key is an index of its table (a port's
    name): inserted at first without a look (a look by name is a scan of the
    table), and looked for only if the index refuses the insert."""

    def __init__(self, key: Key, columns: Mapping[str, Any], revision: int | None = None,
                 parent: Parent | None = None, new: bool = False):
        self.key = key
        self.columns = columns
        self.revision = revision
        self.parent = parent
        self.new = new
        self.result = ""

    def wants(self) -> list[tuple[Key, tuple[str, ...]]]:
        found: list[tuple[Key, tuple[str, ...]]] = [] if self.new else [
            (self.key, ("external_ids",) if self.revision is not None else ())]
        if self.parent is not None:
            found.append((self.parent.key, ()))
        found += [(value.key, ()) for value in self.columns.values() if isinstance(value, Ref)]
        return found

    def build(self, txn: Txn) -> None:
        parent = None
        if self.parent is not None:
            parent = txn.find(self.parent.key)
            if parent is None:
                self.result = "missing-parent"
                return
        values = {column: txn.encode(value) for column, value in self.columns.items()}
        unseen = self.new and txn.optimistic
        row = None if unseen else txn.find(
            self.key, ("external_ids",) if self.revision is not None else ())
        if row is None:
            if not self.key.column.startswith("external_ids:"):
                values[self.key.column] = self.key.value
            if not unseen:
                txn.absent(self.key)  # another writer may be inserting it now
            row = txn.insert(self.key, values)
            if parent is not None and self.parent is not None:
                txn.add_to(parent, self.parent.column, row)
        else:
            if self.revision is not None:
                txn.unchanged(row, "external_ids")
                if revision_of(row.get("external_ids")) > self.revision:
                    LOG.debug("not writing %s %s: revision %s is older than the "
                              "Northbound's", self.key.table, self.key.value, self.revision)
                    self.result = "stale"
                    return
            txn.update(row, values)
        self.result = "written"


class KeepOnly:
    """The set ``column`` of the row ``parent`` finds keeps only the members (rows
    of ``table``) whose ``name`` is in ``names`` (the ports a router still has)."""

    def __init__(self, parent: Key, column: str, table: str, names: set[str]):
        self.parent = parent
        self.column = column
        self.table = table
        self.names = names

    def wants(self) -> list[tuple[Key, tuple[str, ...]]]:
        return [(self.parent, (self.column,))]

    def build(self, txn: Txn) -> None:
        row = txn.find(self.parent, (self.column,))
        if row is None or row.inserted:
            return
        for member in txn.rows_by_uuid(self.table, row.members(self.column), ("name",)):
            if member.get("name") not in self.names:
                txn.remove_from(row, self.column, member)


class SetBalancers:
    """The router ``router`` finds uses exactly the load balancers named in
    ``names`` (written before, in this transaction or earlier); a load balancer
    of its own (``neutron:router_name`` is its id) no longer used is deleted
    (they are root rows)."""

    def __init__(self, router: Key, names: set[str]):
        self.router = router
        self.names = names

    def wants(self) -> list[tuple[Key, tuple[str, ...]]]:
        return [(self.router, ("load_balancer",)),
                *((Key("Load_Balancer", "name", name), ()) for name in self.names)]

    def build(self, txn: Txn) -> None:
        router_id = self.router.value[len("neutron-"):]
        found = txn.find(self.router, ("load_balancer",))
        have = set() if found is None or found.inserted else set(found.members("load_balancer"))
        for name in self.names:
            balancer = txn.find(Key("Load_Balancer", "name", name))
            if found is not None and balancer is not None and balancer.uuid_str not in have:
                txn.add_to(found, "load_balancer", balancer)
        for balancer in txn.select("Load_Balancer", [["external_ids", "includes", [
                "map", [[names.ROUTER_NAME, router_id]]]]], ("name",)):
            if balancer.get("name") not in self.names:
                if found is not None and balancer.uuid_str in have:
                    txn.remove_from(found, "load_balancer", balancer)
                txn.delete(balancer)


class DeleteRow:
    """Remove the row ``key`` finds (from ``parent`` too); nothing if it is gone."""

    def __init__(self, key: Key, parent: Parent | None = None):
        self.key = key
        self.parent = parent

    def wants(self) -> list[tuple[Key, tuple[str, ...]]]:
        return [(self.key, ()), *([(self.parent.key, ())] if self.parent else [])]

    def build(self, txn: Txn) -> None:
        row = txn.find(self.key)
        if row is None:
            return
        if self.parent is not None:
            parent = txn.find(self.parent.key)
            if parent is not None:
                txn.remove_from(parent, self.parent.column, row)
        txn.delete(row)


class MissingRows(Exception):
    """Rows a write needs are not there (a port's groups): make them, then again."""

    def __init__(self, names: set[str]):
        super().__init__(", ".join(sorted(names)))
        self.names = names


class SetMembership:
    """The row ``member`` finds belongs to the sets ``column`` of exactly the rows of
    ``table`` whose ``name`` is in ``wanted`` among those ``ours`` accepts;
    MissingRows (and nothing written) when some of ``wanted`` do not exist."""

    def __init__(self, member: Key, table: str, column: str, wanted: set[str],
                 ours: Callable[[str], bool]):
        self.member = member
        self.table = table
        self.column = column
        self.wanted = wanted
        self.ours = ours

    def wants(self) -> list[tuple[Key, tuple[str, ...]]]:
        # not the member: a WriteRow of it comes first
        return [(Key(self.table, "name", name), ()) for name in self.wanted]

    def build(self, txn: Txn) -> None:
        row = txn.find(self.member)
        if row is None:
            return
        groups = {name: txn.find(Key(self.table, "name", name)) for name in self.wanted}
        missing = {name for name, group in groups.items() if group is None}
        if missing:
            raise MissingRows(missing)
        holding = {} if row.inserted else {  # a new row is in no group yet
            group.get("name"): group for group in txn.select(
                self.table, [[self.column, "includes", ["set", [row.uuid]]]], ("name",))}
        for name, group in groups.items():
            if name not in holding and group is not None:
                txn.add_to(group, self.column, row)
        for name, group in holding.items():
            if name not in self.wanted and self.ours(name):
                txn.remove_from(group, self.column, row)


class ReplaceChildren:
    """The set ``column`` of the row ``parent`` finds holds exactly ``children``
    (each the columns of a new row of ``table``), told apart by the ``by`` key of
    their ``external_ids``: unchanged ones stay, others are added or dropped."""

    def __init__(self, parent: Key, column: str, table: str, by: str,
                 children: list[dict[str, Any]]):
        self.parent = parent
        self.column = column
        self.table = table
        self.by = by
        self.children = children
        self.result = ""

    def wants(self) -> list[tuple[Key, tuple[str, ...]]]:
        return [(self.parent, (self.column,))]

    def build(self, txn: Txn) -> None:
        parent = txn.find(self.parent, (self.column,))
        if parent is None:
            self.result = "missing-parent"
            return
        present: dict[str | None, list[Any]] = {}
        if not parent.inserted:  # a new row holds nothing yet
            for child in txn.rows_by_uuid(self.table, parent.members(self.column)):
                present.setdefault(child.get("external_ids").get(self.by), []).append(child)
        for wanted in self.children:
            ident = wanted["external_ids"].get(self.by)
            rows = present.pop(ident, [])
            if len(rows) == 1 and _same(rows[0].values(), wanted):
                continue
            for stale in rows:
                txn.remove_from(parent, self.column, stale)
            child = txn.insert(None, {column: txn.encode(value)
                                      for column, value in wanted.items()}, self.table)
            txn.add_to(parent, self.column, child)
        for rows in present.values():
            for stale in rows:
                txn.remove_from(parent, self.column, stale)
        self.result = "written"

def differences(api: Any, row: Any, wanted: Mapping[str, Any]) -> list[str]:
    """The columns of ``row`` (an IDL row, or a row's columns as a mapping)
    that do not hold what ``wanted`` says, each as
    "column: <what it holds> instead of <what is wanted>"; the revision in
    ``external_ids`` aside (what was written matters, not from which revision)."""
    found = []
    for column, value in wanted.items():
        held = row[column] if isinstance(row, Mapping) else getattr(row, column)
        have, want = _normal(api, column, held), _normal(api, column, value)
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

