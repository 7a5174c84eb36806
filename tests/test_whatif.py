"""What if (issue 30): reprice, reroute and self-host over the allocation's own inputs, worked by hand.

The engine-level tests run :func:`ledger.allocate.allocate` over small facts (``facts_con``) with the
scenario's inputs (``ledger.whatif.inputs``); the store tests run ``ledger whatif`` end to end on a
fresh ledger (SQLite, or PostgreSQL when LEDGER_TEST_DATABASE_URL is set).
"""
from __future__ import annotations

import hashlib
import json
import textwrap
from decimal import Decimal as D

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.allocate import Inputs, allocate
from ledger.whatif import Reroute, SelfHost, Sized, Where, parse_scenario
from ledger.whatif.inputs import HASH_SPACE, fleet_sql, requests_sql
from test_allocate_support import TEST_BOOK, facts_con, index, utc

START, END = utc("2026-10-01T00:00:00Z"), utc("2026-10-01T02:00:00Z")

MINI = """
[book]
name = "mini-book"
version = "2026-10-01"
currency = "USD"
source = "test"
retrieved_at = 2026-10-01

[[price]]
meter = "input_tokens"
sku = "gpt-5-mini"
price = "0.25"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5-mini"

[[price]]
meter = "output_tokens"
sku = "gpt-5-mini"
price = "2.00"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://example.com/gpt-5-mini"
"""

# p1: 1 H100 serving 00:00-02:00 (3.60 an hour, capacity unknown: r = C_serve / W).
FLEET = """
    interval_id,pool,start,end,device,gpus,region,purchase_option,role
    s1,p1,2026-10-01T00:00:00Z,2026-10-01T02:00:00Z,H100,1,us-east-1,on_demand,serving
"""
# q1: a chat gpt-5 1,000,000 in + 100,000 out: 1.25 + 1.00 = 2.25
# q2: b search gpt-5 2,000,000 in: 2.50
# q3: a chat llama on p1 (all of p1's 7.20)
REQUESTS = """
    request_id,occurred_at,tenant,product,model,pool,provider,input_tokens,output_tokens,status
    q1,2026-10-01T00:10:00Z,a,chat,gpt-5,,openai,1000000,100000,ok
    q2,2026-10-01T00:20:00Z,b,search,gpt-5,,openai,2000000,0,ok
    q3,2026-10-01T00:30:00Z,a,chat,llama,p1,,1000,1000,ok
"""


def _alloc(books, inputs=None):
    con = facts_con(fleet=FLEET, requests=REQUESTS)
    return allocate(con, start=START, end=END, prices=books, inputs=inputs)


def _amounts(alloc) -> dict[tuple, D]:
    out: dict[tuple, D] = {}
    for ln in alloc.lines:
        key = (ln.kind, ln.tenant, ln.product, ln.model, ln.pool, ln.provider, ln.category)
        out[key] = out.get(key, D(0)) + ln.amount
    return out


def _change(cls, **kw):
    base = {"label": f"{'reroute' if cls is Reroute else 'self_host'}[1]", "where": Where(model=("gpt-5",))}
    return cls(**{**base, **kw})


# ---- the seam: a scenario that changes nothing is the allocation ---------------------------------

def test_no_change_equals_the_allocation_line_for_line():
    books = index(TEST_BOOK)
    actual = _alloc(books)
    assert actual.total == D("11.95")  # 2.25 + 2.50 + 7.20
    for inputs in (None, Inputs(), Inputs(requests="SELECT * FROM _given_requests", fleet="SELECT * FROM _given_fleet")):
        again = _alloc(books, inputs)
        assert again.lines == actual.lines and again.total == actual.total


def test_the_facts_are_as_they_were_after_a_scenario():
    con = facts_con(fleet=FLEET, requests=REQUESTS)
    allocate(con, start=START, end=END, prices=index(TEST_BOOK, MINI),
             inputs=Inputs(requests=requests_sql((_change(Reroute, model="gpt-5-mini"),))))
    assert con.execute("SELECT list(model ORDER BY request_id) FROM requests").fetchone()[0] == \
        ["gpt-5", "gpt-5", "llama"]
    assert con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '_given%'").fetchone()[0] == 0


