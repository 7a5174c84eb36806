"""The allocation workbook's sheets for finance: Summary (the run at a glance, the sheet the workbook
opens on) and By product (every product, then every tenant's part of each).

Costs are live formulas over the Lines sheet (``SUMPRODUCT``; tenant and product names compared
with ``EXACT``, as the ledger compares names: case counts), task and token counts are the run's
recorded numbers (the workbook has no task or request detail), and every ratio is a formula over
them, so changing an amount in Lines moves every figure here. The figures and their names are the
reports' (``ledger report unit-economics``): the all-in and the own-cost cost per successful task
(:data:`ledger.economics.ALL_IN_DEFINITION`, :data:`ledger.economics.OWN_DEFINITION`) and the cost
per 1M active tokens.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font
from openpyxl.worksheet.worksheet import Worksheet

from ..allocate import LINE_KINDS, VARIANCE
from ..drilldown import SHARED_CHARGES
from ..economics import ALL_IN_DEFINITION, NO_SUCCESS, NO_TOKENS, OWN_DEFINITION, RunData, unit_economics
from ..instants import period_label
from .xlsx import INTEGER_FORMAT, col, header, put, put_formula

#: The columns every tenant, product or tenant-and-product row has, after its name(s).
FIGURES = ("cost", "tasks success", "tasks failure", "tasks unknown", "cost per successful task (own cost)",
           "active tokens", "cost per 1M active tokens")
ALL_IN_LABEL = "all-in cost per successful task"
OWN_ALL_TENANTS_LABEL = "cost per successful task (own cost), all tenants"
PER_1M_LABEL = "cost per 1M active tokens (all-in)"
ALL_TENANTS = "(all tenants)"
NO_PRODUCT = SHARED_CHARGES  #: the row of the tenants' lines with no product (ledger.drilldown)
#: The Summary's first item row (under the header row): an item's label in A, its value in B and
#: how it is computed in C:H, all on the item's own row.
ITEMS_FIRST_ROW = 2
#: Lines on no tenant: the kinds that are never a tenant's, and a true-up's variance on no tenant.
OFF_TENANT = LINE_KINDS[1:]


@dataclass(frozen=True)
class LinesRef:
    """Absolute ranges of the Lines sheet's columns the formulas read."""

    amount: str
    kind: str
    tenant: str
    product: str


@dataclass(frozen=True)
class Formats:
    """Number formats: `money` (the run's currency), `unit` (the costs per successful task) and
    `per_1m` (the costs per 1M active tokens), each a column's one unit-cost format
    (:func:`ledger.export.xlsx.unit_column_format`; `per_1m` None: `unit`'s)."""

    money: str
    unit: str
    per_1m: str | None = None

    @property
    def tokens(self) -> str:
        return self.per_1m or self.unit


def _bold(cell) -> None:
    cell.font = Font(bold=True)


def _figures(ws: Worksheet, r: int, c: int, cost: str, counts: tuple, fmt: Formats, *, bold: bool = False) -> None:
    """One row's figures from column `c`: the cost formula, the success / failure / unknown tasks
    and active tokens (numbers, or formulas for a total), and the two ratios as formulas."""
    success, failure, unknown, tokens = counts
    cells = [put_formula(ws, r, c, cost, fmt.money)]
    for k, v in enumerate((success, failure, unknown), 1):
        cells.append(put_formula(ws, r, c + k, v, INTEGER_FORMAT) if isinstance(v, str)
                     else put(ws, r, c + k, v, INTEGER_FORMAT))
    cells.append(put_formula(ws, r, c + 4, f'=IF({col(c + 1)}{r}=0,"undefined: {NO_SUCCESS}",'
                                           f'{col(c)}{r}/{col(c + 1)}{r})', fmt.unit))
    cells.append(put_formula(ws, r, c + 5, tokens, INTEGER_FORMAT) if isinstance(tokens, str)
                 else put(ws, r, c + 5, tokens, INTEGER_FORMAT))
    cells.append(put_formula(ws, r, c + 6, f'=IF({col(c + 5)}{r}=0,"undefined: {NO_TOKENS}",'
                                           f'{col(c)}{r}*1000000/{col(c + 5)}{r})', fmt.tokens))
    if bold:
        for cell in cells:
            _bold(cell)


