"""Proof of parity: the allocation's per-request work on Apache Spark (PySpark in local mode) gives the
DuckDB engine's allocation line for line, `==` on every amount: the demo month through
`ledger allocate --engine spark`, and hypothesis-generated ledgers (the generators of
test_allocate_properties) under every idle policy and weight basis. One SparkSession serves the module.

Skipped only where PySpark or Java is missing (CI installs both: .ci/run)."""
from __future__ import annotations

import json
import shutil
import tempfile
import warnings
from datetime import datetime, timezone
from decimal import Decimal as D
from pathlib import Path

import pytest

with warnings.catch_warnings():  # PySpark 4 on pandas 3 warns as it is imported; the engine uses no pandas
    warnings.simplefilter("ignore", FutureWarning)
    pytest.importorskip("pyspark.sql")
if not shutil.which("java"):
    pytest.skip("Spark needs Java (Debian: openjdk-17-jre-headless)", allow_module_level=True)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_allocate_properties import (END, PRICES, START, build, charges, gpu_requests, intervals,  # noqa: E402
                                      meters, outcome_lists, provider_requests)
from test_allocate_support import facts_con  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from ledger import config, runs, store  # noqa: E402
from ledger.allocate import AllocationError, Policy, Weights, allocate  # noqa: E402
from ledger.allocate.engines import DUCKDB  # noqa: E402
from ledger.allocate.spark import (KINDS, SparkEngine, SparkError, fact_urls, facts_frame, session,  # noqa: E402
                                   spark_type)
from ledger.allocate.tables import TempTable  # noqa: E402
from ledger.cli import app  # noqa: E402

pytestmark = pytest.mark.slow
runner = CliRunner()


#: Settings for these tests only, never the ledger's (ledger.allocate.spark.SETTINGS and local_settings stand).
#: The generated ledgers are a few dozen rows, so Spark's time there is its fixed cost per query, not the
#: work: on 2 cores the module's JVM used 137 to 155 s of CPU with these (before C1 only was added below),
#: 186 to 192 s without them (two runs each).
#: None changes what is computed: the parity is of SQL semantics (the same rows, exact decimals, ANSI
#: errors), which Spark keeps whichever plan or evaluation path it takes.
TEST_SETTINGS = {
    # the serial collector: a heap of a few hundred MB needs no concurrent GC threads on two cores;
    # and the JIT's quick compiler only (C1, -XX:TieredStopAtLevel=1): the optimizing one (C2) spends
    # more CPU compiling Spark's code than a module of small queries gets back. The module alone, 6
    # generated ledgers and the demo month: 185 to 129 CPU-seconds, 106 s to 95 s (the demo month
    # itself 1 s slower); in the suite the two workers' CPU is what bounds it
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
    # expressions interpreted, no Java generated and compiled by Janino for every query (Spark's
    # own tests check each expression both ways, for the same result). The demo month below puts
    # Spark's defaults back, so the generated code of a real allocation is run there too
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # one partition a shuffle and no adaptive re-planning: nothing to spread over a few dozen rows
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.ui.enabled": "false",
}
#: The SQL settings above that the demo month sets back to Spark's defaults (the JVM's cannot change).
PLAN_SETTINGS = ("spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode", "spark.sql.adaptive.enabled")


@pytest.fixture(scope="module")
def spark():
    s = session("local[2]", TEST_SETTINGS)
    yield s
    s.stop()


@pytest.fixture
def spark_defaults(spark):
    """The module's session with Spark's own plan and code generation, as ``ledger allocate`` runs it."""
    for key in PLAN_SETTINGS:
        spark.conf.unset(key)
    yield spark
    for key in (*PLAN_SETTINGS, "spark.sql.shuffle.partitions"):  # `ledger allocate` sets partitions by cores
        spark.conf.set(key, TEST_SETTINGS[key])


