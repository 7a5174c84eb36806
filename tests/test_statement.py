"""The month-end statement (issue 28 item 9): `ledger statement --period P --pdf FILE` writes one page
whose text, read back with pypdf, carries the run's numbers; `--json` and `--csv` carry the same
statement exactly. The book is the hand-worked month of tests/test_allocate_cli.py."""
from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from decimal import Decimal as D

import pytest
from pypdf import PdfReader

from test_allocate_cli import cli, cli_fails, flat, ledger  # noqa: F401 (the fixture)

pytestmark = pytest.mark.store

# The book of test_allocate_cli (hand-worked there): total 338.90 = tenants 322.70 (a 164.10, b 158.60)
# + idle slack 9.00 + idle reserve 7.20; by category gpu 28.80 + provider tokens 0.10 + observability
# 310.00; failed work 7.20 (q3 of the failed task t3); a has one successful task (t1): own cost per
# success 164.10 / 1; b none (undefined); all-in 338.90 / 1.


def pdf_text(path) -> str:
    reader = PdfReader(str(path))
    assert len(reader.pages) == 1
    return " ".join(reader.pages[0].extract_text().split())


def test_statement_pdf_json_and_csv_carry_the_run_and_the_close(ledger, tmp_path):
    run = json.loads(cli("allocate", "--period", "2026-10", "--json"))
    doc = json.loads(cli("statement", "--period", "2026-10", "--json"))
    assert doc["run"]["run_id"] == run["run_id"] and doc["run"]["kind"] == "allocation"
    assert (doc["total"], doc["tenants_cost"], doc["failed_work"]) == ("338.900000", "322.700000", "7.200000")
    assert doc["off_tenant"] == {"idle_slack": "9.000000", "idle_reserve": "7.200000", "unallocated": "0.000000"}
    assert {k: v for k, v in doc["by_category"].items() if D(v)} == \
        {"gpu": "28.800000", "provider_tokens": "0.100000", "observability": "310.000000"}
    assert [(t["tenant"], t["cost"], t["successful_tasks"], t["cost_per_successful_task"]) for t in doc["tenants"]] \
        == [("a", "164.100000", 1, "164.100000"), ("b", "158.600000", 0, None)]
    assert doc["cost_per_successful_task_all_in"] == "338.900000"
    assert doc["close"]["status"] == "open"
    assert doc["reconciliation"]["status"] == "not reconciled"
    assert doc["reconciliation"]["text"].startswith("not reconciled with a bill: no bill map")
    # the sign-off, then the PDF
    cli("close", "--period", "2026-10", "--by", "Dana Reyes", "--note", "checked against the invoice")
    pdf = tmp_path / "statement.pdf"
    out = flat(cli("statement", "--period", "2026-10", "--pdf", str(pdf)))
    assert out.startswith(f"statement of run {run['run_id']} (closed by Dana Reyes at ")
    text = pdf_text(pdf)
    closed = json.loads(cli("statement", "--period", "2026-10", "--json"))["close"]
    for expected in ("Month-end statement - 2026-10 (USD)", closed["text"], "note: checked against the invoice",
                     f"allocation run {run['run_id']}", "price books test-book@2026-10-01",
                     f"inputs digest {run['inputs_digest']}", "Total 338.90 USD",
                     "tenants' own cost 322.70", "idle capacity (slack) 9.00", "idle reserve 7.20",
                     "unallocated shared charges 0.00", "total 338.90", "failed work", "7.20 USD",
                     "gpu 28.80", "provider_tokens 0.10", "observability 310.00",
                     "a 164.10 1 164.10", "b 158.60 0 undefined", "tenants' own cost 322.70 1",
                     "all-in (run total / all successful tasks) 338.90 1 338.90",
                     "Reconciliation: not reconciled with a bill: no bill map"):
        assert expected in text, (expected, text)
    # CSV: one row per figure, exact, each with the close
    rows = list(csv.DictReader(io.StringIO(cli("statement", "--period", "2026-10", "--csv"))))
    by = {(r["section"], r["name"]): r for r in rows}
    assert by[("total", "run total")]["amount"] == "338.900000"
    assert sum(D(r["amount"]) for r in rows if r["section"] == "category") == D("338.9")
    assert sum(D(r["amount"]) for r in rows if r["section"] in ("tenants", "off_tenant")) == D("338.9")
    assert (by[("tenant", "a")]["cost_per_successful_task"], by[("tenant", "b")]["cost_per_successful_task"]) == \
        ("164.100000", "")
    assert {r["period_close"] for r in rows} == {closed["text"]}


