"""The Northbound database as the server writes it: transactions of OVSDB
operations over one JSON-RPC connection, and no replica.

A write (``Northbound.transact``) reads first what its commands ask for, all
of it in one round trip (the row a port becomes, its switch, its DHCP options,
its port groups), then sends one transaction with the operations the commands
built from what was read, guarded by *wait* operations where what was read
matters (a revision; that a row is still missing). If another writer got in
between, the server refuses the transaction and it is made again from a new
read. Rows are looked up by the uuid they were last seen with (``KnownRows``):
ovsdb-server finds a row by uuid at once, but by name only by a scan of its
table, which for ports would grow with every port.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from neutrino.ovn.commands import Key, Ref
from neutrino.ovn.jsonrpc import OvsdbClient, OvsdbError
from neutrino.ovn.ovsdb import OvnUnavailable, OvnUnavailableError, wait_connected

#: how many times a transaction refused for a concurrent change is made again
TRIES = 10
#: the errors of a transaction that another writer's change caused
CONCURRENT = ("timed out", "constraint violation")


class Command(Protocol):
    def wants(self) -> list[tuple[Key, tuple[str, ...]]]: ...

    def build(self, txn: Txn) -> None: ...


def decode(value: Any) -> Any:
    """An OVSDB JSON value as Python: a set as a list, a map as a dict, a uuid
    as its string."""
    if isinstance(value, list):
        kind, body = value
        if kind == "set":
            return [decode(item) for item in body]
        if kind == "map":
            return {decode(k): decode(v) for k, v in body}
        return body  # ["uuid", ...], ["named-uuid", ...]
    return value


def condition(key: Key) -> list[list[Any]]:
    if key.column.startswith("external_ids:"):
        return [["external_ids", "includes", ["map", [[key.column.split(":", 1)[1],
                                                        key.value]]]]]
    return [[key.column, "==", key.value]]


class Found:
    """A row of a transaction: read from the database (``raw``: the columns
    read, as OVSDB JSON) or inserted by the transaction (``new``: its row)."""

    def __init__(self, table: str, uuid: list[str], raw: Mapping[str, Any] | None = None,
                 new: dict[str, Any] | None = None):
        self.table = table
        self.uuid = uuid
        self.raw = raw or {}
        self.new = new

    @property
    def inserted(self) -> bool:
        return self.new is not None

    @property
    def uuid_str(self) -> str:
        return self.uuid[1]

    def get(self, column: str) -> Any:
        return decode(self.raw[column])

    def members(self, column: str) -> list[Any]:
        """A set column's members (OVSDB says a set of one as the bare member)."""
        value = self.raw[column]
        return decode(value) if isinstance(value, list) and value[0] == "set" else [
            decode(value)]

    def values(self) -> dict[str, Any]:
        return {column: decode(value) for column, value in self.raw.items()
                if column != "_uuid"}


class KnownRows:
    """The uuid each key last found: ovsdb-server answers a query by uuid with one
    lookup, and one by any other column (a port's name) by scanning the table."""

    LIMIT = 500_000

    def __init__(self) -> None:
        self._uuids: dict[Key, str] = {}

    def get(self, key: Key) -> str | None:
        return self._uuids.get(key)

    def put(self, key: Key, uuid: str) -> None:
        if len(self._uuids) >= self.LIMIT:
            self._uuids.clear()
        self._uuids[key] = uuid

    def drop(self, key: Key) -> None:
        self._uuids.pop(key, None)


