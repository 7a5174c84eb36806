"""The unknown-task anti-join in parts (ledger/allocate/engines.py `create_in_parts`, sql.py `unknown_tasks`).

Where the hash table of the tasks with an outcome would not fit in DuckDB's memory limit, the
anti-join runs in parts, one after another, each over the tasks of one range of ids, cut at the
quantiles of a sample of them (``engines.key_ranges``; at 100M requests: two parts, 25 s where one
spilling hash table took 35 to 41 s; docs/scale.md). How many parts: the keys' bytes over the limit,
rounded up (hand-worked below). Whatever the number of parts and wherever the cuts fall, every key
is in exactly one range, and the unknown tasks and every number of the allocation are the same:
checked on random months against one part and against a count by hand.
"""
from __future__ import annotations

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_allocate_support import facts_con, index, utc
from test_allocate_usage import DAY, PROVIDER, TOKENS

from ledger.allocate import allocate, engines, sql, tables
from ledger.allocate.engines import DUCKDB, INLINED, KEY_BYTES, MAX_PARTS, join_parts, key_ranges
from ledger.duck import limit_of, size_bytes

GIB = 1 << 30


@pytest.mark.parametrize("setting, expected", [
    # as DuckDB writes its limit (current_setting('memory_limit')), one decimal
    ("1.5 GiB", 1_610_612_736),       # 1.5 * 2^30: the ledger's default limit
    ("9.5 MiB", 9_961_472),           # what DuckDB writes for SET memory_limit = '10MB'
    ("2.7 GiB", 2_899_102_924),       # ... for '3GB': int(2.7 * 2^30)
    ("120.5 KiB", 123_392),           # ... for '123456B'
    ("500 bytes", 500),
    ("", None), ("unlimited", None), ("-1", None),
])
def test_size_bytes_reads_duckdbs_text_of_a_size(setting, expected):
    assert size_bytes(setting) == expected


@pytest.mark.parametrize("limit, expected", [("1536MiB", 1_610_612_736), ("10MB", 9_961_472), ("3GB", 2_899_102_924)])
def test_limit_of_reads_what_duckdb_says_of_its_limit(limit, expected):
    con = facts_con()
    con.execute(f"SET memory_limit = '{limit}'")
    assert limit_of(con) == expected


def test_join_parts_hand_worked():
    assert (KEY_BYTES, INLINED) == (56, 12)
    # the 100M bench month: 31,672,296 task ids of nine characters (inlined) under 1.5 GiB:
    # 31,672,296 * 56 = 1,773,648,576 bytes / 1,610,612,736 = 1.10 -> two parts
    assert join_parts(31_672_296, 0, 1_610_612_736) == 2
    # the 10M month: 3,167,230 tasks, 177 MB -> one part
    assert join_parts(3_167_230, 0, 1_610_612_736) == 1
    # UUIDs (36 characters, beyond the 12 inlined): 20M * 56 + 20M * 36 = 1,840,000,000 / 1 GiB = 1.71 -> 2
    assert join_parts(20_000_000, 20_000_000 * 36, GIB) == 2
    # exactly the limit fits in one part; a byte more takes two
    assert join_parts(GIB // 56, 0, (GIB // 56) * 56) == 1
    assert join_parts(GIB // 56, 1, (GIB // 56) * 56) == 2
    assert join_parts(60_000_000, 0, 1_000_000_000) == 4      # 3.36 -> 4
    # 5.6 limits would be 6 parts: at most MAX_PARTS (each part reads the requests again)
    assert MAX_PARTS == 4 and join_parts(100_000_000, 0, 1_000_000_000) == 4
    # no limit (DuckDB's text was no size), and no keys: one part
    assert join_parts(10 ** 9, 0, None) == 1
    assert join_parts(0, 0, GIB) == 1


def test_one_part_has_no_condition_and_a_range_cuts_both_sides():
    start, end = utc(DAY[0]), utc(DAY[1])
    one = sql.unknown_tasks(start, end)
    assert ">=" not in one.replace("booked_at >=", "") and "task_id <" not in one
    middle = sql.unknown_tasks(start, end, "'t3'", "'t7'")
    assert "AND task_id >= 't3' AND task_id < 't7') d" in middle
    assert middle.rstrip().endswith("AND r.task_id >= 't3' AND r.task_id < 't7'")
    # a bound is a literal as it is: an id that spells the column's name is not rewritten
    odd = sql.unknown_tasks(start, end, None, "'r.task_id''s'")
    assert odd.count("'r.task_id''s'") == 2 and "r.r.task_id" not in odd


def test_key_ranges_hand_worked():
    con = duckdb.connect()
    keys = "SELECT * FROM (VALUES ('t0'), ('t1'), ('t2'), ('t3'), ('t4'), ('t5'), ('t6'), ('t7')) v(k)"
    assert key_ranges(con, keys, 1) == [(None, None)]
    # eight keys (all in the sample): quantile_disc at 1/2 is the 4th of them in order, t3 (DuckDB's
    # discrete quantile: the value at index floor(0.5 * (8 - 1)) = 3), so [.., t3) holds t0-t2, [t3, ..) t3-t7
    assert key_ranges(con, keys, 2) == [(None, "'t3'"), ("'t3'", None)]
    # no keys: nothing to cut by, one range
    assert key_ranges(con, "SELECT 'x' WHERE false", 3) == [(None, None)]


key_text = st.text(alphabet=st.sampled_from(["a", "b", "'", "é", "ß", " ", "0", "€"]), max_size=4)


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(key_text, min_size=1, max_size=60, unique=True), parts=st.integers(2, 5))
def test_property_every_key_is_in_exactly_one_range(keys, parts):
    con = duckdb.connect()
    con.execute("CREATE TABLE k(key VARCHAR)")
    con.executemany("INSERT INTO k VALUES (?)", [(x,) for x in keys])
    ranges = key_ranges(con, "SELECT key FROM k", parts)
    assert 1 <= len(ranges) <= parts and ranges[0][0] is None and ranges[-1][1] is None
    conds = [" AND ".join([f"key >= {lo}"] * (lo is not None) + [f"key < {hi}"] * (hi is not None)) or "true"
             for lo, hi in ranges]
    hits = con.execute(f"SELECT key, {' + '.join(f'CAST(({c}) AS INT)' for c in conds)} FROM k").fetchall()
    assert sorted(hits) == sorted((x, 1) for x in keys)


# ---- the same answer in any number of parts ------------------------------------------------------

OUTCOMES = "task_id,tenant,product,outcome,decided_at,criteria\n"

month = st.lists(st.tuples(st.integers(0, 29), st.sampled_from(["a", "b"]), st.sampled_from(["chat", "code"]),
                           st.integers(0, 23)), min_size=1, max_size=40)
decided = st.dictionaries(st.integers(0, 29), st.tuples(st.sampled_from(["success", "failure"]),
                                                        st.sampled_from(["2026-10-01T12:30:00Z",
                                                                         "2026-10-03T00:00:00Z"])), max_size=30)


def facts(requests, outcomes):
    req = PROVIDER + "".join(f"q{i},2026-10-01T{h:02d}:00:00Z,{tenant},{product},gpt-5,openai,t{task},1000,0,10,0,ok\n"
                             for i, (task, tenant, product, h) in enumerate(requests))
    out = OUTCOMES + "".join(f"t{task},a,chat,{o},{at},tests-pass\n" for task, (o, at) in outcomes.items())
    return req, out


def run_in(parts: int, monkeypatch, req: str, out: str):
    """The allocation of the day with the anti-join in `parts` parts (the rule's choice replaced)."""
    with monkeypatch.context() as m:
        m.setattr(engines, "join_parts", lambda keys, heap, limit: parts)
        con = facts_con(requests=req, outcomes=out)
        a = allocate(con, start=utc(DAY[0]), end=utc(DAY[1]), prices=index(TOKENS))
        unknown = sorted(con.execute(f"SELECT * FROM {tables.UNKNOWN_TASKS}").fetchall())
    return a, unknown


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests=month, outcomes=decided, parts=st.integers(2, 5))
def test_any_number_of_parts_gives_the_unknown_tasks_of_one(requests, outcomes, parts, monkeypatch):
    req, out = facts(requests, outcomes)
    one, unknown_one = run_in(1, monkeypatch, req, out)
    many, unknown_many = run_in(parts, monkeypatch, req, out)
    # by hand: a task of the day's requests is unknown when it has no outcome decided before the day's end
    by_hand = sorted({(tenant, product, f"t{task}") for task, tenant, product, _ in requests
                      if task not in outcomes or outcomes[task][1] >= DAY[1]})
    assert unknown_one == unknown_many == by_hand
    assert one.tasks == many.tasks and one.lines == many.lines and one.total == many.total
    assert sum(t.unknown for t in many.tasks) == len(by_hand)


