"""The allocation's per-request SQL, written once in DuckDB's dialect and rendered per engine with SQLGlot.

Every statement the heavy step runs (the per-task state, failed tasks, request groups with their
weights, unknown tasks, meter groups, task counts, GPU groups and the largest-remainder GPU split)
is built here as DuckDB SQL. :func:`render` gives it to an engine: DuckDB runs the source as
written (it is DuckDB's dialect, so its plans and speed are those of the hand-written SQL it
replaces); Apache Spark runs SQLGlot's transpilation (``read="duckdb", write="spark"``) with the
transforms of :func:`_spark_fixes`, each a correction of SQLGlot's output where it is wrong for
Spark SQL:

- ``HUGEINT`` (SQLGlot's INT128, which Spark has no type for) becomes ``DECIMAL(38,0)``. A
  ``CAST(sum(x) AS HUGEINT)`` of a BIGINT `x` then sums in BIGINT on Spark (DuckDB: in HUGEINT),
  which under ANSI mode stops with an overflow error past 9.2 × 10^18 rather than wrap: token
  counts of one group never come near, and the kv_token_seconds weights, which might, are HUGEINT
  per request already (DECIMAL(38,0) on Spark, whose sums are DECIMAL(38,0)). Summing every BIGINT
  as DECIMAL(38,0) instead would be exact to 10^38 but slow (Spark computes DECIMAL wider than 18
  digits with Java's BigDecimal);
- ``epoch_us(t)`` (which SQLGlot leaves as it is) becomes Spark's ``unix_micros(t)``;
- ``arg_max(x, y)`` becomes ``max_by(x, y)`` (SQLGlot's own), with ``x IS NOT NULL`` added to its
  FILTER: DuckDB's arg_max skips rows whose `x` is NULL, Spark's max_by returns that NULL. (No
  statement here uses it now: the per-task state is kept by ``max``, :func:`task_state`.)
- ``x & (2^b - 1)`` is ``pmod(x, 2^b)`` and ``x >> b`` is ``(x - pmod(x, 2^b)) div 2^b``: the per-task
  state packs into HUGEINT (:func:`low_bits`), which is DECIMAL(38,0) on Spark, whose bitwise
  operators take only integral types. Both are exact for a negative `x` too (rounded down, as
  two's complement is); this module masks only with ``2^b - 1`` and shifts only by a constant.
  Where `x` is within 2^62 in magnitude both are computed on ``CAST(x AS BIGINT)`` (Spark's
  ``pmod`` and ``div`` of a DECIMAL(38,0) are BigDecimal's, whatever its value).

The rest is SQLGlot's own and right for Spark: ``TIMESTAMPTZ '...'`` to a cast to TIMESTAMP (the
session is in UTC), ``ANTI JOIN``, aggregate FILTER clauses and ``GROUP BY ALL`` (Spark 3.4+). The
GPU groups and split (:data:`GPU_GROUPS`, :data:`SPLIT`: ``//``, ``make_timestamp``, windows) read
only small tables and run on the allocation's DuckDB connection whatever the engine (``gpu.py``).
Amounts, weights and token counts are integers
(BIGINT, HUGEINT or DECIMAL(38,0)) or DECIMAL on both engines, never DOUBLE: the one DOUBLE read,
``latency_ms`` (and ``ttft_ms``), is rounded to integer microseconds before any arithmetic.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache

from ..instants import iso
from ..pricebook import PriceIndex
from ..sqltext import literal
from ..vocab import Dialect
from . import tables
from .records import TOKEN_METERS, Policy, _scale, _us

# ---- pieces of SQL ------------------------------------------------------------------------------


def instant(at: datetime) -> str:
    """A UTC instant as a SQL literal."""
    return f"TIMESTAMPTZ '{iso(at)}'"


def in_period(col: str, start: datetime, end: datetime) -> str:
    return f"{col} >= {instant(start)} AND {col} < {instant(end)}"


#: An outcome (of the outcomes `o`) as a small integer in the per-task state (1 success, 2 failure, 3
#: any other text; NULL stays NULL, and is no outcome): a month's tasks are held by the engine, and
#: an integer costs less to keep and compare than a string.
SUCCESS, FAILURE = 1, 2
OUTCOME_CODE = (f"CASE WHEN o.outcome = 'success' THEN {SUCCESS} WHEN o.outcome = 'failure' THEN {FAILURE} "
                "WHEN o.outcome IS NOT NULL THEN 3 END")

#: A request's time bucket in microseconds: the day for provider requests, the hour on a pool.
DAY_OR_HOUR_US = "CASE WHEN r.pool IS NULL THEN 86400000000 ELSE 3600000000 END"


def floor_us(us: str, unit: str) -> str:
    """`us` (epoch microseconds) rounded down to a multiple of `unit`: the start of its UTC hour or day,
    as ``epoch_us(date_trunc(...))`` in UTC, in integer arithmetic (a calendar per row costs more
    than the rest of the pass). The double modulo rounds instants before 1970 down too."""
    return f"{us} - ({us} % ({unit}) + ({unit})) % ({unit})"


def epoch_case(col: str, boundaries: Sequence[datetime]) -> str:
    """The index of the span between price or FX changes that `col` falls in."""
    if not boundaries:
        return "0"
    whens = " ".join(f"WHEN {col} < {instant(b)} THEN {i}" for i, b in enumerate(boundaries))
    return f"CASE {whens} ELSE {len(boundaries)} END"


def band_case(index: PriceIndex) -> str:
    """The long-context band of a request: the largest tier threshold of its model below its input
    tokens (-1: below every tier)."""
    tiers = sorted({(p.sku, t.above_input_tokens) for p in index.prices() if p.meter in TOKEN_METERS
                    for t in p.tiers}, key=lambda x: (x[0], -x[1]))
    if not tiers:
        return "-1"
    whens = " ".join(f"WHEN r.model = {literal(sku)} AND r.input_tokens > {above} THEN {above}" for sku, above in tiers)
    return f"CASE {whens} ELSE -1 END"


def weight(policy: Policy) -> tuple[str, str, list[tuple[str, int, int, int]]]:
    """§4.2 SQL for a request's integer weight, the join it needs, and the rows of
    :data:`.tables.POOL_WEIGHTS` the join reads (none: no join). active_tokens: input + output (× the
    pool's weights scaled to integers); kv_token_seconds: 2 × token-microseconds (2 × input × latency
    + output × (latency − ttft), so that the halving stays exact)."""
    if policy.basis == "kv_token_seconds":
        lat = "CAST(round(r.latency_ms * 1000) AS HUGEINT)"
        ttft = "CAST(round(coalesce(r.ttft_ms, 0) * 1000) AS HUGEINT)"
        return f"2 * r.input_tokens * {lat} + r.output_tokens * greatest({lat} - {ttft}, 0)", "", []
    if policy.weights:
        rows = [(pool, int(ws.uncached * _scale(ws)), int(ws.cached * _scale(ws)), int(ws.output * _scale(ws)))
                for pool, ws in policy.weights]
        return ("(r.input_tokens - r.cached_input_tokens) * coalesce(pw.u, 1)"
                " + r.cached_input_tokens * coalesce(pw.c, 1) + r.output_tokens * coalesce(pw.o, 1)",
                f"LEFT JOIN {tables.POOL_WEIGHTS} pw ON r.pool = pw.pool", rows)
    return "r.input_tokens + r.output_tokens", "", []


# ---- the period's facts (allocate/period.py) ----------------------------------------------------

def outcome_key(start: datetime, kind: str = "HUGEINT") -> str:
    """An outcome's place in time as one integer: its instant in microseconds after the period's
    `start` (negative before it), then its outcome code (``(epoch_us - start_us) * 4 + code``,
    HUGEINT: no instant overflows it). The largest of a task's is its latest outcome, and of two
    decided at the same instant the one of the greater code (failure over success): a plain ``max``,
    where ``arg_max`` keeps a value beside each state.

    Counted from the period's start rather than from 1970, a month's keys stay small (under 2^47 for
    an outcome within a year of the period), and so does the per-task `decided` that packs one with
    its `k` in :func:`k_bits` bits: on Spark, whose HUGEINT is DECIMAL(38,0), a decimal of up to 18
    digits is held as a long and one of more as a BigDecimal, and the per-task state of 10M requests
    took 15 s with keys counted from 1970 and shifted by 56 bits, against 4.4 s in longs
    (docs/scale.md). The keys' order, and so every result, is the same either way.

    `kind` is the integer type the key is computed in: HUGEINT holds any, BIGINT where
    :func:`fits_bigint` says the period's outcomes' keys fit (on DuckDB, about a fifth less time
    for the per-task state at 100M requests)."""
    if kind not in ("HUGEINT", "BIGINT"):
        raise ValueError(f"outcome keys are HUGEINT or BIGINT, not {kind!r}")
    return f"(CAST(epoch_us(o.decided_at) AS {kind}) - {_us(start)}) * 4 + {OUTCOME_CODE}"


#: The most bits the per-task `decided` keeps its outcome's `k` of :data:`.tables.TASK_KEYS` in,
#: below its :func:`outcome_key`: a month has far fewer than 2^56 distinct (tenant, product,
#: criteria) (each is an outcome row), and a key (under 2^66 in magnitude) shifted by 56 bits is
#: within HUGEINT's 2^127. Decoded with ``&`` and ``>>``, exact for negative keys too (two's
#: complement: ``x & (2^b - 1)`` is x modulo 2^b rounded down, ``x >> b`` is x / 2^b rounded down),
#: and fast on DuckDB, whose HUGEINT ``%`` and ``//`` cost 20 times as much.
K_BITS = 56


def k_bits(keys: int) -> int:
    """The bits `k` takes when :data:`.tables.TASK_KEYS` has `keys` rows (`k` from 0 to keys - 1): at
    least 1, at most :data:`K_BITS`. The fewer, the smaller the packed `decided` (:func:`outcome_key`)."""
    if keys > 1 << K_BITS:
        raise ValueError(f"{keys} outcome keys do not fit in {K_BITS} bits")
    return max(1, (keys - 1).bit_length())


#: The BIGINT range: a packed `decided` outside it needs HUGEINT.
_BIGINT = 1 << 63


def fits_bigint(first_us: int | None, last_us: int | None, start: datetime, bits: int) -> bool:
    """Whether every packed `decided` of :func:`task_state` (an :func:`outcome_key` times 2^`bits`
    plus a `k` under 2^`bits`) is within BIGINT when the outcomes' ``decided_at`` are between
    `first_us` and `last_us` (epoch microseconds, both included; None: no outcome). The bounds are
    those of every outcome, a superset of the state's: DuckDB answers them from the Parquet files'
    statistics where it can, else with one scan of the column. (DuckDB stops with an overflow error
    on a BIGINT that would not fit, rather than wrap; the check makes sure it never comes to that.)"""
    if first_us is None or last_us is None:
        return True
    origin = _us(start)
    lowest = ((first_us - origin) * 4) * (1 << bits)  # code >= 0 and k >= 0 only add
    highest = ((last_us - origin) * 4 + 3) * (1 << bits) + (1 << bits) - 1
    return -_BIGINT <= lowest and highest < _BIGINT


def low_bits(x: str, bits: int) -> str:
    """`x` modulo 2^`bits`, rounded down (in [0, 2^bits) for a negative `x` too)."""
    return f"(({x}) & {(1 << bits) - 1})"


def task_keys(start: datetime, end: datetime) -> str:
    """:data:`.tables.TASK_KEYS`: the (tenant, product, criteria) of the outcomes booked in the period,
    distinct, numbered from 0 in their order (NULL last), `k`."""
    return f"""
        SELECT row_number() OVER (ORDER BY tenant, product, criteria) - 1 AS k, tenant, product, criteria
        FROM (SELECT DISTINCT tenant, product, criteria FROM outcomes WHERE {in_period('booked_at', start, end)}) t"""


def task_state(start: datetime, end: datetime, bits: int = K_BITS, kind: str = "HUGEINT",
               null_keys: bool = True) -> str:
    """:data:`.tables.TASK_STATE`: per task, the code of its latest outcome decided before `end`
    (`latest`), and of its latest outcome booked in the period (`decided`) with that outcome's
    (tenant, product, criteria) as its number `k` in :data:`.tables.TASK_KEYS`.

    Which outcome is a task's latest: the one of the greatest ``decided_at``; of outcomes decided at
    the same instant (which ingest refuses: ``(task_id, decided_at)`` is the outcomes' key), the one
    of the greatest outcome code (failure over success), then of the greatest `k` (tenant, product
    and criteria in text order, NULL last). An outcome whose outcome is NULL is none (skipped); the
    latest one's tenant, product and criteria are taken as they are, NULL too (ingest requires all
    three).

    Each is one integer per task, kept by ``max``: `latest` is :func:`outcome_key`, `decided` that
    key shifted left by `bits` plus `k` (`bits`: :func:`k_bits` of the rows of `TASK_KEYS`; the
    default, :data:`K_BITS`, holds any), both decoded after the aggregate. (Five ``arg_max``
    states, three of them text, took twice the CPU time at 10M requests and spilled at 100M.)

    `kind`: the integer type the keys are computed in (:func:`outcome_key`). `null_keys`: whether
    some row of `TASK_KEYS` has a NULL tenant, product or criteria; when none has, an outcome's
    are matched to them with ``=`` (which matches a NULL to nothing, as ``IS NOT DISTINCT FROM``
    does when no key holds one), a tenth of the statement's time at 100M requests."""
    end_, key = instant(end), outcome_key(start, kind)
    booked = in_period("o.booked_at", start, end)
    match = "IS NOT DISTINCT FROM" if null_keys else "="
    same = " AND ".join(f"o.{c} {match} k.{c}" for c in ("tenant", "product", "criteria"))
    return f"""
        SELECT task_id, CAST({low_bits('latest', 2)} AS INTEGER) AS latest,
               CAST({low_bits(f'decided >> {bits}', 2)} AS INTEGER) AS decided,
               CAST({low_bits('decided', bits)} AS BIGINT) AS k
        FROM (
            SELECT o.task_id,
                   max({key}) FILTER (WHERE o.decided_at < {end_}) AS latest,
                   max(({key}) * {1 << bits} + k.k) FILTER (WHERE {booked}) AS decided
            FROM outcomes o LEFT JOIN {tables.TASK_KEYS} k ON {same}
            WHERE o.decided_at < {end_} OR ({booked})
            GROUP BY o.task_id) s"""