def _sums(c: int, first: int, last: int, r: int) -> tuple:
    """The total row's counts: SUM of the rows above, for tasks and tokens."""
    return tuple(f"=SUM({col(c + k)}{first}:{col(c + k)}{max(first, last)})" for k in (1, 2, 3, 5))


def _off_tenant_rows(ws: Worksheet, r: int, c: int, lines: LinesRef, data: RunData, fmt: Formats,
                     label: Callable[[int, str], None]) -> int:
    """A row per kind of line on no tenant present in the run (its cost only); the next free row."""
    for kind in OFF_TENANT:
        if any(ln.kind == kind and ln.tenant is None for ln in data.lines):
            label(r, kind)
            put_formula(ws, r, c, f'=SUMPRODUCT(({lines.kind}="{kind}")*({lines.tenant}="")*{lines.amount})',
                        fmt.money)
            r += 1
    return r


def _block_header(ws: Worksheet, r: int, names: tuple[str, ...]) -> None:
    header(ws, names, row=r, freeze=None)
    for k in range(1, len(names) + 1):
        ws.cell(row=r, column=k).alignment = Alignment(wrap_text=True, vertical="top")
    ws.row_dimensions[r].height = 30


def summary_sheet(wb: Workbook, data: RunData, lines: LinesRef, fmt: Formats) -> Worksheet:
    """The Summary sheet, first in the workbook: period, run, currency, idle policy, the run total,
    tasks by outcome, both costs per successful task (each with its definition), active tokens and
    the cost per 1M active tokens; then one row per tenant (its own cost, tasks, both ratios) and
    one per kind of line on no tenant, adding up to the run total."""
    ws = wb.create_sheet("Summary", 0)
    info = data.info
    report = unit_economics(data, by="tenant")
    tenants = [row for row in report.rows if row.key is not None]
    period = period_label(info.start, info.end)
    header(ws, ("item", "value", "how it is computed"))
    # the tenant block first (its rows are what the figures above sum), under a blank row
    top = 15
    _block_header(ws, top, ("tenant",) + FIGURES)
    first = top + 1
    for r, row in enumerate(tenants, first):
        put(ws, r, 1, row.key)
        tasks = row.tasks or {"success": 0, "failure": 0, "unknown": 0}
        _figures(ws, r, 2, f"=SUMPRODUCT(EXACT({lines.tenant},$A{r})*{lines.amount})",
                 (tasks["success"], tasks["failure"], tasks["unknown"], row.active_tokens), fmt)
    last_tenant = first + len(tenants) - 1
    r = _off_tenant_rows(ws, first + len(tenants), 2, lines, data, fmt,
                         lambda r, kind: put(ws, r, 1, f"{kind} (on no tenant)"))
    total = r
    _total_row(ws, total, 2, first, last_tenant, fmt)

    last = max(first, last_tenant)
    tenant_costs = f"SUM(B{first}:B{last})"
    # the items in order, each on its row from row 2: a formula names another item's cell by its
    # label (`at`), never by a row number written here, so an item added above moves nothing off
    labels = ["period (UTC, end exclusive)", "run", "reporting currency", "idle policy", "run total",
              "tasks: success", "tasks: failure", "tasks: unknown", ALL_IN_LABEL, OWN_ALL_TENANTS_LABEL,
              "active tokens", PER_1M_LABEL]
    row_of = {label: r for r, label in enumerate(labels, ITEMS_FIRST_ROW)}

    def at(label: str) -> str:
        return f"B{row_of[label]}"

    success, run_total, tokens = at("tasks: success"), at("run total"), at("active tokens")
    items = [
        ("period (UTC, end exclusive)", f"{period['start']} to {period['end']}", None, ""),
        ("run", info.run_id, None, "" if info.closing is None else f"period {info.closing.text}"),
        ("reporting currency", info.currency, None, ""),
        ("idle policy", info.idle_policy, None, "separate: idle slack and reserve on lines of their own, on no "
                                                "tenant; share: booked on the tenants"),
        ("run total", f"=SUM({lines.amount})", fmt.money,
         "Σ of every amount on the Lines sheet: tenants' cost, idle slack, idle reserve and unallocated charges"),
        ("tasks: success", f"=SUM(C{first}:C{last})", INTEGER_FORMAT,
         "tasks with outcome success decided in the period (the run's counts, by tenant below)"),
        ("tasks: failure", f"=SUM(D{first}:D{last})", INTEGER_FORMAT, "tasks with outcome failure decided in the period"),
        ("tasks: unknown", f"=SUM(E{first}:E{last})", INTEGER_FORMAT,
         "tasks seen in the period's requests with no outcome decided by the period end"),
        (ALL_IN_LABEL, f'=IF({success}=0,"undefined: {NO_SUCCESS}",{run_total}/{success})', fmt.unit,
         f"all-in = {ALL_IN_DEFINITION}"),
        (OWN_ALL_TENANTS_LABEL, f'=IF({success}=0,"undefined: {NO_SUCCESS}",{tenant_costs}/{success})', fmt.unit,
         f"own cost = {OWN_DEFINITION}; here every tenant's own cost together ÷ their successful tasks "
         "(each tenant's below)"),
        ("active tokens", f"=SUM(G{first}:G{last})", INTEGER_FORMAT, "input + output tokens of the period's requests"),
        (PER_1M_LABEL, f'=IF({tokens}=0,"undefined: {NO_TOKENS}",{run_total}*1000000/{tokens})', fmt.tokens,
         "the run total × 1,000,000 ÷ active tokens (each tenant's below: its own cost)"),
    ]
    assert [label for label, *_ in items] == labels and ITEMS_FIRST_ROW + len(items) < top
    for r, (label, value, number_format, how) in enumerate(items, ITEMS_FIRST_ROW):
        name = put(ws, r, 1, label)
        if isinstance(value, str) and value.startswith("="):
            cell = put_formula(ws, r, 2, value, number_format)
        else:
            cell = put(ws, r, 2, value, number_format)
        if label in (ALL_IN_LABEL, OWN_ALL_TENANTS_LABEL, "run total"):
            _bold(cell)
            _bold(name)
        # the label, its value and its explanation all at the top of the row: an explanation of
        # several lines makes the row tall, and a label left at the bottom (a cell's default) would
        # read beside the first line of the next row's explanation, a row off
        for c in (name, cell):
            c.alignment = Alignment(vertical="top", horizontal=c.alignment.horizontal)
        if how:
            _note(ws, r, how)
    # column A as wide as its longest label, so no label is cut when printed
    _widths(ws, {"A": max([len(OWN_ALL_TENANTS_LABEL) + 2] + [min(48, len(t.key) + 2) for t in tenants]), "B": max(16, len(info.run_id) + 2),
                 "C": 12, "D": 12, "E": 12, "F": 20, "G": 16, "H": 20})
    return ws