# ---- reprice -------------------------------------------------------------------------------------

def test_a_doubled_price_doubles_exactly_those_lines():
    doubled = TEST_BOOK.replace('price = "1.25"', 'price = "2.50"').replace('price = "10"', 'price = "20"') \
                       .replace('price = "0.125"', 'price = "0.25"')
    actual, scenario = _amounts(_alloc(index(TEST_BOOK))), _amounts(_alloc(index(doubled)))
    assert actual.keys() == scenario.keys()
    for key, amount in actual.items():
        assert scenario[key] == (2 * amount if key[-1] == "provider_tokens" else amount), key
    # q1 2.25 -> 4.50, q2 2.50 -> 5.00; p1's 7.20 unchanged
    assert sum(scenario.values()) == D("16.70")


# ---- reroute -------------------------------------------------------------------------------------

def test_a_reroute_prices_the_moved_requests_at_the_new_model():
    books = index(TEST_BOOK, MINI)
    rr = _change(Reroute, where=Where(model=("gpt-5",), product=("chat",)), model="gpt-5-mini")
    res = _amounts(_alloc(books, Inputs(requests=requests_sql((rr,)))))
    # q1 as gpt-5-mini: 1,000,000 x 0.25/1M + 100,000 x 2.00/1M = 0.25 + 0.20 = 0.45; q2 stays gpt-5
    assert res[("tenant", "a", "chat", "gpt-5-mini", None, "openai", "provider_tokens")] == D("0.45")
    assert res[("tenant", "b", "search", "gpt-5", None, "openai", "provider_tokens")] == D("2.50")
    assert sum(res.values()) == D("10.15")  # 0.45 + 2.50 + 7.20


def test_a_reroute_with_a_token_assumption():
    books = index(TEST_BOOK, MINI)
    rr = _change(Reroute, where=Where(tenant=("a",), model=("gpt-5",)), model="gpt-5-mini", provider="azure",
                 input_ratio=D("0.5"), output_ratio=D("2"))
    res = _amounts(_alloc(books, Inputs(requests=requests_sql((rr,)))))
    # q1: 500,000 x 0.25/1M + 200,000 x 2.00/1M = 0.125 + 0.40 = 0.525, now at azure
    assert res[("tenant", "a", "chat", "gpt-5-mini", None, "azure", "provider_tokens")] == D("0.525")


def test_a_share_moves_the_requests_whose_hash_is_below_it():
    rows = "\n".join(f"r{i},2026-10-01T00:{i % 60:02d}:00Z,a,chat,gpt-5,,openai,10,1,ok" for i in range(200))
    con = facts_con(requests="request_id,occurred_at,tenant,product,model,pool,provider,input_tokens,"
                             "output_tokens,status\n" + rows)
    rr = _change(Reroute, model="gpt-5-mini", share=D("0.3"))
    with __import__("ledger.allocate", fromlist=["inputs_in_place"]).inputs_in_place(
            con, Inputs(requests=requests_sql((rr,)))):
        moved = {r for (r,) in con.execute("SELECT request_id FROM requests WHERE model = 'gpt-5-mini'").fetchall()}
    expected = {f"r{i}" for i in range(200)
                if int(hashlib.md5(f"reroute[1]:r{i}".encode()).hexdigest()[:8], 16) < int(D("0.3") * HASH_SPACE)}
    assert moved == expected and 40 < len(moved) < 80


@settings(max_examples=25, deadline=None)
@given(share=st.decimals(min_value=D("0.01"), max_value=D(1), places=2),
       ratio_in=st.decimals(min_value=D("0.1"), max_value=D(3), places=1),
       ratio_out=st.decimals(min_value=D("0.1"), max_value=D(3), places=1))
def test_every_reroute_conserves_money(share, ratio_in, ratio_out):
    rr = _change(Reroute, model="gpt-5-mini", share=share, input_ratio=ratio_in, output_ratio=ratio_out)
    res = _alloc(index(TEST_BOOK, MINI), Inputs(requests=requests_sql((rr,))))
    assert sum((ln.amount for ln in res.lines), D(0)) == res.total


