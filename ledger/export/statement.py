"""The month-end statement as one PDF page (`ledger statement --pdf FILE`), made with fpdf2.

fpdf2 (pure Python, maintained, LGPL-3.0) lays out text and tables on a fixed page with its
``table()``: the statement is one A4 page of text and three small tables, which is what it does
well; reportlab would do it too, at several times the size (docs/month-end.md says why). The page
is written through :func:`ledger.outputs.write_output` (the path guard, whole or not at all).

Displayed money is rounded so that each table adds to its printed total
(:func:`ledger.formats.display_column`: largest remainder), unit costs take the one unit-cost
rule of every surface (:func:`ledger.formats.unit_costs`); the exact values are in
``ledger statement --json``. The core PDF fonts hold Latin-1 only: a name with other characters
is printed with ``?`` in their place and the page says so (the JSON and CSV keep it whole).
"""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from pathlib import Path

from ..economics import ALL_IN_DEFINITION, OWN_DEFINITION
from ..formats import count, display_column, money, unit_costs
from ..instants import iso
from ..outputs import write_output
from ..reports.statement import Statement

#: The most tenant rows the page holds; beyond it the smallest tenants are one row "N other tenants".
MAX_TENANT_ROWS = 20
#: What each kind of line on no tenant is called on the page.
OFF_TENANT_LABELS = {"idle_slack": "idle capacity (slack)", "idle_reserve": "idle reserve",
                     "unallocated": "unallocated shared charges", "variance": "bill variance on no tenant"}


class _Text:
    """Text for the core fonts: Latin-1, with any other character as ``?`` (remembered, so the page
    can say so)."""

    def __init__(self) -> None:
        self.replaced = False

    def __call__(self, text: str) -> str:
        out = text.encode("latin-1", errors="replace").decode("latin-1")
        self.replaced |= out != text
        return out


def tenant_rows(st: Statement) -> list[tuple[str, Decimal, int, Decimal | None]]:
    """(label, cost, successful tasks, own cost per successful task) per tenant as the page lists
    them: every tenant when they fit, else the :data:`MAX_TENANT_ROWS` - 1 largest by cost and one
    row of the others (their cost and successes summed; their own cost per success is the sum ÷
    the successes)."""
    rows = [(t.tenant, t.cost, t.successful_tasks, t.cost_per_successful_task) for t in st.tenants]
    if len(rows) <= MAX_TENANT_ROWS:
        return rows
    ranked = sorted(rows, key=lambda r: (-r[1], r[0]))
    keep, rest = ranked[:MAX_TENANT_ROWS - 1], ranked[MAX_TENANT_ROWS - 1:]
    cost = sum((r[1] for r in rest), Decimal(0))
    n = sum(r[2] for r in rest)
    return [*keep, (f"{len(rest)} other tenants", cost, n, (cost / n).quantize(Decimal("1e-6")) if n else None)]


