"""Unit economics of a run for the dashboard: headline tiles, provenance, daily costs, rows and exports."""
from __future__ import annotations

from datetime import date, datetime, timezone
from decimal import Decimal

import pandas as pd

from .. import reports, runs
from ..reports.budgets import with_budgets
from ..allocate import CATEGORIES, VARIANCE
from ..instants import period_label
from ..money import ZERO, quantize

RATIO_EXP = reports.RATIO_EXP
#: What the two costs per successful task mean: the pages label each figure with its definition.
ALL_IN_DEFINITION = reports.ALL_IN_DEFINITION
OWN_DEFINITION = reports.OWN_DEFINITION

# ---- unit economics -----------------------------------------------------------------------------

def _d(text: str | None) -> Decimal | None:
    return None if text is None or text == "" else Decimal(text)


def _share(part: Decimal, whole: Decimal) -> Decimal | None:
    return quantize(part / whole, RATIO_EXP) if whole else None


def fleet_row(data: reports.RunData) -> reports.Row:
    """The whole run as one unit-economics row: the run total over every task of the period, so
    its ``cost_per_successful_task`` is the all-in figure (idle and unallocated included), the
    report's ``cost_per_successful_task_all_in``."""
    report = reports.unit_economics(data, by="tenant")
    tasks = {"success": 0, "failure": 0, "unknown": 0}
    for t in data.tasks:
        for k in tasks:
            tasks[k] += getattr(t, k)
    by_cat = {c: ZERO for c in CATEGORIES}
    failed = ZERO
    for ln in data.lines:
        by_cat[ln.category] += ln.amount
        if ln.work == "failed":
            failed += ln.amount
    reasons = {} if tasks["success"] else {"cost_per_successful_task": reports.NO_SUCCESS}
    return reports.Row(key=None, cost=report.total, by_category=by_cat, failed_work=failed, idle_share=ZERO,
                       gpu_cost=report.gpu_total, active_tokens=sum(u.active_tokens for u in data.usage),
                       requests=sum(u.requests for u in data.usage),
                       failed_requests=sum(u.failed_requests for u in data.usage), tasks=tasks,
                       criteria=report.criteria, reasons=reasons)


def headline_frame(data: reports.RunData) -> pd.DataFrame:
    """One row, the finance tiles: total cost, the all-in cost per successful task (the run total
    ÷ the run's successful tasks, exactly ``cost_per_successful_task_all_in`` of ``ledger report
    unit-economics --json``; with the reason when undefined) and both definitions, successful
    tasks, failed work and its share, idle reserve, idle slack and unallocated with their shares of
    the total, the currency and the run, its idle policy, and the idle shared over tenants
    (``idle_slack_shared``, ``idle_reserve_shared``: the tenant lines carrying idle under policy
    ``share``, zero under ``separate``)."""
    row = fleet_row(data)
    report = reports.unit_economics(data, by="tenant")
    un = report.unattributed
    shared = {"idle_slack": ZERO, "idle_reserve": ZERO}
    for ln in data.lines:
        if ln.shared_from in shared:
            shared[ln.shared_from] += ln.amount
    return pd.DataFrame([{
        "run_id": data.info.run_id, "currency": data.info.currency, "total": row.cost,
        "cost_per_successful_task_all_in": report.cost_per_successful_task_all_in,
        "cost_per_successful_task_all_in_reason": "" if report.successful_tasks else reports.NO_SUCCESS,
        "all_in_definition": ALL_IN_DEFINITION, "own_definition": OWN_DEFINITION,
        "successful_tasks": report.successful_tasks, "failed_tasks": row.tasks["failure"],
        "success_rate": row.success_rate,
        "failed_work": row.failed_work, "failed_work_share": row.failed_work_share,
        "idle_reserve": un["idle_reserve"], "idle_reserve_share": _share(un["idle_reserve"], row.cost),
        "idle_slack": un["idle_slack"], "idle_slack_share": _share(un["idle_slack"], row.cost),
        "unallocated": un["unallocated"], "unallocated_share": _share(un["unallocated"], row.cost),
        "on_tenants": row.cost - sum(un.values(), ZERO), "idle_policy": data.info.idle_policy,
        "idle_slack_shared": shared["idle_slack"], "idle_slack_shared_share": _share(shared["idle_slack"], row.cost),
        "idle_reserve_shared": shared["idle_reserve"],
        "idle_reserve_shared_share": _share(shared["idle_reserve"], row.cost),
    }])


def provenance_frame(data: reports.RunData) -> pd.DataFrame:
    """Where every number of the run comes from: item and value (text), one row per item."""
    info = data.info
    report = reports.unit_economics(data, by="tenant")
    p = period_label(info.start, info.end)
    flags: dict[tuple[str, str], int] = {}
    for f in info.flags:
        flags[(f.kind, f.pool)] = flags.get((f.kind, f.pool), 0) + 1
    items = [
        ("period (UTC, end exclusive)", f"{p['start']} to {p['end']}"),
        ("run", info.run_id),
        ("run created at (UTC)", info.created_at.astimezone(timezone.utc).isoformat() if info.created_at else ""),
        ("reporting currency", info.currency),
        ("price book versions", ", ".join(info.price_books) or "none"),
        ("success criteria", ", ".join(report.criteria) or "none recorded"),
        ("idle policy", info.idle_policy),
        ("weight basis", info.basis),
        ("lines", f"{len(data.lines)}"),
        ("inputs digest", info.inputs_digest),
        ("code version", info.code_version),
        ("flags", "; ".join(f"{k} on pool {pool}: {n} hour{'s' if n != 1 else ''}"
                            for (k, pool), n in sorted(flags.items())) or "none"),
        ("notes", "; ".join(info.notes) or "none"),
    ]
    return pd.DataFrame(items, columns=["item", "value"])


