"""address_scopes, and rbac_entries: the RBAC entries of every object type but
networks (security groups, subnet pools, address scopes, address groups)

Revision ID: 0025
Revises: 0024
"""

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "address_scopes",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.Column("ip_version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_address_scopes")),
    )
    op.create_index(op.f("ix_address_scopes_project_id"), "address_scopes", ["project_id"])
    op.create_table(
        "rbac_entries",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("object_type", sa.String(64), nullable=False),
        sa.Column("object_id", sa.String(36), nullable=False),
        sa.Column("target_project", sa.String(255), nullable=False),
        sa.Column("action", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rbac_entries")),
        sa.UniqueConstraint("object_type", "object_id", "target_project", "action",
                            name=op.f("uq_rbac_entries_object_type_object_id_target_project_action")),
    )
    op.create_index(op.f("ix_rbac_entries_object_id"), "rbac_entries", ["object_id"])
    op.create_index(op.f("ix_rbac_entries_target_project"), "rbac_entries", ["target_project"])
    # a shared pool is shared by its '*' entry from now on
    pools = sa.table("subnetpools", sa.column("id"), sa.column("project_id"),
                     sa.column("shared", sa.Boolean))
    entries = sa.table("rbac_entries", *(sa.column(c) for c in (
        "id", "project_id", "object_type", "object_id", "target_project", "action")))
    bind = op.get_bind()
    rows = bind.execute(sa.select(pools.c.id, pools.c.project_id).where(pools.c.shared)).all()
    if rows:
        op.bulk_insert(entries, [
            {"id": str(uuid.uuid4()), "project_id": project_id, "object_type": "subnetpool",
             "object_id": pool_id, "target_project": "*", "action": "access_as_shared"}
            for pool_id, project_id in rows])


def downgrade() -> None:
    op.drop_table("rbac_entries")
    op.drop_table("address_scopes")
