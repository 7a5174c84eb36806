"""End to end: price book load, ingest of every kind, `ledger allocate --json` (the contract),
reports, runs and close, through the CLI on a fresh ledger (SQLite, or PostgreSQL when set)."""
from __future__ import annotations

import csv
import io
import json
import textwrap
from decimal import Decimal as D

import pytest
from typer.testing import CliRunner

from ledger import store
from ledger.cli import app
from test_allocate_support import TEST_BOOK as BOOK

pytestmark = pytest.mark.store  # the runs live in the ledger DB: run on SQLite and PostgreSQL

runner = CliRunner()


FILES = {
    # p1 on 2026-10-01 10:00-13:00: 2 serving GPUs (K = 7,200 tokens an hour, C_serve 7.20 an hour),
    # 1 failure_reserve GPU 10:00-12:00 (C_reserve 3.60 an hour)
    "fleet": """
        interval_id,pool,start,end,device,gpus,region,purchase_option,role,capacity_tokens_per_gpu_s
        s1,p1,2026-10-01T10:00:00Z,2026-10-01T13:00:00Z,H100,2,us-east-1,on_demand,serving,1
        r1,p1,2026-10-01T10:00:00Z,2026-10-01T12:00:00Z,H100,1,us-east-1,on_demand,failure_reserve,
    """,
    "requests": """
        request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens,\
output_tokens,status
        q1,2026-10-01T10:05:00Z,a,chat,llama,p1,,t1,1000,0,800,ok
        q2,2026-10-01T10:59:59Z,b,search,llama,p1,,t2,3000,0,600,ok
        q3,2026-10-01T11:30:00Z,a,chat,llama,p1,,t3,6000,0,3000,ok
        q4,2026-10-01T12:00:00Z,a,chat,gpt-5,,openai,t1,100000,40000,2000,ok
    """,
    "outcomes": """
        task_id,tenant,product,outcome,decided_at,criteria
        t1,a,chat,success,2026-10-01T13:00:00Z,tests-pass
        t3,a,chat,failure,2026-10-01T13:00:00Z,tests-pass
    """,
    "charges": """
        charge_id,period_start,period_end,category,description,amount,currency,allocate
        c1,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,observability,Grafana,310.00,USD,even
    """,
}


def cli(*args: str) -> str:
    r = runner.invoke(app, list(args))
    assert r.exit_code == 0, (args, r.output)
    return r.stdout


def cli_fails(*args: str) -> str:
    r = runner.invoke(app, list(args))
    assert r.exit_code != 0, (args, r.output)
    return r.output


def flat(text: str) -> str:
    """Rich wraps long lines at the terminal width: compare text with its whitespace collapsed."""
    return " ".join(text.split())


@pytest.fixture
def ledger(ledger_home, tmp_path):
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "test.toml").write_text(BOOK, encoding="utf-8")
    cli("pricebook", "load", str(tmp_path / "books"))
    for kind in ("fleet", "requests", "outcomes", "charges"):
        path = tmp_path / f"{kind}.csv"
        path.write_text(textwrap.dedent(FILES[kind]).strip() + "\n", encoding="utf-8")
        cli("ingest", kind, str(path), "--register-new")
    return ledger_home


