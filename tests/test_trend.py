"""Month over month (`ledger report trend`) and the drill-down of a run (`ledger.drilldown`), worked by hand
on the p1 fleet of tests/test_allocate_gpu.py: 2 H100s serving 10:00-13:00 at 3.60 per GPU-hour (C_serve
7.20 an hour, K 7,200 tokens), 1 GPU of failure reserve 10:00-12:00 (7.20); the run total before any
charge is 3 x 7.20 + 7.20 = 28.80."""
from __future__ import annotations

import csv
import io
from decimal import Decimal as D

import pytest
from test_allocate_gpu import FLEET, GPU_BOOK
from test_allocate_support import index, run, utc

from ledger import drilldown
from ledger.economics import run_data_of, unit_economics
from ledger.reports.trend import month_labels, trend_as_csv, trend_as_json, trend_as_table
from ledger.trend import BEFORE_NO_RUN, BEFORE_UNDEFINED, NOT_BEFORE, MonthData, trend

DAY = ("2026-10-01T00:00:00Z", "2026-10-02T00:00:00Z")
# the month before: hour 10, a 1,800 tokens (x1 ok, x2 error) and b 3,600 (y1); hour 11, a 9,000 (x3, over K)
BEFORE = dict(requests="""
    request_id,occurred_at,tenant,product,model,pool,task_id,input_tokens,output_tokens,status
    q1,2026-10-01T10:05:00Z,a,chat,llama,p1,x1,500,400,ok
    q2,2026-10-01T10:06:00Z,a,chat,llama,p1,x2,500,400,error
    q3,2026-10-01T10:59:59Z,b,search,llama,p1,y1,3000,600,ok
    q4,2026-10-01T11:30:00Z,a,code,llama,p1,x3,6000,3000,ok
""", outcomes="""
    task_id,tenant,product,outcome,decided_at,criteria
    x1,a,chat,success,2026-10-01T12:00:00Z,tests-pass
    x2,a,chat,success,2026-10-01T12:00:00Z,tests-pass
    x3,a,code,failure,2026-10-01T12:00:00Z,user-accepted
    y1,b,search,failure,2026-10-01T12:00:00Z,user-accepted
""")
# the month after: hour 10 only, W = 900 + 1,800 + 3,600 + 900 = 7,200 = K, so r = 0.001 and no slack in it;
# c is new; every task succeeds
AFTER_REQUESTS = """
    request_id,occurred_at,tenant,product,model,pool,task_id,input_tokens,output_tokens,status
    q1,2026-10-01T10:05:00Z,a,chat,llama,p1,x1,500,400,ok
    q6,2026-10-01T10:10:00Z,a,code,llama,p1,x4,1000,800,ok
    q3,2026-10-01T10:59:59Z,b,search,llama,p1,y1,3000,600,ok
    q5,2026-10-01T10:20:00Z,c,chat,llama,p1,z1,500,400,ok
"""
AFTER_OUTCOMES = """
    task_id,tenant,product,outcome,decided_at,criteria
    x1,a,chat,success,2026-10-01T12:00:00Z,tests-pass
    x4,a,code,success,2026-10-01T12:00:00Z,tests-pass
    y1,b,search,success,2026-10-01T12:00:00Z,tests-pass
    z1,c,chat,success,2026-10-01T12:00:00Z,tests-pass
"""
# one charge per rule, each of its own category, all on the day
CHARGES = """
    charge_id,period_start,period_end,category,description,amount,currency,allocate
    c1,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,observability,tracing,30.00,USD,even
    c2,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,engineering_ops,on-call,72.00,USD,by_cost
    c3,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,evaluation,evals,72.00,USD,by_tokens
    c4,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,tools,licence,1.00,USD,tenant:a
"""


def month(label: str, **facts) -> MonthData:
    alloc = run(index(GPU_BOOK), *DAY, fleet=FLEET, **facts)
    return MonthData(label=label, start=utc(DAY[0]), end=utc(DAY[1]), data=run_data_of(alloc, run_id=f"run-{label}"))


@pytest.fixture(scope="module")
def months():
    return (month("2026-09", **BEFORE), month("2026-10", requests=AFTER_REQUESTS, outcomes=AFTER_OUTCOMES),
            month("2026-10c", requests=AFTER_REQUESTS, outcomes=AFTER_OUTCOMES, charges=CHARGES))


