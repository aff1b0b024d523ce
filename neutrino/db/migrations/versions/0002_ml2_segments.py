"""ML2: network segments and segmentation id allocations

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "network_segments",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("network_id", sa.String(36), nullable=False),
        sa.Column("network_type", sa.String(32), nullable=False),
        sa.Column("physical_network", sa.String(64), nullable=True),
        sa.Column("segmentation_id", sa.Integer(), nullable=True),
        sa.Column("segment_index", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(255), nullable=True),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["network_id"], ["networks.id"], ondelete="CASCADE",
                                name=op.f("fk_network_segments_network_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_network_segments")),
    )
    op.create_index(op.f("ix_network_segments_network_id"), "network_segments",
                    ["network_id"])
    op.create_table(
        "segment_allocations",
        sa.Column("network_type", sa.String(32), nullable=False),
        sa.Column("physical_network", sa.String(64), nullable=False),
        sa.Column("segmentation_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("allocated", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("network_type", "physical_network", "segmentation_id",
                                name=op.f("pk_segment_allocations")),
    )
    op.create_index("ix_segment_allocations_free", "segment_allocations",
                    ["network_type", "physical_network", "allocated"])
