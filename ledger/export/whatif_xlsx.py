"""A scenario's workbook: the comparison as live formulas over both sets of lines, every sheet headed SCENARIO.

Sheets: ``SCENARIO vs actual`` (the sheet it opens on: per tenant, product and model the actual and
scenario costs as SUMPRODUCT formulas over the two line sheets, the difference, its share and both
costs per successful task as formulas; the totals as SUM formulas, checked against the totals as
allocated), ``Assumptions`` (books, changes, the self-hosted pools and their sizing, VERDICT or
DRAFT), ``SCENARIO lines`` and ``Actual lines`` (the detail), and ``Provenance``.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

from openpyxl import Workbook
from openpyxl.styles import Font

from ..instants import iso
from .allocation import LINE_COLUMNS
from .xlsx import (DEFAULT_LOCALE, INTEGER_FORMAT, QUANTITY_FORMAT, currency_format, fit_widths, header,
                   print_one_page_wide, put, put_formula, rng, saved, unit_cost_format, write_provenance)

SCENARIO = "SCENARIO"
_TEXT = ("kind", "tenant", "product", "model", "pool", "provider", "category", "work", "shared_from", "unit")
_COLUMNS = ("by", "key", "actual cost", "SCENARIO cost", "difference", "difference share", "successful tasks",
            "actual cost per successful task", "SCENARIO cost per successful task")


def _lines_sheet(wb: Workbook, title: str, lines, currency: str, money: str) -> dict[str, str]:
    ws = wb.create_sheet(title)
    put(ws, 1, 1, f"{SCENARIO}: the scenario's lines" if title.startswith(SCENARIO) else
        "Actual: the run's lines (beside a SCENARIO)").font = Font(bold=True)
    header(ws, LINE_COLUMNS, row=2, freeze="A3")
    c = {n: i for i, n in enumerate(LINE_COLUMNS, 1)}
    for r, ln in enumerate(lines, 3):
        for name in _TEXT:
            if (v := getattr(ln, name)) is not None:
                put(ws, r, c[name], v)
        put(ws, r, c["day"], ln.day)
        put(ws, r, c["quantity"], ln.quantity, QUANTITY_FORMAT)
        put(ws, r, c["amount"], ln.amount, money)
        put(ws, r, c["currency"], currency)
    fit_widths(ws)
    last = len(lines) + 2
    return {n: rng(title, c[n], 3, last) for n in ("kind", "tenant", "product", "model", "amount")}


def _cost(ref: dict[str, str], by: str, key_cell: str | None) -> str:
    """SUMPRODUCT of the tenants' lines whose `by` column is the key (None: empty)."""
    key = '""' if key_cell is None else key_cell
    return f"SUMPRODUCT(({ref['kind']}=\"tenant\")*EXACT({ref[by]},{key})*{ref['amount']})"


