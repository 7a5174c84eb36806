"""The ingest batches listed (``ledger batches``): the ``ingest_batch`` table read through SQLAlchemy
Core (:data:`ledger.schema.INGEST_BATCH`), so that the listing starts without SQLModel, DuckDB and the
ingest's stages (docs/scale.md, "Startup"). Undoing a batch is :func:`ledger.ingest.undo_batch`."""
from __future__ import annotations

import sqlalchemy as sa

from ..schema import INGEST_BATCH


def list_batches(s) -> list[sa.Row]:
    """Every batch, oldest first: rows of the ``ingest_batch`` table (a session or a Core connection
    `s`), each field an attribute as on :class:`ledger.models.IngestBatch`."""
    return list(s.execute(sa.select(INGEST_BATCH).order_by(INGEST_BATCH.c.created_at)))
