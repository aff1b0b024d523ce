"""ML2 port bindings and the agents table

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "port_bindings",
        sa.Column("port_id", sa.String(36), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("vnic_type", sa.String(64), nullable=False),
        sa.Column("profile", sa.JSON(), nullable=False),
        sa.Column("vif_type", sa.String(64), nullable=False),
        sa.Column("vif_details", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("segment_id", sa.String(36), nullable=True),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_port_bindings_port_id")),
        sa.PrimaryKeyConstraint("port_id", "host", name=op.f("pk_port_bindings")),
    )
    op.create_table(
        "agents",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("agent_type", sa.String(255), nullable=False),
        sa.Column("binary", sa.String(255), nullable=False),
        sa.Column("topic", sa.String(255), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("availability_zone", sa.String(255), nullable=True),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("configurations", sa.JSON(), nullable=False),
        sa.Column("resources_synced", sa.Boolean(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("heartbeat_timestamp", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agents")),
        sa.UniqueConstraint("agent_type", "host", name="uq_agents_agent_type_host"),
    )
    op.create_index(op.f("ix_agents_host"), "agents", ["host"])
