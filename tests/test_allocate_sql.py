"""The allocation's per-request SQL, one source for DuckDB and Spark (ledger/allocate/sql.py): DuckDB runs
it as written, Spark gets SQLGlot's transpilation with the documented fixes; and the `--engine` options of
`ledger allocate` refuse what cannot run, in one line. (Running the rendered SQL on Spark, and the parity
of the two engines, is tests/test_spark_parity.py.)"""
from __future__ import annotations

import sys
from datetime import datetime, timezone
from decimal import Decimal as D

import pytest
from typer.testing import CliRunner

from test_allocate_gpu import FLEET, GPU_BOOK
from test_allocate_support import facts_con, index, utc
from test_allocate_usage import METER_ROWS, METERS, TOKENS

from ledger.allocate import allocate, sql, tables
from ledger.allocate.records import Policy, Weights
from ledger.cli import app

START = datetime(2026, 10, 1, tzinfo=timezone.utc)
END = datetime(2026, 11, 1, tzinfo=timezone.utc)
SPAN = [datetime(2026, 10, 15, tzinfo=timezone.utc)]


def statements() -> dict[str, str]:
    """Every statement the heavy step runs, with a kv_token_seconds weight (the HUGEINT arithmetic)."""
    weight, join, _ = sql.weight(Policy(basis="kv_token_seconds"))
    pooled, pool_join, _ = sql.weight(Policy(weights=(("p1", Weights(D(1), D("0.1"), D(4))),)))
    return {"task_keys": sql.task_keys(START, END), "task_state": sql.task_state(START, END),
            "failed_tasks": sql.FAILED_TASKS,
            "groups": sql.request_groups(START, END, weight, join, SPAN, "-1"),
            "groups_pooled": sql.request_groups(START, END, pooled, pool_join, [], "-1"),
            "unknown_tasks": sql.unknown_tasks(START, END),
            "meters": sql.meter_groups(START, END, SPAN), "task_counts": sql.task_counts(START, END),
            "gpu_groups": sql.GPU_GROUPS, "split": sql.SPLIT}


#: The statements an engine other than DuckDB runs (the GPU groups and split read only small tables
#: already in the allocation's DuckDB connection, and run there for every engine).
ENGINE_STATEMENTS = ("task_keys", "task_state", "failed_tasks", "groups", "groups_pooled", "unknown_tasks",
                     "meters", "task_counts")


def test_duckdb_runs_the_source_as_written():
    for name, text in statements().items():
        assert sql.render(text, "duckdb") is text, name


def test_spark_gets_its_own_functions_and_types_for_duckdbs():
    spark = {name: sql.render(text, "spark") for name, text in statements().items() if name in ENGINE_STATEMENTS}
    for name, text in spark.items():
        upper = text.upper()
        assert "INT128" not in upper and "HUGEINT" not in upper, name   # no such type in Spark
        assert "EPOCH_US" not in upper and "ARG_MAX" not in upper and "//" not in text, name
    assert "DECIMAL(38, 0)" in spark["groups"] and "UNIX_MICROS(r.booked_at)" in spark["groups"]
    assert "ANTI JOIN" in spark["unknown_tasks"]
    # the instants are UTC text cast to Spark's TIMESTAMP, read in the session's UTC
    assert "CAST('2026-11-01T00:00:00Z' AS TIMESTAMP)" in spark["task_state"]
    # DuckDB's ascending NULLS LAST is said out loud (Spark's default puts NULLs first)
    assert "ORDER BY tenant NULLS LAST, product NULLS LAST, criteria NULLS LAST" in spark["task_keys"]
    # the per-task state's bits: & and >> on DuckDB's HUGEINT, pmod and div on Spark's DECIMAL(38,0)
    assert "& 3" in statements()["task_state"] and "decided >> 56" in statements()["task_state"]
    assert "&" not in spark["task_state"] and ">>" not in spark["task_state"]
    assert "PMOD(CAST((latest) AS BIGINT), 4)" in spark["task_state"] and "DIV 72057594037927936" in spark["task_state"]
    # keys counted from the period's start (small), k in as many bits as the month's keys need
    assert "(CAST(epoch_us(o.decided_at) AS HUGEINT) - 1790812800000000) * 4" in statements()["task_state"]
    assert ">> 3" in sql.task_state(START, END, sql.k_bits(8)) and ">> 56" not in sql.task_state(START, END, 3)


def test_the_bits_of_k_are_as_few_as_the_keys_need():
    assert [sql.k_bits(n) for n in (0, 1, 2, 3, 4, 5, 256, 257)] == [1, 1, 1, 2, 2, 3, 8, 9]
    assert sql.k_bits(1 << 56) == 56
    with pytest.raises(ValueError, match="do not fit in 56 bits"):
        sql.k_bits((1 << 56) + 1)


