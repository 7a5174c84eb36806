"""The workload of a period from the request facts, in DuckDB: one pass over the facts for the
per-minute series, one per request-length histogram (input, with the cached tokens and failures;
output), then small queries over the series and the histograms (never a per-row Python loop).
Definitions and a worked example: ``docs/workload.md``."""
from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb

from .. import config, facts, store
from ..hints import Hint, Hinted
from ..instants import iso
from .records import Bursts, Percentiles, Workload, WorkloadError

MINUTE_US = 60_000_000
#: The library's words for the bounds of a window and for a month (`ledger workload --from/--to/--period`).
WINDOW_START, WINDOW_END = Hint("window_start", "the start"), Hint("window_end", "the end")
MONTH, WINDOW = Hint("month", ""), Hint("window", "")
_QS = "[0.5, 0.95, 0.99]"


def _where(start: datetime, end: datetime, pool: str | None, product: str | None) -> tuple[str, dict]:
    """The filter on the requests (by when they occurred) and its parameters."""
    sql = "occurred_at >= $start AND occurred_at < $end"
    params: dict = {"start": start, "end": end}
    if pool is not None:
        sql += " AND pool = $pool"
        params["pool"] = pool
    if product is not None:
        sql += " AND product = $product"
        params["product"] = product
    return sql, params


def _what(period: str, pool: str | None, product: str | None) -> str:
    parts = [f"pool {pool}" if pool is not None else "", f"product {product}" if product is not None else ""]
    return " and ".join(p for p in parts if p) or "any pool or product"


def window_label(start: datetime, end: datetime) -> str:
    """The name of a window that is not a month: the ISO 8601 interval ``<start>/<end>`` in UTC
    (``2026-10-05T00:00:00Z/2026-10-06T00:00:00Z``); a workload's `period` is this or ``YYYY-MM``."""
    return f"{iso(start)}/{iso(end)}"


def _when(period: str, start: datetime, end: datetime) -> str:
    """``in 2026-10`` for a month, ``from <start> to <end>`` for a window."""
    return f"in {period}" if "/" not in period else f"from {iso(start)} to {iso(end)}"


def check_window(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """`start` and `end` in UTC, or WorkloadError (one line each): both aware instants on a whole
    minute (the series counts whole minutes from `start`), `start` before `end`."""
    problems = []
    for what, at in ((WINDOW_START, start), (WINDOW_END, end)):
        if not isinstance(at, datetime) or at.tzinfo is None:
            problems.append(Hinted(what, f" {at}: give an instant with a UTC offset"))
        elif at.second or at.microsecond:
            problems.append(Hinted(what, f" {iso(at)} is not on a whole minute: the workload counts whole minutes, "
                                         f"so give {iso(at.replace(second=0, microsecond=0))} or the minute after"))
    if problems:
        raise WorkloadError(problems)
    start, end = start.astimezone(timezone.utc), end.astimezone(timezone.utc)
    if not start < end:
        raise WorkloadError(Hinted(WINDOW_START, f" {iso(start)} is not before ", WINDOW_END,
                                   f" {iso(end)} (the window is [from, to), end exclusive)"))
    return start, end


def _series(con: duckdb.DuckDBPyConnection, period: str, start: datetime, end: datetime, pool: str | None,
            product: str | None, now: datetime | None) -> int:
    """Pass 1 over the facts: ``_wl_min`` (minute index, output tokens, requests) and ``_wl_series``,
    every minute of the series zero-filled. Returns its length in minutes."""
    where, params = _where(start, end, pool, product)
    s_us = int(start.timestamp()) * 1_000_000
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _wl_min AS
        SELECT (epoch_us(occurred_at) - {s_us}) // {MINUTE_US} AS m, sum(output_tokens) AS tokens,
               count(*) AS requests
        FROM requests WHERE {where} GROUP BY 1""", params)
    last = con.execute("SELECT max(m) FROM _wl_min").fetchone()[0]
    if last is None:
        raise WorkloadError(f"no requests occurred {_when(period, start, end)} for {_what(period, pool, product)}")
    now = now or datetime.now(timezone.utc)
    full = int((end - start).total_seconds()) // 60
    minutes = full if end <= now else int(last) + 1
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _wl_series AS
        SELECT g.range AS m, CAST(coalesce(x.tokens, 0) AS BIGINT) AS tokens, coalesce(x.requests, 0) AS requests
        FROM range(0, {minutes}) g LEFT JOIN _wl_min x ON x.m = g.range""")
    return minutes


def _stats(con: duckdb.DuckDBPyConnection, col: str) -> dict[str, float]:
    q, mx, mean = con.execute(f"SELECT quantile_cont(CAST({col} AS DOUBLE), {_QS}), max({col}), avg({col}) "
                              "FROM _wl_series").fetchone()
    return {"p50": float(q[0]), "p95": float(q[1]), "p99": float(q[2]), "max": float(mx), "mean": float(mean)}