FAILED_TASKS = f"SELECT task_id FROM {tables.TASK_STATE} WHERE latest = {FAILURE}"


def request_groups(start: datetime, end: datetime, weight_sql: str, join: str, boundaries: Sequence[datetime],
                   band: str) -> str:
    """:data:`.tables.GROUPS`: the period's requests grouped, with their weights, token buckets and
    counts. A request is failed work when its status is not ok or its task is one of
    :data:`.tables.FAILED_TASKS` (a fifth of the tasks: their hash table fits in memory, so the wide
    request rows never spill).

    Its own read of the requests, apart from :func:`unknown_tasks`'. One statement reading the
    requests once for both (a CTE ``AS MATERIALIZED``) was streamed to both by DuckDB 1.x; DuckDB 2.0
    stores the CTE's rows (every request, spilled at 100M) and then builds the anti-join's hash
    table on them rather than on the tasks: at 100M, 68 to 72 s against 23 s for this statement and
    31 s for the anti-join (docs/scale.md)."""
    return f"""
        SELECT r.pool, CASE WHEN r.pool IS NULL THEN r.provider END AS provider,
               {floor_us('epoch_us(r.booked_at)', DAY_OR_HOUR_US)} AS hour,
               r.tenant, r.product, r.model,
               CASE WHEN r.status <> 'ok' OR f.task_id IS NOT NULL THEN 'failed' ELSE 'succeeded' END AS work,
               CASE WHEN r.pool IS NULL THEN coalesce(r.region, '*') ELSE '' END AS region,
               CASE WHEN r.pool IS NULL THEN coalesce(r.service_tier, 'standard') ELSE '' END AS tier,
               CASE WHEN r.pool IS NULL THEN {epoch_case('r.booked_at', boundaries)} ELSE 0 END AS epoch,
               CASE WHEN r.pool IS NULL THEN {band} ELSE -1 END AS band,
               CAST(coalesce(sum(CASE WHEN r.pool IS NOT NULL THEN {weight_sql} END), 0) AS HUGEINT) AS w,
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
        FROM requests r LEFT JOIN {tables.FAILED_TASKS} f ON r.task_id = f.task_id {join}
        WHERE {in_period('r.booked_at', start, end)}
        GROUP BY ALL"""


