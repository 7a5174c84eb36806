"""Stage 3, staging: the one pass per file writing its typed rows, booked_at and bad-row flag to Parquet."""
from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import duckdb

from .. import facts, store
from ..sqltext import literal as lit, quote_ident as q
from .checks import typed
from .records import ADJUSTABLE, PARQUET_OPTIONS


@contextmanager
def _watch(con: duckdb.DuckDBPyConnection, report: Callable[[float], None] | None):
    """While the block runs a query on `con`, tell `report` its progress (DuckDB's percent done)."""
    if report is None:
        yield
        return
    import threading

    done = threading.Event()

    def poll() -> None:
        while not done.wait(0.1):
            pct = con.query_progress()
            if pct >= 0:
                report(pct)

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()
        report(100.0)


def _typed_cols(kind: str, valid: frozenset[str] = frozenset()) -> str:
    """The select list converting every read-typed column of `kind` to its fact type (`valid`: the
    columns read in a type that admits only valid values, see checks.checks)."""
    return ", ".join(f"{typed(kind, c, valid)} AS {q(c)}" for c in facts.KINDS[kind].names)


def _pass_sql(body: str, typed_cols: str, bad: str, booked: str) -> str:
    """The one pass over a file: its typed columns, ``booked_at`` and the ``_bad`` flag."""
    return f"SELECT *, {booked} AS booked_at FROM (SELECT {typed_cols}, {bad} AS _bad FROM ({body}))"


def _copy(con, select_sql: str, out: Path, text_dictionaries: bool = True) -> None:
    """Write the rows of `select_sql` to the Parquet file `out`, in whatever order DuckDB's threads
    finish them (order within a fact file carries no meaning; line numbers come from the source).

    Without `text_dictionaries` (when every name column is an ENUM, which keeps its dictionary)
    no other column gets a dictionary: ids and instants are nearly all distinct, token counts
    compress about as well under zstd, and building the dictionaries costs a third of the write."""
    opts = PARQUET_OPTIONS + ("" if text_dictionaries else ", DICTIONARY_SIZE_LIMIT 1")
    con.execute("SET preserve_insertion_order = false")
    try:
        con.execute(f"COPY ({select_sql}) TO {lit(str(out))} ({opts})").fetchall()
    finally:
        con.execute("SET preserve_insertion_order = true")


def _pq(path: Path) -> str:
    return f"read_parquet({lit(str(path))})"


def _booked_sql(kind: str, closed: list[str], booked_period: str | None) -> str:
    """SQL for ``booked_at``: the row's own instant, or with --as-adjustment for a row of a closed
    month, the start of the open period it is booked into."""
    spec = facts.KINDS[kind]
    if kind not in ADJUSTABLE:
        return f"{q(spec.dated_by[0])}"
    c = q(spec.dated_by[0])
    if not closed or not booked_period:
        return c
    start, _ = store.month_bounds(booked_period)
    months = ", ".join(lit(m) for m in closed)
    return f"(CASE WHEN strftime({c}, '%Y-%m') IN ({months}) THEN TIMESTAMPTZ {lit(start.isoformat())} ELSE {c} END)"
