"""Renderers of unit-economics reports: ``*_as_json``, ``*_as_csv`` and ``*_as_table`` (rich).

Every report states its period, run, price book versions, currency and the success criteria of the
outcomes it counts. Money is formatted here, at the edge, never in the core. CSV is written by
:mod:`ledger.outputs`: every field quoted, names neutralized against formulas, numbers kept numbers.
"""
from __future__ import annotations

import io
import json
from collections.abc import Iterable
from decimal import Decimal

from babel.numbers import format_decimal
from rich.console import Group
from rich.table import Table

from ..allocate import CATEGORIES, period_label
from ..economics import (ALL_IN, ALL_IN_DEFINITION, NO_SUCCESS, OWN_DEFINITION, RATIO_EXP, Report, Row, _iso, _opt,
                         _ratio, _tenant_entry, all_in_entry)
from ..money import fmt, quantize
from ..outputs import csv_cell, csv_text, csv_writer


def _provenance(report: Report) -> dict:
    info = report.run
    return {"period": period_label(info.start, info.end), "run_id": info.run_id, "currency": info.currency,
            "price_books": list(info.price_books), "idle_policy": info.idle_policy, "basis": info.basis,
            "regions": list(info.regions), "success_criteria": list(report.criteria)}


def _row_json(report: Report, r: Row) -> dict:
    if report.by == "model":
        return {"model": r.key, "cost": fmt(r.cost), "gpu_cost": fmt(r.gpu_cost),
                "provider_tokens_cost": fmt(r.by_category["provider_tokens"]), "active_tokens": r.active_tokens,
                "requests": r.requests, "cost_per_1m_active_tokens": _opt(r.cost_per_1m_active_tokens),
                "share_of_gpu": _ratio(report.share_of_gpu(r)), "reasons": dict(r.reasons)}
    entry = _tenant_entry(report, r)
    entry.pop("tenant")
    return {report.by: r.key, **entry}


def unit_economics_as_json(report: Report) -> dict:
    """The report as a JSON-ready dict; money as decimal strings, ratios as decimal strings. Beside
    the rows (whose `cost_per_successful_task` is the row's own cost ÷ its own successes) the top
    level carries the run-wide all-in figure with its numerator, denominator, both definitions and
    the reason when it is null (:func:`ledger.economics.all_in_entry`)."""
    doc = {"report": "unit-economics", "by": report.by, **_provenance(report),
           "tenants_filter": None if report.tenants is None else list(report.tenants),
           "rows": [_row_json(report, r) for r in report.rows],
           "run_total": fmt(report.total), **all_in_entry(report.total, report.successful_tasks)}
    if report.tenants is None:
        doc["unattributed"] = {k: fmt(v) for k, v in report.unattributed.items()}
    return doc


def _all_in_columns(report: Report) -> dict:
    """The run-wide all-in cost per successful task as CSV cells (empty when undefined, with why),
    with its numerator, denominator and both definitions."""
    doc = all_in_entry(report.total, report.successful_tasks)
    return {ALL_IN: doc[ALL_IN] or "", f"{ALL_IN}_numerator": doc[f"{ALL_IN}_numerator"],
            f"{ALL_IN}_denominator": doc[f"{ALL_IN}_denominator"],
            f"{ALL_IN}_undefined_because": doc["reasons"].get(ALL_IN, ""),
            f"{ALL_IN}_definition": ALL_IN_DEFINITION, "cost_per_successful_task_definition": OWN_DEFINITION}


def unit_economics_as_csv(report: Report) -> str:
    """One CSV row per report row; every row repeats the period, run, currency, price books and
    success criteria so that a row taken alone still says where it came from, and ends with the
    run-wide all-in cost per successful task (its numerator, denominator and both definitions)."""
    rows = [_row_json(report, r) for r in report.rows]
    tail = _all_in_columns(report)
    prov = _provenance(report)
    head = {"period_start": prov["period"]["start"], "period_end": prov["period"]["end"], "run_id": prov["run_id"],
            "currency": prov["currency"], "price_books": " ".join(prov["price_books"]),
            "regions": " ".join(prov["regions"]), "success_criteria": " ".join(prov["success_criteria"])}
    flat = []
    for r in rows:
        d = dict(head)
        for k, v in r.items():
            if k == "by_category":
                d.update({f"cost_{c}": x for c, x in v.items()})
            elif k == "tasks":
                d.update({f"tasks_{n}": x for n, x in (v or {}).items()})
            elif k == "reasons":
                d["undefined_because"] = "; ".join(f"{a}: {b}" for a, b in v.items())
            elif k == "success_criteria":
                d["row_success_criteria"] = " ".join(v)
            else:
                d[k] = "" if v is None else v
        d.update(tail)
        flat.append(d)
    fields = list(flat[0]) if flat else list(head) + [report.by] + list(tail)
    text = {*head, report.by, "undefined_because", "row_success_criteria", *_ALL_IN_TEXT}
    return csv_text(fields, flat, numeric=[f for f in fields if f not in text])


