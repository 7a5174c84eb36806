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

from collections.abc import Sequence
from typing import Protocol

import duckdb


from ..vocab import EngineName
from .sql import render
from .tables import TempTable

#: DuckDB types a loaded table may have, as Arrow types (HUGEINT goes as text, then is cast).
_ARROW = {"VARCHAR": "string", "BIGINT": "int64", "HUGEINT": "string"}


class Engine(Protocol):
    """Runs the heavy SQL. `name` is an :class:`~ledger.vocab.EngineName`, ``duckdb`` or ``spark``
    (the :class:`~ledger.vocab.Dialect` of the same name is the one the SQL is rendered in)."""

    name: EngineName

    def create(self, con: duckdb.DuckDBPyConnection, table: TempTable, sql: str) -> None:
        """Make relation `table` of the SELECT `sql` (DuckDB's dialect: ``table.statement`` of
        :mod:`.sql`) in the engine. A small table is also a temp table of `con`, with the columns
        and types of `table` (the rest of the allocation reads it there)."""

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