class Txn:
    """One transaction being built: the rows read, by key, and the operations.
    ``optimistic`` (a first try): a row a create expects to be new is inserted
    without a look (WriteRow's ``new``), and a row whose uuid is known and of
    which no column is wanted (a port's switch, its port groups) is not read
    but checked by the transaction itself; a port create is so one round trip.
    If either guess was wrong, the transaction fails and is made again without."""

    def __init__(self, client: OvsdbClient, known: KnownRows | None = None,
                 optimistic: bool = False):
        self._client = client
        self._known_rows = known or KnownRows()
        self.optimistic = optimistic
        self.ops: list[dict[str, Any]] = []
        self._rows: dict[Key, Found | None] = {}
        self._read: dict[Key, set[str]] = {}
        self._names = itertools.count(1)
        self._inserted: dict[int, Key] = {}  # the index of an insert op: its key

    # --- reads ---------------------------------------------------------------------

    def prefetch(self, wants: Iterable[tuple[Key, tuple[str, ...]]]) -> None:
        """Read, in one round trip, the rows of ``wants`` (with those columns)."""
        columns: dict[Key, set[str]] = {}
        for key, more in wants:
            columns.setdefault(key, set()).update(more)
        todo = {key: cols for key, cols in columns.items() if not self._known(key, cols)}
        if not todo:
            return
        seen = {key: self._known_rows.get(key) for key in todo}
        if self.optimistic:  # rows known, no column wanted: trusted, and checked at commit
            for key, known in list(seen.items()):
                if todo[key] or known is None:
                    continue
                uuid = ["uuid", known]
                self.ops.append({"op": "wait", "timeout": 0, "table": key.table,
                                 "where": [["_uuid", "==", uuid], *condition(key)],
                                 "columns": ["_uuid"], "until": "==", "rows": [{"_uuid": uuid}]})
                self._rows[key] = Found(key.table, uuid, {"_uuid": uuid})
                self._read[key] = set()
                del todo[key]
            if not todo:
                return
        ops = [{"op": "select", "table": key.table,
                "where": condition(key) if seen[key] is None else [
                    ["_uuid", "==", ["uuid", seen[key]]], *condition(key)],
                "columns": sorted({"_uuid", *cols, *(["external_ids"] if key.without else [])})}
               for key, cols in todo.items()]
        again = []
        for (key, cols), result in zip(todo.items(), self._read_ops(ops), strict=True):
            rows = [row for row in result["rows"]
                    if not any(k in decode(row["external_ids"]) for k in key.without)]
            if not rows and seen[key] is not None:  # no longer where it was
                self._known_rows.drop(key)
                again.append((key, tuple(cols)))
                continue
            self._rows[key] = Found(key.table, rows[0]["_uuid"], rows[0]) if rows else None
            self._read[key] = cols
            if rows:
                self._known_rows.put(key, rows[0]["_uuid"][1])
        if again:
            self.prefetch(again)

    def _known(self, key: Key, columns: Iterable[str]) -> bool:
        if key not in self._rows:
            return False
        row = self._rows[key]
        return row is None or row.inserted or set(columns) <= self._read[key]

    def find(self, key: Key, columns: tuple[str, ...] = ()) -> Found | None:
        """The row ``key`` finds (as this transaction leaves it so far), or None."""
        if not self._known(key, columns):
            self.prefetch([(key, columns)])
        return self._rows[key]

    def select(self, table: str, where: list[Any], columns: Iterable[str]) -> list[Found]:
        """The rows of ``table`` that match ``where``, as the database holds them."""
        result = self._read_ops([{"op": "select", "table": table, "where": where,
                                  "columns": sorted({"_uuid", *columns})}])[0]
        return [Found(table, row["_uuid"], row) for row in result["rows"]]

    def rows_by_uuid(self, table: str, uuids: Iterable[str],
                     columns: Iterable[str] | None = None) -> list[Found]:
        """Rows of ``table`` by uuid (all columns when ``columns`` is None)."""
        ops = []
        for uuid in uuids:
            op: dict[str, Any] = {"op": "select", "table": table,
                                  "where": [["_uuid", "==", ["uuid", uuid]]]}
            if columns is not None:
                op["columns"] = sorted({"_uuid", *columns})
            ops.append(op)
        return [Found(table, row["_uuid"], row)
                for result in (self._read_ops(ops) if ops else []) for row in result["rows"]]

    def _read_ops(self, ops: list[dict[str, Any]]) -> list[Any]:
        results = self._client.transact(ops)
        error = first_error(results)
        if error is not None:
            raise OvsdbError(error)
        return results

    # --- writes --------------------------------------------------------------------

    def encode(self, value: Any) -> Any:
        """A column's value as OVSDB JSON; a Ref as the row it names (or none)."""
        if isinstance(value, Ref):
            found = self.find(value.key)
            return ["set", []] if found is None else found.uuid
        if isinstance(value, Found):
            return value.uuid
        if isinstance(value, Mapping):
            return ["map", [[k, self.encode(v)] for k, v in value.items()]]
        if isinstance(value, (list, tuple, set, frozenset)):
            return ["set", [self.encode(item) for item in value]]
        return value

    def absent(self, key: Key) -> None:
        """The transaction fails if a row ``key`` finds appears meanwhile (by an
        indexed name only: those by external_ids are told apart by more)."""
        if not key.column.startswith("external_ids:"):
            self.ops.append({"op": "wait", "timeout": 0, "table": key.table,
                             "where": condition(key), "columns": ["_uuid"], "until": "==",
                             "rows": []})

    def unchanged(self, row: Found, column: str) -> None:
        """The transaction fails if ``column`` of ``row`` changes meanwhile."""
        self.ops.append({"op": "wait", "timeout": 0, "table": row.table,
                         "where": [["_uuid", "==", row.uuid]], "columns": [column],
                         "until": "==", "rows": [{column: row.raw[column]}]})

    def insert(self, key: Key | None, values: dict[str, Any], table: str = "") -> Found:
        name = f"row{next(self._names)}"
        table = key.table if key is not None else table
        self.ops.append({"op": "insert", "table": table, "row": values, "uuid-name": name})
        found = Found(table, ["named-uuid", name], new=values)
        if key is not None:
            self._rows[key] = found
            self._inserted[len(self.ops) - 1] = key
        return found

    def committed(self, results: list[Any]) -> None:
        """Note where the rows this transaction inserted are."""
        for index, key in self._inserted.items():
            self._known_rows.put(key, results[index]["uuid"][1])

    def update(self, row: Found, values: dict[str, Any]) -> None:
        if row.new is not None:
            row.new.update(values)
        elif values:
            self.ops.append({"op": "update", "table": row.table,
                             "where": [["_uuid", "==", row.uuid]], "row": values})

    def add_to(self, row: Found, column: str, member: Found) -> None:
        if row.new is not None:
            held = row.new.get(column, ["set", []])
            members = held[1] if held[0] == "set" else [held]
            row.new[column] = ["set", [*members, member.uuid]]
        else:
            self._mutate(row, column, "insert", member)

    def remove_from(self, row: Found, column: str, member: Found) -> None:
        self._mutate(row, column, "delete", member)

    def _mutate(self, row: Found, column: str, how: str, member: Found) -> None:
        self.ops.append({"op": "mutate", "table": row.table,
                         "where": [["_uuid", "==", row.uuid]],
                         "mutations": [[column, how, ["set", [member.uuid]]]]})

    def delete(self, row: Found) -> None:
        self.ops.append({"op": "delete", "table": row.table,
                         "where": [["_uuid", "==", row.uuid]]})
        for key, found in self._rows.items():
            if found is row:
                self._rows[key] = None
                self._known_rows.drop(key)


