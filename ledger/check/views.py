"""The facts a check reads: DuckDB views with each row's batch, the scope (period, batch) and the price spans."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb

from .. import duck, facts
from ..instants import iso
from ..pricebook import PriceIndex
from ..sqltext import literal, quote_ident

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def at_us(us: int | None) -> datetime | None:
    return None if us is None else _EPOCH + timedelta(microseconds=us)


def connect(committed: dict[str, list[str]], home: Path,
            con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
    """DuckDB views ``requests, meters, outcomes, fleet, charges`` over the committed batches, read as
    :func:`ledger.facts.connect` reads them (the facts of the ledger home `home`), with one more column:
    the `batch` each row came from (its file's name, ``<batch>-<n>.parquet``). The views are made in
    `con` when one is given (the ingest's own, for the check of the batch it wrote: one DuckDB
    database for both), else in a new connection."""
    con = duck.connect("check", home=home) if con is None else con
    for kind in facts.KINDS:
        files = facts.kind_files(kind, committed.get(kind, []), home)  # by batch, month, name: one listing
        if files:
            body = (f"SELECT * EXCLUDE (filename), regexp_replace(parse_filename(filename, true), '-[^-]*$', '') "
                    f"AS batch FROM ({facts.files_sql(kind, files, filename=True, con=con)})")
        else:
            body = f"SELECT *, CAST(NULL AS VARCHAR) AS batch FROM ({facts.empty_select(kind)})"
        con.execute(f"CREATE OR REPLACE TEMP VIEW {kind} AS {body}")
    return con


class Scope:
    """The SQL of what a check looks at: the period (usages by `booked_at`, intervals and charges by
    overlap) and the batch the scanned rows must come from."""

    def __init__(self, start: datetime | None, end: datetime | None, batch: str | None):
        self.start, self.end, self.batch = start, end, batch

    def _batch(self) -> str:
        return f" AND batch = {literal(self.batch)}" if self.batch else ""

    def batches(self) -> str:
        """The SQL of the list of the batches of a group's rows: the one batch of a check restricted
        to it (every row in scope is of that batch), else ``list(DISTINCT batch)`` (which costs about
        as much as the rest of a group-by of 2M rows)."""
        return f"[{literal(self.batch)}]" if self.batch else "list(DISTINCT batch)"

    def instant(self, col: str) -> str:
        sql = "true"
        if self.start is not None:
            sql += f" AND {col} >= TIMESTAMPTZ '{iso(self.start)}'"
        if self.end is not None:
            sql += f" AND {col} < TIMESTAMPTZ '{iso(self.end)}'"
        return sql + self._batch()

    def span(self, lo: str, hi: str) -> str:
        sql = "true"
        if self.end is not None:
            sql += f" AND {quote_ident(lo)} < TIMESTAMPTZ '{iso(self.end)}'"
        if self.start is not None:
            sql += f" AND {quote_ident(hi)} > TIMESTAMPTZ '{iso(self.start)}'"
        return sql + self._batch()

    def clip(self, col: str, bound: datetime | None, fn: str) -> str:
        return f"{fn}({quote_ident(col)}, TIMESTAMPTZ '{iso(bound)}')" if bound is not None else quote_ident(col)


def price_spans(con: duckdb.DuckDBPyConnection, index: PriceIndex) -> str:
    """Create the temp table `_spans(i, lo, hi)` of the price spans (NULL: unbounded) and return the
    SQL CASE giving the span of `booked_at`."""
    cuts = sorted({t for p in index.prices() for t in (p.effective_from, p.effective_to) if t is not None})
    bounds = [None, *cuts, None]
    con.execute("CREATE OR REPLACE TEMP TABLE _spans (i INTEGER, lo TIMESTAMPTZ, hi TIMESTAMPTZ)")
    at = [("NULL" if t is None else f"TIMESTAMPTZ '{iso(t)}'") for t in bounds]  # one INSERT, not one a span
    con.execute("INSERT INTO _spans VALUES " + ", ".join(f"({i}, {at[i]}, {at[i + 1]})" for i in range(len(cuts) + 1)))
    whens = " ".join(f"WHEN booked_at < TIMESTAMPTZ '{iso(t)}' THEN {i}" for i, t in enumerate(cuts))
    return f"CASE {whens} ELSE {len(cuts)} END" if cuts else "0"
