"""Stage 2, row checks: the bad-row flag of a pass, checks on distinct values, and the problems of bad rows."""
from __future__ import annotations

from pathlib import Path

from babel.numbers import list_currencies

from .. import facts, store, units
from .checks import Check, lit, q, said
from .opening import _read_select
from .records import MAX_PROBLEMS, Problem, _Source
from .staging import _pq


def _any_bad(row_checks: list[Check]) -> str:
    """SQL true for a row that fails any of `row_checks`."""
    return " OR ".join(f"({c.bad})" for c in row_checks)


def _summary(con, kind: str, staged: Path) -> tuple[int, int, dict[str, list[str]], set[str]]:
    """One read of a staged file: (rows, rows failing a check, distinct values of the columns that
    are checked as a set, the months the rows touch from first to last instant)."""
    spec = facts.KINDS[kind]
    first, last = spec.dated_by[0], spec.dated_by[-1]
    hi = f"max({q(last)})" + (" - INTERVAL 1 MICROSECOND" if len(spec.dated_by) == 2 else "")
    dist = _distinct_columns(kind)
    lists = "".join(f", list(DISTINCT {q(c)}::VARCHAR) FILTER (WHERE {q(c)} IS NOT NULL)" for c in dist)
    rows, n_bad, lo, up, *values = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE _bad), min({q(first)}), {hi}{lists} FROM {_pq(staged)}").fetchone()
    months = set(store.months_between(lo, up)) if lo is not None else set()
    return rows, n_bad, {c: sorted(v or []) for c, v in zip(dist, values)}, months


def _distinct_columns(kind: str) -> list[str]:
    return {"requests": ["tenant", "product"], "meters": ["tenant", "product", "unit"],
            "outcomes": ["tenant", "product"], "fleet": [], "charges": ["currency", "allocate"]}[kind]


def _value_checks(kind: str, values: dict) -> list[Check]:
    """Checks on distinct values: names with white space around them, pint units, ISO 4217 currencies."""
    out = []
    for col in ("tenant", "product"):
        spaced = [v for v in values.get(col) or [] if v != v.strip()]
        if spaced:
            out.append(Check(col, f"{q(col)} IN ({', '.join(lit(v) for v in spaced)})",
                             said(col, "has white space around it (or is only white space)")))
    if kind == "meters":
        bad = []
        for u in values.get("unit") or []:
            try:
                units.parse(u)
            except units.UnitError:
                bad.append(u)
        if bad:
            out.append(Check("unit", f"{q('unit')} IN ({', '.join(lit(u) for u in bad)})",
                             f"'''' || {q('unit')} || ''' is not a unit pint knows (e.g. call, GB, GiB, span, token)'"))
    if kind == "charges":
        iso = set(list_currencies())
        bad = [c for c in values.get("currency") or [] if c not in iso]
        if bad:
            out.append(Check("currency", f"{q('currency')} IN ({', '.join(lit(c) for c in bad)})",
                             f"'''' || {q('currency')} || ''' is not an ISO 4217 currency code'"))
    return out


def _row_problems(con, kind: str, src: _Source, row_checks: list[Check]) -> tuple[list[Problem], int]:
    """The slow path, only for a file with bad rows: one problem per failed check, first 50 by line."""
    body = _read_select(kind, src, None, with_line=True)
    con.execute(f"CREATE OR REPLACE TEMP TABLE _bad AS SELECT * FROM ({body}) WHERE "
                + _any_bad(row_checks))
    parts = [f"SELECT _line, {i} AS k, {lit(c.column)} AS col, CAST({c.message} AS VARCHAR) AS msg FROM _bad WHERE {c.bad}"
             for i, c in enumerate(row_checks)]
    union = " UNION ALL ".join(parts)
    total = con.execute(f"SELECT count(*) FROM ({union})").fetchone()[0]
    rows = con.execute(f"SELECT _line, col, msg FROM ({union}) ORDER BY _line, k LIMIT {MAX_PROBLEMS}").fetchall()
    return [Problem(src.label, int(line), col, msg) for line, col, msg in rows], total
