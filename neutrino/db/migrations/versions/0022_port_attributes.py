"""port_attributes: ports' NUMA affinity policy, device profile and trust, each
in a table of its own

Revision ID: 0022
Revises: 0021
"""

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

#: table -> its value column
TABLES = {
    "port_numa_affinity_policies": sa.Column("numa_affinity_policy", sa.String(16),
                                             nullable=False),
    "port_device_profiles": sa.Column("device_profile", sa.String(255), nullable=False),
    "port_trusted": sa.Column("trusted", sa.Boolean(), nullable=False),
}


def upgrade() -> None:
    for table, value in TABLES.items():
        op.create_table(
            table,
            sa.Column("port_id", sa.String(36), nullable=False),
            value,
            sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                    name=op.f(f"fk_{table}_port_id")),
            sa.PrimaryKeyConstraint("port_id", name=op.f(f"pk_{table}")),
        )


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_table(table)
