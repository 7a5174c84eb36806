"""Ingest usage files: validate every row, dedupe by key, and commit one atomic, columnar batch.

:func:`ingest` runs six stages in order (``commit._ingest``), each a function that takes and returns
frozen records of `records` (or refuses with IngestError, whose problems are
:class:`ledger.errors.Problem` records; nothing is written):

1. open (`opening.open_files`): each file's format and columns and what DuckDB reads (gzip
   unpacked, a link for a name with glob characters: `shapes`): an ``OpenFile`` per file;
2. read (`passes.read_file`): the one pass per file, parsed by DuckDB in its read types (CSV names as
   ENUMs when it can, see `enums`; JSON as text; Parquet in the file's own types where exact), every
   row check (`checks`) evaluated and the typed rows written to a staging Parquet file (`staging`):
   a ``ReadFile`` per file, the files' SHA-256 computed meanwhile;
3. check (`rows.check_file`, `rows.check_batch`): the problems of bad rows, of names, units and
   currencies, then the batch's unknown tenants and products and the closed months it touches: a
   ``Checked``;
4. key (`dedupe.key`): keys against the batch itself and every committed batch: the same key with the
   same content counts once, with other content it is a conflict: a ``Keyed``;
5. stage (`commit.stage`): the new rows into the facts' month partitions, as files of the batch;
6. commit (`commit.commit_batch`): the batch row in the ledger DB, the commit point: killed before it,
   the files are never read and the next ingest sweeps them. Ingests of one ledger home are
   serialized by a lock file.

The clean-up of every stage (staging files, scratch copies, the connection's temp tables and
views, the files of a batch that did not commit) is one context manager, `commit.workspace`. The
ledger is a ``ledger.config.Home`` passed down from the command (or resolved once by :func:`ingest`,
``ingest_bill`` or ``sources.ingest_from`` when none is given): no stage reads the environment.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

# each name is imported from its module when first used (``from
# ledger.ingest import ingest``), so that ``ledger batches`` and ``ledger ingest --help``
# (``ingest.cli``) start without the stages, DuckDB or SQLModel (docs/scale.md, "Startup")
__getattr__, __dir__, __all__ = lazy.attach(__name__, {
    ".commit": ("ingest", "sweep_orphans", "undo_batch"),
    ".batches": ("list_batches",),
    ".dedupe": ("NUMPY_SORT_MAX_ROWS", "hashes_repeat"),
    ".opening": ("parquet_direct",),
    ".records": ("ADJUSTABLE", "FORMATS", "CommitHook", "MAX_LINE_BYTES", "MAX_PROBLEMS", "PARQUET_OPTIONS",
                 "FileReport", "IngestError", "IngestResult", "OpenFile", "Origin", "first_line"),
}, modules=("enums",))


if TYPE_CHECKING:
    from . import enums
    from .batches import list_batches
    from .commit import ingest, sweep_orphans, undo_batch
    from .dedupe import NUMPY_SORT_MAX_ROWS, hashes_repeat
    from .opening import parquet_direct
    from .records import (ADJUSTABLE, FORMATS, MAX_LINE_BYTES, MAX_PROBLEMS, PARQUET_OPTIONS, CommitHook, FileReport,
                          IngestError, IngestResult, OpenFile, Origin, first_line)