def category_daily_frame(data: reports.RunData) -> pd.DataFrame:
    """Cost per UTC day and category (every line of the run, tenants and non-tenant kinds alike):
    day, category, amount (Decimal). The days' amounts add up to the run total."""
    acc: dict[tuple[date, str], Decimal] = {}
    for ln in data.lines:
        acc[(ln.day, ln.category)] = acc.get((ln.day, ln.category), ZERO) + ln.amount
    rows = [{"day": d, "category": c, "amount": v} for (d, c), v in sorted(acc.items())]
    return pd.DataFrame(rows, columns=["day", "category", "amount"])


def unattributed_frame(data: reports.RunData) -> pd.DataFrame:
    """The run's total split by kind (tenant lines, idle slack, idle reserve, unallocated):
    kind, amount (Decimal), share of the total."""
    report = reports.unit_economics(data, by="tenant")
    on_tenants = report.total - sum(report.unattributed.values(), ZERO)
    amounts = {"tenant": on_tenants, **report.unattributed}
    return pd.DataFrame([{"kind": k, "amount": amounts[k], "share": _share(amounts[k], report.total)} for k in amounts],
                        columns=["kind", "amount", "share"])


#: `cost_per_successful_task` is the row's own cost ÷ its own successes (:data:`OWN_DEFINITION`);
#: `undefined_because` is the reason it is undefined (empty when it is not).
UNIT_COLUMNS = ["key", "cost", "tasks_success", "tasks_failure", "tasks_unknown", "success_rate",
                "cost_per_successful_task", "undefined_because", "failed_work", "failed_work_share", "share_of_gpu",
                "requests", "active_tokens", "cost_per_1m_active_tokens", "success_criteria"]


#: The budget columns (issue 31): the budget in force for the month of the row's scope and the row's
#: cost ÷ it; present only when the report carries budgets (:mod:`ledger.reports.budgets`).
BUDGET_COLUMNS = ["budget", "of_budget"]


def unit_economics_frame(data: reports.RunData, *, by: str, books=()) -> pd.DataFrame:
    """Unit economics by tenant or product: exactly the rows of ``ledger report unit-economics
    --by BY --json`` (key None is the product-less lines, such as shared charges), money and
    ratios as Decimal; with the budgets books `books` (``ledger.guardrails.budget_books``), the
    :data:`BUDGET_COLUMNS` when a budget of the scope is in force for the month."""
    doc = reports.unit_economics_as_json(with_budgets(reports.unit_economics(data, by=by), books))
    extra = BUDGET_COLUMNS if "budget_books" in doc else []
    rows = []
    for r in doc["rows"]:
        tasks = r.get("tasks") or {}
        rows.append({"key": r[by], "cost": _d(r["cost"]), "tasks_success": tasks.get("success", 0),
                     "tasks_failure": tasks.get("failure", 0), "tasks_unknown": tasks.get("unknown", 0),
                     "success_rate": _d(r.get("success_rate")),
                     "cost_per_successful_task": _d(r.get("cost_per_successful_task")),
                     "undefined_because": r["reasons"].get("cost_per_successful_task", ""),
                     "failed_work": _d(r.get("failed_work")), "failed_work_share": _d(r.get("failed_work_share")),
                     "share_of_gpu": _d(r.get("share_of_gpu")), "requests": r["requests"],
                     "active_tokens": r["active_tokens"],
                     "cost_per_1m_active_tokens": _d(r.get("cost_per_1m_active_tokens")),
                     "success_criteria": ", ".join(r.get("success_criteria", [])),
                     **{c: _d(r[c]) for c in extra}})
    return pd.DataFrame(rows, columns=UNIT_COLUMNS + extra)


#: What a tenant line with no product holds, in the order the label names them.
NO_PRODUCT_PARTS = ("shared charges", "shared idle", "true-up variance")


def without_product(data: reports.RunData) -> dict[str, Decimal]:
    """What the row with no product of the report by product holds: the tenants' lines that carry
    no product, by what they are (:data:`NO_PRODUCT_PARTS`: charges shared over tenants by their
    rule, idle slack and reserve shared over tenants under idle policy ``share``, a true-up's
    variance on a tenant with no product), each part present only when it has lines."""
    parts: dict[str, Decimal] = {}
    for ln in data.lines:
        if ln.product is not None or ln.tenant is None or ln.kind not in ("tenant", VARIANCE):
            continue
        part = ("true-up variance" if ln.kind == VARIANCE else "shared idle" if ln.shared_from else "shared charges")
        parts[part] = parts.get(part, ZERO) + ln.amount
    return {k: parts[k] for k in NO_PRODUCT_PARTS if k in parts}


def unit_economics_csv(data: reports.RunData, *, by: str) -> str:
    """``ledger report unit-economics --by BY --csv`` of the run."""
    return reports.unit_economics_as_csv(reports.unit_economics(data, by=by))


# ---- exports ------------------------------------------------------------------------------------

def allocation_workbook(data: reports.RunData, *, locale: str) -> bytes:
    """The allocation workbook of ``ledger export --xlsx`` (totals as formulas, provenance sheet)."""
    from ..export import allocation_as_xlsx

    return allocation_as_xlsx(data, locale=locale, generated_at=datetime.now(timezone.utc),
                              version=runs.code_version())


def allocation_lines_csv(data: reports.RunData) -> str:
    """The run's lines as ``ledger export --csv`` writes them."""
    from ..export import allocation_as_csv

    return allocation_as_csv(data)
