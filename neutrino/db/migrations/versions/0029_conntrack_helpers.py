"""conntrack helpers of routers (the conntrack_helper service plugin)

Revision ID: 0029
Revises: 0028
"""

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conntrack_helpers",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("router_id", sa.String(36), nullable=False),
        sa.Column("protocol", sa.String(40), nullable=False),
        sa.Column("port", sa.Integer(), nullable=False),
        sa.Column("helper", sa.String(64), nullable=False),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="CASCADE",
                                name=op.f("fk_conntrack_helpers_router_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conntrack_helpers")),
        sa.UniqueConstraint("router_id", "protocol", "port", "helper",
                            name="uq_conntrack_helpers_router"),
    )
    op.create_index(op.f("ix_conntrack_helpers_router_id"), "conntrack_helpers",
                    ["router_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_conntrack_helpers_router_id"), table_name="conntrack_helpers")
    op.drop_table("conntrack_helpers")
