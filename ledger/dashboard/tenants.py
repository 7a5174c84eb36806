"""Tenants side by side for the dashboard: the tenant report's numbers and each tenant's daily cost."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal

import pandas as pd

from .. import reports
from ..allocate import VARIANCE
from ..money import ZERO, quantize
from ..reports.budgets import with_budgets
from .economics import BUDGET_COLUMNS, RATIO_EXP, _d

#: The metrics of the tenant comparison and the column each is here. `idle_shared` is money: the
#: idle (slack and reserve) booked on the tenant under idle policy ``share``.
TENANT_METRICS = {"cost": "cost", "cost per successful task": "cost_per_successful_task",
                  "active tokens": "active_tokens", "$/1M active tokens": "cost_per_1m_active_tokens",
                  "share of GPU": "share_of_gpu", "task failure rate": "task_failure_rate",
                  "success rate": "success_rate", "failed work share": "failed_work_share", "requests": "requests",
                  "tasks success": "tasks_success", "tasks failure": "tasks_failure",
                  "tasks unknown": "tasks_unknown", "idle shared": "idle_shared"}


def tenant_names(data: reports.RunData) -> list[str]:
    """Tenants of the run, by cost descending (the biggest first), then by name."""
    report = reports.unit_economics(data, by="tenant")
    return [r.key for r in sorted(report.rows, key=lambda r: (-r.cost, r.key or "")) if r.key is not None]


def tenants_frame(data: reports.RunData, tenants: Sequence[str], books=()) -> pd.DataFrame:
    """The chosen tenants side by side, one row per tenant, in the order given: the rows of
    ``ledger report tenants --tenants A,B --json`` (cost, cost per successful task with the reason
    when undefined, active tokens, cost per 1M active tokens, share of GPU, success rate, ...) and
    the task failure rate, failed ÷ decided tasks (None when no task was decided), and the failed
    work in money (for a totals column's failed-work share); money and ratios
    as Decimal, counts as int, None where the report leaves a number undefined. With the budgets
    books `books`, the :data:`BUDGET_COLUMNS` when a tenant budget is in force for the month."""
    cols = ["tenant", *TENANT_METRICS.values(), "failed_work", "undefined_because"]
    if not tenants:
        return pd.DataFrame([], columns=cols)
    doc = reports.unit_economics_as_json(with_budgets(reports.unit_economics(data, by="tenant",
                                                                             tenants=list(tenants)), books))
    extra = BUDGET_COLUMNS if "budget_books" in doc else []
    rows = []
    for r in doc["rows"]:
        tasks = r.get("tasks") or {"success": 0, "failure": 0, "unknown": 0}
        decided = tasks["success"] + tasks["failure"]
        rows.append({"tenant": "" if r["tenant"] is None else r["tenant"], "cost": _d(r["cost"]),
                     "cost_per_successful_task": _d(r["cost_per_successful_task"]),
                     "active_tokens": r["active_tokens"],
                     "cost_per_1m_active_tokens": _d(r["cost_per_1m_active_tokens"]),
                     "share_of_gpu": _d(r["share_of_gpu"]),
                     "task_failure_rate": quantize(Decimal(tasks["failure"]) / decided, RATIO_EXP) if decided else None,
                     "success_rate": _d(r["success_rate"]), "failed_work_share": _d(r["failed_work_share"]),
                     "requests": r["requests"], "tasks_success": tasks["success"], "tasks_failure": tasks["failure"],
                     "tasks_unknown": tasks["unknown"], "idle_shared": _d(r["idle_share"]),
                     "failed_work": _d(r["failed_work"]),
                     "undefined_because": r["reasons"].get("cost_per_successful_task", ""),
                     **{c: _d(r[c]) for c in extra}})
    order = {t: i for i, t in enumerate(tenants)}
    rows.sort(key=lambda r: order.get(r["tenant"], len(order)))
    return pd.DataFrame(rows, columns=cols + extra)


def tenant_daily_frame(data: reports.RunData, tenants: Sequence[str]) -> pd.DataFrame:
    """Each chosen tenant's cost per UTC day (its lines only): day, tenant, amount (Decimal)."""
    wanted = set(tenants)
    acc: dict[tuple[date, str], Decimal] = {}
    for ln in data.lines:
        if ln.kind in ("tenant", VARIANCE) and ln.tenant in wanted:  # a tenant's true-up variance is its cost
            acc[(ln.day, ln.tenant)] = acc.get((ln.day, ln.tenant), ZERO) + ln.amount
    rows = [{"day": d, "tenant": t, "amount": v} for (d, t), v in sorted(acc.items())]
    return pd.DataFrame(rows, columns=["day", "tenant", "amount"])