#: The all-in columns that are words, not numbers.
_ALL_IN_TEXT = (f"{ALL_IN}_undefined_because", f"{ALL_IN}_definition", "cost_per_successful_task_definition")


def _money(d: Decimal | None) -> str:
    """Money for a person: grouped, two to six decimals (formatting happens here, at the edge)."""
    return "—" if d is None else format_decimal(d, format="#,##0.00####", locale="en_US")


def _pct(d: Decimal | None) -> str:
    return "—" if d is None else format_decimal(d * 100, format="#,##0.0", locale="en_US") + "%"


def _title(report: Report, what: str) -> str:
    info = report.run
    p = period_label(info.start, info.end)
    return (f"{what} · {p['start']} to {p['end']} · run {info.run_id[:12]} · {info.currency} · "
            f"price books {', '.join(info.price_books) or 'none'} · regions {', '.join(info.regions) or 'none'}")


def _all_in_text(report: Report) -> str:
    """The all-in figure worked out, e.g. ``26.20 = run total 131.00 ÷ 5 successful tasks``."""
    v = report.cost_per_successful_task_all_in
    if v is None:
        return f"undefined ({NO_SUCCESS}; run total {_money(report.total)})"
    n = report.successful_tasks
    return f"{_money(v)} = run total {_money(report.total)} ÷ {n:,} successful task{'s' if n != 1 else ''}"


def _caption(report: Report) -> str:
    crit = ", ".join(report.criteria) or "none recorded"
    parts = [f"success criteria: {crit}", f"idle policy {report.run.idle_policy}", f"basis {report.run.basis}",
             f"run total {_money(report.total)}"]
    if report.tenants is None:
        parts.append("not on tenants: " + ", ".join(f"{k} {_money(v)}" for k, v in report.unattributed.items()))
    lines = [" · ".join(parts), f"all-in cost per successful task: {_all_in_text(report)}; all-in = "
             f"{ALL_IN_DEFINITION}"]
    if report.by != "model":
        lines.append(f"cost per success (own cost) = {OWN_DEFINITION}")
    return "\n".join(lines)


def _label(key: str | None, by: str) -> str:
    return key if key is not None else f"(no {by}: shared charges, shared idle)"


def unit_economics_as_table(report: Report) -> Table | Group:
    """A rich table of the report (money formatted here)."""
    t = Table(title=_title(report, f"unit economics by {report.by}"), caption=_caption(report))
    if report.by == "model":
        for col in ("model", "cost", "GPU", "provider tokens", "requests", "active tokens", "$/1M active tokens",
                    "share of GPU"):
            t.add_column(col, justify="left" if col == "model" else "right")
        for r in report.rows:
            t.add_row(_label(r.key, "model"), _money(r.cost), _money(r.gpu_cost),
                      _money(r.by_category["provider_tokens"]), f"{r.requests:,}", f"{r.active_tokens:,}",
                      _money(r.cost_per_1m_active_tokens), _pct(report.share_of_gpu(r)))
        return t
    # Headline columns first; the split by category is a second table, so each fits a terminal.
    cols = [report.by, "cost", "failed work", "idle share", "requests", "active tokens", "tasks ok/fail/unknown",
            "success rate", "cost per success (own cost)", "$/1M active tokens"]
    for col in cols:
        t.add_column(col, justify="left" if col == report.by else "right")
    for r in report.rows:
        tk = r.tasks or {"success": 0, "failure": 0, "unknown": 0}
        per_success = _money(r.cost_per_successful_task) if r.cost_per_successful_task is not None else "undefined"
        t.add_row(_label(r.key, report.by), _money(r.cost),
                  f"{_money(r.failed_work)} ({_pct(r.failed_work_share)})", _money(r.idle_share),
                  f"{r.requests:,}", f"{r.active_tokens:,}",
                  f"{tk['success']:,}/{tk['failure']:,}/{tk['unknown']:,}", _pct(r.success_rate), per_success,
                  _money(r.cost_per_1m_active_tokens))
    used = [c for c in CATEGORIES if any(r.by_category[c] for r in report.rows)]
    cats = Table(title=f"cost by category ({report.run.currency})")
    for col in [report.by, *used]:
        cats.add_column(col, justify="left" if col == report.by else "right")
    for r in report.rows:
        cats.add_row(_label(r.key, report.by), *(_money(r.by_category[c]) for c in used))
    return Group(t, cats)


