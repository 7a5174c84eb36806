"""Unit-economics reports and runs: cost per successful task undefined with its reason, every
renderer states its provenance, runs round-trip exactly through the ledger DB and stay immutable."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
from decimal import Decimal as D

import pytest
from rich.console import Console
from sqlmodel import select
from test_allocate_gpu import FLEET, GPU_BOOK
from test_allocate_support import facts_con, index, run, utc

from ledger import runs, store
from ledger.allocate import Policy, allocate
from ledger.models import AllocationLine
from ledger.reports import (ALL_IN_DEFINITION, NO_SUCCESS, OWN_DEFINITION, lines_frame, load_report, run_data_of,
                            run_data_of_stored, summary, tenants_as_csv, tenants_as_table, unit_economics,
                            unit_economics_as_csv, unit_economics_as_json, unit_economics_as_table)

DAY = ("2026-10-01T00:00:00Z", "2026-10-02T00:00:00Z")
# Hour 10 of the p1 fleet (C_serve 7.20, K 7,200): a 1,800 tokens in two requests of task x1 and
# one of x2; b 3,600 tokens on task y1. Hour 11: a 9,000 tokens (over capacity), task x3.
REQUESTS = """
    request_id,occurred_at,tenant,product,model,pool,task_id,input_tokens,output_tokens,status
    q1,2026-10-01T10:05:00Z,a,chat,llama,p1,x1,500,400,ok
    q2,2026-10-01T10:06:00Z,a,chat,llama,p1,x2,500,400,error
    q3,2026-10-01T10:59:59Z,b,search,llama,p1,y1,3000,600,ok
    q4,2026-10-01T11:30:00Z,a,code,llama,p1,x3,6000,3000,ok
"""
OUTCOMES = """
    task_id,tenant,product,outcome,decided_at,criteria
    x1,a,chat,success,2026-10-01T12:00:00Z,tests-pass
    x2,a,chat,success,2026-10-01T12:00:00Z,tests-pass
    x3,a,code,failure,2026-10-01T12:00:00Z,user-accepted
    y1,b,search,failure,2026-10-01T12:00:00Z,user-accepted
