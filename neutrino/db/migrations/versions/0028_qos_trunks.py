"""qos: policies, their rules, and the networks, ports, floating IPs and router
gateways they apply to; trunks and their subports

Revision ID: 0028
Revises: 0027
"""

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def _standard(table: str) -> list:
    return [
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
    ]


def _rule(table: str, *columns: sa.Column, unique: tuple[str, ...]) -> None:
    """A rule table; ``unique``: with the policy, what one rule per policy is
    per (a direction; nothing: one rule of the kind per policy)."""
    op.create_table(
        table,
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("qos_policy_id", sa.String(36), nullable=False),
        *columns,
        sa.ForeignKeyConstraint(["qos_policy_id"], ["qos_policies.id"], ondelete="CASCADE",
                                name=op.f(f"fk_{table}_qos_policy_id_qos_policies")),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
        sa.UniqueConstraint("qos_policy_id", *unique, name=op.f(f"uq_{table}_policy")),
    )
    op.create_index(op.f(f"ix_{table}_qos_policy_id"), table, ["qos_policy_id"])


def _binding(table: str, column: str, target: str) -> None:
    op.create_table(
        table,
        sa.Column(column, sa.String(36), nullable=False),
        sa.Column("policy_id", sa.String(36), nullable=False),
        sa.ForeignKeyConstraint([column], [f"{target}.id"], ondelete="CASCADE",
                                name=op.f(f"fk_{table}_{column}_{target}")),
        sa.ForeignKeyConstraint(["policy_id"], ["qos_policies.id"], ondelete="CASCADE",
                                name=op.f(f"fk_{table}_policy_id_qos_policies")),
        sa.PrimaryKeyConstraint(column, name=op.f(f"pk_{table}")),
    )
    op.create_index(op.f(f"ix_{table}_policy_id"), table, ["policy_id"])


def upgrade() -> None:
    op.create_table("qos_policies", *_standard("qos_policies"),
                    sa.Column("shared", sa.Boolean(), nullable=False))
    op.create_index(op.f("ix_qos_policies_project_id"), "qos_policies", ["project_id"])
    op.create_table(
        "qos_default_policies",
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("qos_policy_id", sa.String(36), nullable=False),
        sa.ForeignKeyConstraint(["qos_policy_id"], ["qos_policies.id"], ondelete="CASCADE",
                                name=op.f("fk_qos_default_policies_qos_policy_id_qos_policies")),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_qos_default_policies")),
    )
    direction = sa.Column("direction", sa.String(16), nullable=False)
    _rule("qos_bandwidth_limit_rules", sa.Column("max_kbps", sa.BigInteger(), nullable=False),
          sa.Column("max_burst_kbps", sa.BigInteger(), nullable=False), direction,
          unique=("direction",))
    _rule("qos_dscp_marking_rules", sa.Column("dscp_mark", sa.Integer(), nullable=False),
          unique=())
    _rule("qos_minimum_bandwidth_rules", sa.Column("min_kbps", sa.BigInteger(), nullable=False),
          sa.Column("direction", sa.String(16), nullable=False), unique=("direction",))
    _rule("qos_packet_rate_limit_rules", sa.Column("max_kpps", sa.BigInteger(), nullable=False),
          sa.Column("max_burst_kpps", sa.BigInteger(), nullable=False),
          sa.Column("direction", sa.String(16), nullable=False), unique=("direction",))
    _rule("qos_minimum_packet_rate_rules",
          sa.Column("min_kpps", sa.BigInteger(), nullable=False),
          sa.Column("direction", sa.String(16), nullable=False), unique=("direction",))
    _binding("qos_network_policy_bindings", "network_id", "networks")
    _binding("qos_port_policy_bindings", "port_id", "ports")
    _binding("qos_fip_policy_bindings", "fip_id", "floatingips")
    _binding("qos_router_gw_policy_bindings", "router_id", "routers")
    op.create_table("trunks", *_standard("trunks"),
                    sa.Column("admin_state_up", sa.Boolean(), nullable=False),
                    sa.Column("status", sa.String(16), nullable=False),
                    sa.Column("port_id", sa.String(36), nullable=False),
                    sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                            name=op.f("fk_trunks_port_id_ports")),
                    sa.UniqueConstraint("port_id", name=op.f("uq_trunks_port_id")))
    op.create_index(op.f("ix_trunks_project_id"), "trunks", ["project_id"])
    op.create_table(
        "subports",
        sa.Column("port_id", sa.String(36), nullable=False),
        sa.Column("trunk_id", sa.String(36), nullable=False),
        sa.Column("segmentation_type", sa.String(32), nullable=False),
        sa.Column("segmentation_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_subports_port_id_ports")),
        sa.ForeignKeyConstraint(["trunk_id"], ["trunks.id"], ondelete="CASCADE",
                                name=op.f("fk_subports_trunk_id_trunks")),
        sa.PrimaryKeyConstraint("port_id", name=op.f("pk_subports")),
        sa.UniqueConstraint("trunk_id", "segmentation_type", "segmentation_id",
                            name=op.f("uq_subports_trunk_id_segmentation")),
    )
    op.create_index(op.f("ix_subports_trunk_id"), "subports", ["trunk_id"])


def downgrade() -> None:
    for table in ("subports", "trunks", "qos_router_gw_policy_bindings",
                  "qos_fip_policy_bindings", "qos_port_policy_bindings",
                  "qos_network_policy_bindings", "qos_minimum_packet_rate_rules",
                  "qos_packet_rate_limit_rules", "qos_minimum_bandwidth_rules",
                  "qos_dscp_marking_rules", "qos_bandwidth_limit_rules",
                  "qos_default_policies", "qos_policies"):
        op.drop_table(table)
