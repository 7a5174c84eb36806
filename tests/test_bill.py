"""`ledger ingest bill`: FOCUS cost-and-usage rows (CSV and Parquet, FOCUS 1.0 to 1.3 names) as one
atomic, idempotent batch; bad bills refused with file, line and column, changing nothing.

The sample is tests/data/bills/aws-focus-2026-10.csv (AWS Data Exports, FOCUS 1.0 with AWS columns;
its README says where the columns come from). Runs on SQLite, and on PostgreSQL when
LEDGER_TEST_DATABASE_URL is set.
"""
from __future__ import annotations

import csv
import json
from decimal import Decimal as D
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from ledger import config, facts, store
from ledger.cli import app
from ledger.ingest import IngestError, list_batches
from ledger.ingest.bill import MANDATORY, ingest_bill

pytestmark = pytest.mark.store

BILL = Path(__file__).parent / "data" / "bills" / "aws-focus-2026-10.csv"
runner = CliRunner()


def rows_of(path: Path = BILL) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def write(path: Path, rows: list[dict], columns: list[str] | None = None) -> Path:
    columns = columns or list(rows[0])
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def bill_facts(sql: str):
    with store.session() as s:
        con = facts.open_ledger_facts(s, config.ledger_home())
    return con.execute(sql).fetchall()


def state(home: Path) -> tuple:
    """What an ingest can change: the batches and the fact files."""
    with store.session() as s:
        batches = [(b.id, b.rows_new) for b in list_batches(s)]
    return batches, sorted(p.name for p in (home / "facts").rglob("*.parquet"))


def test_the_aws_focus_export_is_one_batch_of_exact_rows(ledger_home):
    result = ingest_bill([BILL])
    assert (result.rows_read, result.rows_new, result.rows_duplicate) == (14, 14, 0)
    assert result.files[0].format == "focus:csv" and result.files[0].path == str(BILL)
    (n, effective, billed, listed), = bill_facts(
        "SELECT count(*), sum(effective_cost), sum(billed_cost), sum(list_cost) FROM bill")
    # 10 × 38.528 − 3.00 + 0 + 9.45 + 2.30; the plan's fee carries the billed cost of the covered hours
    assert (n, effective, billed) == (14, D("394.03"), D("394.03"))
    assert listed == D("559.15")  # 10 × 55.04 − 3.00 + 0 + 9.45 + 2.30
    (row,) = bill_facts("SELECT charge_category, charge_class, provider, service_name, effective_cost, tags, "
                        "booked_at FROM bill WHERE charge_class IS NOT NULL")
    assert row[:5] == ("Usage", "Correction", "AWS", "Amazon Elastic Compute Cloud", D("-3"))
    assert json.loads(row[5]) == {}
    assert row[6].isoformat() == "2026-10-01T03:00:00+00:00"
    tags, extras, line_id = bill_facts("SELECT tags, extras, line_id FROM bill WHERE booked_at = "
                                       "TIMESTAMPTZ '2026-10-01 00:00:00+00' AND charge_category = 'Usage' "
                                       "AND service_name = 'Amazon Elastic Compute Cloud'")[0]
    assert json.loads(tags) == {"user:ledger-pool": "h100-chat", "user:team": "ml-platform"}
    assert json.loads(extras) == {"x_CostCategories": {}, "x_Discounts": {}, "x_Operation": "RunInstances",
                                  "x_ServiceCode": "AmazonEC2", "x_UsageType": "USE1-BoxUsage:p5.48xlarge"}
    assert len(line_id) == 34 and line_id.endswith("-1")