def _note(ws: Worksheet, r: int, text: str, first: int = 3, last: int = 8) -> None:
    """`text` in columns C:H of row `r`, merged and wrapped, the row as tall as its lines need."""
    put(ws, r, first, text).alignment = Alignment(wrap_text=True, vertical="top")
    ws.merge_cells(start_row=r, start_column=first, end_row=r, end_column=last)
    per_line = 92  # about the width of C:H in characters
    ws.row_dimensions[r].height = 15 * max(1, -(-len(text) // per_line))


def _widths(ws: Worksheet, widths: dict[str, float]) -> None:
    for letter, w in widths.items():
        ws.column_dimensions[letter].width = w


def by_product_sheet(wb: Workbook, data: RunData, lines: LinesRef, fmt: Formats, index: int) -> Worksheet:
    """By product: one row per product as ``ledger report unit-economics --by product`` has them
    (its tenants' lines, with the shared charges and idle booked on it; the lines with no product
    on the row "shared charges"), the kinds of lines on no tenant and the total (the run total); then every
    tenant's part of each product, with its own total."""
    ws = wb.create_sheet("By product", index)
    report = unit_economics(data, by="product")
    names = ("product", "tenant") + FIGURES
    header(ws, names, freeze="C2")
    for k in range(1, len(names) + 1):
        ws.cell(row=1, column=k).alignment = Alignment(wrap_text=True, vertical="top")
    ws.row_dimensions[1].height = 30

    def product_ref(key: str | None, r: int) -> str:
        return '""' if key is None else f"$A{r}"

    def label(r: int, key: str | None) -> None:
        put(ws, r, 1, NO_PRODUCT if key is None else key)

    first = 2
    for r, row in enumerate(report.rows, first):
        label(r, row.key)
        put(ws, r, 2, ALL_TENANTS)
        tasks = row.tasks or {"success": 0, "failure": 0, "unknown": 0}
        _figures(ws, r, 3, f'=SUMPRODUCT(EXACT({lines.product},{product_ref(row.key, r)})*({lines.tenant}<>"")'
                           f"*{lines.amount})",
                 (tasks["success"], tasks["failure"], tasks["unknown"], row.active_tokens), fmt, bold=True)
    last_product = first + len(report.rows) - 1

    def off(r: int, kind: str) -> None:
        put(ws, r, 1, "(on no tenant)")
        put(ws, r, 2, kind)

    r = _off_tenant_rows(ws, first + len(report.rows), 3, lines, data, fmt, off)
    _total_row(ws, r, 3, first, last_product, fmt)

    # every tenant's part of each product, under a title of its own
    r += 2
    _bold(put(ws, r, 1, "by tenant and product"))
    r += 1
    _block_header(ws, r, names)
    first = r + 1
    pairs = _tenant_products(data)
    for r, ((product, tenant), (success, failure, unknown, tokens)) in enumerate(pairs, first):
        label(r, product)
        put(ws, r, 2, tenant)
        _figures(ws, r, 3, f"=SUMPRODUCT(EXACT({lines.product},{product_ref(product, r)})"
                           f"*EXACT({lines.tenant},$B{r})*{lines.amount})", (success, failure, unknown, tokens), fmt)
    _total_row(ws, first + len(pairs), 3, first, first + len(pairs) - 1, fmt)
    _widths(ws, {"A": max([16] + [min(48, len(str(k or NO_PRODUCT)) + 2) for k, _ in pairs]),
                 "B": max([14] + [min(48, len(t) + 2) for _, t in pairs]),
                 "C": 16, "D": 12, "E": 12, "F": 12, "G": 20, "H": 16, "I": 20})
    return ws


def _total_row(ws: Worksheet, r: int, c: int, first: int, last: int, fmt: Formats) -> None:
    """Row `r`, bold: "total", and from column `c` the cost of the rows `first` to `r - 1` (the named
    rows and the lines on no tenant: the run total) and the tasks and tokens of rows first..last."""
    _bold(put(ws, r, 1, "total"))
    _bold(put_formula(ws, r, c, f"=SUM({col(c)}{first}:{col(c)}{max(first, r - 1)})", fmt.money))
    for k, f in zip((1, 2, 3, 5), _sums(c, first, last, r)):
        _bold(put_formula(ws, r, c + k, f, INTEGER_FORMAT))


def _tenant_products(data: RunData) -> list[tuple[tuple[str | None, str], tuple[int, int, int, int]]]:
    """Every (product, tenant) with a tenant's line, requests or tasks, in the report's order
    (products by name, no product last; tenants by name), with its tasks by outcome and active tokens."""
    counts: dict = defaultdict(lambda: [0, 0, 0, 0])
    for ln in data.lines:
        if ln.tenant is not None and (ln.kind == "tenant" or ln.kind == VARIANCE):
            counts[(ln.product, ln.tenant)]
    for u in data.usage:
        counts[(u.product, u.tenant)][3] += u.active_tokens
    for t in data.tasks:
        c = counts[(t.product, t.tenant)]
        c[0] += t.success
        c[1] += t.failure
        c[2] += t.unknown
    keys = sorted(counts, key=lambda k: (k[0] is None, k[0] or "", k[1]))
    return [(k, tuple(counts[k])) for k in keys]
