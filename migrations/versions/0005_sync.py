"""Sync watermarks (issue 29): where each live source of ``ledger sync`` and ``ledger otlp serve``
was read up to, committed in the transaction of the batch it describes.

Reviewed by hand: one table, `sync_watermark` (ledger.models.SyncWatermark), keyed by the source's
name; `position` is JSON text whose shape is the source kind's (docs/sync.md); `updated_at` is a
ledger.models.UTCDateTime. Downgrade drops it (the sources are read again from their start, which
the ingest's keys make harmless: every row read again is a duplicate).

Revision ID: 0005_sync
Revises: 0004_signoff
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import sqlmodel
import ledger.models

revision = '0005_sync'
down_revision = '0004_signoff'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('sync_watermark',
                    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
                    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
                    sa.Column('position', sa.Text(), nullable=False),
                    sa.Column('batch_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
                    sa.Column('updated_at', ledger.models.UTCDateTime(timezone=True), nullable=False),
                    sa.PrimaryKeyConstraint('source'))


def downgrade() -> None:
    op.drop_table('sync_watermark')
