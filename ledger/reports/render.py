"""Renderers of unit-economics reports: ``*_as_json``, ``*_as_csv`` and ``*_as_table`` (rich).

Every report states its period, run, price book versions, currency and the success criteria of the
outcomes it counts. Money is formatted here, at the edge, never in the core. CSV is written by
:mod:`ledger.outputs`: every field quoted, names neutralized against formulas, numbers kept numbers.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from decimal import Decimal, localcontext

from rich.console import Group

from ..allocate import CATEGORIES
from ..economics import (ALL_IN, ALL_IN_DEFINITION, NO_SUCCESS, OWN_DEFINITION, RATIO_EXP, Report, Row, all_in_entry,
                         opt, ratio, tenant_entry)
from ..drilldown import row_label
from .budgets import OF_BUDGET, budget_columns, budget_entry
from ..formats import count, display_column, display_table, money, percent, plural, unit_costs
from ..instants import period_label
from ..money import fmt, quantize
from ..outputs import csv_cell, csv_text, csv_writer
from .listing import runs_as_json, runs_as_table  # noqa: F401  (`ledger runs`: said there, without the reports)
from ..tables import FitTable, paragraph


def _provenance(report: Report) -> dict:
    info = report.run
    return {"period": period_label(info.start, info.end), "run_id": info.run_id, "currency": info.currency,
            "price_books": list(info.price_books), "idle_policy": info.idle_policy, "basis": info.basis,
            "regions": list(info.regions), "success_criteria": list(report.criteria),
            "close": None if info.closing is None else info.closing.as_json()}


def close_text(report: Report) -> str | None:
    """The close of the report's period as every header says it ("closed by NAME at T, final run
    R" or "open"), None for a run not read from the store."""
    return None if report.run.closing is None else report.run.closing.text


def _row_json(report: Report, r: Row) -> dict:
    if report.by == "model":
        return {"model": r.key, "cost": fmt(r.cost), "gpu_cost": fmt(r.gpu_cost),
                "provider_tokens_cost": fmt(r.by_category["provider_tokens"]), "active_tokens": r.active_tokens,
                "requests": r.requests, "cost_per_1m_active_tokens": opt(r.cost_per_1m_active_tokens),
                "share_of_gpu": ratio(report.share_of_gpu(r)), "reasons": dict(r.reasons), **budget_entry(report, r)}
    entry = tenant_entry(report, r)
    entry.pop("tenant")
    return {report.by: r.key, **entry, **budget_entry(report, r)}


def unit_economics_as_json(report: Report) -> dict:
    """The report as a JSON-ready dict; money as decimal strings, ratios as decimal strings. Beside
    the rows (whose `cost_per_successful_task` is the row's own cost ÷ its own successes) the top
    level carries the run-wide all-in figure with its numerator, denominator, both definitions and
    the reason when it is null (:func:`ledger.economics.all_in_entry`)."""
    doc = {"report": "unit-economics", "by": report.by, **({"view": report.view} if report.view else {}),
           **_provenance(report),
           "tenants_filter": None if report.tenants is None else list(report.tenants),
           "rows": [_row_json(report, r) for r in report.rows],
           "run_total": fmt(report.total), **all_in_entry(report.total, report.successful_tasks),
           **({} if report.budgets is None else {"budget_books": list(report.budget_books)})}
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
            "regions": " ".join(prov["regions"]), "success_criteria": " ".join(prov["success_criteria"]),
            "period_close": close_text(report) or "", **({"view": report.view} if report.view else {})}
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


def _unit(v: Decimal | None) -> str:
    """One unit cost alone (the all-in figure): its column rule applied to itself."""
    return unit_costs([v])[0]


def _title(report: Report, what: str) -> str:
    info = report.run
    p = period_label(info.start, info.end)
    close = close_text(report)
    return (f"{what} · {p['start']} to {p['end']} · run {info.run_id[:12]} · {info.currency} · "
            f"price books {', '.join(info.price_books) or 'none'} · regions {', '.join(info.regions) or 'none'}"
            + ("" if close is None else f" · {close}"))


def _all_in_text(report: Report) -> str:
    """The all-in figure worked out, e.g. ``26.20 = run total 131.00 ÷ 5 successful tasks``."""
    v = report.cost_per_successful_task_all_in
    if v is None:
        return f"undefined ({NO_SUCCESS}; run total {money(report.total)})"
    n = report.successful_tasks
    return f"{_unit(v)} = run total {money(report.total)} ÷ {count(n)} successful task{'s' if n != 1 else ''}"


