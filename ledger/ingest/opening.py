"""Stage 1, open: each file's format, columns and SHA-256 (:func:`open_files`), and its SELECT in the read types."""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import duckdb

from .. import facts
from ..errors import Problem
from ..sqltext import literal as lit, quote_ident as q
from .checks import cast_flag, cast_sql, file_type, read_type
from .records import FORMAT_NAMES, FORMATS, MAX_LINE_BYTES, IngestError, OpenFile, Origin, first_line
from .lines import long_line
from .shapes import json_problem, json_reader, json_record_line, plain_suffix, readable


def format_named(path: Path, fmt: str | None) -> str | None:
    """The format `fmt` names (``json`` is ``jsonl``), else the one the file's extension names (``x.csv``
    and ``x.csv.gz`` are csv: gzip is told by the file's bytes, see ``shapes``); None when neither does."""
    if fmt:
        return FORMAT_NAMES.get(fmt)
    return FORMATS.get(plain_suffix(path).lower())


def _format_of(path: Path, fmt: str | None) -> str:
    f = format_named(path, fmt)
    if f is None and fmt:
        raise IngestError([Problem(file=str(path), message=f"unknown format {fmt!r} (csv, parquet, jsonl)")])
    if f is None:
        suffix = plain_suffix(path) or path.suffix
        raise IngestError([Problem(file=str(path),
                                   message=f"cannot tell the format from the extension {suffix!r}; use --format")])
    return f