def _bursts(con: duckdb.DuckDBPyConnection, threshold: float) -> Bursts:
    """Gaps and islands: a run is consecutive minutes above the threshold (m - row number is constant in it)."""
    count, longest, minutes, tokens, excess = con.execute("""
        WITH above AS (SELECT m, tokens, m - row_number() OVER (ORDER BY m) AS run
                       FROM _wl_series WHERE tokens > $t),
             runs AS (SELECT count(*) AS n, sum(tokens) AS tokens, sum(tokens - $t) AS excess FROM above GROUP BY run)
        SELECT count(*), coalesce(max(n), 0), coalesce(sum(n), 0), coalesce(sum(tokens), 0), coalesce(sum(excess), 0)
        FROM runs""", {"t": threshold}).fetchone()
    return Bursts(threshold=threshold, count=int(count), longest=int(longest), minutes=int(minutes),
                  tokens=int(tokens), excess_tokens=float(excess))


def _rise(con: duckdb.DuckDBPyConnection, window: int) -> float:
    """max over t of TPM(t) - min of TPM over [t - window, t] (the window cut at the series start)."""
    (rise,) = con.execute(f"""
        SELECT max(tokens - low) FROM (
            SELECT tokens, min(tokens) OVER (ORDER BY m ROWS BETWEEN {int(window)} PRECEDING AND CURRENT ROW) AS low
            FROM _wl_series)""").fetchone()
    return float(rise or 0)


def _histograms(con: duckdb.DuckDBPyConnection, where: str, params: dict) -> None:
    """Passes 2 and 3 over the facts: requests per input length (with their cached input tokens and
    failed requests) in ``_wl_in``, and per output length in ``_wl_out``: a few thousand rows each,
    from which the percentiles are exact (:func:`_percentiles`)."""
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _wl_in AS
        SELECT input_tokens AS v, count(*) AS c, sum(cached_input_tokens) AS cached,
               count(*) FILTER (WHERE status <> 'ok') AS failed
        FROM requests WHERE {where} GROUP BY 1""", params)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _wl_out AS
        SELECT output_tokens AS v, count(*) AS c FROM requests WHERE {where} GROUP BY 1""", params)


def _percentiles(con: duckdb.DuckDBPyConnection, table: str) -> Percentiles:
    """p50, p95, p99 of the values counted in `table` (v, c), exactly as ``quantile_cont`` over the
    values themselves: at position pos = (n - 1) x q of the sorted values, lo + (pos - floor(pos)) x
    (hi - lo), lo and hi the values at ranks floor(pos) and ceil(pos) (the value at rank r is the
    smallest v with more than r values at or below it)."""
    rows = con.execute(f"""
        WITH _wl_cum AS (SELECT v, sum(c) OVER (ORDER BY v ROWS UNBOUNDED PRECEDING) AS cum FROM {table}),
             _wl_n AS (SELECT sum(c) AS n, max(v) AS mx, sum(v * c) / sum(c) AS mean FROM {table}),
             _wl_p AS (SELECT q, CAST(n - 1 AS DOUBLE) * q AS pos, mx, mean
                       FROM _wl_n, unnest(CAST({_QS} AS DOUBLE[])) t(q))
        SELECT q, pos, (SELECT min(v) FROM _wl_cum WHERE cum > floor(pos)),
               (SELECT min(v) FROM _wl_cum WHERE cum > ceil(pos)), mx, mean
        FROM _wl_p ORDER BY q""").fetchall()
    qs = [float(lo) + (pos - math.floor(pos)) * (float(hi) - float(lo)) for _, pos, lo, hi, _, _ in rows]
    return Percentiles(p50=qs[0], p95=qs[1], p99=qs[2], max=float(rows[0][4]), mean=float(rows[0][5]))


def _hour_of_week(con: duckdb.DuckDBPyConnection, start: datetime) -> list[float | None]:
    offset = start.weekday() * 1440 + start.hour * 60 + start.minute
    rows = dict(con.execute(f"SELECT (({offset} + m) // 60) % 168 AS h, avg(tokens) FROM _wl_series GROUP BY 1")
                .fetchall())
    return [float(rows[h]) if h in rows else None for h in range(168)]


def _hourly(con: duckdb.DuckDBPyConnection, start: datetime) -> tuple[tuple[datetime, float, float], ...]:
    """Per UTC clock hour the series touches (a window may start within an hour: its first hour
    holds the minutes from the start on)."""
    rows = con.execute(f"SELECT ({start.minute} + m) // 60 AS h, avg(tokens), max(tokens) FROM _wl_series "
                       "GROUP BY 1 ORDER BY 1").fetchall()
    top = start.replace(minute=0, second=0, microsecond=0)
    return tuple((top + timedelta(hours=int(h)), float(mean), float(mx)) for h, mean, mx in rows)


