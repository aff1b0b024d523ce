"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-12-02 14:50:05.253577
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('networks',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('project_id', sa.String(length=255), nullable=True),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('description', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.Column('revision_number', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('admin_state_up', sa.Boolean(), nullable=False),
    sa.Column('shared', sa.Boolean(), nullable=False),
    sa.Column('router_external', sa.Boolean(), nullable=False),
    sa.Column('mtu', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_networks'))
    )
    with op.batch_alter_table('networks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_networks_project_id'), ['project_id'], unique=False)

    op.create_table('quota_locks',
    sa.Column('project_id', sa.String(length=255), nullable=False),
    sa.Column('resource', sa.String(length=255), nullable=False),
    sa.PrimaryKeyConstraint('project_id', 'resource', name=op.f('pk_quota_locks'))
    )
    op.create_table('quotas',
    sa.Column('project_id', sa.String(length=255), nullable=False),
    sa.Column('resource', sa.String(length=255), nullable=False),
    sa.Column('hard_limit', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('project_id', 'resource', name=op.f('pk_quotas'))
    )
    op.create_table('subnetpools',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('project_id', sa.String(length=255), nullable=True),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('description', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.Column('revision_number', sa.Integer(), nullable=False),
    sa.Column('ip_version', sa.Integer(), nullable=False),
    sa.Column('default_prefixlen', sa.Integer(), nullable=False),
    sa.Column('min_prefixlen', sa.Integer(), nullable=False),
    sa.Column('max_prefixlen', sa.Integer(), nullable=False),
    sa.Column('default_quota', sa.Integer(), nullable=True),
    sa.Column('shared', sa.Boolean(), nullable=False),
    sa.Column('is_default', sa.Boolean(), nullable=False),
    sa.Column('address_scope_id', sa.String(length=36), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_subnetpools'))
    )
    with op.batch_alter_table('subnetpools', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_subnetpools_project_id'), ['project_id'], unique=False)

    op.create_table('tags',
    sa.Column('resource_id', sa.String(length=36), nullable=False),
    sa.Column('tag', sa.String(length=255).with_variant(
        mysql.VARCHAR(255, collation='utf8mb4_bin'), 'mysql', 'mariadb'), nullable=False),
    sa.PrimaryKeyConstraint('resource_id', 'tag', name=op.f('pk_tags'))
    )
    op.create_table('ports',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('project_id', sa.String(length=255), nullable=True),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('description', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.Column('revision_number', sa.Integer(), nullable=False),
    sa.Column('network_id', sa.String(length=36), nullable=False),
    sa.Column('mac_address', sa.String(length=32), nullable=False),
    sa.Column('admin_state_up', sa.Boolean(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('device_id', sa.String(length=255), nullable=False),
    sa.Column('device_owner', sa.String(length=255), nullable=False),
    sa.ForeignKeyConstraint(['network_id'], ['networks.id'], name=op.f('fk_ports_network_id')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_ports')),
    sa.UniqueConstraint('network_id', 'mac_address', name='uq_ports_network_id_mac_address')
    )
    with op.batch_alter_table('ports', schema=None) as batch_op:
        batch_op.create_index('ix_ports_device_id', ['device_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_ports_project_id'), ['project_id'], unique=False)

    op.create_table('subnetpool_prefixes',
    sa.Column('subnetpool_id', sa.String(length=36), nullable=False),
    sa.Column('cidr', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['subnetpool_id'], ['subnetpools.id'], name=op.f('fk_subnetpool_prefixes_subnetpool_id'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('subnetpool_id', 'cidr', name=op.f('pk_subnetpool_prefixes'))
    )
    op.create_table('subnets',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('project_id', sa.String(length=255), nullable=True),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('description', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.Column('revision_number', sa.Integer(), nullable=False),
    sa.Column('network_id', sa.String(length=36), nullable=False),
    sa.Column('ip_version', sa.Integer(), nullable=False),
    sa.Column('cidr', sa.String(length=64), nullable=False),
    sa.Column('gateway_ip', sa.String(length=64), nullable=True),
    sa.Column('enable_dhcp', sa.Boolean(), nullable=False),
    sa.Column('ipv6_ra_mode', sa.String(length=16), nullable=True),
    sa.Column('ipv6_address_mode', sa.String(length=16), nullable=True),
    sa.Column('subnetpool_id', sa.String(length=36), nullable=True),
    sa.ForeignKeyConstraint(['network_id'], ['networks.id'], name=op.f('fk_subnets_network_id')),
    sa.ForeignKeyConstraint(['subnetpool_id'], ['subnetpools.id'], name=op.f('fk_subnets_subnetpool_id')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_subnets'))
    )
    with op.batch_alter_table('subnets', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_subnets_network_id'), ['network_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_subnets_project_id'), ['project_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_subnets_subnetpool_id'), ['subnetpool_id'], unique=False)

    op.create_table('allocation_pools',
    sa.Column('subnet_id', sa.String(length=36), nullable=False),
    sa.Column('first_ip', sa.String(length=64), nullable=False),
    sa.Column('last_ip', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['subnet_id'], ['subnets.id'], name=op.f('fk_allocation_pools_subnet_id'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('subnet_id', 'first_ip', name=op.f('pk_allocation_pools'))
    )
    op.create_table('dns_nameservers',
    sa.Column('subnet_id', sa.String(length=36), nullable=False),
    sa.Column('address', sa.String(length=64), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['subnet_id'], ['subnets.id'], name=op.f('fk_dns_nameservers_subnet_id'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('subnet_id', 'address', name=op.f('pk_dns_nameservers'))
    )
    op.create_table('host_routes',
    sa.Column('subnet_id', sa.String(length=36), nullable=False),
    sa.Column('destination', sa.String(length=64), nullable=False),
    sa.Column('nexthop', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['subnet_id'], ['subnets.id'], name=op.f('fk_host_routes_subnet_id'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('subnet_id', 'destination', 'nexthop', name=op.f('pk_host_routes'))
    )
    op.create_table('ip_allocations',
    sa.Column('subnet_id', sa.String(length=36), nullable=False),
    sa.Column('ip_address', sa.String(length=64), nullable=False),
    sa.Column('port_id', sa.String(length=36), nullable=False),
    sa.Column('network_id', sa.String(length=36), nullable=False),
    sa.ForeignKeyConstraint(['port_id'], ['ports.id'], name=op.f('fk_ip_allocations_port_id'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['subnet_id'], ['subnets.id'], name=op.f('fk_ip_allocations_subnet_id')),
    sa.PrimaryKeyConstraint('subnet_id', 'ip_address', name=op.f('pk_ip_allocations'))
    )
    with op.batch_alter_table('ip_allocations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ip_allocations_network_id'), ['network_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_ip_allocations_port_id'), ['port_id'], unique=False)