def digests_in_background(paths: Sequence[Path]):
    """SHA-256 of each file, computed in a thread while DuckDB reads (hashlib releases the GIL): a
    future of their hex digests, in the order of `paths`."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(lambda: [file_sha256(p) for p in paths])
    pool.shutdown(wait=False)
    return future


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes (hex), as ``sha256sum`` says: what a batch records of a file."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def csv_header(path: Path, label: str) -> tuple[list[str], list[Problem]]:
    """(the column names of the CSV file at `path`'s header, its problems), the file named `label` in
    problems. The header ends at the first line end (LF, CRLF or a lone CR, as DuckDB's reader takes
    them) within the first MiB; a longer first line is a problem."""
    import csv

    with path.open("rb") as fh:
        head = fh.read(MAX_LINE_BYTES + 1)
    if not head.strip():
        return [], [Problem(file=label, message="file is empty: expected a header line and rows")]
    ends = [i for i in (head.find(b"\n"), head.find(b"\r")) if i >= 0]
    if not ends:
        if len(head) > MAX_LINE_BYTES:
            return [], [Problem(file=label, line=1, message=f"the header line is longer than {MAX_LINE_BYTES} bytes "
                                                            "(is this a CSV file?)")]
        end = len(head)
    else:
        end = min(ends)
    try:
        text = head[:end].decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return [], [Problem(file=label, line=1, message=f"header is not UTF-8 ({e.reason} at byte {e.start})")]
    if "\x00" in text:
        return [], [Problem(file=label, line=1, message="the header holds a NUL byte (is this a CSV file?)")]
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, MAX_LINE_BYTES + 1))
    try:
        fields = next(csv.reader([text]), [])
    except csv.Error as e:
        return [], [Problem(file=label, line=1, message=f"the header is not a CSV line: {e}")]
    finally:
        csv.field_size_limit(limit)
    bad = [f for f in fields if len(f) > 200]
    if bad:
        return [], [Problem(file=label, line=1, message=f"a header field is {len(bad[0])} characters long: "
                                                        "expected column names (is this a CSV file?)")]
    return [c.strip() for c in fields], []


def _jsonl_keys(con: duckdb.DuckDBPyConnection, label: str, path: Path,
                shape: str) -> tuple[list[str], list[Problem]]:
    """(the keys of the JSON file at `path` (of its `shape`), sorted, its problems): one pass."""
    if path.stat().st_size == 0:
        return [], [Problem(file=label, message="file is empty: expected JSON objects (one per line, or an array of "
                                                "them)")]
    reader = json_reader(path, shape, MAX_LINE_BYTES)
    # One pass: the keys, and a mark for a record that is not an object (an element 5 of an array) or
    # longer than a row may be (an object of an array: JSON Lines were held to it line by line)
    not_row = {_NOT_AN_OBJECT: "json_type(json) <> 'OBJECT'"}
    if shape != "lines":
        not_row[_TOO_LONG] = f"strlen(CAST(json AS VARCHAR)) > {MAX_LINE_BYTES}"
    marks = " ".join(f"WHEN {cond} THEN [{lit(mark)}]" for mark, cond in not_row.items())
    try:
        rows = con.execute(f"SELECT DISTINCT unnest(CASE {marks} ELSE json_keys(json) END) FROM {reader}").fetchall()
    except duckdb.Error as e:
        return [], [unreadable_json(path, label, shape, MAX_LINE_BYTES, e)]
    keys = {r[0] for r in rows}
    if keys & set(not_row):
        n, object_ = con.execute(f"SELECT n, json_type(json) = 'OBJECT' FROM (SELECT row_number() OVER () AS n, json "
                                 f"FROM {reader}) WHERE {' OR '.join(not_row.values())} ORDER BY n LIMIT 1").fetchone()
        said = (f"a JSON object longer than {MAX_LINE_BYTES} bytes" if object_ else
                "not a JSON object: one row is one object {...}")
        return [], [Problem(file=label, line=json_record_line(path, label, shape, n), message=said)]
    if not keys and not con.execute(f"SELECT count(*) FROM {reader}").fetchone()[0]:
        return [], [Problem(file=label, message="no rows: the file holds no JSON object")]
    return sorted(keys), []


_NOT_AN_OBJECT, _TOO_LONG = "\x00not an object", "\x00too long"


def unreadable_json(path: Path, label: str, shape: str, limit: int, e: BaseException) -> Problem:
    """The problem of a JSON file DuckDB refused, in the ledger's words: the first place that is not
    JSON of its shape (file, line, column; ``shapes.json_problem``), DuckDB's message only when none
    is found."""
    found = json_problem(path, label, shape, limit)
    return found or Problem(file=label, message=f"cannot read it as JSON: {first_line(e)}")


def unreadable_csv(path: Path, label: str, e: BaseException) -> Problem:
    """The problem of a CSV file DuckDB refused (an adapter's source, a bill: read without the plain
    ingest's rejects), in the ledger's words: its first record that is not CSV with the header's
    fields (a quote never closed, more or fewer fields, bytes that are not UTF-8), at its physical
    line; DuckDB's message only when none is found."""
    import csv

    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, MAX_LINE_BYTES + 1))
    line = 1
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, strict=True)
            width = len(next(reader, []))
            line = reader.line_num + 1
            for record in reader:
                if record and len(record) != width:
                    what = "more" if len(record) > width else "fewer"
                    return Problem(file=label, line=line, message=f"{what} fields than the header has")
                line = reader.line_num + 1
    except csv.Error as err:
        quote = "unexpected end of data" in str(err) or "EOF" in str(err)
        return Problem(file=label, line=line, message="a quote that is never closed" if quote else f"not CSV ({err})")
    except UnicodeDecodeError:
        return Problem(file=label, line=line, message="bytes that are not UTF-8")
    finally:
        csv.field_size_limit(limit)
    return Problem(file=label, message=f"cannot read it as CSV: {first_line(e)}")


def match_columns(label: str, line: int | None, found: list[str], expected: list[str]
                  ) -> tuple[dict[str, str], list[Problem]]:
    """Column names as a file spells them -> the expected names they stand for: the same name, or the
    same but for case when exactly one expected name is (``Tenant``, ``BILLEDCOST``). Names of the file
    that differ only in case and stand for one column are ambiguous: a problem on each one in another
    case, naming the other (``Tenant: the file also has the column 'tenant'``); so is a name that
    matches two expected names but for case. Names matching nothing are left out (unknown)."""
    want: dict[str, list[str]] = {}
    for e in expected:
        want.setdefault(e.casefold(), []).append(e)
    groups: dict[str, list[str]] = {}
    for f in dict.fromkeys(found):
        groups.setdefault(f.casefold(), []).append(f)
    out, problems = {}, []
    for fold, names in groups.items():
        targets = want.get(fold)
        if not targets:
            continue
        if len(names) > 1:
            kept = next((n for n in names if n in targets), names[0])
            problems += [Problem(file=label, line=line, entry=other,
                                 message=f"the file also has the column {kept!r}: names that differ "
                                         "only in case are ambiguous (keep one)")
                         for other in names if other != kept]
            continue
        name = names[0]
        if name in targets:
            out[name] = name
        elif len(targets) == 1:
            out[name] = targets[0]
        else:
            problems.append(Problem(file=label, line=line, entry=name,
                                    message=f"matches {' and '.join(targets)} but for case: write it as "
                                            "one of them"))
    return out, problems


