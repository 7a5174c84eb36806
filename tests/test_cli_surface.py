"""The command line's surface (issue 17): every report command prints `--json` that parses and
`--csv` that the csv module reads with the expected header, `--json` with `--csv` is refused, an
option name means one thing everywhere (`export --csv` is a switch, `--lines FILE` writes;
`--scenario` repeatable or a comma list; old spellings still work and say so), counts read in the
singular when they are 1, and refusals say how to fix them with file, line and column."""
from __future__ import annotations

import csv
import io
import json
from decimal import Decimal as D
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ledger.allocate.cli import SUMMARY_COLUMNS
from ledger.cli import app
from ledger.ingest.cli import BATCH_COLUMNS
from ledger.pricebook.cli import PRICE_COLUMNS, PROBLEM_COLUMNS
from ledger.sizing.report_csv import POOL_COLUMNS, SIZING_COLUMNS

ROOT = Path(__file__).resolve().parent.parent
PLAN = ROOT / "examples" / "plan.toml"
BILL_MAP = ROOT / "tests" / "data" / "bills" / "bill-map.toml"
PERIOD = "2026-10"
ANCHORS = "1:215.5,10:122.2,256:41.8"
runner = CliRunner()


# ---- the demo month, built once for this module --------------------------------------------------

@pytest.fixture(scope="module")
def demo_result(tmp_path_factory):
    """The demo month (October 2026) in a home of its own, built once by `ledger demo`'s Python API."""
    from conftest import copy_demo

    return copy_demo(tmp_path_factory, tmp_path_factory.mktemp("cli-surface") / "home")  # the session's demo


@pytest.fixture
def demo(demo_result, monkeypatch):
    """Point the CLI at the demo home for one test."""
    from ledger import store

    monkeypatch.setenv("LEDGER_HOME", str(demo_result.home))
    monkeypatch.delenv("LEDGER_DATABASE_URL", raising=False)
    yield demo_result
    store.dispose_engines()


def ok(*args: str) -> str:
    r = runner.invoke(app, list(args))
    assert r.exit_code == 0, (args, r.output)
    return r.stdout


def as_json(*args: str):
    return json.loads(ok(*args, "--json"))


def as_csv(*args: str, code: int = 0) -> tuple[list[str], list[dict]]:
    """(the header, the rows) of `ledger ARGS --csv`."""
    r = runner.invoke(app, [*args, "--csv"])
    assert r.exit_code == code, (args, r.output)
    reader = csv.DictReader(io.StringIO(r.stdout))
    rows = list(reader)
    return list(reader.fieldnames or []), rows


def fails(*args: str) -> str:
    r = runner.invoke(app, list(args))
    assert r.exit_code != 0, (args, r.output)
    return r.stderr.strip()


# ---- --json and --csv on every report command ------------------------------------------------------

def test_allocate_csv_is_where_the_money_went_and_adds_up(demo):
    header, rows = as_csv("allocate", "--period", PERIOD)
    assert header == list(SUMMARY_COLUMNS)
    doc = as_json("allocate", "--period", PERIOD)
    total = D(doc["total"])

    def group(g):
        return {r["name"]: D(r["amount"]) for r in rows if r["group"] == g}

    assert group("kind") == {k: D(v) for k, v in doc["by_kind"].items()}
    assert sum(group("kind").values()) == total == sum(group("category").values())
    assert sum(group("tenant").values()) == group("kind")["tenant"]
    assert sorted(group("tenant")) == ["acme", "globex", "hooli", "initech", "umbrella"]
    assert {r["currency"] for r in rows} == {"USD"} and {r["period_start"] for r in rows} == {"2026-10-01T00:00:00Z"}


def test_demo_csv_is_the_same_summary_as_allocate_csv(demo, monkeypatch):
    import ledger.demo

    monkeypatch.setattr(ledger.demo, "run_demo", lambda **_kw: demo)  # the module's demo, not a second build
    header, rows = as_csv("demo")
    assert header == list(SUMMARY_COLUMNS)
    assert {r["run_id"] for r in rows} == {demo.summary["run_id"]}
    assert {r["name"]: r["amount"] for r in rows if r["group"] == "category"} == demo.summary["by_category"]
    assert json.loads(ok("demo", "--json"))["run"]["total"] == demo.summary["total"]


