"""network RBAC: networks shared with, or external for, chosen projects

Existing shared and external networks get the '*' entries that now say so.

Revision ID: 0010
Revises: 0009
"""

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    rbacs = op.create_table(
        "networkrbacs",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("object_id", sa.String(36), nullable=False),
        sa.Column("target_project", sa.String(255), nullable=False),
        sa.Column("action", sa.String(255), nullable=False),
        sa.ForeignKeyConstraint(["object_id"], ["networks.id"], ondelete="CASCADE",
                                name=op.f("fk_networkrbacs_object_id")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_networkrbacs")),
        sa.UniqueConstraint("object_id", "target_project", "action",
                            name="uq_networkrbacs_object_id_target_project_action"),
    )
    op.create_index(op.f("ix_networkrbacs_target_project"), "networkrbacs",
                    ["target_project"])
    networks = sa.table("networks", sa.column("id", sa.String), sa.column("project_id"),
                        sa.column("shared", sa.Boolean),
                        sa.column("router_external", sa.Boolean))
    conn = op.get_bind()
    rows = []
    for flag, action in ((networks.c.shared, "access_as_shared"),
                         (networks.c.router_external, "access_as_external")):
        for net_id, project in conn.execute(
                sa.select(networks.c.id, networks.c.project_id).where(flag)):
            rows.append({"id": str(uuid.uuid4()), "project_id": project, "object_id": net_id,
                         "target_project": "*", "action": action})
    if rows:
        op.bulk_insert(rbacs, rows)
