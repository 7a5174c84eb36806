"""The true-up: allocate what the bill says instead of what the book priced (``allocate --true-up``).

For each resource the bill places rows on, its variance (billed effective cost − the run's priced
cost of it, both at 1e-6) is spread over the lines that resource produced, in proportion to their
amounts, by the largest-remainder split (:func:`ledger.money.split`), and booked as lines of kind
``variance``: one beside each line it was spread over, with that line's day, tenant, product,
model, pool, provider, category and work, quantity 0, and as ``shared_from`` the kind of an idle or
unallocated line (``idle_slack``, ``idle_reserve``, ``unallocated``; a tenant's shared idle keeps
its own). A tenant's variance is part of its cost; the variance of idle lines stays off tenants as
idle does. A resource the bill covers that produced no line in the run (nothing priced), and the
unmatched bill cost, are one ``variance`` line each, on no tenant, dated the period's first day,
with the bill rows as quantity (unit ``bill_row``); the unmatched cost's category is ``other``.
Resources the bill does not cover keep their priced lines unchanged. So

    Σ lines == run total + Σ variance == billed total + priced cost of the resources not billed

checked with ``==`` before the run is written. Its record (the run summary's ``true_up``) states the
totals as ``ledger reconcile`` does: ``priced_total`` is the priced cost of the resources the bill
covers, so ``billed_total − priced_total == variance_total`` exactly; the run total before the
true-up is ``run_total``.

It refuses (ReconcileError, nothing written) a period with no bill row, a map rule placing rows on a
pool or a provider the ledger does not know (the map, its line and the rule: a typo would book money
on a resource that does not exist), and a partial bill: a resource whose hours priced are not all
covered by its bill rows (:mod:`ledger.reconcile.coverage`), unless `allow_partial_bill`, when the
run's notes and record say which resources were covered in part.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal

from ..allocate import VARIANCE, Allocation, AllocationError, Line
from ..allocate.lines import check_conservation, merge
from ..hints import Hint, Hinted
from ..money import ZERO, fmt, split
from ..vocab import LineKind
from .billmap import BillMap, ReconcileError
from .bills import Bill, Resource
from .compare import partial_bill_warning, resource_of
from .coverage import coverage

BILL_ROW = "bill_row"
UNMATCHED_CATEGORY = "other"
#: Kinds whose lines are on no tenant: a variance spread over one says which it came from.
_OFF_TENANT = (LineKind.IDLE_SLACK, LineKind.IDLE_RESERVE, LineKind.UNALLOCATED)


def _lone_line(alloc: Allocation, res: Resource | None, amount: Decimal, rows: int) -> Line:
    """A variance line on no tenant and no line of the run: a covered resource that produced none,
    or (`res` None) the unmatched bill cost."""
    category = (UNMATCHED_CATEGORY if res is None else "gpu" if res.kind == "pool" else
                "provider_tokens" if res.kind == "provider" else res.name)
    return Line(day=alloc.start.date(), kind=VARIANCE, tenant=None, product=None, model=None,
                pool=res.name if res is not None and res.kind == "pool" else None,
                provider=res.name if res is not None and res.kind == "provider" else None,
                category=category, work="succeeded", shared_from=None, quantity=Decimal(rows), unit=BILL_ROW,
                amount=amount)


def _spread(own: list[Line], amount: Decimal) -> list[Line]:
    """`amount` over `own` lines in proportion to their amounts (largest remainder), as variance lines."""
    weights = {i: ln.amount for i, ln in enumerate(own) if ln.amount > 0}
    parts = split(amount, weights)
    return [replace(own[i], kind=VARIANCE, quantity=ZERO, amount=part,
                    shared_from=own[i].kind if own[i].kind in _OFF_TENANT else own[i].shared_from)
            for i, part in sorted(parts.items()) if part]


def true_up(alloc: Allocation, bill: Bill, bill_map: BillMap, *, hours: dict[Resource, frozenset[int]] | None = None,
            allow_partial_bill: bool = False, unknown: Sequence[tuple[str, str]] = ()) -> Allocation:
    """`alloc` with the variance lines of `bill`, its total billed + not billed, and `true_up`
    recording the bill batches and map used. `hours`: the hours each resource is priced in (for the
    bill's coverage; None: not measured); `unknown`: the map's rules naming a pool or provider the
    ledger does not know (``(where, what)``, :func:`ledger.reconcile.targets.unknown_targets`).
    ReconcileError when the period has no bill row, a rule names an unknown target, or the bill
    covers a resource in part without `allow_partial_bill`; AllocationError when conservation fails."""
    if bill.rows == 0:
        raise ReconcileError(f"no bill row counts in {alloc.start.date()} to {alloc.end.date()} (end exclusive): "
                             "ingest the bill first (`ledger ingest bill FILE...`)")
    problems = [f"{where}: {what}: a true-up would book the bill's cost on it; correct the map"
                for where, what in unknown]
    covered = {res: coverage(hours.get(res, frozenset()), b.hours) for res, b in bill.resources.items()} \
        if hours is not None else {}
    partial = {res: c for res, c in covered.items() if c.hours_priced and c.partial}
    if partial and not allow_partial_bill:
        problems += [Hinted(f"{partial_bill_warning(res, c, alloc.start, alloc.end)}; the true-up refuses it (",
                            Hint("allow_partial_bill", "allow a partial bill"), " to book the bill as it is)")
                     for res, c in partial.items()]
    if problems:
        raise ReconcileError(problems)
    by_resource: dict[Resource, list[Line]] = {}
    for ln in alloc.lines:
        by_resource.setdefault(resource_of(ln), []).append(ln)
    extra: list[Line] = []
    resources = []
    tenants: dict[str, Decimal] = {}
    variance_total = priced_billed = ZERO
    for res, b in bill.resources.items():
        own = by_resource.get(res, [])
        priced = sum((ln.amount for ln in own), ZERO)
        variance = b.effective - priced
        variance_total += variance
        if variance:
            lines = _spread(own, variance) if priced > 0 else [_lone_line(alloc, res, variance, b.rows)]
            for ln in lines:
                if ln.tenant is not None:
                    tenants[ln.tenant] = tenants.get(ln.tenant, ZERO) + ln.amount
            extra += lines
        priced_billed += priced
        c = covered.get(res)
        resources.append({"kind": res.kind, "name": res.name, "priced": fmt(priced), "billed": fmt(b.effective),
                          "variance": fmt(variance), "rows": b.rows,
                          "hours_priced": c.hours_priced if c else None, "hours_billed": c.hours_billed if c else None,
                          "coverage": format(c.ratio, "f") if c and c.ratio is not None else None})
    unmatched = bill.unmatched_total
    unmatched_rows = sum(u.rows for u in bill.unmatched)
    if unmatched:
        extra.append(_lone_line(alloc, None, unmatched, unmatched_rows))
    variance_total += unmatched
    total = alloc.total + variance_total
    merged = merge([*alloc.lines, *extra])
    check_conservation(merged, total)
    if sum((ln.amount for ln in extra), ZERO) != variance_total:
        raise AllocationError([f"true-up: variance lines sum to {sum((ln.amount for ln in extra), ZERO)}, the "
                               f"variance is {variance_total}; the run is not written"])
    if bill.billed_total - priced_billed != variance_total:
        raise AllocationError([f"true-up: billed {bill.billed_total} − priced {priced_billed} is not the variance "
                               f"{variance_total}; the run is not written"])
    record = {"bill_batches": list(bill.batches), "bill_map": bill_map.as_dict(), "bill_rows": bill.rows,
              "priced_total": fmt(priced_billed), "billed_total": fmt(bill.billed_total),
              "variance_total": fmt(variance_total), "unmatched": fmt(unmatched), "unmatched_rows": unmatched_rows,
              "not_billed": fmt(alloc.total - priced_billed), "run_total": fmt(alloc.total),
              "trued_up_total": fmt(total), "resources": resources,
              "tenants": {t: fmt(v) for t, v in sorted(tenants.items())},
              "partial_bill_allowed": [f"{r.kind} {r.name}" for r in partial],
              "definition": "priced: the run's cost of the resources the bill covers (as `ledger reconcile`); "
                            "variance = billed − priced; trued_up_total = run_total + variance"}
    notes = list(alloc.notes) + [
        f"true-up: priced {fmt(priced_billed)} (the resources the bill covers; run total {fmt(alloc.total)}), "
        f"billed {fmt(bill.billed_total)} (bill batches {', '.join(bill.batches)}), variance {fmt(variance_total)} "
        "booked as variance lines"]
    notes += [f"true-up of a partial bill, allowed: {partial_bill_warning(res, c, alloc.start, alloc.end)}; booked "
              "as it is" for res, c in partial.items()]
    if unmatched_rows:
        notes.append(f"true-up: {unmatched_rows} bill row{'s' * (unmatched_rows != 1)} no rule of {bill_map.path} "
                     f"places ({fmt(unmatched)}) booked as one variance line on no tenant, category "
                     f"{UNMATCHED_CATEGORY}: `ledger reconcile` lists them")
    return replace(alloc, total=total, lines=merged, notes=tuple(notes + list(bill.notes)), true_up=record)
