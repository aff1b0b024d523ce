"""network_segment_ranges (network-segment-range); segment_host_mappings,
subnets.segment_id and ports.ip_allocation (routed networks);
subnet_service_types (subnet-service-types)

Revision ID: 0027
Revises: 0026
"""

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "network_segment_ranges",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("default", sa.Boolean(), nullable=False),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.Column("network_type", sa.String(32), nullable=False),
        sa.Column("physical_network", sa.String(64), nullable=True),
        sa.Column("minimum", sa.BigInteger(), nullable=False),
        sa.Column("maximum", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_network_segment_ranges")),
    )
    op.create_index(op.f("ix_network_segment_ranges_project_id"), "network_segment_ranges",
                    ["project_id"])
    op.create_table(
        "segment_host_mappings",
        sa.Column("segment_id", sa.String(36), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.ForeignKeyConstraint(["segment_id"], ["network_segments.id"], ondelete="CASCADE",
                                name=op.f("fk_segment_host_mappings_segment_id_network_segments")),
        sa.PrimaryKeyConstraint("segment_id", "host", name=op.f("pk_segment_host_mappings")),
    )
    op.create_index(op.f("ix_segment_host_mappings_host"), "segment_host_mappings", ["host"])
    op.add_column("ports", sa.Column("ip_allocation", sa.String(16), nullable=True))
    op.create_table(
        "subnet_service_types",
        sa.Column("subnet_id", sa.String(36), nullable=False),
        sa.Column("service_type", sa.String(255), nullable=False),
        sa.ForeignKeyConstraint(["subnet_id"], ["subnets.id"], ondelete="CASCADE",
                                name=op.f("fk_subnet_service_types_subnet_id_subnets")),
        sa.PrimaryKeyConstraint("subnet_id", "service_type",
                                name=op.f("pk_subnet_service_types")),
    )
    with op.batch_alter_table("subnets") as batch:  # SQLite rebuilds it for the key
        batch.add_column(sa.Column("segment_id", sa.String(36), nullable=True))
        batch.create_index(batch.f("ix_subnets_segment_id"), ["segment_id"])
        batch.create_foreign_key(batch.f("fk_subnets_segment_id_network_segments"),
                                 "network_segments", ["segment_id"], ["id"])


def downgrade() -> None:
    op.drop_table("subnet_service_types")
    with op.batch_alter_table("subnets") as batch:
        batch.drop_constraint(batch.f("fk_subnets_segment_id_network_segments"),
                              type_="foreignkey")
        batch.drop_index(batch.f("ix_subnets_segment_id"))
        batch.drop_column("segment_id")
    with op.batch_alter_table("ports") as batch:  # SQLite rebuilds it
        batch.drop_column("ip_allocation")
    op.drop_table("segment_host_mappings")
    op.drop_table("network_segment_ranges")