def test_ingesting_the_export_again_adds_nothing_and_so_does_the_same_export_as_parquet(ledger_home, tmp_path):
    ingest_bill([BILL])
    again = ingest_bill([BILL])
    assert (again.rows_new, again.rows_duplicate) == (0, 14)
    # AWS writes Parquet with DOUBLE costs, timestamps without a zone and MAP tags: the same rows
    pq = tmp_path / "aws.parquet"
    con = duckdb.connect()
    money = ("BilledCost", "EffectiveCost", "ListCost", "ConsumedQuantity", "ContractedCost", "ListUnitPrice",
             "ContractedUnitPrice", "PricingQuantity")
    instants = ("ChargePeriodStart", "ChargePeriodEnd", "BillingPeriodStart", "BillingPeriodEnd")
    cols = []
    for c in rows_of()[0]:
        if c in money:
            cols.append(f'CAST("{c}" AS DOUBLE) AS "{c}"')
        elif c in instants:
            cols.append(f'CAST(replace("{c}", \'Z\', \'\') AS TIMESTAMP) AS "{c}"')
        elif c in ("Tags", "x_CostCategories"):
            cols.append(f'CAST(json("{c}") AS MAP(VARCHAR, VARCHAR)) AS "{c}"')
        elif c == "x_Discounts":
            cols.append(f'CAST(json("{c}") AS MAP(VARCHAR, DOUBLE)) AS "{c}"')
        else:
            cols.append(f'"{c}"')
    con.execute(f"COPY (SELECT {', '.join(cols)} FROM read_csv('{BILL}', all_varchar=true)) TO '{pq}' (FORMAT parquet)")
    described = con.execute(f"DESCRIBE SELECT BilledCost, ChargePeriodStart, Tags FROM '{pq}'").fetchall()
    types = {r[0]: r[1] for r in described}
    assert types == {"BilledCost": "DOUBLE", "ChargePeriodStart": "TIMESTAMP", "Tags": "MAP(VARCHAR, VARCHAR)"}
    as_parquet = ingest_bill([pq])
    assert (as_parquet.rows_read, as_parquet.rows_new, as_parquet.rows_duplicate) == (14, 0, 14)
    assert bill_facts("SELECT count(*) FROM bill") == [(14,)]


def test_identical_rows_of_one_export_stay_two_rows(ledger_home, tmp_path):
    rows = rows_of()
    twice = write(tmp_path / "twice.csv", [rows[12], rows[12], rows[13]])
    result = ingest_bill([twice])
    assert (result.rows_new, result.rows_duplicate) == (3, 0)
    ids = [r[0] for r in bill_facts("SELECT line_id FROM bill ORDER BY line_id")]
    assert sorted(i.rsplit("-", 1)[1] for i in ids) == ["1", "1", "2"]
    assert bill_facts("SELECT sum(effective_cost) FROM bill") == [(D("9.45") * 2 + D("2.3"),)]
    assert ingest_bill([twice]).rows_new == 0


def test_focus_1_3_provider_and_naive_utc_instants_and_unknown_columns(ledger_home, tmp_path):
    rows = rows_of()[12:14]
    for r in rows:
        r["ServiceProviderName"], r["ProviderName"] = "Amazon Web Services", ""
        r["HostProviderName"] = "Amazon Web Services"  # a FOCUS 1.3 column the ledger does not read
        r["ChargePeriodStart"] = "2026-10-01 00:00:00"  # FOCUS instants are UTC
        r["ChargePeriodEnd"] = "2026-10-02T02:00:00+02:00"
    path = write(tmp_path / "focus13.csv", rows)
    assert ingest_bill([path]).rows_new == 2
    got = bill_facts("SELECT DISTINCT provider, charge_period_start, charge_period_end FROM bill")
    assert [(p, a.isoformat(), b.isoformat()) for p, a, b in got] == \
        [("Amazon Web Services", "2026-10-01T00:00:00+00:00", "2026-10-02T00:00:00+00:00")]


def test_a_bill_missing_mandatory_columns_is_refused_naming_file_and_columns(ledger_home, tmp_path):
    rows = rows_of()
    columns = [c for c in rows[0] if c not in ("ListCost", "BillingCurrency", "ProviderName")]
    path = write(tmp_path / "short.csv", rows, columns)
    before = state(ledger_home)
    r = runner.invoke(app, ["ingest", "bill", str(path)])
    assert r.exit_code == 1
    assert r.output.splitlines() == [
        f"{path}:1: ListCost: required FOCUS column is missing",
        f"{path}:1: BillingCurrency: required FOCUS column is missing",
        f"{path}:1: ServiceProviderName: required FOCUS column is missing (ProviderName in FOCUS 1.0 to 1.2)"]
    assert state(ledger_home) == before
    assert set(MANDATORY) <= set(rows[0])  # the sample itself has every one


