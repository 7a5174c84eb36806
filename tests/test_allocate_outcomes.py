"""Which outcome of a task counts (ledger/allocate/sql.py `task_state`): its latest, as a whole row.

A task's latest outcome decides whether its requests and meters are failed work (the latest decided
up to the period end) and how it counts in unit economics (the latest booked in the period: success
or failure, under that outcome's tenant, product and criteria). The per-task state keeps each as one
integer (``max`` of the instant, then the outcome code, then the number of the (tenant, product,
criteria)), so:

- of outcomes decided at the same instant, the failure counts, then the greatest (tenant, product,
  criteria) in text order. Ingest refuses two outcomes of one task at one instant
  (``(task_id, decided_at)`` is the outcomes' key); facts written by other tools may have them,
  and the rule makes the answer one (before, ``arg_max`` took whichever row it met first);
- an outcome row whose outcome is NULL is no outcome; the latest outcome's tenant, product and
  criteria are its own, NULL too (ingest requires all four). Before, each column took its latest
  non-NULL value apart, which could mix two rows.

The demo month and the synthetic months of bench/allocate.py have neither, and allocate the same
(docs/scale.md).
"""
from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal as D

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_allocate_support import facts_con, index, run
from test_allocate_usage import DAY, PROVIDER, TOKENS, by_tenant
from typer.testing import CliRunner

from ledger import store
from ledger.allocate import period, sql, tables
from ledger.allocate.engines import DUCKDB
from ledger.cli import app

HEADER = "task_id,tenant,product,outcome,decided_at,criteria\n"
# one request of task t1 at 09:00: 1M input tokens of gpt-5 at 1.25 USD per 1M = 1.25 USD
ONE_REQUEST = PROVIDER + "q1,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,t1,1000000,0,0,0,ok\n"


def allocation(outcomes: str):
    return run(index(TOKENS), *DAY, requests=ONE_REQUEST, outcomes=HEADER + outcomes)


def tasks(a) -> list[tuple]:
    return [(x.tenant, x.product, x.success, x.failure, x.unknown, x.criteria) for x in a.tasks]


@pytest.mark.parametrize("rows", [
    "t1,a,chat,success,2026-10-01T10:00:00Z,tests-pass\nt1,a,chat,failure,2026-10-01T10:00:00Z,tests-pass\n",
    "t1,a,chat,failure,2026-10-01T10:00:00Z,tests-pass\nt1,a,chat,success,2026-10-01T10:00:00Z,tests-pass\n",
], ids=["success first", "failure first"])
def test_of_two_outcomes_decided_at_one_instant_the_failure_counts_in_either_order(rows):
    a = allocation(rows)
    # q1 is failed work: 1.25 USD; the task counts as one failure under (a, chat)
    assert by_tenant(a) == {("a", "failed"): D("1.25")}
    assert tasks(a) == [("a", "chat", 0, 1, 0, ("tests-pass",))]


@pytest.mark.parametrize("rows", [
    "t1,a,chat,success,2026-10-01T10:00:00Z,tests-pass\nt1,b,chat,success,2026-10-01T10:00:00Z,tests-pass\n",
    "t1,b,chat,success,2026-10-01T10:00:00Z,tests-pass\nt1,a,chat,success,2026-10-01T10:00:00Z,tests-pass\n",
], ids=["a first", "b first"])
def test_a_tie_of_one_outcome_goes_to_the_greatest_tenant_product_and_criteria(rows):
    a = allocation(rows)
    # the request is tenant a's (its line); the task's success counts under (b, chat), the greater tenant
    assert by_tenant(a) == {("a", "succeeded"): D("1.25")}
    assert tasks(a) == [("b", "chat", 1, 0, 0, ("tests-pass",))]


def test_a_tie_of_criteria_goes_to_the_greatest_in_text_order():
    a = allocation("t1,a,chat,success,2026-10-01T10:00:00Z,review\nt1,a,chat,success,2026-10-01T10:00:00Z,ci\n")
    assert tasks(a) == [("a", "chat", 1, 0, 0, ("review",))]


def test_an_outcome_one_microsecond_later_is_the_latest():
    a = allocation("t1,a,chat,success,2026-10-01T10:00:00.000001Z,tests-pass\n"
                   "t1,a,chat,failure,2026-10-01T10:00:00Z,tests-pass\n")
    assert by_tenant(a) == {("a", "succeeded"): D("1.25")}
    assert tasks(a) == [("a", "chat", 1, 0, 0, ("tests-pass",))]