def test_the_engine_gives_the_rule_the_keys_their_text_and_the_connections_limit(monkeypatch):
    """What DuckEngine measures for the rule, on the real connection: the tasks with an outcome up to
    the period end (1,000 here, of which 400 have ids of 20 characters, beyond the 12 DuckDB inlines:
    8,000 bytes of text), and the connection's memory limit (64 MiB). Then the answer with the parts
    the rule gives (one) equals the answer in three parts."""
    seen = []
    real = engines.join_parts
    monkeypatch.setattr(engines, "join_parts", lambda *a: seen.append(a) or real(*a))
    ids = [f"t{i}" if i < 600 else f"task-{i:015d}" for i in range(1002)]
    assert {len(x) for x in ids[600:]} == {20}
    req = PROVIDER + "".join(f"q{i},2026-10-01T09:00:00Z,a,chat,gpt-5,openai,{x},1000,0,10,0,ok\n"
                             for i, x in enumerate(ids))
    # the last two tasks' outcomes are decided after the period: unknown in it
    out = OUTCOMES + "".join(f"{x},a,chat,success,2026-10-{'01T12' if i < 1000 else '05T00'}:00:00Z,tests-pass\n"
                             for i, x in enumerate(ids))
    answers = []
    for forced in (None, 3):
        con = facts_con(requests=req, outcomes=out)
        con.execute("SET memory_limit = '64MiB'")
        DUCKDB.create(con, tables.TASK_KEYS, sql.task_keys(utc(DAY[0]), utc(DAY[1])))
        DUCKDB.create(con, tables.TASK_STATE, sql.task_state(utc(DAY[0]), utc(DAY[1])))
        if forced:
            monkeypatch.setattr(engines, "join_parts", lambda *a: forced)
        DUCKDB.create_in_parts(con, tables.UNKNOWN_TASKS, sql.KNOWN_TASKS,
                               lambda lo, hi: sql.unknown_tasks(utc(DAY[0]), utc(DAY[1]), lo, hi))
        answers.append(sorted(con.execute(f"SELECT * FROM {tables.UNKNOWN_TASKS}").fetchall()))
    assert seen == [(1000, 400 * 20, 64 << 20)]
    assert real(*seen[0]) == 1
    assert answers[0] == answers[1] == [("a", "chat", ids[1000]), ("a", "chat", ids[1001])]
