"""`ledger report lines`: a tenant's lines of a run, filtered, on the command line (the dashboard's
drill-down, :mod:`ledger.drilldown`): every line, or grouped by product or by (product, model), with
a totals row. JSON and CSV keep the exact amounts; the table is display-rounded so that its amounts
add up to its printed total (docs/exports.md, "Display rounding")."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from rich.console import Group

from ..instants import period_label
from ..drilldown import SHARED_CHARGES, by_model, by_product, tenant_lines
from ..economics import RunData
from ..formats import count, display_column, money
from ..money import ZERO, fmt
from ..outputs import csv_text
from ..tables import FitTable

#: How `report lines` can group the lines: one row each, by product, by (product, model).
GROUPS = ("line", "product", "model")
LINE_FIELDS = ("day", "product", "model", "pool", "provider", "category", "work", "shared_from", "quantity", "unit",
               "amount")


@dataclass(frozen=True)
class TenantLines:
    """A tenant's lines of one run, filtered: `data` (the run), `tenant`, the `filters` given
    (product, model, category: None when not given), `group` (one of :data:`GROUPS`), the `lines`
    and their exact `total`."""

    data: RunData
    tenant: str
    filters: dict
    group: str
    lines: tuple
    total: Decimal

    def rows(self) -> list[dict]:
        """One dict per line, or per product or (product, model) with its cost, line count and
        failed work; exact amounts (Decimal)."""
        if self.group == "line":
            return [{k: (getattr(ln, k) if k != "product" else (ln.product or SHARED_CHARGES)) for k in LINE_FIELDS}
                    for ln in self.lines]
        if self.group == "product":
            return [{"product": p, "amount": c.cost, "lines": c.lines, "failed_work": c.failed_work}
                    for p, c in sorted(by_product(self.lines).items())]
        return [{"product": p, "model": m, "amount": c.cost, "lines": c.lines, "failed_work": c.failed_work}
                for (p, m), c in sorted(by_model(self.lines).items())]


def tenant_lines_of(data: RunData, tenant: str, *, product: str | None = None, model: str | None = None,
                    category: str | None = None, group: str = "line") -> TenantLines:
    """The tenant's lines of the run `data`, filtered (:func:`ledger.drilldown.tenant_lines`; `product`
    ``shared charges`` for its lines with no product), grouped by `group`."""
    found = tuple(tenant_lines(data, tenant, product=product, model=model, category=category))
    return TenantLines(data=data, tenant=tenant, filters={"product": product, "model": model, "category": category},
                       group=group, lines=found, total=sum((ln.amount for ln in found), ZERO))


def _exact(v):
    if isinstance(v, Decimal):
        return fmt(v)
    return v.isoformat() if hasattr(v, "isoformat") else v


def lines_as_json(t: TenantLines) -> dict:
    """The lines as JSON: the run, its period and close, the tenant, the filters, the rows (money as
    exact decimal strings) and the `total` (Σ of the rows' amounts, exactly)."""
    info = t.data.info
    return {"report": "lines", "period": period_label(info.start, info.end), "run_id": info.run_id,
            "currency": info.currency, "close": None if info.closing is None else info.closing.as_json(),
            "tenant": t.tenant, "filters": t.filters, "by": t.group, "line_count": len(t.lines),
            "rows": [{k: _exact(v) for k, v in r.items()} for r in t.rows()], "total": fmt(t.total)}


def lines_as_csv(t: TenantLines) -> str:
    """One CSV row per line (or group), each with the run, currency and tenant; exact amounts."""
    info = t.data.info
    head = {"run_id": info.run_id, "currency": info.currency, "tenant": t.tenant}
    rows = [{**head, **{k: "" if v is None else _exact(v) for k, v in r.items()}} for r in t.rows()]
    fields = [*head, *(k for k in rows[0] if k not in head)] if rows else \
        [*head, *(LINE_FIELDS if t.group == "line" else ("product", "amount"))]
    return csv_text(fields, rows, numeric=("quantity", "amount", "lines", "failed_work"))


def lines_as_table(t: TenantLines) -> Group:
    """The rows with a totals row; the amounts display-rounded to add up to the printed total."""
    info = t.data.info
    p = period_label(info.start, info.end)
    given = ", ".join(f"{k} {v}" for k, v in t.filters.items() if v is not None)
    title = (f"lines of tenant {t.tenant}{' (' + given + ')' if given else ''}"
             f"{'' if t.group == 'line' else ' by ' + t.group} · {p['start']} to {p['end']} · run "
             f"{info.run_id[:12]} · {info.currency}" + ("" if info.closing is None else f" · {info.closing.text}"))
    rows = t.rows()
    shown, total = display_column([r["amount"] for r in rows])
    tab = FitTable(title=title, caption="amounts rounded so that they add up to the printed total; --json and "
                                        "--csv keep them exact")
    keys = [k for k in (rows[0] if rows else {"product": None, "amount": None}) if k not in ("amount",)]
    for k in keys:
        tab.add_column(k.replace("_", " "), numeric=k in ("quantity", "lines", "failed_work"))
    tab.add_column("amount")
    for r, a in zip(rows, shown):
        tab.add_row(*(_cell(k, r[k]) for k in keys), money(a))
    tab.add_row("total", *([""] * (len(keys) - 1)), money(total), style="bold")
    return Group(tab)


def _cell(key: str, v) -> str:
    if v is None:
        return ""
    if key == "lines":
        return count(v)
    if key == "failed_work":
        return money(v)
    if isinstance(v, Decimal):
        return format(v.normalize(), "f") if v else "0"
    return str(v) if not hasattr(v, "isoformat") else v.isoformat()


__all__ = ["GROUPS", "TenantLines", "lines_as_csv", "lines_as_json", "lines_as_table", "tenant_lines_of"]
