"""incident rows keep their bundle's metadata and file identity (listing without opening every bundle)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 22:00:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('incident', schema=None) as batch_op:
        batch_op.add_column(sa.Column('bundle_file', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('bundle_bytes', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('bundle_mtime_ns', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('metadata_json', sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('incident', schema=None) as batch_op:
        batch_op.drop_column('metadata_json')
        batch_op.drop_column('bundle_mtime_ns')
        batch_op.drop_column('bundle_bytes')
        batch_op.drop_column('bundle_file')