TENANT_METRICS = ("cost", "share of GPU", "cost per successful task", "success rate", "task failure rate",
                  "failed work share", "$/1M active tokens", "idle share", "requests", "active tokens",
                  "tasks success", "tasks failure", "tasks unknown")


def _tenant_metrics(report: Report, r: Row) -> dict[str, str]:
    tk = r.tasks or {"success": 0, "failure": 0, "unknown": 0}
    decided = tk["success"] + tk["failure"]
    fail_rate = quantize(Decimal(tk["failure"]) / decided, RATIO_EXP) if decided else None
    return {"cost": fmt(r.cost), "share of GPU": _ratio(report.share_of_gpu(r)) or "",
            "cost per successful task": _opt(r.cost_per_successful_task) or f"undefined: {NO_SUCCESS}",
            "success rate": _ratio(r.success_rate) or "", "task failure rate": _ratio(fail_rate) or "",
            "failed work share": _ratio(r.failed_work_share) or "",
            "$/1M active tokens": _opt(r.cost_per_1m_active_tokens) or "", "idle share": fmt(r.idle_share),
            "requests": str(r.requests), "active tokens": str(r.active_tokens), "tasks success": str(tk["success"]),
            "tasks failure": str(tk["failure"]), "tasks unknown": str(tk["unknown"])}


def tenants_as_csv(report: Report) -> str:
    """Tenants side by side: one row per metric, one column per tenant, after provenance rows."""
    if report.by != "tenant":
        raise ValueError("the tenant comparison needs a report by tenant")
    buf = io.StringIO()
    w = csv_writer(buf)

    def row(name: str, values: list, numeric: bool) -> None:
        w.writerow([csv_cell(name), *(csv_cell(v, numeric=numeric) for v in values)])

    row("metric", [r.key for r in report.rows], False)
    metrics = [_tenant_metrics(report, r) for r in report.rows]
    for m in TENANT_METRICS:
        row(m, [x[m] for x in metrics], True)
    prov = _provenance(report)
    for k, v in (("period_start", prov["period"]["start"]), ("period_end", prov["period"]["end"]),
                 ("run_id", prov["run_id"]), ("currency", prov["currency"]),
                 ("price_books", " ".join(prov["price_books"])), ("regions", " ".join(prov["regions"])),
                 ("success_criteria", " ".join(prov["success_criteria"]))):
        row(k, [v] * len(report.rows), False)
    for k, v in _all_in_columns(report).items():
        row(k, [v] * len(report.rows), k not in _ALL_IN_TEXT)
    return buf.getvalue()


def tenants_as_table(report: Report) -> Table:
    """Tenants side by side (rich): one row per metric, one column per tenant."""
    if report.by != "tenant":
        raise ValueError("the tenant comparison needs a report by tenant")
    t = Table(title=_title(report, "tenants side by side"), caption=_caption(report))
    t.add_column("metric")
    for r in report.rows:
        t.add_column(r.key or "", justify="right")
    metrics = [_tenant_metrics(report, r) for r in report.rows]
    money_rows = {"cost", "cost per successful task", "$/1M active tokens", "idle share"}
    pct_rows = {"share of GPU", "success rate", "task failure rate", "failed work share"}
    for m in TENANT_METRICS:
        cells = []
        for x in metrics:
            v = x[m]
            if m in money_rows and v and not v.startswith("undefined"):
                v = _money(Decimal(v))
            elif m in pct_rows and v:
                v = _pct(Decimal(v))
            elif m in ("requests", "active tokens") or m.startswith("tasks"):
                v = f"{int(v):,}"
            cells.append(v or "—")
        t.add_row("cost per successful task (own cost)" if m == "cost per successful task" else m, *cells)
    return t


def runs_as_json(runs: Iterable) -> list[dict]:
    """`ledger runs --json`: one entry per run, newest first."""
    return [{"run_id": r.id, "period": period_label(r.period_start, r.period_end), "created_at": _iso(r.created_at),
             "currency": r.currency, "idle_policy": r.idle_policy, "basis": r.basis, "total": fmt(r.total),
             "price_books": json.loads(r.price_books), "code_version": r.code_version,
             "inputs_digest": r.inputs_digest} for r in runs]
