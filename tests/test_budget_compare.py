"""`ledger budget compare` on the demo month (October 2026), forecast and GPU actuals worked by hand."""
from __future__ import annotations

import json
from decimal import Decimal as D

import pytest
from typer.testing import CliRunner

from ledger.cli import app

runner = CliRunner()

# Priced with the shipped books (the demo loads them): H100 on-demand us-east-1 $6.88, H200 $7.912,
# gpt-5 $1.25 / $0.125 / $10 per 1M, web search $10 per 1,000 calls.
PLAN = """
[plan]
name = "demo-check"
currency = "USD"
start = "2026-10"
months = 1

[[pool]]
name = "h100-chat"
device = "H100-SXM-80GB"
region = "us-east-1"
purchase_option = "on_demand"
gpus_per_replica = 1
anchors = "1:200"
sla = 100
tpm = 6000
util = 1
failure_reserve = 1

[[pool]]
name = "h200-code"
device = "H200-SXM-141GB"
region = "us-east-1"
purchase_option = "on_demand"
gpus_per_replica = 4
anchors = "8:70"
sla = 60
tpm = 12000
util = 1

[[tokens]]
provider = "openai"
model = "gpt-5"
input_tokens = "60000000"
cached_share = "0.6"
output_tokens = "11000000"

[[meter]]
meter = "tool_call"
sku = "openai-web-search"
quantity = "75000"
unit = "call"

[[charge]]
name = "licence"
category = "tools"
amount = "1500.00"

[[charge]]
name = "evaluation"
category = "evaluation"
amount = "2450.00"

[[charge]]
name = "on-call"
category = "engineering_ops"
amount = "7200.00"

[[charge]]
name = "network"
category = "network"
amount = "412.80"

[[charge]]
name = "security audit, a third of the quarter"
category = "other"
amount = "5000.00"
"""


