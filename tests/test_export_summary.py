"""The allocation workbook for finance: it opens on a Summary (the run's totals, tasks, both costs per
successful task, the cost per 1M active tokens, every tenant), has a By product sheet, and every
sheet prints one page wide. The formulas, recalculated by LibreOffice headless, give the numbers of
`ledger report` (worked by hand on a small run, and on the demo month against the report itself)."""
from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal as D

import openpyxl
import pytest
from typer.testing import CliRunner

from ledger.cli import app
from ledger.export.xlsx import currency_format, recalculate

runner = CliRunner()
CENT = D("0.01")
UNDEFINED_SUCCESS = "undefined: no task with outcome success was decided in the period"
UNDEFINED_TOKENS = "undefined: no active tokens in the period"
SHEETS = ["Summary", "By tenant", "By product", "By category", "Cost per success", "Lines", "Provenance"]


def _two_figures():
    """The hand-worked run of test_reports (TWO_FIGURES), a day of pool p1 and a 102.20 charge:
    tenant a (product chat) 9.00 of GPU + 51.10 of the charge = 60.10, 3 successful tasks, 10,800
    active tokens; b (search) 3.60 + 51.10 = 54.70, 2 successes, 3,600 tokens; the charge's shares are
    on no product; idle slack 9.00, idle reserve 7.20; run total 131.00."""
    from test_allocate_support import index, run
    from test_reports import DAY, FLEET, GPU_BOOK, TWO_FIGURES

    from ledger.reports import run_data_of

    return run_data_of(run(index(GPU_BOOK), *DAY, fleet=FLEET, **TWO_FIGURES), run_id="r2")


def _rows(ws, first: int = 1) -> list[tuple]:
    return [r for r in ws.iter_rows(min_row=first, values_only=True)]


def _summary_items(ws) -> dict:
    """The Summary's item -> value (rows 2 to 13)."""
    return {r[0]: r[1] for r in ws.iter_rows(min_row=2, max_row=13, values_only=True)}


def _block(ws, title: str) -> dict:
    """The rows under the header row whose first cell is `title`, by name, up to the total row."""
    rows = _rows(ws)
    start = next(i for i, r in enumerate(rows) if r[0] == title) + 1
    out = {}
    for r in rows[start:]:
        out[r[0] if title == "tenant" else (r[0], r[1])] = r
        if r[0] == "total":
            break
    return out


