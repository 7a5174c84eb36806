"""A scenario's result as JSON, CSV and terminal tables; every one says SCENARIO."""
from __future__ import annotations

from decimal import Decimal

from .. import formats
from ..economics import all_in, opt, ratio
from ..instants import iso
from ..money import fmt
from ..tables import FitTable
from .records import KIND, SCENARIO, CompareRow, Reroute, ScenarioResult, SelfHost

_PLURAL = {"tenant": "tenants", "product": "products", "model": "models"}
#: The CSV's columns, in order.
CSV_COLUMNS = ["kind", "scenario", "period", "by", "key", "actual_cost", "scenario_cost", "difference",
               "difference_share", "successful_tasks", "actual_cost_per_successful_task",
               "scenario_cost_per_successful_task", "currency"]
_NUMERIC = {"actual_cost", "scenario_cost", "difference", "difference_share", "actual_cost_per_successful_task",
            "scenario_cost_per_successful_task"}


def _share(diff: Decimal, base: Decimal) -> Decimal | None:
    from ..economics import RATIO_EXP
    from ..money import quantize

    return quantize(diff / base, RATIO_EXP) if base else None


def row_entry(r: CompareRow) -> dict:
    return {r.by: r.key, "actual_cost": fmt(r.actual_cost), "scenario_cost": fmt(r.scenario_cost),
            "difference": fmt(r.difference), "difference_share": ratio(r.difference_share),
            "successful_tasks": r.successful_tasks,
            "actual_cost_per_successful_task": opt(r.actual_cost_per_successful_task),
            "scenario_cost_per_successful_task": opt(r.scenario_cost_per_successful_task)}


def change_entry(c, moved: int) -> dict:
    out = {"label": c.label, "kind": "reroute" if isinstance(c, Reroute) else "self_host",
           "where": c.where.as_dict(), "share": format(c.share, "f"), "input_ratio": format(c.input_ratio, "f"),
           "output_ratio": format(c.output_ratio, "f"), "tokens": c.tokens_text(), "requests_moved": moved}
    if isinstance(c, Reroute):
        out["to"] = {k: v for k, v in (("model", c.model), ("provider", c.provider)) if v is not None}
    elif isinstance(c, SelfHost):
        out["to"] = {"pool": c.pool, **({"model": c.model} if c.model else {})}
    return out


def sized_entry(z) -> dict:
    return {"label": z.label, "pool": z.pool, "device": z.device, "region": z.region,
            "purchase_option": z.purchase_option, "gpus_per_replica": z.gpus_per_replica, "curve": z.curve,
            "sla_tok_s_user": z.sla, "percentile": z.percentile, "util": z.util, "tpm": round(z.tpm, 3),
            "isl": round(z.isl, 3), "osl": round(z.osl, 3), "requests": z.requests,
            "replicas_serving": z.replicas_serving, "replicas_reserve": z.replicas_reserve, "gpus": z.gpus,
            "hours": format(z.hours, "f"), "capacity_tokens_per_gpu_s": format(z.capacity_tokens_per_gpu_s, "f"),
            "status": z.status}


def whatif_as_json(res: ScenarioResult) -> dict:
    """The ``ledger whatif --json`` document (money as decimal strings; stored with the result)."""
    sc = res.scenario
    rows = {by: [row_entry(r) for r in res.rows if r.by == by] for by in _PLURAL}
    successes = sum(t.success for t in res.actual.tasks)
    return {
        "kind": KIND, "label": SCENARIO, "id": res.id, "name": sc.name, "description": sc.description,
        "period": res.period, "currency": res.currency, "actual_run_id": res.run_id,
        "actual_total": fmt(res.actual_total), "scenario_total": fmt(res.scenario_total),
        "difference": fmt(res.difference), "difference_share": ratio(_share(res.difference, res.actual_total)),
        "actual_cost_per_successful_task_all_in": opt(all_in(res.actual_total, successes)),
        "scenario_cost_per_successful_task_all_in": opt(all_in(res.scenario_total, successes)),
        "successful_tasks": successes, "status": res.status, "same_inputs": res.same_inputs,
        "assumptions": {
            "books": {"actual": list(res.actual_books), "scenario": list(res.scenario_books)},
            "prices_as_of": iso(sc.prices_as_of) if sc.prices_as_of else None,
            "policy": {"idle_policy": res.allocation.policy.idle, "basis": res.allocation.policy.basis},
            "changes": [change_entry(c, res.moved.get(c.label, 0)) for c in sc.changes],
            "self_hosted": [sized_entry(z) for z in res.sized]},
        **{_PLURAL[by]: v for by, v in rows.items()},
        "by_kind": {k: {"actual": fmt(a), "scenario": fmt(b)} for k, (a, b) in res.by_kind.items()},
        "by_category": {k: {"actual": fmt(a), "scenario": fmt(b)} for k, (a, b) in res.by_category.items()},
        "lines": len(res.allocation.lines), "scenario_digest": sc.digest, "notes": list(res.notes),
        "created_at": iso(res.created_at) if res.created_at else None,
    }