@pytest.mark.store
def test_compare_on_the_demo_month(demo_ledger, tmp_path):
    run = demo_ledger.summary
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    r = runner.invoke(app, ["budget", "compare", str(plan), "--period", "2026-10", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["month"], doc["scenario"], doc["run_id"], doc["currency"]) == ("2026-10", "base", run["run_id"], "USD")
    cat = {c["key"]: c for c in doc["categories"]}
    pools = {p["key"]: p for p in doc["pools"]}

    # Forecast, by hand:
    #   h100-chat: 6,000 TPM = 100 tok/s; one replica serves 200 -> 1 + 1 failure reserve = 2 GPUs
    #              2 x 744 h x $6.88 = 10,237.44
    #   h200-code: 12,000 TPM = 200 tok/s; one replica serves 8 x 70 = 560 -> 1 replica = 4 GPUs
    #              4 x 744 h x $7.912 = 23,546.112
    # Actual GPU, by hand from the demo's fleet:
    #   h100-chat: 744 h serving + 3 Sundays x 3 h pre-scaled + 744 h failure reserve = 1,497 GPU-h x $6.88 = 10,299.36
    #   h200-code: 4 x 744 h serving + 4 x 72 h canary = 3,264 GPU-h x $7.912 = 25,824.768
    assert pools["h100-chat"] == {"dimension": "pool", "key": "h100-chat", "forecast": "10237.440000",
                                  "actual": "10299.360000", "error": "61.920000",
                                  "relative_error": "0.0060", "reason": None}  # 61.92 / 10,237.44 = 0.00605
    assert pools["h200-code"] == {"dimension": "pool", "key": "h200-code", "forecast": "23546.112000",
                                  "actual": "25824.768000", "error": "2278.656000",
                                  "relative_error": "0.0968", "reason": None}  # 2,278.656 / 23,546.112 = 0.09677
    # gpu: 33,783.552 forecast, 36,124.128 actual: +2,340.576, 2,340.576 / 33,783.552 = 0.06928
    assert (cat["gpu"]["forecast"], cat["gpu"]["actual"], cat["gpu"]["error"], cat["gpu"]["relative_error"]) == \
        ("33783.552000", "36124.128000", "2340.576000", "0.0693")
    assert cat["gpu"]["actual"] == run["by_category"]["gpu"]
    # provider tokens: 24M x 1.25/1M + 36M x 0.125/1M + 11M x 10/1M = 30.00 + 4.50 + 110.00 = 144.50
    tok = cat["provider_tokens"]
    assert tok["forecast"] == "144.500000" and tok["actual"] == run["by_category"]["provider_tokens"]
    assert D(tok["error"]) == D(tok["actual"]) - D("144.50")
    assert D(tok["relative_error"]) == (D(tok["error"]) / D("144.50")).quantize(D("0.0001"))
    # tool: 75,000 x $0.01 = 750.00 + the 1,500.00 licence = 2,250.00
    assert cat["tool"]["forecast"] == "2250.000000" and cat["tool"]["actual"] == run["by_category"]["tool"]
    assert D(cat["tool"]["error"]) == D(cat["tool"]["actual"]) - D("2250")
    # fixed charges as invoiced in the demo: no error
    for key, amount in (("evaluation", "2450.000000"), ("engineering_ops", "7200.000000"), ("network", "412.800000")):
        assert (cat[key]["forecast"], cat[key]["actual"], cat[key]["error"], cat[key]["relative_error"]) == \
            (amount, amount, "0.000000", "0.0000")
    # other: the Q4 audit, 15,000 x 31/92 days in October = 5,054.347826; forecast 5,000: +54.347826, 0.0109
    assert (cat["other"]["actual"], cat["other"]["error"], cat["other"]["relative_error"]) == \
        ("5054.347826", "54.347826", "0.0109")
    # storage was not forecast: the error is the actual, the relative error undefined, and said why
    assert cat["storage"]["forecast"] == "0.000000" and cat["storage"]["relative_error"] is None
    assert cat["storage"]["reason"] == "no forecast for it" and cat["storage"]["error"] == cat["storage"]["actual"]
    # the total forecast error is the sum of the category errors
    assert D(doc["total"]["actual"]) == D(run["total"])
    assert D(doc["total"]["error"]) == sum(D(c["error"]) for c in doc["categories"])

    table = runner.invoke(app, ["budget", "compare", str(plan), "--period", "2026-10"])
    assert table.exit_code == 0 and "h200-code" in table.stdout and "+9.7%" in table.stdout
    assert runner.invoke(app, ["budget", "compare", str(plan), "--period", "2026-11"]).exit_code == 1


# ---- what the plan and the ledger share: matched, warned, refused ---------------------------------

# A hand-built ledger (the test book: H100 $3.60 a GPU-hour; gpt-5 $1.25 / $0.125 / $10 per 1M):
#   pool p1: 2 GPUs x 2 h x $3.60 = 14.40;  pool p3: 1 GPU x 1 h x $3.60 = 3.60
#   openai/gpt-5: 60,000 x 1.25/1M + 40,000 x 0.125/1M + 2,000 x 10/1M = 0.10
#   observability: Grafana 310.00.  Total 328.10
HAND_FILES = {
    "fleet": """
        interval_id,pool,start,end,device,gpus,region,purchase_option,role,capacity_tokens_per_gpu_s
        s1,p1,2026-10-01T10:00:00Z,2026-10-01T12:00:00Z,H100,2,us-east-1,on_demand,serving,1
        s2,p3,2026-10-02T10:00:00Z,2026-10-02T11:00:00Z,H100,1,us-east-1,on_demand,serving,1
    """,
    "requests": """
        request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens,output_tokens,status
        q1,2026-10-01T10:05:00Z,a,chat,llama,p1,,t1,1000,0,800,ok
        q2,2026-10-01T12:00:00Z,a,chat,gpt-5,,openai,t1,100000,40000,2000,ok
    """,
    "charges": """
        charge_id,period_start,period_end,category,description,amount,currency,allocate
        c1,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,observability,Grafana,310.00,USD,even
    """,
}

HAND_PLAN = """
[plan]
name = "hand"
currency = "USD"
start = "2026-10"
months = 1
{pools}
{tokens}
[[charge]]
name = "Grafana"
category = "observability"
amount = "310.00"
{charges}
"""

HAND_POOL = """
[[pool]]
name = "{name}"
device = "H100"
region = "us-east-1"
purchase_option = "on_demand"
gpus_per_replica = 1
anchors = "1:200"            # one replica serves 200 output tok/s
sla = 100
tpm = 6000                   # 100 tok/s: 1 replica = 1 GPU, 744 h x $3.60 = 2,678.40
util = 1
"""

HAND_TOKENS = """
[[tokens]]
provider = "openai"
model = "gpt-5"
input_tokens = "100000"
cached_share = "0.4"
output_tokens = "2000"
"""


def _hand_plan(tmp_path, name: str, pools: tuple[str, ...], tokens: bool = True, charges: str = ""):
    path = tmp_path / f"{name}.toml"
    path.write_text(HAND_PLAN.format(pools="".join(HAND_POOL.format(name=p) for p in pools),
                                     tokens=HAND_TOKENS if tokens else "", charges=charges))
    return path


@pytest.fixture
def hand_ledger(ledger_home, tmp_path):
    import textwrap

    from test_allocate_support import TEST_BOOK

    books = tmp_path / "books"
    books.mkdir()
    (books / "test.toml").write_text(TEST_BOOK, encoding="utf-8")
    assert runner.invoke(app, ["pricebook", "load", str(books)]).exit_code == 0
    for kind, text in HAND_FILES.items():
        path = tmp_path / f"{kind}.csv"
        path.write_text(textwrap.dedent(text).strip() + "\n", encoding="utf-8")
        r = runner.invoke(app, ["ingest", kind, str(path), "--register-new"])
        assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["allocate", "--period", "2026-10", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["total"] == "328.100000"
    return books, doc["run_id"]


def _compare(books, plan, *args):
    return runner.invoke(app, ["budget", "compare", str(plan), "--period", "2026-10", "--pricebooks", str(books),
                               *args])


@pytest.mark.store
def test_compare_says_what_matches_warns_on_the_rest_and_refuses_when_nothing_does(hand_ledger, tmp_path):
    books, run_id = hand_ledger

    # 1. Everything matches: pools p1 and p3, openai/gpt-5, gpu + provider_tokens + observability
    same = _hand_plan(tmp_path, "same", ("p1", "p3"))
    r = _compare(books, same, "--json")
    assert r.exit_code == 0, r.output
    assert "warning" not in r.stderr
    doc = json.loads(r.stdout)
    assert doc["matching"] == {
        "complete": True,
        "pools": {"matched": ["p1", "p3"], "plan_only": [], "ledger_only": []},
        "provider_models": {"matched": ["openai/gpt-5"], "plan_only": [], "ledger_only": []},
        "categories": {"matched": ["gpu", "provider_tokens", "observability"], "plan_only": [], "ledger_only": []},
        "warnings": []}
    pools = {p["key"]: (p["forecast"], p["actual"]) for p in doc["pools"]}
    assert pools == {"p1": ("2678.400000", "14.400000"), "p3": ("2678.400000", "3.600000")}
    table = _compare(books, same)
    assert table.exit_code == 0 and "warning" not in table.stderr
    assert "plan and ledger match: pools p1, p3; provider models openai/gpt-5" in table.stdout

    # 2. Some do not: the plan's p2 is not in the ledger, the ledger's p3 not in the plan, and the
    #    plan forecasts network, which the ledger never booked: a warning each, on stderr and in the JSON
    partial = _hand_plan(tmp_path, "partial", ("p1", "p2"),
                         charges='[[charge]]\nname = "NAT"\ncategory = "network"\namount = "100.00"\n')
    r = _compare(books, partial, "--json")
    assert r.exit_code == 0, r.output
    expected = [
        "pools of plan hand not in the ledger (compared with 0: the run has no GPU line of them): p2",
        "pools of the ledger not in plan hand (booked, with no forecast: their error is their cost): p3",
        "categories of plan hand not in the ledger (forecast for the month, none booked): network"]
    assert r.stderr.splitlines() == [f"warning: {w}" for w in expected]
    m = json.loads(r.stdout)["matching"]
    assert m["complete"] is False and m["warnings"] == expected
    assert m["pools"] == {"matched": ["p1"], "plan_only": ["p2"], "ledger_only": ["p3"]}
    assert m["categories"]["plan_only"] == ["network"]
    table = _compare(books, partial)
    assert table.exit_code == 0
    assert "matched: pools p1; provider models openai/gpt-5" in table.stdout
    assert "warning: pools of plan hand not in the ledger" in table.stdout  # the note under the table
    csv_out = _compare(books, partial, "--csv")  # the CSV is unchanged: the warnings go to stderr only
    assert csv_out.exit_code == 0 and csv_out.stdout.startswith('"month","scenario","run_id","currency"')
    assert "warning" not in csv_out.stdout and len(csv_out.stderr.splitlines()) == 3

    # 3. Nothing matches: the plan's only pool p2, no provider model; the ledger's p1, p3 and gpt-5
    other = _hand_plan(tmp_path, "other", ("p2",), tokens=False)
    r = _compare(books, other)
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [
        "plan hand has pools p2: none of them is in the ledger",
        f"the ledger (run {run_id} of 2026-10) has pools p1, p3 and provider models openai/gpt-5: "
        "none of them is in the plan",
        "to compare, name the plan's [[pool]] tables as the ledger's fleet names its pools (p1, p3) and its "
        "[[tokens]] by the provider and model the requests carry, or compare the ledger with the plan made for it"]
    assert _compare(books, other, "--json").exit_code == 1


def _lines(*specs):
    from types import SimpleNamespace

    return [SimpleNamespace(category=c, amount=D(a), pool=p, provider=pr, model=m) for c, a, p, pr, m in specs]


def test_no_category_in_common_is_refused_and_the_fix_is_named():
    from ledger.budget import BudgetError, budget, compare, parse_plan
    from ledger.pricebook import PriceIndex

    plan, problems = parse_plan(HAND_PLAN.format(pools="", tokens="", charges=""), "plan.toml")
    assert not problems
    b = budget(plan, PriceIndex([]))  # a plan of one charge needs no price: observability 310.00
    lines = _lines(("gpu", "14.40", "p1", None, None), ("storage", "2.00", None, None, None))
    with pytest.raises(BudgetError) as e:
        compare(b, month="2026-10", lines=lines, run_id="r1", run_currency="USD")
    assert e.value.problems == [
        "plan hand forecasts observability for 2026-10: the ledger booked none of them",
        "the ledger (run r1 of 2026-10) booked gpu, storage: the plan forecasts none of them",
        "to compare, forecast the categories the ledger books (a [[charge]] category, a [[meter]], [[tokens]], "
        "a [[pool]]), or compare the ledger with the plan made for it"]
    # one category in common is enough to compare; the others are warned about
    c = compare(b, month="2026-10", lines=lines + _lines(("observability", "300", None, None, None)), run_id="r1",
                run_currency="USD")
    assert c.matching.categories.matched == ("observability",)
    assert c.matching.categories.ledger_only == ("gpu", "storage")
    assert c.matching.pools.ledger_only == ("p1",) and not c.matching.complete
    assert c.total.forecast == D("310.00") and c.total.actual == D("316.40")


@pytest.mark.store
def test_compare_says_the_close_of_the_run_it_compares_with(hand_ledger, tmp_path):
    """Issue 28 item 1: the table's title, `close` in the JSON, a `period_close` column in the CSV and
    the budget workbook's provenance (`--xlsx`) say the compared run's month: open, then signed."""
    import csv
    import io

    import openpyxl

    books, run_id = hand_ledger
    plan = _hand_plan(tmp_path, "same", ("p1", "p3"))
    doc = json.loads(_compare(books, plan, "--json").stdout)
    assert doc["close"]["status"] == "open" and doc["close"]["text"] == "open"
    r = runner.invoke(app, ["close", "--period", "2026-10", "--by", "Dana Reyes"])
    assert r.exit_code == 0, r.output
    doc = json.loads(_compare(books, plan, "--json").stdout)
    text = doc["close"]["text"]
    assert text.startswith("closed by Dana Reyes at ") and text.endswith(f", final run {run_id}")
    assert doc["close"]["final_run"] == run_id
    assert text in " ".join(_compare(books, plan).stdout.split())
    rows = list(csv.DictReader(io.StringIO(_compare(books, plan, "--csv").stdout)))
    assert rows and {row["period_close"] for row in rows} == {text}
    book = tmp_path / "compared.xlsx"
    r = _compare(books, plan, "--xlsx", str(book))
    assert r.exit_code == 0, r.output
    prov = {row[0]: row[1] for row in openpyxl.load_workbook(book)["Provenance"].iter_rows(min_row=2, values_only=True)
            if row[0]}
    assert prov["period close"] == text
    assert prov["compared with run"].startswith(f"{run_id} (2026-10, scenario base")
