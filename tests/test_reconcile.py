"""Reconciliation with a cloud bill and the true-up, hand-worked (docs/reconcile.md).

The month: pool h100-chat, 8 H100s serving 2026-10-01 00:00-10:00 at 6.88 per GPU-hour (55.04 an
hour, 550.40 in all); in hour 0 tenant a sends 3,000 active tokens and b 1,000 (r = 55.04 / 4,000:
a 41.28, b 13.76), hours 1-9 are idle slack (495.36). Egress: a 60 GB, b 40 GB at 0.09 per GB
(5.40 + 3.60 = 9.00). OpenAI: gpt-5 (1.25 / 10 per 1M) o1 100,000 in + 10,000 out = 0.225,
reported 0.225; gpt-5-mini (0.25 / 2.00 per 1M) o2 1,000,000 in + 100,000 out = 0.45, reported
0.50 (the book is stale); o3 gpt-5 200,000 in = 0.25, no reported cost. Run total 560.325.

The bill (tests/data/bills/aws-focus-2026-10.csv, AWS FOCUS 1.0 with AWS columns): ten hours of
the pool's p5.48xlarge covered by a Compute Savings Plan (list 55.04, billed 0, effective 38.528 =
30% off: 385.28), a correction of -3.00 on the instance (no tags), the plan's fee (billed 385.28,
effective 0), 105 GB of egress (9.45) and an S3 bucket no rule places (2.30).
"""
from __future__ import annotations

import json
import shutil
import textwrap
from decimal import Decimal as D
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ledger import runs, store
from ledger.allocate import VARIANCE
from ledger.cli import app
from ledger.reconcile import BILL_ROW, ReconcileError, load_map

pytestmark = pytest.mark.store

DATA = Path(__file__).parent / "data" / "bills"
BILL = DATA / "aws-focus-2026-10.csv"
MAP = DATA / "bill-map.toml"
runner = CliRunner()

BOOK = """
[book]
name = "reconcile-test"
version = "2026-10-01"
currency = "USD"
source = "hand-worked test prices"
retrieved_at = 2026-10-01

[[price]]
meter = "gpu_time"
sku = "H100-SXM-80GB"
region = "us-east-1"
purchase_option = "on_demand"
price = "6.88"
per = "gpu * hour"
effective_from = 2026-06-01T00:00:00Z
source_url = "https://aws.amazon.com/ec2/pricing/on-demand/"

[[price]]
meter = "input_tokens"
sku = "gpt-5"
region = "*"
purchase_option = "*"
price = "1.25"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://openai.com/api/pricing/"

[[price]]
meter = "output_tokens"
sku = "gpt-5"
region = "*"
purchase_option = "*"
price = "10"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://openai.com/api/pricing/"

[[price]]
meter = "input_tokens"
sku = "gpt-5-mini"
region = "*"
purchase_option = "*"
price = "0.25"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://openai.com/api/pricing/"

[[price]]
meter = "output_tokens"
sku = "gpt-5-mini"
region = "*"
purchase_option = "*"
price = "2.00"
per = "1e6 * token"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://openai.com/api/pricing/"

[[price]]
meter = "egress"
sku = "internet"
region = "*"
purchase_option = "*"
price = "0.09"
per = "GB"
effective_from = 2026-01-01T00:00:00Z
source_url = "https://aws.amazon.com/ec2/pricing/on-demand/#Data_Transfer"
"""

