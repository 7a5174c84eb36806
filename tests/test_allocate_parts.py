"""The unknown-task anti-join in parts (ledger/allocate/engines.py `create_in_parts`, sql.py `unknown_tasks`).

Where the hash table of the tasks with an outcome would not fit in DuckDB's memory limit, the
anti-join runs in parts, one after another, each over the tasks of one ``hash(task_id) % parts``
(at 100M requests: two parts, 25 s where one spilling hash table took 35 to 41 s; docs/scale.md).
How many parts: the keys' bytes over the limit, rounded up (hand-worked below). Whatever the
number of parts, the unknown tasks and every number of the allocation are the same: checked on
random months against one part and against a count by hand.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_allocate_support import facts_con, index, utc
from test_allocate_usage import DAY, PROVIDER, TOKENS

from ledger.allocate import allocate, engines, sql, tables
from ledger.allocate.engines import DUCKDB, INLINED, KEY_BYTES, MAX_PARTS, join_parts
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


def test_one_part_has_no_hash_condition_and_parts_cut_both_sides():
    start, end = utc(DAY[0]), utc(DAY[1])
    assert "hash(" not in sql.unknown_tasks(start, end)
    three = sql.unknown_tasks(start, end, 2, 3)
    assert "hash(task_id) % 3 = 2" in three and "hash(r.task_id) % 3 = 2" in three


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
                               lambda part, parts: sql.unknown_tasks(utc(DAY[0]), utc(DAY[1]), part, parts))
        answers.append(sorted(con.execute(f"SELECT * FROM {tables.UNKNOWN_TASKS}").fetchall()))
    assert seen == [(1000, 400 * 20, 64 << 20)]
    assert real(*seen[0]) == 1
    assert answers[0] == answers[1] == [("a", "chat", ids[1000]), ("a", "chat", ids[1001])]
