"""vpnaas: IKE and IPsec policies, VPN services, endpoint groups, site connections

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def _common() -> list:
    return [
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
    ]


def _fk(table: str, column: str, target: str, **kwargs) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], [f"{target}.id"],
                                   name=op.f(f"fk_{table}_{column}"), **kwargs)


def _pk(table: str, *columns: str) -> sa.PrimaryKeyConstraint:
    return sa.PrimaryKeyConstraint(*columns, name=op.f(f"pk_{table}"))


def _index(table: str, *columns: str) -> None:
    for column in columns:
        op.create_index(op.f(f"ix_{table}_{column}"), table, [column])


def _lifetime() -> list:
    return [sa.Column("lifetime_units", sa.String(16), nullable=False),
            sa.Column("lifetime_value", sa.Integer(), nullable=False)]


def upgrade() -> None:
    op.create_table(
        "ikepolicies", *_common(),
        sa.Column("auth_algorithm", sa.String(16), nullable=False),
        sa.Column("encryption_algorithm", sa.String(32), nullable=False),
        sa.Column("phase1_negotiation_mode", sa.String(16), nullable=False),
        *_lifetime(),
        sa.Column("ike_version", sa.String(16), nullable=False),
        sa.Column("pfs", sa.String(16), nullable=False),
        _pk("ikepolicies", "id"),
    )
    _index("ikepolicies", "project_id")
    op.create_table(
        "ipsecpolicies", *_common(),
        sa.Column("transform_protocol", sa.String(16), nullable=False),
        sa.Column("auth_algorithm", sa.String(16), nullable=False),
        sa.Column("encryption_algorithm", sa.String(32), nullable=False),
        sa.Column("encapsulation_mode", sa.String(16), nullable=False),
        *_lifetime(),
        sa.Column("pfs", sa.String(16), nullable=False),
        _pk("ipsecpolicies", "id"),
    )
    _index("ipsecpolicies", "project_id")
    op.create_table(
        "vpnservices", *_common(),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("external_v4_ip", sa.String(64), nullable=True),
        sa.Column("external_v6_ip", sa.String(64), nullable=True),
        sa.Column("subnet_id", sa.String(36), nullable=True),
        sa.Column("router_id", sa.String(36), nullable=False),
        _fk("vpnservices", "subnet_id", "subnets"),
        _fk("vpnservices", "router_id", "routers"),
        _pk("vpnservices", "id"),
    )
    _index("vpnservices", "project_id", "subnet_id", "router_id")
    op.create_table(
        "vpn_endpoint_groups", *_common(),
        sa.Column("endpoint_type", sa.String(32), nullable=False),
        _pk("vpn_endpoint_groups", "id"),
    )
    _index("vpn_endpoint_groups", "project_id")
    op.create_table(
        "vpn_endpoints",
        sa.Column("endpoint_group_id", sa.String(36), nullable=False),
        sa.Column("endpoint", sa.String(255), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        _fk("vpn_endpoints", "endpoint_group_id", "vpn_endpoint_groups", ondelete="CASCADE"),
        _pk("vpn_endpoints", "endpoint_group_id", "endpoint"),
    )
    _index("vpn_endpoints", "endpoint")
    table = "ipsec_site_connections"
    op.create_table(
        table, *_common(),
        sa.Column("peer_address", sa.String(255), nullable=False),
        sa.Column("peer_id", sa.String(255), nullable=False),
        sa.Column("local_id", sa.String(255), nullable=False),
        sa.Column("route_mode", sa.String(8), nullable=False),
        sa.Column("mtu", sa.Integer(), nullable=False),
        sa.Column("initiator", sa.String(32), nullable=False),
        sa.Column("auth_mode", sa.String(16), nullable=False),
        sa.Column("psk", sa.String(255), nullable=False),
        sa.Column("dpd_action", sa.String(32), nullable=False),
        sa.Column("dpd_interval", sa.Integer(), nullable=False),
        sa.Column("dpd_timeout", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("vpnservice_id", sa.String(36), nullable=False),
        sa.Column("ikepolicy_id", sa.String(36), nullable=False),
        sa.Column("ipsecpolicy_id", sa.String(36), nullable=False),
        sa.Column("local_ep_group_id", sa.String(36), nullable=True),
        sa.Column("peer_ep_group_id", sa.String(36), nullable=True),
        _fk(table, "vpnservice_id", "vpnservices"),
        _fk(table, "ikepolicy_id", "ikepolicies"),
        _fk(table, "ipsecpolicy_id", "ipsecpolicies"),
        _fk(table, "local_ep_group_id", "vpn_endpoint_groups"),
        _fk(table, "peer_ep_group_id", "vpn_endpoint_groups"),
        _pk(table, "id"),
    )
    _index(table, "project_id", "vpnservice_id", "ikepolicy_id", "ipsecpolicy_id",
           "local_ep_group_id", "peer_ep_group_id")
    op.create_table(
        "ipsecpeercidrs",
        sa.Column("ipsec_site_connection_id", sa.String(36), nullable=False),
        sa.Column("cidr", sa.String(64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        _fk("ipsecpeercidrs", "ipsec_site_connection_id", "ipsec_site_connections",
            ondelete="CASCADE"),
        _pk("ipsecpeercidrs", "ipsec_site_connection_id", "cidr"),
    )


def downgrade() -> None:
    for table in ("ipsecpeercidrs", "ipsec_site_connections", "vpn_endpoints",
                  "vpn_endpoint_groups", "vpnservices", "ipsecpolicies", "ikepolicies"):
        op.drop_table(table)
