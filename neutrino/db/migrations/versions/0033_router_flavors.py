"""routers' flavors (l3-flavors): each flavored router's flavor and provider

Revision ID: 0033
Revises: 0032
"""

import sqlalchemy as sa
from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "router_flavors",
        sa.Column("router_id", sa.String(36), nullable=False),
        sa.Column("flavor_id", sa.String(36), nullable=False),
        sa.Column("provider_name", sa.String(255), nullable=False),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="CASCADE",
                                name=op.f("fk_router_flavors_router_id_routers")),
        sa.ForeignKeyConstraint(["flavor_id"], ["flavors.id"],
                                name=op.f("fk_router_flavors_flavor_id_flavors")),
        sa.PrimaryKeyConstraint("router_id", name=op.f("pk_router_flavors")),
    )
    op.create_index(op.f("ix_router_flavors_flavor_id"), "router_flavors", ["flavor_id"])


def downgrade() -> None:
    # the index goes with the table (MySQL will not drop one a foreign key needs)
    op.drop_table("router_flavors")
