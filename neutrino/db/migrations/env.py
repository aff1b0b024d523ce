"""Alembic environment: the URL comes from neutrino's configuration."""

from alembic import context

from neutrino.db.models import metadata

config = context.config


def run() -> None:
    connectable = config.attributes.get("connection")
    if connectable is not None:
        context.configure(connection=connectable, target_metadata=metadata,
                          render_as_batch=connectable.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()
        return
    from sqlalchemy import create_engine

    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=metadata,
                          render_as_batch=conn.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()


run()
