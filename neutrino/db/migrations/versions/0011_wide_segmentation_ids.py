"""segmentation ids in 64-bit columns: GRE keys reach 2**32 - 1

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table, nullable in (("network_segments", True), ("segment_allocations", False)):
        with op.batch_alter_table(table) as batch:
            batch.alter_column("segmentation_id", existing_type=sa.Integer(),
                               type_=sa.BigInteger(), existing_nullable=nullable)


def downgrade() -> None:
    for table, nullable in (("network_segments", True), ("segment_allocations", False)):
        with op.batch_alter_table(table) as batch:
            batch.alter_column("segmentation_id", existing_type=sa.BigInteger(),
                               type_=sa.Integer(), existing_nullable=nullable)
