"""Shared by every stage: the ingest's limits and formats, its problems and refusal, file reports and results."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..facts_layout import FACT_PARQUET

#: Extension -> format (a ``.gz`` after it is gzip, told by the file's bytes: ledger.ingest.shapes).
#: JSON of every shape (JSON Lines, an array of objects, objects over many lines) is the format ``jsonl``.
FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl",
           ".json": "jsonl"}
#: What ``--format`` takes: a format, or ``json`` for jsonl.
FORMAT_NAMES = {"csv": "csv", "parquet": "parquet", "jsonl": "jsonl", "json": "jsonl"}
MAX_PROBLEMS = 50
MAX_LINE_BYTES = 1 << 20
ADJUSTABLE = ("requests", "meters", "outcomes", "bill")
# Parquet 2 encodings (delta-packed integers and instants) with zstd at level 1 write in half the
# time of DuckDB's defaults (Parquet 1, zstd level 3) for files of about the same size.
PARQUET_OPTIONS = FACT_PARQUET  # one definition for ingest and the migration of a home (facts_layout)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input: `file`, 1-based `line` (row for Parquet), `column`, `message`."""

    file: str
    line: int | None
    column: str | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.column}: {self.message}" if self.column else f"{where}: {self.message}"


class IngestError(Exception):
    """The input was refused; nothing was written. `problems` (the first 50) and `total`."""

    def __init__(self, problems: list[Problem], total: int | None = None):
        self.problems = problems[:MAX_PROBLEMS]
        self.total = max(total or 0, len(problems))
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        out = [str(p) for p in self.problems]
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


@dataclass
class _Source:
    path: Path
    label: str
    fmt: str
    columns: list[str]
    types: dict[str, str] = field(default_factory=dict)  # Parquet: column -> DuckDB type
    sha256: str = ""
    rows: int = 0
    months: set[str] = field(default_factory=set)
    values: dict[str, list[str]] = field(default_factory=dict)
    #: The path DuckDB reads: `path` itself, or a link to it with a plain name when `path` holds a
    #: character DuckDB would take as a glob (``*``, ``?``, ``[``, ``{``): a path is a path.
    read_path: Path | None = None
    #: The file the batch records instead, when this one was converted from it (see commit.ingest).
    origin: dict | None = None
    #: The file was gzip-compressed: `read_path` is its unpacked copy (ledger.ingest.shapes).
    compressed: bool = False
    #: JSON: ``lines`` (JSON Lines), ``array`` (an array of objects) or ``documents`` (objects over
    #: many lines), as ledger.ingest.shapes tells them; None for CSV and Parquet.
    shape: str | None = None
    #: Ledger column -> the column's name as the file spells it, where it differs (another case).
    names: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.read_path is None:
            self.read_path = self.path

    @property
    def recorded_format(self) -> str:
        """The format a batch records for the file: ``csv``, or ``csv.gz`` when it came compressed."""
        return self.fmt + (".gz" if self.compressed else "")

    def spelled(self, column: str) -> str:
        """A ledger column's name as the file spells it."""
        return self.names.get(column, column)


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _reject_problem(label: str, line, column, error_type, message) -> Problem:
    msg = {"INVALID ENCODING": "bytes that are not UTF-8",
           "LINE SIZE OVER MAXIMUM": f"line longer than {MAX_LINE_BYTES} bytes",
           "UNQUOTED VALUE": "a quote that is never closed",
           "TOO MANY COLUMNS": "more fields than the header has",
           "MISSING COLUMNS": "fewer fields than the header has"}.get(error_type, _first_line(Exception(message)))
    return Problem(label, int(line) if line is not None else None, column, msg)
