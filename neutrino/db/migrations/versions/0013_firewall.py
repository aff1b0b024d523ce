"""firewall: FWaaS v2 rules, policies and their ordered rules, groups and their ports

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def _standard() -> list:
    return [
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
    ]


def _fk(table: str, column: str, target: str, **kwargs) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], [f"{target}.id"],
                                   name=op.f(f"fk_{table}_{column}"), **kwargs)


def _index(table: str, column: str) -> None:
    op.create_index(op.f(f"ix_{table}_{column}"), table, [column])


def upgrade() -> None:
    op.create_table(
        "firewall_rules", *_standard(),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.Column("protocol", sa.String(40), nullable=True),
        sa.Column("ip_version", sa.Integer(), nullable=False),
        sa.Column("source_ip_address", sa.String(64), nullable=True),
        sa.Column("destination_ip_address", sa.String(64), nullable=True),
        sa.Column("source_port_min", sa.Integer(), nullable=True),
        sa.Column("source_port_max", sa.Integer(), nullable=True),
        sa.Column("destination_port_min", sa.Integer(), nullable=True),
        sa.Column("destination_port_max", sa.Integer(), nullable=True),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_firewall_rules")),
    )
    _index("firewall_rules", "project_id")
    op.create_table(
        "firewall_policies", *_standard(),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.Column("audited", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_firewall_policies")),
    )
    _index("firewall_policies", "project_id")
    op.create_table(
        "firewall_policy_rules",
        sa.Column("firewall_policy_id", sa.String(36), nullable=False),
        sa.Column("firewall_rule_id", sa.String(36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        _fk("firewall_policy_rules", "firewall_policy_id", "firewall_policies",
            ondelete="CASCADE"),
        _fk("firewall_policy_rules", "firewall_rule_id", "firewall_rules"),
        sa.PrimaryKeyConstraint("firewall_policy_id", "firewall_rule_id",
                                name=op.f("pk_firewall_policy_rules")),
    )
    _index("firewall_policy_rules", "firewall_rule_id")
    op.create_table(
        "firewall_groups", *_standard(),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.Column("ingress_firewall_policy_id", sa.String(36), nullable=True),
        sa.Column("egress_firewall_policy_id", sa.String(36), nullable=True),
        _fk("firewall_groups", "ingress_firewall_policy_id", "firewall_policies"),
        _fk("firewall_groups", "egress_firewall_policy_id", "firewall_policies"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_firewall_groups")),
    )
    for column in ("project_id", "ingress_firewall_policy_id", "egress_firewall_policy_id"):
        _index("firewall_groups", column)
    op.create_table(
        "firewall_group_ports",
        sa.Column("port_id", sa.String(36), nullable=False),
        sa.Column("firewall_group_id", sa.String(36), nullable=False),
        _fk("firewall_group_ports", "port_id", "ports", ondelete="CASCADE"),
        _fk("firewall_group_ports", "firewall_group_id", "firewall_groups",
            ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("port_id", name=op.f("pk_firewall_group_ports")),
    )
    _index("firewall_group_ports", "firewall_group_id")
    op.create_table(
        "default_firewall_groups",
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("firewall_group_id", sa.String(36), nullable=False),
        _fk("default_firewall_groups", "firewall_group_id", "firewall_groups",
            ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_default_firewall_groups")),
        sa.UniqueConstraint("firewall_group_id",
                            name=op.f("uq_default_firewall_groups_firewall_group_id")),
    )


def downgrade() -> None:
    for table in ("default_firewall_groups", "firewall_group_ports", "firewall_groups",
                  "firewall_policy_rules", "firewall_policies", "firewall_rules"):
        op.drop_table(table)
