"""sg_default_rules: the template of new security groups' first rules, seeded
with the rules every group had before (egress for all; ingress from the group's
own members for a project's default group)

Revision ID: 0018
Revises: 0017
"""

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

INGRESS = "Legacy default SG rule for ingress traffic"
EGRESS = "Legacy default SG rule for egress traffic"


def upgrade() -> None:
    table = op.create_table(
        "security_group_default_rules",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("description", sa.String(255), nullable=False),
        sa.Column("direction", sa.String(16), nullable=False),
        sa.Column("ethertype", sa.String(40), nullable=False),
        sa.Column("protocol", sa.String(40), nullable=True),
        sa.Column("port_range_min", sa.Integer(), nullable=True),
        sa.Column("port_range_max", sa.Integer(), nullable=True),
        sa.Column("remote_ip_prefix", sa.String(64), nullable=True),
        sa.Column("remote_group_id", sa.String(36), nullable=True),
        sa.Column("remote_address_group_id", sa.String(36), nullable=True),
        sa.Column("used_in_default_sg", sa.Boolean(), nullable=False),
        sa.Column("used_in_non_default_sg", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    seed = []
    for ethertype in ("IPv4", "IPv6"):
        seed.append({"direction": "egress", "ethertype": ethertype, "description": EGRESS,
                     "remote_group_id": None, "used_in_default_sg": True,
                     "used_in_non_default_sg": True})
        seed.append({"direction": "ingress", "ethertype": ethertype, "description": INGRESS,
                     "remote_group_id": "PARENT", "used_in_default_sg": True,
                     "used_in_non_default_sg": False})
    op.bulk_insert(table, [{"id": str(uuid.uuid4()), **row} for row in seed])


def downgrade() -> None:
    op.drop_table("security_group_default_rules")
