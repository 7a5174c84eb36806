"""Drill-down and trend readers for the dashboard: a tenant's products, models and lines, the tenant x
product matrix, the view by product with the shared charges spread, and the month-over-month trend."""
from __future__ import annotations

from decimal import Decimal

import pandas as pd
from sqlmodel import Session

from .. import drilldown, reports
from ..economics import ALL_IN
from ..reports.trend import load_trend, trend_as_json
from .economics import UNIT_COLUMNS, _d

SHARED_CHARGES = drilldown.SHARED_CHARGES
SHARED_CHARGES_NOTE = drilldown.SHARED_CHARGES_NOTE
LINE_COLUMNS = ["day", "product", "model", "pool", "provider", "category", "work", "shared_from", "quantity", "unit",
                "amount"]


def matrix_frame(data: reports.RunData, *, spread: bool = False) -> pd.DataFrame:
    """Tenant x product: one row per tenant, a column per product (and :data:`SHARED_CHARGES` unless
    `spread`), cells exact Decimal (zero where the tenant has none of a product)."""
    cells = drilldown.matrix(data, spread=spread)
    tenants = sorted({t for t, _ in cells})
    products = sorted({p for _, p in cells if p != SHARED_CHARGES})
    if any(p == SHARED_CHARGES for _, p in cells):
        products.append(SHARED_CHARGES)
    rows = [{"tenant": t, **{p: cells.get((t, p), Decimal(0)) for p in products}} for t in tenants]
    return pd.DataFrame(rows, columns=["tenant", *products])


def tenant_products_frame(data: reports.RunData, tenant: str, *, category: str | None = None) -> pd.DataFrame:
    """A tenant's cost by product (its shared charges on :data:`SHARED_CHARGES`): product, cost,
    failed_work (Decimal), lines; only lines of `category` when given."""
    cells = drilldown.by_product(drilldown.tenant_lines(data, tenant, category=category))
    order = sorted(cells, key=lambda p: (p == SHARED_CHARGES, p))
    return pd.DataFrame([{"product": p, "cost": cells[p].cost, "failed_work": cells[p].failed_work,
                          "lines": cells[p].lines} for p in order], columns=["product", "cost", "failed_work", "lines"])


def tenant_models_frame(data: reports.RunData, tenant: str, *, product: str | None = None,
                        category: str | None = None) -> pd.DataFrame:
    """A tenant's cost by product and model (``no model`` for meters and shared charges)."""
    cells = drilldown.by_model(drilldown.tenant_lines(data, tenant, product=product, category=category))
    order = sorted(cells, key=lambda k: (k[0] == SHARED_CHARGES, k[0], k[1] == "no model", k[1]))
    return pd.DataFrame([{"product": p, "model": m, "cost": cells[(p, m)].cost, "failed_work": cells[(p, m)].failed_work,
                          "lines": cells[(p, m)].lines} for p, m in order],
                        columns=["product", "model", "cost", "failed_work", "lines"])


def tenant_lines_frame(data: reports.RunData, tenant: str, *, product: str | None = None, model: str | None = None,
                       category: str | None = None) -> pd.DataFrame:
    """The tenant's lines, filtered (:func:`ledger.drilldown.tenant_lines`), amounts exact."""
    lines = drilldown.tenant_lines(data, tenant, product=product, model=model, category=category)
    rows = [{c: getattr(ln, c) for c in LINE_COLUMNS} for ln in lines]
    for r in rows:
        r["product"] = r["product"] if r["product"] is not None else SHARED_CHARGES
    return pd.DataFrame(rows, columns=LINE_COLUMNS)


def spread_frame(data: reports.RunData) -> pd.DataFrame:
    """Unit economics by product with the shared charges spread over products
    (:func:`ledger.drilldown.spread_by_product`), in the columns of ``unit_economics_frame``."""
    spread = drilldown.spread_shared(data)
    from .economics import unit_economics_frame

    return unit_economics_frame(spread, by="product")


def spread_parts_frame(data: reports.RunData) -> pd.DataFrame:
    """How the shared charges were spread: tenant, basis, category, amount, product, part (one row
    per piece and product; product :data:`SHARED_CHARGES` for a piece that could not be spread)."""
    rows = []
    for sp in drilldown.spread_parts(data):
        for product, part in (sp.parts or {SHARED_CHARGES: sp.amount}).items():
            rows.append({"tenant": sp.tenant, "basis": sp.basis, "category": sp.category, "amount": sp.amount,
                         "product": product, "part": part})
    return pd.DataFrame(rows, columns=["tenant", "basis", "category", "amount", "product", "part"])


# ---- the trend ----------------------------------------------------------------------------------

TREND_MONTH_COLUMNS = ["month", "status", "run_id", "currency", "total", "total_change_ratio", "successful_tasks",
                       ALL_IN, "all_in_change_ratio"]
TREND_ROW_COLUMNS = ["month", "key", "cost", "cost_change", "cost_change_ratio", "successful_tasks",
                     "cost_per_successful_task", "cost_per_successful_task_change_ratio", "change_reason"]


def trend_frames(s: Session, *, first: str, last: str, by: str = "tenant") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The trend of ``ledger report trend --from FIRST --to LAST --by BY --json`` as two frames:
    the months (run, total, successes, all-in figure and their change ratios; status ``no run``
    for a month without one) and the rows (month, key, cost, successes, own cost per successful task,
    changes; key None for the lines with no `by`). Money and ratios Decimal."""
    doc = trend_as_json(load_trend(s, first=first, last=last, by=by))
    months, rows = [], []
    for m in doc["months"]:
        ch = m.get("change", {})
        months.append({"month": m["month"], "status": m["status"], "run_id": m["run_id"],
                       "currency": m.get("currency"), "total": _d(m.get("total")),
                       "total_change_ratio": _d((ch.get("total") or {}).get("ratio")),
                       "successful_tasks": m.get("successful_tasks"), ALL_IN: _d(m.get(ALL_IN)),
                       "all_in_change_ratio": _d((ch.get(ALL_IN) or {}).get("ratio"))})
        for r in m["rows"]:
            c, p = r["change"]["cost"], r["change"]["cost_per_successful_task"]
            rows.append({"month": m["month"], "key": r[by], "cost": _d(r["cost"]), "cost_change": _d(c["amount"]),
                         "cost_change_ratio": _d(c["ratio"]), "successful_tasks": r["successful_tasks"],
                         "cost_per_successful_task": _d(r["cost_per_successful_task"]),
                         "cost_per_successful_task_change_ratio": _d(p["ratio"]),
                         "change_reason": c["reason"] or ""})
    return pd.DataFrame(months, columns=TREND_MONTH_COLUMNS), pd.DataFrame(rows, columns=TREND_ROW_COLUMNS)


def run_months(runs: pd.DataFrame) -> list[str]:
    """The calendar months that have a run (from ``runs_frame``), oldest first."""
    return sorted({p for p in runs["period"] if isinstance(p, str) and len(p) == 7})


__all__ = ["LINE_COLUMNS", "SHARED_CHARGES", "SHARED_CHARGES_NOTE", "TREND_MONTH_COLUMNS", "TREND_ROW_COLUMNS",
           "UNIT_COLUMNS", "matrix_frame", "run_months", "spread_frame", "spread_parts_frame",
           "tenant_lines_frame", "tenant_models_frame", "tenant_products_frame", "trend_frames"]
