"""lbaas_l7_quotas: listeners' L7 policies and their rules, and the projects'
load-balancing quotas

Revision ID: 0020
Revises: 0019
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def _common(table: str) -> list:
    return [
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("provisioning_status", sa.String(16), nullable=False),
        sa.Column("operating_status", sa.String(16), nullable=False),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
    ]


def _index(table: str, *columns: str) -> None:
    for column in columns:
        op.create_index(op.f(f"ix_{table}_{column}"), table, [column])


def upgrade() -> None:
    op.create_table(
        "lbaas_l7policies", *_common("lbaas_l7policies"),
        sa.Column("listener_id", sa.String(36), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("redirect_url", sa.String(2048), nullable=True),
        sa.Column("redirect_prefix", sa.String(2048), nullable=True),
        sa.Column("redirect_pool_id", sa.String(36), nullable=True),
        sa.Column("redirect_http_code", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["listener_id"], ["lbaas_listeners.id"], ondelete="CASCADE",
                                name=op.f("fk_lbaas_l7policies_listener_id")),
        sa.ForeignKeyConstraint(["redirect_pool_id"], ["lbaas_pools.id"],
                                name=op.f("fk_lbaas_l7policies_redirect_pool_id")),
    )
    _index("lbaas_l7policies", "project_id", "listener_id", "redirect_pool_id")
    op.create_table(
        "lbaas_l7rules", *_common("lbaas_l7rules"),
        sa.Column("l7policy_id", sa.String(36), nullable=False),
        sa.Column("type", sa.String(36), nullable=False),
        sa.Column("compare_type", sa.String(36), nullable=False),
        sa.Column("key", sa.String(255), nullable=True),
        sa.Column("value", sa.String(255), nullable=False),
        sa.Column("invert", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["l7policy_id"], ["lbaas_l7policies.id"],
                                ondelete="CASCADE", name=op.f("fk_lbaas_l7rules_l7policy_id")),
    )
    _index("lbaas_l7rules", "project_id", "l7policy_id")
    op.create_table(
        "lbaas_quotas",
        sa.Column("project_id", sa.String(255), nullable=False),
        *(sa.Column(name, sa.Integer(), nullable=True) for name in (
            "load_balancer", "listener", "member", "pool", "health_monitor", "l7policy",
            "l7rule")),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_lbaas_quotas")),
    )


def downgrade() -> None:
    op.drop_table("lbaas_quotas")
    op.drop_table("lbaas_l7rules")
    op.drop_table("lbaas_l7policies")