def _caption(report: Report) -> str:
    crit = ", ".join(report.criteria) or "none recorded"
    shown = _shown(report)
    parts = [f"success criteria: {crit}", f"idle policy {report.run.idle_policy}", f"basis {report.run.basis}",
             f"run total {money(shown.run_total)}"]
    if report.tenants is None:  # with the rows' total row, adding up to the run total as printed
        parts.append("not on tenants: " + ", ".join(f"{k} {money(v)}" for k, v in shown.unattributed.items()))
    lines = [" · ".join(parts), f"all-in cost per successful task: {_all_in_text(report)}; all-in = "
             f"{ALL_IN_DEFINITION}"]
    if report.by != "model":
        lines.append(f"cost per success (own cost) = {OWN_DEFINITION}")
    return "\n".join(lines)


def _label(key: str | None, by: str) -> str:
    return row_label(by, key)


#: The header of the money a tenant (or product) carries of the shared idle (JSON: ``idle_share``):
#: money under the idle policy ``share``, nothing under ``separate``.
SHARED_IDLE = "shared idle"


@dataclass(frozen=True)
class _Shown:
    """The money of a report as printed (display rounding, docs/exports.md): each row's cost and the
    rows' total, the rows' costs by category (every row adding up to its printed cost, every
    category column to its printed total), and, without a tenant filter, the lines on no tenant,
    adding up with the rows' total to the printed run total."""

    costs: list[Decimal]
    total: Decimal
    used: list[str]
    categories: list[list[Decimal]]
    category_totals: list[Decimal]
    unattributed: dict[str, Decimal]
    run_total: Decimal


def _shown(report: Report) -> _Shown:
    rows = report.rows
    exact = sum((r.cost for r in rows), Decimal(0))
    if report.tenants is None:
        parts, run_total = display_column([exact, *report.unattributed.values()])
        total, unattributed = parts[0], dict(zip(report.unattributed, parts[1:]))
    else:
        total, unattributed, run_total = display_column([exact])[1], {}, display_column([report.total])[1]
    used = [c for c in CATEGORIES if any(r.by_category[c] for r in rows)]
    if rows and used:
        cells, costs, col_totals, _ = display_table([[r.by_category[c] for c in used] for r in rows], total=total)
    else:
        cells, col_totals = [[] for _ in rows], [Decimal("0.00") for _ in used]
        costs = display_column([r.cost for r in rows], total=total)[0]
    return _Shown(costs=costs, total=total, used=used, categories=cells, category_totals=col_totals,
                  unattributed=unattributed, run_total=run_total)


def _quotient(a: Decimal, b: int, scale: int = 1) -> Decimal | None:
    """``a × scale ÷ b`` to 1e-6 (a totals row's unit cost), None when `b` is 0."""
    if not b:
        return None
    with localcontext() as ctx:
        ctx.prec = 60
        return quantize(a * scale / b)


def _tasks(r: Row) -> dict[str, int]:
    return r.tasks or {"success": 0, "failure": 0, "unknown": 0}


@dataclass(frozen=True)
class _Totals:
    """A report's totals row (the rows' sums; its ratios those of the sums) beside its rows."""

    failed: list[Decimal]
    failed_total: Decimal
    idle: list[Decimal]
    idle_total: Decimal
    gpu_share: list[Decimal | None]
    gpu_share_total: Decimal | None
    per_task: list[str]
    per_1m: list[str]
    tasks: dict[str, int]
    requests: int
    active_tokens: int
    failed_share: Decimal | None
    success_rate: Decimal | None


