"""The migrations build exactly the schema the code describes, on every database."""

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from neutrino.db import migrate
from neutrino.db.models import metadata
from tests.harness import create_database


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mysql"])
def test_migrations_match_models(tmp_path, backend):
    url, drop = create_database(backend, tmp_path)
    try:
        migrate.upgrade(url)
        migrate.upgrade(url)  # a second run is a no-op
        head = ScriptDirectory.from_config(migrate.alembic_config(url)).get_current_head()
        assert migrate.current(url) == head
        engine = create_engine(url)
        try:
            with engine.connect() as conn:
                diff = compare_metadata(MigrationContext.configure(conn), metadata)
        finally:
            engine.dispose()
        assert diff == []
    finally:
        drop()
