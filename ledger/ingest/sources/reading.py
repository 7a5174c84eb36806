"""Open a source file (CSV, JSON Lines or Parquet) as a DuckDB relation with its line numbers, and
turn map paths into SQL over it: the adapters' only way to read a source (no per-row Python).

``_line`` counts records as the plain ingest's pass does (the CSV header is 1, JSON objects and
Parquet rows from 1); problems are told as the file's physical lines (blank lines and quoted line
breaks counted; for JSON, the line an object starts on) by ``rows.physical_lines``, as the plain
ingest tells them. A file is opened as the plain ingest opens it (``ingest.shapes``): gzip unpacked,
JSON of every shape (JSON Lines, an array of objects, objects over many lines) read one object a
record.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from ...errors import Problem
from ...sqltext import literal as lit, quote_ident as q
from ..checks import DECIMAL_RE, OFFSET_RE
from ..opening import csv_header, format_named, parquet_names, unreadable_csv, unreadable_json
from ..records import IngestError, first_line
from ..shapes import MAX_OBJECT_BYTES, json_reader, readable
from .jsondocs import Documents
from .mapfile import FieldPath

#: The most bytes one JSON object of a source may have (DuckDB's own default for a JSON object):
#: a pretty-printed OTLP document is one object, larger than a ledger row.
SOURCE_OBJECT_BYTES = MAX_OBJECT_BYTES


@dataclass
class SourceFile:
    """A source file opened for an adapter: its `label` (as given), `fmt`, the SQL `relation` with
    ``_line`` and its fields, `types` of its top-level fields (JSON Lines: none, all JSON), and `base`:
    the relation of all the file's records when `relation` keeps only some (its record count maps
    record numbers to the file's lines)."""

    path: Path
    label: str
    fmt: str
    relation: str
    types: dict[str, str]
    base: str | None = None
    #: The JSON documents whose paths are asked for, and the problems those paths found
    #: (``sources.jsondocs``: two parses per document and row, for all its paths).
    docs: Documents = field(default_factory=Documents)
    #: What the readers read (`path`, or its unpacked copy: ledger.ingest.shapes), whether `path` was
    #: gzip, and for JSON its shape (``lines``, ``array``, ``documents``).
    read_path: Path | None = None
    compressed: bool = False
    shape: str | None = None
    #: The file's records without ``_line`` (`relation` numbers them with a window, which DuckDB runs
    #: on one thread), the relation they are the records of, and the number of the first record.
    scan: str | None = None
    scan_of: str | None = None
    first: int = 1

    def value(self, path: FieldPath) -> str:
        """SQL: the text at `path` in a row (NULL when the row has nothing there), over :meth:`rows`.
        A path goes on inside a string that holds JSON, in every format (``sources.jsondocs``); an
        object or a list at the end of the path, or a key written twice on the way, is a problem of
        the row (:meth:`problems`)."""
        at = self._at(path)
        if isinstance(at, str):
            self.docs.plain(at, path.text)
            return at
        return self.docs.text(*at, path.text) if at else "CAST(NULL AS VARCHAR)"

    def decimal(self, path: FieldPath, scale: int) -> str:
        """SQL: the number at `path` as DECIMAL(38,`scale`), from its digits as written (never through
        a double), rounded to `scale` places; NULL when the value is not a number or does not fit.
        A typed Parquet DOUBLE is its shortest text (``0.1``)."""
        at = self._at(path)
        if isinstance(at, str):
            self.docs.plain(at, path.text)
            return (f"(CASE WHEN regexp_full_match(trim({at}), {lit(DECIMAL_RE)}) "
                    f"THEN TRY_CAST(trim({at}) AS DECIMAL(38,{scale})) END)")
        return self.docs.decimal(*at, path.text, scale) if at else "CAST(NULL AS DECIMAL(38,0))"

    def is_json(self, path: FieldPath) -> bool:
        """Whether `path` is read from JSON (its numbers' digits as written), not from a text field."""
        return not isinstance(self._at(path), str)

    def _at(self, path: FieldPath):
        """Where `path` is: SQL of a text field (a CSV or Parquet field itself), (document, steps), or None."""
        if self.fmt == "jsonl":
            return self.docs.root("_j"), path.segments(with_root=True)
        t = self.types.get(path.root)
        if t is None:
            return None
        col = q(path.root)
        nested = t.startswith(("STRUCT", "MAP", "UNION")) or t.endswith("]")
        if not path.rest and not nested:
            return col if t == "VARCHAR" else f"CAST({col} AS VARCHAR)"
        if not path.rest:
            return f"CAST(to_json({col}) AS VARCHAR)"
        return self.docs.root(f"TRY_CAST({col} AS JSON)" if t == "VARCHAR" else f"to_json({col})"), path.segments()

    def problems(self) -> list[tuple[str, str, str]]:
        """(condition SQL, path, message SQL) of the problems the asked paths can find in a row."""
        return self.docs.problems()

    def unnumbered(self) -> tuple[str, int] | None:
        """(the relation of the records without ``_line``, the number of the first) when `relation` is
        still the file's own records (not a choice of them: :func:`kept`), else None. Scanned into a
        table in insertion order, a record's row id (from 0) plus `first` is its ``_line``."""
        return (self.scan, self.first) if self.scan is not None and self.relation == self.scan_of else None

    def rows(self, where: str | None = None) -> str:
        """The relation with the asked-for documents' columns (two parses per document and row); with
        `where` (SQL over ``_line`` and the file's fields), only the records for which it holds (their
        line numbers kept: the records are numbered before they are chosen)."""
        return self.docs.select(self.relation if where is None else f"SELECT * FROM ({self.relation}) WHERE {where}")



