"""Apache Spark as the allocation's engine: the per-request SQL of :mod:`.sql` as Spark SQL over the fact files.

``ledger allocate --engine spark`` (docs/scale.md). :class:`SparkEngine` reads the committed fact
files of ``requests``, ``meters`` and ``outcomes`` by path (local files, or the same files under
another root such as ``s3a://bucket/facts``: :func:`fact_urls`), runs the statements of
:mod:`.sql` rendered for Spark (each relation kept by Spark while the allocation runs), and copies
the small results (outcome keys, request and meter groups, task counts) into the allocation's
DuckDB connection as temp tables of the same names, cast to the columns and types :mod:`.tables`
declares for them, through Arrow. Fleet, charges, pricing, the GPU groups and split, idle,
conservation and the run are the shared code on that connection.

The session is in UTC with ANSI mode on (an integer or decimal overflow is an error, never a wrap
or a NULL). PySpark is the optional extra ``ledger[spark]`` and needs Java 17 or later; nothing
here imports it before a Spark engine is asked for.
"""
from __future__ import annotations

import os
import re
import shutil
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb

from .. import config, facts
from ..errors import LedgerError
from ..hints import Hint, Hinted
from ..vocab import Dialect, EngineName
from .engines import Overflow
from .sql import render
from .tables import TempTable

INSTALL = "pip install 'ledger[spark]'"
#: The library's words for this engine (`ledger allocate --engine spark`).
SPARK_ENGINE = Hint("engine_spark", "the Spark engine")
#: The fact kinds the per-request SQL reads (fleet and charges stay on the DuckDB connection).
KINDS = ("requests", "meters", "outcomes")
#: Spark settings every session of the ledger gets (ANSI: overflow errors; UTC: the facts' instants).
#: The third lets adaptive execution coalesce the partitions of a relation the engine keeps (a group-by's
#: few thousand rows would stay in spark.sql.shuffle.partitions, 200, pieces: a task each, each time read).
SETTINGS = {"spark.sql.session.timeZone": "UTC", "spark.sql.ansi.enabled": "true",
            "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true"}
#: Relations Spark may hash whole in local mode rather than shuffle both sides of a join (bytes, as
#: Spark estimates them): the failed tasks of a month and, up to some 10M tasks, the tasks with an
#: outcome, so that the month's requests are read once and never shuffled for the two joins.
LOCAL_BROADCAST_BYTES = 256 << 20


def local_settings(master: str | None) -> dict[str, str]:
    """The settings of a session in local mode (``local``, ``local[N]``, ``local[*]``; none for a
    cluster, whose own settings stand), measured in docs/scale.md:

    - ``spark.sql.shuffle.partitions``: 2 per core, not Spark's 200 (made for a cluster: on two
      cores, 200 tasks per shuffle cost more in scheduling than the work they share);
    - ``spark.sql.autoBroadcastJoinThreshold``: :data:`LOCAL_BROADCAST_BYTES` (Spark's 10 MB makes
      both of the allocation's joins sort-merge joins that shuffle every request): in one JVM a
      broadcast is a hash table built once, with no copy over a network."""
    m = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", master or "")
    if not m:
        return {}
    cores = int(m.group(1)) if m.group(1) and m.group(1) != "*" else (os.cpu_count() or 1)
    if m.group(1) is None:
        cores = 1  # `local` is one thread
    return {"spark.sql.shuffle.partitions": str(max(2, 2 * cores)),
            "spark.sql.autoBroadcastJoinThreshold": str(LOCAL_BROADCAST_BYTES)}


class SparkError(LedgerError):
    """PySpark or Java is missing, the session cannot start, or Spark refused to read or run: one
    line saying what (Spark's own message is many lines of JVM stack: its first line is the reason)."""


class SparkOverflow(SparkError, Overflow):
    """Spark stopped a statement on an integer or decimal overflow (ANSI mode: ``ARITHMETIC_OVERFLOW``,
    ``NUMERIC_VALUE_OUT_OF_RANGE``); the message is Spark's first line, as for any :class:`SparkError`."""


