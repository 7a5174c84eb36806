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

checked with ``==`` before the run is written.
"""
from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from ..allocate import VARIANCE, Allocation, AllocationError, Line
from ..allocate.lines import _check_conservation, _merge
from ..money import ZERO, fmt, split
from .billmap import BillMap, ReconcileError
from .bills import Bill, Resource
from .compare import resource_of

BILL_ROW = "bill_row"
UNMATCHED_CATEGORY = "other"
#: Kinds whose lines are on no tenant: a variance spread over one says which it came from.
_OFF_TENANT = ("idle_slack", "idle_reserve", "unallocated")


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


def true_up(alloc: Allocation, bill: Bill, bill_map: BillMap) -> Allocation:
    """`alloc` with the variance lines of `bill`, its total billed + not billed, and `true_up`
    recording the bill batches and map used. ReconcileError when the period has no bill row;
    AllocationError when conservation fails."""
    if bill.rows == 0:
        raise ReconcileError(f"no bill row counts in {alloc.start.date()} to {alloc.end.date()} (end exclusive): "
                             "ingest the bill first (`ledger ingest bill FILE...`)")
    by_resource: dict[Resource, list[Line]] = {}
    for ln in alloc.lines:
        by_resource.setdefault(resource_of(ln), []).append(ln)
    extra: list[Line] = []
    resources = []
    tenants: dict[str, Decimal] = {}
    variance_total = ZERO
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
        resources.append({"kind": res.kind, "name": res.name, "priced": fmt(priced), "billed": fmt(b.effective),
                          "variance": fmt(variance), "rows": b.rows})
    unmatched = bill.unmatched_total
    unmatched_rows = sum(u.rows for u in bill.unmatched)
    if unmatched:
        extra.append(_lone_line(alloc, None, unmatched, unmatched_rows))
    variance_total += unmatched
    total = alloc.total + variance_total
    merged = _merge([*alloc.lines, *extra])
    _check_conservation(merged, total)
    if sum((ln.amount for ln in extra), ZERO) != variance_total:
        raise AllocationError([f"true-up: variance lines sum to {sum((ln.amount for ln in extra), ZERO)}, the "
                               f"variance is {variance_total}; the run is not written"])
    record = {"bill_batches": list(bill.batches), "bill_map": bill_map.as_dict(), "bill_rows": bill.rows,
              "priced_total": fmt(alloc.total), "billed_total": fmt(bill.billed_total),
              "variance_total": fmt(variance_total), "unmatched": fmt(unmatched), "unmatched_rows": unmatched_rows,
              "resources": resources, "tenants": {t: fmt(v) for t, v in sorted(tenants.items())}}
    notes = list(alloc.notes) + [
        f"true-up: priced {fmt(alloc.total)}, billed {fmt(bill.billed_total)} (bill batches "
        f"{', '.join(bill.batches)}), variance {fmt(variance_total)} booked as variance lines"]
    if unmatched_rows:
        notes.append(f"true-up: {unmatched_rows} bill row{'s' * (unmatched_rows != 1)} no rule of {bill_map.path} "
                     f"places ({fmt(unmatched)}) booked as one variance line on no tenant, category "
                     f"{UNMATCHED_CATEGORY}: `ledger reconcile` lists them")
    return replace(alloc, total=total, lines=merged, notes=tuple(notes + list(bill.notes)), true_up=record)