def test_trend_by_tenant_worked(months):
    before, after, _ = months
    t = trend([before, after], by="tenant", before=MonthData("2026-08", before.start, before.end, None))
    sep, oct_ = t.months
    # September: a 0.90 + 0.90 + 7.20 = 9.00 over 2 successes = 4.50; b 3.60, no success; run 28.80 / 2 = 14.40
    assert (sep.total, sep.successful_tasks, sep.cost_per_successful_task_all_in) == (D("28.80"), 2, D("14.40"))
    assert {r.key: (r.cost, r.successful_tasks, r.cost_per_successful_task) for r in sep.rows} == {
        "a": (D("9.00"), 2, D("4.50")), "b": (D("3.60"), 0, None)}
    assert sep.changes["total"].reason == BEFORE_NO_RUN and sep.row("a").changes["cost"].reason == BEFORE_NO_RUN
    # October: a 0.90 + 1.80 = 2.70 over 2 = 1.35; b 3.60 / 1; c 0.90 / 1; run 28.80 / 4 = 7.20
    assert (oct_.total, oct_.successful_tasks, oct_.cost_per_successful_task_all_in) == (D("28.80"), 4, D("7.20"))
    a, b, c = oct_.rows
    assert (a.cost, a.cost_per_successful_task, b.cost_per_successful_task, c.cost) == (
        D("2.70"), D("1.35"), D("3.60"), D("0.90"))
    # changes: the total 28.80 -> 28.80 is 0; all-in 14.40 -> 7.20 is -7.20, -0.5000
    assert (oct_.changes["total"].amount, oct_.changes["total"].ratio) == (D(0), D("0.0000"))
    assert (oct_.changes["cost_per_successful_task_all_in"].amount,
            oct_.changes["cost_per_successful_task_all_in"].ratio) == (D("-7.20"), D("-0.5000"))
    # a: 9.00 -> 2.70 is -6.30, -0.7000; 4.50 -> 1.35 is -3.15, -0.7000
    assert (a.changes["cost"].amount, a.changes["cost"].ratio) == (D("-6.30"), D("-0.7000"))
    assert (a.changes["cost_per_successful_task"].amount, a.changes["cost_per_successful_task"].ratio) == (
        D("-3.15"), D("-0.7000"))
    # b: 3.60 -> 3.60; its cost per success was undefined before; c is new
    assert (b.changes["cost"].amount, b.changes["cost"].ratio) == (D(0), D("0.0000"))
    assert b.changes["cost_per_successful_task"].reason == BEFORE_UNDEFINED
    assert c.changes["cost"].reason == NOT_BEFORE and c.changes["cost"].amount is None


def test_a_month_with_no_run_is_said_and_breaks_the_changes_after_it(months):
    before, after, _ = months
    gap = MonthData("2026-09", before.start, before.end, None)
    t = trend([before, gap, after], by="tenant")
    doc = trend_as_json(t)
    assert [m["month"] for m in doc["months"]] == ["2026-09", "2026-09", "2026-10"]
    assert doc["months"][1] == {"month": "2026-09", "period": {"start": "2026-10-01T00:00:00Z",
                                                               "end": "2026-10-02T00:00:00Z"},
                                "status": "no run", "reason": "no allocation run for the month", "run_id": None,
                                "rows": []}
    last = doc["months"][2]
    assert last["change"]["total"] == {"amount": None, "ratio": None, "reason": BEFORE_NO_RUN}
    rows = list(csv.DictReader(io.StringIO(trend_as_csv(t))))
    assert [r["status"] for r in rows] == ["run", "run", "no run", "run", "run", "run"]
    assert rows[2]["undefined_because"] == "no allocation run for the month" and rows[2]["cost"] == ""
    text = io.StringIO()
    from rich.console import Console

    Console(file=text, width=160).print(trend_as_table(t))
    assert "no run" in text.getvalue() and "not in run" in text.getvalue()


def test_month_labels_and_refusals():
    assert month_labels("2026-11", "2027-02") == ["2026-11", "2026-12", "2027-01", "2027-02"]
    with pytest.raises(ValueError, match="after --to"):
        month_labels("2026-10", "2026-08")


