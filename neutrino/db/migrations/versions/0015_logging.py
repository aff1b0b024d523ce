"""logging: packet logs of security groups (the ``log`` service plugin)

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "logs",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("resource_type", sa.String(36), nullable=False),
        sa.Column("resource_id", sa.String(36), nullable=True),
        sa.Column("target_id", sa.String(36), nullable=True),
        sa.Column("event", sa.String(255), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["target_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_logs_target_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_logs")),
    )
    for column in ("project_id", "resource_id", "target_id"):
        op.create_index(op.f(f"ix_logs_{column}"), "logs", [column])


def downgrade() -> None:
    op.drop_table("logs")