def first_error(results: list[Any]) -> str | None:
    """The first error of a transaction's results (an operation's, or the
    commit's, which comes after them)."""
    for result in results:
        if isinstance(result, dict) and result.get("error"):
            return f"{result['error']}: {result.get('details', '')}".rstrip(": ")
    return None


class Northbound:
    """The Northbound database at ``remote``, for writes and small reads."""

    def __init__(self, remote: str, timeout: float = 10.0):
        self.remote = remote
        self.client = OvsdbClient(remote, "OVN_Northbound", timeout)
        self.known = KnownRows()

    def start(self) -> None:
        self.client.start()

    def stop(self) -> None:
        self.client.stop()

    @property
    def connected(self) -> bool:
        return self.client.connected

    def wait_connected(self, seconds: float) -> None:
        """Return once connected; OvnUnavailable after ``seconds``."""
        wait_connected(lambda: self.connected, seconds,
                       f"the OVN_Northbound database at {self.remote}")

    def require_for_api(self) -> None:
        """The API's answer when the database cannot be reached now: 503."""
        if not self.connected:
            raise OvnUnavailableError(reason=f"the OVN_Northbound database at {self.remote} "
                                             "cannot be reached")

    def transact(self, commands: Sequence[Command], what: str) -> list[Any]:
        """Run ``commands`` in one transaction; their results. OvnUnavailable when
        the database cannot be reached or did not answer."""
        for attempt in range(TRIES):
            txn = Txn(self.client, self.known, optimistic=attempt == 0)
            try:
                txn.prefetch(want for command in commands for want in command.wants())
                for command in commands:
                    command.build(txn)
                results = self.client.transact(txn.ops) if txn.ops else []
            except OvnUnavailable as error:
                raise OvnUnavailable(f"{what}: {error}") from None
            refused = first_error(results)
            if refused is None:
                txn.committed(results)
                return [getattr(command, "result", None) for command in commands]
            if not refused.startswith(CONCURRENT):
                raise OvsdbError(f"{what}: {refused}")
        raise OvnUnavailable(f"{what}: the rows kept changing under it ({TRIES} tries)")

    def select(self, table: str, where: list[Any], columns: Iterable[str]
               ) -> list[dict[str, Any]]:
        """The rows of ``table`` that match ``where`` (``columns`` of them)."""
        try:
            return [row.values() for row in Txn(self.client).select(table, where, columns)]
        except OvnUnavailable as error:
            raise OvnUnavailable(f"reading {table}: {error}") from None

    def bump_nb_cfg(self) -> int | None:
        """``NB_Global.nb_cfg`` one up (the chassis' heartbeat request); its new value."""
        results = self.client.transact([
            {"op": "mutate", "table": "NB_Global", "where": [],
             "mutations": [["nb_cfg", "+=", 1]]},
            {"op": "select", "table": "NB_Global", "where": [], "columns": ["nb_cfg"]}])
        error = first_error(results)
        if error is not None:
            raise OvsdbError(f"asking the chassis for a heartbeat: {error}")
        rows = results[1]["rows"]
        return int(rows[0]["nb_cfg"]) if rows else None

    def exists(self, key: Key) -> bool:
        return bool(self.select(key.table, condition(key), ()))