def test_shared_charges_spread_over_products_by_their_rules_worked(months):
    data = months[2].data
    # direct: a chat 0.90, code 1.80; b search 3.60; c chat 0.90 (7.20, tokens 2,700 / 3,600 / 900).
    # c1 even 30.00: 10.00 each; c2 by_cost 72.00: a 27.00, b 36.00, c 9.00; c3 by_tokens 72.00: the same;
    # c4 tenant:a 1.00. So a's shared charges are 10 + 27 + 27 + 1 = 65.00 on the row "shared charges".
    shares = {(c.charge_id, c.tenant): c.amount for c in data.charge_shares}
    assert shares[("c1", "a")] == D("10.00") and shares[("c2", "b")] == D("36.00") and shares[("c4", "a")] == D("1")
    plain = unit_economics(data, by="product")
    assert {drilldown.row_label("product", r.key): r.cost for r in plain.rows} == {
        "chat": D("1.80"), "code": D("1.80"), "search": D("3.60"), "shared charges": D("175.00")}
    # spread over a's products: even 10.00 -> 5.00 + 5.00; by_cost 27.00 and tenant:a 1.00 by direct cost
    # 0.90 : 1.80 -> 9.00 + 18.00 and 0.333333 + 0.666667 (the spare micro-unit to the larger remainder);
    # by_tokens 27.00 by 900 : 1,800 -> 9.00 + 18.00.
    #   a chat = 0.90 + 5 + 9 + 0.333333 + 9 = 24.233333; a code = 1.80 + 5 + 18 + 0.666667 + 18 = 43.466667
    #   b search = 3.60 + 10 + 36 + 36 = 85.60; c chat = 0.90 + 10 + 9 + 9 = 28.90
    spread = drilldown.spread_by_product(data)
    assert {r.key: r.cost for r in spread.rows} == {"chat": D("53.133333"), "code": D("43.466667"),
                                                    "search": D("85.60")}
    tenants = sum((r.cost for r in unit_economics(data, by="tenant").rows), D(0))
    assert sum((r.cost for r in spread.rows), D(0)) == tenants == D("182.20")
    assert sum((r.cost for r in spread.rows), D(0)) + sum(spread.unattributed.values(), D(0)) == spread.total \
        == D("203.80")
    cells = drilldown.matrix(data, spread=True)
    assert cells[("a", "chat")] == D("24.233333") and cells[("a", "code")] == D("43.466667")
    # the drill-down of a: its products, models and lines add up to its cost exactly
    a_lines = drilldown.tenant_lines(data, "a")
    assert sum((c.cost for c in drilldown.by_product(a_lines).values()), D(0)) == D("67.70")
    assert sum((c.cost for c in drilldown.by_model(a_lines).values()), D(0)) == D("67.70")
    assert drilldown.by_product(a_lines)["shared charges"].cost == D("65.00")
    assert sum((ln.amount for ln in drilldown.tenant_lines(data, "a", product="shared charges")), D(0)) == D("65.00")
    assert sum((ln.amount for ln in drilldown.tenant_lines(data, "a", category="evaluation")), D(0)) == D("27.00")


def test_a_run_that_did_not_record_its_charges_rules_spreads_them_by_cost(months):
    import dataclasses

    data = dataclasses.replace(months[2].data, charge_shares=())
    spread = drilldown.spread_by_product(data)
    # a's 65.00 by direct cost 0.90 : 1.80: 21.666667 + 43.333333 (the categories split one by one)
    cells = drilldown.matrix(data, spread=True)
    assert cells[("a", "chat")] + cells[("a", "code")] == D("67.70")
    assert sum((r.cost for r in spread.rows), D(0)) == D("182.20")


def test_the_spread_view_says_it_is_the_spread_view(months):
    """Issue 28 item 4: `--spread-shared` says so in its JSON (`view`), its CSV (a column) and its title."""
    from ledger.reports import render

    data = months[2].data
    spread = drilldown.spread_by_product(data)
    assert spread.view == drilldown.SPREAD_VIEW == "shared charges spread"
    assert render.unit_economics_as_json(spread)["view"] == "shared charges spread"
    rows = list(csv.DictReader(io.StringIO(render.unit_economics_as_csv(spread))))
    assert rows and {r["view"] for r in rows} == {"shared charges spread"}
    from rich.console import Console

    con = Console(width=400, record=True)
    con.print(render.unit_economics_as_table(spread))
    assert "unit economics by product (shared charges spread)" in con.export_text()
    plain = unit_economics(data, by="product")  # the report as booked says no view
    assert "view" not in render.unit_economics_as_json(plain)
    assert "view" not in next(csv.DictReader(io.StringIO(render.unit_economics_as_csv(plain))))
