"""The ledger store: dimensions, price books, ingest batches, periods, allocation runs and lines.

Reviewed by hand: money columns are ledger.models.Money (NUMERIC on PostgreSQL, exact text on
SQLite), instants are ledger.models.UTCDateTime.

Revision ID: 0001
Revises: 
Create Date: 2026-11-21 19:40:20.958769
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import ledger.models


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('allocation_run',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('period_start', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('period_end', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('created_at', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('currency', sqlmodel.sql.sqltypes.AutoString(length=3), nullable=False),
    sa.Column('idle_policy', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('basis', sqlmodel.sql.sqltypes.AutoString(length=30), nullable=False),
    sa.Column('inputs_digest', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('price_books', sa.Text(), nullable=False),
    sa.Column('code_version', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('total', ledger.models.Money(length=64), nullable=False),
    sa.Column('summary', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('allocation_run', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_allocation_run_period_start'), ['period_start'], unique=False)

    op.create_table('ingest_batch',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('created_at', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('files', sa.Text(), nullable=False),
    sa.Column('rows_read', sa.Integer(), nullable=False),
    sa.Column('rows_new', sa.Integer(), nullable=False),
    sa.Column('rows_duplicate', sa.Integer(), nullable=False),
    sa.Column('first_at', ledger.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('last_at', ledger.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('booked_period', sqlmodel.sql.sqltypes.AutoString(length=7), nullable=True),
    sa.Column('as_adjustment', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('ingest_batch', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ingest_batch_kind'), ['kind'], unique=False)

    op.create_table('period',
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=7), nullable=False),
    sa.Column('start', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('end', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('closed_at', ledger.models.UTCDateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('pool',
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('display_name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('owner', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('created_at', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('price_book',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('version', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('currency', sqlmodel.sql.sqltypes.AutoString(length=3), nullable=False),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('retrieved_at', sa.Date(), nullable=False),
    sa.Column('digest', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('path', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('loaded_at', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', 'version', name='uq_price_book_name_version')
    )
    with op.batch_alter_table('price_book', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_price_book_name'), ['name'], unique=False)

    op.create_table('product',
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('display_name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('owner', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('created_at', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('tenant',
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('display_name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('owner', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('created_at', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('allocation_line',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('day', sa.Date(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('tenant', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
    sa.Column('product', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
    sa.Column('model', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
    sa.Column('pool', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
    sa.Column('provider', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
    sa.Column('category', sqlmodel.sql.sqltypes.AutoString(length=30), nullable=False),
    sa.Column('work', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('shared_from', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=True),
    sa.Column('quantity', ledger.models.Money(length=64), nullable=False),
    sa.Column('unit', sqlmodel.sql.sqltypes.AutoString(length=50), nullable=False),
    sa.Column('amount', ledger.models.Money(length=64), nullable=False),
    sa.Column('currency', sqlmodel.sql.sqltypes.AutoString(length=3), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['allocation_run.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('allocation_line', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_allocation_line_run_id'), ['run_id'], unique=False)

    op.create_table('fx_rate',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('book_id', sa.Integer(), nullable=False),
    sa.Column('from_currency', sqlmodel.sql.sqltypes.AutoString(length=3), nullable=False),
    sa.Column('to_currency', sqlmodel.sql.sqltypes.AutoString(length=3), nullable=False),
    sa.Column('rate', ledger.models.Money(length=64), nullable=False),
    sa.Column('effective_from', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('effective_to', ledger.models.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['book_id'], ['price_book.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('fx_rate', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_fx_rate_book_id'), ['book_id'], unique=False)

    op.create_table('price_entry',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('book_id', sa.Integer(), nullable=False),
    sa.Column('entry', sa.Integer(), nullable=False),
    sa.Column('meter', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('sku', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('region', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('purchase_option', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('price', ledger.models.Money(length=64), nullable=False),
    sa.Column('list_price', ledger.models.Money(length=64), nullable=False),
    sa.Column('currency', sqlmodel.sql.sqltypes.AutoString(length=3), nullable=False),
    sa.Column('per', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('effective_from', ledger.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('effective_to', ledger.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('source_url', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('tiers', sa.Text(), nullable=False),
    sa.Column('upfront', ledger.models.Money(length=64), nullable=True),
    sa.Column('term', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True),
    sa.ForeignKeyConstraint(['book_id'], ['price_book.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('price_entry', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_price_entry_book_id'), ['book_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_price_entry_meter'), ['meter'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('price_entry', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_price_entry_meter'))
        batch_op.drop_index(batch_op.f('ix_price_entry_book_id'))

    op.drop_table('price_entry')
    with op.batch_alter_table('fx_rate', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_fx_rate_book_id'))

    op.drop_table('fx_rate')
    with op.batch_alter_table('allocation_line', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_allocation_line_run_id'))

    op.drop_table('allocation_line')
    op.drop_table('tenant')
    op.drop_table('product')
    with op.batch_alter_table('price_book', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_price_book_name'))

    op.drop_table('price_book')
    op.drop_table('pool')
    op.drop_table('period')
    with op.batch_alter_table('ingest_batch', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_ingest_batch_kind'))

    op.drop_table('ingest_batch')
    with op.batch_alter_table('allocation_run', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_allocation_run_period_start'))

    op.drop_table('allocation_run')