#: The tasks with an outcome decided up to the period end: the build side of :func:`unknown_tasks`.
KNOWN_TASKS = f"SELECT task_id FROM {tables.TASK_STATE} WHERE latest IS NOT NULL"


def unknown_tasks(start: datetime, end: datetime, lo: str | None = None, hi: str | None = None) -> str:
    """:data:`.tables.UNKNOWN_TASKS`: each task of the period's requests with no outcome decided up to
    the period end (an anti-join with :data:`KNOWN_TASKS`), once per (tenant, product) of its
    requests. Only (tenant, product, task_id) of each request go through the join, whose hash table
    holds every task with an outcome (31.7M at 100M requests).

    Of the parts of ``Engine.create_in_parts``, the one of the tasks from `lo` (included) to `hi`
    (excluded), SQL literals (None: no bound), on both sides, so each part is exact and the parts'
    rows are distinct from each other's (a task is in one part). No bounds: no such condition."""
    def cut(col: str) -> str:
        return (f" AND {col} >= {lo}" if lo is not None else "") + (f" AND {col} < {hi}" if hi is not None else "")

    return f"""
        SELECT DISTINCT r.tenant, r.product, r.task_id
        FROM requests r ANTI JOIN ({KNOWN_TASKS}{cut("task_id")}) d
            ON r.task_id = d.task_id
        WHERE {in_period('r.booked_at', start, end)} AND r.task_id IS NOT NULL{cut("r.task_id")}"""


