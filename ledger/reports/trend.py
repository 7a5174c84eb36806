"""The month-over-month report: loading each month's current run, and ``trend_as_json/_as_csv/_as_table``."""
from __future__ import annotations

from rich.console import Group
from rich.text import Text

from ..instants import period_label
from ..economics import ALL_IN, ALL_IN_DEFINITION, OWN_DEFINITION, opt, ratio
from ..errors import LedgerError
from ..formats import count, display_column, money, percent, unit_costs
from ..money import fmt
from ..outputs import csv_text
from ..runs import load_run, run_data_of_stored
from ..runs import current_run as current_run_of
from ..store import month_bounds, month_of
from ..tables import FitTable, paragraph
from ..trend import CHANGE_DEFINITION, NO_RUN, Change, MonthData, Trend, TrendMonth, TrendRow, trend, undefined_reason

#: The most months one trend shows (ten years).
MAX_MONTHS = 120


class TrendRangeError(LedgerError, ValueError):
    """--from/--to that do not make a range of months (the message says why)."""


def month_labels(first: str, last: str) -> list[str]:
    """``first`` .. ``last`` (``YYYY-MM``, both included), oldest first; ValueError (StoreError for
    a name that is not a month) when `first` is after `last` or the range is over :data:`MAX_MONTHS`."""
    start, _ = month_bounds(first)
    _, end = month_bounds(last)
    if start >= end:
        raise TrendRangeError(f"--from {first} is after --to {last} (both are months, both included)")
    labels, at = [], start
    while at < end:
        labels.append(month_of(at))
        at = month_bounds(labels[-1])[1]
        if len(labels) > MAX_MONTHS:
            raise TrendRangeError(f"--from {first} --to {last} spans more than {MAX_MONTHS} months")
    return labels


def _month_data(s, label: str) -> MonthData:
    start, end = month_bounds(label)
    run = current_run_of(s, start=start, end=end)
    data = None if run is None else run_data_of_stored(load_run(s, run_id=run.id))
    return MonthData(label=label, start=start, end=end, data=data)


def load_trend(s, *, first: str, last: str, by: str = "tenant") -> Trend:
    """The trend of the current runs of the months `first` .. `last` (both included) in the store
    of session `s`, with the month before `first` read for the first month's changes."""
    labels = month_labels(first, last)
    start, _ = month_bounds(labels[0])
    before = None
    if start.year > 1 or start.month > 1:
        prev = month_of(start.replace(year=start.year - (start.month == 1), month=(start.month - 2) % 12 + 1))
        before = _month_data(s, prev)
    return trend([_month_data(s, m) for m in labels], by=by, before=before)


# ---- JSON and CSV ------------------------------------------------------------------------------

def _change_json(c: Change | None) -> dict | None:
    if c is None:
        return None
    return {"amount": opt(c.amount), "ratio": ratio(c.ratio), "reason": c.reason}


def _count_change_json(c: Change | None) -> dict | None:
    return None if c is None else {"amount": None if c.amount is None else int(c.amount), "ratio": ratio(c.ratio),
                                   "reason": c.reason}


def _row_json(t: Trend, r: TrendRow) -> dict:
    why = undefined_reason(r)
    return {t.by: r.key, "cost": fmt(r.cost), "successful_tasks": r.successful_tasks,
            "cost_per_successful_task": opt(r.cost_per_successful_task), "requests": r.requests,
            "active_tokens": r.active_tokens,
            "change": {k: _change_json(c) for k, c in r.changes.items()},
            "reasons": {} if why is None else {"cost_per_successful_task": why}}


def _month_json(t: Trend, m: TrendMonth) -> dict:
    head = {"month": m.label, "period": period_label(m.start, m.end)}
    if m.run is None:
        return {**head, "status": "no run", "reason": NO_RUN, "run_id": None, "rows": []}
    info = m.run
    return {**head, "status": "run", "run_id": info.run_id, "currency": info.currency,
            "price_books": list(info.price_books), "idle_policy": info.idle_policy,
            "close": None if info.closing is None else info.closing.as_json(),
            "total": fmt(m.total), "successful_tasks": m.successful_tasks,
            ALL_IN: opt(m.cost_per_successful_task_all_in),
            "change": {k: _change_json(c) for k, c in m.changes.items()},
            "reasons": {} if m.successful_tasks else {ALL_IN: "no task with outcome success was decided in the period"},
            "rows": [_row_json(t, r) for r in m.rows]}