def test_keys_fit_in_bigint_up_to_its_last_value_and_not_one_microsecond_beyond():
    origin = 1790812800000000  # START in epoch microseconds
    # one bit of k: the highest packed key is ((last - origin) * 4 + 3) * 2 + 1 = 8 (last - origin) + 7,
    # 2^63 - 1 when last - origin = 2^60 - 1; the lowest (first - origin) * 4 * 2 = -2^63 when first - origin = -2^60
    assert sql.fits_bigint(origin - 2**60, origin + 2**60 - 1, START, 1)
    assert not sql.fits_bigint(origin - 2**60, origin + 2**60, START, 1)
    assert not sql.fits_bigint(origin - 2**60 - 1, origin, START, 1)
    assert sql.fits_bigint(None, None, START, 56)  # no outcome
    # 9998-12-31 from a start in 2026: (2.52e17 us * 4 + 3) is 2^59.8: 3 bits of k fit, 4 do not
    last = 253370764800000000 - 1  # 9999-01-01T00:00:00Z less one microsecond
    assert sql.fits_bigint(origin, last, START, 3) and not sql.fits_bigint(origin, last, START, 4)


def test_the_state_in_bigint_and_with_equal_keys_is_the_same_statement_in_those_words():
    wide, narrow = sql.task_state(START, END, 3), sql.task_state(START, END, 3, "BIGINT", False)
    assert narrow == (wide.replace("AS HUGEINT", "AS BIGINT").replace("IS NOT DISTINCT FROM", "="))
    assert "HUGEINT" not in narrow and "IS NOT DISTINCT FROM" not in narrow
    with pytest.raises(ValueError, match="HUGEINT or BIGINT, not 'INTEGER'"):
        sql.task_state(START, END, 3, "INTEGER")


def test_bits_become_pmod_and_div_on_spark_exactly_for_masks_and_constant_shifts():
    # in BIGINT where the value is within 2^62 (Spark's DECIMAL pmod and div are BigDecimal's), else as it is
    assert sql.render("SELECT y & 3 AS b FROM t", "spark") == (
        "SELECT (CASE WHEN y BETWEEN -4611686018427387904 AND 4611686018427387904 THEN PMOD(CAST(y AS BIGINT), 4) "
        "ELSE PMOD(y, 4) END) AS b FROM t")
    assert sql.render("SELECT x >> 4 AS a FROM t", "spark") == (
        "SELECT (CASE WHEN x BETWEEN -4611686018427387904 AND 4611686018427387904 "
        "THEN (CAST(x AS BIGINT) - PMOD(CAST(x AS BIGINT), 16)) DIV 16 ELSE (x - PMOD(x, 16)) DIV 16 END) AS a FROM t")
    # a shift inside a mask is rendered too (the per-task state's code: (decided >> b) & 3)
    inner = ("(CASE WHEN x BETWEEN -4611686018427387904 AND 4611686018427387904 THEN (CAST(x AS BIGINT) - "
             "PMOD(CAST(x AS BIGINT), 16)) DIV 16 ELSE (x - PMOD(x, 16)) DIV 16 END)")
    assert sql.render("SELECT (x >> 4) & 3 AS a FROM t", "spark") == (
        f"SELECT (CASE WHEN ({inner}) BETWEEN -4611686018427387904 AND 4611686018427387904 THEN "
        f"PMOD(CAST(({inner}) AS BIGINT), 4) ELSE PMOD(({inner}), 4) END) AS a FROM t")
    with pytest.raises(ValueError, match=r"x & 5: only a mask 2\^b - 1"):
        sql.render("SELECT x & 5 FROM t", "spark")
    with pytest.raises(ValueError, match="x >> y: only a constant whole number"):
        sql.render("SELECT x >> y FROM t", "spark")


