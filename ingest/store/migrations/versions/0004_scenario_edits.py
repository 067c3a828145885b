"""what-if scenarios: baseline site version, ordered edits, undo/redo position, design-limits policy

Revision ID: 0004
Revises: 0003
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('scenario', schema=None) as batch_op:
        batch_op.add_column(sa.Column('baseline_version', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('edits_json', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default='[]'))
        batch_op.add_column(sa.Column('position', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('design_limits', sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default='strict'))


def downgrade() -> None:
    with op.batch_alter_table('scenario', schema=None) as batch_op:
        for column in ('design_limits', 'position', 'edits_json', 'baseline_version'):
            batch_op.drop_column(column)
