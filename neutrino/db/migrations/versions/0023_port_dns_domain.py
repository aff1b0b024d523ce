"""port_dns_domain: a port's own DNS domain (dns-domain-ports)

Revision ID: 0023
Revises: 0022
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("port_dns", sa.Column("dns_domain", sa.String(255), nullable=False,
                                        server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("port_dns") as batch:  # SQLite rebuilds it
        batch.drop_column("dns_domain")
