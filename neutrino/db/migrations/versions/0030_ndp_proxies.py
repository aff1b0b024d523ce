"""NDP proxies of routers (the ndp_proxy service plugin), and the routers'
``enable_ndp_proxy``

Revision ID: 0030
Revises: 0029
"""

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ndp_proxies",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("router_id", sa.String(36), nullable=False),
        sa.Column("port_id", sa.String(36), nullable=False),
        sa.Column("ip_address", sa.String(64), nullable=False),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="CASCADE",
                                name=op.f("fk_ndp_proxies_router_id_routers")),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_ndp_proxies_port_id_ports")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ndp_proxies")),
        sa.UniqueConstraint("router_id", "ip_address",
                            name=op.f("uq_ndp_proxies_router_id_ip_address")),
    )
    for column in ("project_id", "router_id", "port_id"):
        op.create_index(op.f(f"ix_ndp_proxies_{column}"), "ndp_proxies", [column])
    op.create_table(
        "router_ndp_proxy_state",
        sa.Column("router_id", sa.String(36), nullable=False),
        sa.Column("enable_ndp_proxy", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="CASCADE",
                                name=op.f("fk_router_ndp_proxy_state_router_id_routers")),
        sa.PrimaryKeyConstraint("router_id", name=op.f("pk_router_ndp_proxy_state")),
    )


def downgrade() -> None:
    # the indexes go with the table (MySQL will not drop one a foreign key needs)
    op.drop_table("router_ndp_proxy_state")
    op.drop_table("ndp_proxies")