def _totals(report: Report, shown: _Shown) -> _Totals:
    """The columns beside the cost, display-rounded so that each adds up to its totals row; the
    unit costs of the totals row (the rows' cost over their successes, over their tokens) take the
    column's one rule with the rows'."""
    rows = report.rows
    failed, failed_total = display_column([r.failed_work for r in rows])
    idle, idle_total = display_column([r.idle_share for r in rows])
    if report.gpu_total:  # shares of all GPU cost, at 1 decimal of a percentage, adding up as printed
        gpu_share, gpu_share_total = display_column([r.gpu_cost / report.gpu_total for r in rows], 3)
    else:
        gpu_share, gpu_share_total = [None] * len(rows), None
    tasks = {k: sum(_tasks(r)[k] for r in rows) for k in ("success", "failure", "unknown")}
    cost = sum((r.cost for r in rows), Decimal(0))
    tokens = sum(r.active_tokens for r in rows)
    per_task = unit_costs([*(r.cost_per_successful_task for r in rows), _quotient(cost, tasks["success"])])
    per_1m = unit_costs([*(r.cost_per_1m_active_tokens for r in rows), _quotient(cost, tokens, 1_000_000)])
    decided = tasks["success"] + tasks["failure"]
    return _Totals(failed=failed, failed_total=failed_total, idle=idle, idle_total=idle_total, gpu_share=gpu_share,
                   gpu_share_total=gpu_share_total, per_task=per_task, per_1m=per_1m, tasks=tasks,
                   requests=sum(r.requests for r in rows), active_tokens=tokens,
                   failed_share=quantize(sum((r.failed_work for r in rows), Decimal(0)) / cost, RATIO_EXP)
                   if cost else None,
                   success_rate=quantize(Decimal(tasks["success"]) / decided, RATIO_EXP) if decided else None)


#: The label of a table's totals row.
TOTAL = "total"


def unit_economics_as_table(report: Report) -> Group:
    """The report for a person (money formatted here, by :mod:`ledger.formats`): the cost columns,
    the volume columns and the cost by category, each a table that fits the terminal, each with a
    totals row. Money is display-rounded (docs/exports.md, "Display rounding"): every printed money
    column adds up to its printed total, each row's categories to its printed cost, and the rows'
    total with the lines on no tenant (the caption) to the printed run total."""
    rows, by, cur = report.rows, report.by, report.run.currency
    shown = _shown(report)
    tot = _totals(report, shown)
    *per_m, per_m_total = tot.per_1m
    heads, bud, bud_total = budget_columns(report)
    if by == "model":
        gpu, gpu_total = display_column([r.gpu_cost for r in rows])
        tokens, tokens_total = display_column([r.by_category["provider_tokens"] for r in rows])
        t = FitTable(title=_title(report, "unit economics by model"), caption=_caption(report))
        t.add_column("model", numeric=False)
        for col in ("cost", "GPU", "provider tokens", "requests", "active tokens", f"{cur}/1M active tokens",
                    "share of GPU", *heads):
            t.add_column(col)
        for r, c, g, pt, pm, sg, b in zip(rows, shown.costs, gpu, tokens, per_m, tot.gpu_share, bud):
            t.add_row(_label(r.key, by), money(c), money(g), money(pt), count(r.requests), count(r.active_tokens), pm,
                      percent(sg), *b)
        t.add_row(TOTAL, money(shown.total), money(gpu_total), money(tokens_total), count(tot.requests),
                  count(tot.active_tokens), per_m_total, percent(tot.gpu_share_total), *bud_total, style="bold")
        return Group(t)
    *per_task, per_task_total = tot.per_task
    t = FitTable(title=_title(report, f"unit economics by {by}" + (f" ({report.view})" if report.view else "")))
    t.add_column(by, numeric=False)
    for col in ("cost", "failed work", "failed share", SHARED_IDLE, "cost per success (own cost)",
                f"{cur}/1M active tokens", *heads):
        t.add_column(col)
    for r, c, fw, idle, ps, pm, b in zip(rows, shown.costs, tot.failed, tot.idle, per_task, per_m, bud):
        t.add_row(_label(r.key, by), money(c), money(fw), percent(r.failed_work_share),
                  money(idle), "undefined" if r.cost_per_successful_task is None else ps, pm, *b)
    t.add_row(TOTAL, money(shown.total), money(tot.failed_total), percent(tot.failed_share), money(tot.idle_total),
              "undefined" if not tot.tasks["success"] else per_task_total, per_m_total, *bud_total, style="bold")
    volume = FitTable(title=f"requests, tokens and tasks by {by}", caption=_caption(report))
    volume.add_column(by, numeric=False)
    for col in ("requests", "active tokens", "tasks success", "tasks failure", "tasks unknown", "success rate"):
        volume.add_column(col)
    for r in rows:
        tk = _tasks(r)
        volume.add_row(_label(r.key, by), count(r.requests), count(r.active_tokens), count(tk["success"]),
                       count(tk["failure"]), count(tk["unknown"]), percent(r.success_rate))
    volume.add_row(TOTAL, count(tot.requests), count(tot.active_tokens), count(tot.tasks["success"]),
                   count(tot.tasks["failure"]), count(tot.tasks["unknown"]), percent(tot.success_rate), style="bold")
    cats = FitTable(title=f"cost by category ({cur}; each row adds up to its cost)")
    for col in [by, *shown.used, "cost"]:
        cats.add_column(col, numeric=col != by)
    for r, cells, c in zip(rows, shown.categories, shown.costs):
        cats.add_row(_label(r.key, by), *(money(v) for v in cells), money(c))
    cats.add_row(TOTAL, *(money(v) for v in shown.category_totals), money(shown.total), style="bold")
    return Group(t, volume, cats)