def statement_as_pdf(st: Statement, *, generated_at: datetime, version: str) -> bytes:
    """The statement as the bytes of a one-page A4 PDF (title, author and creation date set:
    `generated_at`, so the same statement at the same instant is the same file)."""
    from fpdf import FPDF
    from fpdf.enums import XPos, YPos
    from fpdf.fonts import FontFace

    t = _Text()
    cur = st.currency
    pdf = FPDF(orientation="P", unit="mm", format="A4")
    pdf.set_auto_page_break(False)
    pdf.set_margins(15, 12, 15)
    period = f"{st.start.strftime('%Y-%m')}" if st.closing is not None else f"{iso(st.start)} to {iso(st.end)}"
    pdf.set_title(f"Month-end statement {period}")
    pdf.set_author("ledger")
    pdf.set_creator(f"ledger {version}")
    pdf.set_creation_date(generated_at)
    pdf.add_page()

    def line(text: str, size: float = 9, style: str = "", h: float = 4.6) -> None:
        pdf.set_font("Helvetica", style, size)
        pdf.multi_cell(0, h, t(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT)

    def table(head: tuple[str, ...], rows: list[tuple[str, ...]], widths: tuple[float, ...], bold_last: bool) -> None:
        pdf.set_font("Helvetica", "", 8.5)
        align = ("LEFT",) + ("RIGHT",) * (len(head) - 1)
        with pdf.table(col_widths=widths, width=sum(widths), align="LEFT", text_align=align, line_height=4.4,
                       borders_layout="HORIZONTAL_LINES", headings_style=FontFace(emphasis="BOLD")) as tab:
            for i, cells in enumerate([head, *rows]):
                row = tab.row()
                last = bold_last and i == len(rows)
                for c in cells:
                    row.cell(t(c), style=FontFace(emphasis="BOLD") if last else None)
        pdf.ln(2.5)

    line(f"Month-end statement - {period} ({cur})", 15, "B", 7)
    line(f"period {iso(st.start)} to {iso(st.end)} (UTC, end exclusive)", 8.5)
    line(st.close_text.upper() if st.closing is None or not st.closing.closed else st.close_text, 10, "B", 5.5)
    if st.closing is not None and st.closing.signed and st.closing.note:
        line(f"note: {st.closing.note}", 8.5)
    line(f"{st.kind} run {st.run_id} made {iso(st.created_at)} - price books {', '.join(st.price_books) or 'none'} - "
         f"inputs digest {st.inputs_digest} - code {st.code_version} - idle policy {st.idle_policy}, basis "
         f"{st.basis}", 8)
    pdf.ln(1.5)
    line(f"Total {money(st.total, cur)}", 13, "B", 7)

    # where the money went: tenants and the lines on no tenant, adding up to the total as printed
    parts = [("tenants' own cost", st.tenants_cost)] + [(OFF_TENANT_LABELS.get(k, k), v)
                                                        for k, v in st.off_tenant.items()]
    part_cells, total = display_column([v for _, v in parts])
    rows = [(label, money(c)) for (label, _), c in zip(parts, part_cells)]
    table(("where it went", cur), [*rows, ("total", money(total))], (70, 32), True)
    line(f"failed work (in the figures above, work of tasks that failed): {money(st.failed_work, cur)}", 8.5)
    pdf.ln(1.5)

    used = [(c, v) for c, v in st.by_category.items() if v != 0]
    cells, total = display_column([v for _, v in used])
    table(("by category", cur), [*((c, money(x)) for (c, _), x in zip(used, cells)), ("total", money(total))],
          (70, 32), True)

    trows = tenant_rows(st)
    costs, tcost = display_column([r[1] for r in trows], total=part_cells[0])  # as "tenants' own cost" above
    per = unit_costs([r[3] for r in trows] + [st.all_in])
    body = [(name, money(c), count(n), "undefined" if u is None else p)
            for (name, _, n, u), c, p in zip(trows, costs, per)]
    body.append(("tenants' own cost", money(tcost), count(sum(r[2] for r in trows)), ""))
    body.append(("all-in (run total / all successful tasks)", money(st.total), count(st.successful_tasks),
                 "undefined" if st.all_in is None else per[-1]))
    table(("tenant", f"cost ({cur})", "successful tasks", "cost per successful task"), body, (70, 32, 30, 40), False)
    line(f"cost per successful task (own cost) = {OWN_DEFINITION}.", 7.5, h=3.6)
    line(f"all-in = {ALL_IN_DEFINITION}.", 7.5, h=3.6)
    pdf.ln(1.5)
    line(f"Reconciliation: {st.reconciliation.text}", 9, "B", 5)
    pdf.ln(1)
    foot = (f"Amounts rounded for display so that each table adds to its printed total (largest remainder); exact "
            f"values: ledger statement --json. Made {iso(generated_at)} by ledger {version}.")
    if t.replaced:
        foot += " Characters outside Latin-1 in names are shown as ?; the JSON and CSV keep them."
    line(foot, 7, h=3.4)
    if pdf.page_no() != 1 or pdf.get_y() > pdf.h - 5:
        raise ValueError("the statement does not fit on one page")
    return bytes(pdf.output())


def write_statement(st: Statement, path: str | Path, *, generated_at: datetime, version: str) -> Path:
    """Write the statement's PDF to `path` (checked by the path guard, whole or not at all)."""
    return write_output(path, statement_as_pdf(st, generated_at=generated_at, version=version))