def spark_allocation(spark, frames: dict, policy: Policy):
    """The allocation of `frames` with the Spark engine over Parquet copies of the per-request facts; the
    DuckDB connection then holds only the fleet and charges, so nothing per request can come from it."""
    con = facts_con(**frames)
    with tempfile.TemporaryDirectory(prefix="ledger-spark-") as tmp:
        urls = {}
        for kind in KINDS:
            path = Path(tmp) / f"{kind}.parquet"
            con.execute(f"COPY {kind} TO '{path}' (FORMAT parquet)")
            con.execute(f"DROP TABLE {kind}")
            urls[kind] = ["file://" + path.as_posix()]
        return allocate(con, start=START, end=END, prices=PRICES, policy=policy, engine=SparkEngine(spark, urls))


def outcome(fn):
    """The allocation, or the problems it was refused with."""
    try:
        return fn()
    except AllocationError as e:
        return ("refused", tuple(e.problems))


def assert_same(a, b) -> None:
    if isinstance(a, tuple) or isinstance(b, tuple):
        assert a == b
        return
    assert [ln.amount for ln in a.lines] == [ln.amount for ln in b.lines]
    assert a.lines == b.lines and a.total == b.total and a.lines_total == b.lines_total
    assert a.flags == b.flags and a.notes == b.notes and a.regions == b.regions
    assert a.usage == b.usage and a.tasks == b.tasks


# latencies (ms) with halves of a microsecond among them, where rounding could differ; ttft a share of it
latencies = st.lists(st.tuples(st.one_of(st.floats(0, 120_000, allow_nan=False),
                                         st.sampled_from([0.0005, 0.0015, 2.5e-3, 1234.5675, 7.0])),
                               st.floats(0, 1)), min_size=1, max_size=6)
PROVIDER_POOL_WEIGHTS = (("p1", Weights(D(1), D("0.1"), D(4))),)
policies = st.one_of(
    st.builds(Policy, idle=st.sampled_from(["separate", "share"]), allow_pool_without_fleet=st.just(("p1", "p2", "p3")),
              weights=st.sampled_from([(), PROVIDER_POOL_WEIGHTS])),
    st.builds(Policy, idle=st.sampled_from(["separate", "share"]), basis=st.just("kv_token_seconds"),
              allow_pool_without_fleet=st.just(("p1", "p2", "p3"))))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(intervals, gpu_requests, provider_requests, meters, charges, outcome_lists, policies, latencies,
       st.booleans())
def test_generated_ledgers_allocate_the_same_on_spark_and_duckdb(spark, fleet, reqs, prov, mets, chs, outs, policy,
                                                                  lat, every_latency):
    frames = build(fleet, reqs, prov, mets, chs, outs)
    r = frames["requests"]
    n = len(r)
    # without every latency, the kv_token_seconds basis refuses the run: the same refusal on both engines
    r["latency_ms"] = [None if (not every_latency and i % 3 == 2) else str(lat[i % len(lat)][0]) for i in range(n)]
    r["ttft_ms"] = [str(lat[i % len(lat)][0] * lat[i % len(lat)][1]) for i in range(n)]
    duck = outcome(lambda: allocate(facts_con(**frames), start=START, end=END, prices=PRICES, policy=policy))
    assert_same(duck, outcome(lambda: spark_allocation(spark, frames, policy)))