def test_statement_refusals(ledger, tmp_path):
    assert "give either --period YYYY-MM or --run ID" in flat(cli_fails("statement"))
    assert "no allocation run" in flat(cli_fails("statement", "--period", "2026-10"))
    assert "it is a folder" in flat(cli_fails("statement", "--period", "2026-10", "--pdf", str(tmp_path)))


def test_a_long_tenant_list_still_fits_one_page_and_adds_up():
    from ledger.export.statement import MAX_TENANT_ROWS, statement_as_pdf, tenant_rows
    from ledger.reports.statement import Reconciled, Statement, TenantFigures

    # 30 tenants of 1.005 each (30.15): shown as 19 rows and "11 other tenants" 11.055; the costs as
    # printed add to 30.15 by largest remainder (each 1.005 alone would print 1.00 or 1.01)
    tenants = tuple(TenantFigures(tenant=f"t{i:02d}", cost=D("1.005"), successful_tasks=1,
                                  cost_per_successful_task=D("1.005"), undefined_because=None) for i in range(30))
    st = Statement(run_id="r1", kind="allocation", start=datetime(2026, 10, 1, tzinfo=timezone.utc),
                   end=datetime(2026, 11, 1, tzinfo=timezone.utc), currency="USD", created_at=None,
                   price_books=("b@1",), inputs_digest="d", code_version="v", idle_policy="separate",
                   basis="active_tokens", total=D("30.15"), by_category={"gpu": D("30.15")},
                   tenants_cost=D("30.15"), off_tenant={}, failed_work=D(0), tenants=tenants, successful_tasks=30,
                   all_in=D("1.005"), reconciliation=Reconciled(status="not reconciled", text="not reconciled"),
                   closing=None)
    rows = tenant_rows(st)
    assert len(rows) == MAX_TENANT_ROWS and rows[-1][:3] == ("11 other tenants", D("11.055"), 11)
    data = statement_as_pdf(st, generated_at=datetime(2026, 11, 2, tzinfo=timezone.utc), version="test")
    text = " ".join(PdfReader(io.BytesIO(data)).pages[0].extract_text().split())
    assert "tenants' own cost 30.15 30" in text and "11 other tenants" in text
    assert "NOT A CALENDAR MONTH: NO CLOSE" in text


def test_the_reconciliation_line_says_how_the_run_stands_with_the_bill(ledger_home, tmp_path):
    from test_reconcile import BILL, MAP, build_month

    build_month(tmp_path)
    cli("ingest", "bill", str(BILL))
    # the numbers of test_reconcile: priced 559.40 on the bill, billed 394.03, variance -165.37 (-29.6%),
    # the OpenAI tokens (0.925) on no bill row
    rec = json.loads(cli("statement", "--period", "2026-10", "--bill-map", str(MAP), "--json"))["reconciliation"]
    assert (rec["status"], rec["priced"], rec["billed"], rec["variance"]) == \
        ("reconciled", "559.400000", "394.030000", "-165.370000")
    assert rec["text"] == ("reconciled with the bill: priced 559.40 USD, billed 394.03 USD, variance -165.37 USD "
                           "(-29.6%); not on the bill 0.92 USD")
    cli("allocate", "--period", "2026-10", "--true-up", "--bill-map", str(MAP))
    doc = json.loads(cli("statement", "--period", "2026-10", "--json"))
    assert (doc["run"]["kind"], doc["total"], doc["reconciliation"]["status"]) == ("true-up", "394.955000", "trued-up")
    assert D(doc["tenants_cost"]) + sum(D(v) for v in doc["off_tenant"].values()) == D("394.955")
    assert sum(D(v) for v in doc["by_category"].values()) == D("394.955")