def test_summary_and_by_product_worked_by_hand(tmp_path):
    from ledger.export import allocation_as_xlsx

    data = _two_figures()
    path = tmp_path / "run.xlsx"
    allocation_as_xlsx(data, path=path)
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == SHEETS and wb.active.title == "Summary"
    assert [ws.title for ws in wb if ws.sheet_view.tabSelected] == ["Summary"]  # one tab selected, not a group
    n = len(data.lines) + 1
    s = wb["Summary"]
    assert s["B6"].value == f"=SUM('Lines'!$M$2:$M${n})"                      # the run total: every line
    assert s["B10"].value == f'=IF(B7=0,"{UNDEFINED_SUCCESS}",B6/B7)'         # all-in
    assert s["A16"].value == "a" and s["B16"].value == f"=SUMPRODUCT(EXACT('Lines'!$C$2:$C${n},$A16)*'Lines'!$M$2:$M${n})"
    assert s["B6"].number_format == currency_format("USD")

    v = openpyxl.load_workbook(recalculate(path, tmp_path / "recalc"), data_only=True)
    items = _summary_items(v["Summary"])
    assert items["period (UTC, end exclusive)"] == "2026-10-01T00:00:00Z to 2026-10-02T00:00:00Z"
    assert (items["run"], items["reporting currency"], items["idle policy"]) == ("r2", "USD", "separate")
    assert items["run total"] == pytest.approx(131.00)
    assert (items["tasks: success"], items["tasks: failure"], items["tasks: unknown"]) == (5, 0, 0)
    assert items["all-in cost per successful task"] == pytest.approx(26.20)                   # 131.00 / 5
    assert items["cost per successful task (own cost), all tenants"] == pytest.approx(22.96)   # 114.80 / 5
    assert items["active tokens"] == 14_400                                                    # 10,800 + 3,600
    assert items["cost per 1M active tokens (all-in)"] == pytest.approx(131e6 / 14_400)        # 9,097.22
    tenants = _block(v["Summary"], "tenant")
    # tenant: cost, success, failure, unknown, cost per success (own), active tokens, cost per 1M
    assert tenants["a"][1:] == (pytest.approx(60.10), 3, 0, 0, pytest.approx(60.10 / 3), 10_800,
                                pytest.approx(60.10e6 / 10_800))                               # 20.03, 5,564.81
    assert tenants["b"][1:] == (pytest.approx(54.70), 2, 0, 0, pytest.approx(27.35), 3_600,
                                pytest.approx(54.70e6 / 3_600))                                # 15,194.44
    assert tenants["idle_slack (on no tenant)"][1] == pytest.approx(9.00)
    assert tenants["idle_reserve (on no tenant)"][1] == pytest.approx(7.20)
    assert "unallocated (on no tenant)" not in tenants                                          # no such line
    assert tenants["total"][1:5] == (pytest.approx(131.00), 5, 0, 0)

    products = _block(v["By product"], "product")
    # product, tenant, cost, success, failure, unknown, cost per success (own), active tokens, cost per 1M
    assert products[("chat", "(all tenants)")][2:] == (pytest.approx(9.00), 3, 0, 0, pytest.approx(3.00), 10_800,
                                                        pytest.approx(833.333333))               # 9.00e6 / 10,800
    assert products[("search", "(all tenants)")][2:] == (pytest.approx(3.60), 2, 0, 0, pytest.approx(1.80), 3_600,
                                                          pytest.approx(1000.00))
    shared = products[("shared charges", "(all tenants)")]
    assert shared[2:] == (pytest.approx(102.20), 0, 0, 0, UNDEFINED_SUCCESS, 0, UNDEFINED_TOKENS)
    assert products[("(on no tenant)", "idle_slack")][2] == pytest.approx(9.00)
    assert products[("total", None)][2:6] == (pytest.approx(131.00), 5, 0, 0)
    pairs = _block(v["By product"], "by tenant and product")
    pairs.pop(("product", "tenant"))  # the block's header row
    assert {k: r[2] for k, r in pairs.items()} == {
        ("chat", "a"): pytest.approx(9.00), ("search", "b"): pytest.approx(3.60),
        ("shared charges", "a"): pytest.approx(51.10),
        ("shared charges", "b"): pytest.approx(51.10),
        ("total", None): pytest.approx(114.80)}                                               # the tenants' cost


def test_every_sheet_prints_one_page_wide_and_the_provenance_total_is_money(tmp_path):
    from ledger.export import allocation_as_xlsx

    path = tmp_path / "run.xlsx"
    allocation_as_xlsx(_two_figures(), locale="de_DE", path=path)
    wb = openpyxl.load_workbook(path)
    for ws in wb:
        assert (ws.page_setup.fitToWidth, ws.page_setup.fitToHeight, ws.sheet_properties.pageSetUpPr.fitToPage) == \
            (1, 0, True), ws.title
        assert ws.print_title_rows == "$1:$1", ws.title  # the header row on every printed page
    # the wide sheets print landscape; By category (two columns) and Provenance portrait
    assert {ws.title: ws.page_setup.orientation for ws in wb} == {
        "Summary": "landscape", "By tenant": "landscape", "By product": "landscape", "By category": "portrait",
        "Cost per success": "landscape", "Lines": "landscape", "Provenance": "portrait"}
    total = next(r[1] for r in wb["Provenance"].iter_rows(min_row=2) if r[0].value == "run total")
    assert total.value == D("131.000000") and total.number_format == currency_format("USD", "de_DE")