def kept(src: SourceFile, where: str) -> SourceFile:
    """`src` with only the records for which the SQL condition `where` holds (line numbers kept)."""
    return replace(src, relation=f"SELECT * FROM ({src.rows()}) WHERE {where}", base=src.base or src.relation,
                   docs=Documents(flags=dict(src.docs.flags)))


def instant(text: str, naive_utc: bool) -> str:
    """SQL: an instant's text, with its UTC offset added when it has none and the map says naive
    instants are UTC (LiteLLM's Postgres columns are ``timestamp without time zone`` in UTC).

    A naive instant of the usual shape (``2026-10-01 00:00:40.610``, or with ``T``) is written in
    the ingest's common shape, ``2026-10-01T00:00:40.610Z``, the same instant, which the ingest
    judges without a regular expression (docs/ingest.md, "How it is fast"); anything else gets
    ``+00:00``, and the ingest judges it as written. Whether a value has an offset is told by its
    last characters (``Z``, or a sign where ``±HH``, ``±HHMM`` or ``±HH:MM`` would start) before
    the regular expression is asked, for the few values where a sign sits there."""
    if not naive_utc:
        return text
    t = f"trim({text})"
    sign = " OR ".join(f"substr({t}, -{k}, 1) IN ('+', '-')" for k in (6, 5, 3))
    has_offset = (f"(CASE WHEN right({t}, 1) IN ('Z', 'z') THEN true WHEN NOT ({sign}) THEN false "
                  f"ELSE regexp_matches({t}, {lit(OFFSET_RE)}) END)")
    naive = (f"(CASE WHEN {t} LIKE '____-__-__ __:__:__%' THEN left({t}, 10) || 'T' || substr({t}, 12) || 'Z' "
             f"WHEN {t} LIKE '____-__-__T__:__:__%' THEN {t} || 'Z' ELSE {t} || '+00:00' END)")
    return f"(CASE WHEN {has_offset} THEN {text} ELSE {naive} END)"


