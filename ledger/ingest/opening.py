"""Stage 1, open sources: each file's format, columns and SHA-256, and its SELECT in the read types."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import duckdb

from .. import facts
from .checks import cast_flag, cast_sql, file_type, lit, q, read_type
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
    """The header's column names. The header ends at the first line end (LF, CRLF or a lone CR, as
    DuckDB's reader takes them) within the first MiB; a longer first line is a problem."""
    import csv

    with src.path.open("rb") as fh:
        head = fh.read(MAX_LINE_BYTES + 1)
    if not head.strip():
        return [Problem(src.label, None, None, "file is empty: expected a header line and rows")]
    ends = [i for i in (head.find(b"\n"), head.find(b"\r")) if i >= 0]
    if not ends:
        if len(head) > MAX_LINE_BYTES:
            return [Problem(src.label, 1, None, f"the header line is longer than {MAX_LINE_BYTES} bytes "
                                                "(is this a CSV file?)")]
        end = len(head)
    else:
        end = min(ends)
    try:
        text = head[:end].decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return [Problem(src.label, 1, None, f"header is not UTF-8 ({e.reason} at byte {e.start})")]
    if "\x00" in text:
        return [Problem(src.label, 1, None, "the header holds a NUL byte (is this a CSV file?)")]
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, MAX_LINE_BYTES + 1))
    try:
        fields = next(csv.reader([text]), [])
    except csv.Error as e:
        return [Problem(src.label, 1, None, f"the header is not a CSV line: {e}")]
    finally:
        csv.field_size_limit(limit)
    bad = [f for f in fields if len(f) > 200]
    if bad:
        return [Problem(src.label, 1, None, f"a header field is {len(bad[0])} characters long: "
                                            "expected column names (is this a CSV file?)")]
    src.columns = [c.strip() for c in fields]
    return []


#: Characters DuckDB expands in a file name (glob patterns).
GLOB_CHARS = frozenset("*?[]{}")


def readable_path(path: Path, link_dir: Path | None) -> Path:
    """`path`, or when its name holds a glob character, a symbolic link to it in `link_dir` under a
    plain name, so that DuckDB reads exactly that one file."""
    if not GLOB_CHARS & set(str(path)) or link_dir is None:
        return path
    link_dir.mkdir(parents=True, exist_ok=True)
    suffix = "" if GLOB_CHARS & set(path.suffix) else path.suffix
    link = link_dir / f"source-{hashlib.sha256(str(path).encode()).hexdigest()[:16]}{suffix}"
    link.unlink(missing_ok=True)
    link.symlink_to(path.resolve())
    return link


