"""users and roles, audit log, shared secrets (issue 14)

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
    op.create_table('app_user',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('role', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('password_hash', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('token_sha256', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('session_epoch', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_sha256')
    )
    with op.batch_alter_table('app_user', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_app_user_name'), ['name'], unique=True)
    op.create_table('audit_entry',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('user_name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('action', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('target', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('before_json', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('after_json', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('address', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('audit_entry', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_audit_entry_at'), ['at'], unique=False)
        batch_op.create_index(batch_op.f('ix_audit_entry_user_name'), ['user_name'], unique=False)
        batch_op.create_index(batch_op.f('ix_audit_entry_action'), ['action'], unique=False)
    op.create_table('app_secret',
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('value', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )


def downgrade() -> None:
    op.drop_table('app_secret')
    with op.batch_alter_table('audit_entry', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_audit_entry_action'))
        batch_op.drop_index(batch_op.f('ix_audit_entry_user_name'))
        batch_op.drop_index(batch_op.f('ix_audit_entry_at'))
    op.drop_table('audit_entry')
    with op.batch_alter_table('app_user', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_app_user_name'))
    op.drop_table('app_user')
