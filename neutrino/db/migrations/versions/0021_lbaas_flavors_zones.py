"""lbaas_flavors_zones: the load-balancer API's flavors and availability zones
with their profiles, and whose VIP port a load balancer has

Revision ID: 0021
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

#: (offered table, its key column, profile table, profile reference, profile data)
OFFERS = (
    ("lbaas_flavors", "id", "lbaas_flavor_profiles", "flavor_profile_id", "flavor_data"),
    ("lbaas_availability_zones", "name", "lbaas_availability_zone_profiles",
     "availability_zone_profile_id", "availability_zone_data"),
)


def upgrade() -> None:
    for table, key, profiles, reference, data in OFFERS:
        op.create_table(
            profiles,
            sa.Column("id", sa.String(36), nullable=False),
            sa.Column("name", sa.String(255), nullable=False),
            sa.Column("provider_name", sa.String(255), nullable=False),
            sa.Column(data, sa.String(4096), nullable=False),
            sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{profiles}")),
        )
        key_column = (sa.Column("id", sa.String(36), nullable=False) if key == "id"
                      else sa.Column("name", sa.String(255), nullable=False))
        name_column = ([sa.Column("name", sa.String(255), nullable=False)]
                       if key == "id" else [])
        op.create_table(
            table, key_column, *name_column,
            sa.Column("description", sa.String(255), nullable=True),
            sa.Column("enabled", sa.Boolean(), nullable=False),
            sa.Column(reference, sa.String(36), nullable=False),
            sa.ForeignKeyConstraint([reference], [f"{profiles}.id"],
                                    name=op.f(f"fk_{table}_{reference}")),
            sa.PrimaryKeyConstraint(key, name=op.f(f"pk_{table}")),
            *([sa.UniqueConstraint("name", name=op.f(f"uq_{table}_name"))]
              if key == "id" else []),
        )
        op.create_index(op.f(f"ix_{table}_{reference}"), table, [reference])
    op.add_column("lbaas_loadbalancers", sa.Column(
        "vip_port_owned", sa.Boolean(), nullable=False, server_default=sa.true()))


def downgrade() -> None:
    with op.batch_alter_table("lbaas_loadbalancers") as batch:  # SQLite rebuilds it
        batch.drop_column("vip_port_owned")
    for table, _key, profiles, _reference, _data in reversed(OFFERS):
        op.drop_table(table)
        op.drop_table(profiles)
