"""alert groups, impact, runbook, acknowledgement comment and change history

Revision ID: 0003
Revises: 0002
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('event', schema=None) as batch_op:
        batch_op.add_column(sa.Column('group_key', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('impact_gpus', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('impact_jobs', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('impact_tokens_per_s', sa.Float(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('impact_power_mw', sa.Float(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('runbook', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('updated_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('ack_comment', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('acknowledged_by', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default=''))
    op.create_table('event_change',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('event_id', sa.Integer(), nullable=False),
    sa.Column('changed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('severity', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('message', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('value', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['event_id'], ['event.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('event_change', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_event_change_event_id'), ['event_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('event_change', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_event_change_event_id'))
    op.drop_table('event_change')
    with op.batch_alter_table('event', schema=None) as batch_op:
        for column in ('acknowledged_by', 'ack_comment', 'updated_at', 'runbook', 'impact_power_mw',
                       'impact_tokens_per_s', 'impact_jobs', 'impact_gpus', 'group_key'):
            batch_op.drop_column(column)
