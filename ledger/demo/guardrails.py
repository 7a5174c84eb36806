"""The demo's open month for the guardrails (issue 31): November 2026 up to a fixed as-of instant,
one planted spend anomaly, and a budgets book, so that ``ledger alerts`` and the dashboard's Budgets
page show something on the first run. October's run is made before any of it and does not change.

November is October replayed four weeks later: every request, meter event and outcome of
``[2026-10-04, 2026-10-15T12:00Z)`` is booked 28 days on (``[2026-11-01, AS_OF)``: the same
weekdays, so the same weekday-hour pattern; new ids with an ``n-`` prefix), with the fleet
intervals in force then (clipped to the month and the as-of) and the month's invoice charges again
(from November 1 to December 1). The planted anomaly: on 2026-11-11 an agent loop at hooli sends
every gpt-5 request of the day three times (same task, new request ids), tripling the pair's spend.
It is the one thing ``ledger alerts --as-of 2026-11-12T12:00:00Z`` should find besides the
budgets that run out (tests/test_guardrails.py checks it)."""
from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from ..config import Home

#: The instant the demo's alerts are as of: ``ledger alerts --as-of 2026-11-12T12:00:00Z``.
AS_OF = datetime(2026, 11, 12, 12, tzinfo=timezone.utc)
OPEN_START = datetime(2026, 11, 1, tzinfo=timezone.utc)
OPEN_END = datetime(2026, 12, 1, tzinfo=timezone.utc)
#: How far October is moved: four weeks, so every day keeps its weekday.
SHIFT = timedelta(weeks=4)
#: The planted anomaly: (tenant, model, day, how many times each of its requests is sent).
PLANTED = ("hooli", "gpt-5", date(2026, 11, 11), 3)
#: The budgets book shipped with the demo (under the package's data).
BUDGETS = Path(__file__).resolve().parent.parent / "data" / "demo-budgets.toml"
PREFIX = "n-"


@dataclass(frozen=True)
class OpenMonth:
    """What :func:`build_open_month` did: rows ingested per kind, the budgets book loaded (its
    ``name@version``), and the as-of instant to ask the alerts at."""

    ingested: dict[str, int]
    budgets: str
    as_of: datetime


