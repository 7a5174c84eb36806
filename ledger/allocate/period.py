"""The period's facts: the per-request relations (by the engine, from :mod:`.sql`), usage, tasks and regions."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

import duckdb

from ..instants import iso
from ..vocab import EngineName
from . import sql
from .engines import Engine, Overflow
from .pricing import _Pricer
from .records import Policy, Tasks, Usage
from .tables import FAILED_TASKS, GROUPS, METERS, POOL_WEIGHTS, TASK_COUNTS, TASK_KEYS, TASK_STATE, UNKNOWN_TASKS


@dataclass(frozen=True)
class Inputs:
    """What an allocation reads in place of the facts it is given (a scenario: ``ledger.whatif``).
    `requests` and `fleet`: None (the facts as given), or a DuckDB SELECT with the columns of that
    kind (``ledger.facts.KINDS``) and ``booked_at``, which reads the facts as given under the name
    :func:`given` of the kind (``_given_requests``). The rest of the allocation is unchanged: the same
    statements, prices, splits and conservation over the relations these SELECTs give."""

    requests: str | None = None
    fleet: str | None = None

    def changed(self) -> tuple[tuple[str, str], ...]:
        """(kind, SELECT) of each relation replaced."""
        return tuple((k, q) for k, q in (("requests", self.requests), ("fleet", self.fleet)) if q is not None)


def given(kind: str) -> str:
    """The name the facts of `kind`, as given to the allocation, have inside an :class:`Inputs` SELECT."""
    return f"_given_{kind}"


@contextmanager
def inputs_in_place(con: duckdb.DuckDBPyConnection, inputs: Inputs | None) -> Iterator[None]:
    """While the block runs, `con`'s relation of each kind `inputs` replaces is its SELECT (a temp
    view), the relation given renamed to :func:`given`; afterwards everything is as it was."""
    done: list[tuple[str, str]] = []
    try:
        for kind, select in (inputs.changed() if inputs is not None else ()):
            row = con.execute("""SELECT 'VIEW' FROM duckdb_views() WHERE view_name = $n AND NOT internal
                                 UNION ALL SELECT 'TABLE' FROM duckdb_tables() WHERE table_name = $n""",
                              {"n": kind}).fetchone()
            what = row[0] if row else "VIEW"
            con.execute(f"ALTER {what} {kind} RENAME TO {given(kind)}")
            done.append((kind, what))
            con.execute(f"CREATE TEMP VIEW {kind} AS {select}")
        yield
    finally:
        for kind, what in reversed(done):
            con.execute(f"DROP VIEW IF EXISTS temp.{kind}")
            con.execute(f"ALTER {what} {given(kind)} RENAME TO {kind}")


def _prepare(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime, policy: Policy, pricer: _Pricer,
             engine: Engine) -> None:
    """Relations of the period, read in one pass over outcomes and two or more over requests, by `engine`
    (the statements are :mod:`.sql`'s, the tables :mod:`.tables`'; the small ones end as temp
    tables of `con`):

    - `TASK_KEYS` (small): the (tenant, product, criteria) of the period's outcomes, numbered (as
      few bits as their count needs keep the per-task state's packed integers small);
    - `TASK_STATE`: per task, its latest outcome decided before `end` (failed work, §4.5) and its
      latest outcome decided in the period (unit economics), as :data:`.sql.OUTCOME_CODE`, the
      latter's tenant, product and criteria as their number in `TASK_KEYS`. Every
      task of the month is a row of it, in the engine (DuckDB: under the connection's memory
      limit, spilled beyond it, ``ledger.duck``); Python only ever sees its counts by (tenant,
      product): `TASK_COUNTS` (small);
    - `FAILED_TASKS`: the tasks whose latest outcome is a failure;
    - `POOL_WEIGHTS`: the pools' token weights, when the policy has some;
    - `GROUPS` (small): requests grouped by pool or provider, hour (day for provider requests),
      tenant, product, model, work, and for provider requests region, service tier, price span and
      long-context band, with their weight (§4.2), tokens by bucket (uncached input, cached reads,
      5-minute and 1-hour cache writes, output and its reasoning part) and counts. Cache writes
      are prefilled input: on a pool they weigh as uncached input; failed work by the join with
      `FAILED_TASKS`;
    - `UNKNOWN_TASKS`: the tasks of the period's requests with no outcome up to `end` (the
      anti-join with `TASK_STATE`, in as many parts as its hash table needs to fit in the engine's
      memory), by (tenant, product), counted in `TASK_COUNTS`;
    - `METERS` (small): the period's meters with their work tag and price span, by group.
    """
    con.execute("SET TimeZone = 'UTC'")
    engine.create(con, TASK_KEYS, sql.task_keys(start, end))
    make_task_state(con, engine, start, end)
    engine.create(con, FAILED_TASKS, sql.FAILED_TASKS)
    weight, join, pool_weights = sql.weight(policy)
    if join:
        engine.load(con, POOL_WEIGHTS, pool_weights)
    boundaries = pricer.instants(start, end)
    engine.create(con, GROUPS, sql.request_groups(start, end, weight, join, boundaries, sql.band_case(pricer.index)))
    engine.create_in_parts(con, UNKNOWN_TASKS, sql.KNOWN_TASKS,
                           lambda lo, hi: sql.unknown_tasks(start, end, lo, hi))
    engine.create(con, METERS, sql.meter_groups(start, end, boundaries))
    engine.create(con, TASK_COUNTS, sql.task_counts(start, end))


def _key_shape(con: duckdb.DuckDBPyConnection) -> tuple[int, bool]:
    """Of `TASK_KEYS` (a temp table of `con` whatever the engine): the bits its numbers `k` take
    (``sql.k_bits``), and whether some row has a NULL tenant, product or criteria (then the per-task
    state matches them with ``IS NOT DISTINCT FROM``, else with ``=``)."""
    keys, nulls = con.execute(f"""SELECT count(*), count(*) FILTER (WHERE tenant IS NULL OR product IS NULL
                                  OR criteria IS NULL) FROM {TASK_KEYS}""").fetchall()[0]
    return sql.k_bits(keys), nulls > 0


def make_task_state(con: duckdb.DuckDBPyConnection, engine: Engine, start: datetime, end: datetime) -> str:
    """Make `TASK_STATE` (``sql.task_state``) of the period, `TASK_KEYS` made; return the integer type
    its keys were computed in (:func:`_key_kind`). Where that is BIGINT without a proof that the keys
    fit (Spark), an :class:`~.engines.Overflow` makes the state again in HUGEINT: the engine stops on
    an overflow rather than wrap, so a state made in BIGINT is exact."""
    bits, null_keys = _key_shape(con)
    kind = _key_kind(con, engine, start, bits)
    while True:
        try:
            engine.create(con, TASK_STATE, sql.task_state(start, end, bits, kind, null_keys))
            return kind
        except Overflow:
            if kind == "HUGEINT":  # the widest: an overflow here is the allocation's error
                raise
            kind = "HUGEINT"


def _key_kind(con: duckdb.DuckDBPyConnection, engine: Engine, start: datetime, bits: int) -> str:
    """The integer type of the per-task state's keys (``sql.outcome_key``): on DuckDB, BIGINT when the
    first and last ``decided_at`` of every outcome (which DuckDB reads from the Parquet files'
    statistics) keep them within it (``sql.fits_bigint``), else HUGEINT. On Spark, BIGINT first
    (:func:`make_task_state` makes the state again in HUGEINT if it overflows): its HUGEINT is
    DECIMAL(38,0), a long inside a Decimal object, and the state of the 10M bench's month took 12.3 s
    in BIGINT against 15.7 s so, in a fresh session; the bounds would be a job of its own there
    (docs/scale.md)."""
    if engine.name == EngineName.SPARK:
        return "BIGINT"
    if engine.name != EngineName.DUCKDB:  # an engine not known to stop on an overflow: the type that holds any
        return "HUGEINT"
    first, last = con.execute(
        "SELECT epoch_us(min(decided_at)), epoch_us(max(decided_at)) FROM outcomes").fetchall()[0]
    return "BIGINT" if sql.fits_bigint(first, last, start, bits) else "HUGEINT"


# ---- usage and tasks (for unit economics) ------------------------------------------------------

def _usage(con: duckdb.DuckDBPyConnection) -> tuple[Usage, ...]:
    rows = con.execute(f"""
        SELECT tenant, product, model, sum(n), sum(active), sum(n) FILTER (WHERE work = 'failed')
        FROM {GROUPS} GROUP BY ALL ORDER BY ALL""").fetchall()
    return tuple(Usage(tenant=t, product=p, model=m, requests=int(n), active_tokens=int(a),
                       failed_requests=int(f or 0)) for t, p, m, n, a, f in rows)


def _tasks(con: duckdb.DuckDBPyConnection) -> tuple[Tasks, ...]:
    """Tasks by (tenant, product): success and failure by the latest outcome decided in the period;
    unknown: tasks of the period's requests with no outcome decided up to the period end."""
    acc: dict[tuple[str, str], list] = defaultdict(lambda: [0, 0, 0, set()])
    for tenant, product, criteria, ok, failed, unknown in con.execute(
            f"SELECT * FROM {TASK_COUNTS}").fetchall():
        counts = acc[(tenant, product)]
        counts[0] += int(ok)
        counts[1] += int(failed)
        counts[2] += int(unknown)
        if criteria is not None:
            counts[3].add(criteria)
    return tuple(Tasks(tenant=t, product=p, success=ok, failure=f, unknown=u, criteria=tuple(sorted(c)))
                 for (t, p), (ok, f, u, c) in sorted(acc.items(), key=_none_first))


def _none_first(item: tuple[tuple[str | None, str | None], list]) -> tuple:
    """The order of tasks' (tenant, product): by text, a NULL one (an outcome's NULL tenant or product,
    which ingest refuses: ``sql.task_state`` takes them as they are) first."""
    return tuple((x is not None, x or "") for x in item[0])


def _regions(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime) -> tuple[str, ...]:
    """Regions of the period's fleet intervals, provider requests and meters (reports state them)."""
    rows = con.execute(f"""
        SELECT DISTINCT region FROM (
            SELECT region FROM fleet WHERE "start" < TIMESTAMPTZ '{iso(end)}' AND "end" > TIMESTAMPTZ '{iso(start)}'
            UNION ALL SELECT region FROM {GROUPS} WHERE pool IS NULL
            UNION ALL SELECT region FROM {METERS})
        WHERE region IS NOT NULL AND region NOT IN ('', '*') ORDER BY 1""").fetchall()
    return tuple(r for (r,) in rows)
