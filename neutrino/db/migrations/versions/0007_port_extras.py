"""port_extras: allowed address pairs, extra DHCP options, DNS names and domains

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "allowed_address_pairs",
        sa.Column("port_id", sa.String(36), nullable=False),
        sa.Column("mac_address", sa.String(32), nullable=False),
        sa.Column("ip_address", sa.String(64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_allowed_address_pairs_port_id")),
        sa.PrimaryKeyConstraint("port_id", "mac_address", "ip_address",
                                name=op.f("pk_allowed_address_pairs")),
    )
    op.create_table(
        "extra_dhcp_opts",
        sa.Column("port_id", sa.String(36), nullable=False),
        sa.Column("opt_name", sa.String(64).with_variant(
            mysql.VARCHAR(64, collation="utf8mb4_bin"), "mysql", "mariadb"), nullable=False),
        sa.Column("ip_version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("opt_value", sa.String(255), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_extra_dhcp_opts_port_id")),
        sa.PrimaryKeyConstraint("port_id", "opt_name", "ip_version",
                                name=op.f("pk_extra_dhcp_opts")),
    )
    op.create_table(
        "port_dns",
        sa.Column("port_id", sa.String(36), nullable=False),
        sa.Column("dns_name", sa.String(256), nullable=False),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_port_dns_port_id")),
        sa.PrimaryKeyConstraint("port_id", name=op.f("pk_port_dns")),
    )
    op.create_table(
        "network_dns_domains",
        sa.Column("network_id", sa.String(36), nullable=False),
        sa.Column("dns_domain", sa.String(255), nullable=False),
        sa.ForeignKeyConstraint(["network_id"], ["networks.id"], ondelete="CASCADE",
                                name=op.f("fk_network_dns_domains_network_id")),
        sa.PrimaryKeyConstraint("network_id", name=op.f("pk_network_dns_domains")),
    )