def test_a_tenants_true_up_lines_and_the_case_of_names_count_as_the_report_counts_them(tmp_path):
    # A true-up spreads variance over a tenant's lines (kind variance, the tenant kept): the report
    # counts them in the tenant's cost, and so must the workbook. Names are case-sensitive: "A" is
    # not "a" (spreadsheets compare text with = ignoring case; the workbook uses EXACT).
    from ledger.allocate import Line
    from ledger.export import allocation_as_xlsx
    from ledger.reports import unit_economics

    data = _two_figures()

    def extra(kind: str, tenant: str, amount: str) -> Line:
        return Line(day=date(2026, 10, 1), kind=kind, tenant=tenant, product="chat", model="llama", pool="p1",
                    provider=None, category="gpu", work="succeeded", shared_from=None, quantity=D(0), unit="",
                    amount=D(amount))

    data = replace(data, lines=data.lines + (extra("variance", "a", "1.00"), extra("tenant", "A", "2.00")))
    report = {r.key: r for r in unit_economics(data, by="tenant").rows}
    assert (report["a"].cost, report["A"].cost) == (D("61.10"), D("2.00"))   # 60.10 + the 1.00 variance
    path = tmp_path / "run.xlsx"
    allocation_as_xlsx(data, path=path)
    v = openpyxl.load_workbook(recalculate(path, tmp_path / "recalc"), data_only=True)
    tenants = _block(v["Summary"], "tenant")
    assert (tenants["a"][1], tenants["A"][1]) == (pytest.approx(61.10), pytest.approx(2.00))
    assert tenants["a"][5] == pytest.approx(61.10 / 3)                       # own cost per success
    per = {r[1]: r for r in v["Cost per success"].iter_rows(min_row=3, values_only=True)}
    assert (per["a"][2], per["A"][2]) == (pytest.approx(61.10), pytest.approx(2.00))
    assert _summary_items(v["Summary"])["run total"] == pytest.approx(134.00)


def _cents(x) -> D:
    return D(str(x)).quantize(CENT, rounding=ROUND_HALF_EVEN)


def _same(cell, reported: str | None) -> bool:
    """A recalculated cell is the report's figure: both undefined, or equal at the cent."""
    if reported is None:
        return isinstance(cell, str) and cell.startswith("undefined: ")
    return _cents(cell) == _cents(D(reported))


@pytest.mark.store
def test_the_demo_month_summary_and_by_product_are_the_reports_numbers(demo_ledger, tmp_path):
    run = demo_ledger.summary
    out = tmp_path / "out"
    out.mkdir()
    r = runner.invoke(app, ["export", "--period", "2026-10", "--xlsx", str(out / "run.xlsx")])
    assert r.exit_code == 0, r.output
    by_tenant = json.loads(runner.invoke(app, ["report", "unit-economics", "--period", "2026-10", "--json"]).stdout)
    by_product = json.loads(runner.invoke(app, ["report", "unit-economics", "--period", "2026-10", "--by", "product",
                                                "--json"]).stdout)
    wb = openpyxl.load_workbook(out / "run.xlsx")
    assert wb.sheetnames[0] == "Summary" and wb.active.title == "Summary"
    assert all(ws.page_setup.fitToWidth == 1 and ws.sheet_properties.pageSetUpPr.fitToPage for ws in wb)

    v = openpyxl.load_workbook(recalculate(out / "run.xlsx", tmp_path / "recalc"), data_only=True)
    items = _summary_items(v["Summary"])
    assert items["run"] == run["run_id"] and items["reporting currency"] == "USD"
    assert _same(items["run total"], by_tenant["run_total"])
    rows = by_tenant["rows"]
    tasks = {k: sum(t["tasks"][k] for t in rows) for k in ("success", "failure", "unknown")}
    assert (items["tasks: success"], items["tasks: failure"], items["tasks: unknown"]) == \
        (tasks["success"], tasks["failure"], tasks["unknown"]) and tasks["success"] == \
        by_tenant["cost_per_successful_task_all_in_denominator"]
    assert _same(items["all-in cost per successful task"], by_tenant["cost_per_successful_task_all_in"])
    own = sum(D(t["cost"]) for t in rows) / tasks["success"]
    assert _same(items["cost per successful task (own cost), all tenants"], str(own))
    tokens = sum(t["active_tokens"] for t in rows)
    assert items["active tokens"] == tokens
    assert _same(items["cost per 1M active tokens (all-in)"], str(D(by_tenant["run_total"]) * 1_000_000 / tokens))
    tenants = _block(v["Summary"], "tenant")
    for t in rows:
        got = tenants[t["tenant"]]
        assert _same(got[1], t["cost"]) and got[2:5] == (t["tasks"]["success"], t["tasks"]["failure"],
                                                        t["tasks"]["unknown"]), t["tenant"]
        assert _same(got[5], t["cost_per_successful_task"]) and got[6] == t["active_tokens"], t["tenant"]
        assert _same(got[7], t["cost_per_1m_active_tokens"]), t["tenant"]
    for kind, amount in by_tenant["unattributed"].items():
        if D(amount):
            assert _same(tenants[f"{kind} (on no tenant)"][1], amount)

    products = _block(v["By product"], "product")
    shown = [k for k in products if k[1] == "(all tenants)"]
    assert len(shown) == len(by_product["rows"])
    for (name, _), p in zip(shown, by_product["rows"], strict=True):
        got = products[(name, "(all tenants)")]
        assert name == (p["product"] or "shared charges")
        assert _same(got[2], p["cost"]) and got[3:6] == (p["tasks"]["success"], p["tasks"]["failure"],
                                                        p["tasks"]["unknown"]), name
        assert _same(got[6], p["cost_per_successful_task"]) and got[7] == p["active_tokens"], name
        assert _same(got[8], p["cost_per_1m_active_tokens"]), name
    assert _same(products[("total", None)][2], by_product["run_total"])