# Parquet timestamps that are not UTC-adjusted (those read as TIMESTAMP WITH TIME ZONE or TIMESTAMPTZ_NS)
_NAIVE_TIMESTAMPS = {"TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS"}


def _parquet_columns(con: duckdb.DuckDBPyConnection, label: str, path: Path,
                     hidden: tuple[str, ...] = ()) -> tuple[dict[str, str], list[Problem]]:
    """(a Parquet file's columns -> the DuckDB type each reads as (kept for the pass: see
    `parquet_direct`), its problems); a naive timestamp column is a problem. The columns `hidden`
    (a converter's own: ``Origin.hidden``) are left out, unjudged."""
    try:
        rows = con.execute(f"DESCRIBE SELECT * FROM read_parquet({lit(str(path))})").fetchall()
    except duckdb.Error as e:
        return {}, [Problem(file=label, message=f"not a Parquet file: {first_line(e)}")]
    names = parquet_names(con, path, [r[0] for r in rows])
    types = {n: r[1] for n, r in zip(names, rows) if n not in hidden}
    out = []
    for c, t in types.items():
        if t in _NAIVE_TIMESTAMPS:
            out.append(Problem(file=label, entry=c,
                               message="timestamp column has no UTC offset (naive timestamps)"))
        elif not _PARQUET_SCALAR.fullmatch(t):
            out.append(Problem(file=label, entry=c,
                               message=f"is a {t.split('(')[0]} column: expected text, a number or "
                                       "an instant, one value per row"))
    return types, out


def parquet_names(con: duckdb.DuckDBPyConnection, path: Path, described: list[str]) -> list[str]:
    """A Parquet file's top-level column names as the file writes them (`described`: as DuckDB names
    them, which renames a second ``tenant`` beside ``Tenant`` to ``tenant_1``): read from its schema,
    whose elements come depth first after the root (each with its number of children)."""
    try:
        schema = con.execute(f"SELECT name, num_children FROM parquet_schema({lit(str(path))})").fetchall()
    except duckdb.Error:
        return described
    names, i = [], 1

    def skip(k: int) -> int:  # past the element at k and everything under it
        children = schema[k][1] or 0
        k += 1
        for _ in range(children):
            k = skip(k)
        return k

    while i < len(schema):
        names.append(schema[i][0])
        i = skip(i)
    return names if len(names) == len(described) else described


#: Parquet column types whose values have one text form: text, numbers, instants (dates and
#: naive timestamps are judged as text and refused there or above).
_PARQUET_SCALAR = re.compile(r"VARCHAR|(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?)|FLOAT|DOUBLE|DECIMAL\(\d+,\d+\)|"
                             r"TIMESTAMP.*|DATE")