def meter_groups(start: datetime, end: datetime, boundaries: Sequence[datetime]) -> str:
    """:data:`.tables.METERS`: the period's meters with their work tag and price span, summed as far as pricing
    reads them (``price_meters`` sums `quantity` and takes the first `booked_at` of each group)."""
    return f"""
        SELECT CAST(m.booked_at AS DATE) AS day, m.tenant, m.product, m.meter, m.sku, m.unit, m.region,
               CASE WHEN f.task_id IS NOT NULL THEN 'failed' ELSE 'succeeded' END AS work,
               {epoch_case('m.booked_at', boundaries)} AS epoch,
               sum(m.quantity) AS quantity, min(m.booked_at) AS booked_at
        FROM meters m LEFT JOIN {tables.FAILED_TASKS} f ON m.task_id = f.task_id
        WHERE {in_period('m.booked_at', start, end)}
        GROUP BY ALL"""


def task_counts(start: datetime, end: datetime) -> str:
    """:data:`.tables.TASK_COUNTS`, tasks by (tenant, product): by criteria, those whose latest outcome decided in
    the period is a success or a failure; and in rows of NULL criteria, the tasks of the period's
    requests with no outcome decided up to the period end (unknown)."""
    return f"""
        SELECT k.tenant, k.product, k.criteria, c.success, c.failure, 0 AS unknown
        FROM (SELECT k, count(*) FILTER (WHERE decided = {SUCCESS}) AS success,
                     count(*) FILTER (WHERE decided = {FAILURE}) AS failure
              FROM {tables.TASK_STATE} WHERE decided IS NOT NULL GROUP BY k) c
             JOIN {tables.TASK_KEYS} k ON c.k = k.k
        UNION ALL
        SELECT tenant, product, NULL, 0, 0, count(*) FROM {tables.UNKNOWN_TASKS}
        GROUP BY tenant, product"""