def test_size_json_and_csv_give_the_same_rows():
    # c* = 10 (122.2 tok/s/user >= 50; 41.8 at 256 is below it), 1,222 tok/s per replica; 3,000,000 TPM
    # = 50,000 tok/s, / 0.7 util = 71,428.6 tok/s -> 59 replicas x 4 GPUs = 236
    args = ("size", "--tpm", "3000000", "--sla", "20,50", "--anchors", ANCHORS, "--gpus-per-replica", "4")
    doc = as_json(*args)
    header, rows = as_csv(*args)
    assert header == list(SIZING_COLUMNS)
    assert [(r["sla_tok_s_user"], r["c_star"], r["replicas"], r["gpus"]) for r in rows] == \
        [("20.0", "256.0", "7", "28"), ("50.0", "10.0", "59", "236")]
    assert [int(r["gpus"]) for r in rows] == [r["gpus"] for r in doc["rows"]]
    assert {r["status"] for r in rows} == {"VERDICT"} and {r["c_star_measured"] for r in rows} == {"true"}


def test_size_csv_of_a_pool_in_tiers_has_parts_reserves_and_the_sum():
    args = ("size", "--tpm", "3000000", "--tier", "interactive:0.3:100", "--tier", "batch:0.7:20",
            "--anchors", ANCHORS, "--gpus-per-replica", "4", "--failure-reserve", "1")
    doc = as_json(*args)
    header, rows = as_csv(*args)
    assert header == list(POOL_COLUMNS)
    assert [(r["row"], r["tier"], r["reserve_kind"]) for r in rows] == [
        ("part", "interactive", ""), ("part", "batch", ""), ("reserve", "", "failure"), ("sum", "", "")]
    # interactive 30% = 15,000 tok/s / 0.7 / 1,222 -> 18 replicas; batch 35,000 / 0.7 / 10,700.8 -> 5; + 1 spare
    assert [r["replicas"] for r in rows] == ["18", "5", "1", "24"]
    assert rows[-1]["gpus"] == str(doc["totals"]["gpus"]) == "96"


def test_pricebook_show_csv_has_a_row_per_price_of_the_json(demo):
    doc = as_json("pricebook", "show", "--at", "2026-10-15T00:00:00Z", "--meter", "gpu_time")
    header, rows = as_csv("pricebook", "show", "--at", "2026-10-15T00:00:00Z", "--meter", "gpu_time")
    assert header == list(PRICE_COLUMNS)
    assert [(r["sku"], r["region"], r["price"]) for r in rows] == \
        [(p["sku"], p["region"], p["price"]) for p in doc["prices"]]
    assert rows and {r["meter"] for r in rows} == {"gpu_time"}


BAD_BOOK = """\
[book]
name = "t"
version = "2026-10-01"
currency = "USD"
source = "a test"
retrieved_at = 2026-10-01

[[price]]
meter = "gpu_time"
sku = "H100-SXM-80GB"
region = "us-east-1"
purchase_option = "on_demand"
price = "abc"
per = "gpu * hour"
effective_from = 2026-10-01T00:00:00Z
source_url = "https://example.com/prices"
"""


def test_pricebook_check_json_and_csv_name_file_line_and_column(tmp_path):
    book = tmp_path / "t.toml"
    book.write_text(BAD_BOOK, encoding="utf-8")
    broken = tmp_path / "u.toml"
    broken.write_text('[book]\nname = \n', encoding="utf-8")
    r = runner.invoke(app, ["pricebook", "check", str(book), str(broken), "--json"])
    assert r.exit_code == 1  # problems stay a failure, whatever the format
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and doc["books"] == [] and doc["prices"] == 0
    assert doc["problems"] == [
        {"file": str(book), "line": 8, "column": None, "entry": "price[1] gpu_time/H100-SXM-80GB/us-east-1/on_demand",
         "message": "price: 'abc' is not a decimal number"},
        {"file": str(broken), "line": 2, "column": 8, "entry": None,
         "message": "not valid TOML: Invalid value (at line 2, column 8)"}]
    header, rows = as_csv("pricebook", "check", str(book), str(broken), code=1)
    assert header == list(PROBLEM_COLUMNS)
    assert [(r["line"], r["column"]) for r in rows] == [("8", ""), ("2", "8")]
    header, rows = as_csv("pricebook", "check", str(ROOT / "pricebooks"))
    assert header == list(PROBLEM_COLUMNS) and rows == []  # clean: the header alone, exit 0


def test_dims_list_json_and_csv(demo):
    names = [d["name"] for d in as_json("dims", "list", "tenant")]
    header, rows = as_csv("dims", "list", "tenant")
    assert header == ["name", "display_name", "owner"]
    assert [r["name"] for r in rows] == names == ["acme", "globex", "hooli", "initech", "umbrella"]


