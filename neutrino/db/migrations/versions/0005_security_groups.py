"""security_groups: groups, rules, port bindings, default groups, address groups

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
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


def _index(table: str, column: str, unique: bool = False) -> None:
    op.create_index(op.f(f"ix_{table}_{column}"), table, [column], unique=unique)


def upgrade() -> None:
    op.create_table(
        "security_groups",
        *_standard(),
        sa.Column("stateful", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_security_groups")),
    )
    _index("security_groups", "project_id")

    op.create_table(
        "default_security_groups",
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("security_group_id", sa.String(36), nullable=False),
        _fk("default_security_groups", "security_group_id", "security_groups",
            ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_default_security_groups")),
        sa.UniqueConstraint("security_group_id",
                            name=op.f("uq_default_security_groups_security_group_id")),
    )

    op.create_table(
        "address_groups",
        *_standard(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_address_groups")),
    )
    _index("address_groups", "project_id")

    op.create_table(
        "address_group_addresses",
        sa.Column("address_group_id", sa.String(36), nullable=False),
        sa.Column("address", sa.String(64), nullable=False),
        _fk("address_group_addresses", "address_group_id", "address_groups",
            ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("address_group_id", "address",
                                name=op.f("pk_address_group_addresses")),
    )

    op.create_table(
        "security_group_rules",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("security_group_id", sa.String(36), nullable=False),
        sa.Column("remote_group_id", sa.String(36), nullable=True),
        sa.Column("remote_address_group_id", sa.String(36), nullable=True),
        sa.Column("direction", sa.String(16), nullable=False),
        sa.Column("ethertype", sa.String(40), nullable=False),
        sa.Column("protocol", sa.String(40), nullable=True),
        sa.Column("port_range_min", sa.Integer(), nullable=True),
        sa.Column("port_range_max", sa.Integer(), nullable=True),
        sa.Column("remote_ip_prefix", sa.String(64), nullable=True),
        sa.Column("normalized_cidr", sa.String(64), nullable=True),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        _fk("security_group_rules", "security_group_id", "security_groups",
            ondelete="CASCADE"),
        _fk("security_group_rules", "remote_group_id", "security_groups",
            ondelete="CASCADE"),
        _fk("security_group_rules", "remote_address_group_id", "address_groups"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_security_group_rules")),
    )
    for column in ("project_id", "security_group_id", "remote_group_id",
                   "remote_address_group_id"):
        _index("security_group_rules", column)

    op.create_table(
        "security_group_port_bindings",
        sa.Column("port_id", sa.String(36), nullable=False),
        sa.Column("security_group_id", sa.String(36), nullable=False),
        _fk("security_group_port_bindings", "port_id", "ports", ondelete="CASCADE"),
        _fk("security_group_port_bindings", "security_group_id", "security_groups"),
        sa.PrimaryKeyConstraint("port_id", "security_group_id",
                                name=op.f("pk_security_group_port_bindings")),
    )
    _index("security_group_port_bindings", "security_group_id")