# ---- the GPU split (allocate/gpu.py) ------------------------------------------------------------

#: :data:`.tables.GPU_GROUPS`: per pool, hour and (tenant, product, model, work) the integer weight,
#: requests and active tokens.
GPU_GROUPS = f"""
    SELECT pool, hour, CAST(make_timestamp(hour) AS DATE) AS day, tenant, product, model, work,
           CAST(sum(w) AS HUGEINT) AS w, sum(n) AS n, CAST(sum(active) AS HUGEINT) AS active,
           sum(no_latency) AS no_latency
    FROM {tables.GROUPS} WHERE pool IS NOT NULL
    GROUP BY pool, hour, tenant, product, model, work"""

#: :data:`.tables.GPU_SPLIT`: the largest-remainder split of each pool-hour's C_serve over its groups and idle slack,
#: the request parts summed by line group (day, tenant, product, model, pool, work) and the slack's
#: part of each pool-hour (`is_slack` 1, its `slack_hour`).
SPLIT = f"""
WITH rows AS (
    SELECT g.pool, g.hour, g.day, 0 AS is_slack, g.tenant, g.product, g.model, g.work, g.w AS wt, g.active,
           c.c, c.d
    FROM {tables.GPU_GROUPS} g JOIN {tables.COEFF} c ON g.pool = c.pool AND g.hour = c.hour
    UNION ALL
    SELECT pool, hour, NULL, 1, NULL, NULL, NULL, NULL, slack, 0, c, d FROM {tables.COEFF} WHERE slack > 0
), q AS (
    SELECT *, (c * wt) // d AS base, (c * wt) % d AS rem FROM rows
), r AS (
    SELECT *, c - sum(base) OVER (PARTITION BY pool, hour) AS left_over,
           row_number() OVER (PARTITION BY pool, hour
                              ORDER BY rem DESC, wt DESC, is_slack, tenant, product, model, work) AS rk
    FROM q
), parts AS (
    SELECT pool, hour, day, is_slack, tenant, product, model, work, active,
           base + CASE WHEN rk <= left_over THEN 1 ELSE 0 END AS part
    FROM r
)
SELECT is_slack, CASE WHEN is_slack = 1 THEN hour END AS slack_hour, day, tenant, product, model, pool, work,
       CAST(sum(part) AS HUGEINT) AS part, CAST(sum(active) AS HUGEINT) AS active
FROM parts GROUP BY ALL
"""


