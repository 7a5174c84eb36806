"""The pass's bad-row flag with gates (``checks.pass_bad``) is the plain OR of the checks
(``rows._any_bad``) row for row: a gate only skips checks that cannot be true (issue 27 item 2).

Each property writes random rows (values from a pool of good, odd and hostile ones per column) as a
file of one format, reads it as the pass does (``opening._read_select``), and compares the two
flags on every row; the values the shortcuts take (a whole number that prints back as its text,
an instant of the common shape) are compared with the regular-expression way they replace.
"""
from __future__ import annotations

import json

import duckdb
import pytest

from ledger.ingest.checks import cast_checks, cast_sql, checks, pass_bad
from ledger.ingest.opening import _read_select
from ledger.ingest.records import OpenFile
from ledger.ingest.rows import _any_bad, row_checks

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

WHOLE = ["0", "7", "12", "012", "+5", "-3", "-0", "12.0", "12.", "1.5", "1e3", "0x10", "1_000", " 7 ", "\t7", " ",
         "abc", "9007199254740992", "9007199254740993", "9223372036854775807", "9223372036854775808", "", None]
INSTANTS = ["2026-10-01T00:00:00Z", "2026-10-01T00:00:00.123456Z", "2026-10-01T00:00:00.1234567891Z",
            "2026-10-01 00:00:00Z", "2026-10-01T00:00:00+02:00", "2026-10-01T00:00:00-14:00",
            "2026-10-01T00:00:00+14:30", "2026-10-01T00:00:00", "2026-02-30T00:00:00Z", "2026-10-01T25:00:00Z",
            "0001-01-01T00:00:00Z", "1899-12-31T23:59:59Z", "9998-12-31T23:59:59Z", "9999-01-01T00:00:00Z",
            "2026-10-01T00:00:éZ", "2026-10-01T00:00:00 Z", "2026-10-01T00:00:00z", " 2026-10-01T00:00:00Z",
            "2026-10-01", "2026-10-01T00:00Z", "2026-10-01T00:00:00.Z", "2026-10-01 00:00:40.610+00:00",
            "2026-10-01 00:00:40+00:00", "2026-10-01T00:00:00.+00:00", "2026-10-01T00:00:00-00:00",
            "2026-13-01 00:00:00+00:00", "2026-10-01 00:00:00+0000", "2026-10-01T00:00:00+00:00 ", "", None]
TEXT = ["r1", "a b", "x\x01y", "é", "", None, "r" * 201]
DOUBLES = ["1.5", "0", "-1", "nan", "inf", "1e300", "", None]

REQUEST_VALUES = {
    "request_id": TEXT, "occurred_at": INSTANTS, "tenant": ["a", "", None], "product": ["chat", None],
    "model": ["m", None], "pool": ["p", "", None], "provider": ["openai", "", None], "task_id": TEXT,
    "input_tokens": WHOLE, "cached_input_tokens": WHOLE, "output_tokens": WHOLE,
    "cache_write_input_tokens": WHOLE + ["100"], "cache_write_1h_input_tokens": WHOLE + ["100"],
    "reasoning_tokens": WHOLE, "status": ["ok", "error", "bad", None], "ttft_ms": DOUBLES,
    "latency_ms": DOUBLES,
    "reported_cost": ["0.5", "1e-13", "-1", "0.002228750000", "0.0022287500001", "1.5e-3", "12", "1.2.3", " 0.5 ",
                      "0.1234567890123", "1E2", ".5", "", None],
}
FLEET_VALUES = {
    "interval_id": TEXT, "pool": ["p", None], "start": INSTANTS, "end": INSTANTS, "device": ["H100", ""],
    "gpus": WHOLE, "region": ["us", None], "purchase_option": ["on_demand"], "role": ["serving", "x", None],
}


def _rows(values: dict[str, list]) -> st.SearchStrategy:
    return st.lists(st.fixed_dictionaries({c: st.sampled_from(v) for c, v in values.items()}), min_size=1,
                    max_size=40)