@settings(max_examples=15, deadline=None)
@given(serving=st.integers(min_value=1, max_value=4), reserve=st.integers(min_value=0, max_value=2),
       gpr=st.integers(min_value=1, max_value=2), share=st.decimals(min_value=D("0.01"), max_value=D(1), places=2),
       capacity=st.sampled_from([None, D("1"), D("1000"), D("333.3")]),
       price=st.decimals(min_value=D("0.0001"), max_value=D("99.9999"), places=4))
def test_every_self_host_and_reprice_conserves_money(serving, reserve, gpr, share, capacity, price):
    # a random pool (replicas, reserve, GPUs a replica, capacity, or none: r = C_serve / W) over a random
    # share of the gpt-5 traffic, in books where gpt-5's input and H100's hour take a random price
    book = TEST_BOOK.replace('price = "1.25"', f'price = "{price}"').replace('price = "3.60"', f'price = "{price}"')
    sh = _change(SelfHost, pool="mini", device="H100", region="us-east-1", purchase_option="on_demand",
                 gpus_per_replica=gpr, curve=None, curve_ref="anchors", sla=10.0, share=share)
    z = _sized(serving=serving, reserve=reserve, gpr=gpr)
    if capacity is not None:
        z = __import__("dataclasses").replace(z, capacity_tokens_per_gpu_s=capacity)
    for books, inputs in ((index(book), Inputs(requests=requests_sql((sh,)), fleet=fleet_sql((z,), START, END))),
                          (index(book), None)):
        res = _alloc(books, inputs)
        assert sum((ln.amount for ln in res.lines), D(0)) == res.total


# ---- self-host -----------------------------------------------------------------------------------

def _sized(serving: int, reserve: int, gpr: int = 1) -> Sized:
    return Sized(label="self_host[1]", pool="mini", device="H100", region="us-east-1", purchase_option="on_demand",
                 gpus_per_replica=gpr, requests=2, percentile="max", tpm=1.0, isl=1.0, osl=1.0, sla=10.0, util=0.7,
                 curve="anchors", status="VERDICT", replicas_serving=serving, replicas_reserve=reserve,
                 gpus=(serving + reserve) * gpr, hours=D(2), capacity_tokens_per_gpu_s=D("1000"))


def test_a_self_hosted_pool_costs_its_replicas_gpus_hours_and_price():
    sh = _change(SelfHost, pool="mini", device="H100", region="us-east-1", purchase_option="on_demand",
                 gpus_per_replica=2, curve=None, curve_ref="anchors", sla=10.0)
    z = _sized(serving=2, reserve=1, gpr=2)
    res = _alloc(index(TEST_BOOK), Inputs(requests=requests_sql((sh,)), fleet=fleet_sql((z,), START, END)))
    pool = [ln for ln in res.lines if ln.pool == "mini"]
    # (2 serving + 1 reserve) replicas x 2 GPUs x 2 hours x 3.60 = 43.20: 28.80 serving, 14.40 reserve
    assert sum(ln.amount for ln in pool) == D("43.20") == 3 * 2 * 2 * D("3.60")
    assert sum(ln.amount for ln in pool if ln.kind == "idle_reserve") == D("14.40")
    served = sum(ln.amount for ln in pool if ln.kind == "tenant")
    # capacity 1000 tokens/GPU-s x 4 GPUs x 3600 s = 14.4M tokens an hour; q1 1.1M and q2 2M in hour 0:
    # r = 14.40 / 14.4M per token: q1 1.10, q2 2.00; the rest of the 28.80 is idle slack
    assert served == D("3.10")
    assert sum(ln.amount for ln in pool if ln.kind == "idle_slack") == D("25.70")
    assert not [ln for ln in res.lines if ln.category == "provider_tokens"]
    assert res.total == D("50.40")  # 43.20 + p1's 7.20


