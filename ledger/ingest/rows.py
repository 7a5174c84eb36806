"""Stage 3, check: the bad-row flag of a pass, checks on distinct values, the problems of bad rows
(:func:`check_file`), and the batch's names and closed months (:func:`check_batch`)."""
from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from difflib import get_close_matches
from pathlib import Path

import duckdb
from babel.numbers import list_currencies

from .. import facts, names, store, units
from ..errors import Problem
from ..sqltext import literal as lit, quote_ident as q
from .checks import Check, cast_checks, checks, jsonl_checks, said, show
from .opening import _read_select
from .shapes import line_ends
from .shapes import MAX_OBJECT_BYTES, json_scan
from .shapes import lines as _lines
from .records import (ADJUSTABLE, MAX_LINE_BYTES, MAX_PROBLEMS, Batch, Checked, IngestError, LedgerState, OpenFile,
                      ReadFile)
from .staging import _pq, _typed_cols


def row_checks(kind: str, fmt: str) -> list[Check]:
    """Every check of a row of `kind` read as text from a file of format `fmt` (the careful pass, and
    the problems of its bad rows)."""
    return cast_checks(kind, fmt) + checks(kind) + (jsonl_checks(kind) if fmt == "jsonl" else [])


def _any_bad(row_checks: list[Check]) -> str:
    """SQL true for a row that fails any of `row_checks`, else false (never NULL: a check on a
    missing value is NULL, and that row passes it)."""
    return "coalesce(" + " OR ".join(f"({c.bad})" for c in row_checks) + ", false)"


def _summary(con, kind: str, staged: Path) -> tuple[int, int, dict[str, list[str]], set[str]]:
    """One read of a staged file: (rows, rows failing a check, distinct values of the columns that
    are checked as a set, the months the rows touch from first to last instant)."""
    spec = facts.KINDS[kind]
    first, last = spec.dated_by[0], spec.dated_by[-1]
    hi = f"max({q(last)}) FILTER (WHERE NOT _bad)" + (" - INTERVAL 1 MICROSECOND" if len(spec.dated_by) == 2 else "")
    rows, n_bad, lo, up = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE _bad), min({q(first)}) FILTER (WHERE NOT _bad), {hi} "
        f"FROM {_pq(staged)}").fetchone()
    months = set(store.months_between(lo, up)) if lo is not None else set()
    return rows, n_bad, _distinct_values(con, kind, staged), months


def _distinct_values(con, kind: str, staged: Path) -> dict[str, list[str]]:
    """The distinct values (as text, NULL apart) of each column of :func:`_distinct_columns` in a
    staged file, sorted: one GROUP BY GROUPING SETS, a set per column, whose row for a value holds
    it in that column and NULL in the others. A ``list(DISTINCT ...)`` per column beside the counts
    said the same in one statement, but DuckDB's DISTINCT aggregates cost most of the summary: 0.06
    CPU-seconds of a one-row file (now about 0.01 with the counts), 0.21 of 2M requests (now 0.16)."""
    dist = _distinct_columns(kind)
    if not dist:
        return {}
    values: dict[str, set[str]] = {c: set() for c in dist}
    cols = ", ".join(q(c) for c in dist)
    text = ", ".join(f"{q(c)}::VARCHAR AS {q(c)}" for c in dist)
    sets = ", ".join(f"({q(c)})" for c in dist)
    for row in con.execute(f"SELECT {cols} FROM (SELECT {text} FROM {_pq(staged)}) "
                           f"GROUP BY GROUPING SETS ({sets})").fetchall():
        for c, v in zip(dist, row):
            if v is not None:
                values[c].add(v)
    return {c: sorted(v) for c, v in values.items()}


def _distinct_columns(kind: str) -> list[str]:
    """The columns judged on their distinct values: the names (categories) of the kind."""
    return list(facts.KINDS[kind].categories)


MAX_LISTED = 1000  # bad distinct values put in one check (the refusal counts rows; it lists 50)


def _in(col: str, values: list[str]) -> str:
    return f"{q(col)} IN ({', '.join(lit(v) for v in values[:MAX_LISTED])})"