def test_bits_are_exact_for_negative_numbers_on_duckdb_as_pmod_and_div_are():
    import duckdb

    # x & (2^b - 1) and x >> b round down, as pmod(x, 2^b) and (x - pmod(x, 2^b)) div 2^b do on Spark
    rows = duckdb.sql("""SELECT x, x & 3, x >> 2 FROM (VALUES (-5::HUGEINT), (-4), (-1), (0), (5),
                         (-(2::HUGEINT ** 120)::HUGEINT - 1)) v(x)""").fetchall()
    for x, low, high in rows:
        assert (low, high) == (x % 4, x // 4)  # Python's % and // round down


def test_arg_max_becomes_max_by_that_skips_a_null_value_as_duckdb_does():
    assert sql.render("SELECT k, arg_max(x, y) FILTER (WHERE y > 0) AS m FROM t GROUP BY k", "spark") == \
        "SELECT k, MAX_BY(x, y) FILTER(WHERE (y > 0) AND NOT x IS NULL) AS m FROM t GROUP BY k"
    assert sql.render("SELECT arg_max(x, y) AS m FROM t", "spark") == \
        "SELECT MAX_BY(x, y) FILTER(WHERE NOT x IS NULL) AS m FROM t"
    # what is inside is fixed too
    assert sql.render("SELECT arg_max(epoch_us(CAST(x AS HUGEINT)), y) AS m FROM t", "spark") == \
        "SELECT MAX_BY(UNIX_MICROS(CAST(x AS DECIMAL(38, 0))), y) " \
        "FILTER(WHERE NOT UNIX_MICROS(CAST(x AS DECIMAL(38, 0))) IS NULL) AS m FROM t"


def test_hugeint_is_decimal_38_0_on_spark_and_only_there():
    text = "SELECT CAST(sum(a) AS HUGEINT) AS s, CAST(b AS HUGEINT) * c AS p FROM t GROUP BY ALL"
    assert sql.render(text, "spark") == \
        "SELECT CAST(SUM(a) AS DECIMAL(38, 0)) AS s, CAST(b AS DECIMAL(38, 0)) * c AS p FROM t GROUP BY ALL"
    with pytest.raises(ValueError, match="unknown SQL dialect 'trino'"):
        sql.render(text, "trino")


def test_the_weight_of_a_pool_with_weights_joins_its_integer_weights():
    weight, join, rows = sql.weight(Policy(weights=(("p1", Weights(D(1), D("0.1"), D(4))),)))
    # scaled so that every weight is an integer: 10, 1, 40
    assert rows == [("p1", 10, 1, 40)] and join == "LEFT JOIN _pool_weights pw ON r.pool = pw.pool"
    assert sql.weight(Policy()) == ("r.input_tokens + r.output_tokens", "", [])


def test_the_temp_tables_have_the_columns_and_types_the_registry_declares():
    # ledger/allocate/tables.py declares each temp table's columns and DuckDB types (what Spark's copies
    # are cast to): an allocation on the DuckDB engine, with pool weights, GPU and provider requests,
    # meters and outcomes, makes every one of them with exactly those
    requests = """
        request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,output_tokens,status
        q1,2026-10-01T10:05:00Z,a,chat,llama,p1,,t1,1000,800,ok
        q2,2026-10-01T10:06:00Z,b,chat,gpt-5,,openai,t2,1000,200,ok
    """
    outcomes = "task_id,tenant,product,outcome,decided_at,criteria\nt1,a,chat,success,2026-10-01T12:00:00Z,ok\n"
    meters = METER_ROWS + "e1,2026-10-01T01:00:00Z,a,chat,t1,egress,internet,10,GB\n"
    con = facts_con(fleet=FLEET, requests=requests, outcomes=outcomes, meters=meters)
    policy = Policy(weights=(("p1", Weights(D(1), D("0.1"), D(1))),))
    allocate(con, start=utc("2026-10-01T00:00:00Z"), end=utc("2026-10-02T00:00:00Z"),
             prices=index(GPU_BOOK, TOKENS, METERS), policy=policy)
    for table in tables.TABLES:
        made = con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {table})").fetchall()
        declared = [(name, con.execute(f"SELECT typeof(CAST(NULL AS {kind}))").fetchone()[0])
                    for name, kind in table.columns]
        assert made == declared, table.name


runner = CliRunner()


def test_engine_spark_without_pyspark_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # `import pyspark` now raises ImportError
    r = runner.invoke(app, ["allocate", "--period", "2026-10", "--engine", "spark"])
    assert r.exit_code == 1
    assert r.stderr.strip() == "--engine spark needs PySpark, which is not installed: pip install 'ledger[spark]'"


def test_engine_options_are_checked_before_anything_runs():
    r = runner.invoke(app, ["allocate", "--period", "2026-10", "--engine", "trino"])
    assert r.exit_code == 1 and r.stderr.strip() == "--engine 'trino': one of duckdb, spark"
    for extra in (["--spark-master", "spark://head:7077"], ["--facts", "s3a://bucket/facts"]):
        r = runner.invoke(app, ["allocate", "--period", "2026-10", *extra])
        assert r.exit_code == 1 and r.stderr.strip() == "--spark-master and --facts are read only with --engine spark"
