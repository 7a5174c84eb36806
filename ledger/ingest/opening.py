"""Stage 1, open sources: each file's format, columns and SHA-256, and its SELECT in the read types."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import duckdb

from .. import facts
from .checks import cast_flag, lit, q, read_type
from .records import FORMATS, MAX_LINE_BYTES, IngestError, Problem, _first_line, _Source


def _format_of(path: Path, fmt: str | None) -> str:
    if fmt:
        if fmt not in ("csv", "parquet", "jsonl"):
            raise IngestError([Problem(str(path), None, None, f"unknown format {fmt!r} (csv, parquet, jsonl)")])
        return fmt
    f = FORMATS.get(path.suffix.lower())
    if f is None:
        raise IngestError([Problem(str(path), None, None,
                                   f"cannot tell the format from the extension {path.suffix!r}; use --format")])
    return f


def _digests_in_background(paths: list[Path]):
    """SHA-256 of each file, computed in a thread while DuckDB reads (hashlib releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(lambda: [_sha256(p) for p in paths])
    pool.shutdown(wait=False)
    return future


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _csv_header(src: _Source) -> list[Problem]:
    import csv

    with src.path.open("rb") as fh:
        head = fh.readline(MAX_LINE_BYTES + 1)
    if not head.strip():
        return [Problem(src.label, None, None, "file is empty: expected a header line and rows")]
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return [Problem(src.label, 1, None, f"header is not UTF-8 ({e.reason} at byte {e.start})")]
    src.columns = [c.strip() for c in next(csv.reader([text]))]
    return []


def _jsonl_keys(con: duckdb.DuckDBPyConnection, src: _Source) -> list[Problem]:
    if src.path.stat().st_size == 0:
        return [Problem(src.label, None, None, "file is empty: expected one JSON object per line")]
    try:
        rows = con.execute(f"SELECT DISTINCT unnest(json_keys(json)) FROM read_ndjson_objects({lit(str(src.path))}, "
                           f"maximum_object_size={MAX_LINE_BYTES})").fetchall()
    except duckdb.Error as e:
        return [Problem(src.label, None, None, f"not JSON Lines: {_first_line(e)}")]
    src.columns = sorted(r[0] for r in rows)
    return []


# Parquet timestamps that are not UTC-adjusted (those read as TIMESTAMP WITH TIME ZONE or TIMESTAMPTZ_NS)
_NAIVE_TIMESTAMPS = {"TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS"}


def _parquet_columns(con: duckdb.DuckDBPyConnection, src: _Source) -> list[Problem]:
    """A Parquet file's columns and the DuckDB type each reads as (kept for the pass: see
    `parquet_direct`); a naive timestamp column is a problem."""
    try:
        rows = con.execute(f"DESCRIBE SELECT * FROM read_parquet({lit(str(src.path))})").fetchall()
    except duckdb.Error as e:
        return [Problem(src.label, None, None, f"not a Parquet file: {_first_line(e)}")]
    src.types = {r[0]: r[1] for r in rows}
    src.columns = list(src.types)
    return [Problem(src.label, None, c, "timestamp column has no UTC offset (naive timestamps)")
            for c, t in src.types.items() if t in _NAIVE_TIMESTAMPS]


def _read_select(kind: str, src: _Source, rejects: str | None, with_line: bool,
                 enum_types: dict[str, str] | None = None, direct: set[str] | None = None) -> str:
    """SELECT every column of the kind in its read type (absent optional columns as NULL) from one file.

    CSV is parsed by DuckDB into the read types (bad values become rejects with line and column),
    or for the columns in `enum_types` into the ENUM type named there; JSON Lines and Parquet are read
    as text, cast, and carry a ``<col>__castfail`` flag per numeric column, except the Parquet
    columns in `direct` (see `parquet_direct`), taken in their own type."""
    spec = facts.KINDS[kind]
    present = set(src.columns)
    path = lit(str(src.path))
    enum_types = enum_types or {}
    if src.fmt == "csv":
        cols = "{" + ", ".join(f"{lit(c)}: {lit(enum_types.get(c) or read_type(kind, c))}" for c in src.columns) + "}"
        rej = f", store_rejects=true, rejects_table={lit(rejects)}, rejects_scan={lit(rejects + '_scan')}" if rejects else ""
        base = (f"read_csv({path}, header=true, auto_detect=false, columns={cols}, delim=',', quote='\"', "
                f"escape='\"', max_line_size={MAX_LINE_BYTES}, strict_mode=true{rej})")
        exprs = [q(c.name) if c.name in present else f"NULL::{read_type(kind, c.name)} AS {q(c.name)}"
                 for c in spec.columns]
        line = "row_number() OVER () + 1 AS _line, " if with_line else ""
        return f"SELECT {line}{', '.join(exprs)} FROM {base}"
    if src.fmt == "jsonl":
        base = f"read_ndjson_objects({path}, maximum_object_size={MAX_LINE_BYTES})"
        texts = [f"json_extract_string(json, {lit('$.' + json.dumps(c.name))}) AS {q(c.name + '__text')}"
                 for c in spec.columns]
    else:
        base = f"read_parquet({path})"
        direct = direct or set()
        texts = [f"{q(c.name)} AS {q(c.name + '__direct')}" if c.name in direct else
                 f"CAST({q(c.name)} AS VARCHAR) AS {q(c.name + '__text')}" if c.name in present
                 else f"NULL::VARCHAR AS {q(c.name + '__text')}" for c in spec.columns]
    line = "row_number() OVER () AS _line, " if with_line else ""
    outer = ["_line"] if with_line else []
    for c in spec.columns:
        t, rt = q(c.name + "__text"), read_type(kind, c.name)
        if src.fmt == "parquet" and c.name in direct:  # typed in the file: no text round trip
            d = q(c.name + "__direct")
            outer.append(f"{d} AS {q(c.name)}" if rt == "VARCHAR" else f"CAST({d} AS {rt}) AS {q(c.name)}")
            if rt != "VARCHAR":
                outer += [f"false AS {q(cast_flag(c.name))}", f"NULL::VARCHAR AS {t}"]
        elif rt == "VARCHAR":
            outer.append(f"{t} AS {q(c.name)}")
        else:
            outer.append(f"TRY_CAST(trim({t}) AS {rt}) AS {q(c.name)}")
            outer.append(f"({t} IS NOT NULL AND trim({t}) <> '' AND TRY_CAST(trim({t}) AS {rt}) IS NULL) "
                         f"AS {q(cast_flag(c.name))}")
            outer.append(t)
    return f"SELECT {', '.join(outer)} FROM (SELECT {line}{', '.join(texts)} FROM {base})"


_EXACT_INTS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}


