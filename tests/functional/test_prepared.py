"""Prepared statements on each database: values go in and come back as
SQLAlchemy would give them, in the caller's transaction, with its errors."""

from __future__ import annotations

import datetime

import pytest
from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    delete,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from neutrino.db.engine import Database, is_retriable
from neutrino.db.prepared import Prepared
from tests.conftest import BACKENDS
from tests.harness import create_database

metadata = MetaData()
things = Table(
    "things", metadata,
    Column("id", String(36), primary_key=True),
    Column("count", Integer, nullable=False),
    Column("on", Boolean, nullable=False),
    Column("when", DateTime, nullable=False),
    Column("extra", JSON, nullable=False),
    Column("note", String(255)),
)
INSERT = Prepared(things.insert())
BY_ID = Prepared(select(things).where(things.c.id == bindparam("id")))
ON = Prepared(select(things.c.id).where(things.c.on.is_(True)).order_by(things.c.id))
COUNT_UP = Prepared(update(things).where(things.c.id == bindparam("thing"))
                    .values(count=things.c.count + 1))
DROP = Prepared(delete(things).where(things.c.id == bindparam("id")))
WHEN = datetime.datetime(2026, 12, 4, 18, 30, 5)


@pytest.fixture(scope="module", params=BACKENDS)
def db(request, tmp_path_factory):
    url, drop = create_database(request.param, tmp_path_factory.mktemp("prepared"))
    database = Database(url)
    metadata.create_all(database.engine)
    yield database
    database.dispose()
    drop()


def row_of(thing_id: str, **values) -> dict:
    return {"id": thing_id, "count": 1, "on": True, "when": WHEN,
            "extra": {"a": [1, 2]}, "note": None, **values}


def test_values_come_back_as_they_went_in(db):
    db.write(lambda conn: INSERT.run(conn, row_of("a")))
    with db.reader() as conn:
        found = BY_ID.first(conn, {"id": "a"})
        assert found == ("a", 1, True, WHEN, {"a": [1, 2]}, None)
        assert found.when == WHEN and found.on is True and found.note is None
        assert BY_ID.first(conn, {"id": "nope"}) is None
        assert BY_ID.rows(conn, {"id": "a"})[0].extra == {"a": [1, 2]}


def test_many_rows_literals_updates_and_deletes(db):
    db.write(lambda conn: INSERT.run_many(conn, [row_of("m1"), row_of("m2", on=False),
                                                 row_of("m3")]))
    with db.reader() as conn:
        assert [i for i in ON.scalars(conn) if i.startswith("m")] == ["m1", "m3"]
    assert db.write(lambda conn: COUNT_UP.run(conn, {"thing": "m1"})) == 1
    assert db.write(lambda conn: COUNT_UP.run(conn, {"thing": "none"})) == 0
    with db.reader() as conn:
        assert BY_ID.first(conn, {"id": "m1"}).count == 2
    assert db.write(lambda conn: DROP.run(conn, {"id": "m2"})) == 1


def test_work_is_in_the_callers_transaction(db):
    def fails(conn):
        INSERT.run(conn, row_of("t1"))
        raise RuntimeError("undone")

    with pytest.raises(RuntimeError):
        db.write(fails)
    with db.reader() as conn:
        assert BY_ID.first(conn, {"id": "t1"}) is None


def test_database_errors_are_sqlalchemys(db):
    db.write(lambda conn: INSERT.run(conn, row_of("dup")))
    with db.engine.connect() as conn, conn.begin(), pytest.raises(IntegrityError) as raised:
        INSERT.run(conn, row_of("dup"))
    assert is_retriable(raised.value)


def test_an_in_list_of_varying_length_is_refused(db):
    varying = Prepared(select(things.c.id).where(
        things.c.id.in_(bindparam("ids", expanding=True))))
    with db.reader() as conn, pytest.raises(ValueError, match="IN list"):
        varying.rows(conn, {"ids": ["a"]})
