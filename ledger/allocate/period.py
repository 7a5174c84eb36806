"""The period's facts: temp relations of requests, outcomes and meters in DuckDB, usage, tasks and regions."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

import duckdb

from ..pricebook import PriceIndex
from .pricing import _Pricer
from .records import TOKEN_METERS, Policy, Tasks, Usage, _iso, _scale


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _in_period(col: str, start: datetime, end: datetime) -> str:
    return f"{col} >= TIMESTAMPTZ '{_iso(start)}' AND {col} < TIMESTAMPTZ '{_iso(end)}'"


def _weight_sql(con: duckdb.DuckDBPyConnection, policy: Policy) -> tuple[str, str]:
    """§4.2 SQL for a request's integer weight, and the join it needs. active_tokens: input + output
    (× the pool's weights scaled to integers); kv_token_seconds: 2 × token-microseconds
    (2 × input × latency + output × (latency − ttft), so that the halving stays exact)."""
    if policy.basis == "kv_token_seconds":
        lat = "CAST(round(r.latency_ms * 1000) AS HUGEINT)"
        ttft = "CAST(round(coalesce(r.ttft_ms, 0) * 1000) AS HUGEINT)"
        return f"2 * r.input_tokens * {lat} + r.output_tokens * greatest({lat} - {ttft}, 0)", ""
    if policy.weights:
        rows = [(pool, int(ws.uncached * _scale(ws)), int(ws.cached * _scale(ws)), int(ws.output * _scale(ws)))
                for pool, ws in policy.weights]
        con.execute("CREATE OR REPLACE TEMP TABLE _pool_weights (pool VARCHAR, u BIGINT, c BIGINT, o BIGINT)")
        con.executemany("INSERT INTO _pool_weights VALUES (?, ?, ?, ?)", rows)
        return ("(r.input_tokens - r.cached_input_tokens) * coalesce(pw.u, 1)"
                " + r.cached_input_tokens * coalesce(pw.c, 1) + r.output_tokens * coalesce(pw.o, 1)",
                "LEFT JOIN _pool_weights pw ON r.pool = pw.pool")
    return "r.input_tokens + r.output_tokens", ""


#: An outcome as a small integer in the per-task state (1 success, 2 failure, 3 any other text, NULL
#: stays NULL, so arg_max skips the same rows): a month's tasks are held by DuckDB, and an integer's
#: arg_max costs less than a string's.
_SUCCESS, _FAILURE = 1, 2
_OUTCOME_CODE = (f"CASE WHEN outcome = 'success' THEN {_SUCCESS} WHEN outcome = 'failure' THEN {_FAILURE} "
                 "WHEN outcome IS NOT NULL THEN 3 END")

#: A request's time bucket in microseconds: the day for provider requests, the hour on a pool.
_DAY_OR_HOUR_US = "CASE WHEN r.pool IS NULL THEN 86400000000 ELSE 3600000000 END"


def _floor_us(us: str, unit: str) -> str:
    """`us` (epoch microseconds) rounded down to a multiple of `unit`: the start of its UTC hour or day,
    as ``epoch_us(date_trunc(...))`` in UTC, in integer arithmetic (ICU's calendar per row costs more
    than the rest of the pass). The double modulo rounds instants before 1970 down too."""
    return f"{us} - ({us} % ({unit}) + ({unit})) % ({unit})"


def _epoch_sql(col: str, boundaries: Sequence[datetime]) -> str:
    """The index of the span between price or FX changes that `col` falls in."""
    if not boundaries:
        return "0"
    whens = " ".join(f"WHEN {col} < TIMESTAMPTZ '{_iso(b)}' THEN {i}" for i, b in enumerate(boundaries))
    return f"CASE {whens} ELSE {len(boundaries)} END"


def _band_sql(index: PriceIndex) -> str:
    """The long-context band of a request: the largest tier threshold of its model below its input
    tokens (-1: below every tier)."""
    tiers = sorted({(p.sku, t.above_input_tokens) for p in index.prices() if p.meter in TOKEN_METERS
                    for t in p.tiers}, key=lambda x: (x[0], -x[1]))
    if not tiers:
        return "-1"
    whens = " ".join(f"WHEN r.model = {_lit(sku)} AND r.input_tokens > {above} THEN {above}" for sku, above in tiers)
    return f"CASE {whens} ELSE -1 END"


def _prepare(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime, policy: Policy, pricer: _Pricer) -> None:
    """Temp relations of the period, read in one pass over outcomes and one over requests:

    - `_task_state`: per task, its latest outcome decided before `end` (failed work, §4.5) and its
      latest outcome decided in the period (unit economics), as :data:`_OUTCOME_CODE`. Every task
      of the month is a row of this DuckDB table (under the connection's memory limit, spilled
      beyond it, ``ledger.duck``); Python only ever sees its counts by (tenant, product);
    - `_groups`: requests grouped by pool or provider, hour (day for provider requests), tenant,
      product, model, work, and for provider requests region, service tier, price span and
      long-context band, with their weight (§4.2), tokens by bucket (uncached input, cached reads,
      5-minute and 1-hour cache writes, output and its reasoning part) and counts. Cache writes
      are prefilled input: on a pool they weigh as uncached input;
    - `_met`: the period's meters with their work tag and price span.
    """
    con.execute("SET TimeZone = 'UTC'")
    booked = _in_period("booked_at", start, end)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _task_state AS
        SELECT task_id,
               arg_max({_OUTCOME_CODE}, decided_at) FILTER (WHERE decided_at < TIMESTAMPTZ '{_iso(end)}') AS latest,
               arg_max({_OUTCOME_CODE}, decided_at) FILTER (WHERE {booked}) AS decided,
               arg_max(tenant, decided_at) FILTER (WHERE {booked}) AS tenant,
               arg_max(product, decided_at) FILTER (WHERE {booked}) AS product,
               arg_max(criteria, decided_at) FILTER (WHERE {booked}) AS criteria
        FROM outcomes WHERE decided_at < TIMESTAMPTZ '{_iso(end)}' OR ({booked})
        GROUP BY task_id""")
    con.execute("CREATE OR REPLACE TEMP TABLE _failed_tasks AS "
                f"SELECT task_id FROM _task_state WHERE latest = {_FAILURE}")
    weight, join = _weight_sql(con, policy)
    boundaries = pricer.instants(start, end)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _groups AS
        SELECT r.pool, CASE WHEN r.pool IS NULL THEN r.provider END AS provider,
               {_floor_us('epoch_us(r.booked_at)', _DAY_OR_HOUR_US)} AS hour,
               r.tenant, r.product, r.model,
               CASE WHEN r.status <> 'ok' OR f.task_id IS NOT NULL THEN 'failed' ELSE 'succeeded' END AS work,
               CASE WHEN r.pool IS NULL THEN coalesce(r.region, '*') ELSE '' END AS region,
               CASE WHEN r.pool IS NULL THEN coalesce(r.service_tier, 'standard') ELSE '' END AS tier,
               CASE WHEN r.pool IS NULL THEN {_epoch_sql('r.booked_at', boundaries)} ELSE 0 END AS epoch,
               CASE WHEN r.pool IS NULL THEN {_band_sql(pricer.index)} ELSE -1 END AS band,
               CAST(coalesce(sum(CASE WHEN r.pool IS NOT NULL THEN {weight} END), 0) AS HUGEINT) AS w,
               count(*) AS n,
               CAST(sum(r.input_tokens + r.output_tokens) AS HUGEINT) AS active,
               CAST(sum(r.input_tokens - r.cached_input_tokens - r.cache_write_input_tokens
                        - r.cache_write_1h_input_tokens) AS HUGEINT) AS uncached,
               CAST(sum(r.cached_input_tokens) AS HUGEINT) AS cached,
               CAST(sum(r.cache_write_input_tokens) AS HUGEINT) AS cache_write,
               CAST(sum(r.cache_write_1h_input_tokens) AS HUGEINT) AS cache_write_1h,
               CAST(sum(r.output_tokens) AS HUGEINT) AS output,
               CAST(sum(r.reasoning_tokens) AS HUGEINT) AS reasoning,
               count(*) FILTER (WHERE r.latency_ms IS NULL) AS no_latency,
               min(epoch_us(r.booked_at)) AS first_us
        FROM requests r LEFT JOIN _failed_tasks f ON r.task_id = f.task_id {join}
        WHERE {_in_period('r.booked_at', start, end)}
        GROUP BY ALL""")
    con.execute(f"""
        CREATE OR REPLACE TEMP VIEW _met AS
        SELECT m.*, CAST(m.booked_at AS DATE) AS day,
               CASE WHEN f.task_id IS NOT NULL THEN 'failed' ELSE 'succeeded' END AS work,
               {_epoch_sql('m.booked_at', boundaries)} AS epoch
        FROM meters m LEFT JOIN _failed_tasks f ON m.task_id = f.task_id
        WHERE {_in_period('m.booked_at', start, end)}""")


# ---- usage and tasks (for unit economics) ------------------------------------------------------

def _usage(con: duckdb.DuckDBPyConnection) -> tuple[Usage, ...]:
    rows = con.execute("""
        SELECT tenant, product, model, sum(n), sum(active), sum(n) FILTER (WHERE work = 'failed')
        FROM _groups GROUP BY ALL ORDER BY ALL""").fetchall()
    return tuple(Usage(tenant=t, product=p, model=m, requests=int(n), active_tokens=int(a),
                       failed_requests=int(f or 0)) for t, p, m, n, a, f in rows)


def _tasks(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime) -> tuple[Tasks, ...]:
    """Tasks by (tenant, product): success and failure by the latest outcome decided in the period;
    unknown: tasks of the period's requests with no outcome decided up to the period end."""
    decided = con.execute(f"""
        SELECT tenant, product, count(*) FILTER (WHERE decided = {_SUCCESS}),
               count(*) FILTER (WHERE decided = {_FAILURE}), list_sort(list(DISTINCT criteria))
        FROM _task_state WHERE decided IS NOT NULL GROUP BY ALL""").fetchall()
    unknown = con.execute(f"""
        SELECT tenant, product, count(DISTINCT task_id) FROM requests r
        ANTI JOIN (SELECT task_id FROM _task_state WHERE latest IS NOT NULL) d ON r.task_id = d.task_id
        WHERE r.task_id IS NOT NULL AND {_in_period('r.booked_at', start, end)}
        GROUP BY ALL""").fetchall()
    acc: dict[tuple[str, str], list] = defaultdict(lambda: [0, 0, 0, ()])
    for tenant, product, ok, failed, crit in decided:
        acc[(tenant, product)][0:2] = [int(ok), int(failed)]
        acc[(tenant, product)][3] = tuple(c for c in crit if c is not None)
    for tenant, product, n in unknown:
        acc[(tenant, product)][2] = int(n)
    return tuple(Tasks(tenant=t, product=p, success=ok, failure=f, unknown=u, criteria=c)
                 for (t, p), (ok, f, u, c) in sorted(acc.items()))


def _regions(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime) -> tuple[str, ...]:
    """Regions of the period's fleet intervals, provider requests and meters (reports state them)."""
    rows = con.execute(f"""
        SELECT DISTINCT region FROM (
            SELECT region FROM fleet WHERE "start" < TIMESTAMPTZ '{_iso(end)}' AND "end" > TIMESTAMPTZ '{_iso(start)}'
            UNION ALL SELECT region FROM _groups WHERE pool IS NULL
            UNION ALL SELECT region FROM _met)
        WHERE region IS NOT NULL AND region NOT IN ('', '*') ORDER BY 1""").fetchall()
    return tuple(r for (r,) in rows)