def trend_as_json(t: Trend) -> dict:
    """The trend as a JSON-ready dict: ``months`` oldest first, each with its run (or ``status``
    ``no run`` and why), the run total, successful tasks, the all-in cost per successful task, the
    rows by `by`, and every figure's ``change`` from the month before (amount, ratio, reason when
    there is none); money as decimal strings."""
    return {"report": "trend", "by": t.by, "from": t.months[0].label, "to": t.months[-1].label,
            "definitions": {ALL_IN: ALL_IN_DEFINITION, "cost_per_successful_task": OWN_DEFINITION,
                            "change": CHANGE_DEFINITION},
            "months": [_month_json(t, m) for m in t.months]}


_CSV_TEXT = ("month", "period_start", "period_end", "status", "run_id", "period_close", "currency",
             "undefined_because")


def trend_as_csv(t: Trend) -> str:
    """One CSV row per month and row key (a month with no run: one row, status ``no run``); each row
    repeats its month's run, its close (``period_close``: "closed by NAME at T, final run R" or
    "open"), total, successes and all-in figure with their changes."""
    out = []
    for m in t.months:
        doc = _month_json(t, m)
        head = {"month": m.label, "period_start": doc["period"]["start"], "period_end": doc["period"]["end"],
                "status": doc["status"], "run_id": doc["run_id"] or "",
                "period_close": (doc.get("close") or {}).get("text", ""), "currency": doc.get("currency", ""),
                "run_total": doc.get("total") or "", "run_successful_tasks": doc.get("successful_tasks", ""),
                ALL_IN: doc.get(ALL_IN) or ""}
        for k, key in (("total", "run_total"), (ALL_IN, ALL_IN)):
            c = doc.get("change", {}).get(k) or {}
            head[f"{key}_change"] = c.get("amount") or ""
            head[f"{key}_change_ratio"] = c.get("ratio") or ""
        if not doc["rows"]:
            out.append({**head, t.by: "", "cost": "", "cost_change": "", "cost_change_ratio": "",
                        "successful_tasks": "", "cost_per_successful_task": "", "cost_per_successful_task_change": "",
                        "cost_per_successful_task_change_ratio": "", "requests": "", "active_tokens": "",
                        "undefined_because": doc.get("reason", "")})
            continue
        for r in doc["rows"]:
            ch = r["change"]
            why = "; ".join(f"{k} change: {c['reason']}" for k, c in ch.items() if c and c["reason"])
            why = "; ".join(x for x in (r["reasons"].get("cost_per_successful_task"), why) if x)
            out.append({**head, t.by: r[t.by] or "", "cost": r["cost"], "cost_change": ch["cost"]["amount"] or "",
                        "cost_change_ratio": ch["cost"]["ratio"] or "",
                        "successful_tasks": "" if r["successful_tasks"] is None else r["successful_tasks"],
                        "cost_per_successful_task": r["cost_per_successful_task"] or "",
                        "cost_per_successful_task_change": ch["cost_per_successful_task"]["amount"] or "",
                        "cost_per_successful_task_change_ratio": ch["cost_per_successful_task"]["ratio"] or "",
                        "requests": r["requests"], "active_tokens": r["active_tokens"], "undefined_because": why})
    fields = list(out[0])
    return csv_text(fields, out, numeric=[f for f in fields if f not in (*_CSV_TEXT, t.by)])


# ---- the terminal ------------------------------------------------------------------------------

def _pct(c: Change | None) -> str:
    if c is None or c.ratio is None:
        return "—"
    return percent(c.ratio, signed=True)


def _key(by: str, key: str | None) -> str:
    return key if key is not None else "shared charges" if by == "product" else f"(no {by})"


