"""sg_default_statefulness: the stateful value of new security groups, per project
or system-wide (security-groups-default-statefulness)

Revision ID: 0024
Revises: 0023
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

TABLE = "sg_default_statefulness"


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("stateful", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{TABLE}")),
        sa.UniqueConstraint("project_id", name=op.f(f"uq_{TABLE}_project_id")),
    )


def downgrade() -> None:
    op.drop_table(TABLE)
