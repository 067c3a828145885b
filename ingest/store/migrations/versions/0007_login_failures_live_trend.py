"""login failures shared by every server process, and the live trend for followers

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 03:00:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('login_failure',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('scope', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_login_failure_attempt_at', 'login_failure', ['attempt_at'], unique=False)
    op.create_index('ix_login_failure_scope_key_at', 'login_failure', ['scope', 'key', 'attempt_at'], unique=False)
    op.create_table('live_trend',
    sa.Column('site_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('ts', sa.DateTime(timezone=True), nullable=False),
    sa.Column('values_json', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.PrimaryKeyConstraint('site_name', 'ts')
    )


def downgrade() -> None:
    op.drop_table('live_trend')
    op.drop_index('ix_login_failure_scope_key_at', table_name='login_failure')
    op.drop_index('ix_login_failure_attempt_at', table_name='login_failure')
    op.drop_table('login_failure')