def test_a_row_without_an_outcome_is_none_and_the_latest_is_one_whole_row():
    # 11:00 has no outcome: the latest outcome is the failure of 10:00, with its own tenant and criteria
    # (before: failure, but tenant b and criteria 'other' of the row without an outcome)
    a = allocation("t1,a,chat,failure,2026-10-01T10:00:00Z,tests-pass\nt1,b,chat,,2026-10-01T11:00:00Z,other\n")
    assert by_tenant(a) == {("a", "failed"): D("1.25")}
    assert tasks(a) == [("a", "chat", 0, 1, 0, ("tests-pass",))]


def test_the_latest_outcomes_null_tenant_and_criteria_are_taken_as_they_are():
    # (before: tenant a and criteria tests-pass, the latest non-NULL value of each column)
    a = allocation("t1,a,chat,failure,2026-10-01T10:00:00Z,tests-pass\nt1,,chat,success,2026-10-01T11:00:00Z,\n")
    assert by_tenant(a) == {("a", "succeeded"): D("1.25")}
    assert tasks(a) == [(None, "chat", 1, 0, 0, ())]


def test_a_null_tenant_sorts_before_the_others():
    requests = ONE_REQUEST + "q2,2026-10-01T09:00:00Z,a,chat,gpt-5,openai,t2,1000000,0,0,0,ok\n"
    a = run(index(TOKENS), *DAY, requests=requests,
            outcomes=HEADER + "t1,,chat,success,2026-10-01T11:00:00Z,ci\n")
    # t2 has no outcome: unknown under (a, chat), from its request
    assert tasks(a) == [(None, "chat", 1, 0, 0, ("ci",)), ("a", "chat", 0, 0, 1, ())]


def state(outcomes: str, start: str, end: str) -> list[tuple]:
    """The per-task state of `outcomes` for the period, with each task's (tenant, product, criteria):
    the same in every way the allocation may compute it (keys in HUGEINT with 56 bits for `k`, and
    with as few bits as the keys need, in BIGINT where they fit, matched with ``=`` where no key
    holds a NULL; ``period._prepare`` chooses), or the test fails."""
    con = facts_con(outcomes=HEADER + outcomes)
    s, e = (datetime.fromisoformat(x).replace(tzinfo=timezone.utc) for x in (start, end))
    DUCKDB.create(con, tables.TASK_KEYS, sql.task_keys(s, e))
    bits, nulls = period._key_shape(con)
    ways = [sql.task_state(s, e), sql.task_state(s, e, bits), sql.task_state(s, e, bits, null_keys=nulls)]
    if period._key_kind(con, DUCKDB, s, bits) == "BIGINT":
        ways.append(sql.task_state(s, e, bits, "BIGINT", nulls))
    seen = []
    for way in ways:
        DUCKDB.create(con, tables.TASK_STATE, way)
        seen.append(con.execute(f"""SELECT s.task_id, s.latest, s.decided, k.tenant, k.product, k.criteria
                                    FROM {tables.TASK_STATE} s LEFT JOIN {tables.TASK_KEYS} k USING (k)
                                    ORDER BY s.task_id""").fetchall())
    assert all(x == seen[0] for x in seen), seen
    return seen[0]


def test_the_state_decodes_instants_before_1970_and_after_the_period():
    # keys of instants before 1970 are negative: decoded rounding down, they give the same outcome and k
    rows = ("t1,a,chat,failure,1969-12-31T23:59:59.999999Z,x\nt1,b,chat,success,1969-12-31T23:59:59.999998Z,y\n"
            "t2,c,chat,success,1969-12-31T12:00:00Z,z\n"
            "t3,a,chat,success,1970-01-01T00:00:00Z,x\n"       # decided at the end: not in the period, not latest
            "t4,a,chat,failure,1900-01-01T00:00:00Z,x\n")      # decided before the period: latest, not decided in it
    assert state(rows, "1969-12-31T00:00:00", "1970-01-01T00:00:00") == [
        ("t1", sql.FAILURE, sql.FAILURE, "a", "chat", "x"),
        ("t2", sql.SUCCESS, sql.SUCCESS, "c", "chat", "z"),
        ("t4", sql.FAILURE, None, None, None, None)]