def test_the_demo_month_allocates_the_same_on_spark(demo_ledger, ledger_home, spark_defaults):
    # the demo's ledger (conftest: a copy of the session's `ledger demo`, its facts in month partitions)
    docs = {}
    for engine in ("duckdb", "spark"):
        r = runner.invoke(app, ["allocate", "--period", "2026-10", "--engine", engine, "--json"])
        assert r.exit_code == 0, r.output
        docs[engine] = json.loads(r.stdout)
    duck, on_spark = docs["duckdb"], docs["spark"]
    # the summary (total, kinds, categories, tenants, usage, tasks, flags, notes, the inputs' digest) is
    # the same document; only the run's id and time differ
    assert on_spark["tasks"] and on_spark["usage"] and on_spark["flags"]
    assert on_spark["total"] == duck["total"] == "54486.225218"
    assert {k: v for k, v in on_spark.items() if k not in ("run_id", "created_at")} == \
        {k: v for k, v in duck.items() if k not in ("run_id", "created_at")}
    with store.session() as s:
        a, b = runs.run_lines(s, duck["run_id"]), runs.run_lines(s, on_spark["run_id"])
        assert len(a) == duck["lines"] and [ln.amount for ln in a] == [ln.amount for ln in b] and a == b
        # --facts maps every committed file, relative to the home's facts folder, onto the root given
        period = (datetime(2026, 10, 1, tzinfo=timezone.utc), datetime(2026, 11, 1, tzinfo=timezone.utc))
        local = fact_urls(s, config.ledger_home(), None, period)
        remote = fact_urls(s, config.ledger_home(), "s3a://bucket/facts/", period)
    base = "file://" + (ledger_home / "facts").resolve().as_posix() + "/"
    for kind in KINDS:
        assert local[kind] and all(u.startswith(base + kind + "/month=") for u in local[kind])
        assert remote[kind] == ["s3a://bucket/facts/" + u[len(base):] for u in local[kind]]


def test_a_fact_file_spark_cannot_find_is_one_line(ledger_home, spark):
    gone = (ledger_home / "facts" / "requests" / "month=2026-10" / "b-0.parquet").as_posix()
    with pytest.raises(SparkError, match=r"^Spark could not read the requests facts: \[PATH_NOT_FOUND\]"):
        SparkEngine(spark, {"requests": ["file://" + gone]})


def test_a_kind_without_files_is_empty_before_spark_runs_anything(spark):
    """A kind with no fact files (a month without meters) reads as the kind's columns, each of its
    declared type, and no row, in a relation Spark's optimizer knows is empty: a statement over it
    (the meters' LEFT JOIN with the failed tasks) is an empty local relation, with no job to run."""
    from ledger.facts import KINDS as SPECS

    for kind in KINDS:
        frame = facts_frame(spark, kind, [])
        want = [(c.name, spark_type(c.type)) for c in SPECS[kind].columns] + [("booked_at", "TIMESTAMP")]
        got = [(f.name, f.dataType.simpleString().upper()) for f in frame.schema.fields]
        assert [n for n, _ in got] == [n for n, _ in want]
        assert got == [(n, t.upper().replace(" ", "")) for n, t in want]
        assert frame.count() == 0
    facts_frame(spark, "meters", []).createOrReplaceTempView("_no_meters")
    spark.range(3).selectExpr("CAST(id AS STRING) AS task_id").createOrReplaceTempView("_some_failed")
    joined = spark.sql("SELECT m.tenant, count(*) AS n FROM _no_meters m LEFT JOIN _some_failed f "
                       "ON m.task_id = f.task_id GROUP BY m.tenant")
    try:
        plan = joined._jdf.queryExecution().optimizedPlan().toString()
        assert plan.startswith("LocalRelation <empty>"), plan
        assert joined.collect() == []
    finally:
        spark.catalog.dropTempView("_no_meters")
        spark.catalog.dropTempView("_some_failed")