@contextmanager
def _quiet():
    """PySpark 4.x warns, on its first Arrow conversion, that it does not yet fully support pandas 3: the
    engine's conversions are Arrow only (no pandas), so that warning is not for it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
        yield


def _overflowed(e: BaseException) -> bool:
    """Whether `e` is Spark's error for an integer or decimal overflow (its ``ArithmeticException``;
    under ANSI mode the only way Spark reports one)."""
    from pyspark.errors import ArithmeticException

    return isinstance(e, ArithmeticException)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def require() -> None:
    """Raise :class:`SparkError` unless PySpark can be imported and Java can be found."""
    try:
        with _quiet():
            import pyspark.sql  # noqa: F401
    except ImportError:
        raise SparkError(Hinted(SPARK_ENGINE, f" needs PySpark, which is not installed: {INSTALL}")) from None
    java_home = os.environ.get("JAVA_HOME")
    if not shutil.which("java") and not (java_home and (Path(java_home) / "bin" / "java").exists()):
        raise SparkError(Hinted(SPARK_ENGINE, " needs Java 17 or later, and there is no java on PATH or in "
                                              "JAVA_HOME (Debian: apt-get install openjdk-17-jre-headless)"))


def session(master: str | None = None, conf: Mapping[str, str] | None = None):
    """A SparkSession for the allocation: `master` (default ``local[*]``, or under spark-submit its
    ``--master``), with :data:`SETTINGS` and `conf`. An existing session is reused, its settings set."""
    require()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("ledger allocate")
    if master or not os.environ.get("PYSPARK_GATEWAY_PORT"):  # that variable: started by spark-submit
        master = master or "local[*]"
        builder = builder.master(master)
    tuned = local_settings(master)  # none under spark-submit without a master: its settings stand
    settings = {**SETTINGS, "spark.ui.showConsoleProgress": "false", **tuned, **(conf or {})}
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        with _quiet():
            spark = builder.getOrCreate()
    except Exception as e:  # py4j and the JVM say why in many lines
        raise SparkError(f"the Spark session (master {master or 'local[*]'}) could not start: {_first_line(e)}") from e
    for key, value in {**SETTINGS, **{k: settings[k] for k in tuned}}.items():
        spark.conf.set(key, value)
    return spark


def fact_urls(db, home: Path, root: str | None = None,
              period: facts.Period | None = None) -> dict[str, list[str]]:
    """``{kind: [url, ...]}``: the committed fact files of :data:`KINDS` the DB lists (of the months
    a `period` reads), as ``file://`` URLs, or with `root` (``s3a://bucket/facts``) each file's path
    relative to ``<home>/facts`` under that root."""
    base = (Path(home) / "facts").resolve()
    out: dict[str, list[str]] = {}
    for kind in KINDS:
        files = [Path(f).resolve() for f in facts.committed_files(db, kind, home, period=period)]
        if root is None:
            out[kind] = ["file://" + f.as_posix() for f in files]  # as Hadoop reads it: `=` not escaped
        else:
            out[kind] = [root.rstrip("/") + "/" + f.relative_to(base).as_posix() for f in files]
    return out


def engine_for(db, *, master: str | None = None, root: str | None = None, period: facts.Period | None = None,
               home: Path | None = None) -> SparkEngine:
    """The Spark engine of ``ledger allocate --engine spark``: a :func:`session` on `master`, over the
    committed fact files of the ledger DB session `db` (:func:`fact_urls`, under `root` if given)."""
    home = home or config.ledger_home()
    return SparkEngine(session(master), fact_urls(db, home, root, period))


def spark_type(duck_type: str) -> str:
    """A facts column's DuckDB type in Spark SQL (TIMESTAMPTZ is Spark's TIMESTAMP, in the session's UTC)."""
    from sqlglot import exp

    return exp.DataType.build(duck_type, dialect=Dialect.DUCKDB.value).sql(dialect=Dialect.SPARK.value)


def facts_frame(spark, kind: str, urls: Sequence[str]):
    """The facts of `kind` in `urls` (Parquet) as a DataFrame with the columns and types of
    :data:`ledger.facts.KINDS` and ``booked_at``.

    As :func:`ledger.facts.files_sql` does, a column that a file lacks (written before the column
    existed) reads as its default. Spark fills a column missing from some files with NULL, and
    NULL becomes the default: ingest writes the default, never NULL, in such a column (``0``,
    ``'standard'``), so the two reads agree. Files without ``booked_at`` (written by other tools)
    are booked at the kind's dating column. Partition folders (``month=...``) add no column."""
    spec = facts.KINDS[kind]
    types = [(c.name, spark_type(c.type), c.default) for c in spec.columns]
    if not urls:
        # no rows, as a statement Spark's optimizer sees is empty (an empty local relation), so that a
        # statement over it is empty before it runs: an empty DataFrame made from a Python list is an
        # RDD that adaptive execution found empty only by running a job (the meters of a month without
        # any: 1.85 s of the 10M bench's allocation, docs/scale.md)
        cols = ", ".join(f"CAST(NULL AS {t}) AS `{n}`" for n, t, _ in types)
        return spark.sql(f"SELECT {cols}, CAST(NULL AS TIMESTAMP) AS booked_at WHERE false")
    raw = (spark.read.option("mergeSchema", "true").option("recursiveFileLookup", "true")
           .parquet(*urls))
    have = set(raw.columns)
    exprs = []
    for name, t, default in types:
        if name not in have:
            exprs.append(f"CAST({default} AS {t}) AS `{name}`")
        elif default == "NULL":
            exprs.append(f"CAST(`{name}` AS {t}) AS `{name}`")
        else:
            exprs.append(f"coalesce(CAST(`{name}` AS {t}), CAST({default} AS {t})) AS `{name}`")
    booked = "booked_at" if "booked_at" in have else spec.dated_by[0]
    exprs.append(f"CAST(`{booked}` AS TIMESTAMP) AS booked_at")
    return raw.selectExpr(*exprs)