def test_a_scenario_file_is_checked_at_its_lines(tmp_path):
    text = textwrap.dedent("""\
        name = "bad"
        colour = "blue"

        [[reroute]]
        where = { model = "gpt-5", team = "x" }
        share = 1.5

        [[self_host]]
        where = { provider = "openai" }
        pool = "mini"
        sla = -1
        """)
    _, problems = parse_scenario(text, "s.toml", base_dir=tmp_path)
    lines = [str(p) for p in problems]
    assert "s.toml:2: colour: unknown field (known: description, name, pricebooks, prices_as_of, reroute, " \
           "self_host)" in lines
    assert any(x.startswith("s.toml:5: reroute[1] where.team: unknown field") for x in lines)
    assert any(x.startswith("s.toml:6: reroute[1] share: 1.5 is not a decimal number > 0 and <= 1") for x in lines)
    assert any(x.startswith("s.toml:4: reroute[1] to: give where the requests go") for x in lines)
    assert any(x.startswith("s.toml:11: self_host[1] sla: -1 is not a number > 0") for x in lines)
    assert any(x.startswith("s.toml:8: self_host[1] device: missing required field") for x in lines)
    assert any(x.startswith("s.toml:8: self_host[1] curve: give the measured curve") for x in lines)


def test_the_issues_example_shape_parses(tmp_path):
    (tmp_path / "books-2026-12").mkdir()
    (tmp_path / "books-2026-12" / "b.toml").write_text(TEST_BOOK, encoding="utf-8")
    (tmp_path / "curves").mkdir()
    (tmp_path / "curves" / "c.csv").write_text("concurrency,tok_s_user,output_tok_s\n1,100,100\n4,60,240\n",
                                               encoding="utf-8")
    text = textwrap.dedent("""\
        name = "self-host gpt-5-mini, new GPU deal"
        pricebooks = "books-2026-12/"

        [[reroute]]
        where = { model = "gpt-5", product = "chat" }
        to = { model = "gpt-5-mini" }

        [[self_host]]
        where = { provider = "openai", model = "gpt-5-mini" }
        pool = "mini-h100"
        device = "H100-SXM-80GB"
        region = "us-east-1"
        purchase_option = "on_demand"
        gpus_per_replica = 1
        curve = "curves/c.csv"
        sla = 40
        percentile = "p95"
        failure_reserve = 1
        """)
    sc, problems = parse_scenario(text, "s.toml", base_dir=tmp_path)
    assert problems == []
    assert [c.label for c in sc.changes] == ["reroute[1]", "self_host[1]"]
    assert sc.reroutes[0].model == "gpt-5-mini" and sc.self_hosts[0].failure_reserve == 1
    assert sc.pricebooks == (str(tmp_path / "books-2026-12/"),)


# ---- end to end: ledger whatif on a fresh ledger ---------------------------------------------------

runner = CliRunner()
FILES = {
    "fleet": """
        interval_id,pool,start,end,device,gpus,region,purchase_option,role
        s1,p1,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,H100,1,us-east-1,on_demand,serving
    """,
    "requests": """
        request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,output_tokens,status
        q1,2026-10-01T00:10:00Z,a,chat,gpt-5,,openai,t1,1000000,100000,ok
        q2,2026-10-02T00:20:00Z,b,search,gpt-5,,openai,t2,2000000,6000,ok
        q3,2026-10-01T00:30:00Z,a,chat,llama,p1,,t3,1000,1000,ok
    """,
    "outcomes": """
        task_id,tenant,product,outcome,decided_at,criteria
        t1,a,chat,success,2026-10-01T13:00:00Z,user-accepted
        t2,b,search,success,2026-10-02T13:00:00Z,user-accepted
    """,
}


def cli(*args: str) -> str:
    r = runner.invoke(app(), list(args))
    assert r.exit_code == 0, (args, r.output)
    return r.stdout


def app():
    from ledger.cli import app as root

    return root


@pytest.fixture
def ledger(ledger_home, tmp_path):
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "test.toml").write_text(TEST_BOOK, encoding="utf-8")
    cli("pricebook", "load", str(tmp_path / "books"))
    for kind, text in FILES.items():
        path = tmp_path / f"{kind}.csv"
        path.write_text(textwrap.dedent(text).strip() + "\n", encoding="utf-8")
        cli("ingest", kind, str(path), "--register-new")
    cli("allocate", "--period", "2026-10")
    return ledger_home