# ---- rendering ----------------------------------------------------------------------------------

def render(sql: str, dialect: str) -> str:
    """`sql` (DuckDB's dialect) for `dialect` (a :class:`~ledger.vocab.Dialect`): as written for
    DuckDB; for Spark, SQLGlot's transpilation with :func:`_spark_fixes`."""
    if dialect == Dialect.DUCKDB:
        return sql
    if dialect == Dialect.SPARK:
        return _to_spark(sql)
    raise ValueError(f"unknown SQL dialect {dialect!r}: one of {', '.join(Dialect)}")


@lru_cache(maxsize=256)
def _to_spark(sql: str) -> str:
    import sqlglot

    return _spark_fixes(sqlglot.parse_one(sql, read=Dialect.DUCKDB.value)).sql(dialect=Dialect.SPARK.value)


def _spark_fixes(tree):
    """The transforms of SQLGlot's DuckDB tree for Spark SQL (see the module's docstring), in three
    passes: a node a transform puts in place of another is not visited again, so the types and
    functions inside an ``arg_max`` are fixed before it is wrapped in a FILTER, and the bits last."""
    return tree.transform(_spark_types_and_functions).transform(_spark_arg_max).transform(_spark_bits)


def _is_hugeint(node) -> bool:
    from sqlglot import exp

    return isinstance(node, exp.DataType) and node.this == exp.DataType.Type.INT128


