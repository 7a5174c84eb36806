"""Where the allocation's per-request SQL runs: the :class:`Engine` protocol, and DuckDB's engine.

An engine runs the statements of :mod:`ledger.allocate.sql` (rendered for its dialect) over the
facts ``requests``, ``meters`` and ``outcomes``, making the temp tables of
:mod:`ledger.allocate.tables`, and leaves the small ones the rest of the allocation reads (request
groups, meter groups, task counts, GPU groups and split parts) as temp tables of those names and
columns in the DuckDB connection the allocation was given, so pricing, idle, charges, conservation
and the run are one code whatever the engine. :class:`DuckEngine` runs
everything on that connection itself; ``ledger.allocate.spark.SparkEngine`` runs on Apache Spark
and copies the small results back.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

import duckdb


from ..duck import limit_of
from ..errors import LedgerError
from ..sqltext import literal
from ..vocab import EngineName
from .sql import render
from .tables import TempTable

#: DuckDB types a loaded table may have, as Arrow types (HUGEINT goes as text, then is cast).
_ARROW = {"VARCHAR": "string", "BIGINT": "int64", "HUGEINT": "string"}


class Overflow(LedgerError):
    """An engine stopped a statement because an integer or decimal overflowed its type (never a wrapped
    or NULL value: DuckDB stops so, and Spark under ANSI mode). Raised by an engine that is asked to
    compute in a narrow type first (``period.make_task_state``), so that its caller can make the
    relation again in a wider one."""


class Engine(Protocol):
    """Runs the heavy SQL. `name` is an :class:`~ledger.vocab.EngineName`, ``duckdb`` or ``spark``
    (the :class:`~ledger.vocab.Dialect` of the same name is the one the SQL is rendered in)."""

    name: EngineName

    def create(self, con: duckdb.DuckDBPyConnection, table: TempTable, sql: str) -> None:
        """Make relation `table` of the SELECT `sql` (DuckDB's dialect: ``table.statement`` of
        :mod:`.sql`) in the engine. A small table is also a temp table of `con`, with the columns
        and types of `table` (the rest of the allocation reads it there)."""

    def create_in_parts(self, con: duckdb.DuckDBPyConnection, table: TempTable, keys: str,
                        statement: Callable[[str | None, str | None], str]) -> None:
        """Make relation `table` of a statement with a hash join whose build side is the SELECT `keys`
        (of one VARCHAR column): the UNION ALL of ``statement(lo, hi)`` for each part, each joining
        the keys from `lo` (included) to `hi` (excluded) only, SQL literals (None: no bound), run one
        after another. The engine chooses the parts: enough for one part's hash table to fit in its
        memory (one, ``statement(None, None)``, where it does anyway)."""

    def load(self, con: duckdb.DuckDBPyConnection, table: TempTable, rows: Sequence[tuple]) -> None:
        """Make relation `table` in the engine from Python rows of its columns, whose types are
        VARCHAR, BIGINT or HUGEINT (Python ints)."""

    def release(self) -> None:
        """Drop what the engine keeps between statements (called when an allocation ends)."""


class DuckEngine:
    """The engine that runs on the allocation's own DuckDB connection: a relation is a temp table
    of it, under its memory limit and spilling into the ledger home (``ledger.duck``)."""

    name = EngineName.DUCKDB

    def create(self, con: duckdb.DuckDBPyConnection, table: TempTable, sql: str) -> None:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table.name} AS {render(sql, self.name)}")

    def create_in_parts(self, con: duckdb.DuckDBPyConnection, table: TempTable, keys: str,
                        statement: Callable[[str | None, str | None], str]) -> None:
        n, heap = con.execute(f"SELECT count(*), coalesce(sum(CASE WHEN strlen(key) > {INLINED} THEN strlen(key) "
                              f"END), 0) FROM ({keys}) k(key)").fetchone()
        parts = join_parts(int(n), int(heap), limit_of(con))
        for part, (lo, hi) in enumerate(key_ranges(con, keys, parts)):
            into = f"CREATE OR REPLACE TEMP TABLE {table.name} AS" if part == 0 else f"INSERT INTO {table.name}"
            con.execute(f"{into} {render(statement(lo, hi), self.name)}")

    def load(self, con: duckdb.DuckDBPyConnection, table: TempTable, rows: Sequence[tuple]) -> None:
        import pyarrow as pa  # imported when a table is loaded from Python rows, not with the ledger

        arrow = pa.table({name: pa.array([str(r[i]) if kind == "HUGEINT" else r[i] for r in rows], getattr(pa, _ARROW[kind])())
                          for i, (name, kind) in enumerate(table.columns)})
        view = f"_{table.name}_arrow"
        con.register(view, arrow)
        try:
            casts = ", ".join(f"CAST({name} AS {kind}) AS {name}" for name, kind in table.columns)
            con.execute(f"CREATE OR REPLACE TEMP TABLE {table.name} AS SELECT {casts} FROM {view}")
        finally:
            con.unregister(view)

    def release(self) -> None:
        return None


DUCKDB = DuckEngine()

#: Bytes of DuckDB's join hash table per VARCHAR key, its text apart (measured: 31.7M task ids of
#: nine characters took 1.73 GB of buffer memory in one anti-join, 55 bytes each), and the longest
#: text DuckDB keeps inside those bytes (a longer one is stored beside them, its length again).
KEY_BYTES, INLINED = 56, 12

#: At most this many parts: each reads the requests again, and at 100M four parts (36.9 s) were
#: already nearly as slow as one spilling hash table (40.8 s); beyond, spilling costs less.
MAX_PARTS = 4


#: Keys sampled to cut the keys into parts of about the same size (a 1% error at most, nearly always).
SAMPLE_KEYS = 100_000


def key_ranges(con: duckdb.DuckDBPyConnection, keys: str, parts: int) -> list[tuple[str | None, str | None]]:
    """At most `parts` ranges [lo, hi) of the keys of the SELECT `keys` (one VARCHAR column), as SQL
    literals (None: no bound), that cut them into parts of about the same size: the quantiles of a
    seeded reservoir sample of :data:`SAMPLE_KEYS` keys (a cut two quantiles share is made once).
    Any bounds give an exact partition, since every key is in exactly one range: the sample decides
    only the parts' sizes. A range is a comparison where a cut by ``hash(key) % parts`` hashed every
    key of the probe side once more for each part (at 100M requests, two parts: 15.0 and 15.3 s
    against 16.0 and 19.2 s; docs/scale.md). One part, or no sample to cut by: one range, no bounds."""
    if parts <= 1:
        return [(None, None)]
    qs = ", ".join(f"{k / parts!r}" for k in range(1, parts))
    sample = f"USING SAMPLE reservoir({SAMPLE_KEYS} ROWS) REPEATABLE (7)"
    cuts = con.execute(f"SELECT quantile_disc(key, [{qs}]) FROM (SELECT key FROM ({keys}) k(key) "
                       f"WHERE key IS NOT NULL) {sample}").fetchone()[0]
    if not cuts or any(c is None for c in cuts):
        return [(None, None)]
    bounds = []
    for c in cuts:  # in DuckDB's order already (the quantiles of ascending fractions); a repeat cuts nothing
        if not bounds or c != bounds[-1]:
            bounds.append(c)
    edges = [None, *(literal(c) for c in bounds), None]
    return list(zip(edges[:-1], edges[1:]))


def join_parts(keys: int, heap: int, limit: int | None) -> int:
    """How many parts a hash join of `keys` VARCHAR keys (`heap` bytes of text beyond what DuckDB
    inlines) is cut into so that each part's hash table fits in the memory limit `limit` (bytes;
    None: one part). At 100M requests, 31.7M task ids under 1.5 GiB: two parts, the anti-join in
    25 s where one spilling hash table took 35 to 41 s (docs/scale.md); three parts took 30 s (each
    reads the requests again), so no more parts than it takes to fit, and never more than
    :data:`MAX_PARTS` (past which the last part's table spills, as one table would)."""
    if not limit or limit <= 0:
        return 1
    return min(MAX_PARTS, max(1, math.ceil((keys * KEY_BYTES + heap) / limit)))
