"""Schema migrations (alembic), run by the server at start and by neutrino-db-manage."""

from __future__ import annotations

import os

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine

HERE = os.path.dirname(os.path.abspath(__file__))


def alembic_config(url: str) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", os.path.join(HERE, "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def current(url: str) -> str | None:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def revision(url: str, message: str, autogenerate: bool = True) -> None:
    command.revision(alembic_config(url), message=message, autogenerate=autogenerate)
