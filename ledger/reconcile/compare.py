"""Reconciliation: per pool, provider and category, the ledger's priced cost beside the bill's
effective cost, the difference and its share, the unmatched bill cost, and one total line.

The priced side is an allocation run's lines without its ``variance`` lines (a true-up run's other
lines are exactly what was priced). A line is the cost of one resource (:func:`resource_of`): its
pool, else its provider, else its category. A resource the bill places no row on keeps its priced
cost and has no difference ("not billed"); the totals name both parts, so that

    variance = billed − priced of the resources the bill covers
             = Σ differences of the billed resources + the unmatched bill cost
    trued-up total = run total + variance = billed + priced of the resources not billed

and the trued-up total is what ``allocate --true-up`` books. Each billed resource also has its
coverage (hours priced that have a bill row, :mod:`ledger.reconcile.coverage`); the warnings name
each resource the bill covers only in part, and each rule of the map placing rows on a pool or a
provider the ledger does not know (:mod:`ledger.reconcile.targets`).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, localcontext
from pathlib import Path

from .. import store
from ..hints import Hint, Hinted
from ..allocate import VARIANCE, Line
from ..money import ZERO, quantize
from ..pricebook import PriceIndex
from .billmap import BillMap
from .bills import RESOURCE_KINDS, Bill, Billed, Resource, read_bill
from .coverage import Coverage, coverage, priced_hours_of
from .drift import Drift, reported_drift
from .targets import known_targets, unknown_targets

RATIO_EXP = Decimal("0.0001")
NOTHING_PRICED = "nothing of it is priced in the run"


def share(part: Decimal, whole: Decimal) -> Decimal | None:
    """`part` ÷ `whole`, half-even to 1e-4; None when `whole` is 0."""
    if not whole:
        return None
    with localcontext() as ctx:
        ctx.prec = 60
        return quantize(part / whole, RATIO_EXP)


def resource_of(line: Line) -> Resource:
    """The resource a line is the cost of: its pool, else its provider, else its category."""
    if line.pool:
        return Resource("pool", line.pool)
    if line.provider:
        return Resource("provider", line.provider)
    return Resource("category", line.category)


def priced_by_resource(lines: Iterable[Line]) -> dict[Resource, Decimal]:
    """Σ amount of the lines of each resource, `variance` lines left out."""
    out: dict[Resource, Decimal] = defaultdict(Decimal)
    for ln in lines:
        if ln.kind != VARIANCE:
            out[resource_of(ln)] += ln.amount
    return dict(out)


@dataclass(frozen=True)
class Row:
    """One resource: `priced` (the run), `billed` (None when no bill row is placed on it), and the
    bill's `coverage` of the hours it is priced in (None when not billed, or not measured)."""

    resource: Resource
    priced: Decimal
    billed: Billed | None
    coverage: Coverage | None = None

    @property
    def difference(self) -> Decimal | None:
        """billed − priced (negative: the bill is below the book), None when not billed."""
        return None if self.billed is None else self.billed.effective - self.priced

    @property
    def share(self) -> Decimal | None:
        """difference ÷ priced, to 1e-4; None when not billed or nothing is priced."""
        return None if self.billed is None else share(self.billed.effective - self.priced, self.priced)

    @property
    def reason(self) -> str:
        """Why the share is undefined ('' when it is not)."""
        if self.billed is None:
            return "no bill row is placed on it"
        return NOTHING_PRICED if not self.priced else ""


@dataclass(frozen=True)
class Reconciliation:
    """A period's reconciliation against run `run_id` (`run_created_at`; `run_true_up` when that
    run was a true-up: its variance lines are left out): `rows` per resource, the `bill` placed by
    the map (`bill_map`: path, sha256, rules), reported-cost `drift` per provider and model, `notes`,
    and `warnings` (a partial bill, a rule naming a pool or provider the ledger does not know: each
    names what it warns about); `closing`, the close of the run's month (open, or who signed it off:
    :class:`ledger.store.Closing`) when the caller read it with the run, else None. Money in
    `currency`, exact at 1e-6."""

    start: datetime
    end: datetime
    currency: str
    run_id: str
    run_created_at: datetime | None
    run_true_up: bool
    bill_map: dict
    bill: Bill
    rows: tuple[Row, ...]
    drift: tuple[Drift, ...]
    notes: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    closing: store.Closing | None = None

    @property
    def priced_total(self) -> Decimal:
        """Σ priced of every resource: the run's total before any true-up."""
        return sum((r.priced for r in self.rows), ZERO)

    @property
    def priced_billed(self) -> Decimal:
        """Σ priced of the resources the bill places rows on."""
        return sum((r.priced for r in self.rows if r.billed is not None), ZERO)

    @property
    def not_billed(self) -> Decimal:
        return self.priced_total - self.priced_billed

    @property
    def billed_total(self) -> Decimal:
        return self.bill.billed_total

    @property
    def variance(self) -> Decimal:
        return self.billed_total - self.priced_billed

    @property
    def variance_share(self) -> Decimal | None:
        return share(self.variance, self.priced_billed)

    @property
    def trued_up_total(self) -> Decimal:
        return self.priced_total + self.variance


