"""conntrack helpers of routers (the conntrack_helper service plugin)

Revision ID: 0029
Revises: 0028
"""

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