def workload_of(con: duckdb.DuckDBPyConnection, *, period: str, start: datetime, end: datetime,
                pool: str | None = None, product: str | None = None, ramp_minutes: int = 10,
                now: datetime | None = None) -> Workload:
    """The workload of ``[start, end)`` (a month, or any window on whole minutes) over a connection
    whose ``requests`` view has the facts' columns (:func:`ledger.facts.connect`); `period` names it
    (``YYYY-MM``, or :func:`window_label`). WorkloadError when no request matches, or a bad window."""
    if ramp_minutes < 1:
        raise WorkloadError(Hinted(Hint("ramp_minutes", "ramp minutes"),
                                   f" {ramp_minutes}: give a whole number of minutes >= 1"))
    start, end = check_window(start, end)
    con.execute("SET TimeZone = 'UTC'")
    minutes = _series(con, period, start, end, pool, product, now)
    tpm, rpm = _stats(con, "tokens"), _stats(con, "requests")
    _histograms(con, *_where(start, end, pool, product))
    requests, inp, cached, failed = (int(x) for x in con.execute(
        "SELECT sum(c), sum(v * c), sum(cached), sum(failed) FROM _wl_in").fetchone())
    out = int(con.execute("SELECT sum(v * c) FROM _wl_out").fetchone()[0])
    input_len, output_len = _percentiles(con, "_wl_in"), _percentiles(con, "_wl_out")
    return Workload(
        period=period, pool=pool, product=product, start=start, end=start + timedelta(minutes=minutes),
        minutes=minutes, requests=requests, failed_requests=failed, input_tokens=inp, cached_input_tokens=cached,
        output_tokens=out, tpm=tpm, rpm=rpm, peak_to_average=tpm["max"] / tpm["mean"] if tpm["mean"] else 0.0,
        bursts=_bursts(con, tpm["p95"]), input_len=input_len, output_len=output_len,
        isl_mean=inp / requests, osl_mean=out / requests, cache_hit=cached / inp if inp else 0.0,
        hour_of_week=_hour_of_week(con, start), ramp_minutes=ramp_minutes, ramp=_rise(con, ramp_minutes),
        hourly=_hourly(con, start))


def largest_rise_of(con: duckdb.DuckDBPyConnection, *, period: str, start: datetime, end: datetime, minutes: int,
                    pool: str | None = None, product: str | None = None, now: datetime | None = None) -> float:
    """Only the largest rise of TPM over a window of `minutes` minutes (one pass over the facts)."""
    if minutes < 1:
        raise WorkloadError(f"a window of {minutes} minutes: give a whole number of minutes >= 1")
    start, end = check_window(start, end)
    con.execute("SET TimeZone = 'UTC'")
    _series(con, period, start, end, pool, product, now)
    return _rise(con, minutes)


def _open(session, period: str | None, start: datetime | None, end: datetime | None,
          home: Path | None) -> tuple[duckdb.DuckDBPyConnection, str, datetime, datetime]:
    """The facts, the workload's name and its ``[start, end)``: the month `period`, or the window. The
    facts are those of the ledger home `home` (its folder), or of the configured one when the caller of
    :func:`workload` or :func:`largest_rise` gives none (resolved here, once)."""
    if period is not None and (start is not None or end is not None):
        raise WorkloadError(Hinted("give a month", MONTH, " or a window", WINDOW, ", not both"))
    if period is not None:
        try:
            start, end = store.month_bounds(period)
        except store.StoreError as e:
            raise WorkloadError(str(e)) from None
    elif start is None or end is None:
        raise WorkloadError(Hinted("give a month", MONTH, ", or both ",
                                   Hint("window_bounds", "the start and the end of a window")))
    else:
        start, end = check_window(start, end)
        period = window_label(start, end)
    home = config.ledger_home() if home is None else home
    return facts.open_ledger_facts(session, home), period, start, end


def workload(session, period: str | None = None, *, start: datetime | None = None, end: datetime | None = None,
             pool: str | None = None, product: str | None = None, ramp_minutes: int = 10,
             home: Path | None = None, now: datetime | None = None) -> Workload:
    """The workload of the month `period` (``YYYY-MM``), or of the window ``[start, end)`` (aware
    instants on whole minutes: a day, an hour; its `period` is then :func:`window_label`), from the
    ledger's committed request facts: all requests, or those of `pool` and/or `product`.
    WorkloadError when nothing matches."""
    con, period, start, end = _open(session, period, start, end, home)
    try:
        return workload_of(con, period=period, start=start, end=end, pool=pool, product=product,
                           ramp_minutes=ramp_minutes, now=now)
    finally:
        con.close()


def largest_rise(session, period: str | None, minutes: int, *, start: datetime | None = None,
                 end: datetime | None = None, pool: str | None = None, product: str | None = None,
                 home: Path | None = None, now: datetime | None = None) -> float:
    """The largest rise of output TPM over any window of `minutes` minutes in the month `period`
    (or the window ``[start, end)``) [output token/min]: max over t of TPM(t) - min of TPM over
    [t - minutes, t]."""
    con, period, start, end = _open(session, period, start, end, home)
    try:
        return largest_rise_of(con, period=period, start=start, end=end, minutes=minutes, pool=pool,
                               product=product, now=now)
    finally:
        con.close()