TENANT_METRICS = ("cost", "share of GPU", "cost per successful task", "success rate", "task failure rate",
                  "failed work share", "$/1M active tokens", "idle share", "requests", "active tokens",
                  "tasks success", "tasks failure", "tasks unknown")


def _tenant_metrics(report: Report, r: Row) -> dict[str, str]:
    tk = r.tasks or {"success": 0, "failure": 0, "unknown": 0}
    decided = tk["success"] + tk["failure"]
    fail_rate = quantize(Decimal(tk["failure"]) / decided, RATIO_EXP) if decided else None
    return {"cost": fmt(r.cost), "share of GPU": ratio(report.share_of_gpu(r)) or "",
            "cost per successful task": opt(r.cost_per_successful_task) or f"undefined: {NO_SUCCESS}",
            "success rate": ratio(r.success_rate) or "", "task failure rate": ratio(fail_rate) or "",
            "failed work share": ratio(r.failed_work_share) or "",
            "$/1M active tokens": opt(r.cost_per_1m_active_tokens) or "", "idle share": fmt(r.idle_share),
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
    if report.budgets is not None:  # the budget in force for the month (ledger.reports.budgets)
        for m, key in (("budget", "budget"), (OF_BUDGET, "of_budget")):
            row(m, [budget_entry(report, r)[key] or "" for r in report.rows], True)
    prov = _provenance(report)
    for k, v in (("period_start", prov["period"]["start"]), ("period_end", prov["period"]["end"]),
                 ("run_id", prov["run_id"]), ("currency", prov["currency"]),
                 ("price_books", " ".join(prov["price_books"])), ("regions", " ".join(prov["regions"])),
                 ("success_criteria", " ".join(prov["success_criteria"])), ("period_close", close_text(report) or "")):
        row(k, [v] * len(report.rows), False)
    for k, v in _all_in_columns(report).items():
        row(k, [v] * len(report.rows), k not in _ALL_IN_TEXT)
    return buf.getvalue()


def tenants_as_table(report: Report) -> FitTable:
    """Tenants side by side (rich): one row per metric, one column per tenant and a totals column
    (the tenants' sums; its ratios those of the sums); each row one format (money, a unit cost by
    the row's one rule, a percentage or a count). Money and shares are display-rounded: each printed
    row adds up to its printed total, the costs as in the unit-economics report."""
    if report.by != "tenant":
        raise ValueError("the tenant comparison needs a report by tenant")
    rows = report.rows
    t = FitTable(title=_title(report, "tenants side by side"), caption=_caption(report))
    t.add_column("metric", numeric=False)
    for r in rows:
        t.add_column(r.key or "")
    tasks = [r.tasks or {"success": 0, "failure": 0, "unknown": 0} for r in rows]

    def fail_rate(tk: dict) -> Decimal | None:
        decided = tk["success"] + tk["failure"]
        return quantize(Decimal(tk["failure"]) / decided, RATIO_EXP) if decided else None

    shown = _shown(report)
    tot = _totals(report, shown)
    t.add_column(TOTAL)
    per_task = tot.per_task
    undefined = [*(r.cost_per_successful_task is None for r in rows), not tot.tasks["success"]]
    cells = {"cost": [money(c) for c in [*shown.costs, shown.total]],
             "share of GPU": [percent(v) for v in [*tot.gpu_share, tot.gpu_share_total]],
             "cost per successful task (own cost)": ["undefined" if u else v for u, v in zip(undefined, per_task)],
             "success rate": [percent(v) for v in [*(r.success_rate for r in rows), tot.success_rate]],
             "task failure rate": [percent(fail_rate(tk)) for tk in [*tasks, tot.tasks]],
             "failed work share": [percent(v) for v in [*(r.failed_work_share for r in rows), tot.failed_share]],
             f"{report.run.currency}/1M active tokens": tot.per_1m,
             SHARED_IDLE: [money(v) for v in [*tot.idle, tot.idle_total]],
             "requests": [count(n) for n in [*(r.requests for r in rows), tot.requests]],
             "active tokens": [count(n) for n in [*(r.active_tokens for r in rows), tot.active_tokens]],
             **{f"tasks {k}": [count(tk[k]) for tk in [*tasks, tot.tasks]] for k in ("success", "failure", "unknown")}}
    heads, bud, bud_total = budget_columns(report)
    cells.update({h: [*(b[i] for b in bud), bud_total[i]] for i, h in enumerate(heads)})
    for metric, values in cells.items():
        t.add_row(metric, *values)
    return t


def summary_as_table(doc: dict) -> Group:
    """The run summary `ledger allocate` prints (from its ``--json`` document, :func:`ledger.economics.summary`)
    for a person: the run, its total and the all-in cost per successful task, where the money went by
    kind and by category (two tables with totals rows, money grouped at 2 decimals, each with its
    share of the total, display-rounded so that the printed amounts and shares add up), the true-up,
    flags and notes. Prose wraps at the terminal's width; nothing in it is read as markup."""
    p, cur = doc["period"], doc["currency"]
    total = Decimal(doc["total"])
    parts: list = [paragraph(f"run {doc['run_id']} · {p['start']} to {p['end']} · {cur} · idle {doc['idle_policy']} · "
                             f"basis {doc['basis']} · price books {', '.join(doc['price_books'])}"),
                   paragraph(f"total {money(total, cur)} = lines {money(Decimal(doc['lines_total']))} "
                             f"({plural(doc['lines'], 'line')}) · failed work {money(Decimal(doc['failed_work']))}")]
    key = "cost_per_successful_task_all_in"
    if doc[key] is not None:
        parts.append(paragraph(f"all-in cost per successful task {_unit(Decimal(doc[key]))} = total "
                               f"{money(Decimal(doc[key + '_numerator']))} ÷ "
                               f"{plural(doc[key + '_denominator'], 'successful task')} ({doc['definitions'][key]})"))
    else:
        parts.append(paragraph(f"all-in cost per successful task: undefined ({doc['reasons'][key]})"))
    # by kind and by category, each with a totals row and display-rounded: the printed amounts (and
    # their shares) add up to the printed total (docs/exports.md, "Display rounding")
    for title, head, items in ((f"where the money went ({cur})", "kind", list(doc["by_kind"].items())),
                               (f"by category ({cur})", "category",
                                [(k, v) for k, v in doc["by_category"].items() if Decimal(v) != 0])):
        amounts, shown_total = display_column([Decimal(v) for _, v in items])
        shares, _ = display_column([Decimal(v) / total for _, v in items] if total else [None] * len(items), 3)
        t = FitTable(title=title)
        t.add_column(head, numeric=False)
        t.add_column("amount")
        t.add_column("of total")
        for (k, _), a, sh in zip(items, amounts, shares):
            t.add_row(k, money(a), percent(sh))
        t.add_row(TOTAL, money(shown_total), percent(Decimal(1) if total else None), style="bold")
        parts.append(t)
    tu = doc.get("true_up")
    if tu:
        not_billed = (f" · not billed {money(Decimal(tu['not_billed']))} (run total "
                      f"{money(Decimal(tu['run_total']))})" if "not_billed" in tu else "")  # runs before 2026-12
        parts.append(paragraph(f"true-up: priced {money(Decimal(tu['priced_total']))} · billed "
                               f"{money(Decimal(tu['billed_total']))} · variance {money(Decimal(tu['variance_total']))}"
                               f" (unmatched {money(Decimal(tu['unmatched']))}){not_billed} · bill batches "
                               f"{', '.join(tu['bill_batches'])} · map {tu['bill_map']['path']}"))
    flags: dict = {}
    for f in doc["flags"]:
        flags[(f["kind"], f["pool"])] = flags.get((f["kind"], f["pool"]), 0) + 1
    parts += [paragraph(f"flag {kind}: pool {pool}, {plural(n, 'hour')}") for (kind, pool), n in sorted(flags.items())]
    parts += [paragraph(f"note: {n}") for n in doc["notes"]]
    return Group(*parts)
