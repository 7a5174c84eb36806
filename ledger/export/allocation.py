"""Allocation run exports: the lines as CSV, and a workbook that opens on a Summary, whose totals,
costs per successful task and costs per 1M active tokens are formulas over the line detail, with a
By product sheet (:mod:`ledger.export.allocation_summary`) and a provenance sheet; every sheet
prints one page wide."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from pathlib import Path

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font

from ..allocate import CATEGORIES, LINE_KINDS
from ..instants import period_label
from ..money import ZERO, fmt
from ..reports import ALL_IN_DEFINITION, NO_SUCCESS, OWN_DEFINITION, RunData, unit_economics
from .allocation_summary import Formats, LinesRef, by_product_sheet, summary_sheet
from .safe import csv_text
from .xlsx import (saved, DEFAULT_LOCALE, INTEGER_FORMAT, QUANTITY_FORMAT, col, currency_format, fit_widths, header,
                   print_one_page_wide, put, put_formula, rng, unit_column_format, write_provenance)

LINE_COLUMNS = ("day", "kind", "tenant", "product", "model", "pool", "provider", "category", "work", "shared_from",
                "quantity", "unit", "amount", "currency")
_TEXT_COLUMNS = ("kind", "tenant", "product", "model", "pool", "provider", "category", "work", "shared_from", "unit")
CSV_COLUMNS = ("run_id", "period_start", "period_end", "currency", "price_books") + LINE_COLUMNS[:-1]


def allocation_as_csv(data: RunData) -> str:
    """One CSV row per allocation line; every row repeats the run, period, currency and price books.
    Money and quantities as decimal numbers; every field quoted, every text neutralized against
    formulas (:func:`ledger.outputs.csv_text`)."""
    info = data.info
    period = period_label(info.start, info.end)
    head = {"run_id": info.run_id, "period_start": period["start"], "period_end": period["end"],
            "currency": info.currency, "price_books": " ".join(info.price_books)}
    rows = ({"day": ln.day.isoformat(), "kind": ln.kind, "tenant": ln.tenant, "product": ln.product,
             "model": ln.model, "pool": ln.pool, "provider": ln.provider, "category": ln.category, "work": ln.work,
             "shared_from": ln.shared_from, "unit": ln.unit, "quantity": _qty(ln.quantity), "amount": fmt(ln.amount),
             **head} for ln in data.lines)
    return csv_text(CSV_COLUMNS, rows, numeric=("quantity", "amount"))


def _qty(q: Decimal) -> str:
    s = format(q, "f")
    return s.rstrip("0").rstrip(".") if "." in s else s


def allocation_as_xlsx(data: RunData, *, locale: str = DEFAULT_LOCALE, generated_at: datetime | None = None,
                       version: str = "", path: str | Path | None = None) -> bytes:
    """The run as a workbook, in this order: Summary (the sheet it opens on: the run's totals, tasks,
    both costs per successful task, the cost per 1M active tokens and every tenant's own figures),
    By tenant, By product and By category (SUMPRODUCT formulas over the Lines amounts; the
    non-tenant kinds idle_slack, idle_reserve and unallocated on rows of their own; By category
    checks the formulas' total against the run total), Cost per success (the all-in and each
    tenant's own cost per successful task, formulas, each with its definition), Lines (the detail)
    and Provenance. Every sheet prints one page wide, landscape when wide."""
    info = data.info
    money = currency_format(info.currency, locale)
    wb = Workbook()
    lines = wb.active
    lines.title = "Lines"
    header(lines, LINE_COLUMNS)
    L = {n: i for i, n in enumerate(LINE_COLUMNS, 1)}
    for r, ln in enumerate(data.lines, 2):
        for name in _TEXT_COLUMNS:
            v = getattr(ln, name)
            if v is not None:
                put(lines, r, L[name], v)
        put(lines, r, L["day"], ln.day)
        put(lines, r, L["quantity"], ln.quantity, QUANTITY_FORMAT)
        put(lines, r, L["amount"], ln.amount, money)
        put(lines, r, L["currency"], info.currency)
    fit_widths(lines)
    n = len(data.lines) + 1
    lines.auto_filter.ref = f"A1:{col(len(LINE_COLUMNS))}{n}"  # filter by tenant, product, category...

    def sumproduct(*conds: tuple[str, str]) -> str:
        terms = "".join(f"({rng('Lines', L[c], 2, n)}={ref})*" for c, ref in conds)
        return f"SUMPRODUCT({terms}{rng('Lines', L['amount'], 2, n)})"

    bt = wb.create_sheet("By tenant")
    cols = ("kind", "tenant") + CATEGORIES + ("total",)
    header(bt, cols, freeze="C2")
    first, last = 3, 2 + len(CATEGORIES)
    tenants = sorted({ln.tenant for ln in data.lines if ln.kind == "tenant" and ln.tenant is not None})
    kinds_present = [k for k in LINE_KINDS[1:] if any(ln.kind == k for ln in data.lines)]  # a true-up: variance
    r = 2
    for t in tenants:
        put(bt, r, 1, "tenant")
        put(bt, r, 2, t)
        for k in range(first, last + 1):
            put_formula(bt, r, k, f"=SUMPRODUCT(({rng('Lines', L['kind'], 2, n)}=$A{r})"
                                  f"*EXACT({rng('Lines', L['tenant'], 2, n)},$B{r})"
                                  f"*({rng('Lines', L['category'], 2, n)}={col(k)}$1)*{rng('Lines', L['amount'], 2, n)})",
                        money)
        put_formula(bt, r, last + 1, f"=SUM({col(first)}{r}:{col(last)}{r})", money)
        r += 1
    for kind in kinds_present:
        put(bt, r, 1, kind)
        for k in range(first, last + 1):
            put_formula(bt, r, k, "=" + sumproduct(("kind", f"$A{r}"), ("category", f"{col(k)}$1")), money)
        put_formula(bt, r, last + 1, f"=SUM({col(first)}{r}:{col(last)}{r})", money)
        r += 1
    put(bt, r, 1, "total").font = Font(bold=True)
    for k in range(first, last + 2):
        put_formula(bt, r, k, f"=SUM({col(k)}2:{col(k)}{max(2, r - 1)})", money).font = Font(bold=True)
    fit_widths(bt)
    for k in range(first, last + 2):
        bt.column_dimensions[col(k)].width = 16

    bc = wb.create_sheet("By category")
    header(bc, ("category", "amount"))
    for r, cat in enumerate(CATEGORIES, 2):
        put(bc, r, 1, cat)
        put_formula(bc, r, 2, "=" + sumproduct(("category", f"$A{r}")), money)
    tr = len(CATEGORIES) + 2
    put(bc, tr, 1, "total (formulas over the lines)").font = Font(bold=True)
    put_formula(bc, tr, 2, f"=SUM(B2:B{tr - 1})", money).font = Font(bold=True)
    put(bc, tr + 1, 1, "run total (as allocated)")
    put(bc, tr + 1, 2, sum((ln.amount for ln in data.lines), ZERO), money)
    put(bc, tr + 2, 1, "difference (must be 0)")
    put_formula(bc, tr + 2, 2, f"=B{tr}-B{tr + 1}", money)
    fit_widths(bc)

    _cost_per_success_sheet(wb, data, amounts=rng("Lines", L["amount"], 2, n), tenants=rng("Lines", L["tenant"], 2, n),
                            locale=locale)
    write_provenance(wb, allocation_provenance(data, locale=locale, generated_at=generated_at, version=version),
                     number_formats={"run total": money, "final run total (signed)": money})
    ref = LinesRef(amount=rng("Lines", L["amount"], 2, n), kind=rng("Lines", L["kind"], 2, n),
                   tenant=rng("Lines", L["tenant"], 2, n), product=rng("Lines", L["product"], 2, n))
    report = unit_economics(data, by="tenant")
    fmt = Formats(money=money, unit=unit_column_format(info.currency, locale, [
        report.cost_per_successful_task_all_in, *(r.cost_per_successful_task for r in report.rows)]),
        per_1m=unit_column_format(info.currency, locale, [r.cost_per_1m_active_tokens for r in report.rows]))
    by_product_sheet(wb, data, ref, fmt, index=wb.sheetnames.index("By category"))
    summary = summary_sheet(wb, data, ref, fmt)
    wb.move_sheet(lines, offset=wb.sheetnames.index("Provenance") - 1 - wb.sheetnames.index("Lines"))
    wb.active = summary
    for ws in wb:
        ws.sheet_view.tabSelected = ws is summary
        print_one_page_wide(ws)
    return saved(wb, path)


_PER_SUCCESS_COLUMNS = ("figure", "tenant", "cost", "successful tasks", "cost per successful task",
                        "as reported (ledger report)", "definition")


def _cost_per_success_sheet(wb: Workbook, data: RunData, *, amounts: str, tenants: str, locale: str) -> None:
    """Row 2 the all-in figure (the Lines total ÷ the tenants' successful tasks), then one row per
    tenant (its own lines ÷ its own successful tasks): costs and ratios are formulas, successes the
    run's recorded task counts, and the ledger's own figure (half-even to 1e-6) stands beside."""
    money = currency_format(data.info.currency, locale)
    report = unit_economics(data, by="tenant")
    rows = [r for r in report.rows if r.key is not None]
    # one format for the column: every cost per successful task at the same decimals
    unit = unit_column_format(data.info.currency, locale,
                              [report.cost_per_successful_task_all_in, *(r.cost_per_successful_task for r in rows)])
    ws = wb.create_sheet("Cost per success")
    header(ws, _PER_SUCCESS_COLUMNS, freeze="C2")
    last = max(3, len(rows) + 2)

    def ratio(r: int) -> str:
        return f'=IF(D{r}=0,"undefined: {NO_SUCCESS}",C{r}/D{r})'

    def reported(r: int, value: Decimal | None) -> None:
        if value is None:
            put(ws, r, 6, f"undefined: {NO_SUCCESS}")
        else:
            put(ws, r, 6, value, unit)

    put(ws, 2, 1, "all-in").font = Font(bold=True)
    put(ws, 2, 2, "(whole run: every line)")
    put_formula(ws, 2, 3, f"=SUM({amounts})", money)
    put_formula(ws, 2, 4, f"=SUM(D3:D{last})", INTEGER_FORMAT)
    put_formula(ws, 2, 5, ratio(2), unit).font = Font(bold=True)
    reported(2, report.cost_per_successful_task_all_in)
    put(ws, 2, 7, "all-in = " + ALL_IN_DEFINITION)
    for r, row in enumerate(rows, 3):
        put(ws, r, 1, "own cost")
        put(ws, r, 2, row.key)
        # every line of the tenant: its own lines and, after a true-up, its variance lines (as the report)
        put_formula(ws, r, 3, f"=SUMPRODUCT(EXACT({tenants},$B{r})*{amounts})", money)
        put(ws, r, 4, (row.tasks or {}).get("success", 0), INTEGER_FORMAT)
        put_formula(ws, r, 5, ratio(r), unit)
        reported(r, row.cost_per_successful_task)
        put(ws, r, 7, "own cost = " + OWN_DEFINITION)
    fit_widths(ws)
    ws.column_dimensions["G"].width = DEFINITION_WIDTH
    for r in range(2, ws.max_row + 1):
        cell = ws.cell(row=r, column=7)
        cell.alignment = Alignment(wrap_text=True, vertical="top")
        for c in range(1, 7):  # the figures at the top of their row, beside the first line of the definition
            ws.cell(row=r, column=c).alignment = Alignment(vertical="top")
        # as tall as the wrapped definition: a spreadsheet does not grow a row for wrapped text it
        # did not write, so the text would spill over the rows below it when printed
        ws.row_dimensions[r].height = 15 * wrapped_lines(str(cell.value or ""), DEFINITION_WIDTH)


#: The width of the Cost per success sheet's definition column, in characters.
DEFINITION_WIDTH = 60


def wrapped_lines(text: str, width: int) -> int:
    """How many lines `text` takes wrapped between words in a column `width` characters wide (a
    little narrower: a proportional font's widest letters)."""
    import textwrap

    return max(1, len(textwrap.wrap(text, max(10, int(width * 0.9)))))


def close_rows(closing) -> list[tuple[str, object]]:
    """The provenance rows of a period's close (:class:`ledger.store.Closing`): "closed by NAME at T,
    final run R" or "open", and the sign-off's note, final total and inputs digest when signed."""
    if closing is None:
        return [("period close", "not a calendar month: no close")]
    rows: list[tuple[str, object]] = [("period close", closing.text)]
    if closing.signed:
        rows += [("sign-off note", closing.note), ("final run total (signed)", closing.total),
                 ("final run inputs digest (signed)", closing.inputs_digest)]
    return rows


def allocation_provenance(data: RunData, *, locale: str, generated_at: datetime | None, version: str
                          ) -> list[tuple[str, object]]:
    info = data.info
    period = period_label(info.start, info.end)
    criteria = sorted({c for t in data.tasks for c in t.criteria})
    return [
        ("report", "allocation run export (ledger export)"),
        ("run", info.run_id),
        ("period (UTC, end exclusive)", f"{period['start']} to {period['end']}"),
        *close_rows(info.closing),
        ("reporting currency", info.currency),
        ("locale", locale),
        ("price book versions", list(info.price_books)),
        ("idle policy", info.idle_policy),
        ("weight basis", info.basis),
        ("success criteria", criteria),
        ("lines", len(data.lines)),
        ("run total", sum((ln.amount for ln in data.lines), ZERO)),
        ("run created at (UTC)", info.created_at.isoformat() if info.created_at else ""),
        ("inputs digest", info.inputs_digest),
        ("run code version", info.code_version),
        ("notes", list(info.notes)),
        ("generated at (UTC)", generated_at.isoformat() if generated_at else ""),
        ("ledger version", version),
    ]
