"""agents_az: agents' description may be null; availability zone hints of networks
and routers

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.alter_column("description", existing_type=sa.String(255), nullable=True)
    op.create_table(
        "network_availability_zone_hints",
        sa.Column("network_id", sa.String(36), nullable=False),
        sa.Column("hints", sa.String(255), nullable=False),
        sa.ForeignKeyConstraint(["network_id"], ["networks.id"], ondelete="CASCADE",
                                name=op.f("fk_network_availability_zone_hints_network_id")),
        sa.PrimaryKeyConstraint("network_id", name=op.f("pk_network_availability_zone_hints")),
    )
    op.create_table(
        "router_availability_zone_hints",
        sa.Column("router_id", sa.String(36), nullable=False),
        sa.Column("hints", sa.String(255), nullable=False),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="CASCADE",
                                name=op.f("fk_router_availability_zone_hints_router_id")),
        sa.PrimaryKeyConstraint("router_id", name=op.f("pk_router_availability_zone_hints")),
    )