def test_max_by_skips_a_null_value_and_an_overflow_stops_spark(spark):
    """The arg_max fix, run: task t's latest outcome (decided at 3) has no value, so both engines give
    the one before it (decided at 2), never NULL. And a BIGINT sum past 2^63 is an error on Spark (ANSI
    mode), never a wrapped number, where DuckDB sums into HUGEINT exactly."""
    import duckdb

    v = TempTable("v", (("k", "VARCHAR"), ("x", "BIGINT"), ("y", "BIGINT")), statement=None)
    latest = TempTable("_latest", (("k", "VARCHAR"), ("latest", "BIGINT")), statement=None, small=True)
    total = TempTable("_sum", (("s", "HUGEINT"),), statement=None, small=True)
    rows = [("t", 1, 1), ("t", 2, 2), ("t", None, 3), ("u", 5, 1)]
    text = "SELECT k, arg_max(x, y) AS latest FROM v GROUP BY k ORDER BY k"
    con = duckdb.connect()
    for engine in (DUCKDB, SparkEngine(spark, {})):
        engine.load(con, v, rows)
        engine.create(con, latest, text)
        assert con.execute("SELECT * FROM _latest ORDER BY k").fetchall() == [("t", 2), ("u", 5)]
        engine.release()
    big = [("a", 2**62, 1), ("a", 2**62, 2)]
    DUCKDB.load(con, v, big)
    DUCKDB.create(con, total, "SELECT CAST(sum(x) AS HUGEINT) AS s FROM v")
    assert con.execute("SELECT s FROM _sum").fetchone()[0] == 2**63
    engine = SparkEngine(spark, {})
    engine.load(con, v, big)
    with pytest.raises(SparkError, match=r"^Spark failed making _sum: \[ARITHMETIC_OVERFLOW\]"):
        engine.create(con, total, "SELECT CAST(sum(x) AS HUGEINT) AS s FROM v")
    engine.release()


def test_spark_makes_the_state_in_bigint_and_again_in_hugeint_when_it_overflows(spark):
    """Spark computes the per-task state's keys in BIGINT with no bounds read first: a month whose keys
    fit gets its state in BIGINT; one with an outcome decided in the year 9000 but booked in the
    period (its `decided`, about 2^59.6 times 2^4 for the month's ten keys, is past 2^63) stops on
    Spark's overflow and is made again in HUGEINT. Either way the rows are DuckDB's, which reads the
    bounds from the Parquet statistics and computes in the type that fits from the start."""
    from ledger.allocate import sql, tables
    from ledger.allocate.period import make_task_state
    from ledger.allocate.spark import SparkOverflow

    lines = ["task_id,tenant,product,outcome,decided_at,criteria,booked_at"]
    lines += [f"t{i},a,chat,{'failure' if i % 3 == 0 else 'success'},2026-10-0{1 + i % 9}T10:00:00Z,c{i},"
              f"2026-10-0{1 + i % 9}T10:00:00Z" for i in range(10)]
    far = "tz,a,chat,failure,9000-01-01T00:00:00Z,c0,2026-10-15T00:00:00Z"
    copy = TempTable("_state_copy", (("task_id", "VARCHAR"), ("latest", "INTEGER"), ("decided", "INTEGER"),
                                     ("k", "BIGINT")), statement=None, small=True)
    start, end = datetime(2026, 10, 1, tzinfo=timezone.utc), datetime(2026, 11, 1, tzinfo=timezone.utc)
    with tempfile.TemporaryDirectory(prefix="ledger-spark-") as tmp:
        for rows, kind in ((lines, "BIGINT"), ([*lines, far], "HUGEINT")):  # on both engines
            con = facts_con(outcomes="\n".join(rows))
            path = Path(tmp) / f"outcomes-{len(rows)}.parquet"
            con.execute(f"COPY outcomes TO '{path}' (FORMAT parquet)")
            got, used = [], []
            for engine in (DUCKDB, SparkEngine(spark, {"outcomes": ["file://" + path.as_posix()]})):
                engine.create(con, tables.TASK_KEYS, sql.task_keys(start, end))
                used.append(make_task_state(con, engine, start, end))
                engine.create(con, copy, f"SELECT * FROM {tables.TASK_STATE}")
                got.append(con.execute("SELECT * FROM _state_copy ORDER BY task_id").fetchall())
                if engine is not DUCKDB and kind == "HUGEINT":  # the overflow is Spark's own
                    bits = sql.k_bits(con.execute(f"SELECT count(*) FROM {tables.TASK_KEYS}").fetchall()[0][0])
                    with pytest.raises(SparkOverflow, match=r"^Spark failed making _task_state: \[ARITHMETIC"):
                        engine.create(con, tables.TASK_STATE, sql.task_state(start, end, bits, "BIGINT", False))
                engine.release()
            assert used == [kind, kind]
            assert got[0] == got[1]
            assert len(got[0]) == len(rows) - 1
    assert ("tz", None, sql.FAILURE, 0) in got[0]  # decided after the period end: no latest; c0 is k 0


