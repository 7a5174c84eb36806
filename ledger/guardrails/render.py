"""The alerts and the budgets as JSON, CSV, terminal tables and one Slack-compatible text: one
report shape, many renderers. Every output says PROVISIONAL: it is never a period's run."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from .. import formats
from ..instants import iso
from ..outputs import csv_text
from .records import PROVISIONAL, SCOPE_FIELDS, Alerts, Anomaly, Budget, BudgetStatus

#: The columns of ``ledger alerts --csv``: one row per budget (record ``budget``) and per anomaly
#: (record ``anomaly``); a column that does not apply to a record is empty.
CSV_COLUMNS = ("record", "status", "as_of", "currency", "tenant", "product", "model", "owner", "monthly",
               "spent_to_date", "projected_month_end", "runs_out_on", "day", "spend", "baseline", "mad", "threshold",
               "ratio", "partial_day", "alert")
_NUMERIC = ("monthly", "spent_to_date", "projected_month_end", "spend", "baseline", "mad", "threshold", "ratio")
#: The columns of ``ledger budgets show --csv``.
BUDGET_COLUMNS = ("book", "entry", "tenant", "product", "model", "monthly", "currency", "owner", "effective_from",
                  "effective_to")


def _money(v) -> str | None:
    return None if v is None else str(v)


def budget_as_dict(b: Budget) -> dict:
    return {"book": f"{b.book}@{b.version}", "entry": b.entry, **{k: getattr(b, k) for k in SCOPE_FIELDS},
            "monthly": str(b.monthly), "currency": b.currency, "owner": b.owner,
            "effective_from": iso(b.effective_from), "effective_to": iso(b.effective_to)}


def status_as_dict(st: BudgetStatus) -> dict:
    b = st.budget
    return {**{k: getattr(b, k) for k in SCOPE_FIELDS}, "owner": b.owner, "monthly": str(b.monthly),
            "currency": b.currency, "book": f"{b.book}@{b.version}", "spent_to_date": str(st.spent_to_date),
            "remaining": str(st.remaining), "projected_month_end": str(st.projected_month_end),
            "runs_out_on": None if st.runs_out_on is None else st.runs_out_on.isoformat(),
            "profile_basis": st.profile_basis, "weekday_profile": [str(x) for x in st.profile],
            "daily": [{"day": d.isoformat(), "spend": str(a)} for d, a in st.daily], "alerts": list(st.alerts)}


def anomaly_as_dict(a: Anomaly) -> dict:
    return {"tenant": a.tenant, "model": a.model, "day": a.day.isoformat(), "spend": str(a.spend),
            "baseline": str(a.baseline), "mad": str(a.mad), "threshold": str(a.threshold), "weeks": a.weeks,
            "ratio": _money(a.ratio), "partial_day": a.partial, "currency": a.currency}


def alert_lines(alerts: Alerts) -> list[str]:
    """One sentence per alert that fired, in the alerts' words (the Slack text and the table's caption)."""
    out = []
    for st in alerts.budgets:
        b, cur = st.budget, st.budget.currency
        if "exhausted" in st.alerts:
            out.append(f"budget {b.label()} is used up: {formats.money(st.spent_to_date, cur)} spent of "
                       f"{formats.money(b.monthly, cur)} (owner {b.owner})")
        elif "runs_out" in st.alerts:
            out.append(f"budget {b.label()} runs out on {st.runs_out_on}: projected {formats.money(st.projected_month_end, cur)}"
                       f" of {formats.money(b.monthly, cur)} by month end (owner {b.owner})")
    for a in alerts.anomalies:
        ratio = f", {a.ratio}x" if a.ratio is not None else ""
        out.append(f"anomaly: {a.tenant} on {a.model} spent {formats.money(a.spend, a.currency)} on {a.day}"
                   f"{' (so far)' if a.partial else ''} against a baseline of {formats.money(a.baseline, a.currency)}"
                   f"{ratio}")
    return out


def alerts_as_json(alerts: Alerts) -> dict:
    """The ``ledger alerts --json`` document (money as decimal strings, instants in UTC with Z)."""
    return {"status": PROVISIONAL, "provisional": True, "as_of": iso(alerts.as_of),
            "month": {"start": iso(alerts.month_start), "end": iso(alerts.month_end)}, "currency": alerts.currency,
            "fired": alerts.fired, "alerts": alert_lines(alerts),
            "budgets": [status_as_dict(st) for st in alerts.budgets],
            "anomalies": [anomaly_as_dict(a) for a in alerts.anomalies],
            "rule": alerts.rule.as_dict(), "data_from": None if alerts.data_from is None else alerts.data_from.isoformat(),
            "budget_books": list(alerts.budget_books), "price_books": list(alerts.price_books),
            "notes": list(alerts.notes)}


def alerts_as_csv(alerts: Alerts) -> str:
    rows = []
    common = {"status": PROVISIONAL, "as_of": iso(alerts.as_of), "currency": alerts.currency}
    for st in alerts.budgets:
        d = status_as_dict(st)
        rows.append({**common, "record": "budget", **{k: d[k] for k in (*SCOPE_FIELDS, "owner", "monthly",
                                                                          "spent_to_date", "projected_month_end",
                                                                          "runs_out_on")},
                     "alert": " ".join(st.alerts)})
    for a in alerts.anomalies:
        d = anomaly_as_dict(a)
        rows.append({**common, "record": "anomaly", **{k: d[k] for k in ("tenant", "model", "day", "spend", "baseline",
                                                                           "mad", "threshold", "ratio", "partial_day")},
                     "alert": "anomaly"})
    return csv_text(list(CSV_COLUMNS), [{k: r.get(k) for k in CSV_COLUMNS} for r in rows], numeric=_NUMERIC)


def slack_text(alerts: Alerts) -> str:
    """The webhook's ``text``: a headline, then one line per alert (Slack mrkdwn-safe plain text)."""
    head = (f"{PROVISIONAL} ledger alerts as of {iso(alerts.as_of)} ({alerts.month_start:%Y-%m}, {alerts.currency}): "
            f"{formats.plural(alerts.fired, 'alert')}" if alerts.fired else
            f"{PROVISIONAL} ledger alerts as of {iso(alerts.as_of)} ({alerts.month_start:%Y-%m}): no alerts")
    return "\n".join([head, *(f"• {line}" for line in alert_lines(alerts))])


