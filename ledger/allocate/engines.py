"""Where the allocation's per-request SQL runs: the :class:`Engine` protocol, and DuckDB's engine.

An engine runs the statements of :mod:`ledger.allocate.sql` (rendered for its dialect) over the
facts ``requests``, ``meters`` and ``outcomes``, and leaves the small results the rest of the
allocation reads (request groups, meter groups, task counts, GPU groups and split parts) as temp
tables of the same names in the DuckDB connection the allocation was given, so pricing, idle,
charges, conservation and the run are one code whatever the engine. :class:`DuckEngine` runs
everything on that connection itself; ``ledger.allocate.spark.SparkEngine`` runs on Apache Spark
and copies the small results back.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import duckdb
import pyarrow as pa

from .sql import render

#: DuckDB types a loaded table may have, as Arrow types (HUGEINT goes as text, then is cast).
_ARROW = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "HUGEINT": pa.string()}


class Engine(Protocol):
    """Runs the heavy SQL. `name` is ``duckdb`` or ``spark`` (the dialect the SQL is rendered for)."""

    name: str

    def create(self, con: duckdb.DuckDBPyConnection, table: str, sql: str, *, small: bool = False) -> None:
        """Make relation `table` of the SELECT `sql` (DuckDB's dialect) in the engine. With `small`,
        it is also a temp table of `con` (the rest of the allocation reads it there)."""

    def load(self, con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[tuple[str, str]],
             rows: Sequence[tuple]) -> None:
        """Make relation `table` in the engine from Python rows; `columns` are (name, DuckDB type),
        the types VARCHAR, BIGINT or HUGEINT (Python ints)."""

    def release(self) -> None:
        """Drop what the engine keeps between statements (called when an allocation ends)."""


class DuckEngine:
    """The engine that runs on the allocation's own DuckDB connection: a relation is a temp table
    of it, under its memory limit and spilling into the ledger home (``ledger.duck``)."""

    name = "duckdb"

    def create(self, con: duckdb.DuckDBPyConnection, table: str, sql: str, *, small: bool = False) -> None:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {render(sql, self.name)}")

    def load(self, con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[tuple[str, str]],
             rows: Sequence[tuple]) -> None:
        arrow = pa.table({name: pa.array([str(r[i]) if kind == "HUGEINT" else r[i] for r in rows], _ARROW[kind])
                          for i, (name, kind) in enumerate(columns)})
        view = f"_{table}_arrow"
        con.register(view, arrow)
        try:
            casts = ", ".join(f"CAST({name} AS {kind}) AS {name}" for name, kind in columns)
            con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT {casts} FROM {view}")
        finally:
            con.unregister(view)

    def release(self) -> None:
        return None


DUCKDB = DuckEngine()