def test_allocate_json_is_the_contract(ledger):
    doc = json.loads(cli("allocate", "--period", "2026-10", "--json"))
    # GPU (hour 10: a 1.80, b 3.60, slack 1.80; hour 11: a 7.20, over capacity; hour 12: slack 7.20;
    #      reserve 2 × 3.60 = 7.20): 28.80
    # provider q4: 60,000 × 1.25/1M + 40,000 × 0.125/1M + 2,000 × 10/1M = 0.075 + 0.005 + 0.02 = 0.10
    # charge c1: 310.00 for October, 10.00 a day, even over a and b (both have direct cost): 155.00 each
    assert doc["period"] == {"start": "2026-10-01T00:00:00Z", "end": "2026-11-01T00:00:00Z"}
    assert (doc["currency"], doc["idle_policy"], doc["basis"]) == ("USD", "separate", "active_tokens")
    assert doc["price_books"] == ["test-book@2026-10-01"]
    assert doc["total"] == doc["lines_total"] == "338.900000"
    assert doc["by_kind"] == {"tenant": "322.700000", "idle_slack": "9.000000", "idle_reserve": "7.200000",
                              "unallocated": "0.000000"}
    assert {k: v for k, v in doc["by_category"].items() if D(v)} == \
        {"gpu": "28.800000", "provider_tokens": "0.100000", "observability": "310.000000"}
    assert doc["failed_work"] == "7.200000"  # q3 belongs to t3, whose outcome is failure
    assert doc["flags"] == [{"kind": "over_capacity", "pool": "p1", "hour": "2026-10-01T11:00:00Z"}]
    a, b = doc["tenants"]
    # a: 1.80 + 7.20 + 0.10 + 155.00 = 164.10; tokens 1,800 + 9,000 + 102,000 = 112,800
    assert (a["tenant"], a["cost"], a["failed_work"], a["idle_share"]) == ("a", "164.100000", "7.200000", "0.000000")
    assert (a["active_tokens"], a["requests"], a["tasks"]) == (112800, 3, {"success": 1, "failure": 1, "unknown": 0})
    assert a["cost_per_successful_task"] == "164.100000"
    assert a["cost_per_1m_active_tokens"] == "1454.787234"  # 164.10 / 0.1128 = 1454.7872340...
    assert a["by_category"]["gpu"] == "9.000000" and a["by_category"]["observability"] == "155.000000"
    # b: 3.60 + 155.00 = 158.60; its task t2 has no outcome: unknown, and no success: undefined, with its reason
    assert (b["tenant"], b["cost"], b["tasks"]) == ("b", "158.600000", {"success": 0, "failure": 0, "unknown": 1})
    assert b["cost_per_successful_task"] is None
    assert b["reasons"]["cost_per_successful_task"] == "no task with outcome success was decided in the period"
    assert b["cost_per_1m_active_tokens"] == "44055.555556"  # 158.60 / 0.0036
    assert doc["success_criteria"] == ["tests-pass"]
    # all-in, at the top level: the run total (idle slack 9.00 and reserve 7.20 included) over the run's
    # one successful task (t1): 338.900000 / 1 = 338.900000; a's own figure above is 164.10 / 1
    assert doc["cost_per_successful_task_all_in"] == "338.900000"
    assert (doc["cost_per_successful_task_all_in_numerator"], doc["cost_per_successful_task_all_in_denominator"]) == \
        ("338.900000", 1)
    assert set(doc["definitions"]) == {"cost_per_successful_task_all_in", "cost_per_successful_task"}
    assert len(doc["run_id"]) == 32 and len(doc["inputs_digest"]) == 64 and doc["code_version"]


def test_reports_read_the_current_run(ledger):
    first = json.loads(cli("allocate", "--period", "2026-10", "--json"))
    second = json.loads(cli("allocate", "--period", "2026-10", "--idle", "share", "--json"))
    assert first["inputs_digest"] != second["inputs_digest"]  # the policy is an input
    runs = json.loads(cli("runs", "--json"))
    assert [r["run_id"] for r in runs] == [second["run_id"], first["run_id"]]
    # the newest run is current: under share, a and b carry all idle
    rep = json.loads(cli("report", "unit-economics", "--period", "2026-10", "--json"))
    assert rep["run_id"] == second["run_id"] and rep["price_books"] == ["test-book@2026-10-01"]
    assert rep["unattributed"] == {"idle_slack": "0.000000", "idle_reserve": "0.000000", "unallocated": "0.000000"}
    assert sum(D(r["cost"]) for r in rep["rows"]) == D("338.90")
    # an older run stays as it was written
    old = json.loads(cli("report", "unit-economics", "--run", first["run_id"], "--json"))
    assert old["unattributed"]["idle_slack"] == "9.000000"

    by_model = json.loads(cli("report", "unit-economics", "--run", first["run_id"], "--by", "model", "--json"))
    models = {r["model"]: r for r in by_model["rows"]}
    # llama: GPU 1.80 + 3.60 + 7.20 = 12.60 over 14,400 tokens: 875.00 per 1M; 12.60 / 28.80 of all GPU
    assert (models["llama"]["cost"], models["llama"]["active_tokens"]) == ("12.600000", 14400)
    assert models["llama"]["cost_per_1m_active_tokens"] == "875.000000"
    assert models["llama"]["share_of_gpu"] == "0.4375"
    assert models["gpt-5"]["cost"] == "0.100000" and models["gpt-5"]["share_of_gpu"] == "0.0000"
    assert models[None]["cost"] == "310.000000"  # the shared charge has no model

    by_product = json.loads(cli("report", "unit-economics", "--run", first["run_id"], "--by", "product", "--json"))
    products = {r["product"]: r for r in by_product["rows"]}
    assert products["chat"]["cost"] == "9.100000" and products["chat"]["tasks"]["success"] == 1
    assert products["search"]["cost"] == "3.600000"


