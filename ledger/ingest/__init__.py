"""Ingest usage files: validate every row, dedupe by key, and commit one atomic, columnar batch.

Stages (each returns records or problems; the caller decides to stop), one submodule each, over
the shared vocabulary of `records` (problems, the error, results):

1. `opening`: open each file in its read types (CSV parsed by DuckDB, names as ENUMs when it can,
   see `enums`; JSON Lines as text; Parquet in the file's own types where exact, else as text;
   one SQL source per file);
2. `rows`: validate every row in DuckDB (one pass, no per-row Python; the SQL checks are in
   `checks`), plus the dimensions, units, currencies and closed periods the rows touch;
3. `staging`: write the typed rows to a staging Parquet file;
4. `dedupe`: dedupe by key against the batch itself and every committed batch: the same key with
   the same content counts once, the same key with other content is a conflict;
5. `commit`: move the files into the facts folder, then commit the batch row in the ledger DB. The
   DB row is the commit point: killed before it, the files are never read and the next ingest
   sweeps them. Ingests of one ledger home are serialized by a lock file.
"""
from __future__ import annotations

from . import enums
from .commit import ingest, list_batches, sweep_orphans, undo_batch
from .dedupe import NUMPY_SORT_MAX_ROWS, hashes_repeat
from .opening import parquet_direct
from .records import (
    ADJUSTABLE,
    FORMATS,
    MAX_LINE_BYTES,
    MAX_PROBLEMS,
    PARQUET_OPTIONS,
    FileReport,
    IngestError,
    IngestResult,
    Problem,
)