FILES = {
    "fleet": """
        interval_id,pool,start,end,device,gpus,region,purchase_option,role
        f1,h100-chat,2026-10-01T00:00:00Z,2026-10-01T10:00:00Z,H100-SXM-80GB,8,us-east-1,on_demand,serving
    """,
    "requests": """
        request_id,occurred_at,tenant,product,model,pool,provider,input_tokens,output_tokens,status,reported_cost,reported_currency
        q1,2026-10-01T00:10:00Z,a,chat,llama-3.1-70b,h100-chat,,2000,1000,ok,,
        q2,2026-10-01T00:20:00Z,b,chat,llama-3.1-70b,h100-chat,,800,200,ok,,
        o1,2026-10-01T12:00:00Z,a,chat,gpt-5,,openai,100000,10000,ok,0.225,USD
        o2,2026-10-01T12:00:00Z,b,chat,gpt-5-mini,,openai,1000000,100000,ok,0.50,USD
        o3,2026-10-01T13:00:00Z,a,chat,gpt-5,,openai,200000,0,ok,,
    """,
    "meters": """
        event_id,occurred_at,tenant,product,meter,sku,quantity,unit,region
        e1,2026-10-01T05:00:00Z,a,chat,egress,internet,60,GB,us-east-1
        e2,2026-10-01T05:00:00Z,b,chat,egress,internet,40,GB,us-east-1
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


@pytest.fixture
def month(ledger_home, tmp_path):
    """The hand-worked month, its plain run written, the bill not yet ingested."""
    return build_month(tmp_path)


def build_month(tmp_path: Path, *, providers: bool = True) -> dict:
    """Load the book, ingest the month's usage (without the OpenAI requests unless `providers`) and
    write its plain run (the `allocate --json` document)."""
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "test.toml").write_text(BOOK, encoding="utf-8")
    cli("pricebook", "load", str(tmp_path / "books"))
    for kind in ("fleet", "requests", "meters"):
        path = tmp_path / f"{kind}.csv"
        lines = textwrap.dedent(FILES[kind]).strip().splitlines()
        if not providers:
            lines = [ln for ln in lines if ",openai," not in ln]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        cli("ingest", kind, str(path), "--register-new")
    doc = json.loads(cli("allocate", "--period", "2026-10", "--json"))
    assert doc["total"] == ("560.325000" if providers else "559.400000")
    return doc


def test_the_plain_run_is_the_hand_worked_book(month):
    assert month["by_category"]["gpu"] == "550.400000"
    assert month["by_category"]["egress"] == "9.000000"
    assert month["by_category"]["provider_tokens"] == "0.925000"
    assert month["by_kind"] == {"tenant": "64.965000", "idle_slack": "495.360000", "idle_reserve": "0.000000",
                                "unallocated": "0.000000"}


def test_reconcile_figures_priced_billed_variance_unmatched_and_drift(month):
    cli("ingest", "bill", str(BILL))
    doc = json.loads(cli("reconcile", "--period", "2026-10", "--bill-map", str(MAP), "--json"))
    rows = {(r["kind"], r["name"]): r for r in doc["resources"]}
    pool = rows[("pool", "h100-chat")]
    # 10 × 38.528 = 385.28, and the correction -3.00: 382.28 against 550.40
    assert (pool["priced"], pool["billed"], pool["difference"]) == ("550.400000", "382.280000", "-168.120000")
    assert pool["share"] == "-0.3055"  # -168.12 / 550.40 = -0.305450...
    assert (pool["corrections"], pool["list_cost"], pool["billed_cost"]) == ("-3.000000", "547.400000", "-3.000000")
    assert pool["rows"] == 11 and pool["rules"] == ["pools[1]", "pools[2]"]
    egress = rows[("category", "egress")]
    assert (egress["priced"], egress["billed"], egress["difference"], egress["share"]) == \
        ("9.000000", "9.450000", "0.450000", "0.0500")
    openai = rows[("provider", "openai")]
    assert (openai["priced"], openai["billed"], openai["share"]) == ("0.925000", None, None)
    assert openai["undefined_because"] == "no bill row is placed on it"
    # never dropped: the S3 bucket (2.30) and the plan's fee (effective 0, billed 385.28)
    unmatched = {u["service_name"]: u for u in doc["unmatched"]}
    assert unmatched["Amazon Simple Storage Service"]["effective_cost"] == "2.300000"
    assert unmatched["Amazon Simple Storage Service"]["resource_id"] == "ledger-facts-archive"
    assert unmatched["Savings Plans for AWS Compute usage"]["effective_cost"] == "0.000000"
    assert unmatched["Savings Plans for AWS Compute usage"]["billed_cost"] == "385.280000"
    total = doc["total"]
    assert total["priced"] == "559.400000"      # 550.40 + 9.00: the resources the bill covers
    assert total["billed"] == "394.030000"      # 382.28 + 9.45 + 2.30 + 0
    assert total["variance"] == "-165.370000"   # -168.12 + 0.45 + 2.30
    assert total["share"] == "-0.2956"
    assert (total["unmatched"], total["not_billed"]) == ("2.300000", "0.925000")
    assert (total["run_total"], total["trued_up_total"]) == ("560.325000", "394.955000")
    drift = {d["model"]: d for d in doc["drift"]}
    assert (drift["gpt-5"]["ours"], drift["gpt-5"]["reported"], drift["gpt-5"]["difference"]) == \
        ("0.225000", "0.225000", "0.000000")
    assert drift["gpt-5"]["requests"] == 1  # o3 has no reported cost
    assert (drift["gpt-5-mini"]["ours"], drift["gpt-5-mini"]["reported"], drift["gpt-5-mini"]["difference"],
            drift["gpt-5-mini"]["share"]) == ("0.450000", "0.500000", "0.050000", "0.1111")
    assert doc["bill_rows"] == 14 and len(doc["bill_batches"]) == 1


def test_reconcile_table_and_csv_say_the_same(month):
    cli("ingest", "bill", str(BILL))
    table = " ".join(cli("reconcile", "--period", "2026-10", "--bill-map", str(MAP)).split())
    # the table: money at 2 decimals half to even (560.325 -> 560.32, 394.955 -> 394.96), shares at 1
    assert "total: priced 559.40 · billed 394.03 · variance -165.37 (-29.6%)" in table
    assert "run total 560.32 → trued up 394.96" in table
    text = cli("reconcile", "--period", "2026-10", "--bill-map", str(MAP), "--csv")
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(text)))
    total = next(r for r in rows if r["section"] == "total" and r["kind"] == "total")
    assert (D(total["priced"]), D(total["billed"]), D(total["difference"])) == (D("559.4"), D("394.03"), D("-165.37"))
    drift = next(r for r in rows if r["section"] == "drift" and r["model"] == "gpt-5-mini")
    assert D(drift["difference"]) == D("0.05")


def test_true_up_books_variance_lines_that_sum_to_the_billed_total_exactly(month):
    cli("ingest", "bill", str(BILL))
    doc = json.loads(cli("allocate", "--period", "2026-10", "--true-up", "--bill-map", str(MAP), "--json"))
    assert doc["total"] == doc["lines_total"] == "394.955000"
    tu = doc["true_up"]
    # priced as `ledger reconcile` has it: the resources the bill covers (550.40 + 9.00), so that
    # billed − priced == variance; the OpenAI tokens (0.925) are not billed
    assert (tu["priced_total"], tu["billed_total"], tu["variance_total"], tu["unmatched"]) == \
        ("559.400000", "394.030000", "-165.370000", "2.300000")
    assert D(tu["billed_total"]) - D(tu["priced_total"]) == D(tu["variance_total"])
    assert (tu["not_billed"], tu["run_total"], tu["trued_up_total"]) == ("0.925000", "560.325000", "394.955000")
    assert D(tu["run_total"]) + D(tu["variance_total"]) == D(tu["trued_up_total"]) == D(doc["total"])
    pool = next(r for r in tu["resources"] if r["name"] == "h100-chat")
    assert (pool["hours_priced"], pool["hours_billed"], pool["coverage"]) == (10, 10, "1.0000")
    assert tu["partial_bill_allowed"] == []
    assert len(tu["bill_batches"]) == 1 and tu["bill_map"]["path"] == str(MAP)
    assert tu["tenants"] == {"a": "-12.339000", "b": "-4.023000"}
    start, end = store.month_bounds("2026-10")
    with store.session() as s:
        stored = runs.load_run(s, start=start, end=end)
    lines = stored.lines
    assert sum((ln.amount for ln in lines), D(0)) == D("394.955")
    variance = [ln for ln in lines if ln.kind == VARIANCE]
    # -168.12 over 41.28 : 13.76 : 495.36 = 0.075 : 0.025 : 0.9
    gpu = {(ln.tenant, ln.shared_from): ln.amount for ln in variance if ln.pool == "h100-chat"}
    assert gpu == {("a", None): D("-12.609"), ("b", None): D("-4.203"), (None, "idle_slack"): D("-151.308")}
    egress = {ln.tenant: ln.amount for ln in variance if ln.category == "egress"}
    assert egress == {"a": D("0.27"), "b": D("0.18")}
    other = [ln for ln in variance if ln.category == "other"]
    assert [(ln.tenant, ln.amount, ln.quantity, ln.unit) for ln in other] == [(None, D("2.30"), D(2), BILL_ROW)]
    # the resources the bill covers, and the unmatched cost, sum to the billed total with ==
    billed = [ln for ln in lines if ln.pool == "h100-chat" or ln.category in ("egress", "other")]
    assert sum((ln.amount for ln in billed), D(0)) == D("394.03")
    # the provider the bill does not cover keeps its priced lines
    assert sum((ln.amount for ln in lines if ln.provider == "openai"), D(0)) == D("0.925")
    assert all(ln.kind != VARIANCE for ln in lines if ln.provider == "openai")
    # reports carry a tenant's variance as its cost; idle variance stays off tenants
    rep = json.loads(cli("report", "unit-economics", "--period", "2026-10", "--json"))
    costs = {r["tenant"]: D(r["cost"]) for r in rep["rows"]}
    assert costs == {"a": D("41.28") + D("5.40") + D("0.225") + D("0.25") - D("12.339"),
                     "b": D("13.76") + D("3.60") + D("0.45") - D("4.023")}
    assert rep["unattributed"]["variance"] == "-149.008000"  # -151.308 + 2.30
    # reconciling the true-up run compares its priced lines, not its variance
    again = json.loads(cli("reconcile", "--period", "2026-10", "--bill-map", str(MAP), "--json"))
    assert again["run_true_up"] is True and again["total"]["variance"] == "-165.370000"


def test_a_true_up_run_exports_as_focus_with_its_variance_lines(month, tmp_path):
    cli("ingest", "bill", str(BILL))
    cli("allocate", "--period", "2026-10", "--true-up", "--bill-map", str(MAP), "--json")
    import csv

    for version in ("1.2", "1.0"):
        out = tmp_path / f"focus{version}.csv"
        cli("export", "--period", "2026-10", "--focus", str(out), "--focus-version", version)
        rows = list(csv.DictReader(out.open(encoding="utf-8")))
        assert sum((D(r["BilledCost"]) for r in rows), D(0)) == D("394.955")  # the true-up run's total
        described = [r["ChargeDescription"] for r in rows if "bill variance" in r["ChargeDescription"]]
        assert described and any("bill variance of tenant a" in d for d in described)


def test_when_the_bill_covers_every_resource_the_true_up_lines_sum_to_the_billed_total(ledger_home, tmp_path):
    build_month(tmp_path, providers=False)  # the pool and egress only: 559.40 priced
    cli("ingest", "bill", str(BILL))
    doc = json.loads(cli("allocate", "--period", "2026-10", "--true-up", "--bill-map", str(MAP), "--json"))
    assert doc["total"] == doc["lines_total"] == doc["true_up"]["billed_total"] == "394.030000"
    start, end = store.month_bounds("2026-10")
    with store.session() as s:
        lines = runs.load_run(s, start=start, end=end).lines
    assert sum((ln.amount for ln in lines), D(0)) == D("394.03")
    assert sum((ln.amount for ln in lines if ln.kind == VARIANCE), D(0)) == D("394.03") - D("559.40")


def test_without_true_up_nothing_changes(month):
    with store.session() as s:
        first = runs.list_runs(s)[0]
        digest, lines = first.inputs_digest, runs.run_lines(s, first.id)
    cli("ingest", "bill", str(BILL))
    doc = json.loads(cli("allocate", "--period", "2026-10", "--json"))
    assert doc["total"] == "560.325000" and "true_up" not in doc and "variance" not in doc["by_kind"]
    with store.session() as s:
        second = runs.list_runs(s)[0]
        assert second.id != first.id
        assert second.inputs_digest == digest  # a bill is not an input of a plain run
        assert runs.run_lines(s, second.id) == lines


def test_true_up_refuses_a_period_without_a_bill_and_a_bad_map(month, tmp_path):
    out = cli_fails("allocate", "--period", "2026-10", "--true-up", "--bill-map", str(MAP))
    assert "no bill row counts in 2026-10-01 to 2026-11-01" in out
    bad = tmp_path / "bad.toml"
    bad.write_text('[[pools]]\npool = "p"\nResourceID = "x"\n[[categories]]\ncategory = "gpu"\nServiceName = "EC2"\n'
                   '[[providers]]\nprovider = "q"\n', encoding="utf-8")
    out = " ".join(cli_fails("reconcile", "--period", "2026-10", "--bill-map", str(bad)).split())
    assert f"{bad}: pools[1]: unknown key 'ResourceID'" in out
    assert f"{bad}: categories[1]: category 'gpu' is not one of tool, egress" in out
    assert f"{bad}: providers[1]: a rule needs at least one condition" in out
    with pytest.raises(ReconcileError):
        load_map(bad)
    with store.session() as s:
        assert len(runs.list_runs(s)) == 1  # nothing written


def test_the_map_in_the_ledger_home_is_the_default(month, ledger_home):
    cli("ingest", "bill", str(BILL))
    out = cli_fails("reconcile", "--period", "2026-10")
    assert "no bill map: name one with --bill-map" in out
    shutil.copy(MAP, ledger_home / "bill-map.toml")
    doc = json.loads(cli("reconcile", "--period", "2026-10", "--json"))
    assert doc["total"]["variance"] == "-165.370000"


def test_rules_are_tried_pools_first_then_in_file_order(month, tmp_path):
    cli("ingest", "bill", str(BILL))
    m = tmp_path / "m.toml"
    m.write_text(textwrap.dedent("""
        [[categories]]
        category = "storage"
        ServiceCategory = "*"
        [[pools]]
        pool = "h100-chat"
        ResourceId = "arn:aws:ec2:*:instance/i-0a1b2c3d4e5f60718"
    """), encoding="utf-8")
    doc = json.loads(cli("reconcile", "--period", "2026-10", "--bill-map", str(m), "--json"))
    rows = {(r["kind"], r["name"]): r for r in doc["resources"]}
    assert rows[("pool", "h100-chat")]["billed"] == "382.280000"  # the pool rule wins, though written last
    assert rows[("category", "storage")]["billed"] == "11.750000"  # 9.45 + 2.30 + 0: everything else
    assert doc["unmatched"] == []


FX_BOOK = """
[book]
name = "fx"
version = "2026-10-01"
currency = "USD"
source = "hand-worked rates"
retrieved_at = 2026-10-01

[[fx]]
from = "EUR"
to = "USD"
rate = "1.10"
effective_from = 2026-10-01T00:00:00Z
"""


def bill_with(tmp_path: Path, name: str, change) -> Path:
    """The sample bill with `change(rows)` applied."""
    import csv
    with BILL.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    change(rows)
    out = tmp_path / name
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return out


def test_a_bill_in_another_currency_is_converted_at_the_rate_in_force(month, tmp_path):
    def egress_in_euros(rows):
        rows[12]["BillingCurrency"] = "EUR"  # 9.45 EUR of egress
    path = bill_with(tmp_path, "eur.csv", egress_in_euros)
    cli("ingest", "bill", str(path))
    out = " ".join(cli_fails("reconcile", "--period", "2026-10", "--bill-map", str(MAP)).split())
    assert "bill rows in EUR: no FX rate in force for EUR->USD at 2026-10-01T00:00:00+00:00" in out
    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "fx.toml").write_text(FX_BOOK, encoding="utf-8")
    cli("pricebook", "load", str(tmp_path / "fx"))
    doc = json.loads(cli("reconcile", "--period", "2026-10", "--bill-map", str(MAP), "--json"))
    egress = next(r for r in doc["resources"] if r["name"] == "egress")
    assert egress["billed"] == "10.395000"  # 9.45 × 1.10


def test_two_versions_of_an_export_are_named_and_a_late_correction_counts_where_it_is_booked(month, tmp_path):
    cli("ingest", "bill", str(BILL))

    def restated(rows):
        rows[13]["EffectiveCost"] = rows[13]["BilledCost"] = "2.4"  # S3 restated: 2.30 -> 2.40
    cli("ingest", "bill", str(bill_with(tmp_path, "restated.csv", restated)))
    doc = json.loads(cli("reconcile", "--period", "2026-10", "--bill-map", str(MAP), "--json"))
    assert doc["total"]["unmatched"] == "4.700000"  # both versions count, and the notes say so
    assert any(n.startswith("bill rows of AWS in this period come from batches ") for n in doc["notes"])
    with store.session() as s:
        store.close_period(s, name="2026-10")

    def late(rows):
        rows[10]["EffectiveCost"] = rows[10]["BilledCost"] = "-1.5"  # a second correction of October
        del rows[11:]
        del rows[:10]
    path = bill_with(tmp_path, "late.csv", late)
    assert "touches closed period 2026-10" in cli_fails("ingest", "bill", str(path))
    batch = json.loads(cli("ingest", "bill", str(path), "--as-adjustment", "--json"))
    period = batch["booked_period"]
    cli("allocate", "--period", period)
    doc = json.loads(cli("reconcile", "--period", period, "--bill-map", str(MAP), "--json"))
    pool = next(r for r in doc["resources"] if r["name"] == "h100-chat")
    assert (pool["priced"], pool["billed"], pool["corrections"], pool["rows"]) == \
        ("0.000000", "-1.500000", "-1.500000", 1)
    assert pool["share"] is None and pool["undefined_because"] == "nothing of it is priced in the run"
    # a true-up of that month books it on the pool, on no tenant: the pool produced no line there
    run = json.loads(cli("allocate", "--period", period, "--true-up", "--bill-map", str(MAP), "--json"))
    assert run["total"] == run["lines_total"] == "-1.500000"
    start, end = store.month_bounds(period)
    with store.session() as s:
        lines = runs.load_run(s, start=start, end=end).lines
    assert [(ln.kind, ln.tenant, ln.pool, ln.category, ln.quantity, ln.unit, ln.amount) for ln in lines] == \
        [(VARIANCE, None, "h100-chat", "gpu", D(1), BILL_ROW, D("-1.5"))]