@pytest.mark.store
def test_whatif_end_to_end_no_change_then_self_host(ledger, tmp_path):
    from ledger import store
    from ledger.runs import list_runs, run_lines
    from ledger.whatif.store import list_scenarios, scenario_lines

    (tmp_path / "same.toml").write_text('name = "nothing"\n', encoding="utf-8")
    doc = json.loads(cli("whatif", "--period", "2026-10", "--scenario", str(tmp_path / "same.toml"), "--json"))
    assert doc["kind"] == "scenario" and doc["label"] == "SCENARIO"
    # GPU 744 h x 3.60 = 2,678.40 (a: q3's hour, 3.60; the rest idle slack); q1 2.25; q2 2.50 + 6,000 x 10/1M = 2.56
    assert doc["actual_total"] == doc["scenario_total"] == "2683.210000" and doc["difference"] == "0.000000"
    assert doc["same_inputs"] is True
    assert doc["tenants"][0] == {"tenant": "a", "actual_cost": "5.850000", "scenario_cost": "5.850000",
                                 "difference": "0.000000", "difference_share": "0.0000", "successful_tasks": 1,
                                 "actual_cost_per_successful_task": "5.850000",
                                 "scenario_cost_per_successful_task": "5.850000"}
    with store.session() as s:
        runs = list_runs(s)
        assert len(runs) == 1  # a scenario is never a run
        stored = list_scenarios(s, period="2026-10")
        assert [x.id for x in stored] == [doc["id"]]
        keep = ("day", "kind", "tenant", "product", "model", "pool", "provider", "category", "work", "shared_from",
                "quantity", "unit", "amount")
        assert [tuple(ln[k] for k in keep) for ln in scenario_lines(s, doc["id"])] == \
            [tuple(getattr(ln, k) for k in keep) for ln in run_lines(s, runs[0].id)]

    # Self-host every openai request on "mini" (1 H100 a replica), sized at the max minute: q1's
    # 100,000 output tokens in one minute, TPM 100,000 -> 1,666.67 tok/s; anchors 1:100 give 100 tok/s
    # a replica, x util 0.5 = 50: ceil(33.3) = 34 serving replicas, + 1 failure reserve = 35 GPUs.
    (tmp_path / "host.toml").write_text(textwrap.dedent("""\
        name = "self-host openai"
        [[self_host]]
        where = { provider = "openai" }
        pool = "mini"
        device = "H100"
        region = "us-east-1"
        purchase_option = "on_demand"
        gpus_per_replica = 1
        anchors = "1:100"
        sla = 50
        util = 0.5
        percentile = "max"
        failure_reserve = 1
        """), encoding="utf-8")
    xlsx = tmp_path / "w.xlsx"
    doc = json.loads(cli("whatif", "--period", "2026-10", "--scenario", str(tmp_path / "host.toml"), "--json",
                         "--xlsx", str(xlsx)))
    (z,) = doc["assumptions"]["self_hosted"]
    assert (z["replicas_serving"], z["replicas_reserve"], z["gpus"], z["hours"], z["status"]) == \
        (34, 1, 35, "744", "VERDICT")
    # the pool's GPU cost = 35 GPUs x 744 h x 3.60 = 93,744.00; p1 unchanged 2,678.40; no provider tokens
    assert doc["scenario_total"] == "96422.400000" and doc["by_category"]["provider_tokens"]["scenario"] == "0.000000"
    assert D(doc["difference"]) == D("96422.40") - D("2683.21")
    assert doc["assumptions"]["changes"][0]["requests_moved"] == 2
    import openpyxl

    wb = openpyxl.load_workbook(xlsx)
    assert wb.sheetnames[0] == "SCENARIO vs actual" and wb["SCENARIO vs actual"]["A1"].value.startswith("SCENARIO")
    assert wb["SCENARIO vs actual"]["C4"].value.startswith("=SUMPRODUCT(")
    # the formulas, recalculated by LibreOffice, give the totals as allocated and a zero check row
    from ledger.export.xlsx import recalculate

    ws = openpyxl.load_workbook(recalculate(xlsx, tmp_path / "recalc"), data_only=True)["SCENARIO vs actual"]
    rows = {ws.cell(r, 2).value: r for r in range(4, ws.max_row + 1) if ws.cell(r, 1).value in ("tenant", "total")}
    total = next(r for r in range(4, ws.max_row + 1) if ws.cell(r, 1).value == "total")
    assert round(D(str(ws.cell(total, 3).value)), 6) == D("2683.21")
    assert round(D(str(ws.cell(total, 4).value)), 6) == D("96422.40")
    assert ws.cell(total + 2, 3).value == 0 and ws.cell(total + 2, 4).value == 0
    assert round(D(str(ws.cell(rows["b"], 4).value)), 6) == D(next(t["scenario_cost"] for t in doc["tenants"]
                                                                    if t["tenant"] == "b"))