def test_report_filtered_to_tenants_and_csv(ledger):
    cli("allocate", "--period", "2026-10")
    full = json.loads(cli("report", "tenants", "--period", "2026-10", "--json"))
    only_b = json.loads(cli("report", "tenants", "--period", "2026-10", "--tenants", "b", "--json"))
    assert only_b["rows"] == [r for r in full["rows"] if r["tenant"] == "b"]
    assert "unattributed" not in only_b and only_b["run_total"] == full["run_total"]
    rows = list(csv.DictReader(io.StringIO(cli("report", "unit-economics", "--period", "2026-10", "--csv"))))
    assert [r["tenant"] for r in rows] == ["a", "b"]
    assert rows[0]["period_start"] == "2026-10-01T00:00:00Z" and rows[0]["price_books"] == "test-book@2026-10-01"
    assert rows[0]["currency"] == "USD" and rows[0]["success_criteria"] == "tests-pass"
    assert rows[1]["cost_per_successful_task"] == "" and "no task with outcome success" in rows[1]["undefined_because"]
    side = list(csv.reader(io.StringIO(cli("report", "tenants", "--period", "2026-10", "--csv"))))
    assert side[0] == ["metric", "a", "b"] and side[1] == ["cost", "164.100000", "158.600000"]
    table = flat(cli("report", "tenants", "--period", "2026-10"))
    assert "tests-pass" in table and "164.10" in table
    # the all-in figure is the run's, named with its definition, whichever tenants are shown
    assert only_b["cost_per_successful_task_all_in"] == full["cost_per_successful_task_all_in"] == "338.900000"
    text = flat(cli("report", "unit-economics", "--period", "2026-10", "--tenants", "b"))
    assert "all-in cost per successful task: 338.90 = run total 338.90 ÷ 1 successful task;" in text
    assert "cost per success (own cost) = a tenant's (or product's) own cost" in text
    assert "tenant zz: not in run" in cli_fails("report", "tenants", "--period", "2026-10", "--tenants", "zz")


def test_allocate_with_from_to_and_human_output(ledger):
    text = flat(cli("allocate", "--from", "2026-10-01T00:00:00Z", "--to", "2026-10-02T00:00:00Z"))
    # one day: GPU 28.80 + provider 0.10 + 10.00 of the charge (money in the table grouped, 2 decimals)
    assert "total 38.90 USD = lines 38.90" in text
    assert "flag over_capacity: pool p1, 1 hour" in text


def test_missing_price_fails_the_run_and_writes_nothing(ledger, tmp_path):
    path = tmp_path / "more.csv"
    path.write_text("request_id,occurred_at,tenant,product,model,provider,input_tokens,output_tokens,status\n"
                    "q9,2026-10-02T00:00:00Z,a,chat,o9,openai,10,10,ok\n", encoding="utf-8")
    cli("ingest", "requests", str(path))
    out = cli_fails("allocate", "--period", "2026-10", "--json")
    assert "no price in force for meter input_tokens, sku o9, region *, purchase option standard, provider openai " \
           "at 2026-10-02T00:00:00+00:00" in out
    assert "meter output_tokens, sku o9" in out
    assert json.loads(cli("runs", "--json")) == []


