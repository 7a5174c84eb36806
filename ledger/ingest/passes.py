"""Stage 2, read: the one pass over each file of a batch (:func:`read_file`).

DuckDB parses the file straight into its read types, every row check is evaluated, the values are
converted to the facts' types and written, with ``booked_at`` and a ``_bad`` flag, to the file's
staging Parquet (``ledger.ingest.staging``); one more read of that file gives its rows, bad rows,
distinct names and months. A CSV file first goes the *fast pass* (its names read as ENUMs:
``ledger.ingest.enums``); a value it did not expect sends it to the *careful pass*, every name read as
text. A file that does not parse (DuckDB's rejected records, or JSON that is not JSON) has its
problems in the record, for stage 3 to report: nothing else is judged until it parses.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from .. import facts
from ..errors import Problem
from . import enums
from .checks import cast_checks, checks, pass_bad
from .opening import _read_select, parquet_direct, unreadable_json
from .records import (MAX_LINE_BYTES, MAX_PROBLEMS, LedgerState, OpenFile, ReadFile, Workspace, _reject_problem,
                      first_line)
from .rows import _summary, lines_at_bytes, row_checks
from .staging import _copy, _pass_sql, _typed_cols, _watch


def read_file(ws: Workspace, i: int, file: OpenFile, state: LedgerState) -> ReadFile:
    """Stage 2, read: the pass over `file`, the `i`-th of the batch, into ``<staging>/<i>.parquet``, and
    what one read of that staged file says of it (its rows, bad rows, distinct names and months)."""
    ws.step(f"reading {file.label}")
    out = ws.staging / f"{i}.parquet"
    if not (file.fmt == "csv" and _fast_pass(ws, i, file, state, out)):
        unreadable = _careful_pass(ws, i, file, state.booked, out)
        if unreadable is not None:
            problems, rejected = unreadable
            return ReadFile(file=file, staged=None, unreadable=tuple(problems), rejected=rejected)
    rows, bad_rows, values, months = _summary(ws.con, ws.kind, out)
    return ReadFile(file=file, staged=out, rows=rows, bad_rows=bad_rows,
                    values={c: tuple(v) for c, v in values.items()}, months=frozenset(months))


def _fast_pass(ws: Workspace, i: int, file: OpenFile, state: LedgerState, out: Path) -> bool:
    """The fast pass over a CSV file (see ``ledger.ingest.enums``): its names read as ENUMs of the
    names the ledger knows and a sample of the file. True when it wrote `out`; False when the file
    has no name column to read so, or a value surprised it (the careful pass then decides)."""
    kind = ws.kind
    domains = enums.domains(kind, file.read_path, file.columns, state.expected)
    if not domains:
        return False
    try:
        types = enums.create_enums(ws.con, f"_e{i}", domains)
        body = _read_select(kind, file, None, with_line=False, enum_types=types)
        as_enum = frozenset(domains)
        all_names = as_enum >= set(facts.KINDS[kind].categories) & set(file.columns)
        bad = pass_bad(cast_checks(kind, "csv") + checks(kind, as_enum))
        with _watch(ws.con, ws.progress):
            _copy(ws.con, _pass_sql(body, _typed_cols(kind, as_enum), bad, state.booked), out,
                  text_dictionaries=not all_names)
        return True
    except duckdb.Error:
        out.unlink(missing_ok=True)
        ws.step(f"reading {file.label} again, value by value (a value the fast pass did not expect)")
        return False


def _careful_pass(ws: Workspace, i: int, file: OpenFile, booked: str,
                  out: Path) -> tuple[list[Problem], int] | None:
    """The careful pass: names read as text, Parquet columns typed in the file taken as they are
    (``opening.parquet_direct``: no text round trip). None when it wrote `out`; else the problems of a
    file that does not parse and how many records DuckDB rejected (their first 50 named)."""
    kind, con = ws.kind, ws.con
    if file.fmt == "parquet":
        direct = parquet_direct(kind, file.types)
        instants = frozenset(c.name for c in facts.KINDS[kind].columns
                             if c.name in direct and c.type == "TIMESTAMPTZ")
        body = _read_select(kind, file, None, with_line=False, direct=direct)
        typed_cols, bad = _typed_cols(kind, instants), pass_bad(cast_checks(kind, "parquet") + checks(kind, instants))
    else:
        body = _read_select(kind, file, f"rej{i}", with_line=False)
        typed_cols, bad = _typed_cols(kind), pass_bad(row_checks(kind, file.fmt))
    try:
        with _watch(con, ws.progress):
            _copy(con, _pass_sql(body, typed_cols, bad, booked), out)
        rejects = con.execute(f"SELECT line_byte_position, column_name, error_type, error_message FROM rej{i} "
                              "ORDER BY line_byte_position").fetchall() if file.fmt == "csv" else []
    except duckdb.Error as e:
        return [unreadable_json(file.read_path, file.label, file.shape, MAX_LINE_BYTES, e)
                if file.fmt == "jsonl" else Problem(file=file.label, message=f"cannot read: {first_line(e)}")], 0
    if not rejects:
        return None
    shown = rejects[:MAX_PROBLEMS]  # the file does not parse: say where (DuckDB's byte positions count from 1)
    at = lines_at_bytes(file.read_path, [max(int(r[0] or 1) - 1, 0) for r in shown])
    return [_reject_problem(file.label, at[max(int(r[0] or 1) - 1, 0)], *r[1:]) for r in shown], len(rejects)
