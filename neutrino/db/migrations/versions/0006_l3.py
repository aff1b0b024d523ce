"""L3: routers, their ports and routes, floating IPs, port forwardings

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
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


def upgrade() -> None:
    op.create_table(
        "routers",
        *_standard(),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("gw_port_id", sa.String(36), nullable=True),
        sa.Column("enable_snat", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["gw_port_id"], ["ports.id"],
                                name=op.f("fk_routers_gw_port_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_routers")),
        sa.UniqueConstraint("gw_port_id", name=op.f("uq_routers_gw_port_id")),
    )
    op.create_index(op.f("ix_routers_project_id"), "routers", ["project_id"])
    op.create_table(
        "router_ports",
        sa.Column("port_id", sa.String(36), nullable=False),
        sa.Column("router_id", sa.String(36), nullable=False),
        sa.Column("port_type", sa.String(255), nullable=False),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_router_ports_port_id")),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="CASCADE",
                                name=op.f("fk_router_ports_router_id")),
        sa.PrimaryKeyConstraint("port_id", name=op.f("pk_router_ports")),
    )
    op.create_index(op.f("ix_router_ports_router_id"), "router_ports", ["router_id"])
    op.create_table(
        "router_routes",
        sa.Column("router_id", sa.String(36), nullable=False),
        sa.Column("destination", sa.String(64), nullable=False),
        sa.Column("nexthop", sa.String(64), nullable=False),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="CASCADE",
                                name=op.f("fk_router_routes_router_id")),
        sa.PrimaryKeyConstraint("router_id", "destination", "nexthop",
                                name=op.f("pk_router_routes")),
    )
    op.create_table(
        "floatingips",
        *_standard(),
        sa.Column("floating_ip_address", sa.String(64), nullable=False),
        sa.Column("floating_network_id", sa.String(36), nullable=False),
        sa.Column("floating_port_id", sa.String(36), nullable=False),
        sa.Column("fixed_port_id", sa.String(36), nullable=True),
        sa.Column("fixed_ip_address", sa.String(64), nullable=True),
        sa.Column("router_id", sa.String(36), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.ForeignKeyConstraint(["floating_network_id"], ["networks.id"],
                                name=op.f("fk_floatingips_floating_network_id")),
        sa.ForeignKeyConstraint(["floating_port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_floatingips_floating_port_id")),
        sa.ForeignKeyConstraint(["fixed_port_id"], ["ports.id"],
                                name=op.f("fk_floatingips_fixed_port_id")),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"],
                                name=op.f("fk_floatingips_router_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_floatingips")),
        sa.UniqueConstraint("floating_port_id", name=op.f("uq_floatingips_floating_port_id")),
        sa.UniqueConstraint("floating_network_id", "fixed_port_id", "fixed_ip_address",
                            name="uq_floatingips_fixed_ip"),
    )
    for column in ("project_id", "fixed_port_id", "router_id"):
        op.create_index(op.f(f"ix_floatingips_{column}"), "floatingips", [column])
    op.create_table(
        "port_forwardings",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("floatingip_id", sa.String(36), nullable=False),
        sa.Column("internal_port_id", sa.String(36), nullable=False),
        sa.Column("internal_ip_address", sa.String(64), nullable=False),
        sa.Column("protocol", sa.String(16), nullable=False),
        sa.Column("external_port_start", sa.Integer(), nullable=False),
        sa.Column("external_port_end", sa.Integer(), nullable=False),
        sa.Column("internal_port_start", sa.Integer(), nullable=False),
        sa.Column("internal_port_end", sa.Integer(), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.ForeignKeyConstraint(["floatingip_id"], ["floatingips.id"],
                                name=op.f("fk_port_forwardings_floatingip_id")),
        sa.ForeignKeyConstraint(["internal_port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_port_forwardings_internal_port_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_port_forwardings")),
        sa.UniqueConstraint("floatingip_id", "protocol", "external_port_start",
                            name="uq_port_forwardings_external"),
    )
    for column in ("floatingip_id", "internal_port_id"):
        op.create_index(op.f(f"ix_port_forwardings_{column}"), "port_forwardings", [column])
