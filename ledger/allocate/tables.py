"""The allocation's temp tables, declared once: name, columns and types, what makes each, and which are small.

The steps of an allocation hand their results to each other as relations of the engine, read by
name: the per-request statements of :mod:`.sql` make them (and read the ones before), an engine
(:mod:`.engines`, :mod:`.spark`) creates them, and pricing, GPU split, usage and tasks read the
small ones from the allocation's DuckDB connection. Each is one :class:`TempTable` here, and every
creator and reader takes its name (and the loaders and Spark's copy-back their columns) from it,
so a name or a column is changed in one place (``tests/test_architecture.py`` checks that each
is made by exactly one statement and that no SQL names one but through this module).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TempTable:
    """One relation of an allocation. `name` (``_`` first: it never meets a fact kind's name),
    `columns` as ``(name, DuckDB type)`` in order: the types DuckDB gives the statement over the
    facts' types, and the types a small table copied back from another engine is cast to;
    `statement`: the member of :mod:`.sql` that makes it (a SELECT, or a function returning one),
    or None for a table an engine loads from Python rows (:meth:`.engines.Engine.load`, whose
    types are VARCHAR, BIGINT and HUGEINT); `small`: few rows (groups, not requests), so it is
    also a temp table of the DuckDB connection whatever the engine (Spark copies it back),
    where the rest of the allocation reads it; the others stay in the engine.

    In SQL text it is written by name: ``f"FROM {GROUPS}"``."""

    name: str
    columns: tuple[tuple[str, str], ...]
    statement: str | None
    small: bool = False

    def __str__(self) -> str:
        return self.name

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)


TASK_KEYS = TempTable(
    "_task_keys", (("k", "BIGINT"), ("tenant", "VARCHAR"), ("product", "VARCHAR"), ("criteria", "VARCHAR")),
    statement="task_keys", small=True)
"""The distinct (tenant, product, criteria) of the outcomes booked in the period, numbered from 0 in
their order: the per-task state keeps an outcome's three as this one number `k`, in as many bits as
their count needs (``sql.k_bits``). A few rows."""

TASK_STATE = TempTable(
    "_task_state",
    (("task_id", "VARCHAR"), ("latest", "INTEGER"), ("decided", "INTEGER"), ("k", "BIGINT")),
    statement="task_state")
"""Per task: the code (``sql.OUTCOME_CODE``) of its latest outcome decided before the period end, and
of the latest decided in it with that outcome's (tenant, product, criteria) as its `k` of
:data:`TASK_KEYS` (``sql.task_state`` says which outcome is the latest). A row per task of the month."""

FAILED_TASKS = TempTable("_failed_tasks", (("task_id", "VARCHAR"),), statement="FAILED_TASKS")
"""The tasks whose latest outcome is a failure (their requests and meters are failed work)."""

POOL_WEIGHTS = TempTable(
    "_pool_weights", (("pool", "VARCHAR"), ("u", "BIGINT"), ("c", "BIGINT"), ("o", "BIGINT")), statement=None)
"""The pools' token weights (uncached, cached, output) scaled to integers (rows of ``sql.weight``)."""

GROUPS = TempTable(
    "_groups",
    (("pool", "VARCHAR"), ("provider", "VARCHAR"), ("hour", "BIGINT"), ("tenant", "VARCHAR"), ("product", "VARCHAR"),
     ("model", "VARCHAR"), ("work", "VARCHAR"), ("region", "VARCHAR"), ("tier", "VARCHAR"), ("epoch", "INTEGER"),
     ("band", "INTEGER"), ("w", "HUGEINT"), ("n", "BIGINT"), ("active", "HUGEINT"), ("uncached", "HUGEINT"),
     ("cached", "HUGEINT"), ("cache_write", "HUGEINT"), ("cache_write_1h", "HUGEINT"), ("output", "HUGEINT"),
     ("reasoning", "HUGEINT"), ("no_latency", "BIGINT"), ("first_us", "BIGINT")),
    statement="request_groups", small=True)
"""The period's requests grouped, with their weights, token buckets and counts."""

UNKNOWN_TASKS = TempTable(
    "_unknown_tasks", (("tenant", "VARCHAR"), ("product", "VARCHAR"), ("task_id", "VARCHAR")),
    statement="unknown_tasks")
"""The tasks of the period's requests with no outcome decided up to the period end, once per (tenant,
product) of their requests (read by :data:`TASK_COUNTS`). As many rows as such tasks."""

METERS = TempTable(
    "_met",
    (("day", "DATE"), ("tenant", "VARCHAR"), ("product", "VARCHAR"), ("meter", "VARCHAR"), ("sku", "VARCHAR"),
     ("unit", "VARCHAR"), ("region", "VARCHAR"), ("work", "VARCHAR"), ("epoch", "INTEGER"),
     ("quantity", "DECIMAL(38,9)"), ("booked_at", "TIMESTAMPTZ")),
    statement="meter_groups", small=True)
"""The period's meters with their work tag and price span, by group."""

TASK_COUNTS = TempTable(
    "_task_counts",
    (("tenant", "VARCHAR"), ("product", "VARCHAR"), ("criteria", "VARCHAR"), ("success", "BIGINT"),
     ("failure", "BIGINT"), ("unknown", "BIGINT")),
    statement="task_counts", small=True)
"""Tasks by (tenant, product): decided in the period by criteria (from :data:`TASK_STATE`), and unknown
(criteria NULL, from :data:`UNKNOWN_TASKS`)."""

GPU_GROUPS = TempTable(
    "_gpu_groups",
    (("pool", "VARCHAR"), ("hour", "BIGINT"), ("day", "DATE"), ("tenant", "VARCHAR"), ("product", "VARCHAR"),
     ("model", "VARCHAR"), ("work", "VARCHAR"), ("w", "HUGEINT"), ("n", "HUGEINT"), ("active", "HUGEINT"),
     ("no_latency", "HUGEINT")),
    statement="GPU_GROUPS", small=True)
"""Per pool, hour and (tenant, product, model, work): the integer weight, requests and active tokens."""

COEFF = TempTable(
    "_coeff", (("pool", "VARCHAR"), ("hour", "BIGINT"), ("c", "HUGEINT"), ("d", "HUGEINT"), ("slack", "HUGEINT")),
    statement=None)
"""One row per pool-hour with weight: C_serve in micro-units, the denominator, the slack weight (``gpu.py``)."""

GPU_SPLIT = TempTable(
    "_gpu_split",
    (("is_slack", "INTEGER"), ("slack_hour", "BIGINT"), ("day", "DATE"), ("tenant", "VARCHAR"), ("product", "VARCHAR"),
     ("model", "VARCHAR"), ("pool", "VARCHAR"), ("work", "VARCHAR"), ("part", "HUGEINT"), ("active", "HUGEINT")),
    statement="SPLIT", small=True)
"""The largest-remainder split of each pool-hour's C_serve: request parts by line group, and the slack's part."""

#: Every temp table of an allocation, in the order the steps make them.
TABLES: tuple[TempTable, ...] = (TASK_KEYS, TASK_STATE, FAILED_TASKS, POOL_WEIGHTS, GROUPS, UNKNOWN_TASKS, METERS,
                                 TASK_COUNTS, GPU_GROUPS, COEFF, GPU_SPLIT)
