"""The month-end statement (issue 28 item 9): one page finance signs, computed from a stored run.

The total; where it went by category; idle (slack and reserve), unallocated shared charges and a
true-up's variance on no tenant; failed work; each tenant's cost, successful tasks and cost per
successful task (own cost), beside the run-wide all-in figure; the run, its price books and inputs
digest; the reconciliation with the bill; and the period's close (who signed it). Exact decimals
here; `statement_as_json` and `statement_as_csv` keep them, the PDF (:mod:`ledger.export.statement`)
and the table round them for display so that each column adds to its printed total.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path

from ..allocate import CATEGORIES, VARIANCE
from ..economics import ALL_IN_DEFINITION, NO_SUCCESS, OWN_DEFINITION, Report, opt
from ..formats import money, percent
from ..hints import say_one
from ..instants import iso, period_label
from ..money import ZERO, fmt
from ..outputs import csv_text
from ..reconcile import ReconcileError, map_for, reconcile_run
from ..store import Closing

#: The kinds of line on no tenant, in the order the statement lists them.
OFF_TENANT = ("idle_slack", "idle_reserve", "unallocated", str(VARIANCE))


@dataclass(frozen=True)
class TenantFigures:
    """One tenant on the statement: `tenant`; `cost` (its own cost, exact, run currency);
    `successful_tasks` (count); `cost_per_successful_task` (own cost ÷ its successes, 1e-6; None
    when it has none, with `undefined_because`)."""

    tenant: str
    cost: Decimal
    successful_tasks: int
    cost_per_successful_task: Decimal | None
    undefined_because: str | None


@dataclass(frozen=True)
class Reconciled:
    """The reconciliation of the run with the cloud bill, as the statement says it: `status`
    (``trued-up``: the run is a true-up; ``reconciled``: a bill was set beside it; ``not
    reconciled``: no bill map or no bill, with `reason`); `priced`, `billed` and `variance` (exact,
    run currency; None when not reconciled); `text` (one line for people)."""

    status: str
    text: str
    priced: Decimal | None = None
    billed: Decimal | None = None
    variance: Decimal | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Statement:
    """The statement of one run: `run_id`, `kind` (allocation or true-up), `start`, `end` (UTC,
    end exclusive), `currency`, `created_at`, `price_books` (``name@version``), `inputs_digest`,
    `code_version`, `idle_policy`, `basis`; `total` (the run total, exact); `by_category` (each of
    the ten categories, exact, summing to `total`); `tenants_cost` (Σ of the tenants' own costs) and
    `off_tenant` (each kind of line on no tenant, :data:`OFF_TENANT`), summing to `total`;
    `failed_work` (cost of failed work, all lines); `tenants`; `successful_tasks` (the run's) and
    `all_in` (total ÷ successful tasks, None when none); `reconciliation`; `closing` (the period's
    close, None for a period that is not a calendar month)."""

    run_id: str
    kind: str
    start: datetime
    end: datetime
    currency: str
    created_at: datetime | None
    price_books: tuple[str, ...]
    inputs_digest: str
    code_version: str
    idle_policy: str
    basis: str
    total: Decimal
    by_category: dict[str, Decimal]
    tenants_cost: Decimal
    off_tenant: dict[str, Decimal]
    failed_work: Decimal
    tenants: tuple[TenantFigures, ...]
    successful_tasks: int
    all_in: Decimal | None
    reconciliation: Reconciled
    closing: Closing | None

    @property
    def close_text(self) -> str:
        return "not a calendar month: no close" if self.closing is None else self.closing.text


def reconciled(s, stored, *, home: Path, map_path: str | Path | None = None) -> Reconciled:
    """How the stored run (:class:`ledger.runs.StoredRun`) stands with the cloud bill: a true-up
    run's own record, else ``ledger reconcile`` over the bill map at `map_path` (default the ledger
    home's), else "not reconciled" with the reason (no map, no bill in the period, a map that does
    not load): the statement says it rather than fail or print a zero."""
    cur = stored.run.currency
    tu = stored.summary.get("true_up")
    if tu:
        priced, billed, var = (Decimal(tu[k]) for k in ("priced_total", "billed_total", "variance_total"))
        return Reconciled(status="trued-up", priced=priced, billed=billed, variance=var,
                          text=f"trued up to the bill: priced {money(priced, cur)}, billed {money(billed, cur)}, "
                               f"variance {money(var, cur, signed=True)} booked as variance lines")
    run = stored.run
    try:
        bill_map = map_for(map_path, home)
        rec = reconcile_run(s, run_id=run.id, lines=stored.lines, currency=cur, start=run.period_start,
                            end=run.period_end, bill_map=bill_map, created_at=run.created_at, home=home)
    except ReconcileError as e:
        reason = "; ".join(say_one(line, {"bill_map": "name one"}) for line in e.lines())
        return Reconciled(status="not reconciled", reason=reason, text=f"not reconciled with a bill: {reason}")
    share = rec.variance_share
    text = (f"reconciled with the bill: priced {money(rec.priced_billed, cur)}, billed {money(rec.billed_total, cur)}, "
            f"variance {money(rec.variance, cur, signed=True)}" + ("" if share is None else f" ({percent(share)})"))
    if rec.not_billed:
        text += f"; not on the bill {money(rec.not_billed, cur)}"
    if rec.warnings:
        text += f"; {len(rec.warnings)} warning{'s' * (len(rec.warnings) != 1)} (see ledger reconcile)"
    return Reconciled(status="reconciled", priced=rec.priced_billed, billed=rec.billed_total, variance=rec.variance,
                      text=text)


def statement_of(report: Report, lines, *, true_up: bool, reconciliation: Reconciled) -> Statement:
    """The statement of a run from its unit economics by tenant (`report`, unfiltered) and its
    `lines`. Checks that the parts add up (categories, tenants and off-tenant kinds each sum to the
    total, with ``==``): a ValueError otherwise, never a statement that does not add up."""
    if report.by != "tenant" or report.tenants is not None:
        raise ValueError("a statement is made from the unfiltered report by tenant")
    by_category = {c: ZERO for c in CATEGORIES}
    failed = ZERO
    for ln in lines:
        by_category[ln.category] += ln.amount
        if ln.work == "failed":
            failed += ln.amount
    off = {k: report.unattributed.get(k, ZERO) for k in OFF_TENANT if k != VARIANCE or k in report.unattributed}
    tenants = tuple(TenantFigures(tenant=r.key, cost=r.cost, successful_tasks=(r.tasks or {}).get("success", 0),
                                  cost_per_successful_task=r.cost_per_successful_task,
                                  undefined_because=r.reasons.get("cost_per_successful_task"))
                    for r in report.rows)
    tenants_cost = sum((t.cost for t in tenants), ZERO)
    total = report.total
    for what, parts in (("categories", by_category.values()), ("tenants and lines on no tenant",
                                                                [tenants_cost, *off.values()])):
        if sum(parts, ZERO) != total:
            raise ValueError(f"the statement's {what} sum to {sum(parts, ZERO)}, not the run total {total}")
    info = report.run
    return Statement(run_id=info.run_id, kind="true-up" if true_up else "allocation", start=info.start, end=info.end,
                     currency=info.currency, created_at=info.created_at, price_books=tuple(info.price_books),
                     inputs_digest=info.inputs_digest, code_version=info.code_version, idle_policy=info.idle_policy,
                     basis=info.basis, total=total, by_category=by_category, tenants_cost=tenants_cost,
                     off_tenant=off, failed_work=failed, tenants=tenants, successful_tasks=report.successful_tasks,
                     all_in=report.cost_per_successful_task_all_in, reconciliation=reconciliation,
                     closing=info.closing)


def statement_as_json(st: Statement) -> dict:
    """The statement as JSON: money as exact decimal strings, the close as
    :meth:`ledger.store.Closing.as_json`, both definitions of cost per successful task."""
    rec = st.reconciliation
    return {"statement": "month-end", "period": period_label(st.start, st.end), "currency": st.currency,
            "run": {"run_id": st.run_id, "kind": st.kind, "created_at": iso(st.created_at),
                    "price_books": list(st.price_books), "inputs_digest": st.inputs_digest,
                    "code_version": st.code_version, "idle_policy": st.idle_policy, "basis": st.basis},
            "close": None if st.closing is None else st.closing.as_json(),
            "total": fmt(st.total), "by_category": {c: fmt(v) for c, v in st.by_category.items()},
            "tenants_cost": fmt(st.tenants_cost), "off_tenant": {k: fmt(v) for k, v in st.off_tenant.items()},
            "failed_work": fmt(st.failed_work),
            "tenants": [{"tenant": t.tenant, "cost": fmt(t.cost), "successful_tasks": t.successful_tasks,
                         "cost_per_successful_task": opt(t.cost_per_successful_task),
                         "undefined_because": t.undefined_because} for t in st.tenants],
            "successful_tasks": st.successful_tasks, "cost_per_successful_task_all_in": opt(st.all_in),
            "definitions": {"cost_per_successful_task_all_in": ALL_IN_DEFINITION,
                            "cost_per_successful_task": OWN_DEFINITION},
            "reconciliation": {"status": rec.status, "text": rec.text, "priced": opt(rec.priced),
                               "billed": opt(rec.billed), "variance": opt(rec.variance), "reason": rec.reason}}


#: The columns of `statement --csv`: one row per figure, each row saying where it came from.
CSV_COLUMNS = ("section", "name", "amount", "successful_tasks", "cost_per_successful_task", "note", "currency",
               "period_start", "period_end", "run_id", "period_close")


def statement_as_csv(st: Statement) -> str:
    """The statement as CSV: one row per figure (`section`: total, category, tenants, off_tenant,
    failed_work, tenant, all_in, reconciliation), exact decimals, each row with the currency,
    period, run and the period's close."""
    p = period_label(st.start, st.end)
    tail = {"currency": st.currency, "period_start": p["start"], "period_end": p["end"], "run_id": st.run_id,
            "period_close": st.close_text}
    rows = [{"section": "total", "name": "run total", "amount": fmt(st.total)}]
    rows += [{"section": "category", "name": c, "amount": fmt(v)} for c, v in st.by_category.items()]
    rows.append({"section": "tenants", "name": "tenants' own cost", "amount": fmt(st.tenants_cost)})
    rows += [{"section": "off_tenant", "name": k, "amount": fmt(v)} for k, v in st.off_tenant.items()]
    rows.append({"section": "failed_work", "name": "failed work", "amount": fmt(st.failed_work)})
    rows += [{"section": "tenant", "name": t.tenant, "amount": fmt(t.cost), "successful_tasks": t.successful_tasks,
              "cost_per_successful_task": opt(t.cost_per_successful_task) or "",
              "note": t.undefined_because or ""} for t in st.tenants]
    rows.append({"section": "all_in", "name": "all-in cost per successful task", "amount": fmt(st.total),
                 "successful_tasks": st.successful_tasks, "cost_per_successful_task": opt(st.all_in) or "",
                 "note": "" if st.all_in is not None else NO_SUCCESS})
    rec = st.reconciliation
    rows.append({"section": "reconciliation", "name": rec.status,
                 "amount": "" if rec.variance is None else fmt(rec.variance), "note": rec.text})
    full = [{c: r.get(c, tail.get(c, "")) for c in CSV_COLUMNS} for r in rows]
    return csv_text(CSV_COLUMNS, full, numeric=("amount", "successful_tasks", "cost_per_successful_task"))



def _amounts(title: str, first: str, rows: list[tuple[str, Decimal]]) -> tuple[FitTable, list[Decimal]]:
    """A table of named amounts with its total row, displayed so they add up (``display_column``);
    also the displayed cells."""
    cells, total = display_column([v for _, v in rows])
    table = FitTable(title=title)
    table.add_column(first, numeric=False)
    table.add_column("amount")
    for (name, _), c in zip(rows, cells):
        table.add_row(name, money(c))
    table.add_row("total", money(total))
    return table, cells

def statement_as_table(st: Statement):
    """The statement for a person (rich): the close and the run, then where the money went, by
    category and by tenant, each table display-rounded to add to its printed total."""
    from rich.console import Group

    from ..formats import count, display_column, unit_costs
    from ..tables import FitTable, paragraph

    cur = st.currency
    head = [paragraph(f"month-end statement · {iso(st.start)} to {iso(st.end)} · {cur} · {st.close_text}"),
            paragraph(f"{st.kind} run {st.run_id} · price books {', '.join(st.price_books) or 'none'} · inputs digest "
                      f"{st.inputs_digest} · total {money(st.total, cur)} · failed work {money(st.failed_work, cur)}"),
            paragraph(f"reconciliation: {st.reconciliation.text}")]
    parts = [("tenants' own cost", st.tenants_cost), *st.off_tenant.items()]
    where, cells = _amounts(f"where it went ({cur})", "part", parts)
    cats, _ = _amounts(f"by category ({cur})", "category", [(c, v) for c, v in st.by_category.items() if v != 0])
    tcells, ttotal = display_column([x.cost for x in st.tenants], total=cells[0])
    per = unit_costs([x.cost_per_successful_task for x in st.tenants] + [st.all_in])
    ten = FitTable(title=f"tenants ({cur})", caption=f"own cost = {OWN_DEFINITION}; all-in = {ALL_IN_DEFINITION}")
    for col, numeric in (("tenant", False), ("cost", True), ("successful tasks", True),
                         ("cost per successful task", True)):
        ten.add_column(col, numeric=numeric)
    for x, c, p in zip(st.tenants, tcells, per):
        ten.add_row(x.tenant, money(c), count(x.successful_tasks), "undefined" if x.cost_per_successful_task is None
                    else p)
    ten.add_row("tenants' own cost", money(ttotal), count(sum(x.successful_tasks for x in st.tenants)), "")
    ten.add_row("all-in", money(st.total), count(st.successful_tasks), "undefined" if st.all_in is None else per[-1])
    return Group(*head, where, cats, ten)


def statement_for(s, stored, *, home: Path, map_path: str | Path | None = None) -> Statement:
    """The statement of a stored run (:class:`ledger.runs.StoredRun`), reconciled with the bill
    map at `map_path` (default the ledger home's) when there is one."""
    from ..economics import unit_economics
    from ..runs import run_data_of_stored

    report = unit_economics(run_data_of_stored(stored), by="tenant")
    return statement_of(report, stored.lines, true_up=bool(stored.summary.get("true_up")),
                        reconciliation=reconciled(s, stored, home=home, map_path=map_path))