def _read_select(kind: str, src: OpenFile, rejects: str | None, with_line: bool,
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
        rej = (f", store_rejects=true, rejects_table={lit(rejects)}, rejects_scan={lit(rejects + '_scan')}"
               if rejects else "")
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
        base = json_reader(src.read_path, src.shape, MAX_LINE_BYTES)
        texts = []
        for c in spec.columns:
            p = lit("$." + json.dumps(src.spelled(c.name)))
            texts += [f"json_extract_string(json, {p}) AS {q(c.name + '__text')}",
                      f"json_type(json, {p}) AS {q(c.name + '__jtype')}"]
        texts += [f"{jsonl_row_problem('json')} AS _jsonl_problem"]
        line = "row_number() OVER () AS _line, " if with_line else ""
    else:
        base = f"read_parquet({path})"
        texts = [f"{q(src.spelled(c.name))} AS {q(c.name + '__direct')}" if c.name in direct else
                 f"CAST({q(src.spelled(c.name))} AS VARCHAR) AS {q(c.name + '__text')}" if c.name in present
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
    """SQL: NULL for a good JSON object (a row, in any JSON shape) in the text column `col`, else what
    is wrong with it: a key given twice (JSON readers disagree on which value wins), a trailing comma
    (not JSON), or a number that a double cannot hold exactly as written (an exponent, or more than
    15 significant digits: ``1e-400`` would read as 0), which must be written as a string. (A record
    that is not an object, or longer than a row may be, was refused with the file's keys.)"""
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


def open_files(con, kind: str, paths: Sequence[Path], fmt: str | None, link_dir: Path,
               origins: Sequence[Origin] = ()) -> tuple[OpenFile, ...]:
    """Stage 1, open: each file's format, columns and what DuckDB reads, with the file the batch records
    instead (`origins`: one per path, when given); unknown and missing columns are problems (raised
    together). `link_dir` is the ingest's scratch folder: links to files whose names hold glob
    characters and the unpacked copies of gzip files (``shapes``) go there."""
    spec = facts.KINDS[kind]
    files, problems = [], []
    for i, p in enumerate(paths):
        label = str(p)
        if not p.is_file():
            problems.append(Problem(file=label, message="no such file"))
            continue
        try:
            f = _format_of(p, fmt)
            data = readable(p, label, f, link_dir)
        except IngestError as e:
            problems.extend(e.problems)
            continue
        long = long_line(data.path) if f == "csv" or data.shape == "lines" else None
        if long:
            problems.append(Problem(file=label, line=long[0],
                                    message=f"line longer than {MAX_LINE_BYTES} bytes ({long[1]} bytes)"))
            continue
        file = OpenFile(path=p, label=label, fmt=f, read_path=data.path, compressed=data.gzip, shape=data.shape,
                        origin=origins[i] if i < len(origins) else None)
        types: dict[str, str] = {}
        if f == "csv":
            columns, probs = csv_header(data.path, label)
        elif f == "jsonl":
            columns, probs = _jsonl_keys(con, label, data.path, data.shape)
        else:
            types, probs = _parquet_columns(con, label, data.path, file.origin.hidden if file.origin else ())
            columns = list(types)
        if not probs:
            file, probs = _columns_of_kind(spec, file, columns, types)
        problems.extend(probs)
        files.append(file)
    if problems:
        raise IngestError(problems)
    return tuple(files)


def _columns_of_kind(spec, file: OpenFile, columns: list[str], types: dict[str, str]
                     ) -> tuple[OpenFile, list[Problem]]:
    """Match the file's `columns` (and Parquet `types`) to the kind's (exactly, or but for case:
    ``match_columns``), then name every unknown and missing column: the file with the kind's names
    as its columns (the file's own spelling kept in its ``names``), and the problems."""
    line = 1 if file.fmt == "csv" else None
    matched, probs = match_columns(file.label, line, columns, list(spec.names))
    ambiguous = {c for c in columns if c not in matched and c.casefold() in {n.casefold() for n in spec.names}}
    expected = ', '.join(spec.names)
    probs += [Problem(file=file.label, line=line, entry=c, message=f"unknown column (expected: {expected})")
              for c in dict.fromkeys(columns) if c not in matched and c not in ambiguous]
    if len(set(columns)) != len(columns):
        probs.append(Problem(file=file.label, line=line, message="a column name appears twice in the header"))
    file = replace(file, names={ours: theirs for theirs, ours in matched.items() if ours != theirs},
                   columns=tuple(matched.get(c, c) for c in columns),
                   types={matched.get(c, c): t for c, t in types.items()})
    probs += [Problem(file=file.label, line=line, entry=c.name, message="required column is missing")
              for c in spec.columns if c.required and c.name not in file.columns and not _named_in(probs, c.name)]
    return file, probs


def _named_in(problems: list[Problem], column: str) -> bool:
    """True when a problem already names a spelling of `column` (an ambiguous one): it is not also missing."""
    return any(p.entry and p.entry.casefold() == column.casefold() for p in problems)