def partial_bill_warning(res: Resource, cov: Coverage, start: datetime, end: datetime) -> str:
    """The words naming a resource a bill covers only in part (a warning of reconcile, a refusal of
    the true-up)."""
    return (f"{res.label()}: the bill covers {cov.shown()} from {start.date()} to {end.date()} (end exclusive): "
            "a partial bill, so its billed amount is not the period's and its difference is not a variance "
            "(ingest the rest of the bill)")


def reconcile(*, lines: Iterable[Line], bill: Bill, drift: Iterable[Drift] = (), run_id: str,
              run_created_at: datetime | None = None, currency: str, bill_map: dict,
              notes: Iterable[str] = (), hours: dict[Resource, frozenset[int]] | None = None,
              warnings: Iterable[str] = ()) -> Reconciliation:
    """The reconciliation of a run's `lines` (in `currency`) with the period's placed `bill`; with
    `hours` (the hours each resource is priced in), each billed resource's coverage, and a warning
    for each covered in part (after the given `warnings`)."""
    lines = tuple(lines)
    priced = priced_by_resource(lines)
    keys = sorted(set(priced) | set(bill.resources), key=lambda r: (RESOURCE_KINDS.index(r.kind), r.name))
    rows = tuple(Row(resource=k, priced=priced.get(k, ZERO), billed=bill.resources.get(k),
                     coverage=(coverage(hours.get(k, frozenset()), bill.resources[k].hours)
                               if hours is not None and k in bill.resources else None)) for k in keys)
    partial = [partial_bill_warning(r.resource, r.coverage, bill.start, bill.end) for r in rows
               if r.coverage is not None and r.coverage.hours_priced and r.coverage.partial]
    return Reconciliation(start=bill.start, end=bill.end, currency=currency, run_id=run_id,
                          run_created_at=run_created_at, run_true_up=any(ln.kind == VARIANCE for ln in lines),
                          bill_map=bill_map, bill=bill, rows=rows, drift=tuple(drift),
                          notes=tuple(notes) + bill.notes, warnings=tuple(warnings) + tuple(partial))


def reconcile_run(s, *, run_id: str, lines: Iterable[Line], currency: str, start: datetime, end: datetime,
                  bill_map: BillMap, home: Path, created_at: datetime | None = None) -> Reconciliation:
    """Reconcile a stored run (its id, `lines`, `currency` and period, read by the caller through
    :mod:`ledger.runs`) with the committed bill placed by `bill_map`, and the reported-cost drift
    of the period priced with the loaded books; the facts are those of the ledger home `home` (its
    folder, resolved by the caller). ReconcileError when it cannot be made."""
    books = store.books_from_store(s)
    index = PriceIndex(books)
    bill = read_bill(s, bill_map, start=start, end=end, currency=currency, prices=index, home=home)
    drift, notes = reported_drift(s, start=start, end=end, prices=index, home=home)
    hours = priced_hours_of(s, start, end, home)
    unknown = [Hinted(f"{where}: {what}: its bill rows are reconciled on a resource the ledger does not have "
                      "(correct the map; ", Hint("true_up", "a true-up"), " refuses it)")
               for where, what in unknown_targets(bill_map, known_targets(s, books, hours))]
    return reconcile(lines=lines, bill=bill, drift=drift, run_id=run_id, run_created_at=created_at,
                     currency=currency, bill_map=bill_map.as_dict(), notes=notes, hours=hours, warnings=unknown)
