"""lbaas_agents: which load-balancer agent runs each load balancer of the haproxy
provider, and the listeners' counters the agents report

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

TABLE = "lbaas_loadbalancer_agent_bindings"
STATS = "lbaas_listener_stats"
COUNTERS = ("bytes_in", "bytes_out", "active_connections", "total_connections",
            "request_errors")


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("loadbalancer_id", sa.String(36), nullable=False),
        sa.Column("agent_id", sa.String(36), nullable=False),
        sa.Column("binding_index", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["loadbalancer_id"], ["lbaas_loadbalancers.id"],
                                ondelete="CASCADE", name=op.f(f"fk_{TABLE}_loadbalancer_id")),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE",
                                name=op.f(f"fk_{TABLE}_agent_id")),
        sa.PrimaryKeyConstraint("loadbalancer_id", "agent_id", name=op.f(f"pk_{TABLE}")),
        sa.UniqueConstraint("loadbalancer_id", "binding_index",
                            name="uq_lbaas_lb_agent_bindings_lb_id_binding_index"),
    )
    op.create_index(op.f(f"ix_{TABLE}_agent_id"), TABLE, ["agent_id"])
    op.create_table(
        STATS,
        sa.Column("listener_id", sa.String(36), nullable=False),
        *(sa.Column(name, sa.BigInteger(), nullable=False) for name in COUNTERS),
        sa.ForeignKeyConstraint(["listener_id"], ["lbaas_listeners.id"], ondelete="CASCADE",
                                name=op.f(f"fk_{STATS}_listener_id")),
        sa.PrimaryKeyConstraint("listener_id", name=op.f(f"pk_{STATS}")),
    )


def downgrade() -> None:
    op.drop_table(STATS)
    op.drop_table(TABLE)