def test_keys_go_in_bigint_only_where_every_outcomes_fits_and_bigint_would_stop_otherwise():
    import duckdb

    # 600 (tenant, product, criteria) booked in October: k takes 10 bits. An outcome decided in 1900 is
    # (1900 - 2026) years = about -3.98e15 us from the period start, a key of about -1.59e16, which
    # shifted by 10 bits (-1.63e19) is below BIGINT's -9.22e18: HUGEINT. Without it, BIGINT.
    booked = "".join(f"k{i},a,chat,success,2026-10-02T00:00:00Z,c{i}\n" for i in range(600))
    old = "t0,a,chat,failure,1900-01-01T00:00:00Z,x\n"
    s, e = datetime(2026, 10, 1, tzinfo=timezone.utc), datetime(2026, 11, 1, tzinfo=timezone.utc)
    for rows, kind in ((booked, "BIGINT"), (booked + old, "HUGEINT")):
        con = facts_con(outcomes=HEADER + rows)
        DUCKDB.create(con, tables.TASK_KEYS, sql.task_keys(s, e))
        bits, _ = period._key_shape(con)
        assert bits == 10 and period._key_kind(con, DUCKDB, s, bits) == kind
    # had the keys gone in BIGINT, DuckDB would have stopped with an overflow, not wrapped
    with pytest.raises(duckdb.OutOfRangeException):
        DUCKDB.create(con, tables.TASK_STATE, sql.task_state(s, e, bits, "BIGINT", False))
    got = state(booked + old, "2026-10-01T00:00:00", "2026-11-01T00:00:00")
    assert got[0] == ("k0", sql.SUCCESS, sql.SUCCESS, "a", "chat", "c0")
    assert got[-1] == ("t0", sql.FAILURE, None, None, None, None) and len(got) == 601


INSTANTS = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(9998, 12, 31))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["t1", "t2", "t3"]), st.sampled_from(["", "a", "b"]),
                          st.sampled_from(["success", "failure", "skipped", ""]),
                          st.one_of(INSTANTS, st.datetimes(min_value=datetime(2026, 9, 30),
                                                           max_value=datetime(2026, 11, 2))),
                          st.sampled_from(["", "x", "y"])),
                min_size=1, max_size=12, unique_by=lambda r: (r[0], r[3])))
def test_property_every_way_of_keeping_the_state_gives_the_same_state(rows):
    # outcomes of any years the ingest takes, NULL tenants and criteria, no outcome: `state` runs every
    # way the allocation may compute the state (HUGEINT or BIGINT, IS NOT DISTINCT FROM or =) and
    # fails unless all agree
    text = "".join(f"{t},{tenant},chat,{o},{at.isoformat()}Z,{c}\n" for t, tenant, o, at, c in rows)
    state(text, "2026-10-01T00:00:00", "2026-11-01T00:00:00")


def test_another_outcome_text_is_an_outcome_that_counts_as_neither():
    # code 3: the task has an outcome (not unknown), neither success nor failure, and wins a tie
    rows = "t1,a,chat,failure,2026-10-01T10:00:00Z,x\nt1,a,chat,skipped,2026-10-01T10:00:00Z,x\n"
    assert state(rows, "2026-10-01T00:00:00", "2026-10-02T00:00:00") == [("t1", 3, 3, "a", "chat", "x")]
    a = allocation(rows)
    assert by_tenant(a) == {("a", "succeeded"): D("1.25")} and tasks(a) == [("a", "chat", 0, 0, 0, ("x",))]


# ---- what ingest lets in ---------------------------------------------------------------------------

runner = CliRunner()


def ingest(tmp_path, name: str, rows: str):
    f = tmp_path / name
    f.write_text(HEADER + rows, encoding="utf-8")
    return f, runner.invoke(app, ["ingest", "outcomes", str(f)])


@pytest.mark.store
@pytest.mark.parametrize("row,column", [
    ("t1,,chat,success,2026-10-01T10:00:00Z,ci\n", "tenant"),
    ("t1,acme,,success,2026-10-01T10:00:00Z,ci\n", "product"),
    ("t1,acme,chat,,2026-10-01T10:00:00Z,ci\n", "outcome"),
    ("t1,acme,chat,success,2026-10-01T10:00:00Z,\n", "criteria"),
])
def test_ingest_requires_every_column_of_an_outcome(ledger_home, tmp_path, row, column):
    with store.session() as s:
        store.add_dim(s, kind="tenant", name="acme")
        store.add_dim(s, kind="product", name="chat")
    f, r = ingest(tmp_path, "o.csv", row)
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [f"{f}:2: {column}: required value is missing"]


@pytest.mark.store
def test_ingest_refuses_two_outcomes_of_one_task_at_one_instant(ledger_home, tmp_path):
    with store.session() as s:
        store.add_dim(s, kind="tenant", name="acme")
        store.add_dim(s, kind="product", name="chat")
    f, r = ingest(tmp_path, "tie.csv", "t1,acme,chat,success,2026-10-01T10:00:00Z,ci\n"
                                       "t1,acme,chat,failure,2026-10-01T10:00:00Z,ci\n")
    assert r.exit_code == 1 and "a key must not change" in r.output, r.output
    f, r = ingest(tmp_path, "one.csv", "t1,acme,chat,success,2026-10-01T10:00:00Z,ci\n")
    assert r.exit_code == 0, r.output
    f, r = ingest(tmp_path, "later.csv", "t1,acme,chat,failure,2026-10-01T10:00:00Z,ci\n")
    assert r.exit_code == 1 and "a key must not change" in r.output, r.output