@pytest.mark.store
def test_whatif_refuses_a_bad_scenario_with_its_lines_and_stores_nothing(ledger, tmp_path):
    from ledger import store
    from ledger.whatif.store import list_scenarios

    (tmp_path / "bad.toml").write_text('name = "x"\n[[reroute]]\nwhere = { model = "gpt-5" }\n', encoding="utf-8")
    r = runner.invoke(app(), ["whatif", "--period", "2026-10", "--scenario", str(tmp_path / "bad.toml")])
    assert r.exit_code == 1
    assert "bad.toml:2: reroute[1] to: give where the requests go" in r.output
    with store.session() as s:
        assert list_scenarios(s) == []


def test_whatif_sits_after_runs_sizing_and_workload_and_before_the_reports_and_exports():
    from test_architecture import _backwards

    order = ["ledger.pricebook", "ledger.store", "ledger.facts", "ledger.workload", "ledger.sizing",
             "ledger.allocate", "ledger.economics", "ledger.runs", "ledger.whatif", "ledger.reports", "ledger.export",
             "ledger.dashboard"]
    assert [b for b in _backwards(order) if "whatif" in b] == []


@pytest.mark.store
def test_whatif_lists_and_shows_the_stored_results_each_saying_scenario(ledger, tmp_path):
    import csv
    import io

    (tmp_path / "same.toml").write_text('name = "nothing"\n', encoding="utf-8")
    first = json.loads(cli("whatif", "--period", "2026-10", "--scenario", str(tmp_path / "same.toml"), "--json"))
    cli("whatif", "--period", "2026-10", "--scenario", str(tmp_path / "same.toml"), "--no-store", "--json")
    second = json.loads(cli("whatif", "--period", "2026-10", "--scenario", str(tmp_path / "same.toml"), "--json"))
    listed = json.loads(cli("whatif", "--list", "--json"))
    assert (listed["kind"], listed["label"]) == ("scenario", "SCENARIO")
    assert [x["id"] for x in listed["scenarios"]] == [second["id"], first["id"]]  # newest first; --no-store stored none
    assert {(x["name"], x["period"], x["actual_total"], x["scenario_total"], x["difference"], x["kind"])
            for x in listed["scenarios"]} == {("nothing", "2026-10", "2683.210000", "2683.210000", "0.000000",
                                              "scenario")}
    assert json.loads(cli("whatif", "--list", "--period", "2026-09", "--json"))["scenarios"] == []
    rows = list(csv.DictReader(io.StringIO(cli("whatif", "--list", "--period", "2026-10", "--csv"))))
    assert [(r["kind"], r["id"]) for r in rows] == [("scenario", second["id"]), ("scenario", first["id"])]
    table = cli("whatif", "--list")
    assert "SCENARIO" in table and first["id"][:12] in table
    assert "SCENARIO" in cli("whatif", "--list", "--period", "2026-09")
    # shown again: the stored document, its CSV rows and a table
    assert json.loads(cli("whatif", "--show", first["id"][:12], "--json")) == first
    shown = list(csv.DictReader(io.StringIO(cli("whatif", "--show", first["id"], "--csv"))))
    assert shown[-1]["by"] == "total" and shown[-1]["scenario_cost"] == "2683.210000"
    assert {r["kind"] for r in shown} == {"scenario"}
    assert "SCENARIO" in cli("whatif", "--show", first["id"])
    for args, says in ((["--show", "nope"], "no stored result has this id"),
                       (["--list", "--scenario", "x.toml"], "--scenario: not with --list"),
                       (["--period", "2026-10"], "give --period and --scenario")):
        r = runner.invoke(app(), ["whatif", *args])
        assert r.exit_code != 0 and says in r.output, (args, r.output)