class Fields(dict):
    """A CSV or Parquet source's top-level fields -> their DuckDB type, looked up by a map path's root
    as the file spells it, or but for case when one field of the file matches (a warehouse export
    writes ``starttime`` or ``STARTTIME`` for LiteLLM's ``startTime``; DuckDB's own names resolve
    without case). A root that two fields match (they differ only in case, or the header repeats a
    name) is refused, naming both: IngestError from :meth:`get`, raised while the adapter builds its
    SQL, before any row is converted."""

    def __init__(self, types: dict[str, str], names: list[str], label: str, line: int | None):
        super().__init__(types)
        self.label, self.line = label, line
        self.groups: dict[str, list[str]] = {}
        for real, duck in zip(names, types):
            self.groups.setdefault(real.casefold(), []).append(duck)
        self.spelled = dict(zip(types, names))

    def _find(self, key) -> str | None:
        found = self.groups.get(key.casefold(), []) if isinstance(key, str) else []
        if len(found) > 1:
            mine = [self.spelled[f] for f in found]
            first = key if key in mine else mine[0]
            other = next((m for m in mine if m != first), first)
            what = (f"the header names {first!r} twice" if other == first else
                    f"the file has both {first!r} and {other!r}: names that differ only in case are ambiguous")
            raise IngestError([Problem(file=self.label, line=self.line, entry=key, message=f"{what} (keep one)")])
        return found[0] if found else None

    def get(self, key, default=None):
        found = self._find(key)
        return super().get(found, default) if found is not None else default

    def __getitem__(self, key):
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        return super().__getitem__(found)

    def __contains__(self, key) -> bool:  # present, even when ambiguous (reading it is refused)
        return isinstance(key, str) and bool(self.groups.get(key.casefold()))


def open_source(con, path: Path, fmt: str | None, link_dir: Path) -> SourceFile:
    """The source file at `path` as a relation; IngestError when it is missing or does not read.
    `link_dir` is the conversion's scratch folder (links to names with glob characters, unpacked gzip)."""
    label = str(path)
    path = Path(path)
    if not path.is_file():
        raise IngestError([Problem(file=label, message="no such file")])
    fmt = format_named(path, fmt)
    if fmt not in ("csv", "jsonl", "parquet"):
        raise IngestError([Problem(file=label,
                                   message=f"cannot tell the format from the extension {path.suffix!r}; use --format")])
    data = readable(path, label, fmt, link_dir)
    read = lit(str(data.path))
    names = None
    first = 1
    if fmt == "csv":
        names, bad = csv_header(data.path, label)
        if bad:
            raise IngestError(bad)
        scan = (f"SELECT * FROM read_csv({read}, header=true, all_varchar=true, delim=',', quote='\"', escape='\"', "
                "strict_mode=true)")
        first = 2  # the header is line 1
    elif fmt == "jsonl":
        scan = f"SELECT json AS _j FROM {json_reader(data.path, data.shape, SOURCE_OBJECT_BYTES)}"
    else:
        scan = f"SELECT * FROM read_parquet({read})"
    rel = f"SELECT row_number() OVER () + {first - 1} AS _line, * FROM ({scan})"
    try:
        types = {r[0]: r[1] for r in con.execute(f"DESCRIBE {rel}").fetchall() if r[0] != "_line"}
    except Exception as e:  # duckdb.Error: not that format
        raise IngestError([unreadable(label, fmt, data.path, e, data.shape)]) from None
    if fmt == "parquet":
        names = parquet_names(con, data.path, list(types))
    fields = {} if fmt == "jsonl" else Fields(types, names if names and len(names) == len(types) else list(types),
                                              label, 1 if fmt == "csv" else None)
    return SourceFile(path=path, label=label, fmt=fmt, relation=rel, types=fields, read_path=data.path,
                      compressed=data.gzip, shape=data.shape, scan=scan, scan_of=rel, first=first)


def unreadable(label: str, fmt: str, read_path: Path, e: BaseException, shape: str | None) -> Problem:
    """The problem of a source file DuckDB could not read: for JSON, the first place that is not JSON
    of its shape, in the ledger's words (file, line, column); else DuckDB's first line."""
    if fmt == "jsonl":
        return unreadable_json(read_path, label, shape or "lines", SOURCE_OBJECT_BYTES, e)
    if fmt == "csv":
        return unreadable_csv(read_path, label, e)
    return Problem(file=label, message=f"cannot read as {fmt}: {first_line(e)}")