def _spark_types_and_functions(node):
    """HUGEINT is DECIMAL(38,0); epoch_us is unix_micros (renamed in place: its arguments are visited)."""
    from sqlglot import exp

    if _is_hugeint(node):
        return exp.DataType.build("DECIMAL(38,0)")
    if isinstance(node, exp.Anonymous) and node.name.lower() == "epoch_us":
        node.set("this", "unix_micros")
    return node


def _spark_arg_max(node):
    """arg_max(x, y) [FILTER (WHERE c)] is max_by(x, y) FILTER (WHERE [(c) AND] x IS NOT NULL)."""
    from sqlglot import exp

    if isinstance(node, exp.Filter) and isinstance(node.this, exp.ArgMax):
        where = node.expression
        present = exp.Not(this=exp.Is(this=node.this.this.copy(), expression=exp.Null()))
        where.set("this", exp.and_(exp.Paren(this=where.this), present))
        return node
    if isinstance(node, exp.ArgMax) and not isinstance(node.parent, exp.Filter):
        present = exp.Not(this=exp.Is(this=node.this.copy(), expression=exp.Null()))
        return exp.Filter(this=node.copy(), expression=exp.Where(this=present))
    return node


#: Spark's DECIMAL(38,0) within this magnitude is decoded in BIGINT (:func:`_spark_bits`): 2^62, so
#: that ``x - pmod(x, 2^b)`` stays within BIGINT too.
_LONG = 1 << 62


def _spark_bits(node):
    """``x & (2^b - 1)`` is ``pmod(x, 2^b)``; ``x >> b`` is ``(x - pmod(x, 2^b)) div 2^b`` (on Spark's
    DECIMAL(38,0) as on its integers). Any other mask or shift is refused: it has no such meaning.

    Both are computed on ``CAST(x AS BIGINT)`` where `x` is within 2^62 in magnitude, and on the
    DECIMAL otherwise: Spark computes ``pmod`` and ``div`` of a DECIMAL(38,0) with Java's BigDecimal,
    whatever its value (decoding the per-task state of 10M requests took 11 s that way, against
    about 1 s in BIGINT); the same numbers either way."""
    from sqlglot import exp

    def whole(literal, op: str) -> int:
        if not (isinstance(literal, exp.Literal) and literal.is_int):
            raise ValueError(f"x {op} {literal.sql()}: only a constant whole number is rendered for Spark")
        return int(literal.this)

    def either(x, decode):
        """decode(x) in BIGINT where x is within :data:`_LONG`, else decode(x) as it is."""
        small = exp.Between(this=x.copy(), low=exp.Neg(this=exp.Literal.number(_LONG)),
                            high=exp.Literal.number(_LONG))
        as_long = exp.Cast(this=x.copy(), to=exp.DataType.build("BIGINT"))
        return exp.Paren(this=exp.Case(ifs=[exp.If(this=small, true=decode(as_long))], default=decode(x.copy())))

    if isinstance(node, exp.BitwiseAnd):
        mask = whole(node.expression, "&") + 1
        if mask & (mask - 1):
            raise ValueError(f"x & {mask - 1}: only a mask 2^b - 1 is rendered for Spark")
        x = node.this.transform(_spark_bits)  # as below: a shift inside the mask is not visited again
        return either(x, lambda x: exp.Anonymous(this="pmod", expressions=[x, exp.Literal.number(mask)]))
    if isinstance(node, exp.BitwiseRightShift):
        unit = 1 << whole(node.expression, ">>")
        x = node.this.transform(_spark_bits)  # the node put in place of this one is not visited again

        def shift(x):
            below = exp.Anonymous(this="pmod", expressions=[x.copy(), exp.Literal.number(unit)])
            return exp.IntDiv(this=exp.Paren(this=exp.Sub(this=x, expression=below)),
                              expression=exp.Literal.number(unit))
        return either(x, shift)
    return node