def _value_checks(kind: str, values: dict) -> list[Check]:
    """Checks on distinct values: the name rule (ledger.names: length, control characters), tenant
    and product names with white space around them, pint units, ISO 4217 currencies."""
    out = []
    for col in _distinct_columns(kind):
        broken = [v for v in values.get(col) or [] if v.strip() and names.unsafe(v)]
        if broken:
            out.append(Check(col, _in(col, broken), f"{show(col)} || ' ' || {names.sql_name_problem(q(col))}"))
    for col in ("tenant", "product"):
        spaced = [v for v in values.get(col) or [] if v != v.strip()]
        if spaced:
            out.append(Check(col, _in(col, spaced), said(col, "has white space around it (or is only white space)")))
    if kind == "meters":
        bad = []
        for u in values.get("unit") or []:
            try:
                units.dimensions(u)  # a unit of ledger.units' table is known without pint
            except units.UnitError:
                bad.append(u)
        if bad:
            out.append(Check("unit", f"{q('unit')} IN ({', '.join(lit(u) for u in bad)})",
                             f"'''' || {q('unit')} || ''' is not a unit pint knows (e.g. call, GB, GiB, span, token)'"))
    currency = {"charges": "currency", "bill": "billing_currency"}.get(kind)
    if currency:
        iso = set(list_currencies())
        bad = [c for c in values.get(currency) or [] if c not in iso]
        if bad:
            out.append(Check(currency, f"{q(currency)} IN ({', '.join(lit(c) for c in bad)})",
                             f"'''' || {q(currency)} || ''' is not an ISO 4217 currency code'"))
    return out


def nearest_known(names: Sequence[str], known: Iterable[str], shown: int = 10) -> list[tuple[str, list[str]]]:
    """For each of the first `shown` unknown `names`, the known names nearest to it (difflib's
    ratio of at least 0.75, at most three, nearest first); only names that have some. A typo of a
    known name is found here before anyone registers it as new."""
    known = sorted(known)
    out = []
    for n in names[:shown]:
        near = get_close_matches(n, known, n=3, cutoff=0.75)
        if near:
            out.append((n, near))
    return out


def unknown_name_problems(con, kind: str, files: Sequence[ReadFile], unknown: Mapping[str, list[str]],
                          known: Mapping[str, Iterable[str]] | None = None) -> list[Problem]:
    """One refusal per dimension with names the ledger does not know (`unknown`: tenant or product ->
    sorted names), at the file, line and column of the first row that holds one: the column is the
    dimension's own, or ``allocate`` for a charge's ``tenant:NAME``. It names the first ten and
    counts the rest, so a million unknown tenants are still one line. When a name is near a `known`
    one (tenant or product -> names; :func:`nearest_known`), the line names the nearest known names
    first, and registering only for a name that is truly new. The files are read again, with line
    numbers, only for a refusal."""
    out = []
    for d, names in unknown.items():
        column = "allocate" if kind == "charges" and d == "tenant" else d
        value = (f"CASE WHEN starts_with({q('allocate')}, 'tenant:') THEN {q('allocate')}[8:] END"
                 if column == "allocate" else q(column))
        con.execute("CREATE OR REPLACE TEMP TABLE _unknown AS SELECT unnest(?::VARCHAR[]) AS v", [names])
        where = (", ".join(x.file.label for x in files), None)
        for x in files:
            found = con.execute(f"SELECT min(_line) FROM ({_read_select(kind, x.file, None, with_line=True)}) "
                                f"WHERE {value} IN (SELECT v FROM _unknown)").fetchone()[0]
            if found is not None:
                where = (x.file.label, physical_lines(x.file, x.rows, [int(found)]).get(int(found), int(found)))
                break
        some = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        if column == "allocate":
            what = (f"tenant:{names[0]} names an unknown tenant" if len(names) == 1 else
                    f"{len(names)} unknown tenants in tenant:NAME rules: {some}")
        else:
            what = f"unknown {d}: {some}" if len(names) == 1 else f"{len(names)} unknown {d}s: {some}"
        name = names[0] if len(names) == 1 and re.fullmatch(r"\w[\w.:@/+-]*", names[0]) else "NAME"
        near = nearest_known(names, (known or {}).get(d, ()))
        hint = f"`ledger dims add {d} {'NAME' if near else name}` or `ledger dims import`"
        if near:
            said = "; ".join(f"{n}: did you mean {' or '.join(k)}?" for n, k in near)
            message = (f"{what} ({said} Correct a misspelt name in the file; register only a {d} that is truly "
                       f"new, with {hint}, or ingest with --register-new)")
        else:
            message = f"{what} (register with {hint}, or ingest with --register-new)"
        out.append(Problem(file=where[0], line=where[1], entry=column, message=message))
    return out


