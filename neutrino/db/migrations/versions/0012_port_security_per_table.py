"""port_security: a table for networks and one for ports, rows going with their owner

One table keyed by any resource id kept a row for every network and port ever
deleted. Rows of resources still present move over; the rest are dropped.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

OWNERS = (("network_port_security", "network_id", "networks"),
          ("port_port_security", "port_id", "ports"))


def upgrade() -> None:
    old = sa.table("port_security", sa.column("resource_id", sa.String),
                   sa.column("enabled", sa.Boolean))
    for table, key, owner in OWNERS:
        op.create_table(
            table,
            sa.Column(key, sa.String(36), nullable=False),
            sa.Column("enabled", sa.Boolean(), nullable=False),
            sa.ForeignKeyConstraint([key], [f"{owner}.id"], ondelete="CASCADE",
                                    name=op.f(f"fk_{table}_{key}")),
            sa.PrimaryKeyConstraint(key, name=op.f(f"pk_{table}")),
        )
        owners = sa.table(owner, sa.column("id", sa.String))
        op.execute(sa.table(table, sa.column(key), sa.column("enabled")).insert().from_select(
            [key, "enabled"], sa.select(old.c.resource_id, old.c.enabled).where(
                old.c.resource_id.in_(sa.select(owners.c.id)))))
    op.drop_table("port_security")


def downgrade() -> None:
    op.create_table(
        "port_security",
        sa.Column("resource_id", sa.String(36), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("resource_id", name=op.f("pk_port_security")),
    )
    new = sa.table("port_security", sa.column("resource_id"), sa.column("enabled"))
    for table, key, _ in OWNERS:
        rows = sa.table(table, sa.column(key, sa.String), sa.column("enabled", sa.Boolean))
        op.execute(new.insert().from_select(["resource_id", "enabled"],
                                            sa.select(rows.c[key], rows.c.enabled)))
        op.drop_table(table)