@pytest.mark.parametrize("args, first", [
    (("report", "unit-economics", "--period", PERIOD), "period_start"),
    (("report", "tenants", "--period", PERIOD), "metric"),
    (("runs",), "run_id"),
    (("batches",), "id"),
    (("workload", "--period", PERIOD, "--pool", "h100-chat"), "period"),
    (("reconcile", "--period", PERIOD, "--bill-map", str(BILL_MAP)), "section"),
    (("budget", str(PLAN), "--scenario", "base"), "plan"),
    (("budget", "compare", str(PLAN), "--period", PERIOD), "month"),
], ids=lambda a: " ".join(a[:2]) if isinstance(a, tuple) else a)
def test_other_report_commands_print_json_and_csv(demo, args, first):
    doc = as_json(*args)
    assert doc
    header, rows = as_csv(*args)
    assert header[0] == first and rows


def test_check_json_and_csv(demo):
    r = runner.invoke(app, ["check", "--period", PERIOD, "--json"])
    doc = json.loads(r.stdout)
    header, _ = as_csv("check", "--period", PERIOD, code=r.exit_code)
    assert doc["check"] == "facts against price books" and header and header[0]


def test_batches_csv_header(demo):
    header, rows = as_csv("batches")
    # the demo's five inputs, and the five of its open month (ledger.demo.guardrails)
    assert header == list(BATCH_COLUMNS) and len(rows) == 10


@pytest.mark.parametrize("args", [
    ("allocate", "--period", PERIOD), ("demo",), ("dims", "list", "tenant"), ("pricebook", "show"),
    ("pricebook", "check"), ("runs",), ("batches",), ("report", "tenants", "--period", PERIOD), ("check",),
    ("reconcile", "--period", PERIOD), ("workload", "--period", PERIOD), ("budget", str(PLAN)),
    ("budget", "compare", str(PLAN), "--period", PERIOD),
    ("size", "--tpm", "1000", "--sla", "20", "--anchors", ANCHORS, "--gpus-per-replica", "1"),
], ids=lambda a: " ".join(a[:2]))
def test_json_with_csv_is_refused_before_any_work(demo, args):
    assert fails(*args, "--json", "--csv") == "give --json or --csv, not both"


# ---- one meaning per option name ---------------------------------------------------------------

def test_export_csv_prints_the_lines_and_lines_writes_them(demo, tmp_path):
    out = tmp_path / "lines.csv"
    r = runner.invoke(app, ["export", "--period", PERIOD, "--lines", str(out), "--csv"])
    assert r.exit_code == 0, r.output
    assert r.stdout == out.read_text(encoding="utf-8")  # the same CSV, on stdout and in the file
    assert r.stderr.startswith("run ") and f"lines CSV {out}" in r.stderr  # the note stays off stdout
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == demo.summary["lines"] and sum(D(x["amount"]) for x in rows) == D(demo.summary["total"])


def test_export_csv_with_a_file_says_to_use_lines(demo, tmp_path):
    f = str(tmp_path / "lines.csv")
    assert fails("export", "--period", PERIOD, "--csv", f) == (
        f"unexpected {f}: --csv takes no file (it prints the lines on stdout); write them to a file with --lines {f}")
    assert not Path(f).exists()


def test_budget_scenario_repeated_or_a_comma_list(demo):
    def scenarios(*args):
        return [s["name"] for s in as_json("budget", str(PLAN), *args)["scenarios"]]

    assert scenarios("--scenario", "worst", "--scenario", "base") == ["worst", "base"]
    assert scenarios("--scenario", "best,base") == ["best", "base"]
    assert scenarios("--scenario", "best", "--scenario", "base,best") == ["best", "base"]
    r = runner.invoke(app, ["budget", str(PLAN), "--scenarios", "best,worst", "--json"])
    assert r.exit_code == 0 and r.stderr.strip() == "warning: --scenarios is deprecated: use --scenario"
    assert [s["name"] for s in json.loads(r.stdout)["scenarios"]] == ["best", "worst"]
    assert fails("budget", "compare", str(PLAN), "--period", PERIOD, "--scenario", "base,worst") == \
        "--scenario base,worst: compare takes one scenario (run it once per scenario)"


def test_reconcile_takes_bill_map_and_the_old_map_with_a_warning(demo):
    new = as_json("reconcile", "--period", PERIOD, "--bill-map", str(BILL_MAP))
    r = runner.invoke(app, ["reconcile", "--period", PERIOD, "--map", str(BILL_MAP), "--json"])
    assert r.exit_code == 0 and r.stderr.strip() == "warning: --map is deprecated: use --bill-map"
    assert json.loads(r.stdout)["total"] == new["total"]