def test_runs_close_and_errors(ledger):
    assert "no allocation run" in cli_fails("report", "unit-economics", "--period", "2026-10")
    assert "period 2026-10 has no allocation run: a sign-off signs the run of its month" in \
        flat(cli_fails("close", "--period", "2026-10", "--by", "Dana Reyes"))
    run = json.loads(cli("allocate", "--period", "2026-10", "--json"))["run_id"]
    assert f"final run {run} (total 338.900000 USD" in flat(cli("close", "--period", "2026-10", "--by", "Dana Reyes"))
    assert "a sign-off is never changed" in flat(cli_fails("close", "--period", "2026-10", "--by", "Eve"))
    with store.session() as s:
        assert store.closed_periods(s) == ["2026-10"]
    assert run in flat(cli("runs", "--period", "2026-10"))
    rows = list(csv.DictReader(io.StringIO(cli("runs", "--csv"))))
    assert [(r["run_id"], r["period_start"], r["currency"]) for r in rows] == [(run, "2026-10-01T00:00:00Z", "USD")]
    assert "idle policy 'evenly': expected one of separate, share" in \
        flat(cli_fails("allocate", "--period", "2026-10", "--idle", "evenly"))
    assert "is not a month" in cli_fails("allocate", "--period", "October")
    assert "expected POOL=UNCACHED,CACHED,OUTPUT" in cli_fails("allocate", "--period", "2026-10", "--weights", "p1")


def test_allocate_without_price_books_says_what_to_do(ledger_home):
    assert "no price books are loaded: run `ledger pricebook load`" in \
        flat(cli_fails("allocate", "--period", "2026-10"))
    assert "give --period YYYY-MM, or both --from and --to" in flat(cli_fails("allocate"))
    assert "is not before --to" in flat(cli_fails("allocate", "--from", "2026-10-02", "--to", "2026-10-01"))


def test_requests_on_a_pool_without_fleet_fail_unless_allowed_and_the_run_says_so(ledger, tmp_path):
    path = tmp_path / "p9.csv"
    path.write_text("request_id,occurred_at,tenant,product,model,pool,input_tokens,output_tokens,status\n"
                    "q8,2026-10-03T07:10:00Z,b,chat,llama,p9,500,500,ok\n"
                    "q9,2026-10-05T21:59:00Z,b,chat,llama,p9,100,100,ok\n", encoding="utf-8")
    cli("ingest", "requests", str(path))
    out = flat(cli_fails("allocate", "--period", "2026-10", "--json"))
    # one line naming the pool, the first and last hour with such requests and their count; nothing written
    assert "pool p9: 2 requests in hours 2026-10-03T07:00:00Z to 2026-10-05T21:00:00Z but no serving fleet " \
           "interval in the period, so their GPU cost would be $0; ingest the pool's fleet, or accept it with " \
           "--allow-pool-without-fleet p9" in out
    assert json.loads(cli("runs", "--json")) == []
    doc = json.loads(cli("allocate", "--period", "2026-10", "--allow-pool-without-fleet", "p9", "--json"))
    # accepted: nothing to allocate for p9 (no GPU cost exists), so the total is the one of the contract, 338.90
    assert doc["total"] == "338.900000"
    # the run's note, in the library's own words (a stored note names no option: ledger.hints)
    assert "pool p9: 2 requests in hours 2026-10-03T07:00:00Z to 2026-10-05T21:00:00Z with no serving fleet " \
           "interval in the period; accepted by the policy's allow_pool_without_fleet: no GPU cost exists for them, " \
           "so none is allocated (their requests and tokens still count in unit economics)" in doc["notes"]
    b = [t for t in doc["tenants"] if t["tenant"] == "b"][0]
    assert b["requests"] == 3 and b["active_tokens"] == 3600 + 1000 + 200  # q2 + q8 + q9
    # the acceptance is part of the run's policy (hashed into its inputs digest as a sorted set of pools)
    plain = json.loads(cli("allocate", "--period", "2026-10", "--allow-pool-without-fleet", "p9",
                           "--allow-pool-without-fleet", "p9", "--json"))
    assert plain["inputs_digest"] == doc["inputs_digest"]  # the same pool twice is the same policy
    text = flat(cli("allocate", "--period", "2026-10", "--allow-pool-without-fleet", "p9"))
    assert "note: pool p9: 2 requests" in text
