"""metering: labels and their rules

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "metering_labels",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.String(1024), nullable=False),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_metering_labels")),
    )
    op.create_index(op.f("ix_metering_labels_project_id"), "metering_labels", ["project_id"])
    op.create_table(
        "metering_label_rules",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("metering_label_id", sa.String(36), nullable=False),
        sa.Column("direction", sa.String(16), nullable=False),
        sa.Column("excluded", sa.Boolean(), nullable=False),
        sa.Column("remote_ip_prefix", sa.String(64), nullable=True),
        sa.Column("source_ip_prefix", sa.String(64), nullable=True),
        sa.Column("destination_ip_prefix", sa.String(64), nullable=True),
        sa.ForeignKeyConstraint(["metering_label_id"], ["metering_labels.id"],
                                ondelete="CASCADE",
                                name=op.f("fk_metering_label_rules_metering_label_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_metering_label_rules")),
    )
    op.create_index(op.f("ix_metering_label_rules_metering_label_id"),
                    "metering_label_rules", ["metering_label_id"])


def downgrade() -> None:
    op.drop_table("metering_label_rules")
    op.drop_table("metering_labels")