def webhook_body(alerts: Alerts) -> dict:
    """The one JSON body posted per run: Slack's ``text`` plus the structured alerts (the
    ``--json`` document's fields beside it, for any other receiver)."""
    return {"text": slack_text(alerts), **alerts_as_json(alerts)}


def alerts_as_table(alerts: Alerts):
    """The terminal view: the budgets beside their spend, then the anomalies, then what fired."""
    from rich.console import Group
    from rich.text import Text

    from ..tables import FitTable

    cur = alerts.currency
    t = FitTable(title=f"Budgets, {alerts.month_start:%Y-%m} as of {iso(alerts.as_of)} ({PROVISIONAL}, {cur})",
                 caption="spend to date is the month's usage priced and allocated by the run's rules, not a run; "
                         "projection: the same weekday over the last weeks (docs/alerts.md)", keys=1)
    for h, numeric in (("budget", False), ("owner", False), ("monthly", True), ("spent", True), ("spent %", True),
                       ("projected", True), ("runs out", False), ("alert", False)):
        t.add_column(h, numeric=numeric)
    for st in alerts.budgets:
        b = st.budget
        t.add_row(b.label(), b.owner, formats.money(b.monthly), formats.money(st.spent_to_date),
                  formats.percent(st.spent_to_date / b.monthly), formats.money(st.projected_month_end),
                  str(st.runs_out_on) if st.runs_out_on else formats.MISSING, " ".join(st.alerts) or formats.MISSING,
                  style="bold red" if st.alerts else None)
    parts: list = [t]
    if alerts.anomalies:
        a_t = FitTable(title=f"Spend anomalies ({cur}): above the median of the same weekday", keys=2)
        for h, numeric in (("tenant", False), ("model", False), ("day", False), ("spend", True), ("baseline", True),
                           ("threshold", True), ("ratio", True)):
            a_t.add_column(h, numeric=numeric)
        for a in alerts.anomalies:
            a_t.add_row(a.tenant, a.model, f"{a.day}{' (so far)' if a.partial else ''}", formats.money(a.spend),
                        formats.money(a.baseline), formats.money(a.threshold),
                        formats.MISSING if a.ratio is None else f"{a.ratio}x")
        parts.append(a_t)
    lines = alert_lines(alerts)
    summary = (f"{formats.plural(alerts.fired, 'alert')} fired:\n" + "\n".join(f"  {x}" for x in lines)
               if lines else "no alerts: every budget holds and no spend anomaly")
    parts.append(Text(summary + "".join(f"\nnote: {n}" for n in alerts.notes)))
    return Group(*parts)


def budgets_as_json(budgets: Sequence[Budget], at: datetime) -> dict:
    return {"at": iso(at), "budgets": [budget_as_dict(b) for b in budgets]}


def budgets_as_csv(budgets: Sequence[Budget]) -> str:
    return csv_text(list(BUDGET_COLUMNS), [budget_as_dict(b) for b in budgets], numeric=("monthly",))


def budgets_as_table(budgets: Sequence[Budget], at: datetime):
    from ..tables import FitTable

    t = FitTable(title=f"Budgets in force at {iso(at)}", keys=1)
    for h, numeric in (("budget", False), ("monthly", True), ("currency", False), ("owner", False), ("from", False),
                       ("to", False), ("book", False)):
        t.add_column(h, numeric=numeric)
    for b in budgets:
        t.add_row(b.label(), formats.money(b.monthly), b.currency, b.owner, iso(b.effective_from),
                  iso(b.effective_to) or formats.MISSING, f"{b.book}@{b.version} [{b.entry}]")
    return t