def test_bad_values_are_refused_with_file_line_and_column_and_change_nothing(ledger_home, tmp_path):
    ingest_bill([BILL])
    before = state(ledger_home)
    rows = rows_of()
    rows[2]["BilledCost"] = "n/a"                      # line 4: text in a cost column
    rows[4]["BillingCurrency"] = "USX"                 # line 6: not ISO 4217
    rows[6]["EffectiveCost"] = "0.0000000000001"       # line 8: 13 places, never rounded
    rows[7]["ChargePeriodEnd"] = rows[7]["ChargePeriodStart"]
    rows[8]["Tags"] = "team=ml"
    rows[9]["ChargeCategory"] = "usage"
    rows[13]["ChargePeriodStart"] = "2026-10-15"       # a date alone is no instant
    path = write(tmp_path / "bad.csv", rows)
    r = runner.invoke(app, ["ingest", "bill", str(path)])
    assert r.exit_code == 1
    assert r.output.splitlines() == [
        f"{path}:4: BilledCost: 'n/a' is not a decimal number",
        f"{path}:6: BillingCurrency: 'USX' is not an ISO 4217 currency code",
        f"{path}:8: EffectiveCost: '0.0000000000001' has more than 12 decimal places (the ledger keeps 12; it never "
        "rounds)",
        f"{path}:9: ChargePeriodEnd: ChargePeriodEnd 2026-10-01T07:00:00Z is not after ChargePeriodStart "
        "2026-10-01T07:00:00Z",
        f"{path}:10: Tags: 'team=ml' is not a JSON object (FOCUS writes Tags as {{\"key\": \"value\", ...}})",
        f"{path}:11: ChargeCategory: 'usage' is not one of Usage, Purchase, Tax, Credit, Adjustment",
        f"{path}:15: ChargePeriodStart: '2026-10-15' is not an ISO 8601 instant (date, time and UTC offset, e.g. "
        "2026-10-01T12:00:00Z)",
        f"{path}:15: ChargePeriodEnd: ChargePeriodEnd 2026-10-02T00:00:00Z is not after ChargePeriodStart 2026-10-15"]
    assert state(ledger_home) == before


def test_a_parquet_bill_names_rows_and_a_quoted_line_break_counts_as_lines(ledger_home, tmp_path):
    rows = rows_of()[12:14]
    rows[0]["ChargeDescription"] = "first line\nsecond line"  # the row spans lines 2 and 3
    rows[1]["BilledCost"] = "1,5"
    path = write(tmp_path / "multi.csv", rows)
    with pytest.raises(IngestError) as e:
        ingest_bill([path])
    assert [str(p) for p in e.value.problems] == [
        f"{path}:2: ChargeDescription: 'first line?second line' contains a control character (NUL, tab, line break "
        "or another)",
        f"{path}:4: BilledCost: '1,5' is not a decimal number"]
    pq = tmp_path / "bad.parquet"
    duckdb.execute(f"COPY (SELECT * REPLACE (CASE WHEN ResourceId IS NULL THEN 'x' ELSE BillingCurrency END AS "
                   f"BillingCurrency) FROM read_csv('{BILL}', all_varchar=true)) TO '{pq}' (FORMAT parquet)")
    with pytest.raises(IngestError) as e:
        ingest_bill([pq])
    assert [str(p) for p in e.value.problems] == [f"{pq}:12: BillingCurrency: 'x' is not an ISO 4217 currency code",
                                                  f"{pq}:13: BillingCurrency: 'x' is not an ISO 4217 currency code"]


def test_dry_run_and_formats(ledger_home, tmp_path):
    before = state(ledger_home)
    r = runner.invoke(app, ["ingest", "bill", str(BILL), "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["dry_run"], doc["rows_read"], doc["rows_new"], doc["batch_id"]) == (True, 14, 14, None)
    assert state(ledger_home) == before
    jl = tmp_path / "bill.jsonl"
    jl.write_text("{}\n", encoding="utf-8")
    r = runner.invoke(app, ["ingest", "bill", str(jl)])
    assert r.exit_code == 1
    assert r.output.strip() == (f"{jl}: a FOCUS bill is CSV or Parquet (the extension '.jsonl'); use --format csv or "
                                "--format parquet")


def test_a_closed_month_is_refused_and_a_late_correction_books_as_an_adjustment(ledger_home, tmp_path):
    with store.session() as s:
        store.close_period(s, name="2026-10")
    r = runner.invoke(app, ["ingest", "bill", str(BILL)])
    assert r.exit_code == 1 and "touches closed period 2026-10" in r.output
    correction = write(tmp_path / "late.csv", [rows_of()[10]])
    result = ingest_bill([correction], as_adjustment=True)
    assert result.booked_period is not None and result.booked_period > "2026-10"
    (booked, start), = bill_facts("SELECT booked_at, charge_period_start FROM bill")
    assert start.isoformat() == "2026-10-01T03:00:00+00:00"  # when it happened
    assert booked == store.month_bounds(result.booked_period)[0]  # when it counts


def test_undo_removes_a_bill_batch(ledger_home):
    result = ingest_bill([BILL])
    r = runner.invoke(app, ["batches", "undo", result.batch_id])
    assert r.exit_code == 0, r.output
    assert bill_facts("SELECT count(*) FROM bill") == [(0,)]
