"""Shared by every stage: the ingest's limits and formats, its refusal, file reports and results, and the
frozen records the stages hand each other (open -> read -> check -> key -> stage -> commit)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ..errors import LedgerError, Problem
from ..facts_layout import FACT_PARQUET
from ..vocab import ADJUSTABLE  # noqa: F401  (the kinds booked as adjustments: a closed set)

#: Extension -> format (a ``.gz`` after it is gzip, told by the file's bytes: ledger.ingest.shapes).
#: JSON of every shape (JSON Lines, an array of objects, objects over many lines) is the format ``jsonl``.
FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl",
           ".json": "jsonl"}
#: What ``--format`` takes: a format, or ``json`` for jsonl.
FORMAT_NAMES = {"csv": "csv", "parquet": "parquet", "jsonl": "jsonl", "json": "jsonl"}
MAX_PROBLEMS = 50
MAX_LINE_BYTES = 1 << 20
# Parquet 2 encodings (delta-packed integers and instants) with zstd at level 1 write in half the
# time of DuckDB's defaults (Parquet 1, zstd level 3) for files of about the same size.
PARQUET_OPTIONS = FACT_PARQUET  # one definition for ingest and the migration of a home (facts_layout)


class IngestError(LedgerError):
    """The input was refused; nothing was written. `problems` (the first 50) and `total`."""

    def __init__(self, problems: list[Problem], total: int | None = None):
        self.total = max(total or 0, len(problems))
        super().__init__(problems[:MAX_PROBLEMS])

    def lines(self) -> list[str]:
        out = super().lines()
        if self.total > len(self.problems):
            out.append(f"... and {self.total - len(self.problems)} more problems ({self.total} in all)")
        return out


@dataclass(frozen=True)
class FileReport:
    """A file of a batch: `path` as given, `sha256` of its bytes, `format`, data `rows`."""

    path: str
    sha256: str
    format: str
    rows: int

    @classmethod
    def of(cls, file: OpenFile, sha256: str, rows: int) -> FileReport:
        """What the batch says of `file` (`sha256`: of its bytes; `rows`: its data rows): the file
        itself, or the source it was converted from (its origin)."""
        o = file.origin
        if o is not None:
            return cls(path=o.path, sha256=o.sha256, format=o.format, rows=rows)
        return cls(path=file.label, sha256=sha256, format=file.recorded_format, rows=rows)


@dataclass(frozen=True)
class IngestResult:
    """What an ingest did. `batch_id` is None for a dry run. `registered` lists dims it added."""

    kind: str
    batch_id: str | None
    files: tuple[FileReport, ...]
    rows_read: int
    rows_new: int
    rows_duplicate: int
    dry_run: bool = False
    as_adjustment: bool = False
    booked_period: str | None = None
    registered: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "batch_id": self.batch_id, "rows_read": self.rows_read, "rows_new": self.rows_new,
                "rows_duplicate": self.rows_duplicate, "dry_run": self.dry_run, "as_adjustment": self.as_adjustment,
                "booked_period": self.booked_period, "registered": self.registered,
                "files": [f.__dict__ for f in self.files]}


@dataclass(frozen=True)
class Origin:
    """The file a batch records for one it read, when that one was converted from it (an adapter's
    source file, a FOCUS bill: ``ledger.ingest.sources``, ``ledger.ingest.bill``). Fields:

    - `path`: the source file as the user named it.
    - `sha256`: the SHA-256 of its bytes (hex; of the compressed bytes for a gzip file).
    - `format`: its format as the batch records it (``litellm:csv``, ``focus:parquet``, ``...:csv.gz``).
    - `bytes`: its size in bytes.
    - `hidden`: columns the conversion wrote into its Parquet file for itself (its records' lines, its flags:
      ``sources.HIDDEN``), which the ingest leaves unread; any other column is judged as in any file."""

    path: str
    sha256: str
    format: str
    bytes: int
    hidden: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpenFile:
    """A file of a batch, opened (stage 1, open: ``ledger.ingest.opening``). Fields:

    - `path`: the file as given; its bytes are what the batch records (size, SHA-256).
    - `label`: how problems name it: the path as the user wrote it.
    - `fmt`: ``csv``, ``jsonl`` (JSON of every shape) or ``parquet``.
    - `read_path`: what DuckDB reads: `path` itself, a link to it with a plain name when `path` holds
      a character DuckDB would take as a glob (``*``, ``?``, ``[``, ``{``), or the unpacked copy of a
      gzip file (``ledger.ingest.shapes``), in the ingest's scratch folder.
    - `columns`: the file's columns, by the kind's names (a name written in another case is the
      kind's), in the file's order (JSON: sorted); empty until its header or keys are read.
    - `types`: Parquet: column -> the DuckDB type it reads as; empty for CSV and JSON.
    - `compressed`: the file was gzip (its `read_path` is the unpacked copy).
    - `shape`: JSON: ``lines`` (JSON Lines), ``array`` (an array of objects) or ``documents``
      (objects over many lines), as ``ledger.ingest.shapes`` tells them; None for CSV and Parquet.
    - `names`: ledger column -> the column's name as the file spells it, where it differs (another case).
    - `origin`: the file the batch records instead when this one was converted from it, else None.

    Read-only: a stage that learns more of a file makes another record (``dataclasses.replace``)."""

    path: Path
    label: str
    fmt: str
    read_path: Path
    columns: tuple[str, ...] = ()
    types: Mapping[str, str] = field(default_factory=dict)
    compressed: bool = False
    shape: str | None = None
    names: Mapping[str, str] = field(default_factory=dict)
    origin: Origin | None = None

    @property
    def recorded_format(self) -> str:
        """The format a batch records for the file: ``csv``, or ``csv.gz`` when it came compressed."""
        return self.fmt + (".gz" if self.compressed else "")

    def spelled(self, column: str) -> str:
        """A ledger column's name as the file spells it."""
        return self.names.get(column, column)


@dataclass(frozen=True)
class Batch:
    """An ingest asked for: one batch of one kind. Fields:

    - `kind`: the kind of its rows (a key of ``ledger.facts.KINDS``).
    - `paths`: its files, in the order given.
    - `fmt`: the format named for them (``csv``, ``parquet``, ``jsonl``, ``json``), or None: each by
      its extension.
    - `register_new`: register the tenants and products it names that the ledger does not know.
    - `dry_run`: check and count only; write nothing.
    - `as_adjustment`: book rows of closed months into the current open period.
    - `origins`: the files the batch records instead of `paths`, one per path, when they were
      converted from them (an adapter's sources, a bill); empty otherwise.
    - `on_commit`: what the caller commits with the batch row, in its transaction (a sync's
      watermark), or None."""

    kind: str
    paths: tuple[Path, ...]
    fmt: str | None = None
    register_new: bool = False
    dry_run: bool = False
    as_adjustment: bool = False
    origins: tuple[Origin, ...] = ()
    on_commit: CommitHook | None = None


@dataclass(frozen=True)
class CommitHook:
    """What a caller of the ingest writes in the transaction of the batch row, the commit point (the
    watermark of a live source: ``ledger.sync``), so that the two are committed together or not at
    all. Never called for a dry run, nor when the batch is refused. Fields:

    - `write`: called with the ingest's connection (SQLAlchemy Core, in the batch's transaction: it
      writes through the tables of ``ledger.schema``) and the batch's id, just before the commit; it
      executes its statements on it (it does not commit). The id is None when no batch row is written
      (`keep_empty` False and nothing new).
    - `keep_empty`: record a batch that adds no row (every row a duplicate of a committed one), as a
      plain ingest does; False for a source read again and again (a sync every minute would list a
      batch a minute): then only `write` is committed."""

    write: Callable[[object, str | None], None]
    keep_empty: bool = True


@dataclass(frozen=True)
class LedgerState:
    """What the ledger holds when a batch starts, read from its DB once (used by stages 2 and 3).
    Fields:

    - `closed`: the closed months (``YYYY-MM``).
    - `names`: ``tenant`` and ``product`` -> the names registered.
    - `expected`: column -> the names the ledger knows for it (registered tenants and products,
      pools, the price books' meters, SKUs and regions): ENUM members of the fast pass besides the
      file's own sample (``ledger.ingest.enums``).
    - `open_period`: with an adjustment, the open month (``YYYY-MM``) rows of closed months are
      booked into; else None.
    - `booked`: the SQL of a row's ``booked_at`` in the pass (``ledger.ingest.staging``)."""

    closed: frozenset[str]
    names: Mapping[str, set[str]]
    expected: Mapping[str, set[str]]
    open_period: str | None
    booked: str


@dataclass(frozen=True)
class Workspace:
    """Where one ingest works: made, and cleaned up whatever happens, by ``commit.workspace``. Fields:

    - `con`: the ingest's DuckDB connection (its temp tables, views and ENUM types go with it).
    - `home`: the ledger home's folder (``ledger.config.Home.path``).
    - `kind`: the kind of the batch.
    - `batch_id`: the batch's id (``YYYYmmddTHHMMSS-<8 hex>``): its staging folder, its fact files.
    - `staging`: ``<home>/facts/_staging/<batch_id>``: the typed Parquet file of each input file
      (``<n>.parquet``) and the scratch of writing months.
    - `scratch`: ``<home>/facts/_tmp/links``: links to files whose names hold glob characters, and
      the unpacked copies of gzip files.
    - `step`: told what the ingest is doing, one message per stage (or file).
    - `progress`: told how far DuckDB is through the long pass over a file, in percent; or None."""

    con: duckdb.DuckDBPyConnection
    home: Path
    kind: str
    batch_id: str
    staging: Path
    scratch: Path
    step: Callable[[str], None]
    progress: Callable[[float], None] | None = None


@dataclass(frozen=True)
class ReadFile:
    """A file after its pass (stage 2, read: ``ledger.ingest.passes``). Fields:

    - `file`: the file, opened.
    - `staged`: the staging Parquet file the pass wrote (every row typed, with ``booked_at`` and its
      ``_bad`` flag); None when the file does not parse.
    - `rows`: its data rows (count).
    - `bad_rows`: rows failing a check of the pass (count; stage 3 names them).
    - `values`: name column (tenant, product, ...) -> its distinct values, sorted (the checks on
      distinct values, the unknown names).
    - `months`: the months (``YYYY-MM``, UTC) its valid rows touch, from the first instant to the last.
    - `unreadable`: the problems of a file that does not parse (the other checks wait until it does):
      the first 50 of DuckDB's rejected records, or the one reason it cannot be read.
    - `rejected`: how many records DuckDB rejected (0 when it could not read the file at all)."""

    file: OpenFile
    staged: Path | None
    rows: int = 0
    bad_rows: int = 0
    values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    months: frozenset[str] = frozenset()
    unreadable: tuple[Problem, ...] = ()
    rejected: int = 0


@dataclass(frozen=True)
class Read:
    """A batch's files read and checked row by row (stages 2 and 3). Fields:

    - `files`: one per file, in the order given.
    - `reports`: what the batch records of each file, in that order: path, SHA-256, format, rows."""

    files: tuple[ReadFile, ...]
    reports: tuple[FileReport, ...]

    @property
    def rows(self) -> int:
        """The data rows of every file (count)."""
        return sum(f.rows for f in self.files)


@dataclass(frozen=True)
class Checked:
    """A batch judged as a whole, with nothing wrong (stage 3, check: ``ledger.ingest.rows``). Fields:

    - `unknown`: ``tenant`` or ``product`` -> the names the ledger does not know, sorted (registered
      at the commit, as asked).
    - `booked_period`: the open month (``YYYY-MM``) rows of closed months are booked into, as an
      adjustment; None when no row is of a closed month."""

    unknown: Mapping[str, list[str]]
    booked_period: str | None


@dataclass(frozen=True)
class Keyed:
    """A batch's rows matched by key against itself and the ledger (stage 4, key: ``ledger.ingest.dedupe``).
    Fields:

    - `new_rows`: rows whose key is new (count): in no committed batch, and the first of the batch.
    - `duplicate_rows`: rows whose key is in the ledger or earlier in the batch with the same
      content (count): they are counted once.
    - `new_sql`: SQL of the new rows (a temp view of the ingest's connection) when some rows are
      duplicates; None when every staged row is new (the staged files become the facts)."""

    new_rows: int
    duplicate_rows: int
    new_sql: str | None = None


def first_line(e: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none): how a problem quotes
    what DuckDB or the operating system said."""
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _reject_problem(label: str, line, column, error_type, message) -> Problem:
    msg = {"INVALID ENCODING": "bytes that are not UTF-8",
           "LINE SIZE OVER MAXIMUM": f"line longer than {MAX_LINE_BYTES} bytes",
           "UNQUOTED VALUE": "a quote that is never closed",
           "TOO MANY COLUMNS": "more fields than the header has",
           "MISSING COLUMNS": "fewer fields than the header has"}.get(error_type, first_line(Exception(message)))
    return Problem(file=label, line=int(line) if line is not None else None, entry=column, message=msg)
