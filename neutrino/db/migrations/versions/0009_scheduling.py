"""scheduling: networks hosted by DHCP agents, routers by L3 agents

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _bindings(table: str, resource: str, resource_table: str, agent: str) -> None:
    op.create_table(
        table,
        sa.Column(resource, sa.String(36), nullable=False),
        sa.Column(agent, sa.String(36), nullable=False),
        sa.Column("binding_index", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint([resource], [f"{resource_table}.id"], ondelete="CASCADE",
                                name=op.f(f"fk_{table}_{resource}")),
        sa.ForeignKeyConstraint([agent], ["agents.id"], ondelete="CASCADE",
                                name=op.f(f"fk_{table}_{agent}")),
        sa.PrimaryKeyConstraint(resource, agent, name=op.f(f"pk_{table}")),
        sa.UniqueConstraint(resource, "binding_index",
                            name=f"uq_{table}_{resource}_binding_index"),
    )
    op.create_index(op.f(f"ix_{table}_{agent}"), table, [agent])


def upgrade() -> None:
    _bindings("network_dhcp_agent_bindings", "network_id", "networks", "dhcp_agent_id")
    _bindings("router_l3_agent_bindings", "router_id", "routers", "l3_agent_id")
