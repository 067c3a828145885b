"""scoped silences and maintenance windows of alerts

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 04:00:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('alert_mute',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('site_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('scope_kind', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('scope_value', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('rule_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('metric', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('comment', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_by', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('starts_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ends_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expired_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('expired_by', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_alert_mute_site_ends', 'alert_mute', ['site_name', 'ends_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_alert_mute_site_ends', table_name='alert_mute')
    op.drop_table('alert_mute')
