"""Local IPs (the local_ip service plugin) and their port associations

Revision ID: 0032
Revises: 0031
"""

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "local_ips",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("local_port_id", sa.String(36), nullable=False),
        sa.Column("network_id", sa.String(36), nullable=False),
        sa.Column("local_ip_address", sa.String(64), nullable=False),
        sa.Column("ip_mode", sa.String(32), nullable=False),
        sa.ForeignKeyConstraint(["local_port_id"], ["ports.id"],
                                name=op.f("fk_local_ips_local_port_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_local_ips")),
    )
    for column in ("project_id", "local_port_id"):
        op.create_index(op.f(f"ix_local_ips_{column}"), "local_ips", [column])
    op.create_table(
        "local_ip_associations",
        sa.Column("local_ip_id", sa.String(36), nullable=False),
        sa.Column("fixed_port_id", sa.String(36), nullable=False),
        sa.Column("fixed_ip", sa.String(64), nullable=False),
        sa.ForeignKeyConstraint(["local_ip_id"], ["local_ips.id"],
                                name=op.f("fk_local_ip_associations_local_ip_id")),
        sa.ForeignKeyConstraint(["fixed_port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_local_ip_associations_fixed_port_id")),
        sa.PrimaryKeyConstraint("local_ip_id", "fixed_port_id",
                                name=op.f("pk_local_ip_associations")),
    )
    op.create_index(op.f("ix_local_ip_associations_fixed_port_id"), "local_ip_associations",
                    ["fixed_port_id"])


def downgrade() -> None:
    # the indexes go with the tables (MySQL will not drop one a foreign key needs)
    op.drop_table("local_ip_associations")
    op.drop_table("local_ips")
