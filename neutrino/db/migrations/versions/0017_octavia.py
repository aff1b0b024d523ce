"""octavia: load balancers, listeners, pools, members and health monitors

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
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


def _fk(table: str, column: str, target: str, **kwargs) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], [f"{target}.id"],
                                   name=op.f(f"fk_{table}_{column}"), **kwargs)


def _index(table: str, *columns: str) -> None:
    for column in columns:
        op.create_index(op.f(f"ix_{table}_{column}"), table, [column])


def upgrade() -> None:
    op.create_table(
        "lbaas_loadbalancers", *_common("lbaas_loadbalancers"),
        sa.Column("provider", sa.String(255), nullable=False),
        sa.Column("vip_address", sa.String(64), nullable=True),
        sa.Column("vip_port_id", sa.String(36), nullable=True),
        sa.Column("vip_subnet_id", sa.String(36), nullable=True),
        sa.Column("vip_network_id", sa.String(36), nullable=True),
        sa.Column("vip_sg_ids", sa.JSON(), nullable=False),
        sa.Column("availability_zone", sa.String(255), nullable=True),
        sa.Column("flavor_id", sa.String(36), nullable=True),
    )
    _index("lbaas_loadbalancers", "project_id")
    op.create_table(
        "lbaas_pools", *_common("lbaas_pools"),
        sa.Column("loadbalancer_id", sa.String(36), nullable=False),
        sa.Column("protocol", sa.String(16), nullable=False),
        sa.Column("lb_algorithm", sa.String(32), nullable=False),
        sa.Column("session_persistence", sa.JSON(), nullable=True),
        _fk("lbaas_pools", "loadbalancer_id", "lbaas_loadbalancers", ondelete="CASCADE"),
    )
    _index("lbaas_pools", "project_id", "loadbalancer_id")
    op.create_table(
        "lbaas_listeners", *_common("lbaas_listeners"),
        sa.Column("loadbalancer_id", sa.String(36), nullable=False),
        sa.Column("protocol", sa.String(32), nullable=False),
        sa.Column("protocol_port", sa.Integer(), nullable=False),
        sa.Column("connection_limit", sa.Integer(), nullable=False),
        sa.Column("default_pool_id", sa.String(36), nullable=True),
        sa.Column("timeout_client_data", sa.Integer(), nullable=False),
        sa.Column("timeout_member_connect", sa.Integer(), nullable=False),
        sa.Column("timeout_member_data", sa.Integer(), nullable=False),
        sa.Column("timeout_tcp_inspect", sa.Integer(), nullable=False),
        _fk("lbaas_listeners", "loadbalancer_id", "lbaas_loadbalancers", ondelete="CASCADE"),
        _fk("lbaas_listeners", "default_pool_id", "lbaas_pools"),
        sa.UniqueConstraint("loadbalancer_id", "protocol", "protocol_port",
                            name="uq_lbaas_listeners_loadbalancer_id_protocol_port"),
    )
    _index("lbaas_listeners", "project_id", "loadbalancer_id", "default_pool_id")
    op.create_table(
        "lbaas_members", *_common("lbaas_members"),
        sa.Column("pool_id", sa.String(36), nullable=False),
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("protocol_port", sa.Integer(), nullable=False),
        sa.Column("weight", sa.Integer(), nullable=False),
        sa.Column("backup", sa.Boolean(), nullable=False),
        sa.Column("subnet_id", sa.String(36), nullable=True),
        sa.Column("monitor_address", sa.String(64), nullable=True),
        sa.Column("monitor_port", sa.Integer(), nullable=True),
        _fk("lbaas_members", "pool_id", "lbaas_pools", ondelete="CASCADE"),
        sa.UniqueConstraint("pool_id", "address", "protocol_port",
                            name="uq_lbaas_members_pool_id_address_port"),
    )
    _index("lbaas_members", "project_id", "pool_id")
    op.create_table(
        "lbaas_healthmonitors", *_common("lbaas_healthmonitors"),
        sa.Column("pool_id", sa.String(36), nullable=False),
        sa.Column("type", sa.String(36), nullable=False),
        sa.Column("delay", sa.Integer(), nullable=False),
        sa.Column("timeout", sa.Integer(), nullable=False),
        sa.Column("max_retries", sa.Integer(), nullable=False),
        sa.Column("max_retries_down", sa.Integer(), nullable=False),
        sa.Column("http_method", sa.String(16), nullable=True),
        sa.Column("url_path", sa.String(2048), nullable=True),
        sa.Column("expected_codes", sa.String(64), nullable=True),
        sa.Column("http_version", sa.String(8), nullable=True),
        sa.Column("domain_name", sa.String(255), nullable=True),
        _fk("lbaas_healthmonitors", "pool_id", "lbaas_pools", ondelete="CASCADE"),
        sa.UniqueConstraint("pool_id", name=op.f("uq_lbaas_healthmonitors_pool_id")),
    )
    _index("lbaas_healthmonitors", "project_id")


def downgrade() -> None:
    for table in ("lbaas_healthmonitors", "lbaas_members", "lbaas_listeners", "lbaas_pools", "lbaas_loadbalancers"):
        op.drop_table(table)
