"""The Budgets page and the alerts banner: the guardrails' alerts (ledger.guardrails) as DataFrames.

The dashboard's alerts are as of the ledger's newest usage (the hour after its last request, never
later than now): a dashboard opened on a ledger fed once a day still shows that day's alerts, and
the demo's open month (November 2026 up to 2026-11-12T12:00Z) shows them on the first run. Money
stays exact Decimal; every frame is PROVISIONAL, never a run."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pandas as pd

from .. import facts
from ..money import quantize
from ..guardrails import Alerts, BudgetStatus, Rule, budget_books, compute_alerts
from ..guardrails.render import alert_lines
from .state import reading

BUDGET_COLUMNS = ("budget", "owner", "monthly", "spent_to_date", "spent_share", "projected_month_end", "runs_out_on",
                  "alert")
ANOMALY_COLUMNS = ("tenant", "model", "day", "spend", "baseline", "threshold", "ratio", "partial_day")


def default_as_of(s, home: Path, now: datetime | None = None) -> datetime | None:
    """The hour after the ledger's last request (its newest usage), at most `now`; None when the
    ledger holds no budgets or no request facts (then there is nothing to alert on)."""
    now = now or datetime.now(timezone.utc)
    if not budget_books(s):
        return None
    batches = facts.committed_batches(s)
    if not batches.get("requests"):
        return None
    con = facts.connect(batches, home)
    try:
        last = con.execute("SELECT max(booked_at) FROM requests").fetchone()[0]
    finally:
        con.close()
    if last is None:
        return None
    hour = last.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    return min(hour, now)


def alerts_of(url: str, home: Path, as_of: datetime, rule: Rule = Rule()) -> Alerts:
    """``ledger alerts --as-of AS_OF`` over the ledger at `url` and `home`, read-only."""
    with reading(url) as s:
        return compute_alerts(s, home=home, as_of=as_of, rule=rule)


def banner_lines(alerts: Alerts) -> list[str]:
    """What fired, one sentence each (empty: no banner)."""
    return alert_lines(alerts)


def budgets_frame(alerts: Alerts) -> pd.DataFrame:
    """One row per budget in force: its scope, owner, monthly amount, spend to date and its share,
    projection to month end, the day it runs out (None when it does not) and what fired."""
    rows = [{"budget": st.budget.label(), "owner": st.budget.owner, "monthly": st.budget.monthly,
             "spent_to_date": st.spent_to_date, "spent_share": st.spent_to_date / st.budget.monthly,
             "projected_month_end": st.projected_month_end, "runs_out_on": st.runs_out_on,
             "alert": " ".join(st.alerts)} for st in alerts.budgets]
    return pd.DataFrame(rows, columns=list(BUDGET_COLUMNS))


def burndown_frame(status: BudgetStatus, alerts: Alerts) -> pd.DataFrame:
    """The burn-down of one budget: per day of the month, the budget left (`remaining`, monthly −
    cumulative spend) at the day's end: ``actual`` up to the as-of instant, then ``projected``
    from the as-of day (where the two meet) to the month's last day, which is monthly − the
    projection to month end (the rest of the as-of day is counted in the next day's point)."""
    from ..guardrails.projection import elapsed_fraction

    monthly, rows, cum = status.budget.monthly, [], Decimal(0)
    for d, amount in status.daily:
        cum += amount
        rows.append({"day": d, "series": "actual", "remaining": monthly - cum})
    today = alerts.as_of.date()
    rows.append({"day": today, "series": "projected", "remaining": monthly - cum})
    cum += quantize(status.profile[today.weekday()] * (1 - elapsed_fraction(alerts.as_of)))
    d = today + timedelta(days=1)
    while d < alerts.month_end.date():
        cum += status.profile[d.weekday()]
        rows.append({"day": d, "series": "projected", "remaining": monthly - cum})
        d += timedelta(days=1)
    return pd.DataFrame(rows, columns=["day", "series", "remaining"])


def anomalies_frame(alerts: Alerts) -> pd.DataFrame:
    rows = [{"tenant": a.tenant, "model": a.model, "day": a.day, "spend": a.spend, "baseline": a.baseline,
             "threshold": a.threshold, "ratio": a.ratio, "partial_day": a.partial} for a in alerts.anomalies]
    return pd.DataFrame(rows, columns=list(ANOMALY_COLUMNS))