def test_the_latest_outcome_of_a_task_is_the_same_row_on_spark(spark):
    """Ties of decided_at, a row without an outcome, NULL tenant and criteria, instants before 1970: the
    per-task state (packed into HUGEINT, DECIMAL(38,0) on Spark, decoded with ``pmod`` and ``div`` there)
    names the same outcome, tenant, product and criteria on both engines (tests/test_allocate_outcomes.py
    has the rule)."""
    from ledger.allocate import sql, tables

    outcomes = """task_id,tenant,product,outcome,decided_at,criteria
        t1,a,chat,success,2026-10-01T10:00:00Z,ci
        t1,b,chat,failure,2026-10-01T10:00:00Z,ci
        t1,c,chat,success,2026-10-01T10:00:00Z,ci
        t2,a,chat,failure,2026-10-01T10:00:00Z,x
        t2,b,chat,,2026-10-01T11:00:00Z,y
        t3,a,chat,failure,2026-10-01T10:00:00Z,x
        t3,,chat,success,2026-10-01T11:00:00Z,
        t4,a,chat,success,1969-12-31T23:59:59.999999Z,x
        t4,b,chat,failure,1969-12-31T23:59:59.999998Z,x
        t5,a,chat,failure,2026-11-01T00:00:00Z,x
    """
    start, end = datetime(1969, 12, 1, tzinfo=timezone.utc), datetime(2026, 11, 1, tzinfo=timezone.utc)
    copy = TempTable("_state_copy", (("task_id", "VARCHAR"), ("latest", "INTEGER"), ("decided", "INTEGER"),
                                     ("tenant", "VARCHAR"), ("product", "VARCHAR"), ("criteria", "VARCHAR")),
                     statement=None, small=True)
    text = f"""SELECT s.task_id, s.latest, s.decided, k.tenant, k.product, k.criteria
               FROM {tables.TASK_STATE} s LEFT JOIN {tables.TASK_KEYS} k ON s.k = k.k"""
    con = facts_con(outcomes=outcomes)
    with tempfile.TemporaryDirectory(prefix="ledger-spark-") as tmp:
        path = Path(tmp) / "outcomes.parquet"
        con.execute(f"COPY outcomes TO '{path}' (FORMAT parquet)")
        got = []
        # bits: the widest (the packed `decided` beyond BIGINT: decoded as DECIMAL on Spark) and the
        # month's own (within BIGINT: decoded as BIGINT there)
        for bits in (sql.K_BITS, None):
            for engine in (DUCKDB, SparkEngine(spark, {"outcomes": ["file://" + path.as_posix()]})):
                engine.create(con, tables.TASK_KEYS, sql.task_keys(start, end))
                keys = con.execute(f"SELECT count(*) FROM {tables.TASK_KEYS}").fetchall()[0][0]
                engine.create(con, tables.TASK_STATE, sql.task_state(start, end, bits or sql.k_bits(keys)))
                engine.create(con, copy, text)
                got.append(con.execute("SELECT * FROM _state_copy ORDER BY task_id").fetchall())
                engine.release()
    assert got[0] == got[1] == got[2] == got[3] == [
        ("t1", sql.FAILURE, sql.FAILURE, "b", "chat", "ci"),       # a tie: the failure
        ("t2", sql.FAILURE, sql.FAILURE, "a", "chat", "x"),        # 11:00 has no outcome
        ("t3", sql.SUCCESS, sql.SUCCESS, None, "chat", None),      # the latest row as it is
        ("t4", sql.SUCCESS, sql.SUCCESS, "a", "chat", "x")]        # before 1970: a negative key
    # t5, decided at the period end, is in neither: no row