"""


@pytest.fixture
def alloc():
    return run(index(GPU_BOOK), *DAY, fleet=FLEET, requests=REQUESTS, outcomes=OUTCOMES)


def test_unit_economics_by_tenant_worked(alloc):
    # hour 10: r = 0.001: a 0.90 (q1) + 0.90 (q2, failed: status error), b 3.60 (failed: y1 failure)
    # hour 11: a 7.20 (failed: x3 failure); hour 12 all slack; reserve 7.20
    rep = unit_economics(run_data_of(alloc, run_id="r1"), by="tenant")
    a, b = rep.rows
    assert (a.key, a.cost, a.failed_work, a.requests, a.active_tokens, a.failed_requests) == \
        ("a", D("9.00"), D("8.10"), 3, 10800, 2)
    assert a.tasks == {"success": 2, "failure": 1, "unknown": 0}
    assert a.cost_per_successful_task == D("4.50")          # 9.00 / 2
    assert a.success_rate == D("0.6667")                    # 2 / 3
    assert a.failed_work_share == D("0.9000")               # 8.10 / 9.00
    assert a.cost_per_1m_active_tokens == D("833.333333")   # 9.00 / 0.0108
    assert rep.share_of_gpu(a) == D("0.3125")               # 9.00 / 28.80 (all GPU cost, idle included)
    assert rep.criteria == ("tests-pass", "user-accepted")
    assert rep.unattributed == {"idle_slack": D("9.00"), "idle_reserve": D("7.20"), "unallocated": D(0)}
    assert sum((r.cost for r in rep.rows), D(0)) + sum(rep.unattributed.values(), D(0)) == alloc.total


def test_zero_successful_tasks_is_undefined_with_its_reason(alloc):
    rep = unit_economics(run_data_of(alloc, run_id="r1"), by="tenant")
    b = rep.rows[1]
    # b's only task failed: cost per successful task = 3.60 / 0 is undefined, and says why
    assert (b.key, b.cost, b.tasks["success"]) == ("b", D("3.60"), 0)
    assert b.cost_per_successful_task is None and b.success_rate == D(0)
    assert b.reasons == {"cost_per_successful_task": NO_SUCCESS}
    doc = unit_economics_as_json(rep)
    row = doc["rows"][1]
    assert row["cost_per_successful_task"] is None
    assert row["reasons"]["cost_per_successful_task"] == "no task with outcome success was decided in the period"
    rows = list(csv.DictReader(io.StringIO(unit_economics_as_csv(rep))))
    assert rows[1]["cost_per_successful_task"] == ""
    assert rows[1]["undefined_because"] == f"cost_per_successful_task: {NO_SUCCESS}"
    side = {r[0]: r[1:] for r in csv.reader(io.StringIO(tenants_as_csv(rep)))}
    assert side["cost per successful task"] == ["4.500000", f"undefined: {NO_SUCCESS}"]


def test_by_product_and_by_model(alloc):
    data = run_data_of(alloc, run_id="r1")
    by_product = {r.key: r for r in unit_economics(data, by="product").rows}
    assert {k: r.cost for k, r in by_product.items()} == {"chat": D("1.80"), "code": D("7.20"), "search": D("3.60")}
    assert by_product["chat"].tasks == {"success": 2, "failure": 0, "unknown": 0}
    assert by_product["code"].criteria == ("user-accepted",)
    by_model = unit_economics(data, by="model")
    (llama,) = by_model.rows
    assert (llama.key, llama.cost, llama.active_tokens, llama.tasks) == ("llama", D("12.60"), 14400, None)
    assert llama.cost_per_1m_active_tokens == D("875.000000")  # 12.60 / 0.0144
    assert by_model.share_of_gpu(llama) == D("0.4375")        # 12.60 / 28.80
    doc = unit_economics_as_json(by_model)
    assert doc["rows"][0] == {"model": "llama", "cost": "12.600000", "gpu_cost": "12.600000",
                              "provider_tokens_cost": "0.000000", "active_tokens": 14400, "requests": 4,
                              "cost_per_1m_active_tokens": "875.000000", "share_of_gpu": "0.4375", "reasons": {}}


def test_every_renderer_states_period_run_books_currency_and_criteria(alloc):
    rep = unit_economics(run_data_of(alloc, run_id="0123456789abcdef"), by="tenant")
    doc = unit_economics_as_json(rep)
    assert doc["period"] == {"start": "2026-10-01T00:00:00Z", "end": "2026-10-02T00:00:00Z"}
    assert (doc["run_id"], doc["currency"], doc["price_books"]) == ("0123456789abcdef", "USD", ["gpus@2026-10-01"])
    assert doc["success_criteria"] == ["tests-pass", "user-accepted"] and doc["regions"] == ["us-east-1"]
    for row in csv.DictReader(io.StringIO(unit_economics_as_csv(rep))):
        assert row["regions"] == "us-east-1"
        assert (row["period_start"], row["period_end"], row["run_id"], row["currency"], row["price_books"],
                row["success_criteria"]) == ("2026-10-01T00:00:00Z", "2026-10-02T00:00:00Z", "0123456789abcdef",
                                             "USD", "gpus@2026-10-01", "tests-pass user-accepted")
    for table in (unit_economics_as_table(rep), tenants_as_table(rep)):
        console = Console(width=400, record=True)
        console.print(table)
        text = console.export_text()
        for needle in ("2026-10-01T00:00:00Z to 2026-10-02T00:00:00Z", "run 0123456789ab", "USD", "gpus@2026-10-01",
                       "regions us-east-1",
                       "success criteria: tests-pass, user-accepted"):
            assert needle in text, needle


# ---- the two costs per successful task: all-in (the run) and own cost (a row) --------------------
# The p1 fleet of test_allocate_gpu (serving hours 10-12, C_serve 7.20 an hour, K 7,200 tokens an
# hour; reserve 2 x 3.60 = 7.20), five tasks that all succeed, and a 102.20 charge for the day, even.
# Hour 10 (r = 7.20 / 7,200 = 0.001): a x1 0.90 + x3 0.90, b y1 1.80 + y2 1.80, slack 7.20 - 5.40 = 1.80.
# Hour 11: a x2 9,000 tokens > K: r = 7.20 / 9,000, a 7.20, no slack. Hour 12: all slack, 7.20.
# Charge c1: 102.20 even over a and b: 51.10 each.
# a: 0.90 + 0.90 + 7.20 + 51.10 = 60.10, 3 successes; b: 1.80 + 1.80 + 51.10 = 54.70, 2 successes.
# Run total: 60.10 + 54.70 + idle slack (1.80 + 7.20) 9.00 + idle reserve 7.20 = 131.00.
# all-in: 131.000000 / 5 = 26.200000
# own:    a 60.10 / 3 = 20.033333 (20.0333...), b 54.70 / 2 = 27.350000
TWO_FIGURES = {
    "requests": """
        request_id,occurred_at,tenant,product,model,pool,task_id,input_tokens,output_tokens,status
        q1,2026-10-01T10:05:00Z,a,chat,llama,p1,x1,500,400,ok
        q2,2026-10-01T10:10:00Z,a,chat,llama,p1,x3,500,400,ok
        q3,2026-10-01T10:20:00Z,b,search,llama,p1,y1,1000,800,ok
        q4,2026-10-01T10:59:59Z,b,search,llama,p1,y2,1000,800,ok
        q5,2026-10-01T11:30:00Z,a,chat,llama,p1,x2,6000,3000,ok
    """,
    "outcomes": """
        task_id,tenant,product,outcome,decided_at,criteria
        x1,a,chat,success,2026-10-01T12:00:00Z,tests-pass
        x2,a,chat,success,2026-10-01T12:00:00Z,tests-pass
        x3,a,chat,success,2026-10-01T12:00:00Z,tests-pass
        y1,b,search,success,2026-10-01T12:00:00Z,user-accepted
        y2,b,search,success,2026-10-01T12:00:00Z,user-accepted
    """,
    "charges": """
        charge_id,period_start,period_end,category,description,amount,currency,allocate
        c1,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,observability,Grafana,102.20,USD,even
    """,
}
ALL_IN = "cost_per_successful_task_all_in"


@pytest.fixture
def two_figures():
    return run(index(GPU_BOOK), *DAY, fleet=FLEET, **TWO_FIGURES)


def test_all_in_and_own_cost_per_successful_task_worked(two_figures):
    rep = unit_economics(run_data_of(two_figures, run_id="r2"), by="tenant")
    a, b = rep.rows
    assert (rep.total, rep.successful_tasks) == (D("131.00"), 5)
    assert rep.unattributed == {"idle_slack": D("9.00"), "idle_reserve": D("7.20"), "unallocated": D(0)}
    assert rep.cost_per_successful_task_all_in == D("26.200000")   # 131.00 / 5
    assert (a.cost, a.tasks["success"], a.cost_per_successful_task) == (D("60.10"), 3, D("20.033333"))  # 60.10 / 3
    assert (b.cost, b.tasks["success"], b.cost_per_successful_task) == (D("54.70"), 2, D("27.350000"))  # 54.70 / 2
    # the all-in figure is the run's: the same with a tenant filter, and by product or model
    assert unit_economics(run_data_of(two_figures, run_id="r2"), by="tenant",
                          tenants=["b"]).cost_per_successful_task_all_in == D("26.200000")
    for by in ("product", "model"):
        assert unit_economics(run_data_of(two_figures, run_id="r2"), by=by).cost_per_successful_task_all_in == \
            D("26.200000")


@pytest.mark.parametrize("by,tenants", [("tenant", None), ("tenant", ["b"]), ("product", None), ("model", None)])
def test_json_carries_both_figures_with_definitions(two_figures, by, tenants):
    doc = unit_economics_as_json(unit_economics(run_data_of(two_figures, run_id="r2"), by=by, tenants=tenants))
    assert doc[ALL_IN] == "26.200000"                         # 131.000000 / 5, run-wide whatever the filter
    assert (doc[f"{ALL_IN}_numerator"], doc[f"{ALL_IN}_denominator"]) == ("131.000000", 5)
    assert D(doc[f"{ALL_IN}_numerator"]) / doc[f"{ALL_IN}_denominator"] == D(doc[ALL_IN])
    assert doc["definitions"] == {ALL_IN: ALL_IN_DEFINITION, "cost_per_successful_task": OWN_DEFINITION}
    assert doc["reasons"] == {}
    if by == "tenant":
        own = {r["tenant"]: r["cost_per_successful_task"] for r in doc["rows"]}
        assert own == ({"a": "20.033333", "b": "27.350000"} if tenants is None else {"b": "27.350000"})


def test_allocate_summary_carries_the_all_in_figure_at_the_top(two_figures):
    doc = summary(two_figures, run_id="r2")
    assert doc["total"] == "131.000000"
    assert (doc[ALL_IN], doc[f"{ALL_IN}_numerator"], doc[f"{ALL_IN}_denominator"]) == ("26.200000", "131.000000", 5)
    assert doc["definitions"][ALL_IN] == ALL_IN_DEFINITION and doc["reasons"] == {}
    assert [t["cost_per_successful_task"] for t in doc["tenants"]] == ["20.033333", "27.350000"]
    assert doc["definitions"]["cost_per_successful_task"] == OWN_DEFINITION


def test_csv_and_tables_name_both_figures(two_figures):
    rep = unit_economics(run_data_of(two_figures, run_id="r2"), by="tenant")
    rows = list(csv.DictReader(io.StringIO(unit_economics_as_csv(rep))))
    assert [(r["tenant"], r["cost_per_successful_task"]) for r in rows] == [("a", "20.033333"), ("b", "27.350000")]
    for r in rows:  # every row repeats the run's all-in figure, how it is made and both definitions
        assert (r[ALL_IN], r[f"{ALL_IN}_numerator"], r[f"{ALL_IN}_denominator"]) == ("26.200000", "131.000000", "5")
        assert r[f"{ALL_IN}_undefined_because"] == ""
        assert r[f"{ALL_IN}_definition"] == ALL_IN_DEFINITION
        assert r["cost_per_successful_task_definition"] == OWN_DEFINITION
    side = {r[0]: r[1:] for r in csv.reader(io.StringIO(tenants_as_csv(rep)))}
    assert side["cost per successful task"] == ["20.033333", "27.350000"]
    assert side[ALL_IN] == ["26.200000", "26.200000"] and side[f"{ALL_IN}_denominator"] == ["5", "5"]
    for table in (unit_economics_as_table(rep), tenants_as_table(rep)):
        console = Console(width=400, record=True)
        console.print(table)
        text = " ".join(console.export_text().split())
        assert "all-in cost per successful task: 26.20 = run total 131.00 ÷ 5 successful tasks" in text
        assert f"all-in = {ALL_IN_DEFINITION}" in text
        assert f"cost per success (own cost) = {OWN_DEFINITION}" in text
    console = Console(width=400, record=True)
    console.print(unit_economics_as_table(rep))
    text = console.export_text()
    header = next(line for line in text.splitlines() if "┃ tenant" in line)
    assert "cost per success (own cost)" in header
    # one rule per column: 20.033333 and 27.35 are not below 1, so both at 2 decimals
    assert "20.03" in text and "27.35" in text and "20.033333" not in text


def test_all_in_undefined_without_a_success_says_why():
    # the requests of the module, no outcome at all: 28.80 over 0 successful tasks
    alloc = run(index(GPU_BOOK), *DAY, fleet=FLEET, requests=REQUESTS)
    rep = unit_economics(run_data_of(alloc, run_id="r3"), by="tenant")
    assert rep.successful_tasks == 0 and rep.cost_per_successful_task_all_in is None
    doc = unit_economics_as_json(rep)
    assert (doc[ALL_IN], doc[f"{ALL_IN}_numerator"], doc[f"{ALL_IN}_denominator"]) == (None, "28.800000", 0)
    assert doc["reasons"] == {ALL_IN: NO_SUCCESS}
    assert summary(alloc, run_id="r3")["reasons"] == {ALL_IN: NO_SUCCESS}
    row = next(csv.DictReader(io.StringIO(unit_economics_as_csv(rep))))
    assert row[ALL_IN] == "" and row[f"{ALL_IN}_undefined_because"] == NO_SUCCESS
    console = Console(width=400, record=True)
    console.print(unit_economics_as_table(rep))
    assert f"all-in cost per successful task: undefined ({NO_SUCCESS}; run total 28.80)" in \
        " ".join(console.export_text().split())


@pytest.mark.store
def test_run_round_trips_exactly_through_the_ledger_db(ledger_home, alloc):
    with store.session() as s:
        written = runs.write_run(s, allocation=alloc, inputs_digest="d" * 64, code_version="test")
    with store.session() as s:
        stored = runs.load_run(s, start=alloc.start, end=alloc.end)
        n = len(list(s.exec(select(AllocationLine).where(AllocationLine.run_id == written.id))))
    assert stored.run.id == written.id and stored.run.total == alloc.total == D("28.80")
    assert stored.lines == alloc.lines and n == len(alloc.lines)
    assert stored.usage == alloc.usage and stored.tasks == alloc.tasks
    fresh = unit_economics(run_data_of(alloc, run_id=written.id), by="tenant")
    again = unit_economics(run_data_of_stored(stored), by="tenant")
    assert again.rows == fresh.rows and again.run.flags == alloc.flags
    assert json.loads(stored.run.summary)["total"] == "28.800000"
    with store.session() as s:
        loaded = load_report(s, by="tenant", start=alloc.start, end=alloc.end)
    assert loaded.rows == fresh.rows and loaded.run.regions == ("us-east-1",)
    frame = lines_frame(stored.lines)
    assert list(frame.columns[:3]) == ["day", "kind", "tenant"] and sum(frame["amount"]) == D("28.80")


@pytest.mark.store
def test_runs_are_immutable_and_the_newest_is_current(ledger_home, alloc):
    con = facts_con(fleet=FLEET, requests=REQUESTS, outcomes=OUTCOMES)
    shared = allocate(con, start=utc(DAY[0]), end=utc(DAY[1]), prices=index(GPU_BOOK), policy=Policy(idle="share"))
    with store.session() as s:
        first = runs.write_run(s, allocation=alloc, inputs_digest="a" * 64, code_version="test")
    with store.session() as s:
        second = runs.write_run(s, allocation=shared, inputs_digest="b" * 64, code_version="test")
    with store.session() as s:
        assert runs.current_run(s, start=alloc.start, end=alloc.end).id == second.id
        assert [r.id for r in runs.list_runs(s)] == [second.id, first.id]
        assert runs.load_run(s, run_id=first.id).lines == alloc.lines
        with pytest.raises(runs.RunError, match="no allocation run 'nope'"):
            runs.get_run(s, "nope")


@pytest.mark.store
def test_a_run_whose_lines_do_not_sum_to_its_total_is_not_written(ledger_home, alloc):
    line = alloc.lines[0]
    broken = dataclasses.replace(alloc, lines=(dataclasses.replace(line, amount=line.amount + D("0.000001")),)
                                 + alloc.lines[1:])
    with store.session() as s:
        with pytest.raises(runs.RunError, match="conservation failed: lines sum to 28.800001"):
            runs.write_run(s, allocation=broken, inputs_digest="c" * 64, code_version="test")
    with store.session() as s:
        assert runs.list_runs(s) == []