def whatif_rows(res: ScenarioResult) -> list[dict]:
    """One CSV row per tenant, product and model, then the total (by ``total``)."""
    base = {"kind": KIND, "scenario": res.scenario.name, "period": res.period, "currency": res.currency}
    out = []
    for r in res.rows:
        e = row_entry(r)
        e["key"] = e.pop(r.by)
        out.append({**base, "by": r.by, **e})
    out.append({**base, "by": "total", "key": "", "actual_cost": fmt(res.actual_total),
                "scenario_cost": fmt(res.scenario_total), "difference": fmt(res.difference),
                "difference_share": ratio(_share(res.difference, res.actual_total)), "successful_tasks": None,
                "actual_cost_per_successful_task": None, "scenario_cost_per_successful_task": None})
    return out


def whatif_as_csv(res: ScenarioResult) -> str:
    from ..outputs import csv_text

    return csv_text(CSV_COLUMNS, whatif_rows(res), numeric=_NUMERIC)


def whatif_as_table(res: ScenarioResult) -> list[FitTable]:
    """A head table (totals and assumptions) and one comparison table per tenant, product and model."""
    cur = res.currency
    head = FitTable(title=f"{SCENARIO} · {res.scenario.name} · {res.period} · beside run {res.run_id[:12]} "
                          f"({cur})", title_justify="left", show_header=False)
    head.add_column("", numeric=False)
    head.add_column("", numeric=False)
    head.add_row("actual (the run)", formats.money(res.actual_total, cur))
    head.add_row(f"{SCENARIO}", formats.money(res.scenario_total, cur))
    head.add_row("difference", f"{formats.money(res.difference, cur, signed=True)} "
                               f"({formats.percent(_share(res.difference, res.actual_total), signed=True)})")
    head.add_row("books", ", ".join(res.scenario_books))
    if res.scenario.prices_as_of:
        head.add_row("prices as of", iso(res.scenario.prices_as_of))
    for c in res.scenario.changes:
        to = change_entry(c, 0)["to"]
        head.add_row(c.label, f"{c.where.text()} -> {', '.join(f'{k} {v}' for k, v in to.items())}; share "
                              f"{c.share}; {c.tokens_text()}; {formats.plural(res.moved.get(c.label, 0), 'request')}")
    for z in res.sized:
        head.add_row(f"pool {z.pool}", f"{z.status}: {z.replicas_serving} serving + {z.replicas_reserve} reserve "
                                       f"replica(s) x {z.gpus_per_replica} {z.device} ({z.region}, "
                                       f"{z.purchase_option}) x {z.hours} h; SLA {z.sla:g} tok/s/user at TPM "
                                       f"{z.percentile} {z.tpm:,.0f}, util {z.util:g}; curve {z.curve}")
    tables = [head]
    for by in _PLURAL:
        rows = [r for r in res.rows if r.by == by]
        t = FitTable(title=f"{SCENARIO} vs actual · by {by}", title_justify="left")
        t.add_column(by, numeric=False)
        for h in ("actual", SCENARIO.lower(), "difference", "share", "actual / success", "scenario / success"):
            t.add_column(h)
        a_cpst = formats.unit_costs([r.actual_cost_per_successful_task for r in rows])
        b_cpst = formats.unit_costs([r.scenario_cost_per_successful_task for r in rows])
        for r, a, b in zip(rows, a_cpst, b_cpst):
            t.add_row(r.key or "(none)", formats.money(r.actual_cost), formats.money(r.scenario_cost),
                      formats.money(r.difference, signed=True), formats.percent(r.difference_share, signed=True),
                      a, b)
        tables.append(t)
    kinds = FitTable(title=f"{SCENARIO} vs actual · by line kind (idle and unallocated on their own lines)",
                     title_justify="left")
    kinds.add_column("kind", numeric=False)
    for h in ("actual", SCENARIO.lower(), "difference"):
        kinds.add_column(h)
    for k, (a, b) in res.by_kind.items():
        kinds.add_row(k, formats.money(a), formats.money(b), formats.money(b - a, signed=True))
    tables.append(kinds)
    if res.notes:
        notes = FitTable(title="notes", title_justify="left", show_header=False)
        notes.add_column("", numeric=False)
        for n in res.notes:
            notes.add_row(n)
        tables.append(notes)
    return tables