def _compare(con: duckdb.DuckDBPyConnection, body: str, row_checks: list) -> None:
    gated, plain = pass_bad(row_checks), _any_bad(row_checks)
    differ = con.execute(f"SELECT count(*) FILTER (WHERE ({gated}) IS DISTINCT FROM ({plain})) FROM ({body})"
                         ).fetchone()[0]
    assert differ == 0


def _jsonl(tmp_path, kind: str, rows: list[dict]) -> OpenFile:
    path = tmp_path / f"{kind}.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n" for r in rows),
                    encoding="utf-8")
    columns = tuple(sorted({k for r in rows for k, v in r.items() if v is not None}))
    return OpenFile(path=path, label=str(path), fmt="jsonl", read_path=path, columns=columns, shape="lines")


@pytest.mark.parametrize("kind,values", [("requests", REQUEST_VALUES), ("fleet", FLEET_VALUES)])
def test_property_gated_flag_is_the_plain_flag_on_text(tmp_path_factory, kind, values):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(rows=_rows(values))
    def prop(rows):
        f = _jsonl(tmp_path_factory.mktemp("gates"), kind, rows)
        _compare(con, _read_select(kind, f, None, with_line=False), row_checks(kind, "jsonl"))

    prop()


def test_property_gated_flag_is_the_plain_flag_on_typed_parquet(tmp_path_factory):
    """Parquet columns read in their own type (whole numbers as BIGINT: negative, beyond 2^53; instants
    with a zone), as the careful pass reads them."""
    from ledger.ingest.opening import parquet_direct

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    big = st.sampled_from([0, 5, -1, 2**53, 2**53 + 1, 2**62, None])

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(rows=st.lists(st.tuples(big, big, big, big, st.sampled_from(["2026-10-01 00:00:00+00", "1800-01-01 00:00:00+00", None])),
                         min_size=1, max_size=30))
    def prop(rows):
        path = tmp_path_factory.mktemp("gates") / "r.parquet"
        con.execute("CREATE OR REPLACE TEMP TABLE t (input_tokens BIGINT, cached_input_tokens BIGINT, "
                    "output_tokens BIGINT, cache_write_input_tokens BIGINT, occurred_at TIMESTAMPTZ)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?::TIMESTAMPTZ)", rows)
        con.execute(f"COPY (SELECT 'r' || row_number() OVER () AS request_id, *, 'a' AS tenant, 'c' AS product, "
                    f"'m' AS model, 'p' AS pool, 'ok' AS status FROM t) TO '{path}' (FORMAT parquet)")
        types = dict(con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()[i][:2]
                     for i in range(11))
        f = OpenFile(path=path, label=str(path), fmt="parquet", read_path=path, columns=tuple(types), types=types)
        direct = parquet_direct("requests", types)
        instants = frozenset({"occurred_at"} & direct)
        _compare(con, _read_select("requests", f, None, with_line=False, direct=direct),
                 cast_checks("requests", "parquet") + checks("requests", instants))

    prop()


def test_a_whole_number_reads_as_the_regular_expression_reads_it():
    """The shortcut of ``cast_sql`` (a number that prints back as its text) gives the value and the
    failed flag that WHOLE_RE and the cast give, for every value of the pool."""
    con = duckdb.connect()
    value, failed = cast_sql("requests", "input_tokens", "t")
    re = r"'\s*[+-]?[0-9]+(\.0*)?\s*'"
    old_value = f"(CASE WHEN regexp_full_match(t, {re}) THEN TRY_CAST(t AS BIGINT) END)"
    old_failed = f"((t IS NOT NULL AND trim(t) <> '') AND NOT regexp_full_match(t, {re}))"
    con.execute("CREATE TABLE v (t VARCHAR)")
    con.executemany("INSERT INTO v VALUES (?)", [[x] for x in WHOLE])
    rows = con.execute(f"SELECT t, {value}, {old_value}, {failed}, {old_failed} FROM v").fetchall()
    for t, new, old, new_failed, old_failed_ in rows:
        assert (new, new_failed) == (old, old_failed_), t