def long_line(path: Path, limit: int = MAX_LINE_BYTES) -> tuple[int, int] | None:
    """(line number, length in bytes) of the first line longer than `limit` bytes, or None.

    DuckDB's CSV reader refuses a line of up to 32 MiB that is over its limit, but drops a longer
    one without a word; this scan finds such lines first. It is cheap: a line longer than `limit`
    covers a whole aligned block of `limit // 2` bytes with no line end, and each block is tested
    with one byte search that stops at its first line end; only a block without one is looked at
    closely."""
    block = max(limit // 2, 1)
    size = path.stat().st_size
    if size <= limit:
        return None
    with path.open("rb") as fh:
        pos = 0
        while pos < size:
            fh.seek(pos)
            chunk = fh.read(block)
            if b"\n" not in chunk and b"\r" not in chunk and len(chunk) == block:
                found = _line_around(fh, pos, size, limit)
                if found:
                    return found
            pos += block
    return None


def _line_around(fh, pos: int, size: int, limit: int) -> tuple[int, int] | None:
    """The line holding byte `pos`: (its number, its length) when longer than `limit`."""
    start = pos
    while start > 0:  # back to the previous line end
        lo = max(0, start - (1 << 20))
        fh.seek(lo)
        data = fh.read(start - lo)
        k = max(data.rfind(b"\n"), data.rfind(b"\r"))
        if k >= 0:
            start = lo + k + 1
            break
        start = lo
    end = pos
    while end < size:
        fh.seek(end)
        data = fh.read(1 << 20)
        ks = [k for k in (data.find(b"\n"), data.find(b"\r")) if k >= 0]
        if ks:
            end += min(ks)
            break
        end += len(data)
    if end - start <= limit:
        return None
    fh.seek(0)
    lines, done = 1, 0
    while done < start:
        data = fh.read(min(1 << 22, start - done))
        lines += line_ends(data)
        done += len(data)
    return lines, end - start


def line_ends(data: bytes) -> int:
    """Line ends in `data` as CSV readers count them: LF, CRLF and a lone CR each end a line."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def _jsonl_keys(con: duckdb.DuckDBPyConnection, src: _Source) -> list[Problem]:
    if src.path.stat().st_size == 0:
        return [Problem(src.label, None, None, "file is empty: expected one JSON object per line")]
    try:
        rows = con.execute(f"SELECT DISTINCT unnest(json_keys(json)) FROM read_ndjson_objects({lit(str(src.read_path))}, "
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
        rows = con.execute(f"DESCRIBE SELECT * FROM read_parquet({lit(str(src.read_path))})").fetchall()
    except duckdb.Error as e:
        return [Problem(src.label, None, None, f"not a Parquet file: {_first_line(e)}")]
    src.types = {r[0]: r[1] for r in rows}
    src.columns = list(src.types)
    out = []
    for c, t in src.types.items():
        if t in _NAIVE_TIMESTAMPS:
            out.append(Problem(src.label, None, c, "timestamp column has no UTC offset (naive timestamps)"))
        elif not _PARQUET_SCALAR.fullmatch(t):
            out.append(Problem(src.label, None, c, f"is a {t.split('(')[0]} column: expected text, a number or "
                                                   "an instant, one value per row"))
    return out


#: Parquet column types whose values have one text form: text, numbers, instants (dates and
#: naive timestamps are judged as text and refused there or above).
_PARQUET_SCALAR = re.compile(r"VARCHAR|(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?)|FLOAT|DOUBLE|DECIMAL\(\d+,\d+\)|"
                             r"TIMESTAMP.*|DATE")


def _read_select(kind: str, src: _Source, rejects: str | None, with_line: bool,
                 enum_types: dict[str, str] | None = None, direct: set[str] | None = None) -> str:
    """SELECT every column of the kind in its read type (absent optional columns as NULL) from one file.

    CSV is parsed by DuckDB with latencies as DOUBLE (a bad value is a reject with line and column),
    the columns in `enum_types` as the ENUM type named there, and everything else as text; JSON
    Lines and Parquet are read as text, except the Parquet columns in `direct` (see
    `parquet_direct`), taken in their own type. Every numeric column read as text is cast here and
    carries a ``<col>__castfail`` flag and its ``<col>__text`` (see checks.cast_sql); a JSON Lines
    column also its JSON type, ``<col>__jtype``."""
    spec = facts.KINDS[kind]
    present = set(src.columns)
    path = lit(str(src.read_path))
    enum_types = enum_types or {}
    direct = direct or set()
    if src.fmt == "csv":
        cols = "{" + ", ".join(f"{lit(c)}: {lit(enum_types.get(c) or file_type(kind, c))}" for c in src.columns) + "}"
        rej = f", store_rejects=true, rejects_table={lit(rejects)}, rejects_scan={lit(rejects + '_scan')}" if rejects else ""
        base = (f"read_csv({path}, header=true, auto_detect=false, columns={cols}, delim=',', quote='\"', "
                f"escape='\"', max_line_size={MAX_LINE_BYTES}, strict_mode=true{rej})")
        texts = []
        for c in spec.columns:
            as_text = read_type(kind, c.name) not in ("VARCHAR", "DOUBLE")
            name = q(c.name + "__text") if as_text else q(c.name)
            texts.append(f"{q(c.name)} AS {name}" if c.name in present else
                         f"NULL::{'VARCHAR' if as_text else file_type(kind, c.name)} AS {name}")
        line = "row_number() OVER () + 1 AS _line, " if with_line else ""
    elif src.fmt == "jsonl":
        base = f"read_ndjson_objects({path}, maximum_object_size={MAX_LINE_BYTES})"
        texts = []
        for c in spec.columns:
            p = lit("$." + json.dumps(c.name))
            texts += [f"json_extract_string(json, {p}) AS {q(c.name + '__text')}",
                      f"json_type(json, {p}) AS {q(c.name + '__jtype')}"]
        texts += [f"{jsonl_row_problem('json')} AS _jsonl_problem"]
        line = "row_number() OVER () AS _line, " if with_line else ""
    else:
        base = f"read_parquet({path})"
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
        elif src.fmt == "csv" and rt in ("VARCHAR", "DOUBLE"):
            outer.append(q(c.name))
        elif rt == "VARCHAR":
            outer.append(f"{t} AS {q(c.name)}")
        else:
            value, failed = cast_sql(kind, c.name, t)
            outer += [f"{value} AS {q(c.name)}", f"{failed} AS {q(cast_flag(c.name))}", t]
        if src.fmt == "jsonl":
            outer.append(q(c.name + "__jtype"))
    if src.fmt == "jsonl":
        outer.append("_jsonl_problem")
    return f"SELECT {', '.join(outer)} FROM (SELECT {line}{', '.join(texts)} FROM {base})"


#: JSON Lines: what DuckDB's reader forgives and the contract does not, judged on the line's raw
#: text with its strings blanked out (so nothing inside a string can count).
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_JSON_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"


def jsonl_row_problem(col: str) -> str:
    """SQL: NULL for a good JSON Lines object in the text column `col`, else what is wrong with it:
    a key given twice (JSON readers disagree on which value wins), a trailing comma (not JSON),
    or a number that a double cannot hold exactly as written (an exponent, or more than 15
    significant digits: ``1e-400`` would read as 0), which must be written as a string."""
    bare = f"regexp_replace({col}, {lit(_JSON_STRING)}, '\"\"', 'g')"
    numbers = f"regexp_extract_all({bare}, {lit(_JSON_NUMBER)})"
    inexact = (f"list_bool_or(list_transform({numbers}, lambda n: regexp_matches(n, '[eE]') OR (contains(n, '.') AND "
               f"length(rtrim(ltrim(replace(replace(n, '-', ''), '.', ''), '0'), '0')) > 15)))")
    return (f"(CASE WHEN len(json_keys({col})) <> len(list_distinct(json_keys({col}))) "
            f"THEN 'a key appears twice in this object (JSON readers disagree on which value wins)' "
            f"WHEN regexp_matches({bare}, ',\\s*[}}\\]]') THEN 'a trailing comma (not JSON)' "
            f"WHEN coalesce({inexact}, false) THEN 'a number with an exponent or more than 15 significant digits "
            f"cannot be read exactly: write it as a string (\"0.000001\") or in plain digits' END)")


_EXACT_INTS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}


def parquet_direct(kind: str, types: dict[str, str]) -> set[str]:
    """The columns of a Parquet file (`types`: column -> DuckDB type) that can be read in their own
    type, giving exactly the value the text round trip (cast to text, then to the read type) gives:

    - text as text;
    - instants with a time zone (Parquet's UTC-adjusted timestamps) as instants;
    - integers and DOUBLEs where a DOUBLE is read (FLOAT is not: as text it shows its shortest
      decimal, 0.1, which is not the float's own value);
    - integers and DECIMALs of scale 0 where a whole number is read (a DOUBLE goes the text way,
      where ``12.0`` passes and ``1.5`` does not);
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
        elif rt == "BIGINT":
            ok = st in _EXACT_INTS - {"UBIGINT"} or bool(re.fullmatch(r"DECIMAL\((\d|1[0-8]),0\)", st))
        else:
            m = re.fullmatch(r"DECIMAL\((\d+),(\d+)\)", st)
            ok = st in _EXACT_INTS or bool(m and int(m[2]) <= 12 and int(m[1]) - int(m[2]) <= 26)
        if ok:
            out.add(c.name)
    return out


def _open_sources(con, kind: str, paths: list[Path], fmt: str | None, link_dir: Path | None = None) -> list[_Source]:
    """Each file's format and columns; unknown and missing columns are problems (raised together)."""
    spec = facts.KINDS[kind]
    sources, problems = [], []
    for p in paths:
        label = str(p)
        if not p.is_file():
            problems.append(Problem(label, None, None, "no such file"))
            continue
        try:
            src = _Source(path=p, label=label, fmt=_format_of(p, fmt), columns=[], read_path=readable_path(p, link_dir))
        except IngestError as e:
            problems.extend(e.problems)
            continue
        long = long_line(p) if src.fmt in ("csv", "jsonl") else None
        if long:
            problems.append(Problem(label, long[0], None, f"line longer than {MAX_LINE_BYTES} bytes ({long[1]} bytes)"))
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