def _months_table(t: Trend) -> FitTable:
    cur = next((m.run.currency for m in t.months if m.run), "")
    tab = FitTable(title=f"month over month: runs ({cur})", caption="change: from the month before; —: none "
                   "(the month before has no run, or the figure is undefined)")
    for h, numeric in (("month", False), ("run", False), ("run total", True), ("change", True),
                       ("successful tasks", True), ("all-in cost per success", True), ("change ", True),
                       ("close", False)):
        tab.add_column(h, numeric=numeric)
    per = unit_costs([m.cost_per_successful_task_all_in for m in t.months])
    for m, p in zip(t.months, per):
        if m.run is None:
            tab.add_row(m.label, "no run", "—", "—", "—", "—", "—", "—")
            continue
        tab.add_row(m.label, m.run.run_id[:12], money(m.total), _pct(m.changes.get("total")),
                    count(m.successful_tasks), p if m.cost_per_successful_task_all_in is not None else "undefined",
                    _pct(m.changes.get(ALL_IN)), "—" if m.run.closing is None else m.run.closing.text)
    return tab


def _cost_table(t: Trend) -> FitTable:
    keys = t.keys
    tab = FitTable(title=f"cost by {t.by}", caption="each month's column adds up to its total as printed; change "
                   "in % from the month before; not in run: the month's run has no line of it")
    tab.add_column(t.by, numeric=False)
    cols = []
    for i, m in enumerate(t.months):
        tab.add_column(m.label if m.run else f"{m.label} (no run)")
        if i:
            tab.add_column(f"change {m.label[5:]}")
        values = [None if m.row(k) is None else m.row(k).cost for k in keys]
        cols.append(display_column(values) if m.run else ([None] * len(keys), None))
    for j, k in enumerate(keys):
        cells = []
        for i, m in enumerate(t.months):
            r = m.row(k)
            shown = cols[i][0][j]
            cells.append("no run" if m.run is None else "not in run" if r is None else money(shown))
            if i:
                cells.append(_pct(None if r is None else r.changes.get("cost")))
        tab.add_row(_key(t.by, k), *cells)
    total = []
    for i, m in enumerate(t.months):
        total.append("—" if m.run is None else money(cols[i][1]))
        if i:
            total.append("")
    tab.add_row(f"all {t.by}s", *total, style="bold")
    return tab


def _per_success_table(t: Trend) -> FitTable:
    keys = t.keys
    tab = FitTable(title=f"cost per successful task (own cost) by {t.by}", caption=OWN_DEFINITION)
    tab.add_column(t.by, numeric=False)
    for i, m in enumerate(t.months):
        tab.add_column(f"{m.label} tasks ok")
        tab.add_column(f"{m.label} per success")
        if i:
            tab.add_column(f"change {m.label[5:]}")
    shown = unit_costs([m.row(k).cost_per_successful_task for m in t.months for k in keys
                        if m.row(k) is not None])
    it = iter(shown)
    cells_of = {(m.label, k): next(it) for m in t.months for k in keys if m.row(k) is not None}
    for k in keys:
        cells = []
        for i, m in enumerate(t.months):
            r = m.row(k)
            if r is None:
                cells += ["no run" if m.run is None else "not in run", "—"]
            else:
                cells += [count(r.successful_tasks) if r.successful_tasks is not None else "—",
                          cells_of[(m.label, k)] if r.cost_per_successful_task is not None else "undefined"]
            if i:
                cells.append(_pct(None if r is None else r.changes.get("cost_per_successful_task")))
        tab.add_row(_key(t.by, k), *cells)
    return tab


def trend_as_table(t: Trend):
    """The trend for a person: the runs month by month, cost by row key, and (by tenant or product)
    the own cost per successful task."""
    parts = [_months_table(t), _cost_table(t)]
    if t.by != "model":
        parts.append(_per_success_table(t))
    parts.append(paragraph(Text(f"all-in = {ALL_IN_DEFINITION}; {CHANGE_DEFINITION}")))
    return Group(*parts)

