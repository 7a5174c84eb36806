"""Allocation exports on a small ledger built here: the workbook's formulas (recalculated by
LibreOffice) give the run's totals, the CSV carries every line, and a tenant named like a formula
arrives in every export (workbooks, CSV, FOCUS, the budget workbook) as inert text."""
from __future__ import annotations

import csv
import io
import json
import textwrap
from decimal import Decimal as D

import openpyxl
import pytest
from typer.testing import CliRunner

from ledger.cli import app
from test_allocate_support import TEST_BOOK as BOOK
from ledger.export import safe_text
from ledger.export.xlsx import recalculate

runner = CliRunner()
EVIL = '=HYPERLINK("http://x","y")'
INERT = "'" + EVIL


# Hour 10: 2 GPUs x $3.60 = 7.20, K = 2 x 3,600 s x 1 = 7,200 tokens, W = 1,800 + 3,600 = 5,400:
#   r = 7.20 / 7,200 = $0.001 a token: the formula tenant 1.80, b 3.60, idle slack 1.80.
# Hour 11: no requests: idle slack 7.20.
# Provider (the formula tenant): 60,000 x 1.25/1M + 40,000 x 0.125/1M + 2,000 x 10/1M = 0.10
# Charge c1: 310.00 even over both tenants: 155.00 each.
# Total 7.20 + 7.20 + 0.10 + 310.00 = 324.50; formula tenant 156.90; b 158.60; idle slack 9.00.
FILES = {
    "fleet": """
        interval_id,pool,start,end,device,gpus,region,purchase_option,role,capacity_tokens_per_gpu_s
        s1,p1,2026-10-01T10:00:00Z,2026-10-01T12:00:00Z,H100,2,us-east-1,on_demand,serving,1
    """,
    "requests": """
        request_id,occurred_at,tenant,product,model,pool,provider,task_id,input_tokens,cached_input_tokens,output_tokens,status
        q1,2026-10-01T10:05:00Z,"=HYPERLINK(""http://x"",""y"")",chat,llama,p1,,t1,1000,0,800,ok
        q2,2026-10-01T10:30:00Z,b,search,llama,p1,,t2,3000,0,600,ok
        q3,2026-10-01T12:00:00Z,"=HYPERLINK(""http://x"",""y"")",chat,gpt-5,,openai,t1,100000,40000,2000,ok
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


@pytest.fixture
def ledger(ledger_home, tmp_path):
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "test.toml").write_text(BOOK, encoding="utf-8")
    cli("pricebook", "load", str(tmp_path / "books"))
    for kind in ("fleet", "requests", "charges"):
        path = tmp_path / f"{kind}.csv"
        path.write_text(textwrap.dedent(FILES[kind]).strip() + "\n", encoding="utf-8")
        cli("ingest", kind, str(path), "--register-new")
    doc = json.loads(cli("allocate", "--period", "2026-10", "--json"))
    assert doc["total"] == "324.500000"
    return doc


@pytest.mark.parametrize("text,expected", [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=1", "'\t=1"),
    ("\r=1", "'\r=1"), ("\n=1", "'\n=1"), ("acme", "acme"), ("a=b", "a=b"), ("", ""), (None, None),
    (" =1", "' =1"), ("  +1", "'  +1"), (" acme", " acme"),
])
def test_safe_text(text, expected):
    assert safe_text(text) == expected


@pytest.mark.store
def test_workbook_totals_are_formulas_that_give_the_run_totals(ledger, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    cli("export", "--period", "2026-10", "--xlsx", str(out / "run.xlsx"))
    wb = openpyxl.load_workbook(out / "run.xlsx")
    assert wb.sheetnames == ["Summary", "By tenant", "By product", "By category", "Cost per success", "Lines",
                             "Provenance"]
    assert wb["By tenant"]["C2"].value.startswith("=SUMPRODUCT(")
    assert all(wb[s].freeze_panes for s in wb.sheetnames)
    prov = {r[0]: r[1] for r in wb["Provenance"].iter_rows(min_row=2, values_only=True) if r[0]}
    assert prov["run"] == ledger["run_id"] and prov["price book versions"] == "test-book@2026-10-01"
    assert prov["idle policy"] == "separate" and prov["reporting currency"] == "USD"

    wb = openpyxl.load_workbook(recalculate(out / "run.xlsx", tmp_path / "recalc"), data_only=True)
    by_cat = {r[0]: r[1] for r in wb["By category"].iter_rows(min_row=2, values_only=True)}
    assert by_cat["gpu"] == pytest.approx(14.40) and by_cat["provider_tokens"] == pytest.approx(0.10)
    assert by_cat["observability"] == pytest.approx(310.00)
    assert by_cat["total (formulas over the lines)"] == pytest.approx(324.50, abs=1e-9)
    assert by_cat["difference (must be 0)"] == pytest.approx(0, abs=1e-9)
    bt = wb["By tenant"]
    head = [c.value for c in bt[1]]
    rows = {(r[0], r[1]): r for r in bt.iter_rows(min_row=2, values_only=True)}
    total = head.index("total")
    assert rows[("tenant", INERT)][total] == pytest.approx(156.90)  # 1.80 + 0.10 + 155.00
    assert rows[("tenant", "b")][total] == pytest.approx(158.60)    # 3.60 + 155.00
    assert rows[("idle_slack", None)][total] == pytest.approx(9.00)
    assert rows[("total", None)][total] == pytest.approx(324.50)
    # no outcome was ingested: both costs per successful task are undefined, and say why
    per = {(r[0], r[1]): r for r in wb["Cost per success"].iter_rows(min_row=2, values_only=True)}
    why = "undefined: no task with outcome success was decided in the period"
    assert per[("all-in", "(whole run: every line)")][2:6] == (pytest.approx(324.50), 0, why, why)
    assert per[("own cost", "b")][2:6] == (pytest.approx(158.60), 0, why, why)


def test_workbook_cost_per_success_sheet_has_both_figures_as_formulas(tmp_path):
    # The hand-worked run of test_reports (TWO_FIGURES): total 131.00, 5 successful tasks;
    # a 60.10 over 3 successes, b 54.70 over 2.
    from test_allocate_support import index, run
    from test_reports import DAY, FLEET, GPU_BOOK, TWO_FIGURES

    from ledger.export import allocation_as_xlsx
    from ledger.reports import ALL_IN_DEFINITION, OWN_DEFINITION, run_data_of

    data = run_data_of(run(index(GPU_BOOK), *DAY, fleet=FLEET, **TWO_FIGURES), run_id="r2")
    path = tmp_path / "run.xlsx"
    allocation_as_xlsx(data, path=path)
    ws = openpyxl.load_workbook(path)["Cost per success"]
    assert [c.value for c in ws[1]] == ["figure", "tenant", "cost", "successful tasks", "cost per successful task",
                                        "as reported (ledger report)", "definition"]
    n = len(data.lines) + 1
    assert ws["C2"].value == f"=SUM('Lines'!$M$2:$M${n})"          # every line: the run total
    assert ws["D2"].value == "=SUM(D3:D4)"                           # every tenant's successes
    assert ws["E2"].value == '=IF(D2=0,"undefined: no task with outcome success was decided in the period",C2/D2)'
    assert ws["G2"].value == f"all-in = {ALL_IN_DEFINITION}"
    assert ws["C3"].value == f"=SUMPRODUCT(EXACT('Lines'!$C$2:$C${n},$B3)*'Lines'!$M$2:$M${n})"  # the tenant's lines
    assert ws["E3"].value.endswith(",C3/D3)")
    assert [(ws[f"A{r}"].value, ws[f"B{r}"].value, ws[f"D{r}"].value, ws[f"G{r}"].value) for r in (3, 4)] == \
        [("own cost", "a", 3, f"own cost = {OWN_DEFINITION}"), ("own cost", "b", 2, f"own cost = {OWN_DEFINITION}")]
    # the ledger's own figures (half-even to 1e-6) stand beside the formulas
    assert [ws[f"F{r}"].value for r in (2, 3, 4)] == [pytest.approx(26.2), pytest.approx(20.033333),
                                                      pytest.approx(27.35)]

    per = {r[1]: r for r in openpyxl.load_workbook(recalculate(path, tmp_path / "recalc"), data_only=True)
           ["Cost per success"].iter_rows(min_row=2, values_only=True)}
    all_in = per["(whole run: every line)"]
    assert all_in[2:5] == (pytest.approx(131.00), 5, pytest.approx(26.20))      # 131.00 / 5
    assert per["a"][2:5] == (pytest.approx(60.10), 3, pytest.approx(60.10 / 3))  # 20.0333...
    assert per["b"][2:5] == (pytest.approx(54.70), 2, pytest.approx(27.35))      # 54.70 / 2


@pytest.mark.store
def test_lines_csv(ledger, tmp_path):
    cli("export", "--period", "2026-10", "--lines", str(tmp_path / "lines.csv"))
    rows = list(csv.DictReader(io.StringIO((tmp_path / "lines.csv").read_text(encoding="utf-8"))))
    assert len(rows) == ledger["lines"]
    assert sum(D(r["amount"]) for r in rows) == D("324.500000")
    assert {r["run_id"] for r in rows} == {ledger["run_id"]}
    assert {r["price_books"] for r in rows} == {"test-book@2026-10-01"}


@pytest.mark.store
def test_a_formula_tenant_is_inert_text_in_every_export(ledger, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    cli("export", "--period", "2026-10", "--xlsx", str(out / "run.xlsx"), "--lines", str(out / "lines.csv"),
        "--focus", str(out / "focus.csv"))

    for name in ("lines.csv", "focus.csv"):
        text = (out / name).read_text(encoding="utf-8")
        fields = [f for row in csv.reader(io.StringIO(text)) for f in row]
        assert INERT in fields, name
        assert not any(f.startswith(("=", "+", "@", "\t", "\r")) for f in fields), name
        # "-" starts only numbers (a negative amount would be one); never text
        assert all(D(f) < 0 for f in fields if f.startswith("-")), name
    focus = list(csv.DictReader(io.StringIO((out / "focus.csv").read_text(encoding="utf-8"))))
    mine = [r for r in focus if r["x_Tenant"] == INERT]
    assert mine and all(r["SubAccountId"] == r["SubAccountName"] == INERT for r in mine)
    assert all(json.loads(r["Tags"])["tenant"] == EVIL for r in mine)  # inside JSON it is data, not a cell

    wb = openpyxl.load_workbook(out / "run.xlsx")
    cells = [c for ws in wb for row in ws.iter_rows() for c in row if c.value is not None]
    assert any(c.value == INERT and c.data_type == "s" for c in cells)
    assert not any("HYPERLINK" in str(c.value) and c.data_type == "f" for c in cells)
    # LibreOffice opens it and keeps the text as text (a formula would have become "y")
    wb = openpyxl.load_workbook(recalculate(out / "run.xlsx", tmp_path / "recalc"), data_only=True)
    values = [c.value for ws in wb for row in ws.iter_rows() for c in row]
    assert INERT in values and "y" not in values


def test_a_formula_name_is_inert_in_the_budget_workbook_and_csv(tmp_path):
    from test_budget import BOOK as FIXTURE_BOOK, PLAN

    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "fixture.toml").write_text(textwrap.dedent(FIXTURE_BOOK))
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.replace('name = "on-call"', "name = '" + EVIL + "'")
                    .replace('provider = "prov"', 'provider = "@SUM(1+1)"'))
    xlsx = tmp_path / "out" / "budget.xlsx"
    xlsx.parent.mkdir()
    cli("budget", str(plan), "--pricebooks", str(tmp_path / "books"), "--xlsx", str(xlsx))
    wb = openpyxl.load_workbook(xlsx)
    charges = [r[2] for r in wb["Charges"].iter_rows(min_row=2, values_only=True)]
    assert INERT in charges
    items = {r[5] for r in wb["Variable"].iter_rows(min_row=2, values_only=True)}
    assert "'@SUM(1+1)/m1" in items
    cells = [c for ws in wb for row in ws.iter_rows() for c in row if c.data_type == "f"]
    assert cells and not any("HYPERLINK" in c.value or "@SUM" in c.value for c in cells)
    values = [c.value for ws in openpyxl.load_workbook(recalculate(xlsx, tmp_path / "recalc"), data_only=True)
              for row in ws.iter_rows() for c in row]
    assert INERT in values and "y" not in values


@pytest.mark.store
def test_export_needs_a_run_and_a_target(ledger_home, tmp_path):
    r = runner.invoke(app, ["export", "--period", "2026-10", "--lines", str(tmp_path / "x.csv")])
    assert r.exit_code == 1 and "no allocation run" in r.stderr
    r = runner.invoke(app, ["export", "--period", "2026-10"])
    assert r.exit_code == 1 and r.stderr.strip() == ("give at least one of --xlsx FILE, --lines FILE, --focus FILE, or --csv (the lines "
                                                     "on stdout)")