def test_ingest_help_offers_only_what_a_kind_takes():
    def options(kind):
        r = runner.invoke(app, ["ingest", kind, "--help"], env={"COLUMNS": "200"})
        return {w for w in r.output.split() if w.startswith("--")}

    assert {"--as-adjustment", "--source", "--map"} <= options("requests")
    assert "--as-adjustment" not in options("charges") and "--as-adjustment" not in options("fleet")
    assert "--source" not in options("charges") and "--register-new" not in options("fleet")
    assert "--from" not in options("requests")  # the old spelling works, hidden


# ---- labels --------------------------------------------------------------------------------------

def test_one_of_a_thing_reads_in_the_singular(demo):
    text = ok("size", "--tpm", "1000", "--sla", "20", "--anchors", "1:215.5", "--gpus-per-replica", "1")
    assert "anchors [anchors], 1 point\n" in text
    text = ok("allocate", "--period", PERIOD)
    assert "flag over_capacity: pool h100-chat, 1 hour\n" in text  # the demo's one over-capacity hour


# ---- refusals that say how to fix them -----------------------------------------------------------

REQ = "request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens," \
      "output_tokens,status\n"
CHARGES = "charge_id,period_start,period_end,category,description,amount,currency,allocate\n"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_changed_row_names_the_batch_to_undo(ledger_home, tmp_path):
    ok("dims", "add", "tenant", "acme")
    ok("dims", "add", "product", "chat")
    a = write(tmp_path / "a.csv", REQ + "r1,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,10,0,5,ok\n")
    batch = json.loads(ok("ingest", "requests", str(a), "--json"))["batch_id"]
    fixed = write(tmp_path / "fixed.csv", REQ + "r1,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,12,0,5,ok\n")
    assert fails("ingest", "requests", str(fixed)) == (
        f"{fixed}:2: request_id: 'r1' is already in batch {batch} (from {a}) with different content (a key must not "
        f"change): to correct that row, undo its batch with `ledger batches undo {batch}` and ingest the corrected "
        "file again")
    ok("batches", "undo", batch)  # and the way it names works
    assert json.loads(ok("ingest", "requests", str(fixed), "--json"))["rows_new"] == 1


def test_an_unknown_charge_target_names_file_line_and_the_allocate_column(ledger_home, tmp_path):
    ok("dims", "add", "tenant", "acme")
    f = write(tmp_path / "invoices.csv", CHARGES
              + "c1,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,other,audit,10,USD,even\n"
              + "c2,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,other,support,20,USD,tenant:acme\n"
              + "c3,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,other,pilot,30,USD,tenant:initech\n")
    assert fails("ingest", "charges", str(f)) == (
        f"{f}:4: allocate: tenant:initech names an unknown tenant (register with `ledger dims add tenant initech` "
        "or `ledger dims import`, or ingest with --register-new)")


def test_unknown_names_are_refused_at_their_first_row(ledger_home, tmp_path):
    ok("dims", "add", "tenant", "acme")
    ok("dims", "add", "product", "chat")
    f = write(tmp_path / "r.csv", REQ + "r1,2026-10-01T00:00:00Z,acme,chat,m,p,,t1,10,0,5,ok\n\n"
              "r2,2026-10-01T00:00:00Z,beta,chat,m,p,,t1,10,0,5,ok\n"
              "r3,2026-10-01T00:00:00Z,alpha,chat,m,p,,t1,1,0,1,ok\n")
    # line 3 is blank: beta is on line 4
    assert fails("ingest", "requests", str(f)) == (
        f"{f}:4: tenant: 2 unknown tenants: alpha, beta (register with `ledger dims add tenant NAME` or "
        "`ledger dims import`, or ingest with --register-new)")


def test_a_closed_month_is_refused_at_its_first_row_with_the_way_out_of_the_kind(ledger_home, tmp_path):
    from ledger import store

    with store.session() as s:  # closed without a run (a sign-off needs one): the ingest's refusal is the point
        store.close_period(s, name="2026-09")
    fleet = write(tmp_path / "fleet.csv", "interval_id,pool,start,end,device,gpus,region,purchase_option,role\n"
                  "i1,p,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,H100-SXM-80GB,1,us-east-1,on_demand,serving\n"
                  "i2,p,2026-09-30T00:00:00Z,2026-10-01T00:00:00Z,H100-SXM-80GB,1,us-east-1,on_demand,serving\n")
    assert fails("ingest", "fleet", str(fleet)) == (
        f"{fleet}:3: start: touches closed period 2026-09: refused (a closed month takes no new fleet rows; book a "
        "late cost as a charge in an open period)")
    assert fails("ingest", "fleet", str(fleet), "--as-adjustment").endswith(
        "--as-adjustment applies to requests, meters, outcomes, bill, not fleet (intervals are capacity in time): "
        "book a late cost as a charge in an open period")