def _sql(kind: str, start: datetime, end: datetime) -> str:
    """The rows of `kind` replayed from ``[start - SHIFT, end - SHIFT)`` into ``[start, end)``."""
    days = SHIFT.days
    move = f"+ INTERVAL {days} DAY"
    src = f"BETWEEN TIMESTAMPTZ '{(start - SHIFT).isoformat()}' AND TIMESTAMPTZ '{(end - SHIFT).isoformat()}'"
    if kind == "requests":
        tenant, model, day, times = PLANTED
        cols = ("tenant, product, model, pool, provider, '{p}' || task_id AS task_id, input_tokens, cached_input_tokens, "
                "output_tokens, cache_write_input_tokens, cache_write_1h_input_tokens, reasoning_tokens, service_tier, "
                "status, ttft_ms, latency_ms, region").format(p=PREFIX)
        base = (f"SELECT '{PREFIX}' || request_id AS request_id, occurred_at {move} AS occurred_at, {cols} FROM requests "
                f"WHERE occurred_at {src} AND occurred_at < TIMESTAMPTZ '{(end - SHIFT).isoformat()}'")
        loop = (f"SELECT '{PREFIX}' || request_id || '-loop' || k AS request_id, occurred_at {move} "
                f"+ k * INTERVAL 7 SECOND AS occurred_at, {cols} FROM requests, range(1, {times}) AS r(k) "
                f"WHERE tenant = '{tenant}' AND model = '{model}' AND CAST(occurred_at {move} AS DATE) = DATE '{day}' "
                f"AND occurred_at < TIMESTAMPTZ '{(end - SHIFT).isoformat()}'")
        return f"SELECT * FROM ({base}) UNION ALL SELECT * FROM ({loop}) WHERE occurred_at < TIMESTAMPTZ '{end.isoformat()}'"
    if kind == "meters":
        return (f"SELECT '{PREFIX}' || event_id AS event_id, occurred_at {move} AS occurred_at, tenant, product, "
                f"'{PREFIX}' || task_id AS task_id, meter, sku, quantity, unit, region FROM meters "
                f"WHERE occurred_at {src} AND occurred_at < TIMESTAMPTZ '{(end - SHIFT).isoformat()}'")
    if kind == "outcomes":
        return (f"SELECT '{PREFIX}' || task_id AS task_id, tenant, product, outcome, decided_at {move} AS decided_at, "
                f"criteria FROM outcomes WHERE decided_at {src} AND decided_at < TIMESTAMPTZ '{(end - SHIFT).isoformat()}'")
    if kind == "fleet":
        return (f"SELECT interval_id || '-{start:%Y-%m}' AS interval_id, pool, "
                f"greatest(start {move}, TIMESTAMPTZ '{start.isoformat()}') AS start, "
                f"least(\"end\" {move}, TIMESTAMPTZ '{end.isoformat()}') AS \"end\", device, gpus, region, purchase_option, "
                f"role, capacity_tokens_per_gpu_s FROM fleet WHERE start {move} < TIMESTAMPTZ '{end.isoformat()}' "
                f"AND \"end\" {move} > TIMESTAMPTZ '{start.isoformat()}'")
    # charges: the invoices of the month before, for this month (a quarter's charge already covers it)
    return (f"SELECT replace(charge_id, '{(start - SHIFT):%Y-%m}', '{start:%Y-%m}') AS charge_id, "
            f"TIMESTAMPTZ '{start.isoformat()}' AS period_start, TIMESTAMPTZ '{OPEN_END.isoformat()}' AS period_end, "
            "category, replace(description, 'October', 'November') AS description, amount, currency, allocate "
            f"FROM charges WHERE period_start = TIMESTAMPTZ '{(OPEN_START - timedelta(days=31)).isoformat()}' "
            f"AND period_end = TIMESTAMPTZ '{OPEN_START.isoformat()}'")


def build_open_month(ledger: Home, step: Callable[[str], None] = lambda _m: None) -> OpenMonth:
    """Write and ingest the demo's open month into `ledger` (which holds the demo's October), then
    load the demo's budgets book. Raises the ingest's or the budgets' errors (LedgerError)."""
    from .. import facts, store
    from ..guardrails import read_budget_book, store_budget_book
    from ..ingest import ingest

    with store.session(ledger.database_url) as s:
        batches = facts.committed_batches(s)
    # The replayed rows go through a scratch folder of the home, removed once ingested: the facts keep
    # them, and `ledger demo --force` wipes the demo's own input files only (ledger.demo.home).
    scratch = ledger.path / "demo" / "open-month-2026-11"
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        paths = {kind: scratch / f"{kind}.parquet" for kind in ("fleet", "charges", "requests", "outcomes", "meters")}
        con = facts.connect(batches, ledger.path, period=(OPEN_START - SHIFT - timedelta(days=3), OPEN_START))
        try:
            for kind, path in paths.items():
                con.execute(f"COPY ({_sql(kind, OPEN_START, AS_OF)}) TO '{path.as_posix()}' (FORMAT PARQUET)")
        finally:
            con.close()
        ingested = {}
        for kind, path in paths.items():
            step(f"ingesting the open month's {kind} (November 2026 up to {AS_OF:%Y-%m-%d %H:%M} UTC)")
            ingested[kind] = ingest(kind, [path], home=ledger).rows_new
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    step("loading the demo's budgets book")
    book = read_budget_book(BUDGETS, "ledger/data/demo-budgets.toml")
    with store.session(ledger.database_url) as s:
        store_budget_book(s, book=book)
    return OpenMonth(ingested=ingested, budgets=book.ref, as_of=AS_OF)