def parquet_direct(kind: str, types: dict[str, str]) -> set[str]:
    """The columns of a Parquet file (`types`: column -> DuckDB type) that can be read in their own
    type, giving exactly the value the text round trip (cast to text, then to the read type) gives:

    - text as text;
    - instants with a time zone (Parquet's UTC-adjusted timestamps) as instants;
    - integers and DOUBLEs where a DOUBLE is read (FLOAT is not: as text it shows its shortest
      decimal, 0.1, which is not the float's own value);
    - integers, and DECIMALs of scale <= 12 that fit, where a DECIMAL(38,12) is read.
    Anything else (text holding numbers, FLOAT, DATE, ...) goes the text way and is judged there."""
    out = set()
    for c in facts.KINDS[kind].columns:
        st = types.get(c.name)
        if st is None:
            continue
        rt = read_type(kind, c.name)
        if c.type == "TIMESTAMPTZ":
            ok = st == "TIMESTAMP WITH TIME ZONE"
        elif rt == "VARCHAR":
            ok = st == "VARCHAR"
        elif rt == "DOUBLE":
            ok = st in _EXACT_INTS or st == "DOUBLE"
        else:
            m = re.fullmatch(r"DECIMAL\((\d+),(\d+)\)", st)
            ok = st in _EXACT_INTS or bool(m and int(m[2]) <= 12 and int(m[1]) - int(m[2]) <= 26)
        if ok:
            out.add(c.name)
    return out


def _open_sources(con, kind: str, paths: list[Path], fmt: str | None) -> list[_Source]:
    """Each file's format and columns; unknown and missing columns are problems (raised together)."""
    spec = facts.KINDS[kind]
    sources, problems = [], []
    for p in paths:
        label = str(p)
        if not p.is_file():
            problems.append(Problem(label, None, None, "no such file"))
            continue
        try:
            src = _Source(path=p, label=label, fmt=_format_of(p, fmt), columns=[])
        except IngestError as e:
            problems.extend(e.problems)
            continue
        probs = (_csv_header(src) if src.fmt == "csv" else
                 _jsonl_keys(con, src) if src.fmt == "jsonl" else _parquet_columns(con, src))
        if not probs:
            line = 1 if src.fmt == "csv" else None
            names = set(spec.names)
            probs += [Problem(label, line, c, f"unknown column (expected: {', '.join(spec.names)})")
                      for c in src.columns if c not in names]
            probs += [Problem(label, line, c.name, "required column is missing")
                      for c in spec.columns if c.required and c.name not in src.columns]
            if len(set(src.columns)) != len(src.columns):
                probs.append(Problem(label, line, None, "a column name appears twice in the header"))
        problems.extend(probs)
        sources.append(src)
    if problems:
        raise IngestError(problems)
    return sources