def whatif_as_xlsx(result, *, locale: str = DEFAULT_LOCALE, generated_at: datetime | None = None,
                   version: str = "", path: str | Path | None = None) -> bytes:
    """The scenario `result` (a ``ledger.whatif.ScenarioResult``) as a workbook (see the module)."""
    cur = result.currency
    money, unit = currency_format(cur, locale), unit_cost_format(cur, locale)
    wb = Workbook()
    ws = wb.active
    ws.title = f"{SCENARIO} vs actual"
    sim = _lines_sheet(wb, f"{SCENARIO} lines", result.allocation.lines, cur, money)
    act = _lines_sheet(wb, "Actual lines", result.actual.lines, cur, money)
    put(ws, 1, 1, f"{SCENARIO}: {result.scenario.name} · {result.period} · beside run {result.run_id} "
                  f"({cur}; {result.status})").font = Font(bold=True)
    header(ws, _COLUMNS, row=3, freeze="C4")
    r = 4
    blocks = []
    for by in ("tenant", "product", "model"):
        first = r
        for row in (x for x in result.rows if x.by == by):
            put(ws, r, 1, by)
            key_cell = None if row.key is None else f"$B{r}"
            put(ws, r, 2, row.key if row.key is not None else "")
            put_formula(ws, r, 3, "=" + _cost(act, by, key_cell), money)
            put_formula(ws, r, 4, "=" + _cost(sim, by, key_cell), money)
            _derived(ws, r, row.successful_tasks, money, unit)
            r += 1
        blocks.append((first, r - 1))
    first_kind = r
    for kind in ("idle_slack", "idle_reserve", "unallocated", "variance"):
        if kind not in result.by_kind:
            continue
        put(ws, r, 1, "kind")
        put(ws, r, 2, kind)
        for c, ref in ((3, act), (4, sim)):
            put_formula(ws, r, c, f"=SUMPRODUCT(({ref['kind']}=$B{r})*{ref['amount']})", money)
        _derived(ws, r, None, money, unit)
        r += 1
    total = r
    put(ws, total, 1, "total").font = Font(bold=True)
    put(ws, total, 2, "tenants + kinds (formulas)")
    t_first, t_last = blocks[0]
    for c in (3, 4):
        cells = [f"SUM({_c(c)}{t_first}:{_c(c)}{max(t_first, t_last)})"] if t_last >= t_first else []
        if r > first_kind:
            cells.append(f"SUM({_c(c)}{first_kind}:{_c(c)}{r - 1})")
        put_formula(ws, total, c, "=" + ("+".join(cells) or "0"), money).font = Font(bold=True)
    _derived(ws, total, None, money, unit)
    put(ws, total + 1, 2, "as allocated")
    put(ws, total + 1, 3, result.actual_total, money)
    put(ws, total + 1, 4, result.scenario_total, money)
    put(ws, total + 2, 2, "check (must be 0)")
    put_formula(ws, total + 2, 3, f"=C{total}-C{total + 1}", money)
    put_formula(ws, total + 2, 4, f"=D{total}-D{total + 1}", money)
    fit_widths(ws)
    ws.column_dimensions["A"].width = 10
    _assumptions(wb, result)
    write_provenance(wb, _provenance(result, locale, generated_at, version))
    wb.move_sheet(f"{SCENARIO} lines", offset=len(wb.sheetnames))
    wb.move_sheet("Actual lines", offset=len(wb.sheetnames))
    wb.active = ws
    for sheet in wb:
        sheet.sheet_view.tabSelected = sheet is ws
        print_one_page_wide(sheet, title_rows=None)
    return saved(wb, path)


def _c(n: int) -> str:
    from .xlsx import col

    return col(n)


def _derived(ws, r: int, tasks: int | None, money: str, unit: str) -> None:
    put_formula(ws, r, 5, f"=D{r}-C{r}", money)
    put_formula(ws, r, 6, f"=IF(C{r}=0,\"\",E{r}/C{r})", "0.00%")
    if tasks is not None:
        put(ws, r, 7, tasks, INTEGER_FORMAT)
        put_formula(ws, r, 8, f"=IF(G{r}=0,\"\",C{r}/G{r})", unit)
        put_formula(ws, r, 9, f"=IF(G{r}=0,\"\",D{r}/G{r})", unit)


def _assumptions(wb: Workbook, result) -> None:
    from ledger.whatif.render import change_entry, sized_entry

    ws = wb.create_sheet("Assumptions")
    put(ws, 1, 1, f"{SCENARIO} assumptions: {result.scenario.name}").font = Font(bold=True)
    header(ws, ("item", "value"), row=2, freeze="A3")
    rows = [("books (actual)", ", ".join(result.actual_books)), ("books (SCENARIO)", ", ".join(result.scenario_books)),
            ("prices as of", iso(result.scenario.prices_as_of) if result.scenario.prices_as_of else "each usage's time"),
            ("idle policy", result.allocation.policy.idle), ("basis", result.allocation.policy.basis),
            ("status", result.status)]
    for c in result.scenario.changes:
        e = change_entry(c, result.moved.get(c.label, 0))
        rows.append((c.label, f"{c.where.text()} -> {', '.join(f'{k} {v}' for k, v in e['to'].items())}; share "
                              f"{e['share']}; {e['tokens']}; {e['requests_moved']} requests moved"))
    for z in result.sized:
        for k, v in sized_entry(z).items():
            rows.append((f"{z.label} {k}", v))
    rows += [(f"note {i}", n) for i, n in enumerate(result.notes, 1)]
    for r, (k, v) in enumerate(rows, 3):
        put(ws, r, 1, k)
        put(ws, r, 2, v)
    fit_widths(ws, maximum=100)


def _provenance(result, locale: str, generated_at: datetime | None, version: str) -> list[tuple[str, object]]:
    return [("kind", SCENARIO), ("scenario", result.scenario.name), ("scenario file", result.scenario.path),
            ("scenario sha256", result.scenario.digest), ("scenario id", result.id or "(not stored)"),
            ("period", result.period), ("actual run", result.run_id), ("currency", result.currency),
            ("same inputs as the run", "yes" if result.same_inputs else "no"), ("locale", locale),
            ("generated at", iso(generated_at) if generated_at else ""), ("ledger version", version)]