def closed_period_problem(con, kind: str, files: Sequence[ReadFile], hit: list[str]) -> Problem:
    """The refusal of rows in closed months `hit`, at the file and line of the first row dated in
    one of them (found by reading the files again; none when only the batch's span covers the month),
    with the way out the kind has: --as-adjustment, or for fleet and charges a charge in an open month."""
    spec = facts.KINDS[kind]
    first, last = spec.dated_by[0], spec.dated_by[-1]
    spans = []
    for name in hit:
        lo, hi = (lit(t.isoformat()) + "::TIMESTAMPTZ" for t in store.month_bounds(name))
        spans.append(f"({q(first)} >= {lo} AND {q(first)} < {hi})" if first == last else
                     f"({q(first)} < {hi} AND {q(last)} > {lo})")
    where: tuple[str, int | None] = (", ".join(x.file.label for x in files), None)
    for x in files:
        typed = f"SELECT _line, {_typed_cols(kind)} FROM ({_read_select(kind, x.file, None, with_line=True)})"
        found = con.execute(f"SELECT min(_line) FROM ({typed}) WHERE {' OR '.join(spans)}").fetchone()[0]
        if found is not None:
            where = (x.file.label, physical_lines(x.file, x.rows, [int(found)]).get(int(found), int(found)))
            break
    way = ("ingest with --as-adjustment to book it into the current open period" if kind in ADJUSTABLE else
           f"a closed month takes no new {kind} rows; book a late cost as a charge in an open period")
    return Problem(file=where[0], line=where[1], entry=first if where[1] is not None else None,
                   message=f"touches closed period{'s' if len(hit) > 1 else ''} {', '.join(hit)}: refused ({way})")


def _row_problems(con, kind: str, read: ReadFile, row_checks: list[Check]) -> tuple[list[Problem], int]:
    """The slow path, only for a file with bad rows: one problem per failed check, first 50 by line."""
    body = _read_select(kind, read.file, None, with_line=True)
    con.execute(f"CREATE OR REPLACE TEMP TABLE _bad AS SELECT * FROM ({body}) WHERE "
                + _any_bad(row_checks))
    parts = [f"SELECT _line, {i} AS k, {lit(c.column) if c.column else 'NULL'} AS col, "
             f"CAST({c.message} AS VARCHAR) AS msg FROM _bad WHERE {c.bad}" for i, c in enumerate(row_checks)]
    union = " UNION ALL ".join(parts)
    total = con.execute(f"SELECT count(*) FROM ({union})").fetchone()[0]
    rows = con.execute(f"SELECT _line, col, msg FROM ({union}) ORDER BY _line, k LIMIT {MAX_PROBLEMS}").fetchall()
    lines = physical_lines(read.file, read.rows, [int(r[0]) for r in rows])
    return [Problem(file=read.file.label, line=lines.get(int(line), int(line)), entry=col,
                    message=msg) for line, col, msg in rows], total


def check_file(con, kind: str, read: ReadFile) -> tuple[list[Problem], int]:
    """Stage 3, check, of one file after its pass: (its problems, how many there are in all, for the
    count of the refusal). A file that does not parse has those problems only (the other checks wait
    until it parses); a file with no rows is one problem; else the rows failing a check of the pass or
    a check of the distinct values of its names (:func:`_value_checks`) are named, the first 50 by line."""
    if read.unreadable:
        return list(read.unreadable), read.rejected
    if read.rows == 0:
        return [Problem(file=read.file.label,
                        message="no data rows (header only)" if read.file.fmt == "csv" else "no rows")], 0
    value_checks = _value_checks(kind, read.values)
    if read.bad_rows or value_checks:
        return _row_problems(con, kind, read, row_checks(kind, read.file.fmt) + value_checks)
    return [], 0


def check_batch(con, batch: Batch, state: LedgerState, files: Sequence[ReadFile]) -> Checked:
    """Stage 3, check, of the batch as a whole, once every file is clean: the tenant and product names
    it holds that the ledger does not know (refused unless `batch.register_new`), and the closed months
    its rows touch (refused unless `batch.as_adjustment`: booked into the open month). IngestError
    names the first row of each refusal."""
    problems, checked = batch_problems(con, batch, state, files)
    if problems:
        raise IngestError(problems)
    return checked


