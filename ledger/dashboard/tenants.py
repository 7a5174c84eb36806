"""Tenants side by side for the dashboard: the tenant report's numbers and each tenant's daily cost."""
from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from datetime import date
from decimal import Decimal

import pandas as pd

from .. import reports
from ..allocate import VARIANCE
from ..money import ZERO
from .economics import _d

#: The tenant report's metrics (``ledger report tenants --csv``) and the column each becomes here.
TENANT_METRICS = {"cost": "cost", "cost per successful task": "cost_per_successful_task",
                  "active tokens": "active_tokens", "$/1M active tokens": "cost_per_1m_active_tokens",
                  "share of GPU": "share_of_gpu", "task failure rate": "task_failure_rate",
                  "success rate": "success_rate", "failed work share": "failed_work_share", "requests": "requests",
                  "tasks success": "tasks_success", "tasks failure": "tasks_failure",
                  "tasks unknown": "tasks_unknown", "idle share": "idle_share"}
_INT_METRICS = {"active_tokens", "requests", "tasks_success", "tasks_failure", "tasks_unknown"}


def tenant_names(data: reports.RunData) -> list[str]:
    """Tenants of the run, by cost descending (the biggest first), then by name."""
    report = reports.unit_economics(data, by="tenant")
    return [r.key for r in sorted(report.rows, key=lambda r: (-r.cost, r.key or "")) if r.key is not None]


def tenants_frame(data: reports.RunData, tenants: Sequence[str]) -> pd.DataFrame:
    """The chosen tenants side by side, one row per tenant: the numbers of ``ledger report
    tenants --tenants A,B --csv`` (cost, cost per successful task with the reason when undefined,
    active tokens, $/1M active tokens, share of GPU, task failure rate, success rate, ...), money
    and ratios as Decimal, counts as int, None where the report leaves a number undefined."""
    cols = ["tenant", *TENANT_METRICS.values(), "undefined_because"]
    if not tenants:
        return pd.DataFrame([], columns=cols)
    report = reports.unit_economics(data, by="tenant", tenants=list(tenants))
    table = list(csv.reader(io.StringIO(reports.tenants_as_csv(report))))
    # the names as the ledger knows them: the CSV's header cells carry the formula escape ('=x)
    names = ["" if r.key is None else r.key for r in report.rows]
    metric_rows = {r[0]: r[1:] for r in table[1:]}
    rows = []
    for i, name in enumerate(names):
        row: dict = {"tenant": name, "undefined_because": ""}
        for metric, column in TENANT_METRICS.items():
            text = metric_rows[metric][i]
            if text.startswith("undefined"):
                row[column], row["undefined_because"] = None, text.split(":", 1)[-1].strip()
            elif column in _INT_METRICS:
                row[column] = int(text)
            else:
                row[column] = _d(text)
        rows.append(row)
    order = {t: i for i, t in enumerate(tenants)}
    rows.sort(key=lambda r: order.get(r["tenant"], len(order)))
    return pd.DataFrame(rows, columns=cols)


def tenant_daily_frame(data: reports.RunData, tenants: Sequence[str]) -> pd.DataFrame:
    """Each chosen tenant's cost per UTC day (its lines only): day, tenant, amount (Decimal)."""
    wanted = set(tenants)
    acc: dict[tuple[date, str], Decimal] = {}
    for ln in data.lines:
        if ln.kind in ("tenant", VARIANCE) and ln.tenant in wanted:  # a tenant's true-up variance is its cost
            acc[(ln.day, ln.tenant)] = acc.get((ln.day, ln.tenant), ZERO) + ln.amount
    rows = [{"day": d, "tenant": t, "amount": v} for (d, t), v in sorted(acc.items())]
    return pd.DataFrame(rows, columns=["day", "tenant", "amount"])
