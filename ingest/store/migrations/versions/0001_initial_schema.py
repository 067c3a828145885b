"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-29 15:33:53.213773
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    _create_events()
    _create_incidents_and_scenarios()
    _create_site_versions()
    _create_telemetry()


def _create_events() -> None:
    op.create_table('event',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('site_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('raised_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('severity', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('entity_kind', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('entity_id', sa.Integer(), nullable=False),
    sa.Column('entity_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('metric', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('value', sa.Float(), nullable=True),
    sa.Column('message', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('acknowledged', sa.Boolean(), nullable=False),
    sa.Column('acknowledged_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('silenced_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('cleared_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('event', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_event_key'), ['key'], unique=False)
        batch_op.create_index(batch_op.f('ix_event_site_name'), ['site_name'], unique=False)
        batch_op.create_index('ix_event_site_open', ['site_name', 'cleared_at'], unique=False)


def _create_incidents_and_scenarios() -> None:
    op.create_table('incident',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('site_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('description', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('start_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('end_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('incident', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_incident_site_name'), ['site_name'], unique=False)

    op.create_table('scenario',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('site_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('description', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('content', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('scenario', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_scenario_site_name'), ['site_name'], unique=False)


def _create_site_versions() -> None:
    op.create_table('site_version',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('content_sha256', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('content', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', 'version')
    )
    with op.batch_alter_table('site_version', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_site_version_name'), ['name'], unique=False)


def _create_telemetry() -> None:
    op.create_table('telemetry_layout',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('site_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('fields_csv', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('n_entities', sa.Integer(), nullable=False),
    sa.Column('block_size', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('site_name', 'kind')
    )
    op.create_table('telemetry_chunk',
    sa.Column('layout_id', sa.Integer(), nullable=False),
    sa.Column('block', sa.Integer(), nullable=False),
    sa.Column('ts_ms', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['layout_id'], ['telemetry_layout.id'], ),
    sa.PrimaryKeyConstraint('layout_id', 'block', 'ts_ms')
    )
    


def downgrade() -> None:
    
    op.drop_table('telemetry_chunk')
    op.drop_table('telemetry_layout')
    with op.batch_alter_table('site_version', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_site_version_name'))

    op.drop_table('site_version')
    with op.batch_alter_table('scenario', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_scenario_site_name'))

    op.drop_table('scenario')
    with op.batch_alter_table('incident', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_incident_site_name'))

    op.drop_table('incident')
    with op.batch_alter_table('event', schema=None) as batch_op:
        batch_op.drop_index('ix_event_site_open')
        batch_op.drop_index(batch_op.f('ix_event_site_name'))
        batch_op.drop_index(batch_op.f('ix_event_key'))

    op.drop_table('event')
    