def batch_problems(con, batch: Batch, state: LedgerState, files: Sequence[ReadFile]) -> tuple[list[Problem], Checked]:
    """The problems of the batch as a whole (unknown names unless `batch.register_new`, closed months
    unless `batch.as_adjustment`) and what it is when it has none (:class:`Checked`). Also asked for a
    batch whose files have bad rows, so that one run names every problem (a bad timestamp no longer
    hides an unknown product until the next run): files that do not parse are left out, and a closed
    month whose first row cannot be placed (its file has values that do not convert) is named with
    its files and no line."""
    kind = batch.kind
    files = [x for x in files if not x.unreadable]
    seen = {d: set().union(*(set(x.values.get(d) or []) for x in files)) for d in ("tenant", "product")}
    if kind == "charges":
        seen["tenant"] |= {v[len("tenant:"):] for x in files for v in x.values.get("allocate") or []
                           if v.startswith("tenant:")}
    # a value the names rule refuses (white space around it, a control character...) is a problem of
    # its row already: it is no unknown name to register or to find a near one for
    seen = {d: {v for v in values if names.name_problem(v) is None} for d, values in seen.items()}
    unknown = {d: sorted(v - state.names[d]) for d, v in seen.items() if v - state.names[d]}
    hit = sorted(set().union(*(x.months for x in files)) & state.closed)
    problems = []
    if unknown and not batch.register_new:  # at the first row holding one (for charges: the column allocate)
        problems += unknown_name_problems(con, kind, files, unknown, state.names)
    if hit and not batch.as_adjustment:  # at the first row dated in a closed month
        try:
            problems.append(closed_period_problem(con, kind, files, hit))
        except duckdb.Error:  # a row of the files does not convert (it is a problem of its own): no line
            problems.append(Problem(file=", ".join(x.file.label for x in files),
                                    message=f"touches closed period{'s' if len(hit) > 1 else ''} {', '.join(hit)}: "
                                            "refused"))
    return problems, Checked(unknown=unknown, booked_period=state.open_period if hit else None)


def physical_lines(src: OpenFile, rows: int, numbers: list[int]) -> dict[int, int]:
    """The line of the file `src` (of `rows` data rows) where each record starts, for record numbers as
    the pass counts them (CSV: the header is 1, the first data row 2; JSON Lines: the first object 1;
    Parquet: rows, kept as they are). The pass counts records, and a blank line or a quoted field holding a line
    break makes records and lines differ: when the file has as many line ends as records the two
    agree; otherwise the file is read once more with Python's csv module (or line by line), which
    counts lines as DuckDB's reader ends them (LF, CRLF, a lone CR)."""
    if src.fmt == "parquet" or not numbers:
        return {n: n for n in numbers}
    if src.shape in ("array", "documents"):  # JSON over many lines: the line each object starts on
        return json_scan(src.read_path, src.label, src.shape, MAX_OBJECT_BYTES, set(numbers))
    with src.read_path.open("rb") as fh:
        ends, last = 0, b""
        while chunk := fh.read(1 << 22):
            ends += line_ends(last[-1:] + chunk) - line_ends(last[-1:])
            last = chunk
    lines = ends + (0 if last.endswith((b"\n", b"\r")) else 1)
    records = rows + (1 if src.fmt == "csv" else 0)
    if lines == records:
        return {n: n for n in numbers}
    want, out = set(numbers), {}
    if src.fmt == "csv":
        limit = csv.field_size_limit()
        csv.field_size_limit(max(limit, MAX_LINE_BYTES + 1))
        try:
            with src.read_path.open(encoding="utf-8-sig", errors="replace", newline="") as fh:
                reader, n, before = csv.reader(fh), 0, 0
                for rec in reader:
                    if rec:
                        n += 1
                        if n in want:
                            out[n] = before + 1
                            if len(out) == len(want):
                                break
                    before = reader.line_num
        finally:
            csv.field_size_limit(limit)
        return out
    with src.read_path.open("rb") as fh:
        n = 0
        for i, line in enumerate(_lines(fh), start=1):
            if line.strip():
                n += 1
                if n in want:
                    out[n] = i
                    if len(out) == len(want):
                        break
    return out


def lines_at_bytes(path: Path, positions: list[int]) -> dict[int, int]:
    """The line number of the record starting at each 0-based byte position of a file (DuckDB's
    position of a record may point at blank lines before it: they are stepped over)."""
    out, ends, done, last = {}, 0, 0, b""
    with path.open("rb") as fh:
        for p0 in sorted(set(positions)):
            fh.seek(p0)
            ahead = fh.read(1 << 16)
            p = p0 + len(ahead) - len(ahead.lstrip(b"\r\n"))
            fh.seek(done)
            while done < p:
                data = fh.read(min(1 << 22, p - done))
                if not data:
                    break
                ends += line_ends(last + data) - line_ends(last)  # a CRLF across reads counts once
                last = data[-1:]
                done += len(data)
            out[p0] = ends + 1
    return out
