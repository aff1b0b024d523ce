"""flavors, service profiles and their bindings (the flavors service plugin);
auto_allocated_topologies and networks.is_default (auto-allocated-topology)

Revision ID: 0026
Revises: 0025
"""

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "flavors",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("name", sa.String(255), nullable=True),
        sa.Column("description", sa.String(1024), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("service_type", sa.String(36), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flavors")),
    )
    op.create_table(
        "service_profiles",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("description", sa.String(1024), nullable=True),
        sa.Column("driver", sa.String(1024), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("metainfo", sa.String(4096), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_service_profiles")),
    )
    op.create_table(
        "flavor_service_profiles",
        sa.Column("flavor_id", sa.String(36), nullable=False),
        sa.Column("service_profile_id", sa.String(36), nullable=False),
        sa.ForeignKeyConstraint(["flavor_id"], ["flavors.id"], ondelete="CASCADE",
                                name=op.f("fk_flavor_service_profiles_flavor_id_flavors")),
        sa.ForeignKeyConstraint(
            ["service_profile_id"], ["service_profiles.id"], ondelete="CASCADE",
            name=op.f("fk_flavor_service_profiles_service_profile_id_service_profiles")),
        sa.PrimaryKeyConstraint("flavor_id", "service_profile_id",
                                name=op.f("pk_flavor_service_profiles")),
    )
    op.create_table(
        "auto_allocated_topologies",
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("network_id", sa.String(36), nullable=False),
        sa.Column("router_id", sa.String(36), nullable=True),
        sa.ForeignKeyConstraint(["network_id"], ["networks.id"], ondelete="CASCADE",
                                name=op.f("fk_auto_allocated_topologies_network_id_networks")),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="SET NULL",
                                name=op.f("fk_auto_allocated_topologies_router_id_routers")),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_auto_allocated_topologies")),
    )
    op.add_column("networks", sa.Column("is_default", sa.Boolean(), nullable=False,
                                        server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("networks") as batch:  # SQLite rebuilds it
        batch.drop_column("is_default")
    op.drop_table("auto_allocated_topologies")
    op.drop_table("flavor_service_profiles")
    op.drop_table("service_profiles")
    op.drop_table("flavors")
