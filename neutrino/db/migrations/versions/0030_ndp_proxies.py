"""NDP proxies of routers (the ndp_proxy service plugin)

Revision ID: 0030
Revises: 0029
"""

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