def test_each_explanation_sits_on_the_row_it_explains_and_every_table_has_a_live_total(tmp_path):
    # Issue 28, item 8: on the Summary an explanation of several lines makes its row tall; the label
    # and its value sit at the top of that row beside the explanation's first line (a cell's default,
    # the bottom, read a row off in LibreOffice), and every formula names the items it reads by their rows
    from ledger.export import allocation_as_xlsx
    from ledger.export.allocation_summary import ALL_IN_LABEL, OWN_ALL_TENANTS_LABEL, PER_1M_LABEL

    path = tmp_path / "run.xlsx"
    allocation_as_xlsx(_two_figures(), path=path)
    wb = openpyxl.load_workbook(path)
    s = wb["Summary"]
    row = {s.cell(r, 1).value: r for r in range(2, 14)}
    notes = {r: s.cell(r, 3).value for r in range(2, 14) if s.cell(r, 3).value}
    assert set(notes) == {row[k] for k in ("idle policy", "run total", "tasks: success", "tasks: failure",
                                           "tasks: unknown", ALL_IN_LABEL, OWN_ALL_TENANTS_LABEL, "active tokens",
                                           PER_1M_LABEL)}
    for label, words in (("idle policy", "separate:"), ("run total", "every amount on the Lines sheet"),
                         ("tasks: success", "outcome success"), ("tasks: failure", "outcome failure"),
                         ("tasks: unknown", "no outcome decided"), (ALL_IN_LABEL, "all-in ="),
                         (OWN_ALL_TENANTS_LABEL, "own cost ="), ("active tokens", "input + output tokens"),
                         (PER_1M_LABEL, "1,000,000 ÷ active tokens")):
        r = row[label]
        assert words in notes[r], (label, notes[r])
        merged = next(m for m in s.merged_cells.ranges if m.min_row == r)
        assert (merged.min_col, merged.max_col, merged.max_row) == (3, 8, r), (label, merged)
        for c in (1, 2, 3):  # label, value and explanation: all at the top of the row
            assert s.cell(r, c).alignment.vertical == "top", (label, c)
    assert s.cell(row[ALL_IN_LABEL], 2).value == \
        f'=IF(B{row["tasks: success"]}=0,"{UNDEFINED_SUCCESS}",B{row["run total"]}/B{row["tasks: success"]})'
    assert s.cell(row[PER_1M_LABEL], 2).value.endswith(f'B{row["run total"]}*1000000/B{row["active tokens"]})')

    # every table of the Summary and By product ends in a totals row whose cost and counts are live
    # SUMs over the rows above it (from the table's first row to the row above the total)
    def tables(ws, cost_col: int) -> list[tuple[int, int]]:
        """(first row, total row) of each table: the rows under a header row whose cell is "cost"."""
        out, first = [], None
        for r in range(1, ws.max_row + 1):
            if ws.cell(r, cost_col).value == "cost":
                first = r + 1
            elif first is not None and ws.cell(r, 1).value == "total":
                out.append((first, r))
                first = None
        return out

    for ws, cost_col, count in ((s, 2, 1), (wb["By product"], 3, 2)):
        found = tables(ws, cost_col)
        assert len(found) == count, (ws.title, found)
        for first, total in found:
            letter = openpyxl.utils.get_column_letter(cost_col)
            assert ws.cell(total, cost_col).value == f"=SUM({letter}{first}:{letter}{total - 1})", (ws.title, total)
            assert ws.cell(total, 1).font.bold and ws.cell(total, cost_col).font.bold
            for k in (1, 2, 3, 5):  # tasks success, failure, unknown; active tokens
                assert str(ws.cell(total, cost_col + k).value).startswith("=SUM("), (ws.title, total, k)