class SparkEngine:
    """The per-request SQL on Spark, over the fact files `urls` (``{kind: [url, ...]}``, :func:`fact_urls`).

    Each relation made is persisted and a temp view of the session until :meth:`release`; the
    small ones are copied into the DuckDB connection as temp tables of the columns and types their
    :class:`~.tables.TempTable` declares (the types the DuckDB engine gives them: Spark's
    DECIMAL(38,0) as HUGEINT, its TIMESTAMP as TIMESTAMPTZ)."""

    name = EngineName.SPARK

    def __init__(self, spark, urls: Mapping[str, Sequence[str]]):
        self.spark = spark
        self._kept: list[tuple[str, object]] = []
        for kind in KINDS:
            try:
                facts_frame(spark, kind, urls.get(kind, [])).createOrReplaceTempView(kind)
            except Exception as e:  # a file Spark cannot find or read
                raise SparkError(f"Spark could not read the {kind} facts: {_first_line(e)}") from e

    def create(self, con: duckdb.DuckDBPyConnection, table: TempTable, sql: str) -> None:
        frame = None
        try:
            frame = self.spark.sql(render(sql, self.name)).persist()
            if table.small:
                to_duckdb(con, table, frame)
            else:
                # made now, once: left to its first reader's job (persist is lazy), the per-task state
                # and the failed tasks were computed inside the request groups' job, and the 10M
                # bench's allocation took 42.8 s against 34.6 s (docs/scale.md)
                frame.count()
        except Exception as e:  # an overflow under ANSI mode, a file gone: Spark's first line says which
            if frame is not None:
                with suppress(Exception):  # a session gone: the error to report is the one above
                    frame.unpersist()
            error = SparkOverflow if _overflowed(e) else SparkError
            raise error(f"Spark failed making {table}: {_first_line(e)}") from e
        # a view of the session once made: a relation that failed leaves none behind (nor its cache)
        frame.createOrReplaceTempView(table.name)
        self._kept.append((table.name, frame))

    def create_in_parts(self, con: duckdb.DuckDBPyConnection, table: TempTable, keys: str,
                        statement: Callable[[str | None, str | None], str]) -> None:
        """One part: Spark's joins are already cut into partitions by its shuffle."""
        self.create(con, table, statement(None, None))

    def load(self, con: duckdb.DuckDBPyConnection, table: TempTable, rows: Sequence[tuple]) -> None:
        from decimal import Decimal

        ddl = ", ".join(f"`{n}` {spark_type('DECIMAL(38,0)' if t == 'HUGEINT' else t)}" for n, t in table.columns)
        hugeint = [t == "HUGEINT" for _, t in table.columns]
        data = [tuple(Decimal(v) if h and v is not None else v for v, h in zip(r, hugeint)) for r in rows]
        with _quiet():
            frame = self.spark.createDataFrame(data, ddl)
        frame.createOrReplaceTempView(table.name)
        self._kept.append((table.name, frame))

    def release(self) -> None:
        for table, frame in reversed(self._kept):
            frame.unpersist()
            self.spark.catalog.dropTempView(table)
        self._kept.clear()

    def close(self) -> None:
        """Release, and drop the facts views."""
        self.release()
        for kind in KINDS:
            self.spark.catalog.dropTempView(kind)


def to_duckdb(con: duckdb.DuckDBPyConnection, table: TempTable, frame) -> None:
    """Copy a (small) Spark DataFrame into `con` as temp table `table`, through Arrow, each column
    cast to the DuckDB type `table` declares (Spark's DECIMAL(38,0) to HUGEINT, its TIMESTAMP, in
    the session's UTC, to TIMESTAMPTZ, a BIGINT sum that DuckDB makes HUGEINT to HUGEINT)."""
    with _quiet():
        arrow = frame.toArrow()
    if tuple(arrow.schema.names) != table.column_names:
        raise SparkError(f"{table.name} has the columns {', '.join(arrow.schema.names)}, not those declared in "
                         f"ledger/allocate/tables.py: {', '.join(table.column_names)}")
    casts = ", ".join(f'CAST("{name}" AS {kind}) AS "{name}"' for name, kind in table.columns)
    view = f"_{table.name}_spark"
    con.register(view, arrow)
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table.name} AS SELECT {casts} FROM {view}")
    finally:
        con.unregister(view)

