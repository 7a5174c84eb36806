"""Price entries name the provider a token price applies to: price_entry.provider, default '*'.

Reviewed by hand: the column is NOT NULL with the server default '*', so entries stored before it
existed read as "any provider", which is what their books meant (a book without `provider` keys).
Batch mode, so that SQLite (which cannot ALTER a column in place) gets the same schema.

Revision ID: 0002_price_provider
Revises: 0001
Create Date: 2026-11-28 10:00:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0002_price_provider'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('price_entry', schema=None) as batch_op:
        batch_op.add_column(sa.Column('provider', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False,
                                      server_default='*'))


def downgrade() -> None:
    with op.batch_alter_table('price_entry', schema=None) as batch_op:
        batch_op.drop_column('provider')
