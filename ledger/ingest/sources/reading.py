"""Open a source file (CSV, JSON Lines or Parquet) as a DuckDB relation with its line numbers, and
turn map paths into SQL over it: the adapters' only way to read a source (no per-row Python).

``_line`` counts records as the plain ingest's pass does (the CSV header is 1, JSON Lines objects
and Parquet rows from 1); problems are told as the file's physical lines (blank lines and quoted
line breaks counted) by ``rows.physical_lines``, as the plain ingest tells them.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..checks import OFFSET_RE, lit, q
from ..opening import readable_path
from ..records import FORMATS, IngestError, Problem
from .mapfile import FieldPath


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
    #: JSON documents whose paths are asked for: SQL of the document -> (column name, JSON paths).
    #: Each document is parsed once per row, for all its paths (``json_extract_string`` of a list).
    docs: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    def value(self, path: FieldPath) -> str:
        """SQL: the text at `path` in a row (NULL when the row has nothing there), over :meth:`rows`."""
        if self.fmt == "jsonl":
            return self._at("_j", path.json_path(with_root=True))
        t = self.types.get(path.root)
        if t is None:
            return "CAST(NULL AS VARCHAR)"
        col = q(path.root)
        if not path.rest:
            return col if t == "VARCHAR" else f"CAST({col} AS VARCHAR)"
        doc = f"(CASE WHEN json_valid({col}) THEN {col} END)" if t == "VARCHAR" else f"to_json({col})"
        return self._at(doc, path.json_path())

    def _at(self, doc: str, json_path: str) -> str:
        name, paths = self.docs.setdefault(doc, (f"_doc{len(self.docs)}_{uuid.uuid4().hex[:6]}", []))
        if json_path not in paths:
            paths.append(json_path)
        return f"{name}[{paths.index(json_path) + 1}]"

    def rows(self) -> str:
        """The relation with the asked-for JSON values as list columns (one parse per document)."""
        if not self.docs:
            return self.relation
        lists = ", ".join(f"json_extract_string({doc}, [{', '.join(lit(p) for p in paths)}]) AS {name}"
                          for doc, (name, paths) in self.docs.items())
        return f"SELECT *, {lists} FROM ({self.relation})"



def kept(src: SourceFile, where: str) -> SourceFile:
    """`src` with only the records for which the SQL condition `where` holds (line numbers kept)."""
    return replace(src, relation=f"SELECT * FROM ({src.rows()}) WHERE {where}", base=src.base or src.relation, docs={})


def instant(text: str, naive_utc: bool) -> str:
    """SQL: an instant's text, with ``+00:00`` added when it has no offset and the map says naive
    instants are UTC (LiteLLM's Postgres columns are ``timestamp without time zone`` in UTC)."""
    if not naive_utc:
        return text
    return f"(CASE WHEN regexp_matches(trim({text}), {lit(OFFSET_RE)}) THEN {text} ELSE trim({text}) || '+00:00' END)"


def open_source(con, path: Path, fmt: str | None, link_dir: Path) -> SourceFile:
    """The source file at `path` as a relation; IngestError when it is missing or does not read."""
    label = str(path)
    path = Path(path)
    if not path.is_file():
        raise IngestError([Problem(label, None, None, "no such file")])
    fmt = fmt or FORMATS.get(path.suffix.lower())
    if fmt not in ("csv", "jsonl", "parquet"):
        raise IngestError([Problem(label, None, None,
                                   f"cannot tell the format from the extension {path.suffix!r}; use --format")])
    read = lit(str(readable_path(path, link_dir)))
    if fmt == "csv":
        rel = (f"SELECT row_number() OVER () + 1 AS _line, * FROM read_csv({read}, header=true, all_varchar=true, "
               "delim=',', quote='\"', escape='\"', strict_mode=true)")
    elif fmt == "jsonl":
        rel = f"SELECT row_number() OVER () AS _line, json AS _j FROM read_ndjson_objects({read})"
    else:
        rel = f"SELECT row_number() OVER () AS _line, * FROM read_parquet({read})"
    try:
        types = {r[0]: r[1] for r in con.execute(f"DESCRIBE {rel}").fetchall() if r[0] != "_line"}
    except Exception as e:  # duckdb.Error: not that format
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise IngestError([Problem(label, None, None, f"cannot read as {fmt}: {first}")]) from None
    return SourceFile(path=path, label=label, fmt=fmt, relation=rel, types={} if fmt == "jsonl" else types)
