"""highly available routers: the projects' HA networks, the HA routers' virtual
router ids, their ports per L3 agent and the agents' roles

Revision ID: 0031
Revises: 0030
"""

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ha_router_networks",
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("network_id", sa.String(36), nullable=False),
        sa.ForeignKeyConstraint(["network_id"], ["networks.id"], ondelete="CASCADE",
                                name=op.f("fk_ha_router_networks_network_id_networks")),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_ha_router_networks")),
        sa.UniqueConstraint("network_id", name=op.f("uq_ha_router_networks_network_id")),
    )
    op.create_table(
        "ha_routers",
        sa.Column("router_id", sa.String(36), nullable=False),
        sa.Column("network_id", sa.String(36), nullable=False),
        sa.Column("vr_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="CASCADE",
                                name=op.f("fk_ha_routers_router_id_routers")),
        sa.ForeignKeyConstraint(["network_id"], ["networks.id"], ondelete="CASCADE",
                                name=op.f("fk_ha_routers_network_id_networks")),
        sa.PrimaryKeyConstraint("router_id", name=op.f("pk_ha_routers")),
        sa.UniqueConstraint("network_id", "vr_id",
                            name=op.f("uq_ha_routers_network_id_vr_id")),
    )
    op.create_table(
        "ha_router_agent_port_bindings",
        sa.Column("port_id", sa.String(36), nullable=False),
        sa.Column("router_id", sa.String(36), nullable=False),
        sa.Column("l3_agent_id", sa.String(36), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_ha_router_agent_port_bindings_port_id_ports")),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="CASCADE",
                                name=op.f("fk_ha_router_agent_port_bindings_router_id_routers")),
        sa.ForeignKeyConstraint(["l3_agent_id"], ["agents.id"], ondelete="CASCADE",
                                name=op.f("fk_ha_router_agent_port_bindings_l3_agent_id_agents")),
        sa.PrimaryKeyConstraint("port_id", name=op.f("pk_ha_router_agent_port_bindings")),
        sa.UniqueConstraint(
            "router_id", "l3_agent_id",
            name=op.f("uq_ha_router_agent_port_bindings_router_id_l3_agent_id")),
    )
    op.create_index(op.f("ix_ha_router_agent_port_bindings_router_id"),
                    "ha_router_agent_port_bindings", ["router_id"])


def downgrade() -> None:
    # the index goes with the table (MySQL will not drop one a foreign key needs)
    for table in ("ha_router_agent_port_bindings", "ha_routers", "ha_router_networks"):
        op.drop_table(table)
